//! `spidey`: the flow of control. `serve --config FILE` is expanded, the command line is
//! parsed ([`cli`], laid out by [`help`]), and the command runs in its crate: the server
//! (`spidey-server`), the load generator (`spidey-bench`) or the lab (`spidey-lab`). A
//! [`ConfigError`] exits with code 2, any other error with 1.

mod cli;
mod help;

use clap::FromArgMatches;
use cli::{Cli, Command};
use spidey_config::ConfigError;
use std::process::ExitCode;

fn main() -> ExitCode {
    // `serve --config FILE` becomes the file's flags first, then clap checks them all.
    let args = match spidey_server::config_file::expand(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("spidey: {e}");
            return ExitCode::from(2);
        }
    };
    let matches = help::command().get_matches_from(args);
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Serve(args) => spidey_server::serve::run(args),
        Command::Bench(args) => spidey_bench::run(args),
        Command::Lab(args) => spidey_lab::run(args),
        Command::DelayLine(args) => spidey_lab::delay_line(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut help::command(), "spidey", &mut std::io::stdout());
            Ok(())
        }
        Command::Man { command } => man_page(command.as_deref()),
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

/// `spidey man [COMMAND]`: the page of spidey, or of one of its subcommands, from the laid-out
/// command line (the same text as `--help`), on stdout.
fn man_page(name: Option<&str>) -> anyhow::Result<()> {
    let top = help::command();
    let page = match name {
        None => top,
        Some(name) => {
            let found = top.get_subcommands().find(|c| c.get_name() == name).cloned();
            let Some(command) = found else {
                return Err(
                    ConfigError(format!("spidey man {name}: no such command (serve, bench, lab, delay-line)")).into()
                );
            };
            command
                .display_name(format!("spidey-{name}"))
                .bin_name(format!("spidey {name}"))
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    clap_mangen::Man::new(page).render(&mut std::io::stdout())?;
    Ok(())
}
