//! `uring`: the loop skeleton of `evloop/` driven by io_uring completions, one ring per
//! worker thread, each with its own SO_REUSEPORT listener.
//!
//! Model: a ring poll on the listener, then accept4(2) while the `--max-conns` count the
//! loops share has a place for it (not a multishot accept: the kernel would accept past
//! the bound, and those clients could only be reset); at the bound no poll is armed and
//! clients wait in the listen queue until a place frees up on any loop (its eventfd,
//! polled through the ring). One receive per connection into buffers lent through a
//! buffer ring (an idle connection holds no buffer of its own), and the framed out bytes
//! sent as a ring operation (on a quiet turn, a keep-alive response's last bytes go ahead
//! of the next receive, linked, and post nothing when they succeed, so the loop sleeps
//! until the next request); file bodies never pass through user space (`conn.rs`). CGI
//! script pipes are watched with ring polls. Every loop iteration is one io_uring_enter
//! that both submits and waits, with the next deadline as its timeout. Trade-off: fewer
//! system calls per request than `event` (no epoll_wait + recv pair), at the price of
//! buffer ownership rules (the ring owns what the kernel may touch; see spidey_sys::uring)
//! and a kernel feature that sandboxes often disable (then this mode refuses to start and
//! names `event`).
//!
//! This file is the backend the core calls: the ring, reaping completions into events
//! for the core, the listener and vacancy polls. Dropping the ring at the end cancels and
//! reaps what is left.

mod conn;
mod socket;

use super::evloop::conns::{ConnId, Tag};
use super::evloop::offload::{self, Desk};
use super::evloop::{self, Backend, ConnRef, Loop, Received, Shared};
use super::limit::LoopLimit;
use super::loops::LoopContext;
use super::send::Sent;
use super::session::{Buffers, Held, Session};
use super::ModeContext;
use conn::{Event, Io};
use spidey_config::ConfigError;
use spidey_sys::uring::{Completion, Outcome, Ring};
use std::net::TcpListener;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

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

/// Starts the loops; with `--basic-auth`, first the pool that hashes passwords off them
/// (`offload::for_passwords`), finished once every loop has returned.
pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    offload::run_loops_with_password_pool(ctx, "uring", ring_loop)
}

/// One ring loop; `offload`: its desk at the password pool, whose doorbell the ring polls.
pub(crate) fn ring_loop(lc: LoopContext, offload: Option<Desk>) -> anyhow::Result<()> {
    let mut ring = Ring::new(ENTRIES, RECV_BUFFERS, RECV_SIZE)?;
    ring.poll(lc.shutdown.fd(), pollin(), Tag::Shutdown.encode())?;
    ring.poll(lc.limit.vacancy(lc.index), pollin(), Tag::Vacancy.encode())?;
    // The ring's own copy of the doorbell, so a one-shot poll can be made again from the
    // backend alone after each ring.
    let doorbell = offload.as_ref().map(|desk| rustix::io::fcntl_dupfd_cloexec(desk.doorbell(), 0)).transpose()?;
    if let Some(fd) = &doorbell {
        ring.poll(fd.as_fd(), pollin(), Tag::Doorbell.encode())?;
    }
    let backend =
        Uring { ring, events: Vec::new(), limit: Arc::clone(&lc.limit), index: lc.index, draining: false, doorbell };
    evloop::run(lc, backend, offload)
}

fn pollin() -> u32 {
    rustix::event::PollFlags::IN.bits().into()
}

/// The io_uring backend.
struct Uring {
    ring: Ring,
    /// Completions gathered from the ring, handled after it is released (reused).
    events: Vec<(u64, Event)>,
    /// The shared count, for this loop's vacancy eventfd (number `index`).
    limit: Arc<LoopLimit>,
    index: usize,
    /// Shutdown began: no send is made ahead of a receive any more, so a response still
    /// going out keeps its connection busy (and open) until it is out, as in `event`.
    draining: bool,
    /// The password pool's doorbell for this loop (`--basic-auth`), polled one shot at a
    /// time.
    doorbell: Option<OwnedFd>,
}

impl Backend for Uring {
    type Io = Io;
    const ONE_SHOT_LISTENER: bool = true;

    fn wait(&mut self, timeout: Option<Duration>) -> anyhow::Result<()> {
        Ok(self.ring.submit_and_wait(timeout.map(|t| t.max(Duration::from_micros(1))))?)
    }

    /// Handles every completion ready now. Received bytes are copied into their session
    /// while the ring still shows them, then the buffer goes back to the kernel.
    fn dispatch(lp: &mut Loop<Self>) -> anyhow::Result<()> {
        let mut events = std::mem::take(&mut lp.backend.events);
        let (conns, buffers) = (&mut lp.conns, &mut lp.buffers);
        lp.backend.ring.complete(|c: Completion<'_>| {
            let event = match c.outcome {
                Outcome::Sent(r, buf) => Event::Sent(r, buf),
                Outcome::Polled(_) => Event::Polled,
                Outcome::Received(Ok(bytes)) => {
                    // Bytes that do not fit (never, see `Intake::space`) close the
                    // connection, reported as the end of the stream: never a silent gap.
                    let fitted = match Tag::decode(c.user_data) {
                        Some(Tag::Conn { slot, generation, .. }) => conns
                            .tagged(slot, generation)
                            .is_some_and(|conn| conn.session.push_bytes(bytes, &conn.io, buffers)),
                        _ => false,
                    };
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
        for (tag, event) in events.drain(..) {
            match Tag::decode(tag) {
                Some(Tag::Listener { index }) => lp.listener_ready(index),
                Some(Tag::Vacancy) => {
                    lp.vacancy();
                    if !lp.draining {
                        let b = &mut lp.backend;
                        let _ = b.ring.poll(b.limit.vacancy(b.index), pollin(), Tag::Vacancy.encode());
                    }
                }
                Some(Tag::Doorbell) => {
                    lp.answers_rung();
                    let b = &mut lp.backend;
                    if let Some(fd) = &b.doorbell {
                        let _ = b.ring.poll(fd.as_fd(), pollin(), Tag::Doorbell.encode());
                    }
                }
                Some(Tag::Shutdown) => {
                    lp.backend.draining = true;
                    lp.begin_drain();
                }
                Some(Tag::Conn { slot, generation, op }) => {
                    let Some(conn) = lp.conns.tagged(slot, generation) else { continue };
                    let id = conn.id(slot);
                    if conn.io.complete(op, event, &mut lp.backend.ring, id) {
                        lp.drive(slot);
                    } else {
                        lp.close(slot);
                    }
                }
                None => {}
            }
        }
        lp.backend.events = events;
        Ok(())
    }

    fn watch_listener(&mut self, listener: &TcpListener, index: usize, on: bool) -> bool {
        let tag = Tag::Listener { index }.encode();
        if on {
            self.ring.poll(listener.as_fd(), pollin(), tag).is_ok()
        } else {
            let _ = self.ring.cancel(tag);
            true
        }
    }

    fn open(&mut self, socket: OwnedFd, session: &mut Session, buffers: &mut Buffers) -> Io {
        Io::open(socket, session, buffers)
    }

    fn send_pending(&mut self, io: &mut Io, conn: ConnRef<'_>, shared: Shared<'_>) -> Sent {
        let ahead = !self.draining && self.ring.reaped() < conn::BUSY_TURN;
        io.send_pending(&mut self.ring, conn, shared, ahead)
    }

    fn receive(&mut self, io: &mut Io, conn: ConnRef<'_>, buffers: &mut Buffers) -> Received {
        io.receive(&mut self.ring, conn, buffers)
    }

    fn watch_script(&mut self, io: &mut Io, conn: ConnRef<'_>) -> bool {
        io.watch_script(&mut self.ring, conn)
    }

    /// Stops watching the pipes; once the polls resolve, the drive pumps (504). No polls:
    /// the deadline of a request body still arriving; the drive pumps at once (408).
    fn unwatch_script(&mut self, io: &mut Io, conn: ConnRef<'_>) -> bool {
        io.unwatch_script(&mut self.ring, conn.id)
    }

    fn busy(io: &Io) -> bool {
        io.busy()
    }

    fn unread_input(io: &Io) -> bool {
        io.unread_input()
    }

    fn settle(&mut self, io: &mut Io, conn: ConnRef<'_>) -> bool {
        if conn.session.held() != Held::No {
            io.forget_input(); // a `--delay`: no receive is armed meanwhile
        }
        true
    }

    fn close(&mut self, io: Io, id: ConnId) {
        io.close(&mut self.ring, id);
    }
}
