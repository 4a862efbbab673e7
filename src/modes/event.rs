//! `event`: non-blocking sockets in edge-triggered epoll loops (mio), one loop per worker
//! thread, each with its own SO_REUSEPORT listener.
//!
//! Model: every connection is a [`Session`] state machine (read head → answer → write head
//! → sendfile body → keep-alive or close) driven by readiness: a loop never blocks except
//! in `epoll_wait`, so one thread holds thousands of connections, idle ones costing no
//! buffer. A CGI body's script pipes join the same epoll set (token `SCRIPT | slot`), and
//! a `--delay` parks the connection on a timer, so nothing ever blocks the loop.
//! Timeouts are per-loop FIFO deadline lists ([`Deadlines`]), O(1) per event.
//! `--max-conns` is one count shared by the loops ([`LoopLimit`]): each accept takes a
//! place first, and a loop with none left takes its listener out of the epoll set until a
//! place frees up (its eventfd, token `WAKE`), so clients beyond the bound wait in the
//! listen queue.
//! Trade-off: the fastest mode and the cheapest per connection, but all work on a loop is
//! serialized, so anything slow inside a step (a cold disk read in `open`) stalls every
//! connection of that loop; and the code is a state machine instead of a straight line.
//!
//! Shutdown: each loop registers the shutdown pipe (readable forever once asked). On it the
//! loop drops its listener, closes idle connections, lets in-flight requests and responses
//! finish (answering `Connection: close`) until `Shutdown::deadline`, then returns;
//! `run` joins every loop thread.

use super::accept::EXHAUSTED_BACKOFF;
use super::limit::{Accepted, LoopLimit};
use super::loops::{self, LoopContext};
use super::session::{Pool, Sent, Session};
use super::timer::{Deadlines, Kind};
use super::ModeContext;
use crate::exchange::Exchanger;
use crate::server::Server;
use mio::net::{TcpListener, TcpStream};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(0);
const SHUTDOWN: Token = Token(1);
/// This loop's eventfd in the shared `--max-conns` count: a place freed up.
const WAKE: Token = Token(2);
/// Connection slot `i` is token `FIRST_CONN + i`.
const FIRST_CONN: usize = 3;
/// The pipes of a CGI script run for connection slot `i` are token `SCRIPT | i`.
const SCRIPT: usize = 1 << 40;

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    loops::run(ctx, "event", event_loop)
}

/// One connection: its socket, its state machine, and its current deadline's stamp.
struct Conn {
    stream: TcpStream,
    session: Session,
    stamp: u64,
    /// The last read was short: the socket is drained until the next readable edge.
    drained: bool,
    /// Whether writable edges are asked for: only once a send has hit EAGAIN, so the
    /// common connection (whose responses fit the socket buffer) never wakes for them.
    writable_interest: bool,
    /// Parked on a deadline of its own (a `--delay`, a CGI script's pipes): the usual
    /// head/idle/send deadlines are not armed meanwhile.
    parked: bool,
    /// Whether the socket is in the epoll set yet: only once its first drive has to wait,
    /// so a connection answered and closed straight after accept never costs epoll_ctl.
    registered: bool,
}

impl Conn {
    /// Asks epoll for this socket's readable edges, and writable ones once a send has
    /// blocked. Registering reports a socket that is ready already, so no edge is lost.
    fn watch(&mut self, poll: &Poll, slot: usize) -> io::Result<()> {
        let token = Token(FIRST_CONN + slot);
        let interest =
            if self.writable_interest { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
        if self.registered {
            poll.registry().reregister(&mut self.stream, token, interest)
        } else {
            poll.registry().register(&mut self.stream, token, interest)?;
            self.registered = true;
            Ok(())
        }
    }
}

struct Loop {
    server: std::sync::Arc<Server>,
    shutdown: crate::net::Shutdown,
    poll: Poll,
    listener: Option<TcpListener>,
    /// Whether the listener is registered (it is not while full or backing off).
    listening: bool,
    backoff_until: Option<Instant>,
    /// The `--max-conns` count shared with the other loops; this loop is number `index`.
    limit: std::sync::Arc<LoopLimit>,
    index: usize,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    open: usize,
    ex: Exchanger,
    pool: Pool,
    deadlines: Deadlines,
    draining: bool,
    now: Instant,
    /// Scratch list of due deadlines, kept to avoid an allocation per wake-up.
    due: Vec<(Kind, usize, u64)>,
}

fn event_loop(lc: LoopContext) -> anyhow::Result<()> {
    let poll = Poll::new()?;
    let mut listener = TcpListener::from_std(lc.listener);
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let shutdown_fd = lc.shutdown.fd().as_raw_fd();
    poll.registry().register(&mut SourceFd(&shutdown_fd), SHUTDOWN, Interest::READABLE)?;
    let wake_fd = lc.limit.waker(lc.index).as_raw_fd();
    poll.registry().register(&mut SourceFd(&wake_fd), WAKE, Interest::READABLE)?;
    let mut lp = Loop {
        pool: Pool::new(&lc.server),
        deadlines: Deadlines::new(&lc.server.timeouts),
        server: lc.server,
        shutdown: lc.shutdown,
        poll,
        listener: Some(listener),
        listening: true,
        backoff_until: None,
        limit: lc.limit,
        index: lc.index,
        conns: Vec::new(),
        free: Vec::new(),
        open: 0,
        ex: Exchanger::new(),
        draining: false,
        now: Instant::now(),
        due: Vec::new(),
    };
    let mut events = Events::with_capacity(1024);
    loop {
        if lp.draining && (lp.open == 0 || lp.shutdown.deadline().is_some_and(|d| lp.now >= d)) {
            break;
        }
        crate::log::flush();
        let timeout = lp.next_wake().map(|t| t.saturating_duration_since(Instant::now()));
        match lp.poll.poll(&mut events, timeout.map(round_up_ms)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
        lp.now = Instant::now();
        let _busy = crate::metrics::hold(crate::metrics::Counter::BusyWorkers);
        for event in events.iter() {
            match event.token() {
                LISTENER => lp.accept_all(),
                SHUTDOWN => lp.begin_drain(),
                WAKE => lp.limit.drain(lp.index), // `resume_listening` below takes it up
                Token(t) if t & SCRIPT != 0 => lp.drive(t & !SCRIPT, false),
                Token(t) => lp.drive(t - FIRST_CONN, event.is_readable() || event.is_read_closed() || event.is_error()),
            }
        }
        lp.expire();
        lp.resume_listening();
    }
    crate::log::flush();
    Ok(())
}

/// epoll's timeout is in milliseconds; round up so a deadline is never polled for early
/// in a busy loop of zero timeouts.
fn round_up_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_micros().div_ceil(1000) as u64)
}

impl Loop {
    fn next_wake(&self) -> Option<Instant> {
        let wakes = [self.deadlines.next(), self.backoff_until, self.shutdown.deadline().filter(|_| self.draining)];
        wakes.into_iter().flatten().min()
    }

    /// Accepts while connections are queued and the shared count has places: each accept
    /// takes its place first, so the loops together never hold more than `--max-conns`.
    fn accept_all(&mut self) {
        while self.listening && !self.draining {
            let Some(listener) = &self.listener else { return };
            match self.limit.accept(|| listener.accept()) {
                Accepted::Conn((stream, peer)) => self.add(stream, peer), // the place is the connection's
                Accepted::Empty => return,
                // Full: new connections wait in the listen queue. Resumed when a place
                // frees up, on this loop or another (its wake-up, `LoopLimit::give_back`).
                Accepted::Full => return self.set_listening(false),
                Accepted::Exhausted => {
                    // Out of descriptors: the connection stays queued, so stop listening
                    // for a while instead of spinning (see modes/accept.rs).
                    self.set_listening(false);
                    self.backoff_until = Some(self.now + EXHAUSTED_BACKOFF);
                    return;
                }
            }
        }
    }

    fn set_listening(&mut self, on: bool) {
        let Some(listener) = &mut self.listener else { return };
        if on == self.listening {
            return;
        }
        let registry = self.poll.registry();
        let done =
            if on { registry.register(listener, LISTENER, Interest::READABLE) } else { registry.deregister(listener) };
        if done.is_ok() {
            self.listening = on;
        }
    }

    fn resume_listening(&mut self) {
        if self.backoff_until.is_some_and(|t| self.now < t) || self.draining || self.limit.is_full() {
            return;
        }
        self.backoff_until = None;
        if !self.listening {
            self.set_listening(true);
            self.accept_all(); // connections that queued meanwhile: the edge may be gone
        }
    }

    fn add(&mut self, stream: TcpStream, peer: std::net::SocketAddr) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        let stamp = self.deadlines.arm(Kind::Idle, self.now, slot);
        let session = Session::new(peer);
        let conn =
            Conn { stream, session, stamp, drained: false, writable_interest: false, parked: false, registered: false };
        self.conns[slot] = Some(conn);
        self.open += 1;
        // The request has often arrived by the time the connection is accepted: read it
        // now rather than after another trip through epoll_wait. The socket joins the
        // epoll set only if this drive leaves it waiting.
        self.drive(slot, false);
    }

    /// Advances connection `slot` as far as it can go without blocking: send what is
    /// pending, answer buffered requests (pipelined ones too), read until drained.
    fn drive(&mut self, slot: usize, readable: bool) {
        let Some(Some(conn)) = self.conns.get_mut(slot) else { return };
        if readable {
            conn.drained = false;
        }
        let (server, pool, ex) = (&*self.server, &mut self.pool, &mut self.ex);
        let closing = self.draining;
        let was_sending = conn.session.is_sending();
        let had_partial = conn.session.has_partial_request();
        conn.parked = false;
        let keep = loop {
            if conn.session.held {
                conn.parked = true;
                break true;
            }
            if conn.session.is_sending() {
                match conn.session.send(&conn.stream, ex, server, pool) {
                    Sent::Done if conn.session.finish_response(pool) => continue,
                    // The socket has input this loop has not read if its edge came since.
                    Sent::Done if conn.session.linger(&conn.stream, !conn.drained, pool) => {}
                    Sent::Done | Sent::Failed => break false,
                    Sent::NeedRead => {} // read the request body below
                    Sent::WaitScript => {
                        conn.parked = true;
                        break watch_script(&self.poll, &mut self.deadlines, conn, slot);
                    }
                    Sent::Blocked if conn.writable_interest => break true,
                    Sent::Blocked => {
                        // Adding the interest reports the socket at once if it is
                        // writable again already, so no edge is lost.
                        conn.writable_interest = true;
                        break conn.watch(&self.poll, slot).is_ok();
                    }
                }
            }
            if conn.session.answer(ex, server, pool, closing) {
                if let Some(delay) = conn.session.take_delay() {
                    conn.session.held = true;
                    conn.stamp = self.deadlines.arm_at(Kind::Delay, self.now + delay, slot);
                }
                continue;
            }
            if conn.drained || (closing && conn.session.is_idle()) {
                break !(closing && conn.session.is_idle());
            }
            let space = conn.session.recv_space(pool);
            let asked = space.len();
            match (&conn.stream).read(space) {
                Ok(0) => break false,
                Ok(n) => {
                    conn.session.received(n, pool);
                    conn.drained = n < asked;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    conn.session.received(0, pool); // gives an unused buffer back
                    conn.drained = true;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
        if !keep || (!conn.registered && conn.watch(&self.poll, slot).is_err()) {
            self.close(slot);
            return;
        }
        self.rearm(slot, was_sending, had_partial);
    }

    /// Arms the deadline matching the connection's new state, only when the state changed
    /// (or a blocked send made progress), so a busy connection appends O(1) per event.
    fn rearm(&mut self, slot: usize, was_sending: bool, had_partial: bool) {
        let Some(Some(conn)) = self.conns.get_mut(slot) else { return };
        if conn.parked {
            return;
        }
        let s = &conn.session;
        if let Some(at) = s.body_deadline() {
            // A CGI request body: one deadline for all of it; its expiry pumps (408).
            conn.stamp = self.deadlines.arm_at(Kind::Script, at, slot);
            return;
        }
        let kind = if s.is_sending() {
            Kind::Send
        } else if s.has_partial_request() {
            if had_partial && !was_sending {
                return; // the head deadline runs from the first byte: keep it
            }
            Kind::Head
        } else if s.is_lingering() && !was_sending {
            return; // the linger is bounded from the end of the response: keep it
        } else {
            Kind::Idle
        };
        conn.stamp = self.deadlines.arm(kind, self.now, slot);
    }

    fn close(&mut self, slot: usize) {
        // Closing the socket removes it from epoll (if it was ever added): no deregister.
        if let Some(mut conn) = self.conns[slot].take() {
            conn.session.release(&mut self.pool);
            self.free.push(slot);
            self.open -= 1;
            self.limit.give_back();
        }
    }

    fn expire(&mut self) {
        let mut due = std::mem::take(&mut self.due);
        self.deadlines.expire(self.now, |kind, slot, stamp| due.push((kind, slot, stamp)));
        for &(kind, slot, stamp) in &due {
            let Some(Some(conn)) = self.conns.get_mut(slot) else { continue };
            if conn.stamp != stamp {
                continue; // re-armed or disarmed since
            }
            match kind {
                Kind::Head => {
                    conn.session.answer_timeout(&mut self.ex, &self.server, &mut self.pool);
                    conn.drained = true;
                    self.drive(slot, false);
                }
                Kind::Delay => {
                    conn.session.held = false;
                    self.drive(slot, false);
                }
                Kind::Script => self.drive(slot, false), // the pump answers 504, or 408 for a body
                Kind::Idle | Kind::Send => self.close(slot),
            }
        }
        due.clear();
        self.due = due;
    }

    fn begin_drain(&mut self) {
        if self.draining {
            return;
        }
        self.shutdown.note();
        self.draining = true;
        self.set_listening(false);
        self.listener = None;
        let idle: Vec<usize> =
            (0..self.conns.len()).filter(|&i| self.conns[i].as_ref().is_some_and(|c| c.session.is_idle())).collect();
        for slot in idle {
            self.close(slot);
        }
    }
}

/// Registers a running script's pipes with this loop (idempotent: a pipe already
/// registered is left as it is) and arms its deadline. Returns false if it cannot wait.
fn watch_script(poll: &Poll, deadlines: &mut Deadlines, conn: &mut Conn, slot: usize) -> bool {
    let Some((stdout, stdin, deadline)) = conn.session.script_fds() else { return false };
    let token = Token(SCRIPT | slot);
    for (fd, interest) in [(stdout, Interest::READABLE), (stdin, Interest::WRITABLE)] {
        let Some(fd) = fd else { continue };
        let raw = fd.as_raw_fd();
        match poll.registry().register(&mut SourceFd(&raw), token, interest) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(_) => return false,
        }
    }
    conn.stamp = deadlines.arm_at(Kind::Script, deadline, slot);
    true
}
