//! The request to stop, which every mode watches.

use rustix::event::{poll, PollFd, PollFlags};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The request to stop, as seen by every thread and every forked child.
///
/// SIGINT and SIGTERM write a byte into a pipe (signal-hook's async-signal-safe handler)
/// and set a flag. The pipe is never drained, so once written its read end stays readable
/// for good: every thread polling it, and every child that inherited it across fork, wakes
/// up. That is the whole broadcast; no thread is needed to relay it. The flag is the cheap
/// check for hot loops in this process. A second signal while draining exits at once.
#[derive(Debug, Clone)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    read: OwnedFd,
    write: OwnedFd,
    flag: Arc<AtomicBool>,
    grace: Duration,
    started: std::sync::OnceLock<Instant>,
    /// [`Shutdown::or_when_readable`]'s other fd, kept open while it is watched.
    _also: Option<OwnedFd>,
}

/// The server's own shutdown signal, once [`Shutdown::install`] made it: what
/// [`Shutdown::begun`] asks.
static INSTALLED: std::sync::OnceLock<Shutdown> = std::sync::OnceLock::new();

impl Shutdown {
    /// Creates the pipe and installs the signal handlers.
    pub fn install(grace: Duration) -> anyhow::Result<Shutdown> {
        let shutdown = Shutdown::new(grace)?;
        let _ = INSTALLED.set(shutdown.clone());
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // A second signal while the first is being honoured exits at once (status 1).
            signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&shutdown.inner.flag))?;
            signal_hook::flag::register(signal, Arc::clone(&shutdown.inner.flag))?;
            let write = shutdown.inner.write.try_clone()?;
            signal_hook::low_level::pipe::register(signal, write)?;
        }
        Ok(shutdown)
    }

    /// A shutdown signal with no handlers installed (for tests and the in-process lab).
    pub fn new(grace: Duration) -> anyhow::Result<Shutdown> {
        let (read, write) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)?;
        let inner = Inner {
            read,
            write,
            flag: Arc::new(AtomicBool::new(false)),
            grace,
            started: Default::default(),
            _also: None,
        };
        Ok(Shutdown { inner: Arc::new(inner) })
    }

    /// A shutdown signal for one `prefork` worker: it fires on the whole server's shutdown
    /// or once `also` (the worker's retire pipe) becomes readable, so a retired worker
    /// finishes its response and closes its idle keep-alive connection as if the server
    /// were stopping, while the others go on. Its fd is an epoll set holding both
    /// (level-triggered; neither is ever drained, so once ready it stays ready); poll(2)
    /// reports an epoll fd readable while any of its members is. `trigger` still stops
    /// the whole server.
    pub fn or_when_readable(&self, also: OwnedFd) -> io::Result<Shutdown> {
        use rustix::event::epoll;
        let set = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        epoll::add(&set, &self.inner.read, epoll::EventData::new_u64(0), epoll::EventFlags::IN)?;
        epoll::add(&set, &also, epoll::EventData::new_u64(1), epoll::EventFlags::IN)?;
        let inner = Inner {
            read: set,
            write: self.inner.write.try_clone()?,
            flag: Arc::new(AtomicBool::new(self.flagged())),
            grace: self.inner.grace,
            started: Default::default(),
            _also: Some(also),
        };
        Ok(Shutdown { inner: Arc::new(inner) })
    }

    /// Asks every watcher to stop, as a signal would.
    pub fn trigger(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        let _ = rustix::io::write(&self.inner.write, b"x");
    }

    /// The fd that becomes readable, and stays readable, once shutdown is asked.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.inner.read.as_fd()
    }

    /// Whether shutdown was asked. In a forked child only the pipe carries the news, so
    /// this polls it (without blocking) when the flag is not yet set.
    pub fn requested(&self) -> bool {
        if self.inner.flag.load(Ordering::Relaxed) {
            return true;
        }
        let mut fds = [PollFd::new(&self.inner.read, PollFlags::IN)];
        let ready = matches!(poll(&mut fds, Some(&rustix::time::Timespec::default())), Ok(n) if n > 0);
        if ready {
            self.note();
        }
        ready
    }

    /// Whether the server this process belongs to is shutting down (in a forked child
    /// too: the pipe is polled when the flag is not set). False where no signal handlers
    /// were installed.
    pub fn begun() -> bool {
        INSTALLED.get().is_some_and(Shutdown::requested)
    }

    /// Records that the pipe was seen readable (by a caller that polled it itself).
    pub fn note(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        self.inner.started.get_or_init(Instant::now);
    }

    /// The flag alone, for hot paths that also poll [`Shutdown::fd`].
    pub fn flagged(&self) -> bool {
        self.inner.flag.load(Ordering::Relaxed)
    }

    /// When in-flight work must be abandoned: the grace period after shutdown was seen.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.started.get().map(|t| *t + self.inner.grace)
    }

    pub fn grace(&self) -> Duration {
        self.inner.grace
    }
}
