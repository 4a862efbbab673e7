//! `spidey serve`: check the configuration, bind, announce, run the chosen mode.

use crate::cli::ServeArgs;
use crate::content::{Site, SiteOptions};
use crate::modes::ModeContext;
use crate::net::{Listener, Shutdown};
use crate::server::{Server, Timeouts};
use spidey_http::Limits;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

/// A mistake in the command line or the environment it names: one line, exit code 2.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let Some(entry) = args.mode.entry() else {
        return Err(ConfigError(format!("mode '{}' is not available in this build", args.mode.name())).into());
    };
    let server = Arc::new(server(&args)?);
    raise_fd_limit();
    let shutdown = Shutdown::install(args.grace)?;
    let listener = Listener::bind(SocketAddr::new(args.addr, args.port), args.backlog)?;
    let url = match listener.addr {
        SocketAddr::V4(a) => format!("http://{a}"),
        SocketAddr::V6(a) => format!("http://[{}]:{}", a.ip(), a.port()),
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "spidey listening on {url} (mode {})", args.mode.name())?;
    out.flush()?;
    drop(out);
    let ctx = ModeContext { server, listener, shutdown, workers: args.workers, max_conns: args.max_conns };
    entry(ctx)
}

fn server(args: &ServeArgs) -> anyhow::Result<Server> {
    if args.max_conns == 0 {
        return Err(ConfigError("--max-conns must be at least 1".into()).into());
    }
    let limits = Limits {
        max_request_line: args.max_request_line,
        max_head: args.max_head,
        max_headers: usize::from(args.max_headers),
    };
    if limits.max_head < limits.max_request_line {
        return Err(ConfigError("--max-head must be at least --max-request-line".into()).into());
    }
    let site = Site::open(&args.root, SiteOptions { show_hidden: args.show_hidden })
        .map_err(|e| ConfigError(format!("cannot serve {}: {e}", args.root.display())))?;
    let timeouts = Timeouts { head: args.head_timeout, idle: args.idle_timeout, send: args.send_timeout };
    Ok(Server { site, limits, timeouts, max_body: args.max_body, max_requests: args.max_requests, quiet: args.quiet })
}

/// Raises the soft RLIMIT_NOFILE to the hard limit: event-driven modes hold one
/// descriptor per connection, and the usual soft limit (1024) is far below `--max-conns`.
fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}
