//! A connection's socket as its driver moves bytes on it ([`Socket`]): the layer under the
//! transport (`transport.rs`: clear or TLS), which runs over any socket, so a driver hands
//! its socket to the session and never learns which transport the connection has.
//!
//! - [`Direct`]: the socket written and read with system calls by the thread that drives
//!   the connection (the blocking driver, `event`): send(2) for buffer bytes, sendfile(2)
//!   for a file body, read(2).
//! - `uring`'s socket (`uring/socket.rs`): the same, but its out bytes leave as ring sends,
//!   the buffer lent to the ring until the completion gives it back.

use super::send::{self, Wire};
use rustix::io::Errno;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

/// A client socket, non-blocking: a [`Wire`] the send rules write through, that reads too.
pub(crate) trait Socket: Wire + AsFd {
    /// Reads some client bytes into `buf`; how many (0: the end of the stream). EAGAIN:
    /// none now.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        rustix::io::read(self.as_fd(), buf)
    }
}

/// What a read of a connection brought (`Session::read_from`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Inflow {
    /// Bytes arrived (perhaps only ciphertext that yielded no plaintext yet). `short`: a
    /// clear read was short, so the socket is drained (never said for TLS: rustls reads
    /// in its own pieces).
    Bytes { short: bool },
    /// Nothing to read now (EAGAIN).
    Again,
    /// The peer closed, the socket failed, or the TLS stream is broken (a plain-HTTP
    /// request to a TLS port is one: rustls refuses it, and the alert has been sent).
    Closed,
}

/// The socket, written and read with system calls from the thread that drives it.
pub(crate) struct Direct<'a, Fd: AsFd>(pub(crate) &'a Fd);

impl<Fd: AsFd> AsFd for Direct<'_, Fd> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl<Fd: AsFd> Wire for Direct<'_, Fd> {
    fn cork(&mut self) {
        let _ = rustix::net::sockopt::set_tcp_cork(self.0, true);
    }

    fn write(&mut self, bytes: &[u8], more: bool) -> Result<usize, Errno> {
        send::send_bytes(self.0, bytes, more)
    }

    /// sendfile(2): the file's bytes never pass through user space (with `--copy-loop`,
    /// a read and a send through a buffer instead: [`send::copy_file`]).
    fn write_file(&mut self, file: &File, offset: u64, len: usize) -> Result<usize, Errno> {
        if let Some(copied) = send::copy_file(self.0, file, offset, len) {
            return copied;
        }
        let mut offset = offset;
        rustix::fs::sendfile(self.0, file, Some(&mut offset), len)
    }
}

impl<Fd: AsFd> Socket for Direct<'_, Fd> {}
