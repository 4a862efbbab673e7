//! `uring`: the `event` state machine driven by io_uring completions, one ring per worker
//! thread, each with its own SO_REUSEPORT listener.
//!
//! Model: a ring poll on the listener, then accept4(2) while the `--max-conns` count the
//! loops share ([`LoopLimit`]) has a place for it (not a multishot accept: the kernel
//! would accept past the bound, and those clients could only be reset); at the bound no
//! poll is armed and clients wait in the listen queue until a place frees up on any loop
//! (its eventfd, polled through the ring). One receive per connection into ring-provided
//! buffers (an idle connection holds no buffer of its own), and the framed head sent as a
//! ring operation. File bodies never pass through user space: they go out with sendfile(2)
//! once the head's send completes, waiting for POLLOUT through the ring when the socket
//! is full (splices through a pipe were measured slower: io_uring runs them on its worker
//! threads, and that hand-off costs more than the copy-free syscall). CGI script pipes are watched with ring
//! polls, a `--delay` parks the connection on a timer. Every loop iteration is one
//! io_uring_enter that both submits and waits, with the next deadline as its timeout
//! ([`Deadlines`], O(1) per event). Trade-off: fewer system calls per request than
//! `event` (no epoll_wait + recv pair), at the price of buffer ownership rules (the ring
//! owns what the kernel may touch; see spidey_sys::uring) and a kernel feature that
//! sandboxes often disable (then this mode refuses to start and names `event`).
//!
//! Shutdown: each ring polls the shutdown pipe. On it the loop cancels its listener poll, closes
//! idle connections, lets in-flight responses finish (answering `Connection: close`)
//! until `Shutdown::deadline`, then returns; dropping the ring cancels and reaps what is
//! left; `run` joins every loop thread.

use super::accept::EXHAUSTED_BACKOFF;
use super::limit::{Accepted, LoopLimit};
use super::loops::{self, LoopContext};
use super::session::{CgiFlow, Pool, Session};
use super::timer::{Deadlines, Kind};
use super::uring_conn::{live_conn, Conn, Event, POLL_OUT, RECV, SCRIPT_IN, SCRIPT_OUT, SEND};
use super::ModeContext;
use crate::exchange::Exchanger;
use crate::net::Shutdown;
use crate::serve::ConfigError;
use crate::server::Server;
use spidey_sys::uring::{Completion, Outcome, Ring};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

const ACCEPT: u64 = u64::MAX - 1;
const SHUTDOWN: u64 = u64::MAX - 2;
/// This loop's eventfd in the shared `--max-conns` count: a place freed up.
const WAKE: u64 = u64::MAX - 3;
/// Ring size, and receive buffers lent to the kernel per loop.
const ENTRIES: u32 = 4096;
const RECV_BUFFERS: u16 = 512;
/// One ring buffer: what a receive brings at most, which a session always has room for.
const RECV_SIZE: usize = super::session::RECV_ROOM;

/// Whether this kernel lets us make a ring at all (built without io_uring: ENOSYS;
/// `kernel.io_uring_disabled` or a seccomp sandbox: EPERM). `serve` asks before it binds
/// and prints its startup line, so a refusal is the one line on stderr and exit code 2.
pub fn check_available() -> Result<(), ConfigError> {
    Ring::new(8, 1, 64)
        .map(drop)
        .map_err(|e| ConfigError(format!("io_uring is not available here ({e}); use --mode event instead")))
}

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    loops::run(ctx, "uring", ring_loop)
}

struct Loop {
    server: Arc<Server>,
    shutdown: Shutdown,
    ring: Ring,
    listener: Option<TcpListener>,
    /// Whether the listener's ring poll is armed (not while full, backing off or draining).
    accepting: bool,
    backoff_until: Option<Instant>,
    /// The `--max-conns` count shared with the other loops; this loop is number `index`.
    limit: Arc<LoopLimit>,
    index: usize,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    open: usize,
    next_generation: u64,
    ex: Exchanger,
    pool: Pool,
    deadlines: Deadlines,
    draining: bool,
    now: Instant,
    /// Completions gathered from the ring, handled after it is released (reused).
    events: Vec<(u64, Event)>,
}

fn ring_loop(lc: LoopContext) -> anyhow::Result<()> {
    let mut ring = Ring::new(ENTRIES, RECV_BUFFERS, RECV_SIZE)?;
    ring.poll(lc.shutdown.fd(), libc_pollin(), SHUTDOWN)?;
    ring.poll(lc.limit.waker(lc.index), libc_pollin(), WAKE)?;
    let mut lp = Loop {
        pool: Pool::new(&lc.server),
        deadlines: Deadlines::new(&lc.server.timeouts),
        server: lc.server,
        shutdown: lc.shutdown,
        ring,
        listener: Some(lc.listener),
        accepting: false, // `resume_accepting` accepts what is queued, then arms the poll
        backoff_until: None,
        limit: lc.limit,
        index: lc.index,
        conns: Vec::new(),
        free: Vec::new(),
        open: 0,
        next_generation: 1,
        ex: Exchanger::new(),
        draining: false,
        now: Instant::now(),
        events: Vec::new(),
    };
    lp.resume_accepting(); // accepts what is queued already, then arms the listener's poll
    loop {
        if lp.draining && (lp.open == 0 || lp.shutdown.deadline().is_some_and(|d| lp.now >= d)) {
            break;
        }
        crate::log::flush();
        let timeout = lp.next_wake().map(|t| t.saturating_duration_since(Instant::now()).max(Duration::from_micros(1)));
        lp.ring.submit_and_wait(timeout)?;
        lp.now = Instant::now();
        let _busy = crate::metrics::hold(crate::metrics::Counter::BusyWorkers);
        lp.reap()?;
        lp.expire();
        lp.resume_accepting();
    }
    crate::log::flush();
    Ok(())
}

fn libc_pollin() -> u32 {
    rustix::event::PollFlags::IN.bits().into()
}

impl Loop {
    fn next_wake(&self) -> Option<Instant> {
        let wakes = [self.deadlines.next(), self.backoff_until, self.shutdown.deadline().filter(|_| self.draining)];
        wakes.into_iter().flatten().min()
    }

    /// Handles every completion ready now. Received bytes are copied into their
    /// session while the ring still shows them, then the buffer goes back to the kernel.
    fn reap(&mut self) -> anyhow::Result<()> {
        let mut events = std::mem::take(&mut self.events);
        let (conns, pool) = (&mut self.conns, &mut self.pool);
        self.ring.complete(|c: Completion<'_>| {
            let event = match c.outcome {
                Outcome::Sent(r, buf) => Event::Sent(r, buf),
                Outcome::Polled(_) => Event::Polled,
                Outcome::Received(Ok(bytes)) => {
                    // Bytes that do not fit (never, see `Session::recv_space`) close the
                    // connection, reported as the end of the stream: never a silent gap.
                    let fitted = live_conn(conns, c.user_data).is_some_and(|conn| conn.session.push_bytes(bytes, pool));
                    let len = if fitted { bytes.len() } else { 0 };
                    Event::Received { len, starved: false, input_left: c.input_left }
                }
                Outcome::Received(Err(e)) => Event::Received {
                    len: 0,
                    starved: e.raw_os_error() == Some(rustix::io::Errno::NOBUFS.raw_os_error()),
                    input_left: false,
                },
            };
            events.push((c.user_data, event));
        })?;
        for (ud, event) in events.drain(..) {
            self.handle(ud, event);
        }
        self.events = events;
        Ok(())
    }

    fn handle(&mut self, ud: u64, event: Event) {
        match (ud, event) {
            (ACCEPT, _) => {
                self.accepting = false;
                self.accept_all();
            }
            (WAKE, _) => {
                // A place freed up: `resume_accepting` takes it up after this batch.
                self.limit.drain(self.index);
                if !self.draining {
                    let _ = self.ring.poll(self.limit.waker(self.index), libc_pollin(), WAKE);
                }
            }
            (SHUTDOWN, _) => self.begin_drain(),
            (ud, event) => {
                let slot = ((ud >> 8) & 0xffff_ffff) as usize;
                let Some(conn) = live_conn(&mut self.conns, ud) else { return };
                let ok = conn.complete(slot, ud & 0xff, event, &mut self.ring);
                if !ok {
                    return self.close(slot);
                }
                self.drive(slot);
            }
        }
    }

    /// Accepts what is queued while the shared count has places, each accept taking its
    /// place first; once the queue is empty, arms the listener's ring poll. At the bound
    /// nothing is armed: a wake-up (`WAKE`) brings the loop back through `resume_accepting`.
    fn accept_all(&mut self) {
        let flags = rustix::net::SocketFlags::NONBLOCK | rustix::net::SocketFlags::CLOEXEC;
        while !self.accepting && !self.draining {
            let Some(listener) = &self.listener else { return };
            match self.limit.accept(|| Ok(rustix::net::accept_with(listener, flags)?)) {
                Accepted::Conn(fd) => self.add(TcpStream::from(fd)), // the place is the connection's
                Accepted::Empty => {
                    // Not armed (the ring refused): `resume_accepting` tries again next round.
                    self.accepting = self.ring.poll(listener.as_fd(), libc_pollin(), ACCEPT).is_ok();
                    return;
                }
                Accepted::Full => return, // clients wait in the listen queue
                Accepted::Exhausted => {
                    // Out of descriptors: the connection stays queued; retry after a pause.
                    self.backoff_until = Some(self.now + EXHAUSTED_BACKOFF);
                    return;
                }
            }
        }
    }

    fn resume_accepting(&mut self) {
        if self.accepting || self.draining || self.limit.is_full() {
            return;
        }
        if self.backoff_until.is_some_and(|t| self.now < t) {
            return;
        }
        self.backoff_until = None;
        self.accept_all();
    }

    /// Serves an accepted connection, which holds one place of the shared count.
    fn add(&mut self, stream: TcpStream) {
        let Ok(peer) = stream.peer_addr() else { return self.limit.give_back() };
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        self.next_generation = (self.next_generation + 1) & 0xff_ffff;
        let stamp = self.deadlines.arm(Kind::Idle, self.now, slot);
        let mut session = Session::new(peer);
        // The request has often arrived by the time the connection is accepted: read it
        // now (the socket is non-blocking) rather than after a receive's trip through the
        // ring, as `event` does. Nothing there yet: the ring receive is armed as usual.
        let space = session.recv_space(&mut self.pool);
        let room = space.len();
        let n = rustix::io::read(&stream, space).unwrap_or(0);
        session.received(n, &mut self.pool);
        let conn = Conn {
            stream,
            session,
            generation: self.next_generation,
            stamp,
            deadline: Kind::Idle,
            recv_armed: false,
            send_armed: false,
            poll_armed: false,
            script_polls: 0,
            input_left: n == room, // a full read may have left more
            input_known: true,
        };
        self.conns[slot] = Some(conn);
        self.open += 1;
        self.drive(slot);
    }

    /// Advances connection `slot` until it waits on an operation in flight.
    fn drive(&mut self, slot: usize) {
        let Some(Some(conn)) = self.conns.get_mut(slot) else { return };
        let (server, pool, ex, ring) = (&*self.server, &mut self.pool, &mut self.ex, &mut self.ring);
        let closing = self.draining;
        let was_sending = conn.session.is_sending();
        let keep = loop {
            if conn.busy() {
                break true;
            }
            if conn.session.held {
                break true; // a `--delay`: its deadline drives the connection on
            }
            let mut need_read = false;
            if conn.session.is_cgi() && conn.session.out().is_empty() {
                match conn.session.pump_cgi(ex, server, pool) {
                    CgiFlow::Write => {}
                    CgiFlow::Done if conn.session.finish_response(pool) => continue,
                    CgiFlow::Done => break false,
                    CgiFlow::NeedRead => need_read = true,
                    CgiFlow::Wait => {
                        if let Some((_, _, deadline)) = conn.session.script_fds() {
                            conn.stamp = self.deadlines.arm_at(Kind::Script, deadline, slot);
                            conn.deadline = Kind::Script;
                        }
                        break conn.watch_script(slot, ring);
                    }
                }
            }
            if conn.session.is_sending() && !need_read {
                match conn.submit_send(slot, ring) {
                    Ok(true) => break true,
                    Ok(false) => {
                        if conn.session.finish_response(pool) {
                            continue;
                        }
                        // The half-close is a plain system call, not a ring operation: see
                        // spidey_sys::uring on why the ring never names a socket by number
                        // in an operation it may run late.
                        let unread = conn.has_unread_input();
                        if conn.session.linger(&conn.stream, unread, pool) {
                            continue;
                        }
                        break false;
                    }
                    Err(_) => break false,
                }
            }
            if conn.session.answer(ex, server, pool, closing) {
                if let Some(delay) = conn.session.take_delay() {
                    conn.session.held = true;
                    conn.parked();
                    conn.stamp = self.deadlines.arm_at(Kind::Delay, self.now + delay, slot);
                    conn.deadline = Kind::Delay;
                }
                continue;
            }
            if closing && conn.session.is_idle() {
                break false;
            }
            if !conn.recv_armed {
                conn.recv_armed = true;
                break ring.recv(conn.stream.as_fd(), conn.ud(slot, RECV)).is_ok();
            }
            break true;
        };
        if !keep {
            return self.close(slot);
        }
        // Every drive of a sending connection follows progress (a completion), so the send
        // deadline restarts; the head deadline runs from the first byte of a request; the
        // idle one from the end of the last response.
        if conn.session.held || conn.script_polls > 0 {
            return; // parked on a deadline of its own (Delay, Script)
        }
        let s = &conn.session;
        if let Some(at) = s.body_deadline() {
            // A CGI request body: one deadline for all of it; its expiry pumps (408).
            conn.stamp = self.deadlines.arm_at(Kind::Script, at, slot);
            conn.deadline = Kind::Script;
            return;
        }
        let (kind, rearm) = if s.is_sending() {
            (Kind::Send, true)
        } else if s.has_partial_request() {
            (Kind::Head, conn.deadline != Kind::Head)
        } else {
            (Kind::Idle, conn.deadline != Kind::Idle || was_sending)
        };
        if rearm {
            conn.stamp = self.deadlines.arm(kind, self.now, slot);
            conn.deadline = kind;
        }
    }

    /// Closes a connection. Its operations in flight are cancelled; the kernel holds the
    /// socket until they complete, and their completions find a new generation. The
    /// socket is closed through the ring, batched with the next submission.
    fn close(&mut self, slot: usize) {
        if let Some(mut conn) = self.conns[slot].take() {
            let armed = [
                (conn.recv_armed, RECV),
                (conn.send_armed, SEND),
                (conn.poll_armed, POLL_OUT),
                (conn.script_polls > 0, SCRIPT_OUT),
                (conn.script_polls > 0, SCRIPT_IN),
            ];
            for (_, op) in armed.into_iter().filter(|(armed, _)| *armed) {
                let _ = self.ring.cancel(conn.ud(slot, op));
            }
            conn.session.release(&mut self.pool);
            let _ = self.ring.close(OwnedFd::from(conn.stream)); // on error closed at once
            self.free.push(slot);
            self.open -= 1;
            self.limit.give_back();
        }
    }

    fn expire(&mut self) {
        let (conns, ex, server, pool) = (&mut self.conns, &mut self.ex, &*self.server, &mut self.pool);
        let mut due = Vec::new();
        self.deadlines.expire(self.now, |kind, slot, stamp| {
            let Some(Some(conn)) = conns.get_mut(slot) else { return };
            if conn.stamp != stamp {
                return;
            }
            if kind == Kind::Head && !conn.session.is_sending() {
                conn.session.answer_timeout(ex, server, pool);
            }
            if kind == Kind::Delay {
                conn.session.held = false;
            }
            due.push((kind, slot));
        });
        for (kind, slot) in due {
            match kind {
                Kind::Head | Kind::Delay => self.drive(slot),
                // Stop watching the pipes; once the polls resolve, the pump answers 504. No
                // polls: the deadline of a request body still arriving; the pump answers 408.
                Kind::Script => match self.conns.get(slot) {
                    Some(Some(conn)) if conn.script_polls > 0 => {
                        let _ = self.ring.cancel(conn.ud(slot, SCRIPT_OUT));
                        let _ = self.ring.cancel(conn.ud(slot, SCRIPT_IN));
                    }
                    Some(Some(_)) => self.drive(slot),
                    _ => {}
                },
                Kind::Idle | Kind::Send => self.close(slot),
            }
        }
    }

    fn begin_drain(&mut self) {
        if self.draining {
            return;
        }
        self.shutdown.note();
        self.draining = true;
        if self.accepting {
            let _ = self.ring.cancel(ACCEPT);
        }
        let _ = self.ring.cancel(WAKE);
        self.listener = None;
        let idle: Vec<usize> =
            (0..self.conns.len()).filter(|&i| self.conns[i].as_ref().is_some_and(|c| c.session.is_idle())).collect();
        for slot in idle {
            self.close(slot);
        }
    }
}
