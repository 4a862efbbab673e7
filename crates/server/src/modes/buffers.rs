//! The buffers of one loop (or one blocking connection), reused from request to request:
//! the one receive-buffer size every driver uses, and the rule that a buffer is held only
//! while it has bytes in it.

use crate::server::Server;

/// Reusable buffers of one loop; a buffer is only held while it has bytes in it.
/// Receive buffers keep their full length (no zeroing on reuse); output buffers are
/// kept empty with their capacity.
pub(crate) struct Buffers {
    ins: Vec<Vec<u8>>,
    outs: Vec<Vec<u8>>,
    size: usize,
}

/// Buffers kept for reuse per kind; beyond that they are freed.
const KEEP: usize = 256;

/// The least room [`Intake::space`](super::intake::Intake::space) offers a driver that receives: `uring`'s ring
/// buffers are this size, so every ring receive fits whole ([`Session::push_bytes`]).
pub(crate) const RECV_ROOM: usize = 4096;

impl Buffers {
    /// Buffers of `size` bytes: the largest head the limits allow plus one receive's worth
    /// ([`RECV_ROOM`]), so a partial head (the parser answers 431 beyond `max_head`) always
    /// leaves room for a whole receive once compacted.
    pub(crate) fn new(server: &Server) -> Buffers {
        // HTTP/2 leaves a frame's start in the buffer until the rest arrives: room for
        // the largest frame this side accepts (16 KiB and its header) comes first.
        let frame = spidey_http::h2::DEFAULT_MAX_FRAME_SIZE as usize + 9;
        Buffers { ins: Vec::new(), outs: Vec::new(), size: server.limits.max_head.max(frame) + RECV_ROOM }
    }

    pub(super) fn take_in(&mut self) -> Vec<u8> {
        self.ins.pop().unwrap_or_else(|| vec![0; self.size])
    }

    pub(super) fn give_in(&mut self, buf: Vec<u8>) {
        if self.ins.len() < KEEP {
            self.ins.push(buf);
        }
    }

    pub(super) fn take_out(&mut self) -> Vec<u8> {
        self.outs.pop().unwrap_or_else(|| Vec::with_capacity(1024))
    }

    pub(super) fn give_out(&mut self, mut buf: Vec<u8>) {
        // Outsized buffers (a big listing) are freed rather than kept.
        if buf.capacity() <= self.size && self.outs.len() < KEEP {
            buf.clear();
            self.outs.push(buf);
        }
    }
}
