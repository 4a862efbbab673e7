//! `spidey serve` flags that do not apply to the chosen mode or to the other flags given,
//! refused with one line (exit code 2) rather than silently ignored.

use crate::cli::ServeArgs;
use crate::config::ConfigError;
use crate::modes::Mode;

/// The first flag of `args` that does not apply, as a configuration error.
pub(crate) fn check(args: &ServeArgs) -> Result<(), ConfigError> {
    let mode = args.mode;
    if let Some(workers) = args.workers {
        if let Some(why) = no_workers(mode) {
            return Err(ConfigError(format!("--workers does not apply to mode {}: {why}", mode.name())));
        }
        let adapts = matches!(mode, Mode::Pool | Mode::Prefork);
        if workers.min != workers.max && !adapts {
            let why = format!(
                "--workers takes a number with mode {}, not a range {}-{} (only pool and prefork adapt)",
                mode.name(),
                workers.min,
                workers.max
            );
            return Err(ConfigError(why));
        }
    }
    if args.pool_threads.is_some() && mode != Mode::Hybrid {
        return Err(ConfigError(format!("--pool-threads applies to mode hybrid only, not {}", mode.name())));
    }
    let cgi = args.cgi || !args.cgi_interpreter.is_empty();
    let cgi_flags = [
        ("--max-cgi", args.max_cgi.is_some()),
        ("--cgi-timeout", args.cgi_timeout.is_some()),
        ("--body-timeout", args.body_timeout.is_some()),
        ("--body-min-rate", args.body_min_rate.is_some()),
    ];
    if let Some((flag, _)) = cgi_flags.iter().find(|(_, given)| *given && !cgi) {
        return Err(ConfigError(format!("{flag} applies to CGI scripts, which run only with --cgi")));
    }
    seed_choices(args)
}

/// Refuses a seed-faithful option (`--fork-after-parse`, `--copy-loop`) where it does not
/// apply.
fn seed_choices(args: &ServeArgs) -> Result<(), ConfigError> {
    let tls = args.tls_cert.is_some();
    let why = if args.fork_after_parse && args.mode != Mode::Fork {
        format!("--fork-after-parse applies to --mode fork only, not {}", args.mode.name())
    } else if args.fork_after_parse && tls {
        "--fork-after-parse is plain HTTP only (the parent would have to run each TLS handshake)".into()
    } else if args.copy_loop.is_some() && tls {
        "--copy-loop is plain HTTP only (over TLS file bodies are always read and encrypted a record at a time)".into()
    } else {
        return Ok(());
    };
    Err(ConfigError(why))
}

/// Why `mode` has no workers to count, if it has none.
fn no_workers(mode: Mode) -> Option<&'static str> {
    match mode {
        Mode::Single => Some("it serves one connection at a time"),
        Mode::Fork => Some("it forks one process per connection (bounded by --max-conns)"),
        Mode::Thread => Some("it starts one thread per connection (bounded by --max-conns)"),
        _ => None,
    }
}
