//! SIGHUP: the configuration read again, for new connections.
//!
//! The command line `serve` started with is expanded again (so a `--config` file is read
//! again) and parsed by clap, every check of `serve` runs again, and a whole new
//! [`Server`] is built: the site (ROOT, its options, the files the flags name: auth
//! users, error pages, CGI interpreters, handlers), `--max-body` and `--max-requests`. If
//! all of that succeeds it is published (`server::publish`) and one line on stderr says
//! so; otherwise one line says why and the configuration in use stays, whole.
//!
//! What the running server is built from cannot change without a restart, and a
//! configuration that changes it is refused, naming the flags ([`NEEDS_RESTART`]): the
//! listeners, the mode and its workers, the limits and timeouts (they size the loops'
//! buffers and deadline wheels), TLS and HTTP/2 (the certificate files themselves are
//! read again, `modes/tls.rs`), logging, `--user`, and in `event` and `uring` whether
//! `--basic-auth` is on at all (they start their password workers only with it).
//!
//! The work is done by whoever services SIGHUP (`signals.rs`): the forking master in
//! `fork` and `prefork` (its later children and its replacement workers inherit the new
//! configuration) or the signal thread.

use crate::args::ServeArgs;
use crate::server::Server;
use clap::{ArgMatches, FromArgMatches};
use std::ffi::OsString;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Builds a checked server from parsed arguments (`serve.rs`'s, given at [`arm`], so this
/// module names no layer above it).
pub(crate) type Build = fn(&ServeArgs) -> anyhow::Result<Server>;

/// The flags (clap ids) a reload may change: the site and what a request may cost. Every
/// other flag needs a restart, and a reload that changes one is refused.
const RELOADABLE: &[&str] = &[
    "root",
    "config",
    "show_hidden",
    "no_listing",
    "health",
    "max_body",
    "max_requests",
    "body_timeout",
    "body_min_rate",
    "cgi",
    "cgi_interpreter",
    "max_cgi",
    "cgi_timeout",
    "handler",
    "delay",
    "cpu_work",
    "precompressed",
    "compress",
    "header",
    "cors",
    "basic_auth",
    "basic_auth_file",
    "cache_control",
    "index",
    "fallback",
    "error_page",
    "security_headers",
];

/// What a reload starts from: the command line as typed, what it last parsed to, the
/// port the server is bound to, whether the process forks, and how to build a server.
struct Armed {
    argv: Vec<OsString>,
    matches: ArgMatches,
    port: u16,
    forks: bool,
    build: Build,
    /// Whether `--basic-auth` (or its file) was on at startup, in a mode whose password
    /// workers start only with it (`event`, `uring`): then it must stay so.
    auth: Option<bool>,
    /// The configuration in use (what a reload keeps of it: TLS, the CGI slots).
    running: Arc<Server>,
}

static ARMED: OnceLock<Mutex<Armed>> = OnceLock::new();

/// Makes SIGHUP reload the configuration `argv` (this process's command line, program
/// name first) gives, once `server` serves on `port`. `auth_fixed`: the mode starts its
/// password workers only with `--basic-auth` (`event`, `uring`).
pub(crate) fn arm(argv: Vec<OsString>, server: &Arc<Server>, port: u16, forks: bool, auth_fixed: bool, build: Build) {
    let Ok(matches) = parse(&argv) else { return };
    let auth = auth_fixed.then(|| server.site.options().auth.is_some());
    let running = Arc::clone(server);
    let _ = ARMED.set(Mutex::new(Armed { argv, matches, port, forks, build, auth, running }));
}

/// SIGHUP's configuration reload: one line on stderr either way.
pub(crate) fn configuration() {
    let Some(armed) = ARMED.get() else { return };
    let mut armed = armed.lock().unwrap_or_else(PoisonError::into_inner);
    match armed.reload() {
        Ok(matches) => {
            armed.matches = matches;
            armed.running = crate::server::newest(&armed.running);
            eprintln!("spidey: SIGHUP: reloaded the configuration");
        }
        Err(why) => eprintln!("spidey: SIGHUP: {why}; the configuration in use stays"),
    }
}

impl Armed {
    /// Reads, checks and publishes the configuration; the matches it parsed to.
    fn reload(&self) -> Result<ArgMatches, String> {
        let matches = parse(&self.argv)?;
        let changed = needs_restart(&self.matches, &matches);
        if !changed.is_empty() {
            return Err(format!("{} changed, which needs a restart", changed.join(", ")));
        }
        let args = ServeArgs::from_arg_matches(&matches).map_err(|e| first_line(&e.to_string()))?;
        let mut server = (self.build)(&args).map_err(|e| format!("{e:#}"))?;
        if self.auth.is_some_and(|on| server.site.options().auth.is_some() != on) {
            return Err("--basic-auth turned on or off, which needs a restart in this mode".into());
        }
        if self.forks {
            // fork(2) is sound only while single-threaded: a new handler library's
            // initialisers may have started threads.
            match spidey_sys::thread_count() {
                Ok(1) => {}
                Ok(n) => return Err(format!("this process now has {n} threads (a --handler library?), and it forks")),
                Err(e) => return Err(format!("cannot count this process's threads: {e}")),
            }
        }
        server.site.set_port(self.port);
        // TLS is fixed: keep the running configuration (its session cache and tickets;
        // the certificate is reloaded on its own).
        server.tls = self.running.tls.clone();
        // The same --max-cgi keeps counting the scripts already running.
        if raw(&self.matches, "max_cgi") == raw(&matches, "max_cgi") {
            server.site.keep_cgi_slots(&self.running.site);
        }
        crate::server::publish(server);
        Ok(matches)
    }
}

/// `serve`'s arguments in `argv`, the `--config` file expanded.
fn parse(argv: &[OsString]) -> Result<ArgMatches, String> {
    let expanded = crate::config_file::expand(argv.to_vec()).map_err(|e| e.to_string())?;
    let serve = <ServeArgs as clap::Args>::augment_args(clap::Command::new("serve"));
    serve.try_get_matches_from(&expanded[1..]).map_err(|e| first_line(&e.to_string()))
}

/// The flags outside [`RELOADABLE`] whose values differ, as `--long-name`.
fn needs_restart(old: &ArgMatches, new: &ArgMatches) -> Vec<String> {
    let serve = <ServeArgs as clap::Args>::augment_args(clap::Command::new("serve"));
    serve
        .get_arguments()
        .filter(|arg| !RELOADABLE.contains(&arg.get_id().as_str()))
        .filter(|arg| raw(old, arg.get_id().as_str()) != raw(new, arg.get_id().as_str()))
        .map(|arg| arg.get_long().map_or_else(|| arg.get_id().to_string(), |long| format!("--{long}")))
        .collect()
}

/// The values `id` was given (or defaults to), as typed.
fn raw(matches: &ArgMatches, id: &str) -> Vec<OsString> {
    matches.get_raw(id).map(|values| values.map(OsString::from).collect()).unwrap_or_default()
}

/// The first line of clap's error text, without its `error: ` prefix.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}
