//! `uring`: the `event` state machine driven by io_uring completions, one ring per worker
//! thread, each with its own SO_REUSEPORT listener.
//!
//! Model: a multishot accept, one receive per connection into ring-provided buffers (an
//! idle connection holds no buffer of its own), the framed head sent as a ring operation
//! and linked (IOSQE_IO_LINK) to splices that move file bodies file → pipe → socket in the
//! kernel, without a copy through user space: a keep-alive response is one submission.
//! Every loop iteration is one io_uring_enter that both submits and waits, with the next
//! deadline as its timeout ([`Deadlines`], O(1) per event). Trade-off: fewer system
//! calls per request than `event`, at the price of buffer ownership rules (the ring owns
//! what the kernel may touch; see spidey_sys::uring) and a kernel feature that sandboxes
//! often disable (then this mode refuses to start and names `event`).
//!
//! Shutdown: each ring polls the shutdown pipe. On it the loop cancels its accept, closes
//! idle connections, lets in-flight responses finish (answering `Connection: close`)
//! until `Shutdown::deadline`, then returns; dropping the ring cancels and reaps what is
//! left; `run` joins every loop thread.

use super::accept::{is_exhaustion, EXHAUSTED_BACKOFF};
use super::loops::{self, LoopContext};
use super::session::{Pool, Sent, Session};
use super::timer::{Deadlines, Kind};
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
/// Per-connection operations, in the low byte of the user data.
const RECV: u64 = 1;
const SEND: u64 = 2;
const SPLICE_IN: u64 = 3;
const SPLICE_OUT: u64 = 4;
const POLL_OUT: u64 = 5;

/// Ring size, and receive buffers lent to the kernel per loop.
const ENTRIES: u32 = 4096;
const RECV_BUFFERS: u16 = 512;
const RECV_SIZE: usize = 4096;
/// The pipe size asked for file bodies: the most one splice pair moves.
const PIPE_SIZE: usize = 256 * 1024;
/// File bodies up to this size go out with sendfile(2) from the loop thread rather than
/// splices on io_uring's worker threads.
const SMALL_FILE: u64 = 64 * 1024;
/// Idle pipes kept per loop for reuse.
const PIPES_KEPT: usize = 256;

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    if let Err(e) = Ring::new(8, 1, 64) {
        let msg = format!("io_uring is not available here ({e}); use --mode event instead");
        return Err(ConfigError(msg).into());
    }
    loops::run(ctx, "uring", ring_loop)
}

/// One connection. `generation` tells its operations from those of an earlier
/// connection in the same slot; `*_armed` say which operations are in flight.
struct Conn {
    stream: TcpStream,
    session: Session,
    generation: u64,
    stamp: u64,
    /// The kind of the deadline `stamp` belongs to.
    deadline: Kind,
    recv_armed: bool,
    send_armed: bool,
    splice_in_armed: bool,
    splice_out_armed: bool,
    /// Waiting for room in the socket after a splice into it found none (EAGAIN).
    poll_armed: bool,
    /// The pipe a file body goes through, while one is being sent, and the bytes in it.
    pipe: Option<Pipe>,
    in_pipe: usize,
}

/// A pipe for splicing file bodies, reused across responses once empty.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    size: usize,
}

impl Pipe {
    fn new() -> std::io::Result<Pipe> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let size = rustix::pipe::fcntl_setpipe_size(&write, PIPE_SIZE)
            .or_else(|_| rustix::pipe::fcntl_getpipe_size(&write))?;
        Ok(Pipe { read, write, size })
    }
}

impl Conn {
    /// Whether an operation that changes the response's progress is in flight.
    fn busy(&self) -> bool {
        self.send_armed || self.splice_in_armed || self.splice_out_armed || self.poll_armed
    }

    fn ud(&self, slot: usize, op: u64) -> u64 {
        user_data(slot, self.generation, op)
    }

    /// Submits the next part of the response. Returns false when nothing is left to send.
    ///
    /// The head (and any in-memory body) goes out as a ring send. A large file body is
    /// linked to it as file → pipe → socket splices, which io_uring runs on its worker
    /// threads; a small one (most requests) is not worth that hand-off and goes out with
    /// one sendfile(2) once the head's send has completed, waiting for POLLOUT through the
    /// ring if the socket is full. Both move file bytes without a copy through user space.
    fn submit_send(&mut self, slot: usize, ring: &mut Ring, pipes: &mut Vec<Pipe>) -> std::io::Result<bool> {
        let head_left = !self.session.out().is_empty();
        let file_left = self.session.file_body().map_or(0, |(_, offset, end)| end - *offset);
        let body_follows = file_left > 0 || self.in_pipe > 0;
        if !body_follows {
            self.session.end_body();
            if !head_left {
                return Ok(false);
            }
        }
        let spliced = body_follows && (self.pipe.is_some() || file_left > SMALL_FILE);
        if spliced && self.pipe.is_none() {
            self.pipe = Some(match pipes.pop() {
                Some(p) => p,
                None => Pipe::new()?,
            });
        }
        if head_left {
            let (buf, from) = self.session.lend_out();
            self.send_armed = true;
            ring.send(self.stream.as_fd(), buf, from, body_follows, spliced, self.ud(slot, SEND))?;
            if !spliced {
                return Ok(true); // a small body follows once this completes
            }
        }
        let Some(pipe) = &self.pipe else {
            return match self.session.send_body(&self.stream) {
                Sent::Done => Ok(false),
                Sent::Blocked => {
                    self.poll_armed = true;
                    let pollout = rustix::event::PollFlags::OUT.bits().into();
                    ring.poll(self.stream.as_fd(), pollout, self.ud(slot, POLL_OUT)).map(|()| true)
                }
                Sent::Failed => Err(std::io::ErrorKind::BrokenPipe.into()),
            };
        };
        if self.in_pipe > 0 {
            let len = u32::try_from(self.in_pipe).unwrap_or(u32::MAX);
            self.splice_out_armed = true;
            let ud = self.ud(slot, SPLICE_OUT);
            ring.splice(pipe.read.as_fd(), None, self.stream.as_fd(), len, file_left > 0, false, ud)?;
            return Ok(true);
        }
        let chunk = file_left.min(pipe.size as u64);
        let len = chunk as u32;
        let (ud_in, ud_out) = (self.ud(slot, SPLICE_IN), self.ud(slot, SPLICE_OUT));
        let Some((file, offset, _)) = self.session.file_body() else { return Ok(true) };
        // Linked: the socket splice starts only once the pipe holds the whole chunk.
        ring.splice(file.as_fd(), Some(*offset), pipe.write.as_fd(), len, false, true, ud_in)?;
        ring.splice(pipe.read.as_fd(), None, self.stream.as_fd(), len, file_left > chunk, false, ud_out)?;
        self.splice_in_armed = true;
        self.splice_out_armed = true;
        Ok(true)
    }

    /// Gives the pipe back to the loop once a body is done (only if it is empty).
    fn release_pipe(&mut self, pipes: &mut Vec<Pipe>) {
        if let Some(pipe) = self.pipe.take() {
            if self.in_pipe == 0 && !self.splice_in_armed && !self.splice_out_armed && pipes.len() < PIPES_KEPT {
                pipes.push(pipe);
            }
        }
        self.in_pipe = 0;
    }
}

struct Loop {
    server: Arc<Server>,
    shutdown: Shutdown,
    ring: Ring,
    listener: Option<TcpListener>,
    accepting: bool,
    backoff_until: Option<Instant>,
    max_conns: usize,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    open: usize,
    next_generation: u64,
    ex: Exchanger,
    pool: Pool,
    pipes: Vec<Pipe>,
    deadlines: Deadlines,
    draining: bool,
    now: Instant,
    /// Completions gathered from the ring, handled after it is released (reused).
    events: Vec<(u64, Event)>,
}

/// A completion, detached from the ring's buffers.
enum Event {
    Accepted(std::io::Result<std::os::fd::OwnedFd>, bool),
    Received(usize, bool),
    Sent(std::io::Result<usize>, Vec<u8>),
    Spliced(std::io::Result<usize>),
    Polled,
}

fn user_data(slot: usize, generation: u64, op: u64) -> u64 {
    (generation << 40) | ((slot as u64) << 8) | op
}

fn ring_loop(lc: LoopContext) -> anyhow::Result<()> {
    let mut ring = Ring::new(ENTRIES, RECV_BUFFERS, RECV_SIZE)?;
    ring.accept_multi(lc.listener.as_fd(), ACCEPT)?;
    ring.poll(lc.shutdown.fd(), libc_pollin(), SHUTDOWN)?;
    let mut lp = Loop {
        pool: Pool::new(&lc.server),
        deadlines: Deadlines::new(&lc.server.timeouts),
        server: lc.server,
        shutdown: lc.shutdown,
        ring,
        listener: Some(lc.listener),
        accepting: true,
        backoff_until: None,
        max_conns: lc.max_conns,
        conns: Vec::new(),
        free: Vec::new(),
        open: 0,
        next_generation: 1,
        ex: Exchanger::new(),
        pipes: Vec::new(),
        draining: false,
        now: Instant::now(),
        events: Vec::new(),
    };
    loop {
        if lp.draining && (lp.open == 0 || lp.shutdown.deadline().is_some_and(|d| lp.now >= d)) {
            break;
        }
        crate::log::flush();
        let timeout = lp.next_wake().map(|t| t.saturating_duration_since(Instant::now()).max(Duration::from_micros(1)));
        lp.ring.submit_and_wait(timeout)?;
        lp.now = Instant::now();
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
                Outcome::Accepted(r) => Event::Accepted(r, c.more),
                Outcome::Sent(r, buf) => Event::Sent(r, buf),
                Outcome::Polled(_) => Event::Polled,
                Outcome::Spliced(r) => Event::Spliced(r),
                Outcome::Received(Ok(bytes)) => {
                    if let Some(conn) = live_conn(conns, c.user_data) {
                        conn.session.push_bytes(bytes, pool);
                    }
                    Event::Received(bytes.len(), false)
                }
                Outcome::Received(Err(e)) => {
                    Event::Received(0, e.raw_os_error() == Some(rustix::io::Errno::NOBUFS.raw_os_error()))
                }
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
            (ACCEPT, Event::Accepted(r, more)) => self.accepted(r, more),
            (SHUTDOWN, _) => self.begin_drain(),
            (ud, event) => {
                let slot = ((ud >> 8) & 0xffff_ffff) as usize;
                let Some(conn) = live_conn(&mut self.conns, ud) else { return };
                let cancelled =
                    |e: &std::io::Error| e.raw_os_error() == Some(rustix::io::Errno::CANCELED.raw_os_error());
                let op = ud & 0xff;
                let ok = match event {
                    Event::Received(0, starved) => {
                        conn.recv_armed = false;
                        starved // else end of stream or error
                    }
                    Event::Received(_, _) => {
                        conn.recv_armed = false;
                        true
                    }
                    Event::Sent(r, buf) => {
                        conn.send_armed = false;
                        conn.session.return_out(buf, *r.as_ref().unwrap_or(&0));
                        r.is_ok()
                    }
                    Event::Spliced(r) if op == SPLICE_IN => {
                        conn.splice_in_armed = false;
                        match r {
                            Ok(0) => false, // the file shrank under us
                            Ok(n) => {
                                conn.in_pipe += n;
                                if let Some((_, offset, _)) = conn.session.file_body() {
                                    *offset += n as u64;
                                }
                                true
                            }
                            Err(e) => cancelled(&e),
                        }
                    }
                    Event::Spliced(r) => {
                        conn.splice_out_armed = false;
                        match r {
                            Ok(0) => false,
                            Ok(n) => {
                                conn.in_pipe = conn.in_pipe.saturating_sub(n);
                                true
                            }
                            // The socket is non-blocking and splice does not wait for room
                            // in it: wait for POLLOUT through the ring, then splice again.
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                                conn.poll_armed = true;
                                let pollout = rustix::event::PollFlags::OUT.bits().into();
                                self.ring.poll(conn.stream.as_fd(), pollout, conn.ud(slot, POLL_OUT)).is_ok()
                            }
                            Err(e) => cancelled(&e),
                        }
                    }
                    Event::Polled => {
                        conn.poll_armed = false;
                        true
                    }
                    Event::Accepted(..) => true,
                };
                if !ok {
                    return self.close(slot);
                }
                self.drive(slot);
            }
        }
    }

    fn accepted(&mut self, r: std::io::Result<std::os::fd::OwnedFd>, more: bool) {
        if !more {
            self.accepting = false; // the multishot ended (an error, or our cancel)
        }
        match r {
            Ok(fd) if self.draining || self.open >= self.max_conns => drop(fd),
            Ok(fd) => self.add(TcpStream::from(fd)),
            Err(e) if is_exhaustion(&e) => self.backoff_until = Some(self.now + EXHAUSTED_BACKOFF),
            Err(_) => {}
        }
        if self.open >= self.max_conns && self.accepting {
            let _ = self.ring.cancel(ACCEPT); // re-armed when a connection closes
        }
    }

    fn resume_accepting(&mut self) {
        if self.accepting || self.draining || self.open >= self.max_conns {
            return;
        }
        if self.backoff_until.is_some_and(|t| self.now < t) {
            return;
        }
        self.backoff_until = None;
        if let Some(listener) = &self.listener {
            self.accepting = self.ring.accept_multi(listener.as_fd(), ACCEPT).is_ok();
        }
    }

    fn add(&mut self, stream: TcpStream) {
        let Ok(peer) = stream.peer_addr() else { return };
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        self.next_generation = (self.next_generation + 1) & 0xff_ffff;
        let stamp = self.deadlines.arm(Kind::Idle, self.now, slot);
        let conn = Conn {
            stream,
            session: Session::new(peer),
            generation: self.next_generation,
            stamp,
            deadline: Kind::Idle,
            recv_armed: false,
            send_armed: false,
            splice_in_armed: false,
            splice_out_armed: false,
            poll_armed: false,
            pipe: None,
            in_pipe: 0,
        };
        self.conns[slot] = Some(conn);
        self.open += 1;
        self.drive(slot);
    }

    /// Advances connection `slot` until it waits on an operation in flight.
    fn drive(&mut self, slot: usize) {
        let Some(Some(conn)) = self.conns.get_mut(slot) else { return };
        let (server, pool, ex, ring, pipes) =
            (&*self.server, &mut self.pool, &mut self.ex, &mut self.ring, &mut self.pipes);
        let closing = self.draining;
        let was_sending = conn.session.is_sending();
        let keep = loop {
            if conn.busy() {
                break true;
            }
            if conn.session.is_sending() {
                match conn.submit_send(slot, ring, pipes) {
                    Ok(true) => break true,
                    Ok(false) => {
                        conn.release_pipe(pipes);
                        if conn.session.finish_response(pool) {
                            continue;
                        }
                        break false;
                    }
                    Err(_) => break false,
                }
            }
            if conn.session.answer(ex, server, pool, closing) {
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
        let s = &conn.session;
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
                (conn.splice_in_armed, SPLICE_IN),
                (conn.splice_out_armed, SPLICE_OUT),
                (conn.poll_armed, POLL_OUT),
            ];
            for (_, op) in armed.into_iter().filter(|(armed, _)| *armed) {
                let _ = self.ring.cancel(conn.ud(slot, op));
            }
            conn.release_pipe(&mut self.pipes);
            conn.session.release(&mut self.pool);
            let _ = self.ring.close(OwnedFd::from(conn.stream)); // on error closed at once
            self.free.push(slot);
            self.open -= 1;
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
            due.push((kind, slot));
        });
        for (kind, slot) in due {
            if kind == Kind::Head {
                self.drive(slot);
            } else {
                self.close(slot);
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
        self.listener = None;
        let idle: Vec<usize> =
            (0..self.conns.len()).filter(|&i| self.conns[i].as_ref().is_some_and(|c| c.session.is_idle())).collect();
        for slot in idle {
            self.close(slot);
        }
    }
}

/// The connection a per-connection user data names, if it is still the same one.
fn live_conn(conns: &mut [Option<Conn>], ud: u64) -> Option<&mut Conn> {
    let slot = ((ud >> 8) & 0xffff_ffff) as usize;
    conns.get_mut(slot)?.as_mut().filter(|c| c.generation == ud >> 40)
}
