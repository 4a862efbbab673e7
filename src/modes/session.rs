//! The per-connection state machine shared by the event-driven modes (`event`, `uring`).
//!
//! A [`Session`] is one connection's protocol state, independent of how readiness or
//! completions are learned: bytes come in through [`Session::recv_space`] /
//! [`Session::received`], requests are answered with [`Session::answer`] (through
//! [`Exchanger::step`]), and the response leaves as [`Session::out`] bytes (head and any
//! in-memory body, one write) followed by an optional [`Outgoing`] body that is moved
//! without a copy through user space (a file today; a CGI pipe can join the enum later).
//!
//! ```text
//!   Idle ──bytes──▶ Reading ──whole head──▶ Sending ──all out──▶ keep-alive? ──▶ Idle / Reading
//!     │                │ head deadline: 408           │ send deadline           └─▶ close
//!     └─idle deadline─▶ close                         └─▶ close
//! ```
//!
//! Memory: an idle connection owns no buffer at all. The receive buffer and the output
//! buffer are taken from a per-loop [`Pool`] when bytes arrive or a response is framed,
//! and given back as soon as they are empty, so 10,000 idle keep-alive connections cost a
//! few hundred bytes each and a busy loop allocates nothing per request.

use crate::exchange::{Body, CgiResponse, Exchanger, Step};
use crate::server::Server;
use rustix::io::Errno;
use rustix::net::SendFlags;
use std::fs::File;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::Duration;

mod cgi;
pub(crate) use cgi::CgiFlow;

/// Reusable buffers of one loop; a buffer is only held while it has bytes in it.
/// Receive buffers keep their full length (no zeroing on reuse); output buffers are
/// kept empty with their capacity.
pub(crate) struct Pool {
    ins: Vec<Vec<u8>>,
    outs: Vec<Vec<u8>>,
    size: usize,
}

/// Buffers kept for reuse per kind; beyond that they are freed.
const POOL_KEEP: usize = 256;

/// The least room [`Session::recv_space`] offers a driver that receives: `uring`'s ring
/// buffers are this size, so every ring receive fits whole ([`Session::push_bytes`]).
pub(crate) const RECV_ROOM: usize = 4096;

impl Pool {
    /// Buffers of `size` bytes: the largest head the limits allow plus one receive's worth
    /// ([`RECV_ROOM`]), so a partial head (the parser answers 431 beyond `max_head`) always
    /// leaves room for a whole receive once compacted.
    pub(crate) fn new(server: &Server) -> Pool {
        Pool { ins: Vec::new(), outs: Vec::new(), size: server.limits.max_head + RECV_ROOM }
    }

    fn take_in(&mut self) -> Vec<u8> {
        self.ins.pop().unwrap_or_else(|| vec![0; self.size])
    }

    fn give_in(&mut self, buf: Vec<u8>) {
        if self.ins.len() < POOL_KEEP {
            self.ins.push(buf);
        }
    }

    fn take_out(&mut self) -> Vec<u8> {
        self.outs.pop().unwrap_or_else(|| Vec::with_capacity(1024))
    }

    fn give_out(&mut self, mut buf: Vec<u8>) {
        // Outsized buffers (a big listing) are freed rather than kept.
        if buf.capacity() <= self.size && self.outs.len() < POOL_KEEP {
            buf.clear();
            self.outs.push(buf);
        }
    }
}

/// A body still to be moved after [`Session::out`].
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// `end - offset` bytes of `file` from `offset` (sendfile or splice: no copy through
    /// user space).
    File { file: std::sync::Arc<File>, offset: u64, end: u64 },
    /// A CGI script's output, pumped into [`Session::out`] as the script writes it
    /// ([`Session::pump_cgi`]); dropping it kills and reaps the script.
    Cgi(Box<CgiResponse>),
}

/// How far [`Session::send`] got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// The whole response is out.
    Done,
    /// The socket is full: wait until it is writable.
    Blocked,
    /// The peer left (EPIPE, ECONNRESET) or the file shrank: close.
    Failed,
    /// A CGI script wants request-body bytes: read the socket, then send again.
    NeedRead,
    /// A CGI script is running: wait for its pipes ([`Session::script_fds`]) or its
    /// deadline, then send again.
    WaitScript,
}

/// One connection's protocol state.
#[derive(Debug)]
pub(crate) struct Session {
    pub peer: SocketAddr,
    /// Received bytes `[start, end)`; empty (no allocation) when nothing is buffered.
    inbuf: Vec<u8>,
    start: usize,
    end: usize,
    /// The framed head and in-memory body, `[out_pos..]` still to send.
    out: Vec<u8>,
    out_pos: usize,
    body: Option<Outgoing>,
    /// Whether the connection stays open after the response being sent.
    keep_alive: bool,
    served: u32,
    /// The out buffer is lent to a driver's in-flight send ([`Session::lend_out`]).
    lent: bool,
    /// `--delay`: the answer framed last must wait this long before it is sent.
    delay: Option<Duration>,
    /// Set by the driver while the answer waits out its delay: nothing is sent.
    pub held: bool,
    /// The socket is corked (TCP_CORK) for the connection's last response.
    corked: bool,
    /// After the last response, half-closed: client bytes are read and dropped until the
    /// client closes ([`Session::linger`]).
    lingering: bool,
}

impl Session {
    pub(crate) fn new(peer: SocketAddr) -> Session {
        Session {
            peer,
            inbuf: Vec::new(),
            start: 0,
            end: 0,
            out: Vec::new(),
            out_pos: 0,
            body: None,
            keep_alive: true,
            served: 0,
            lent: false,
            delay: None,
            held: false,
            corked: false,
            lingering: false,
        }
    }

    /// Whether part of a request has arrived (the head deadline runs).
    pub(crate) fn has_partial_request(&self) -> bool {
        self.start < self.end
    }

    /// Whether a response is under way: framed and not yet finished with
    /// [`Session::finish_response`] (even if all its bytes are out).
    pub(crate) fn is_sending(&self) -> bool {
        self.lent || !self.out.is_empty() || self.body.is_some()
    }

    /// Nothing buffered either way: the connection can be closed without losing anything.
    pub(crate) fn is_idle(&self) -> bool {
        !self.has_partial_request() && !self.is_sending()
    }

    /// Room to receive into, taking a buffer from the pool if needed. At least
    /// [`RECV_ROOM`] bytes whenever the buffered bytes are a partial head, which is when
    /// drivers receive: the parser answers 431 beyond `max_head`, and the buffer holds
    /// `max_head + RECV_ROOM`. The buffered bytes move to the front whenever the free tail
    /// is shorter than a receive (not only once it is full: a receive into a short tail is
    /// what lost `uring` bytes, the rest of a ring buffer having nowhere to go).
    pub(crate) fn recv_space(&mut self, pool: &mut Pool) -> &mut [u8] {
        if self.inbuf.is_empty() {
            self.inbuf = pool.take_in();
        } else if self.inbuf.len() - self.end < RECV_ROOM && self.start > 0 {
            self.inbuf.copy_within(self.start..self.end, 0);
            (self.end, self.start) = (self.end - self.start, 0);
        }
        &mut self.inbuf[self.end..]
    }

    /// Records `n` bytes written into [`Session::recv_space`].
    pub(crate) fn received(&mut self, n: usize, pool: &mut Pool) {
        self.end += n;
        if self.lingering {
            self.start = self.end; // dropped: nothing more is answered
        }
        self.release_inbuf_if_empty(pool);
    }

    /// Copies `data` (at most [`RECV_ROOM`] bytes) in, for drivers that receive into their
    /// own buffers. All of it always fits ([`Session::recv_space`]); should it ever not,
    /// nothing is copied and this returns false: the driver must close the connection, as
    /// answering what follows a gap in the stream could answer bytes of a body.
    #[must_use]
    pub(crate) fn push_bytes(&mut self, data: &[u8], pool: &mut Pool) -> bool {
        let space = self.recv_space(pool);
        if data.len() > space.len() {
            debug_assert!(false, "{} received bytes for {} bytes of room", data.len(), space.len());
            self.release(pool);
            return false;
        }
        space[..data.len()].copy_from_slice(data);
        self.received(data.len(), pool);
        true
    }

    /// Answers the next buffered request, if a whole head is there and no response is
    /// still being sent. Returns whether a response is now ready in [`Session::out`].
    ///
    /// `closing`: the server is shutting down, so the answer says `Connection: close`.
    pub(crate) fn answer(&mut self, ex: &mut Exchanger, server: &Server, pool: &mut Pool, closing: bool) -> bool {
        if self.is_sending() || !self.keep_alive || !self.has_partial_request() {
            return false;
        }
        let must_close = closing || self.served + 1 >= server.max_requests;
        let answer = match ex.step(server, &self.inbuf[self.start..self.end], self.peer, must_close) {
            Step::Partial => return false,
            Step::Respond(answer) => answer,
        };
        self.served += 1;
        self.start += answer.consumed;
        self.keep_alive = answer.keep_alive;
        self.delay = answer.delay;
        self.release_inbuf_if_empty(pool);
        self.frame(&ex.head, answer.body, pool);
        true
    }

    /// The delay the last answer must wait (`--delay`), once: the driver parks the
    /// connection on a timer with [`Session::held`] set.
    pub(crate) fn take_delay(&mut self) -> Option<Duration> {
        self.delay.take()
    }

    /// Frames the 408 for a head that did not arrive in time; the connection then closes.
    pub(crate) fn answer_timeout(&mut self, ex: &mut Exchanger, server: &Server, pool: &mut Pool) {
        let answer = ex.timeout(server, &self.inbuf[self.start..self.end], self.peer);
        self.start = self.end;
        self.keep_alive = false;
        self.release_inbuf_if_empty(pool);
        self.out.clear();
        self.out_pos = 0;
        self.body = None;
        self.frame(&ex.head, answer.body, pool);
    }

    /// Appends `head` and an in-memory body to the out bytes; sets the body to move after.
    fn frame(&mut self, head: &[u8], body: Body, pool: &mut Pool) {
        if self.out.capacity() == 0 {
            self.out = pool.take_out();
        }
        self.out.extend_from_slice(head);
        self.body = match body {
            Body::Empty => None,
            Body::Bytes(bytes) => {
                self.out.extend_from_slice(&bytes);
                None
            }
            Body::File { file, offset, len } => Some(Outgoing::File { file, offset, end: offset + len }),
            Body::Cgi(cgi) => Some(Outgoing::Cgi(cgi)),
        };
    }

    /// The head and in-memory body bytes not yet sent.
    pub(crate) fn out(&self) -> &[u8] {
        &self.out[self.out_pos..]
    }

    /// Lends the out buffer and how much of it was already sent to a driver that sends
    /// it asynchronously; [`Session::return_out`] gives it back.
    pub(crate) fn lend_out(&mut self) -> (Vec<u8>, usize) {
        self.lent = true;
        (std::mem::take(&mut self.out), self.out_pos)
    }

    /// Takes the out buffer back after an asynchronous send of `sent` more bytes.
    pub(crate) fn return_out(&mut self, buf: Vec<u8>, sent: usize) {
        self.lent = false;
        self.out = buf;
        self.out_pos = (self.out_pos + sent).min(self.out.len());
    }

    /// Sends what is pending on the non-blocking socket `fd`: the out bytes (with
    /// MSG_MORE when a file follows, so head and first file bytes share a segment), then
    /// the file with sendfile(2), until done or EAGAIN.
    /// A CGI body is pumped in between: its output goes through the out bytes.
    pub(crate) fn send<Fd: AsFd>(&mut self, fd: Fd, ex: &mut Exchanger, server: &Server, pool: &mut Pool) -> Sent {
        loop {
            match self.send_out(&fd) {
                Sent::Done => {}
                other => return other,
            }
            if !matches!(self.body, Some(Outgoing::Cgi(_))) {
                return self.send_body(fd);
            }
            match self.pump_cgi(ex, server, pool) {
                CgiFlow::Write => {}
                CgiFlow::NeedRead => return Sent::NeedRead,
                CgiFlow::Wait => return Sent::WaitScript,
                CgiFlow::Done => return Sent::Done,
            }
        }
    }

    /// Before the head of the connection's last response goes out with a file body after
    /// it: corks the socket (TCP_CORK, tcp(7)), so the body's last partial segment leaves
    /// with the FIN, one packet instead of two (a loopback packet costs the sender the
    /// receiver's processing too), as nginx's `tcp_nopush` does: close(2) sends tail and
    /// FIN at once. With input left unread the driver half-closes first ([`Session::linger`]),
    /// since a close that resets would drop the corked tail instead of sending it. Once per
    /// connection; a failure only costs the extra packet.
    pub(crate) fn cork_last_response<Fd: AsFd>(&mut self, fd: &Fd) {
        let file_left = matches!(self.body, Some(Outgoing::File { offset, end, .. }) if offset < end);
        if !self.keep_alive && file_left && !self.corked {
            self.corked = rustix::net::sockopt::set_tcp_cork(fd, true).is_ok();
        }
    }

    /// Sends the out bytes on the non-blocking socket `fd` until they are all out
    /// ([`Sent::Done`]), the socket is full ([`Sent::Blocked`]) or the peer is gone; with
    /// MSG_MORE when a file follows, so head and first file bytes share a segment.
    fn send_out<Fd: AsFd>(&mut self, fd: &Fd) -> Sent {
        self.cork_last_response(fd);
        while !self.out().is_empty() {
            let more = matches!(self.body, Some(Outgoing::File { .. }));
            let flags = if more { SendFlags::MORE } else { SendFlags::empty() };
            match rustix::net::send(fd, self.out(), flags | SendFlags::NOSIGNAL) {
                Ok(n) => self.out_pos += n,
                Err(Errno::AGAIN) => return Sent::Blocked,
                Err(Errno::INTR) => {}
                Err(_) => return Sent::Failed,
            }
        }
        Sent::Done
    }

    /// Moves the [`Outgoing`] body (the out bytes must already be sent).
    pub(crate) fn send_body<Fd: AsFd>(&mut self, fd: Fd) -> Sent {
        loop {
            let Some(Outgoing::File { file, offset, end }) = &mut self.body else {
                return Sent::Done; // no body, or a CGI one (moved by `send`)
            };
            if *offset >= *end {
                self.body = None;
                return Sent::Done;
            }
            let chunk = usize::try_from(*end - *offset).unwrap_or(usize::MAX).min(1 << 30);
            match rustix::fs::sendfile(&fd, &*file, Some(offset), chunk) {
                Ok(0) => return Sent::Failed, // the file shrank under us
                Ok(_) => {}
                Err(Errno::AGAIN) => return Sent::Blocked,
                Err(Errno::INTR) => {}
                Err(_) => return Sent::Failed,
            }
        }
    }

    /// The file body still to move, for drivers that move it themselves: the file, the
    /// next offset (advance it as bytes go out) and the end.
    pub(crate) fn file_body(&mut self) -> Option<(&File, &mut u64, u64)> {
        match &mut self.body {
            Some(Outgoing::File { file, offset, end }) => Some((&*file, offset, *end)),
            _ => None,
        }
    }

    /// Marks a file body as moved (a driver's own [`Session::file_body`] transfer is done).
    pub(crate) fn end_body(&mut self) {
        if matches!(self.body, Some(Outgoing::File { .. })) {
            self.body = None;
        }
    }

    /// Whether the body being sent is a CGI script's output.
    pub(crate) fn is_cgi(&self) -> bool {
        matches!(self.body, Some(Outgoing::Cgi(_)))
    }

    /// After [`Sent::Done`]: gives the output buffer back; returns whether the
    /// connection stays open.
    pub(crate) fn finish_response(&mut self, pool: &mut Pool) -> bool {
        self.out_pos = 0;
        self.body = None;
        self.held = false;
        if self.out.capacity() > 0 {
            pool.give_out(std::mem::take(&mut self.out));
        }
        self.keep_alive
    }

    /// After the response the server closes on (`finish_response` said so): whether the
    /// connection must linger instead of closing now. Closing a socket with unread input
    /// sends a reset, and a reset drops whatever of the response the kernel has not sent
    /// yet (RFC 9112 §9.6). So when client bytes are left over (buffered here, or `unread`
    /// in the socket as the driver knows), the socket `fd` is half-closed (shutdown(SHUT_WR):
    /// the response leaves, then the FIN) and this returns true: the driver reads and drops
    /// input until the client closes or the idle deadline passes, as nginx's lingering
    /// close does. False: close now (nothing left over, or the half-close failed).
    pub(crate) fn linger<Fd: AsFd>(&mut self, fd: &Fd, unread: bool, pool: &mut Pool) -> bool {
        if !unread && !self.has_partial_request() {
            return false;
        }
        if rustix::net::shutdown(fd, rustix::net::Shutdown::Write).is_err() {
            return false;
        }
        self.lingering = true;
        self.start = self.end;
        self.release_inbuf_if_empty(pool);
        true
    }

    /// Whether the connection lingers after its last response ([`Session::linger`]).
    pub(crate) fn is_lingering(&self) -> bool {
        self.lingering
    }

    /// Gives every buffer back (the connection is closing).
    pub(crate) fn release(&mut self, pool: &mut Pool) {
        self.start = self.end;
        self.release_inbuf_if_empty(pool);
        self.body = None;
        self.finish_response(pool);
    }

    fn release_inbuf_if_empty(&mut self, pool: &mut Pool) {
        if self.start == self.end && !self.inbuf.is_empty() {
            (self.start, self.end) = (0, 0);
            pool.give_in(std::mem::take(&mut self.inbuf));
        }
    }
}
