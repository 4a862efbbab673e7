//! Child processes for the forking modes (`fork`, `prefork`): the SIGCHLD self-pipe,
//! reaping without blocking, and the final wait at shutdown.
//!
//! SIGCHLD writes a byte into a pipe (signal-hook's async-signal-safe handler), so the
//! single-threaded parent wakes from poll(2) when a child ends, drains the pipe, then
//! reaps every ended child with waitpid(WNOHANG) until none is left. Draining before
//! reaping means a child that ends in between leaves a fresh byte, so no exit is missed.
//! No thread is involved, so the parent stays safe to fork.

use crate::net::Shutdown;
use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};
use std::collections::HashSet;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

/// How long after the grace period children still running are killed.
const KILL_MARGIN: Duration = Duration::from_secs(1);

/// The live children of this process, and the pipe SIGCHLD writes into.
#[derive(Debug)]
pub(crate) struct Children {
    pids: HashSet<Pid>,
    sigchld: OwnedFd,
    registration: signal_hook::SigId,
}

impl Children {
    /// Creates the SIGCHLD pipe and installs its handler.
    pub(crate) fn watch() -> io::Result<Children> {
        let (read, write) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)?;
        crate::signals::wake(&write)?; // SIGHUP and SIGUSR1 wake the master too: `reap` services them
        let registration = signal_hook::low_level::pipe::register(signal_hook::consts::SIGCHLD, write)?;
        Ok(Children { pids: HashSet::new(), sigchld: read, registration })
    }

    /// The fd that becomes readable when a child has ended.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.sigchld.as_fd()
    }

    pub(crate) fn len(&self) -> usize {
        self.pids.len()
    }

    pub(crate) fn insert(&mut self, child: Pid) {
        self.pids.insert(child);
    }

    /// Reaps every child that has ended, without blocking, and returns them.
    pub(crate) fn reap(&mut self) -> Vec<(Pid, WaitStatus)> {
        crate::signals::service();
        let mut sink = [0u8; 64];
        while matches!(rustix::io::read(&self.sigchld, &mut sink), Ok(n) if n > 0) {}
        let mut ended = Vec::new();
        loop {
            match rustix::process::waitpid(None, WaitOptions::NOHANG) {
                Ok(Some((pid, status))) => {
                    self.pids.remove(&pid);
                    ended.push((pid, status));
                }
                Err(rustix::io::Errno::INTR) => continue,
                // None: children remain but none has ended; ECHILD: no children at all.
                Ok(None) | Err(_) => return ended,
            }
        }
    }

    /// Sends `signal` to every live child.
    pub(crate) fn signal_all(&self, signal: Signal) {
        for &pid in &self.pids {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }

    /// Waits until every child has ended. They watch the same shutdown pipe, so they are
    /// already finishing their in-flight responses; any still running a second after the
    /// grace period is killed (SIGKILL) and reaped.
    pub(crate) fn wait_all(&mut self, shutdown: &Shutdown) {
        shutdown.note();
        let deadline = shutdown.deadline().unwrap_or_else(Instant::now) + KILL_MARGIN;
        let mut killed = false;
        loop {
            self.reap();
            if self.pids.is_empty() {
                return;
            }
            let now = Instant::now();
            if !killed && now >= deadline {
                self.signal_all(Signal::KILL);
                killed = true;
            }
            let left = if killed { Duration::from_millis(100) } else { deadline - now };
            let _ = first_readable(&[self.fd()], Some(left));
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        signal_hook::low_level::unregister(self.registration);
    }
}

/// Runs once, in a forking parent before its first fork, the first-use initialisations
/// every child would otherwise repeat on its first request (a child starts from a copy of
/// the parent's memory, so what the parent has set up, each child has):
/// - httparse's choice of its SIMD parser, a CPU-feature detection whose `cpuid`
///   instructions trap to the hypervisor in a virtual machine: 6% of `fork`'s CPU per
///   connection on the 2-vCPU VM (`perf record`, docs/performance.md);
/// - rustix's lookup of the vDSO's `getcpu`, which the metrics' per-CPU shards call.
pub(crate) fn warm() {
    let mut slots = spidey_http::HeaderSlots::new();
    let parsed = spidey_http::parse(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", &mut slots, &spidey_http::Limits::default());
    debug_assert!(matches!(parsed, Ok(spidey_http::Parsed::Complete(..))), "the warm-up request parses");
    let _ = rustix::thread::sched_getcpu();
}

/// How many fds a parent polls without allocating: its shutdown and SIGCHLD pipes and a
/// few listeners.
pub(crate) const POLLED: usize = 8;

/// The fds a forking parent waits on.
pub(crate) type Fds<'a> = smallvec::SmallVec<[BorrowedFd<'a>; POLLED]>;
type Polled<'a> = smallvec::SmallVec<[PollFd<'a>; POLLED]>;

/// Waits until one of `fds` is readable and returns the index of the first readable one
/// (earlier fds take priority), or `None` when `timeout` passes first.
/// No allocation for up to [`POLLED`] fds: the forking parents call it once per connection.
pub(crate) fn first_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<Option<usize>> {
    let mut polled: Polled<'_> = fds.iter().map(|&fd| PollFd::from_borrowed_fd(fd, PollFlags::IN)).collect();
    if !crate::net::poll_until(&mut polled, timeout.map(|t| Instant::now() + t))? {
        return Ok(None);
    }
    Ok(polled.iter().position(|p| !p.revents().is_empty()))
}
