//! One `uring` connection's I/O: the ring operations it has in flight, how its input
//! comes in (one multishot receive, kept armed across requests, whose bytes go straight
//! into the session or, when it has no room, wait here), how its response goes out (a
//! ring send for the out bytes, then sendfile(2) for a file body, waiting for room with a
//! ring poll), and what its last read said about input left in the socket. The loop
//! (`uring/mod.rs`) calls these methods; it does not touch the fields.

use crate::modes::evloop::conns::{ConnId, Op};
use crate::modes::evloop::{ConnRef, Received, Shared};
use crate::modes::send::Sent;
use crate::modes::session::{CgiFlow, Pool, Session};
use crate::modes::tls::Inflow;
use spidey_sys::uring::Ring;
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// Input the multishot receive brings that the session has no room for, at most: past it
/// the receive is cancelled, and armed again once the session has taken these bytes. A
/// receive may still complete a few times before its cancellation (each at most one ring
/// buffer), so this bounds the stash loosely, as a socket's own buffer is bounded.
const PENDING_MAX: usize = 4 * super::RECV_SIZE;

/// A completion, detached from the ring's buffers (their bytes were taken at once, see
/// [`Io::take_input`]).
pub(super) enum Event {
    /// `starved`: no ring buffer was free (ENOBUFS), the input is still there. `more`: the
    /// multishot receive stays armed.
    Received {
        len: usize,
        starved: bool,
        input_left: bool,
        more: bool,
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
}

/// The connection's receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recv {
    /// None in flight.
    Idle,
    /// A multishot receive is in flight (over TLS: a one-shot readiness poll).
    Armed,
    /// Its cancellation was asked for (too many bytes wait in `pending`); it may complete
    /// with bytes until its last completion.
    Stopping,
    /// The stream ended or failed: once the bytes in `pending` are handed over, the
    /// connection is closed. Nothing is armed again.
    Ended,
}

/// One connection's socket and its operations in flight.
pub(super) struct Io {
    stream: TcpStream,
    recv: Recv,
    /// Bytes received that the session had no room for yet, oldest first.
    /// INVARIANT: while not empty, every received byte is appended here, never pushed to
    /// the session directly, so the session sees the stream in order.
    pending: Vec<u8>,
    send_armed: bool,
    /// Waiting for room in the socket after sendfile found none (EAGAIN).
    room_armed: bool,
    /// Polls of a CGI script's pipes in flight.
    script_polls: u8,
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
    pub(super) fn open(socket: OwnedFd, session: &mut Session, pool: &mut crate::modes::session::Pool) -> Io {
        let stream = TcpStream::from(socket);
        if session.is_tls() {
            // A ClientHello already there starts the handshake; an error shows at the next read.
            let _ = session.read_from(&stream, pool);
            return Io::new(stream, Input::Unknown);
        }
        let space = session.recv_space(pool);
        let room = space.len();
        let n = rustix::io::read(&stream, space).unwrap_or(0);
        session.received(n, pool);
        Io::new(stream, if n == room { Input::Left } else { Input::Drained }) // a full read may have left more
    }

    fn new(stream: TcpStream, input: Input) -> Io {
        let (send_armed, room_armed, script_polls) = (false, false, 0);
        Io { stream, recv: Recv::Idle, pending: Vec::new(), send_armed, room_armed, script_polls, input }
    }

    /// Takes the bytes of a receive completion while the ring still shows them: into the
    /// session if it has room and nothing waits before them, else into `pending`.
    pub(super) fn take_input(&mut self, bytes: &[u8], session: &mut Session, pool: &mut Pool) {
        if self.pending.is_empty() && session.try_push(bytes, pool) {
            return;
        }
        self.pending.extend_from_slice(bytes);
    }

    /// Whether an operation that changes the response's progress is in flight.
    pub(super) fn busy(&self) -> bool {
        self.send_armed || self.room_armed || self.script_polls > 0
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
        if !self.pending.is_empty() {
            return true;
        }
        match self.input {
            Input::Left => true,
            Input::Drained => false,
            Input::Unknown => crate::net::has_unread_input(&self.stream),
        }
    }

    /// Submits the next part of the response, pumping a CGI body first once its last
    /// output is out. [`Sent::Blocked`]: an operation is in flight.
    ///
    /// The out bytes go out as a ring send; a file body follows with sendfile(2) from the
    /// loop thread once that send has completed, waiting for POLLOUT through the ring
    /// whenever the socket is full. File bytes never pass through user space. (Linked file
    /// → pipe → socket splices were tried and measured slower at every size, 1 KiB to
    /// 1 MiB: io_uring runs splices on its worker threads, and that hand-off costs more
    /// than the copy-free syscall; see the README's benchmark.)
    ///
    /// A TLS connection's ciphertext is written from the loop thread by the session
    /// (`send.rs`, a record at a time), waiting for room with the same ring poll.
    ///
    /// Sending the out bytes with send(2) instead, as `event` does, was tried (17a205b,
    /// reverted): server CPU per 1 KiB keep-alive response at a fixed 10k/s was 0.85x in
    /// one A/B and level in another, but closed-loop requests/s fell in every round
    /// (0.78-0.88x), since ring sends share one io_uring_enter per turn under load.
    /// Choosing per turn (ring sends once a turn reaps 4 completions) gave 0.77x the CPU
    /// and 0.68-1.00x the requests/s (median 0.81x). docs/runs/vs-peers/uring-send-* hold
    /// the runs.
    pub(super) fn send(&mut self, ring: &mut Ring, conn: ConnRef<'_>, shared: Shared<'_>) -> Sent {
        let session = conn.session;
        if session.is_tls() {
            return match session.send(&self.stream, shared.ex, shared.server, shared.pool) {
                Sent::Blocked => self.wait_room(ring, conn.id),
                sent => sent,
            };
        }
        if session.is_cgi() && session.out().is_empty() {
            match session.pump_cgi(shared.ex, shared.server, shared.pool) {
                CgiFlow::Write => {}
                CgiFlow::Done => return Sent::Done,
                CgiFlow::NeedRead => return Sent::NeedRead,
                CgiFlow::Wait => return Sent::WaitScript,
            }
        }
        let head_left = !session.out().is_empty();
        if head_left {
            session.cork_before_head(&self.stream);
            let more = session.file_follows();
            let (buf, from) = session.lend_out();
            self.send_armed = true;
            return match ring.send(self.stream.as_fd(), buf, from, more, conn.id.tag(Op::Send)) {
                Ok(()) => Sent::Blocked, // the body follows once this completes
                Err(_) => Sent::Failed,
            };
        }
        match session.send_body(&self.stream) {
            Sent::Blocked => self.wait_room(ring, conn.id),
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

    /// The session asks for input: hands it the bytes waiting in `pending`, or arms the
    /// socket's multishot receive if it is not armed yet. A TLS connection reads its
    /// ciphertext itself when a ring poll says the socket is readable (rustls reads in its
    /// own pieces), taking plaintext rustls still holds first.
    pub(super) fn receive(&mut self, ring: &mut Ring, conn: ConnRef<'_>, pool: &mut Pool) -> Received {
        if !self.pending.is_empty() {
            let space = conn.session.recv_space(pool);
            let n = space.len().min(self.pending.len());
            space[..n].copy_from_slice(&self.pending[..n]);
            conn.session.received(n, pool);
            self.pending.drain(..n);
            if self.pending.is_empty() {
                self.pending = Vec::new(); // an idle connection holds no buffer
            }
            return Received::Bytes;
        }
        match self.recv {
            Recv::Idle => {}
            Recv::Armed | Recv::Stopping => return Received::Wait,
            Recv::Ended => return Received::Closed,
        }
        if conn.session.is_tls() {
            match conn.session.read_from(&self.stream, pool) {
                Inflow::Bytes { .. } => return Received::Bytes,
                Inflow::Closed => return Received::Closed,
                Inflow::Again => {}
            }
            self.recv = Recv::Armed;
            return match ring.poll(self.stream.as_fd(), pollin(), conn.id.tag(Op::Socket)) {
                Ok(()) => Received::Wait,
                Err(_) => Received::Closed,
            };
        }
        self.recv = Recv::Armed;
        match ring.recv_multishot(self.stream.as_fd(), conn.id.tag(Op::Socket)) {
            Ok(()) => Received::Wait,
            Err(_) => Received::Closed,
        }
    }

    /// Polls a running script's pipes through the ring; any completion cancels the other,
    /// and the connection pumps again once both are resolved.
    pub(super) fn watch_script(&mut self, ring: &mut Ring, conn: ConnRef<'_>) -> bool {
        self.forget_input();
        let Some((stdout, stdin, _)) = conn.session.script_fds() else { return false };
        let mut armed = 0;
        for (fd, events, op) in [(stdout, pollin(), Op::ScriptOut), (stdin, pollout(), Op::ScriptIn)] {
            if let Some(fd) = fd {
                if ring.poll(fd, events, conn.id.tag(op)).is_err() {
                    return false;
                }
                armed += 1;
            }
        }
        self.script_polls = armed;
        armed > 0
    }

    /// Cancels the script's polls, if any are in flight; returns whether there were.
    pub(super) fn unwatch_script(&mut self, ring: &mut Ring, id: ConnId) -> bool {
        if self.script_polls == 0 {
            return false;
        }
        let _ = ring.cancel(id.tag(Op::ScriptOut));
        let _ = ring.cancel(id.tag(Op::ScriptIn));
        true
    }

    /// Records the completion of one of this connection's operations (`op`); returns
    /// false if the connection must close.
    pub(super) fn complete(
        &mut self,
        op: Op,
        event: Event,
        ring: &mut Ring,
        id: ConnId,
        session: &mut Session,
    ) -> bool {
        match event {
            Event::Received { len, starved, input_left, more } => {
                self.input = if input_left || starved { Input::Left } else { Input::Drained };
                self.recv = match (self.recv, more) {
                    (Recv::Armed, true) if self.pending.len() >= PENDING_MAX => {
                        let _ = ring.cancel(id.tag(Op::Socket));
                        Recv::Stopping
                    }
                    (recv, true) => recv,
                    // The end of the stream or an error (a cancelled receive ends with
                    // ECANCELED: armed again when the session asks, it finds either anew).
                    (Recv::Armed, false) if len == 0 && !starved => Recv::Ended,
                    (Recv::Ended, false) => Recv::Ended,
                    (_, false) => Recv::Idle,
                };
                // Ended: the drive hands over what is buffered, finishes a response in
                // progress, then closes when the session asks for more.
                true
            }
            Event::Sent(r, buf) => {
                self.send_armed = false;
                session.return_out(buf, *r.as_ref().unwrap_or(&0));
                r.is_ok()
            }
            Event::Polled if op == Op::Socket => {
                // A TLS connection's socket is readable: the drive reads it.
                self.recv = Recv::Idle;
                self.input = Input::Unknown;
                true
            }
            Event::Polled if op == Op::ScriptOut || op == Op::ScriptIn => {
                self.script_polls = self.script_polls.saturating_sub(1);
                if self.script_polls > 0 {
                    let other = if op == Op::ScriptOut { Op::ScriptIn } else { Op::ScriptOut };
                    let _ = ring.cancel(id.tag(other));
                }
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
            (matches!(self.recv, Recv::Armed | Recv::Stopping), Op::Socket),
            (self.send_armed, Op::Send),
            (self.room_armed, Op::Room),
            (self.script_polls > 0, Op::ScriptOut),
            (self.script_polls > 0, Op::ScriptIn),
        ];
        for (_, op) in armed.into_iter().filter(|(armed, _)| *armed) {
            let _ = ring.cancel(id.tag(op));
        }
        let _ = ring.close(OwnedFd::from(self.stream)); // on error closed at once
    }
}
