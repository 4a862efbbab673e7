//! One `uring` connection's I/O: the ring operations it has in flight, how its response
//! goes out (the session sends over its [`RingSocket`] by `send.rs`'s rules: the out bytes
//! as a ring send, then sendfile(2) for a file body; waiting for room with a ring poll),
//! and what its last read said about input left in the socket.
//! The loop (`uring/mod.rs`) calls these methods; it does not touch the fields.

use super::socket::{Ahead, RingSocket, Submitted};
use crate::exchange::Ready;
use crate::modes::evloop::conns::{ConnId, Op};
use crate::modes::evloop::{ConnRef, Received, Shared};
use crate::modes::send::Sent;
use crate::modes::session::{Buffers, Session};
use crate::modes::socket::{Direct, Inflow};
use spidey_sys::uring::Ring;
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// A loop turn that reaped this many completions or more is busy: responses go out as
/// plain ring sends, whose completions keep the loop awake.
pub(super) const BUSY_TURN: usize = 4;

/// A completion, detached from the ring's buffers.
pub(super) enum Event {
    /// `starved`: no ring buffer was free (ENOBUFS), the input is still there.
    Received {
        len: usize,
        starved: bool,
        input_left: bool,
    },
    Sent(std::io::Result<usize>, Vec<u8>),
    Polled,
}

/// What the connection knows of client input left unread in its socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    /// The last read left some (a full read, or a receive flagged
    /// IORING_CQE_F_SOCK_NONEMPTY).
    Left,
    /// The last read drained the socket, and the connection has not waited since.
    Drained,
    /// The connection waited since its last read (for socket room, a script, a delay):
    /// input may have arrived unseen, as no receive is armed while a response goes out.
    Unknown,
    /// The first read found the end of the stream, a failed socket, or (TLS) a stream that
    /// is not TLS: the next receive closes the connection.
    Ended,
}

/// One connection's socket and its operations in flight.
pub(super) struct Io {
    stream: TcpStream,
    recv_armed: bool,
    send_armed: bool,
    /// The out buffer a completed ring send gave back, and how many of its bytes that send
    /// sent: the connection's [`RingSocket`] gives it to the session at the next send.
    returned: Option<(Vec<u8>, usize)>,
    /// A send made ahead of the receive may be in flight ([`Ring::send_ahead_of_recv`]),
    /// until the receive's completion.
    send_ahead: bool,
    /// Waiting for room in the socket after sendfile found none (EAGAIN).
    room_armed: bool,
    /// Polls of running scripts' pipes in flight, and whether the rest are being cancelled.
    scripts: ScriptPolls,
    input: Input,
}

impl AsFd for Io {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

fn pollin() -> u32 {
    rustix::event::PollFlags::IN.bits().into()
}

fn pollout() -> u32 {
    rustix::event::PollFlags::OUT.bits().into()
}

impl Io {
    /// A new connection. The request has often arrived by the time it is accepted: read
    /// it now (the socket is non-blocking) rather than after a receive's trip through the
    /// ring. Nothing there yet: the ring receive is armed as usual.
    /// Over TLS, a ClientHello already there starts the handshake. A failed read or the
    /// end of the stream shows again at the connection's next receive.
    pub(super) fn open(socket: OwnedFd, session: &mut Session, buffers: &mut Buffers) -> Io {
        let stream = TcpStream::from(socket);
        let input = match session.read_from(&mut Direct(&stream), buffers) {
            Inflow::Bytes { short: false } => Input::Left, // a full read may have left more
            Inflow::Bytes { short: true } | Inflow::Again => Input::Drained,
            Inflow::Closed => Input::Ended,
        };
        let (recv_armed, send_armed, send_ahead, room_armed) = (false, false, false, false);
        let scripts = ScriptPolls::default();
        Io { stream, recv_armed, send_armed, returned: None, send_ahead, room_armed, scripts, input }
    }

    /// Whether an operation that changes the response's progress is in flight.
    pub(super) fn busy(&self) -> bool {
        self.send_armed || self.room_armed || self.scripts.armed()
    }

    /// The connection is about to wait without a receive armed.
    pub(super) fn forget_input(&mut self) {
        if self.input == Input::Drained {
            self.input = Input::Unknown;
        }
    }

    /// Whether client input is left unread in the socket, for the lingering close. The last
    /// read tells, as `event` knows from its edges, unless the connection waited since:
    /// then the socket is asked (recv MSG_PEEK). Input that arrives between that knowledge
    /// and the close is missed by every server (nginx's `rev->ready` likewise); a client
    /// that pipelines after `Connection: close` sends it with the request, in practice.
    pub(super) fn unread_input(&self) -> bool {
        match self.input {
            Input::Left => true,
            Input::Drained | Input::Ended => false,
            Input::Unknown => crate::net::has_unread_input(&self.stream),
        }
    }

    /// Sends the next part of the response through the session's transport, by the rules
    /// of `send.rs` (pumping a CGI body as needed). [`Sent::Blocked`]: an operation is in
    /// flight, a ring send of the out bytes or a ring poll for room in the socket.
    ///
    /// The out bytes go out as a ring send (`socket.rs`), and a file body follows with
    /// sendfile(2) from the loop thread once that send has completed, waiting for POLLOUT
    /// through the ring whenever the socket is full. File bytes never pass through user
    /// space.
    ///
    /// When the out bytes are all that is left of a keep-alive response, nothing is
    /// buffered after it and `ahead` (the loop's last turn was quiet, fewer than
    /// [`BUSY_TURN`] completions, and it is not draining), they go out as a send made
    /// ahead of the next receive ([`Ahead`]): its success posts no completion, so
    /// io_uring_enter sleeps until the next request instead of returning at once for the
    /// send. On a busy turn the send completions are what keep the loop awake and
    /// batching, so it sends as above.
    ///
    /// A TLS connection writes its ciphertext from the loop thread (a record at a time),
    /// waiting for room with the same ring poll.
    pub(super) fn send_pending(&mut self, ring: &mut Ring, conn: ConnRef<'_>, shared: Shared<'_>, ahead: bool) -> Sent {
        let ahead = (ahead && !self.recv_armed).then(|| Ahead {
            send: conn.id.tag(Op::SendAhead),
            recv: conn.id.tag(Op::Socket),
            // Drained: the client has not answered yet (it waits for this response).
            expect_wait: self.input == Input::Drained,
        });
        let mut socket = RingSocket::new(ring, &self.stream, conn.id.tag(Op::Send), ahead, &mut self.returned);
        let sent = conn.session.write_to(&mut socket, shared.ex, shared.server, shared.buffers);
        let submitted = socket.submitted();
        match submitted {
            Some(Submitted::Ahead) => (self.send_ahead, self.recv_armed) = (true, true),
            Some(Submitted::Lent) => self.send_armed = true,
            None => {}
        }
        match sent {
            Sent::Blocked if !self.send_armed => self.wait_room(ring, conn.id),
            sent => sent,
        }
    }

    /// The socket is full: a ring poll waits for room.
    fn wait_room(&mut self, ring: &mut Ring, id: ConnId) -> Sent {
        self.room_armed = true;
        self.forget_input();
        match ring.poll(self.stream.as_fd(), pollout(), id.tag(Op::Room)) {
            Ok(()) => Sent::Blocked,
            Err(_) => Sent::Failed,
        }
    }

    /// Arms the socket's ring receive, if it is not armed yet, whose bytes the session
    /// takes at its completion (`Session::push_bytes`; over TLS, ciphertext). Input the
    /// session's transport holds already (plaintext rustls decrypted beyond one receive's
    /// room) is taken first.
    pub(super) fn receive(&mut self, ring: &mut Ring, conn: ConnRef<'_>, buffers: &mut Buffers) -> Received {
        if self.recv_armed {
            return Received::Wait;
        }
        if self.input == Input::Ended {
            return Received::Closed;
        }
        if conn.session.holds_input() {
            return match conn.session.read_from(&mut Direct(&self.stream), buffers) {
                Inflow::Closed => Received::Closed,
                Inflow::Bytes { .. } | Inflow::Again => Received::Bytes,
            };
        }
        self.recv_armed = true;
        // Drained: the client has not answered yet (it waits for the response just sent),
        // so the kernel waits for input rather than failing a first try.
        let expect_wait = self.input == Input::Drained;
        match ring.recv(self.stream.as_fd(), expect_wait, conn.id.tag(Op::Socket)) {
            Ok(()) => Received::Wait,
            Err(_) => Received::Closed,
        }
    }

    /// Polls every running script's pipes through the ring (all under the connection's two
    /// script tags); the first completion cancels the rest, and the connection pumps every
    /// script once all have resolved.
    pub(super) fn watch_script(&mut self, ring: &mut Ring, conn: ConnRef<'_>) -> bool {
        self.forget_input();
        let Some(watch) = conn.session.script_watch() else { return false };
        for (fd, ready) in watch.pipes() {
            let (events, op) = match ready {
                Ready::Read => (pollin(), Op::ScriptOut),
                Ready::Write => (pollout(), Op::ScriptIn),
            };
            if ring.poll(fd, events, conn.id.tag(op)).is_err() {
                self.scripts.cancel(ring, conn.id); // those already armed
                return self.scripts.armed();
            }
            self.scripts.armed_one(op);
        }
        self.scripts.armed()
    }

    /// Cancels the scripts' polls, if any are in flight; returns whether there were.
    pub(super) fn unwatch_script(&mut self, ring: &mut Ring, id: ConnId) -> bool {
        self.scripts.cancel(ring, id);
        self.scripts.armed()
    }

    /// Records the completion of one of this connection's operations (`op`); returns
    /// false if the connection must close.
    pub(super) fn complete(&mut self, op: Op, event: Event, ring: &mut Ring, id: ConnId) -> bool {
        match event {
            Event::Received { len, starved, input_left } => {
                (self.recv_armed, self.send_ahead) = (false, false);
                self.input = if input_left || starved { Input::Left } else { Input::Drained };
                len > 0 || starved // else end of stream or error
            }
            // A send made ahead of the receive completes only when it failed or came up
            // short: the response is broken, the connection closes.
            Event::Sent(..) if op == Op::SendAhead => {
                self.send_ahead = false;
                false
            }
            Event::Sent(r, buf) => {
                self.send_armed = false;
                self.returned = Some((buf, *r.as_ref().unwrap_or(&0)));
                r.is_ok()
            }
            Event::Polled if op == Op::ScriptOut || op == Op::ScriptIn => {
                self.scripts.resolved(op);
                self.scripts.cancel(ring, id);
                true
            }
            Event::Polled => {
                self.room_armed = false;
                true
            }
        }
    }

    /// Closes the socket through the ring, batched with the next submission, after
    /// cancelling the operations in flight; the kernel holds the socket until they
    /// complete, and their completions find a new generation in the slot.
    pub(super) fn close(self, ring: &mut Ring, id: ConnId) {
        let armed = [
            (self.recv_armed, Op::Socket),
            (self.send_armed, Op::Send),
            (self.send_ahead, Op::SendAhead),
            (self.room_armed, Op::Room),
        ];
        for (_, op) in armed.into_iter().filter(|(armed, _)| *armed) {
            let _ = ring.cancel(id.tag(op));
        }
        let mut scripts = self.scripts;
        scripts.cancel(ring, id);
        let _ = ring.close(OwnedFd::from(self.stream)); // on error closed at once
    }
}

/// The polls of a connection's script pipes in flight, by tag. Every script's pipe is
/// polled under one of the connection's two tags, and an AsyncCancel cancels one request
/// with its tag: so as many cancels go out as polls are in flight, once.
#[derive(Debug, Default, Clone, Copy)]
struct ScriptPolls {
    /// Polls in flight for a readable stdout (or pidfd), and for a writable stdin.
    out: u16,
    into: u16,
    /// The cancels for those in flight have been asked for.
    cancelling: bool,
}

impl ScriptPolls {
    fn armed(&self) -> bool {
        self.out + self.into > 0
    }

    fn armed_one(&mut self, op: Op) {
        if op == Op::ScriptOut {
            self.out += 1;
        } else {
            self.into += 1;
        }
    }

    /// One poll completed (its pipe is ready, or it was cancelled).
    fn resolved(&mut self, op: Op) {
        let count = if op == Op::ScriptOut { &mut self.out } else { &mut self.into };
        *count = count.saturating_sub(1);
        if !self.armed() {
            self.cancelling = false;
        }
    }

    /// Asks the ring to cancel every poll still in flight, unless that was asked already.
    fn cancel(&mut self, ring: &mut Ring, id: ConnId) {
        if self.cancelling || !self.armed() {
            return;
        }
        self.cancelling = true;
        for (count, op) in [(self.out, Op::ScriptOut), (self.into, Op::ScriptIn)] {
            for _ in 0..count {
                let _ = ring.cancel(id.tag(op));
            }
        }
    }
}
