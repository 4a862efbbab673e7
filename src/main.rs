use clap::Parser;
use spidey::cli::{Cli, Command};
use spidey::config::ConfigError;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => spidey::serve::run(args),
        Command::Bench(args) => spidey::bench::run(args),
        Command::Lab(args) => spidey::lab::run(args),
        Command::DelayLine(args) => spidey::lab::delay_line(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<ConfigError>() => {
            eprintln!("spidey: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("spidey: {e:#}");
            ExitCode::FAILURE
        }
    }
}
