//! Accepting for the blocking modes: wait on the listener and the shutdown pipe together,
//! and survive every accept error.
//!
//! EMFILE and ENFILE (out of file descriptors) leave the connection in the queue, so
//! retrying at once would spin at 100% CPU (libuv #690, node #45242): back off instead,
//! and keep serving the connections already open. ECONNABORTED and EINTR retry at once.

use crate::net::{wait_readable, Shutdown, Wake};
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// How long to wait after running out of file descriptors.
pub const EXHAUSTED_BACKOFF: Duration = Duration::from_millis(100);

/// The next connection, or `None` once shutdown is asked.
///
/// The listener is non-blocking; the accepted stream is blocking and close-on-exec
/// (std uses accept4 with SOCK_CLOEXEC).
pub fn next(listener: &TcpListener, shutdown: &Shutdown) -> Option<(TcpStream, SocketAddr)> {
    loop {
        if shutdown.flagged() {
            return None;
        }
        match listener.accept() {
            Ok(conn) => return Some(conn),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => match wait_readable(listener.as_fd(), shutdown, None) {
                Ok(Wake::Shutdown) => return None,
                _ => continue,
            },
            Err(e) if is_exhaustion(&e) => {
                crate::metrics::accept_failed(true);
                if pause(shutdown, EXHAUSTED_BACKOFF) {
                    return None;
                }
            }
            // ECONNABORTED, EINTR, EPROTO and friends: that connection is gone, take the next.
            Err(_) => crate::metrics::accept_failed(false),
        }
    }
}

/// Whether an accept error means a resource ran out (and retrying at once would spin).
pub fn is_exhaustion(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(code) if [rustix::io::Errno::MFILE.raw_os_error(), rustix::io::Errno::NFILE.raw_os_error(), rustix::io::Errno::NOBUFS.raw_os_error(), rustix::io::Errno::NOMEM.raw_os_error()].contains(&code))
}

/// Sleeps for `d` unless shutdown comes first; returns whether it did.
pub fn pause(shutdown: &Shutdown, d: Duration) -> bool {
    let deadline = Instant::now() + d;
    loop {
        let mut fds = [rustix::event::PollFd::from_borrowed_fd(shutdown.fd(), rustix::event::PollFlags::IN)];
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let ts = crate::net::to_timespec(left);
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(0) => return false,
            Ok(_) => {
                shutdown.note();
                return true;
            }
            Err(_) => continue,
        }
    }
}
