use clap::FromArgMatches;
use spidey::cli::{Cli, Command};
use spidey::config::ConfigError;
use std::process::ExitCode;

fn main() -> ExitCode {
    // `serve --config FILE` becomes the file's flags first, then clap checks them all.
    let args = match spidey::config_file::expand(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("spidey: {e}");
            return ExitCode::from(2);
        }
    };
    let matches = spidey::help::command().get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
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
