//! `event`: non-blocking sockets in edge-triggered epoll loops (mio), one loop per worker
//! thread, each with its own SO_REUSEPORT listener.
//!
//! Model: the loop skeleton of `evloop/` (connections as [`Session`] state machines,
//! deadlines, accepting under `--max-conns`, the drain on shutdown) over readiness: a
//! loop never blocks except in `epoll_wait`, so one thread holds thousands of
//! connections, idle ones costing no buffer. This file is the epoll backend: each socket
//! joins the epoll set only once its first drive has to wait, asks for writable edges only
//! once a send has blocked, and reads until drained; a CGI body's script pipes join the
//! same set, and at the `--max-conns` bound the listener leaves it until a place frees up
//! (the loop's eventfd), so clients beyond the bound wait in the listen queue.
//! Trade-off: the fastest mode and the cheapest per connection, but all work on a loop is
//! serialized, so anything slow inside a step (a cold disk read in `open`) stalls every
//! connection of that loop; and the code is a state machine instead of a straight line.

use super::evloop::conns::{Op, Tag};
use super::evloop::offload::{self, Desk};
use super::evloop::{self, Backend, ConnRef, Loop, Received, Shared};
use super::loops::LoopContext;
use super::send::Sent;
use super::session::{Buffers, Session};
use super::socket::{Direct, Inflow};
use super::ModeContext;
use crate::exchange::Ready;
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

/// Starts the loops; with `--basic-auth`, first the pool that hashes passwords off them
/// ([`offload::for_passwords`]), finished once every loop has returned.
pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    offload::run_loops_with_password_pool(ctx, "event", event_loop)
}

/// One epoll loop; `offload`: its desk at a worker pool (`hybrid`'s, or the password pool),
/// whose doorbell joins the epoll set.
pub(crate) fn event_loop(lc: LoopContext, offload: Option<Desk>) -> anyhow::Result<()> {
    let poll = Poll::new()?;
    let token = |tag: Tag| Token(tag.encode() as usize);
    let watch = |fd: BorrowedFd<'_>, tag: Tag| {
        poll.registry().register(&mut SourceFd(&fd.as_raw_fd()), token(tag), Interest::READABLE)
    };
    watch(lc.shutdown.fd(), Tag::Shutdown)?;
    watch(lc.limit.vacancy(lc.index), Tag::Vacancy)?;
    if let Some(desk) = &offload {
        watch(desk.doorbell(), Tag::Doorbell)?;
    }
    evloop::run(lc, Epoll { poll, events: Events::with_capacity(1024) }, offload)
}

/// The epoll backend.
struct Epoll {
    poll: Poll,
    events: Events,
}

/// One connection's socket and what epoll knows of it.
struct Io {
    stream: TcpStream,
    /// The last read was short: the socket is drained until the next readable edge.
    drained: bool,
    /// An edge reported the client's FIN (EPOLLRDHUP): a short read no longer proves the
    /// socket drained, since the end of the stream is still to be read, and no further
    /// edge would come for it.
    peer_closed: bool,
    /// Whether writable edges are asked for: only once a send has hit EAGAIN, so the
    /// common connection (whose responses fit the socket buffer) never wakes for them.
    writable_interest: bool,
    /// Whether the socket is in the epoll set yet: only once its first drive has to wait,
    /// so a connection answered and closed straight after accept never costs epoll_ctl.
    registered: bool,
}

impl AsFd for Io {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

impl Io {
    /// Asks epoll for this socket's readable edges, and writable ones once a send has
    /// blocked. Registering reports a socket that is ready already, so no edge is lost.
    fn watch(&mut self, poll: &Poll, conn: &ConnRef<'_>) -> io::Result<()> {
        let token = Token(conn.id.tag(Op::Socket) as usize);
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

impl Backend for Epoll {
    type Io = Io;
    const ONE_SHOT_LISTENER: bool = false;

    fn wait(&mut self, timeout: Option<Duration>) -> anyhow::Result<()> {
        match self.poll.poll(&mut self.events, timeout.map(round_up_ms)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                self.events.clear();
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    fn dispatch(lp: &mut Loop<Self>) -> anyhow::Result<()> {
        let events = std::mem::replace(&mut lp.backend.events, Events::with_capacity(0));
        for event in events.iter() {
            match Tag::decode(event.token().0 as u64) {
                Some(Tag::Listener { index }) => lp.listener_ready(index),
                Some(Tag::Shutdown) => lp.begin_drain(),
                Some(Tag::Vacancy) => lp.vacancy(),
                Some(Tag::Doorbell) => lp.answers_rung(),
                Some(Tag::Conn { slot, generation, op }) => {
                    let Some(conn) = lp.conns.tagged(slot, generation) else { continue };
                    if op == Op::Socket && (event.is_readable() || event.is_read_closed() || event.is_error()) {
                        conn.io.drained = false;
                        conn.io.peer_closed |= event.is_read_closed() || event.is_error();
                    }
                    lp.drive(slot);
                }
                None => {}
            }
        }
        lp.backend.events = events;
        Ok(())
    }

    fn watch_listener(&mut self, listener: &std::net::TcpListener, index: usize, on: bool) -> bool {
        let fd = listener.as_raw_fd();
        let registry = self.poll.registry();
        let token = Token(Tag::Listener { index }.encode() as usize);
        let done = if on {
            registry.register(&mut SourceFd(&fd), token, Interest::READABLE)
        } else {
            registry.deregister(&mut SourceFd(&fd))
        };
        done.is_ok()
    }

    fn open(&mut self, socket: OwnedFd, _: &mut Session, _: &mut Buffers) -> Io {
        // The drive reads at once; the socket joins the epoll set only if it has to wait.
        let stream = TcpStream::from_std(std::net::TcpStream::from(socket));
        Io { stream, drained: false, peer_closed: false, writable_interest: false, registered: false }
    }

    fn send_pending(&mut self, io: &mut Io, conn: ConnRef<'_>, shared: Shared<'_>) -> Sent {
        match conn.session.write_to(&mut Direct(&io.stream), shared.ex, shared.server, shared.buffers) {
            Sent::Blocked if !io.writable_interest => {
                // Adding the interest reports the socket at once if it is writable again
                // already, so no edge is lost.
                io.writable_interest = true;
                if io.watch(&self.poll, &conn).is_ok() {
                    Sent::Blocked
                } else {
                    Sent::Failed
                }
            }
            sent => sent,
        }
    }

    /// Reads until drained: a short plain read or EAGAIN. Over TLS, plaintext rustls
    /// still holds is taken even when the socket is drained.
    fn receive(&mut self, io: &mut Io, conn: ConnRef<'_>, buffers: &mut Buffers) -> Received {
        if io.drained && !conn.session.holds_input() {
            return Received::Wait;
        }
        match conn.session.read_from(&mut Direct(&io.stream), buffers) {
            Inflow::Bytes { short } => {
                io.drained = short && !io.peer_closed;
                Received::Bytes
            }
            Inflow::Again => {
                io.drained = true;
                Received::Wait
            }
            Inflow::Closed => Received::Closed,
        }
    }

    /// Registers a running script's pipes with this loop (idempotent: a pipe already
    /// registered is left as it is).
    fn watch_script(&mut self, _: &mut Io, conn: ConnRef<'_>) -> bool {
        let Some(watch) = conn.session.script_watch() else { return false };
        // Every script's pipes under the connection's two tags: any of them drives it.
        for (fd, ready) in watch.pipes() {
            let (interest, op) = match ready {
                Ready::Read => (Interest::READABLE, Op::ScriptOut),
                Ready::Write => (Interest::WRITABLE, Op::ScriptIn),
            };
            let raw = fd.as_raw_fd();
            match self.poll.registry().register(&mut SourceFd(&raw), Token(conn.id.tag(op) as usize), interest) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(_) => return false,
            }
        }
        true
    }

    /// The pipes leave the epoll set when the script's output is dropped: drive at once.
    fn unwatch_script(&mut self, _: &mut Io, _: ConnRef<'_>) -> bool {
        false
    }

    fn busy(_: &Io) -> bool {
        false
    }

    /// The socket has input this loop has not read if its edge came since the last read.
    fn unread_input(io: &Io) -> bool {
        !io.drained
    }

    fn settle(&mut self, io: &mut Io, conn: ConnRef<'_>) -> bool {
        io.registered || io.watch(&self.poll, &conn).is_ok()
    }

    /// Closing the socket removes it from epoll (if it was ever added): no deregister.
    fn close(&mut self, io: Io, _: evloop::conns::ConnId) {
        drop(io);
    }
}

/// epoll's timeout is in milliseconds; round up so a deadline is never polled for early
/// in a busy loop of zero timeouts.
fn round_up_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_micros().div_ceil(1000) as u64)
}
