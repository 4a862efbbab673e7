//! The command line: `spidey serve | bench | lab | delay-line`, each command's flags in its
//! own crate.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "spidey",
    version,
    about = "A web server laboratory: one HTTP/1.1 server, eight concurrency architectures."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per run: a boxed variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve a directory over HTTP/1.1 (and HTTP/2 with --http2).
    Serve(spidey_server::args::ServeArgs),
    /// Load an HTTP server and measure throughput and latency (like wrk; --rate like wrk2).
    Bench(spidey_bench::BenchArgs),
    /// Run the experiments that reproduce the seed studies, and report them.
    Lab(spidey_lab::LabArgs),
    /// Join two network namespaces by a link with a set round trip (and rate), for the lab.
    DelayLine(spidey_lab::DelayLineArgs),
    /// Print a shell completion script, made from the same definitions as --help.
    ///
    /// bash: `spidey completions bash > /etc/bash_completion.d/spidey`; zsh: into a
    /// directory of $fpath as `_spidey`; fish: `~/.config/fish/completions/spidey.fish`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff), made from the same definitions as --help.
    ///
    /// `spidey man | man -l -` reads the command's page; `spidey man serve > spidey-serve.1`
    /// writes a subcommand's.
    Man {
        /// The subcommand whose page to print (serve, bench, lab, delay-line); none: spidey's.
        command: Option<String>,
    },
}
