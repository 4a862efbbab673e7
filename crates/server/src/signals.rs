//! SIGHUP and SIGUSR1: reopen the access log and reload the TLS certificate, print the
//! metrics.
//!
//! The handlers (signal-hook's, async-signal-safe) only set a flag and write a byte into a
//! pipe; the work is done outside the handler by whoever reads that pipe ([`service`]):
//! - in `fork` and `prefork`, the master, which must stay single-threaded to fork: the
//!   byte goes into its SIGCHLD pipe ([`wake`], from `modes/children.rs`), which it already
//!   sleeps on, and it services the flags each time it wakes;
//! - in every other mode, a thread of its own, started by [`install`].
//!
//! SIGHUP bumps the access log's generation, which every process and thread checks before
//! writing (see [`crate::log_sink`]), so the workers of `prefork` and the children of
//! `fork` reopen the file too, though only the master got the signal; without
//! `--access-log` it does nothing to the log (and never ends the process, as by default).
//! It also reloads `--tls-cert` and `--tls-key` in the process that services it
//! (`modes/tls.rs`): the loops and threads of that process use the new pair at their next
//! handshake, and `fork`'s children forked afterwards inherit it. In `prefork` it also
//! replaces the workers gracefully (see `modes/prefork.rs`), so the new workers have it. SIGUSR1
//! writes the metrics ([`crate::metrics::render`]) to stderr, counted over all processes.

use rustix::event::{PollFd, PollFlags};
use signal_hook::consts::{SIGHUP, SIGUSR1};
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Who reads the wake-up pipe: a thread of its own, or the forking master's SIGCHLD pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watcher {
    Thread,
    ForkingMaster,
}

struct Flags {
    hup: Arc<AtomicBool>,
    usr1: Arc<AtomicBool>,
    /// What else SIGHUP reloads (the TLS certificate: `modes/tls.rs`), given by the caller
    /// of [`install`] so this module names no layer above it.
    on_hup: fn(),
}

static FLAGS: OnceLock<Flags> = OnceLock::new();
/// How many SIGHUPs [`service`] has handled in this process (the `prefork` master
/// replaces its workers when this grows).
static RELOADS: AtomicU64 = AtomicU64::new(0);

/// How many SIGHUPs have been serviced in this process so far.
pub(crate) fn reloads() -> u64 {
    RELOADS.load(Ordering::Relaxed)
}

/// Installs the handlers; with [`Watcher::Thread`], starts the thread that services them.
/// `on_hup`: called on each SIGHUP serviced, after the access log is reopened.
pub(crate) fn install(watcher: Watcher, on_hup: fn()) -> io::Result<()> {
    let flags = Flags { hup: Arc::default(), usr1: Arc::default(), on_hup };
    signal_hook::flag::register(SIGHUP, Arc::clone(&flags.hup))?;
    signal_hook::flag::register(SIGUSR1, Arc::clone(&flags.usr1))?;
    let _ = FLAGS.set(flags);
    if watcher == Watcher::Thread {
        let (read, write) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)?;
        wake(&write)?;
        std::thread::Builder::new().name("spidey-signals".into()).spawn(move || watch(read))?;
    }
    Ok(())
}

/// Makes SIGHUP and SIGUSR1 write a byte into `pipe` (the write end of a non-blocking pipe).
pub(crate) fn wake(pipe: &OwnedFd) -> io::Result<()> {
    for signal in [SIGHUP, SIGUSR1] {
        signal_hook::low_level::pipe::register(signal, pipe.try_clone()?)?;
    }
    Ok(())
}

/// The signal thread: waits for bytes, drains them, services the flags. Never returns.
fn watch(read: OwnedFd) {
    let mut sink = [0u8; 64];
    loop {
        let mut fds = [PollFd::new(&read, PollFlags::IN)];
        if crate::net::poll_until(&mut fds, None).is_ok() {
            while matches!(rustix::io::read(read.as_fd(), &mut sink), Ok(n) if n > 0) {}
            service();
        }
    }
}

/// Does what the signals received since the last call ask: cheap when none came.
pub(crate) fn service() {
    let Some(flags) = FLAGS.get() else { return };
    if flags.hup.swap(false, Ordering::Relaxed) {
        crate::metrics::bump_log_generation();
        crate::log_sink::reopen_if_stale();
        (flags.on_hup)();
        RELOADS.fetch_add(1, Ordering::Relaxed);
    }
    if flags.usr1.swap(false, Ordering::Relaxed) {
        let text = format!("# spidey metrics (SIGUSR1)\n{}", crate::metrics::render());
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
}
