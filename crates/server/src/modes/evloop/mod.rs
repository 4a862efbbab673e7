//! The loop skeleton `event` and `uring` share: one core, two backends.
//!
//! As redis splits `ae.c` from `ae_epoll.c` and h2o's `evloop.c.h` calls its backend's
//! `evloop_do_proceed`, the [`Loop`] core here owns everything the two modes have in
//! common: the connections and their slots ([`conns`]), the [`Session`] of each, the
//! exchanger and buffers, the deadlines and which one to arm ([`drive`]), accepting
//! under the shared `--max-conns` count ([`LoopLimit`]) with its back-off, and the drain
//! on shutdown. A [`Backend`] supplies what really differs, readiness (epoll: ask, then do
//! the system call) against completion (io_uring: submit the operation, learn when it is
//! done): how to wait and hand the loop what happened, how to watch the listener, and how
//! one connection sends, receives, waits for a script and closes.
//!
//! The contract, for a backend:
//! - [`Backend::wait`] blocks at most `timeout`; [`Backend::dispatch`] then reports every
//!   event to the core: [`Loop::listener_ready`], [`Loop::vacancy`], [`Loop::begin_drain`],
//!   [`Loop::answers_rung`] (`hybrid`),
//!   or [`Loop::drive`] for a connection, after recording what its event brought (bytes
//!   received, a send completed). Events for a connection closed since are dropped: each
//!   carries its connection's generation ([`conns::Tag`]).
//! - The core calls a connection's hooks only from [`Loop::drive`], and drives a
//!   connection until it waits: a hook that returns "waiting" ([`Sent::Blocked`],
//!   [`Received::Wait`], a watched script) has arranged for the event that resumes it.
//! - Every connection has exactly one deadline armed (stamp-checked, `timer.rs`); its
//!   expiry is handled here, the backend only stops watching a script's pipes
//!   ([`Backend::unwatch_script`]).
//!
//! Shutdown: each loop watches the shutdown pipe. On it the loop stops accepting, closes
//! idle connections, lets in-flight requests and responses finish (answering
//! `Connection: close`) until `Shutdown::deadline`, then returns.

pub(crate) mod conns;
mod drive;
pub(crate) mod offload;
#[cfg(test)]
mod tests;

use super::accept::EXHAUSTED_BACKOFF;
use super::limit::{Accepted, LoopLimit};
use super::loops::LoopContext;
use super::send::Sent;
use super::session::{Buffers, HoldEnd, Session};
use super::timer::{At, Deadlines, Fixed, Kind};
use crate::exchange::Exchanger;
use crate::net::Shutdown;
use crate::server::Server;
use conns::{Conn, ConnId, Conns};
use offload::Desk;
use rustix::net::SocketFlags;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a backend's receive hook came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Received {
    /// New bytes are in the session: answer them.
    Bytes,
    /// Nothing now; the backend wakes the connection when there is.
    Wait,
    /// The client closed or the socket failed.
    Closed,
}

/// The shared things a connection's send hook may need (a CGI body pumps through them).
pub(crate) struct Shared<'a> {
    pub(crate) ex: &'a mut Exchanger,
    pub(crate) server: &'a Server,
    pub(crate) buffers: &'a mut Buffers,
}

/// What differs between `event` (epoll readiness) and `uring` (io_uring completions).
pub(crate) trait Backend: Sized {
    /// One connection's socket and the backend's state for it.
    type Io: AsFd;

    /// Waits until something happens or `timeout` passes (`None`: no deadline).
    fn wait(&mut self, timeout: Option<Duration>) -> anyhow::Result<()>;

    /// Hands every event gathered by the last wait to the core (see the module docs).
    fn dispatch(lp: &mut Loop<Self>) -> anyhow::Result<()>;

    /// Starts (`on`) or stops watching `listener`, the loop's `index`th, for connections;
    /// returns whether the listener is now watched as asked. Its events carry
    /// `Tag::Listener { index }`. A backend whose watch is one-shot says so
    /// ([`Backend::ONE_SHOT_LISTENER`]).
    fn watch_listener(&mut self, listener: &TcpListener, index: usize, on: bool) -> bool;

    /// Whether a listener watch ends with the event it reports (a ring poll).
    const ONE_SHOT_LISTENER: bool;

    /// A new connection's I/O state; may read already-arrived bytes into `session`.
    fn open(&mut self, socket: OwnedFd, session: &mut Session, buffers: &mut Buffers) -> Self::Io;

    /// Sends what the session has pending (pumping a CGI body as needed);
    /// [`Sent::Blocked`] once the backend waits for the socket or an operation in flight.
    fn send_pending(&mut self, io: &mut Self::Io, conn: ConnRef<'_>, shared: Shared<'_>) -> Sent;

    /// Brings new client bytes into the session, or arranges to be told of them.
    fn receive(&mut self, io: &mut Self::Io, conn: ConnRef<'_>, buffers: &mut Buffers) -> Received;

    /// Watches the running scripts' pipes (`Session::script_watch`); false if it cannot.
    fn watch_script(&mut self, io: &mut Self::Io, conn: ConnRef<'_>) -> bool;

    /// The script's deadline passed: stop watching its pipes. True if the backend waits
    /// for those watches to end before the connection is driven again.
    fn unwatch_script(&mut self, io: &mut Self::Io, conn: ConnRef<'_>) -> bool;

    /// Whether the backend has an operation in flight that the connection must wait for.
    fn busy(io: &Self::Io) -> bool;

    /// Whether client input is left unread in the socket (for the lingering close).
    fn unread_input(io: &Self::Io) -> bool;

    /// The drive ends and the connection waits; false if it cannot (then it closes).
    fn settle(&mut self, io: &mut Self::Io, conn: ConnRef<'_>) -> bool;

    /// Closes a connection's socket, cancelling what it has in flight.
    fn close(&mut self, io: Self::Io, id: ConnId);
}

/// A connection as the hooks see it: which one it is, and its session.
pub(crate) struct ConnRef<'a> {
    pub(crate) id: ConnId,
    pub(crate) session: &'a mut Session,
}

/// One of the loop's listening sockets, and whether the backend watches it (not while
/// full, backing off or draining; a one-shot watch ends with its event).
struct Listening {
    socket: TcpListener,
    watched: bool,
}

/// One loop: the core's state and its backend.
pub(crate) struct Loop<B: Backend> {
    pub(crate) backend: B,
    pub(crate) conns: Conns<B::Io>,
    pub(crate) buffers: Buffers,
    ex: Exchanger,
    server: Arc<Server>,
    shutdown: Shutdown,
    /// One per `--addr`; emptied when draining.
    listeners: Vec<Listening>,
    backoff_until: Option<Instant>,
    /// The `--max-conns` count shared with the other loops; this loop is number `index`.
    limit: Arc<LoopLimit>,
    index: usize,
    deadlines: Deadlines,
    /// `hybrid`: this loop's desk at the worker pool (`offload.rs`), the one optional part
    /// of the core. The core hands it requests whose answer may block ([`Loop::drive`]),
    /// takes its answers when its doorbell rings ([`Loop::answers_rung`]) and answers 504
    /// at its deadline ([`Kind::Offload`]); the backend watches the doorbell.
    offload: Option<Desk>,
    pub(crate) draining: bool,
    now: Instant,
    /// Scratch list of due deadlines, kept to avoid an allocation per wake-up.
    due: Vec<(Kind, usize, u64)>,
}

/// Runs one loop until shutdown has drained it; `offload`: `hybrid`'s desk at its pool.
pub(crate) fn run<B: Backend>(lc: LoopContext, backend: B, offload: Option<Desk>) -> anyhow::Result<()> {
    let mut start = lc.start;
    let mut lp = Loop {
        backend,
        conns: Conns::new(),
        buffers: Buffers::new(&lc.server),
        ex: Exchanger::new(),
        deadlines: Deadlines::new(&lc.server.timeouts),
        server: lc.server,
        shutdown: lc.shutdown,
        listeners: lc.listeners.into_iter().map(|socket| Listening { socket, watched: false }).collect(),
        backoff_until: None,
        limit: lc.limit,
        index: lc.index,
        offload,
        draining: false,
        now: Instant::now(),
        due: Vec::new(),
    };
    // The backend is made: wait for the other loops to have made theirs (loops.rs).
    start.wait_for_all();
    {
        // Accepts, and may answer, what queued before this loop's thread started, then
        // watches the listeners: busy work like any turn's (the `busy workers` gauge).
        let _busy = crate::metrics::hold(crate::metrics::Counter::BusyWorkers);
        lp.resume_accepting();
    }
    loop {
        if lp.draining && (lp.conns.open == 0 || lp.shutdown.deadline().is_some_and(|d| lp.now >= d)) {
            break;
        }
        crate::log::flush();
        let timeout = lp.next_wake().map(|t| t.saturating_duration_since(Instant::now()));
        lp.backend.wait(timeout)?;
        // Busy from the wake-up to the next wait (the `busy workers` gauge).
        let _busy = crate::metrics::hold(crate::metrics::Counter::BusyWorkers);
        lp.now = Instant::now();
        crate::server::refresh(&mut lp.server); // a SIGHUP's configuration, from this turn on
        B::dispatch(&mut lp)?;
        lp.expire();
        lp.resume_accepting();
    }
    crate::log::flush();
    Ok(())
}

impl<B: Backend> Loop<B> {
    fn next_wake(&self) -> Option<Instant> {
        let wakes = [self.deadlines.next(), self.backoff_until, self.shutdown.deadline().filter(|_| self.draining)];
        wakes.into_iter().flatten().min()
    }

    /// The `index`th listener has connections queued.
    pub(crate) fn listener_ready(&mut self, index: usize) {
        if B::ONE_SHOT_LISTENER {
            if let Some(l) = self.listeners.get_mut(index) {
                l.watched = false;
            }
        }
        self.accept_all();
    }

    /// This loop's vacancy eventfd fired: a place freed up in the shared count, which
    /// `resume_accepting` takes up after this turn.
    pub(crate) fn vacancy(&mut self) {
        self.limit.drain(self.index);
    }

    /// (`hybrid`) This loop's doorbell rang: the worker pool has answers for its
    /// connections. An answer for a connection closed since (or whose slot was reused, or
    /// that got its 504 already) is dropped.
    pub(crate) fn answers_rung(&mut self) {
        let Some(desk) = &mut self.offload else { return };
        let mut answers = desk.take();
        for done in answers.drain(..) {
            let slot = done.conn.slot;
            let Some(conn) = self.conns.live(done.conn) else { continue };
            let (ex, server, buffers) = (&mut self.ex, &*self.server, &mut self.buffers);
            let end = match done.stream {
                Some((stream, body)) => HoldEnd::Stream { stream, answer: done.answer, body },
                None => HoldEnd::Answered(done.answer),
            };
            if conn.session.end_hold(end, ex, server, buffers) {
                self.drive(slot);
            }
        }
        if let Some(desk) = &mut self.offload {
            desk.give_back(answers);
        }
    }

    /// Accepts while connections are queued and the shared count has places: each accept
    /// takes its place first, so the loops together never hold more than `--max-conns`.
    /// Once a listener's queue is empty it is watched; at the bound none is, and new
    /// connections wait in the listen queues until a place frees up, on this loop or
    /// another (the waker, `LoopLimit::give_back`). With several `--addr`s every listener
    /// is drained in turn (with edge-triggered epoll a listener must be emptied before
    /// its next event; an empty one costs one accept4 returning EAGAIN).
    fn accept_all(&mut self) {
        let flags = SocketFlags::NONBLOCK | SocketFlags::CLOEXEC;
        for index in 0..self.listeners.len() {
            while !self.draining && self.backoff_until.is_none() {
                let Some(listener) = self.listeners.get(index) else { return };
                match self.limit.accept(|| Ok(rustix::net::acceptfrom_with(&listener.socket, flags)?)) {
                    Accepted::Conn((socket, peer)) => self.add(socket, peer), // the place is the connection's
                    Accepted::Empty => {
                        self.watch_listener(index, true);
                        break;
                    }
                    Accepted::Full => return self.watch_listeners(false),
                    Accepted::Exhausted => {
                        // Out of descriptors: the connection stays queued, so stop watching for
                        // a while instead of spinning (see modes/accept.rs).
                        self.watch_listeners(false);
                        self.backoff_until = Some(self.now + EXHAUSTED_BACKOFF);
                        return;
                    }
                }
            }
        }
    }

    fn watch_listener(&mut self, index: usize, on: bool) {
        let Some(l) = self.listeners.get_mut(index) else { return };
        if on != l.watched && self.backend.watch_listener(&l.socket, index, on) {
            l.watched = on;
        }
    }

    fn watch_listeners(&mut self, on: bool) {
        for index in 0..self.listeners.len() {
            self.watch_listener(index, on);
        }
    }

    /// Accepts again once a back-off is over or a place has freed up.
    fn resume_accepting(&mut self) {
        if self.listeners.iter().all(|l| l.watched) || self.draining || self.limit.is_full() {
            return;
        }
        if self.backoff_until.is_some_and(|t| self.now < t) {
            return;
        }
        self.backoff_until = None;
        self.accept_all();
    }

    /// Serves an accepted connection, which holds one place of the shared count.
    fn add(&mut self, socket: OwnedFd, peer: Option<rustix::net::SocketAddrAny>) {
        let Some(peer) = peer.and_then(|p| SocketAddr::try_from(p).ok()) else { return self.limit.give_back() };
        // No TLS state for an HTTPS connection: closed (the socket dropped), never plaintext.
        let Some(mut session) = Session::open(peer, &self.server) else { return self.limit.give_back() };
        // The request has often arrived by the time the connection is accepted: the
        // backend may read it now, and the drive answers it at once.
        let io = self.backend.open(socket, &mut session, &mut self.buffers);
        let slot = self.conns.insert(session, io, 0, Kind::Idle);
        let stamp = self.deadlines.arm(Fixed::Idle, self.now, slot);
        if let Some(conn) = self.conns.get_mut(slot) {
            conn.stamp = stamp;
        }
        self.drive(slot);
    }

    /// Closes the connection in `slot`, giving its place back.
    pub(crate) fn close(&mut self, slot: usize) {
        if let Some(conn) = self.conns.remove(slot) {
            let id = conn.id(slot);
            let Conn { mut session, io, .. } = conn;
            session.release(&mut self.buffers);
            self.backend.close(io, id);
            self.limit.give_back();
        }
    }

    fn expire(&mut self) {
        let mut due = std::mem::take(&mut self.due);
        self.deadlines.expire(self.now, |kind, slot, stamp| due.push((kind, slot, stamp)));
        for &(kind, slot, stamp) in &due {
            let Some(conn) = self.conns.get_mut(slot).filter(|c| c.stamp == stamp) else {
                continue; // re-armed or disarmed since
            };
            match kind {
                // A TLS handshake not done in time: no HTTP to answer 408 in, so close.
                Kind::Head if conn.session.is_handshaking() => self.close(slot),
                Kind::Head => {
                    if !conn.session.is_sending() {
                        conn.session.answer_timeout(&mut self.ex, &self.server, &mut self.buffers);
                    }
                    self.drive(slot);
                }
                // A `--delay` is over, or `hybrid`'s pool did not answer in time (504).
                Kind::Delay | Kind::Offload => {
                    if conn.session.end_hold(HoldEnd::Deadline, &mut self.ex, &self.server, &mut self.buffers) {
                        self.drive(slot);
                    }
                }
                // The pump answers 504 once the pipes are no longer watched, or 408 for a
                // request body still arriving.
                Kind::Script => {
                    let (io, conn) = conn.parts(slot);
                    if !self.backend.unwatch_script(io, conn) {
                        self.drive(slot);
                    }
                }
                Kind::Idle | Kind::Send => self.close(slot),
            }
        }
        due.clear();
        self.due = due;
    }

    /// Shutdown was asked: stop accepting, close idle connections (an HTTP/2 one after
    /// its GOAWAY, `Session::farewell`); the rest finish.
    pub(crate) fn begin_drain(&mut self) {
        if self.draining {
            return;
        }
        self.shutdown.note();
        self.watch_listeners(false);
        self.draining = true;
        self.listeners.clear();
        for slot in self.conns.idle() {
            let server = &*self.server;
            let farewell =
                self.conns.get_mut(slot).is_some_and(|c| c.session.farewell(&mut self.ex, server, &mut self.buffers));
            if farewell {
                self.drive(slot); // sends the GOAWAY, then closes
            } else {
                self.close(slot);
            }
        }
    }

    /// Arms a deadline at its own time (a delay, a script's), parking the connection.
    fn park(&mut self, slot: usize, kind: At, at: Instant) {
        let stamp = self.deadlines.arm_at(kind, at, slot);
        if let Some(conn) = self.conns.get_mut(slot) {
            (conn.stamp, conn.deadline, conn.parked) = (stamp, kind.into(), true);
        }
    }
}
