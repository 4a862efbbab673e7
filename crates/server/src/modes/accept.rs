//! Accepting for the blocking modes: wait on the listeners and the shutdown pipe together,
//! and survive every accept error.
//!
//! EMFILE and ENFILE (out of file descriptors) leave the connection in the queue, so
//! retrying at once would spin at 100% CPU (libuv #690, node #45242): back off instead,
//! and keep serving the connections already open. ECONNABORTED and EINTR retry at once.

use crate::net::{Listener, Shutdown};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

/// How long to wait after running out of file descriptors.
pub const EXHAUSTED_BACKOFF: Duration = Duration::from_millis(100);

/// The listening sockets a blocking mode accepts on: one per `--addr`.
///
/// They are tried in turn, starting after the one that gave the last connection, so a
/// busy address cannot starve a quiet one; with none ready, one poll(2) waits on all of
/// them and the shutdown pipe.
pub struct Acceptor {
    listeners: Vec<TcpListener>,
    turn: usize,
}

impl Acceptor {
    pub fn new(listeners: Vec<Listener>) -> Acceptor {
        Acceptor { listeners: listeners.into_iter().map(|l| l.socket).collect(), turn: 0 }
    }

    /// The listening sockets, for a caller that polls them with other fds (`fork`).
    pub fn fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        self.listeners.iter().map(|l| l.as_fd())
    }

    /// The next connection, or `None` once shutdown is asked.
    ///
    /// The listeners are non-blocking; the accepted stream is blocking and close-on-exec
    /// (std uses accept4 with SOCK_CLOEXEC).
    pub fn next(&mut self, shutdown: &Shutdown) -> Option<(TcpStream, SocketAddr)> {
        loop {
            if shutdown.flagged() {
                return None;
            }
            let mut all_empty = true;
            for _ in 0..self.listeners.len() {
                let i = self.turn;
                self.turn = (self.turn + 1) % self.listeners.len();
                match self.listeners[i].accept() {
                    Ok(conn) => return Some(conn),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) if is_exhaustion(&e) => {
                        all_empty = false;
                        crate::metrics::accept_failed(true);
                        if pause(shutdown, EXHAUSTED_BACKOFF) {
                            return None;
                        }
                    }
                    // ECONNABORTED, EINTR, EPROTO and friends: that connection is gone, take the next.
                    Err(_) => {
                        all_empty = false;
                        crate::metrics::accept_failed(false);
                    }
                }
            }
            if all_empty {
                let fds: super::children::Fds<'_> = std::iter::once(shutdown.fd()).chain(self.fds()).collect();
                if let Ok(Some(0)) = super::children::first_readable(&fds, None) {
                    shutdown.note();
                    return None;
                }
            }
        }
    }
}

/// Whether an accept error means a resource ran out (and retrying at once would spin).
pub fn is_exhaustion(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(code) if [rustix::io::Errno::MFILE.raw_os_error(), rustix::io::Errno::NFILE.raw_os_error(), rustix::io::Errno::NOBUFS.raw_os_error(), rustix::io::Errno::NOMEM.raw_os_error()].contains(&code))
}

/// Sleeps for `d` unless shutdown comes first; returns whether it did.
pub fn pause(shutdown: &Shutdown, d: Duration) -> bool {
    let mut fds = [rustix::event::PollFd::from_borrowed_fd(shutdown.fd(), rustix::event::PollFlags::IN)];
    let asked = matches!(crate::net::poll_until(&mut fds, Some(Instant::now() + d)), Ok(true));
    if asked {
        shutdown.note();
    }
    asked
}
