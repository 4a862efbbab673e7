//! A `uring` connection's [`Socket`]: its out bytes leave as a ring send
//! (`spidey_sys::uring::Ring::send`), the buffer lent to the ring ([`OutBytes::Lent`])
//! until the completion gives it back, while everything else (a file body, TLS ciphertext,
//! reads) moves as on a [`Direct`] socket. When the out bytes are all that is left of a
//! keep-alive response and the loop's turn allows it ([`Ahead`]), they leave instead from a
//! copy sent ahead of the connection's next receive, linked, whose success posts no
//! completion (see `conn.rs` for why).

use crate::modes::send::{OutBytes, Wire};
use crate::modes::socket::{Direct, Socket};
use rustix::io::Errno;
use spidey_sys::uring::Ring;
use std::fs::File;
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};

/// What a `uring` connection lends the session for one send: the loop's ring, the socket,
/// the connection's tags, and the out buffer its last ring send gave back; afterwards,
/// what was submitted ([`RingSocket::submitted`]).
pub(super) struct RingSocket<'a> {
    ring: &'a mut Ring,
    stream: &'a TcpStream,
    /// The out buffer a completed ring send gave back, and how many bytes it sent: taken
    /// by the next [`Wire::write_out`].
    returned: &'a mut Option<(Vec<u8>, usize)>,
    /// The tag of a ring send of the out bytes.
    tag: u64,
    ahead: Option<Ahead>,
    submitted: Option<Submitted>,
}

/// Out bytes that end a keep-alive response may go ahead of the next receive
/// ([`Ring::send_ahead_of_recv`]), with these tags.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ahead {
    pub(super) send: u64,
    pub(super) recv: u64,
    /// The receive should wait for input rather than try first (the socket was drained).
    pub(super) expect_wait: bool,
}

/// What a send submitted to the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Submitted {
    /// A ring send holding the out buffer: the response waits for its completion.
    Lent,
    /// A send ahead of the connection's receive, which is now armed: the out bytes are
    /// out as far as the session knows.
    Ahead,
}

impl<'a> RingSocket<'a> {
    pub(super) fn new(
        ring: &'a mut Ring,
        stream: &'a TcpStream,
        tag: u64,
        ahead: Option<Ahead>,
        returned: &'a mut Option<(Vec<u8>, usize)>,
    ) -> RingSocket<'a> {
        RingSocket { ring, stream, returned, tag, ahead, submitted: None }
    }

    /// What the send submitted, if anything (the socket full or a failure submit nothing).
    pub(super) fn submitted(&self) -> Option<Submitted> {
        self.submitted
    }
}

impl AsFd for RingSocket<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

impl Wire for RingSocket<'_> {
    fn cork(&mut self) {
        Direct(self.stream).cork();
    }

    fn write(&mut self, bytes: &[u8], more: bool) -> Result<usize, Errno> {
        Direct(self.stream).write(bytes, more)
    }

    fn write_file(&mut self, file: &File, offset: u64, len: usize) -> Result<usize, Errno> {
        Direct(self.stream).write_file(file, offset, len)
    }

    /// A ring send of the out bytes: the buffer is lent to the ring (EAGAIN until the
    /// completion returns it), or, ending a keep-alive response on a quiet turn, a copy
    /// goes ahead of the next receive and the bytes count as out.
    fn write_out(&mut self, out: &mut OutBytes, more: bool, then_waits: bool) -> Result<(), Errno> {
        if let OutBytes::Lent { pos } = *out {
            let Some((buf, sent)) = self.returned.take() else { return Err(Errno::AGAIN) };
            *out = OutBytes::Held { pos: (pos + sent).min(buf.len()), buf };
        }
        let OutBytes::Held { buf, pos } = out else { unreachable!("given back just above") };
        if *pos == buf.len() {
            return Ok(());
        }
        let fd = self.stream.as_fd();
        if let Some(ahead) = self.ahead.filter(|_| then_waits) {
            self.ring
                .send_ahead_of_recv(fd, &buf[*pos..], ahead.send, ahead.expect_wait, ahead.recv)
                .map_err(|_| Errno::IO)?;
            *pos = buf.len();
            (self.ahead, self.submitted) = (None, Some(Submitted::Ahead));
            return Ok(());
        }
        let start = *pos;
        self.ring.send(fd, std::mem::take(buf), start, more, self.tag).map_err(|_| Errno::IO)?;
        *out = OutBytes::Lent { pos: start };
        self.submitted = Some(Submitted::Lent);
        Err(Errno::AGAIN) // the body follows once the completion returns the buffer
    }
}

impl Socket for RingSocket<'_> {}
