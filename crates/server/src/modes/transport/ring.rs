//! The ring transport's [`Wire`]: a plain `uring` connection whose out bytes leave as a
//! ring send (`spidey_sys::uring::Ring::send`), the buffer lent to the ring until the
//! completion gives it back, while its body moves as on a plain socket. When the out
//! bytes are all that is left of a keep-alive response and the loop's turn allows it
//! ([`Ahead`]), they leave instead from a copy sent ahead of the connection's next
//! receive, linked, whose success posts no completion (see `uring/conn.rs` for why).

use super::Plain;
use crate::modes::send::Wire;
use rustix::io::Errno;
use spidey_sys::uring::Ring;
use std::fs::File;
use std::os::fd::AsFd;

/// What a `uring` connection lends its transport for one send: the loop's ring, the
/// connection's tags and the out buffer its last ring send gave back; afterwards, what was
/// submitted ([`RingSend::submitted`]).
pub(crate) struct RingSend<'r> {
    ring: &'r mut Ring,
    /// The out buffer a completed ring send gave back, and how many bytes it sent.
    returned: Option<(Vec<u8>, usize)>,
    /// The tag of a ring send of the out bytes.
    tag: u64,
    ahead: Option<Ahead>,
    submitted: Option<Submitted>,
}

/// Out bytes that end a keep-alive response may go ahead of the next receive
/// ([`Ring::send_ahead_of_recv`]), with these tags.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ahead {
    pub(crate) send: u64,
    pub(crate) recv: u64,
    /// The receive should wait for input rather than try first (the socket was drained).
    pub(crate) expect_wait: bool,
}

/// What a ring transport submitted for a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Submitted {
    /// A ring send holding the out buffer: the response waits for its completion.
    Lent,
    /// A send ahead of the connection's receive, which is now armed: the out bytes are
    /// out as far as the session knows.
    Ahead,
}

impl<'r> RingSend<'r> {
    /// `returned`: the out buffer the connection's last ring send gave back at its
    /// completion, with the bytes it sent, if it has not been taken back yet.
    pub(crate) fn new(
        ring: &'r mut Ring,
        tag: u64,
        ahead: Option<Ahead>,
        returned: Option<(Vec<u8>, usize)>,
    ) -> RingSend<'r> {
        RingSend { ring, returned, tag, ahead, submitted: None }
    }

    /// Before a send: the out buffer lent to the last ring send, if its completion gave it
    /// back, is the session's again, `sent` bytes further on.
    pub(super) fn take_back(&mut self, out: &mut Vec<u8>, pos: &mut usize, lent: &mut bool) {
        if let Some((buf, sent)) = self.returned.take() {
            *out = buf;
            *pos = (*pos + sent).min(out.len());
            *lent = false;
        }
    }

    /// What the send submitted, if anything (the socket full or a failure submit nothing).
    pub(crate) fn submitted(&self) -> Option<Submitted> {
        self.submitted
    }

    /// The wire for a send on `fd`; `lent` is the transport's fact that its out buffer is
    /// the ring's.
    pub(super) fn wire<'a, Fd: AsFd>(&'a mut self, fd: &'a Fd, lent: &'a mut bool) -> RingWire<'a, 'r, Fd> {
        RingWire { plain: Plain(fd), send: self, lent }
    }
}

pub(super) struct RingWire<'a, 'r, Fd: AsFd> {
    plain: Plain<'a, Fd>,
    send: &'a mut RingSend<'r>,
    lent: &'a mut bool,
}

impl<Fd: AsFd> Wire for RingWire<'_, '_, Fd> {
    fn cork(&mut self) {
        self.plain.cork();
    }

    fn write(&mut self, bytes: &[u8], more: bool) -> Result<usize, Errno> {
        self.plain.write(bytes, more)
    }

    fn write_file(&mut self, file: &File, offset: u64, len: usize) -> Result<usize, Errno> {
        self.plain.write_file(file, offset, len)
    }

    /// A ring send of the out bytes: the buffer is lent to the ring (EAGAIN until the
    /// completion returns it), or, ending a keep-alive response on a quiet turn, a copy
    /// goes ahead of the next receive and the bytes count as out.
    fn write_out(&mut self, out: &mut Vec<u8>, pos: &mut usize, more: bool, then_waits: bool) -> Result<(), Errno> {
        let fd = self.plain.0.as_fd();
        let send = &mut *self.send;
        if let Some(ahead) = send.ahead.filter(|_| then_waits) {
            let bytes = &out[(*pos).min(out.len())..];
            send.ring
                .send_ahead_of_recv(fd, bytes, ahead.send, ahead.expect_wait, ahead.recv)
                .map_err(|_| Errno::IO)?;
            *pos = out.len();
            (send.ahead, send.submitted) = (None, Some(Submitted::Ahead));
            return Ok(());
        }
        let buf = std::mem::take(out);
        send.ring.send(fd, buf, *pos, more, send.tag).map_err(|_| Errno::IO)?;
        *self.lent = true;
        send.submitted = Some(Submitted::Lent);
        Err(Errno::AGAIN) // the body follows once the completion returns the buffer
    }
}
