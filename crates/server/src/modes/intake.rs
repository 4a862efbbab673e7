//! A connection's receive buffer, lent by its session to its transport to fill
//! ([`Intake`]): the transport reads the socket (or takes bytes a driver received) and
//! says how many landed, never where the buffer came from.

use super::buffers::{Buffers, RECV_ROOM};
use super::socket::{Inflow, Socket};
use rustix::io::Errno;

/// A session's receive buffer, lent to its transport to fill: bytes `[start, end)` of
/// `inbuf`, which is taken from the thread's [`Buffers`] when a read needs room and given
/// back when it holds nothing.
pub(crate) struct Intake<'a> {
    pub(super) inbuf: &'a mut Vec<u8>,
    pub(super) start: &'a mut usize,
    pub(super) end: &'a mut usize,
    /// The session lingers: what arrives is dropped.
    pub(super) dropping: bool,
    pub(super) buffers: &'a mut Buffers,
}

impl<'a> Intake<'a> {
    /// Room to receive into at the end of the buffer, taking one from the [`Buffers`] if
    /// needed. At least [`RECV_ROOM`] bytes whenever the buffered bytes are a
    /// partial head, which is when drivers receive: the parser answers 431 beyond
    /// `max_head`, and the buffer holds `max_head + RECV_ROOM`. The buffered bytes move to
    /// the front whenever the free tail is shorter than a receive (not only once it is
    /// full: a ring receive into a short tail would leave the rest of its buffer nowhere
    /// to go).
    pub(crate) fn space(&mut self) -> &mut [u8] {
        self.make_room();
        &mut self.inbuf[*self.end..]
    }

    fn make_room(&mut self) {
        if self.inbuf.is_empty() {
            *self.inbuf = self.buffers.take_in();
        } else if self.inbuf.len() - *self.end < RECV_ROOM && *self.start > 0 {
            self.inbuf.copy_within(*self.start..*self.end, 0);
            (*self.end, *self.start) = (*self.end - *self.start, 0);
        }
    }

    /// Records `n` bytes written into [`Intake::space`]; a buffer left empty goes back.
    pub(crate) fn received(&mut self, n: usize) {
        *self.end += n;
        if self.dropping {
            *self.start = *self.end; // dropped: nothing more is answered
        }
        if *self.start == *self.end && !self.inbuf.is_empty() {
            (*self.start, *self.end) = (0, 0);
            self.buffers.give_in(std::mem::take(self.inbuf));
        }
    }

    /// Copies `data` the driver received into the buffer; false if it does not fit
    /// (it always does: see `Session::push_bytes`).
    pub(crate) fn push(&mut self, data: &[u8]) -> bool {
        let space = self.space();
        if data.len() > space.len() {
            debug_assert!(false, "{} received bytes for {} bytes of room", data.len(), space.len());
            return false;
        }
        space[..data.len()].copy_from_slice(data);
        self.received(data.len());
        true
    }

    /// One read of `socket` straight into the buffer.
    pub(crate) fn read_once<S: Socket>(&mut self, socket: &mut S) -> Inflow {
        let space = self.space();
        let asked = space.len();
        match socket.read(space) {
            Ok(0) => {
                self.received(0);
                Inflow::Closed
            }
            Ok(n) => {
                self.received(n);
                Inflow::Bytes { short: n < asked }
            }
            Err(Errno::AGAIN) => {
                self.received(0); // gives an unused buffer back
                Inflow::Again
            }
            Err(Errno::INTR) => {
                self.received(0);
                Inflow::Bytes { short: false }
            }
            Err(_) => Inflow::Closed,
        }
    }
}
