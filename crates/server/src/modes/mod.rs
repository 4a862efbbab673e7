//! The concurrency modes: how connections are scheduled. Nothing else.
//!
//! # The contract every mode meets
//!
//! A mode is a module exposing `pub fn run(ctx: ModeContext) -> anyhow::Result<()>`, listed
//! in [`Mode::entry`]. It receives one or more bound, listening, non-blocking,
//! close-on-exec [`Listener`]s (one per `--addr`, all on the same port), accepts on every
//! one of them, and must:
//!
//! 1. **Answer through the shared code only.** Blocking modes hand each accepted stream to
//!    [`blocking::serve`]; event-driven modes run the loop skeleton of [`evloop`] with a
//!    backend. Both drive a `session::Session`, which feeds bytes to
//!    [`crate::exchange::Exchanger`] and moves the [`crate::exchange::Body`] it returns by the
//!    rules of [`send`], written once, over the connection's [`transport`] (clear or
//!    TLS) and the driver's [`socket`], the one place a response's bytes are written. A mode never decides
//!    content, and parses HTTP only where it must know a head is whole before it forks
//!    (`fork --fork-after-parse`), so adding one never touches those layers.
//! 2. **Stop when [`Shutdown`] fires**: stop accepting at once, let in-flight responses
//!    finish within `Shutdown::grace`, close idle connections, reap every child and join
//!    or abandon every thread, then return `Ok(())` (the process exits 0).
//! 3. **Survive the world**: accept errors (EMFILE, ENFILE, ECONNABORTED) back off and
//!    retry ([`accept`]); a peer that resets costs only its connection (SIGPIPE is ignored
//!    process-wide by Rust's runtime, so writes fail with EPIPE instead); open connections
//!    stay within `max_conns`.
//! 4. **Fork only while single-threaded** (`fork`, `prefork`): the parent has no other
//!    thread when it forks, and signals reach it through the self-pipe, not a thread.

pub mod accept;
pub(crate) mod blocking;
mod buffers;
mod children;
pub mod event;
mod evloop;
pub mod fork;
mod fork_parse;
pub mod hybrid;
mod intake;
mod limit;
mod loops;
pub mod pool;
pub mod prefork;
#[cfg(test)]
mod seam_tests;
mod send;
mod session;
#[cfg(feature = "fuzzing")]
pub mod session_fuzz;
pub mod single;
mod socket;
pub mod thread;
mod timer;
pub(crate) mod tls;
mod transport;
pub mod uring;

pub(crate) use evloop::conns::{MAX_LISTENERS, MAX_SLOTS};
pub(crate) use send::use_copy_loop;

use crate::net::{Listener, Shutdown};
use crate::server::Server;
use std::sync::Arc;

/// The concurrency architectures, chosen with `--mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Iterative: accept one connection, serve it to the end, accept the next.
    Single,
    /// A child process per connection.
    Fork,
    /// A thread per connection, capped by --max-conns.
    Thread,
    /// A fixed or adaptive pool of threads fed by a bounded queue.
    Pool,
    /// Worker processes accepting on the listeners they share.
    Prefork,
    /// epoll event loops, one per worker thread.
    Event,
    /// io_uring event loops, one per worker thread.
    Uring,
    /// epoll event loops for every socket, plus a worker pool for answers that may block.
    Hybrid,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Single => "single",
            Mode::Fork => "fork",
            Mode::Thread => "thread",
            Mode::Pool => "pool",
            Mode::Prefork => "prefork",
            Mode::Event => "event",
            Mode::Uring => "uring",
            Mode::Hybrid => "hybrid",
        }
    }

    /// The mode's entry point.
    pub fn entry(self) -> fn(ModeContext) -> anyhow::Result<()> {
        match self {
            Mode::Single => single::run,
            Mode::Fork => fork::run,
            Mode::Thread => thread::run,
            Mode::Pool => pool::run,
            Mode::Prefork => prefork::run,
            Mode::Event => event::run,
            Mode::Uring => uring::run,
            Mode::Hybrid => hybrid::run,
        }
    }

    /// Refuses a mode this machine cannot run (`uring` where the kernel has no io_uring),
    /// before anything binds or prints, so the refusal is one line and exit code 2.
    pub fn preflight(self) -> Result<(), spidey_config::ConfigError> {
        match self {
            Mode::Uring => uring::check_available(),
            _ => Ok(()),
        }
    }
}

/// How many workers a mode runs: a fixed number (`min == max`) or an adaptive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workers {
    pub min: usize,
    pub max: usize,
}

impl std::str::FromStr for Workers {
    type Err = String;

    /// `N` or `MIN-MAX`, with 1 ≤ MIN ≤ MAX ≤ 4096.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let num = |t: &str| {
            t.trim().parse::<usize>().map_err(|_| format!("invalid worker count '{s}': expected N or MIN-MAX"))
        };
        let (min, max) = match s.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(s)?, num(s)?),
        };
        if min == 0 || min > max || max > 4096 {
            return Err(format!("invalid worker count '{s}': need 1 <= MIN <= MAX <= 4096"));
        }
        Ok(Workers { min, max })
    }
}

/// Everything a mode is given.
#[derive(Debug)]
pub struct ModeContext {
    pub server: Arc<Server>,
    /// One per `--addr`, never empty; the first is the one the startup line names first.
    pub listeners: Vec<Listener>,
    pub shutdown: Shutdown,
    /// `--workers`, if given; each mode has its own default.
    pub workers: Option<Workers>,
    /// The most connections open at once.
    pub max_conns: usize,
    /// `hybrid`'s worker pool threads (`--pool-threads`), if given.
    pub pool_threads: Option<usize>,
    /// `fork`: the parent reads and parses each connection's first head before it forks
    /// (`--fork-after-parse`, `fork_parse.rs`).
    pub fork_after_parse: bool,
    /// `--user`: the account the server becomes once every listening socket is bound
    /// ([`ModeContext::all_bound`]).
    pub account: Option<spidey_sys::user::Account>,
}

impl ModeContext {
    /// Every listening socket is bound: becomes `--user`'s account, if there is one, for
    /// good. The event loops call it once their `SO_REUSEPORT` siblings are bound (a
    /// sibling must be bound by the same user as the original, socket(7)), every other mode
    /// before it starts (`serve.rs`).
    pub(crate) fn all_bound(account: &mut Option<spidey_sys::user::Account>) -> anyhow::Result<()> {
        use anyhow::Context;
        let Some(account) = account.take() else { return Ok(()) };
        spidey_sys::user::become_account(&account)
            .with_context(|| format!("cannot become user {} (uid {})", account.name, account.uid))
    }

    /// Whether this mode binds listening sockets of its own (`loops::run`'s siblings), so
    /// [`ModeContext::all_bound`] is its to call.
    pub(crate) fn binds_more(mode: Mode) -> bool {
        matches!(mode, Mode::Event | Mode::Uring | Mode::Hybrid)
    }
}

/// The most workers `pool` and `prefork` grow to by default (Apache prefork's
/// MaxRequestWorkers): enough that a small crowd of slow clients does not deny service.
pub(crate) const DEFAULT_MAX_WORKERS: usize = 256;

/// The number of online CPUs.
pub fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::Workers;

    #[test]
    fn workers_table() {
        let cases = [
            ("4", Ok(Workers { min: 4, max: 4 })),
            ("2-8", Ok(Workers { min: 2, max: 8 })),
            ("0", Err(())),
            ("5-2", Err(())),
            ("x", Err(())),
            ("1-99999", Err(())),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<Workers>().map_err(|_| ()), want, "{input}");
        }
    }
}
