//! The per-connection state machine every driver shares: the blocking one
//! (`blocking.rs`) and the event loops (`evloop/`, for `event` and `uring`).
//!
//! A [`Session`] is one connection's protocol state, independent of how readiness or
//! completions are learned: bytes come in through its transport into the receive buffer it
//! lends ([`Session::read_from`], [`Session::push_bytes`]: one buffer size, one compaction
//! rule, `intake.rs`), requests are answered
//! with [`Session::answer`] (through [`Exchanger::step`]), and the response leaves as
//! out bytes (head and any in-memory body, one write) followed by an optional
//! [`Outgoing`] body that is moved without a copy through user space, by the rules of
//! `send.rs` over the connection's [`Transport`] (clear or TLS, chosen when it is
//! accepted) and the socket the driver hands it; after the last one, [`Session::linger`]
//! decides the close.
//!
//! ```text
//!   Idle ──bytes──▶ Reading ──whole head──▶ Sending ──all out──▶ keep-alive? ──▶ Idle / Reading
//!     │                │ head deadline: 408           │ send deadline           └─▶ close
//!     └─idle deadline─▶ close                         └─▶ close
//! ```
//!
//! That picture is HTTP/1.1's. A connection that chose HTTP/2 (`--http2`, `Speaking`)
//! hands what arrives to `crate::h2::H2` in [`Session::answer`], which answers whole
//! requests as they come, several at once; its frames become the out bytes, sent by the
//! same rules, and [`Session::write_to`] refills them from `H2` until nothing can move.
//!
//! Memory: an idle connection owns no buffer at all. The receive buffer and the output
//! buffer are taken from a per-loop [`Buffers`] when bytes arrive or a response is framed,
//! and given back as soon as they are empty, so 10,000 idle keep-alive connections cost a
//! few hundred bytes each and a busy loop allocates nothing per request.

use super::send::{self, After, OutBytes, Outgoing, Response, Sent};
use super::socket::{Direct, Socket};
use super::transport::Transport;
use crate::exchange::{Answer, Body, Exchanger, Head, Offloading, Step};
use crate::h1;
use crate::h2::{Fill, StreamJob, H2};
use crate::server::Server;
use spidey_http::choice::{self, Choice, Protocol};
use spidey_http::h2::StreamId;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::Duration;

mod cgi;
mod input;
pub(crate) use super::buffers::{Buffers, RECV_ROOM};
pub(crate) use cgi::CgiFlow;

/// What holds the answer to the front request back, if anything: the transitions are
/// named methods. Whether bytes are being read or sent is the buffers' to say
/// ([`Session::has_partial_request`], [`Session::is_sending`]), the close the
/// `keep_alive` and `lingering` fields'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Nothing: requests are answered and answers sent as they come.
    None,
    /// The answer framed last must wait this long (`--delay`) before it is sent; the
    /// driver learns it from [`Session::held`].
    Delay(Duration),
    /// The driver holds the answer on its timer until [`Session::end_hold`]: nothing is
    /// sent.
    Timer,
    /// The request at the front of the buffer is being answered elsewhere (`hybrid`'s
    /// worker pool) until [`Session::end_hold`]; nothing is answered or sent meanwhile.
    Offloaded,
}

/// What [`Session::held`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// Not held: answers are sent as they come.
    No,
    /// A `--delay` holds the answer from now for this long: the driver arms its timer,
    /// whose end is [`HoldEnd::Deadline`].
    Starts(Duration),
    /// Held, the driver's timer (or `hybrid`'s pool) already on it.
    Yes,
}

/// How a hold ends ([`Session::end_hold`]), or, over HTTP/2, a stream on the worker pool.
#[derive(Debug)]
pub(crate) enum HoldEnd<'a> {
    /// The driver's timer: a `--delay` is over and the answer may be sent, or (`hybrid`)
    /// the pool did not answer within its deadline and a 504 is framed instead; its late
    /// answer will then find the session no longer waiting for one.
    Deadline,
    /// (`hybrid`) The pool's answer to the offloaded request: framed as if answered here.
    Answered(Answer<'a>),
    /// (`hybrid`) The pool cannot take the request (its queue is full): 503 with
    /// `Retry-After`, then the connection closes.
    Refused,
    /// (HTTP/2) The pool's answer to one stream ([`Answered::OffloadStreams`]), whose
    /// request body was `body` (a script's stdin): framed as if answered here, unless the
    /// stream no longer waits for it (reset, or answered 504 at its deadline).
    Stream { stream: StreamId, answer: Answer<'a>, body: Vec<u8> },
    /// (HTTP/2) The pool cannot take this stream: 503 on it; the connection goes on.
    StreamRefused(StreamId),
}

/// What [`Session::answer`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answered {
    /// Nothing to answer yet (no whole head, or a response still going out).
    No,
    /// A response is framed, ready to send.
    Ready,
    /// The request must be answered elsewhere: these are its bytes (from the start of the
    /// request to the end of what has arrived); the session waits in `Offloaded`.
    Offload { bytes: Vec<u8>, must_close: bool },
    /// (HTTP/2) These streams must be answered elsewhere; the connection goes on with
    /// its other streams. The driver submits each; one the pool cannot take ends with
    /// [`HoldEnd::StreamRefused`], and the pool's answer comes as [`HoldEnd::Stream`].
    /// Whatever else is framed is sent as usual.
    OffloadStreams(Vec<StreamJob>),
}

/// One connection's protocol state.
#[derive(Debug)]
pub(crate) struct Session {
    pub peer: SocketAddr,
    /// Received bytes `[start, end)`; empty (no allocation) when nothing is buffered.
    inbuf: Vec<u8>,
    start: usize,
    end: usize,
    /// The framed head and in-memory body, and who holds them ([`OutBytes`]).
    out: OutBytes,
    body: Option<Outgoing>,
    /// Whether the connection stays open after the response being sent.
    keep_alive: bool,
    /// The response being sent closes the connection with its request's body not all
    /// read: the client may still be sending it, so the close lingers ([`Session::linger`]).
    body_unread: bool,
    served: u32,
    hold: Hold,
    /// After the last response, half-closed: client bytes are read and dropped until the
    /// client closes ([`Session::linger`]).
    lingering: bool,
    /// What carries the connection's bytes over the driver's socket: clear or TLS
    /// (`--tls-cert`), chosen once when it was accepted ([`Session::open`]).
    transport: Transport,
    /// The protocol it speaks, chosen once from ALPN and its first bytes
    /// ([`choice::choose`]).
    protocol: Speaking,
}

/// The protocol a connection speaks.
#[derive(Debug)]
enum Speaking {
    /// Not chosen yet: its first bytes (or the TLS handshake) have not decided.
    Undecided,
    /// HTTP/1.1 (and 1.0): one exchange at a time, the state in the session's own fields.
    Http1,
    /// HTTP/2 (`--http2`): streams multiplexed by [`H2`], whose frames the session's out
    /// bytes carry.
    Http2(Box<H2>),
}

impl Session {
    fn new(peer: SocketAddr) -> Session {
        Session {
            peer,
            inbuf: Vec::new(),
            start: 0,
            end: 0,
            out: OutBytes::default(),
            body: None,
            keep_alive: true,
            body_unread: false,
            served: 0,
            hold: Hold::None,
            lingering: false,
            transport: Transport::Clear,
            protocol: Speaking::Undecided,
        }
    }

    /// How many requests (HTTP/2: streams) this connection has answered so far. A driver
    /// restarts the head deadline when it grows: over HTTP/2 the buffer often ends in part
    /// of a frame between reads, so "part of a request has arrived" holds across many
    /// answered streams, and only this count says the client is getting somewhere.
    pub(crate) fn answered(&self) -> u32 {
        let streams = match &self.protocol {
            Speaking::Http2(h2) => h2.streams_answered(),
            Speaking::Undecided | Speaking::Http1 => 0,
        };
        self.served.saturating_add(streams)
    }

    /// Whether part of a request has arrived (the head deadline runs), or a request is
    /// still unanswered: over HTTP/2, streams on the worker pool.
    /// Over TLS, a handshake under way counts: the head deadline bounds it.
    pub(crate) fn has_partial_request(&self) -> bool {
        let pooled = matches!(&self.protocol, Speaking::Http2(h2) if h2.awaits_pool());
        self.start < self.end || self.transport.mid_handshake() || pooled
    }

    /// Whether a response is under way: framed and not yet finished with
    /// [`Session::finish_response`] (even if all its bytes are out).
    /// Bytes the transport holds count too: TLS ciphertext rustls wants written (a
    /// handshake flight, tickets); and out bytes lent to a ring send.
    pub(crate) fn is_sending(&self) -> bool {
        !self.out.is_empty()
            || self.body.is_some()
            || self.transport.pending()
            || matches!(&self.protocol, Speaking::Http2(h2) if h2.has_work())
    }

    /// Answers the next buffered request, if a whole head is there and no response is
    /// still being sent ([`Answered::Ready`]: the response is framed, ready to send).
    ///
    /// `closing`: the server is shutting down, so the answer says `Connection: close`.
    /// `offload`: a request it names is handed back to the driver to be answered on a
    /// worker pool ([`Answered::Offload`]).
    pub(crate) fn answer(
        &mut self,
        ex: &mut Exchanger,
        server: &Server,
        buffers: &mut Buffers,
        closing: bool,
        offload: Offloading,
    ) -> Answered {
        if self.is_sending() || !self.keep_alive || !self.has_partial_request() || self.hold == Hold::Offloaded {
            return Answered::No;
        }
        if matches!(self.protocol, Speaking::Undecided) && !self.choose_protocol(server, buffers) {
            return if self.is_sending() { Answered::Ready } else { Answered::No };
        }
        if let Speaking::Http2(h2) = &mut self.protocol {
            let before = h2.streams_answered();
            let used = h2.receive(&self.inbuf[self.start..self.end], ex, server, self.peer, closing, offload);
            // `--delay`: the streams answered together wait together, as one HTTP/1.1
            // answer does (a stream that arrives meanwhile waits for the next hold).
            if let Some(delay) = server.site.options().delay.filter(|_| h2.streams_answered() > before) {
                self.hold = Hold::Delay(delay);
            }
            self.start += used;
            self.release_inbuf_if_empty(buffers);
            // Ready also while a script runs with nothing to send yet: the driver's send
            // path is what waits on the script (`Sent::WaitScript`).
            let fill = self.stage_h2(ex, server, buffers);
            if let Speaking::Http2(h2) = &mut self.protocol {
                let jobs = h2.take_jobs();
                if !jobs.is_empty() {
                    return Answered::OffloadStreams(jobs);
                }
            }
            let ready = !self.out.is_empty() || !self.keep_alive || fill == Fill::WaitScript;
            return if ready { Answered::Ready } else { Answered::No };
        }
        let must_close = closing || self.served + 1 >= server.max_requests;
        let bytes = &self.inbuf[self.start..self.end];
        let answer = match ex.step_routed(server, bytes, self.peer, must_close, offload) {
            Step::Partial => return Answered::No,
            Step::Respond(answer) => answer,
            Step::Offload => {
                self.hold = Hold::Offloaded;
                return Answered::Offload { bytes: bytes.to_vec(), must_close };
            }
        };
        self.apply(answer, buffers);
        Answered::Ready
    }

    /// Chooses the connection's protocol from ALPN and its first bytes; returns whether it
    /// speaks one here. False: wait for more bytes, or (HTTP/2) the refusal is framed and
    /// the connection closes after it, what it sent dropped unread.
    fn choose_protocol(&mut self, server: &Server, buffers: &mut Buffers) -> bool {
        match choice::choose(self.transport.alpn(), &self.inbuf[self.start..self.end], server.http2) {
            Choice::NeedMore => false,
            Choice::Speak(Protocol::Http1) => {
                self.protocol = Speaking::Http1;
                true
            }
            Choice::Speak(Protocol::Http2) => {
                crate::metrics::add(crate::metrics::Counter::Http2Connections, 1);
                self.protocol = Speaking::Http2(Box::new(H2::new()));
                true
            }
            Choice::RefuseHttp2 => {
                self.start = self.end;
                self.keep_alive = false;
                self.release_inbuf_if_empty(buffers);
                self.stage_bytes(&choice::HTTP2_REFUSAL, buffers);
                false
            }
        }
    }

    /// Takes in an answer to the request at the front of the buffer.
    fn apply(&mut self, answer: Answer<'_>, buffers: &mut Buffers) {
        self.served += 1;
        self.start += answer.consumed;
        self.keep_alive = answer.keep_alive;
        self.body_unread = answer.body_unread;
        if let Some(delay) = answer.delay {
            self.hold = Hold::Delay(delay);
        }
        self.release_inbuf_if_empty(buffers);
        self.stage(answer.head.as_ref(), answer.keep_alive, answer.body, buffers);
    }

    /// Whether the answer is held back, and the first time a `--delay` holds it, how long:
    /// [`Held::Starts`] once, after which the session is held (nothing is sent) until the
    /// driver's timer ends it with [`Session::end_hold`]. An answer being made elsewhere
    /// (`hybrid`, [`Answered::Offload`]) is held too.
    pub(crate) fn held(&mut self) -> Held {
        match self.hold {
            Hold::None => Held::No,
            Hold::Delay(delay) => {
                self.hold = Hold::Timer;
                Held::Starts(delay)
            }
            Hold::Timer | Hold::Offloaded => Held::Yes,
        }
    }

    /// Ends a hold ([`Session::held`]) in one of the ways it ends ([`HoldEnd`]); returns
    /// whether the session has an answer to send now (false: it was not held that way, and
    /// nothing changed).
    pub(crate) fn end_hold(
        &mut self,
        end: HoldEnd<'_>,
        ex: &mut Exchanger,
        server: &Server,
        buffers: &mut Buffers,
    ) -> bool {
        let end = match (end, &mut self.protocol) {
            (HoldEnd::Stream { stream, answer, body }, Speaking::Http2(h2)) => {
                if !h2.answered_elsewhere(stream, answer, &body) {
                    return false;
                }
                self.stage_h2_if_idle(ex, server, buffers);
                return true;
            }
            (HoldEnd::StreamRefused(stream), Speaking::Http2(h2)) => {
                if !h2.refused_by_pool(stream, ex, server, self.peer) {
                    return false;
                }
                self.stage_h2_if_idle(ex, server, buffers);
                return true;
            }
            (end, _) => end,
        };
        let answer = match (self.hold, end) {
            (Hold::Timer, HoldEnd::Deadline) => {
                self.hold = Hold::None;
                return true;
            }
            (Hold::Offloaded, HoldEnd::Answered(answer)) => answer,
            (Hold::Offloaded, HoldEnd::Deadline) => ex.late(server, &self.inbuf[self.start..self.end], self.peer),
            (Hold::Offloaded, HoldEnd::Refused) => ex.busy(server, &self.inbuf[self.start..self.end], self.peer),
            _ => return false,
        };
        self.hold = Hold::None;
        self.apply(answer, buffers);
        true
    }

    /// The server is shutting down and the connection is idle: over HTTP/2, a GOAWAY
    /// (NO_ERROR) is framed so the client knows no stream was cut, and this returns true
    /// (send it, then close: the connection no longer stays open). HTTP/1.1 has nothing
    /// to say: false, close now.
    pub(crate) fn farewell(&mut self, ex: &mut Exchanger, server: &Server, buffers: &mut Buffers) -> bool {
        let Speaking::Http2(h2) = &mut self.protocol else { return false };
        if !self.keep_alive {
            return false; // ending already
        }
        h2.go_away();
        self.keep_alive = false;
        self.stage_h2(ex, server, buffers);
        !self.out.is_empty()
    }

    /// Frames the 408 for a head that did not arrive in time; the connection then closes.
    /// Over HTTP/2 (a frame begun and not finished in time) the connection ends with
    /// GOAWAY instead: there is no request to answer.
    pub(crate) fn answer_timeout(&mut self, ex: &mut Exchanger, server: &Server, buffers: &mut Buffers) {
        if let Speaking::Http2(h2) = &mut self.protocol {
            h2.go_away();
            self.start = self.end;
            self.keep_alive = false;
            self.release_inbuf_if_empty(buffers);
            self.stage_h2(ex, server, buffers);
            return;
        }
        let answer = ex.timeout(server, &self.inbuf[self.start..self.end], self.peer);
        self.start = self.end;
        self.keep_alive = false;
        self.release_inbuf_if_empty(buffers);
        self.reset_out();
        self.body = None;
        self.stage(answer.head.as_ref(), answer.keep_alive, answer.body, buffers);
    }

    /// Appends `head`, encoded in the connection's protocol (HTTP/1.1, `h1.rs`; `keep_alive`:
    /// the connection stays open after it), and an in-memory body to the out bytes; sets
    /// the body to move after. No head: a script's answer, whose output brings its own.
    fn stage(&mut self, head: Option<&Head<'_>>, keep_alive: bool, body: Body, buffers: &mut Buffers) {
        let out = self.out_buf(buffers);
        if let Some(head) = head {
            h1::write_head(out, head, keep_alive);
        }
        self.body = send::stage(out, body);
    }

    /// Stages bytes already in the connection's protocol (HTTP/2's refusal).
    fn stage_bytes(&mut self, bytes: &[u8], buffers: &mut Buffers) {
        self.out_buf(buffers).extend_from_slice(bytes);
    }

    /// Moves HTTP/2's bodies on ([`H2::fill`]) and its frames into the out bytes (the
    /// out bytes must be drained: call only when nothing is being sent); the connection
    /// closes once HTTP/2's is over.
    fn stage_h2(&mut self, ex: &mut Exchanger, server: &Server, buffers: &mut Buffers) -> Fill {
        let Speaking::Http2(h2) = &mut self.protocol else { return Fill::Moved };
        let fill = h2.fill(ex, server, self.peer);
        let over = h2.is_over();
        self.reset_out();
        self.out_buf(buffers);
        let (Speaking::Http2(h2), Some(out)) = (&mut self.protocol, self.out.buf_mut()) else { return fill };
        if let Some(spare) = h2.take_output(out) {
            buffers.give_out(spare);
        }
        if over {
            self.keep_alive = false;
        }
        fill
    }

    /// HTTP/2 frames queued while the connection sends nothing: staged now (while it sends,
    /// the send path stages them once the out bytes drain).
    fn stage_h2_if_idle(&mut self, ex: &mut Exchanger, server: &Server, buffers: &mut Buffers) {
        if self.out.is_empty() {
            self.stage_h2(ex, server, buffers);
        }
    }

    /// The out buffer to append to, taken from the [`Buffers`] if the session holds none.
    /// Never called while it is lent (only a response being sent lends it).
    fn out_buf(&mut self, buffers: &mut Buffers) -> &mut Vec<u8> {
        debug_assert!(!matches!(self.out, OutBytes::Lent { .. }), "out bytes framed while lent");
        if !matches!(&self.out, OutBytes::Held { buf, .. } if buf.capacity() > 0) {
            self.out = OutBytes::Held { buf: buffers.take_out(), pos: 0 };
        }
        match &mut self.out {
            OutBytes::Held { buf, .. } => buf,
            OutBytes::Lent { .. } => unreachable!("made held just above"),
        }
    }

    /// Empties the out bytes, keeping the buffer.
    fn reset_out(&mut self) {
        if let OutBytes::Held { buf, pos } = &mut self.out {
            buf.clear();
            *pos = 0;
        }
    }

    /// Sends what is pending on the driver's non-blocking `socket` by the rules of
    /// `send.rs` (out bytes, then a file body) over the connection's transport, until done
    /// or EAGAIN. A CGI body is pumped in between: its output goes through the out bytes.
    pub(crate) fn write_to<S: Socket>(
        &mut self,
        socket: &mut S,
        ex: &mut Exchanger,
        server: &Server,
        buffers: &mut Buffers,
    ) -> Sent {
        loop {
            // HTTP/2's output comes in batches, more of them after this one: never the
            // last bytes before the connection waits for its client.
            let h2 = matches!(self.protocol, Speaking::Http2(_));
            let after = match (self.keep_alive, self.start < self.end || h2) {
                (false, _) => After::Close,
                (true, true) => After::Answer,
                (true, false) => After::Wait,
            };
            let response = Response { out: &mut self.out, body: &mut self.body, after };
            match self.transport.carry(socket, response) {
                Sent::Done => {}
                other => return other,
            }
            if let Speaking::Http2(_) = self.protocol {
                let fill = self.stage_h2(ex, server, buffers);
                if !self.out.is_empty() {
                    continue;
                }
                return match fill {
                    Fill::WaitScript => Sent::WaitScript,
                    Fill::Moved => Sent::Done,
                };
            }
            if !self.is_cgi() {
                return Sent::Done;
            }
            match self.pump_cgi(ex, server, buffers) {
                CgiFlow::Write => {}
                CgiFlow::NeedRead => return Sent::NeedRead,
                CgiFlow::Wait => return Sent::WaitScript,
                CgiFlow::Done => return Sent::Done,
            }
        }
    }

    /// Whether the body being sent is a CGI script's output.
    fn is_cgi(&self) -> bool {
        matches!(self.body, Some(Outgoing::Cgi(..)))
    }

    /// After [`Sent::Done`]: gives the output buffer back; returns whether the
    /// connection stays open.
    pub(crate) fn finish_response(&mut self, buffers: &mut Buffers) -> bool {
        self.body = None;
        self.hold = Hold::None;
        if let Some(buf) = self.out.take() {
            buffers.give_out(buf);
        }
        self.keep_alive
    }

    /// After the response the server closes on (`finish_response` said so): whether the
    /// connection must linger instead of closing now. Closing a socket with unread input
    /// sends a reset, and a reset drops whatever of the response the kernel has not sent
    /// yet (RFC 9112 §9.6). So when client bytes are left over or may still come (buffered
    /// here, `unread` in the socket as the driver knows, a request body the answer left
    /// unread, or the connection speaks HTTP/2), the socket `fd` is half-closed
    /// (shutdown(SHUT_WR): the response leaves, then the FIN) and this returns true: the
    /// driver reads and drops
    /// input until the client closes or the idle deadline passes, as nginx's lingering
    /// close does. False: close now (nothing left over, or the half-close failed).
    pub(crate) fn linger<Fd: AsFd>(&mut self, fd: &Fd, unread: bool, buffers: &mut Buffers) -> bool {
        self.transport.close_notify(&mut Direct(fd));
        // An HTTP/2 client may be in the middle of sending frames when its connection
        // ends (a GOAWAY for a flood): what it has not sent yet would arrive after the
        // close and reset the connection, GOAWAY and all, so HTTP/2 always lingers.
        let h2 = matches!(self.protocol, Speaking::Http2(_));
        if !unread && !self.body_unread && !self.has_partial_request() && !h2 {
            return false;
        }
        if rustix::net::shutdown(fd, rustix::net::Shutdown::Write).is_err() {
            return false;
        }
        self.lingering = true;
        self.start = self.end;
        self.release_inbuf_if_empty(buffers);
        true
    }

    /// Gives every buffer back (the connection is closing).
    pub(crate) fn release(&mut self, buffers: &mut Buffers) {
        self.start = self.end;
        self.release_inbuf_if_empty(buffers);
        self.body = None;
        self.finish_response(buffers);
    }

    fn release_inbuf_if_empty(&mut self, buffers: &mut Buffers) {
        if self.start == self.end && !self.inbuf.is_empty() {
            (self.start, self.end) = (0, 0);
            buffers.give_in(std::mem::take(&mut self.inbuf));
        }
    }
}

/// For tests and the fuzzing driver (`session_fuzz.rs`) only: never a driver's.
#[cfg(any(test, feature = "fuzzing"))]
impl Session {
    /// A plain session.
    pub(crate) fn for_tests(peer: SocketAddr) -> Session {
        Session::new(peer)
    }

    /// (`fuzzing`) Receives what of `data` fits the room a driver would read into
    /// ([`Intake::space`](crate::modes::intake::Intake::space)), as one read would; returns how many bytes.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn receive_for_tests(&mut self, data: &[u8], buffers: &mut Buffers) -> usize {
        let (_, mut intake) = self.intake(buffers);
        let space = intake.space();
        let n = data.len().min(space.len());
        space[..n].copy_from_slice(&data[..n]);
        intake.received(n);
        n
    }
}
