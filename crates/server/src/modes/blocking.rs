//! The blocking driver shared by `single`, `fork`, `thread`, `pool` and `prefork`: read a
//! head, answer it, repeat while the connection is kept alive.
//!
//! It drives the same [`Session`] as the event loops (one receive buffer and compaction
//! rule, the answers, the send rules of `send.rs`, the lingering close), and waits with
//! poll(2) where a loop would return to its poller. The socket and the shutdown pipe are
//! waited on together, so an idle keep-alive connection notices shutdown at once, and
//! every wait has a deadline, fixed when the wait begins: the idle timeout from the end of
//! the last response, the whole-head timeout from the first byte after it (over TLS, any
//! ciphertext counts, even one that yields no plaintext; the request may finish within it,
//! shutdown or not), the send timeout for each wait for room to
//! write (the socket is non-blocking: SO_SNDTIMEO would not bound sendfile(2)), and the
//! shutdown grace period for the whole response. EPIPE and ECONNRESET are how clients
//! leave, not errors: the connection just ends.
//!
//! `--delay` is a sleep before the answer is written. A CGI answer is driven by the
//! session as in the loops ([`respond`]): when it needs request-body bytes the socket is
//! waited on until the body's deadline (`--body-timeout`, then 408), and while the script
//! runs its pipes are waited on with poll(2) until the script's deadline; a write error
//! drops the output, which kills and reaps the script.

use super::send::Sent;
use super::session::{Answered, Buffers, Held, HoldEnd, Session, RECV_ROOM};
use super::socket::{Direct, Inflow};
use crate::exchange::{Exchanger, Offloading, Ready};
use crate::net::{poll_until, wait_readable, Shutdown, Wake};
use crate::server::Server;
use rustix::event::{PollFd, PollFlags};
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// What a worker keeps from one connection to the next: the exchanger (its `Date` cache)
/// and the receive and send buffers. A long-lived worker (`single`'s loop, a `pool` thread,
/// a `prefork` process) makes one and allocates them once, not per connection; `thread`
/// and `fork` make one per connection, for the thread or child that serves it.
pub(crate) struct Worker {
    exchanger: Exchanger,
    buffers: Buffers,
}

impl Worker {
    pub(crate) fn new(server: &Server) -> Worker {
        Worker { exchanger: Exchanger::new(), buffers: Buffers::new(server) }
    }
}

/// Serves one connection until it closes, times out, or shutdown is asked between
/// requests. Returns when the connection is done; the stream is closed on drop.
pub(crate) fn serve(stream: TcpStream, peer: SocketAddr, server: &Server, shutdown: &Shutdown, worker: &mut Worker) {
    serve_from(stream, peer, server, shutdown, None, worker);
}

/// [`serve`] for a connection whose first bytes were already read (`fork
/// --fork-after-parse`): `read` holds them and when the first came (the head deadline runs
/// from then).
pub(crate) fn serve_from(
    stream: TcpStream,
    peer: SocketAddr,
    server: &Server,
    shutdown: &Shutdown,
    read: Option<(&[u8], Instant)>,
    worker: &mut Worker,
) {
    // An open connection and a busy worker, until it ends. TCP_NODELAY and TCP_NOTSENT_LOWAT
    // come from the listener (`Listener::tune`): no setsockopt here.
    let _counted = crate::metrics::serving();
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let client = Client { stream, send_timeout: server.timeouts.send, shutdown };
    let Worker { exchanger, buffers } = worker;
    let Some(mut session) = Session::open(peer, server) else { return }; // closed: no TLS state
    let mut since = Since::Idle(Instant::now());
    // The requests answered when `since` last started: more since then restart the head
    // deadline at the next byte ([`Session::answered`]).
    let mut answered = 0;
    if let Some((bytes, started)) = read {
        // At most max_head + RECV_ROOM bytes: the receive buffer's size.
        if !bytes.chunks(RECV_ROOM).all(|chunk| session.push_bytes(chunk, &client.stream, &mut *buffers)) {
            return;
        }
        since = Since::Head(started);
    }
    loop {
        if session.answer(&mut *exchanger, server, &mut *buffers, shutdown.flagged(), Offloading::Never)
            == Answered::Ready
        {
            if let Held::Starts(delay) = session.held() {
                std::thread::sleep(delay);
                session.end_hold(HoldEnd::Deadline, &mut *exchanger, server, &mut *buffers);
            }
            let sent = respond(&client, &mut session, &mut *exchanger, server, &mut *buffers);
            since =
                if session.has_partial_request() { Since::Head(Instant::now()) } else { Since::Idle(Instant::now()) };
            if finish(&client, &mut session, &mut *buffers, server, sent) {
                continue;
            }
            break;
        }
        // TLS: a handshake flight (or tickets) goes out before the client is waited for.
        if session.is_sending() {
            if client
                .until_sent(|fd| session.write_to(&mut Direct(fd), &mut *exchanger, server, &mut *buffers))
                .is_err()
            {
                break;
            }
            continue;
        }
        // Need more bytes: wait for them (unless rustls holds decrypted ones already).
        crate::log::flush();
        let deadline = since.deadline(server);
        let ready = session.holds_input()
            || if session.has_partial_request() {
                // A request has begun: it may finish within its deadline, shutdown or not.
                wait_socket(&client.stream, PollFlags::IN, deadline)
            } else {
                // Idle, or only ciphertext without plaintext since: closed at the deadline,
                // or at once if asked to stop.
                matches!(wait_readable(client.stream.as_fd(), shutdown, Some(deadline)), Ok(Wake::Ready))
            };
        if !ready && shutdown.flagged() && !session.has_partial_request() {
            // Idle at shutdown: HTTP/2's GOAWAY, if it speaks HTTP/2, then the close.
            if session.farewell(&mut *exchanger, server, &mut *buffers) {
                let sent =
                    client.until_sent(|fd| session.write_to(&mut Direct(fd), &mut *exchanger, server, &mut *buffers));
                finish(&client, &mut session, &mut *buffers, server, sent);
            }
            break;
        }
        if !ready {
            // A TLS handshake cut by the head deadline has no HTTP to answer 408 in.
            if session.has_partial_request() && !session.is_handshaking() {
                session.answer_timeout(&mut *exchanger, server, &mut *buffers);
                let sent =
                    client.until_sent(|fd| session.write_to(&mut Direct(fd), &mut *exchanger, server, &mut *buffers));
                finish(&client, &mut session, &mut *buffers, server, sent);
            }
            break;
        }
        match session.read_from(&mut Direct(&client.stream), &mut *buffers) {
            Inflow::Bytes { .. } => {
                if matches!(since, Since::Idle(_)) || session.answered() != answered {
                    since = Since::Head(Instant::now());
                    answered = session.answered();
                }
            }
            Inflow::Again => {}
            Inflow::Closed => break,
        }
    }
    session.release(&mut *buffers);
    crate::log::flush();
}

/// What the connection waits for, and since when: each deadline is fixed when its wait
/// begins, never moved by a later read.
#[derive(Debug, Clone, Copy)]
enum Since {
    /// Nothing has arrived since the connection opened or its last response ended.
    Idle(Instant),
    /// Bytes have arrived since: a request's head, or over TLS a handshake or ciphertext
    /// that has yielded no plaintext yet (a record's first bytes, a KeyUpdate). A whole
    /// head must follow within the head timeout; more ciphertext moves nothing.
    Head(Instant),
}

impl Since {
    fn deadline(self, server: &Server) -> Instant {
        match self {
            Since::Idle(t) => t + server.timeouts.idle,
            Since::Head(t) => t + server.timeouts.head,
        }
    }
}

/// Ends a response that was `sent` (or not); returns whether the connection stays open.
/// After the last one, the close may linger.
fn finish(
    client: &Client<'_>,
    session: &mut Session,
    buffers: &mut Buffers,
    server: &Server,
    sent: io::Result<()>,
) -> bool {
    match (sent, session.finish_response(buffers)) {
        (Ok(()), true) => true,
        (Ok(()), false) => {
            linger(client, session, buffers, server);
            false
        }
        (Err(_), _) => false,
    }
}

/// After the response the server closes on: the lingering close that
/// [`Session::linger`] rules, dropping input until the client closes, the idle timeout
/// passes or shutdown is asked. Input is left over if bytes are buffered, or unread in
/// the socket (recv MSG_PEEK).
fn linger(client: &Client<'_>, session: &mut Session, buffers: &mut Buffers, server: &Server) {
    let unread = session.has_partial_request() || crate::net::has_unread_input(&client.stream);
    if !session.linger(&client.stream, unread, buffers) {
        return;
    }
    let deadline = Instant::now() + server.timeouts.idle;
    while let Ok(Wake::Ready) = wait_readable(client.stream.as_fd(), client.shutdown, Some(deadline)) {
        // Read and dropped: the session lingers.
        if let Inflow::Closed = session.read_from(&mut Direct(&client.stream), buffers) {
            return;
        }
    }
}

/// The client socket: non-blocking underneath, blocking for its users. Every write goes
/// through `send.rs` and waits for room at most the send timeout at a time, and not past
/// the shutdown grace period.
struct Client<'s> {
    stream: TcpStream,
    send_timeout: Duration,
    shutdown: &'s Shutdown,
}

/// Sends the response the session has framed, a script's included: waits for room, for
/// request-body bytes (until the body's deadline, then the session answers 408) and for
/// the script (its pipes, until its deadline), as the session asks.
fn respond(
    client: &Client<'_>,
    session: &mut Session,
    ex: &mut Exchanger,
    server: &Server,
    buffers: &mut Buffers,
) -> io::Result<()> {
    loop {
        match session.write_to(&mut Direct(&client.stream), ex, server, buffers) {
            Sent::Done => return Ok(()),
            Sent::Blocked => client.wait_room()?,
            Sent::Failed => return Err(io::ErrorKind::BrokenPipe.into()),
            Sent::NeedRead => {
                // The whole body is bounded (`Session::wake_at`), not each read: past
                // it, the next send answers 408.
                let deadline = session.wake_at().unwrap_or_else(|| Instant::now() + server.timeouts.head);
                if !session.holds_input() {
                    match wait_readable(client.stream.as_fd(), client.shutdown, Some(deadline))? {
                        Wake::Ready => {}
                        Wake::Timeout => continue,
                        Wake::Shutdown => return Err(io::ErrorKind::Interrupted.into()),
                    }
                }
                if let Inflow::Closed = session.read_from(&mut Direct(&client.stream), buffers) {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
            }
            Sent::WaitScript => wait_script(session, client.shutdown)?,
        }
    }
}

impl Client<'_> {
    /// Repeats a non-blocking send `step` until it is done, waiting for room in between
    /// (for answers without a script: [`respond`] drives those).
    fn until_sent(&self, mut step: impl FnMut(&TcpStream) -> Sent) -> io::Result<()> {
        loop {
            match step(&self.stream) {
                Sent::Done => return Ok(()),
                Sent::Blocked => self.wait_room()?,
                Sent::Failed => return Err(io::ErrorKind::BrokenPipe.into()),
                Sent::NeedRead | Sent::WaitScript => {
                    return Err(io::Error::other("a script's answer is sent by respond"))
                }
            }
        }
    }

    /// Waits until the socket has room to write; fails with `TimedOut` after the send
    /// timeout, or at once past the shutdown grace period.
    fn wait_room(&self) -> io::Result<()> {
        let now = Instant::now();
        if self.shutdown.deadline().is_some_and(|d| now >= d)
            || !wait_socket(&self.stream, PollFlags::OUT, now + self.send_timeout)
        {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(())
    }
}

/// Waits until `stream` is ready for `events` or `deadline` passes; returns whether it is.
fn wait_socket(stream: &TcpStream, events: PollFlags, deadline: Instant) -> bool {
    matches!(poll_until(&mut [PollFd::new(stream, events)], Some(deadline)), Ok(true))
}

/// Waits until a running script's stdout is readable or its stdin writable, or the earliest
/// deadline (`Session::script_watch`: every script the connection runs). Fails once
/// shutdown's grace period is over (the caller drops the scripts).
fn wait_script(session: &Session, shutdown: &Shutdown) -> io::Result<()> {
    let Some(watch) = session.script_watch() else { return Ok(()) };
    let Some(at) = watch.deadline() else { return Ok(()) };
    let grace = if shutdown.requested() { shutdown.deadline() } else { None };
    if grace.is_some_and(|d| Instant::now() >= d) {
        return Err(io::ErrorKind::TimedOut.into());
    }
    let deadline = grace.map_or(at, |g| g.min(at));
    let flags = |ready| if ready == Ready::Read { PollFlags::IN } else { PollFlags::OUT };
    let mut fds: Vec<_> = watch.pipes().map(|(fd, ready)| PollFd::from_borrowed_fd(fd, flags(ready))).collect();
    // Wake at least once a second to notice shutdown.
    poll_until(&mut fds, Some(deadline.min(Instant::now() + Duration::from_secs(1))))?;
    Ok(())
}
