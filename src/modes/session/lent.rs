//! For drivers that send the out bytes themselves (`uring`'s ring send): lending the out
//! buffer to the operation in flight, and the parts of `send.rs`'s rules around it (the
//! cork before the head, the file body after it).

use super::{send, Phase, Sent, Session};
use std::os::fd::AsFd;

impl Session {
    /// Lends the out buffer and how much of it was already sent to a driver that sends
    /// it asynchronously; [`Session::return_out`] gives it back.
    pub(crate) fn lend_out(&mut self) -> (Vec<u8>, usize) {
        debug_assert_eq!(self.phase, Phase::Open, "lent while {:?}", self.phase);
        self.phase = Phase::Lent;
        (std::mem::take(&mut self.out), self.out_pos)
    }

    /// Takes the out buffer back after an asynchronous send of `sent` more bytes.
    pub(crate) fn return_out(&mut self, buf: Vec<u8>, sent: usize) {
        self.phase = Phase::Open;
        self.out = buf;
        self.out_pos = (self.out_pos + sent).min(self.out.len());
    }

    /// For drivers that send the out bytes themselves ([`Session::lend_out`]): corks the
    /// connection's last response before its head, as `send.rs` rules
    /// ([`send::cork_before_head`]). Call once, before the head's first byte.
    pub(crate) fn cork_before_head<Fd: AsFd>(&self, fd: &Fd) {
        if self.out_pos == 0 {
            send::cork_before_head(fd, !self.keep_alive, &self.body);
        }
    }

    /// Whether the out bytes are all that is left of a keep-alive response and no input is
    /// buffered: once they are out, the connection only waits for its next request.
    pub(crate) fn ends_in_wait(&self) -> bool {
        self.body.is_none() && self.keep_alive && self.start == self.end && self.tls.is_none()
    }

    /// For drivers that send the out bytes themselves: moves the file body once they are
    /// out ([`send::send_body`]).
    pub(crate) fn send_body<Fd: AsFd>(&mut self, fd: &Fd) -> Sent {
        send::send_body(fd, &mut self.body)
    }

    /// Whether file bytes are still to move after the out bytes.
    pub(crate) fn file_follows(&self) -> bool {
        send::file_follows(&self.body)
    }
}
