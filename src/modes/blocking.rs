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
//! `--delay` is a sleep before the answer is written. A CGI answer ([`Body::Cgi`]) is
//! driven here by [`serve_cgi`]: request-body bytes come from the same buffer (those that
//! followed the head) and then from the socket until the body's deadline (`--body-timeout`,
//! then 408), and the script's pipes are waited on with
//! poll(2) until the script's deadline; a write error drops the output, which kills and
//! reaps the script.

use super::send::{self, After, Outgoing, Response, Sent};
use super::session::{Answered, Pool, Session};
use super::tls::Inflow;
use super::transport::Transport;
use crate::exchange::{Answer, Exchanger};
use crate::exchange::{Body, CgiResponse, CgiStep};
use crate::net::{poll_until, wait_readable, Shutdown, Wake};
use crate::server::Server;
use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

/// Serves one connection until it closes, times out, or shutdown is asked between
/// requests. Returns when the connection is done; the stream is closed on drop.
pub(crate) fn serve(stream: TcpStream, peer: SocketAddr, server: &Server, shutdown: &Shutdown) {
    // An open connection and a busy worker, until it ends. TCP_NODELAY and TCP_NOTSENT_LOWAT
    // come from the listener (`Listener::tune`): no setsockopt here.
    let _counted = crate::metrics::serving();
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let mut client = Client { stream, send_timeout: server.timeouts.send, shutdown, transport: Transport::Plain };
    let mut exchanger = Exchanger::new();
    let mut pool = Pool::new(server);
    let Some(mut session) = Session::open(peer, server, false) else { return }; // closed: no TLS state
    let mut since = Since::Idle(Instant::now());
    loop {
        if session.answer(&mut exchanger, server, &mut pool, shutdown.flagged(), false) == Answered::Ready {
            if let Some(delay) = session.take_delay() {
                std::thread::sleep(delay);
                session.end_hold(&mut exchanger, server, &mut pool);
            }
            let sent = match session.take_cgi() {
                Some(cgi) => {
                    client.transport = session.take_transport(); // serve_cgi reads and writes through the client
                    let (buf, start, end) = session.input(&mut pool);
                    let mut pending = Pending { buf, start, end };
                    let keep = serve_cgi(&mut client, &mut pending, cgi, server, shutdown, &mut exchanger, peer);
                    session.received(0, &mut pool); // gives an emptied buffer back
                    session.return_transport(std::mem::replace(&mut client.transport, Transport::Plain));
                    keep.map(|keep| session.end_cgi(keep))
                }
                None => client.until_sent(|fd, _| session.send(fd, None, &mut exchanger, server, &mut pool)),
            };
            since =
                if session.has_partial_request() { Since::Head(Instant::now()) } else { Since::Idle(Instant::now()) };
            if finish(&client, &mut session, &mut pool, server, sent) {
                continue;
            }
            break;
        }
        // TLS: a handshake flight (or tickets) goes out before the client is waited for.
        if session.is_sending() {
            if client.until_sent(|fd, _| session.send(fd, None, &mut exchanger, server, &mut pool)).is_err() {
                break;
            }
            continue;
        }
        // Need more bytes: wait for them (unless rustls holds decrypted ones already).
        crate::log::flush();
        let deadline = since.deadline(server);
        let ready = session.has_buffered_plaintext()
            || if session.has_partial_request() {
                // A request has begun: it may finish within its deadline, shutdown or not.
                wait_socket(&client.stream, PollFlags::IN, deadline)
            } else {
                // Idle, or only ciphertext without plaintext since: closed at the deadline,
                // or at once if asked to stop.
                matches!(wait_readable(client.stream.as_fd(), shutdown, Some(deadline)), Ok(Wake::Ready))
            };
        if !ready {
            // A TLS handshake cut by the head deadline has no HTTP to answer 408 in.
            if session.has_partial_request() && !session.is_handshaking() {
                session.answer_timeout(&mut exchanger, server, &mut pool);
                let sent = client.until_sent(|fd, _| session.send(fd, None, &mut exchanger, server, &mut pool));
                finish(&client, &mut session, &mut pool, server, sent);
            }
            break;
        }
        match session.read_from(&client.stream, &mut pool) {
            Inflow::Bytes { .. } => {
                if let Since::Idle(_) = since {
                    since = Since::Head(Instant::now());
                }
            }
            Inflow::Again => {}
            Inflow::Closed => break,
        }
    }
    session.release(&mut pool);
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
fn finish(client: &Client<'_>, session: &mut Session, pool: &mut Pool, server: &Server, sent: io::Result<()>) -> bool {
    match (sent, session.finish_response(pool)) {
        (Ok(()), true) => true,
        (Ok(()), false) => {
            linger(client, session, pool, server);
            false
        }
        (Err(_), _) => false,
    }
}

/// After the response the server closes on: the lingering close that
/// [`Session::linger`] rules, dropping input until the client closes, the idle timeout
/// passes or shutdown is asked. Input is left over if bytes are buffered, or unread in
/// the socket (recv MSG_PEEK).
fn linger(client: &Client<'_>, session: &mut Session, pool: &mut Pool, server: &Server) {
    let unread = session.has_partial_request() || crate::net::has_unread_input(&client.stream);
    if !session.linger(&client.stream, unread, pool) {
        return;
    }
    let deadline = Instant::now() + server.timeouts.idle;
    while let Ok(Wake::Ready) = wait_readable(client.stream.as_fd(), client.shutdown, Some(deadline)) {
        let space = session.recv_space(pool);
        match rustix::io::read(&client.stream, space) {
            Ok(0) => return,
            Ok(n) => session.received(n, pool), // dropped: the session lingers
            Err(Errno::AGAIN | Errno::INTR) => session.received(0, pool),
            Err(_) => return,
        }
    }
}

/// The client socket: non-blocking underneath, blocking for its users. Every write goes
/// through `send.rs` and waits for room at most the send timeout at a time, and not past
/// the shutdown grace period. Reads are meant to follow a wait that said readable.
pub(crate) struct Client<'s> {
    stream: TcpStream,
    send_timeout: Duration,
    shutdown: &'s Shutdown,
    /// The connection's transport while `serve_cgi` reads and writes through the client
    /// (the session holds it otherwise).
    transport: Transport,
}

impl Client<'_> {
    /// Repeats a non-blocking send `step` until it is done, waiting for room in between.
    fn until_sent(&mut self, mut step: impl FnMut(&TcpStream, &mut Transport) -> Sent) -> io::Result<()> {
        loop {
            match step(&self.stream, &mut self.transport) {
                Sent::Done => return Ok(()),
                Sent::Blocked => self.wait_room()?,
                Sent::Failed => return Err(io::ErrorKind::BrokenPipe.into()),
                Sent::NeedRead | Sent::WaitScript => return Err(io::Error::other("a CGI body is driven by serve_cgi")),
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

impl Write for Client<'_> {
    /// Writes all of `buf` by `send.rs`'s rules (encrypted over TLS).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (mut out, mut pos, mut body) = (buf.to_vec(), 0, None);
        self.until_sent(|fd, t| {
            t.send(&fd, None, Response { out: &mut out, pos: &mut pos, body: &mut body, after: After::Answer })
        })?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Client<'_> {
    /// Over TLS, WouldBlock when the ciphertext read held no whole record: wait again.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Transport::Tls(tls) = &mut self.transport else { return (&self.stream).read(buf) };
        loop {
            if tls.has_plaintext() {
                return Ok(tls.take_plaintext(buf));
            }
            match tls.read_from(&self.stream) {
                Inflow::Bytes { .. } => {}
                Inflow::Again => return Err(io::ErrorKind::WouldBlock.into()),
                Inflow::Closed => return Ok(0),
            }
        }
    }
}

impl Client<'_> {
    /// Over TLS, whether decrypted bytes wait in rustls (read them before waiting).
    fn has_plaintext(&mut self) -> bool {
        self.transport.has_plaintext()
    }
}

impl AsFd for Client<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.stream.as_fd()
    }
}

/// Waits until `stream` is ready for `events` or `deadline` passes; returns whether it is.
fn wait_socket(stream: &TcpStream, events: PollFlags, deadline: Instant) -> bool {
    matches!(poll_until(&mut [PollFd::new(stream, events)], Some(deadline)), Ok(true))
}

/// The receive buffer and the unparsed bytes in it, `buf[start..end]`.
struct Pending<'a> {
    buf: &'a mut Vec<u8>,
    start: &'a mut usize,
    end: &'a mut usize,
}

/// Runs a CGI answer to its end (see `exchange`'s module docs for the protocol); returns
/// whether the connection may be kept.
fn serve_cgi(
    stream: &mut Client<'_>,
    pending: &mut Pending<'_>,
    mut cgi: Box<CgiResponse>,
    server: &Server,
    shutdown: &Shutdown,
    exchanger: &mut Exchanger,
    peer: SocketAddr,
) -> io::Result<bool> {
    let mut out = Vec::new();
    loop {
        let step = cgi.pump(&mut out);
        if !out.is_empty() {
            stream.write_all(&out)?;
            out.clear();
        }
        match step {
            CgiStep::NeedBody if *pending.start < *pending.end => {
                *pending.start += cgi.feed_body(&pending.buf[*pending.start..*pending.end]);
            }
            CgiStep::NeedBody => {
                (*pending.start, *pending.end) = (0, 0);
                // The whole body is bounded (`CgiResponse::body_deadline`), not each read:
                // past it, the next pump answers 408.
                let deadline = cgi.body_deadline().unwrap_or_else(|| Instant::now() + server.timeouts.head);
                if !stream.has_plaintext() {
                    match wait_readable(stream.as_fd(), shutdown, Some(deadline))? {
                        Wake::Ready => {}
                        Wake::Timeout => continue,
                        Wake::Shutdown => return Ok(false),
                    }
                }
                match stream.read(&mut pending.buf[..]) {
                    Ok(0) => return Ok(false),
                    Ok(n) => *pending.end = n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {} // a partial TLS record
                    Err(e) => return Err(e),
                }
            }
            CgiStep::Wait => wait_script(&cgi, shutdown)?,
            CgiStep::LocalRedirect(path) => {
                let request = cgi.redirect_request(&path);
                drop(cgi);
                let answer = exchanger.local_redirect(server, &request, peer);
                let keep = answer.keep_alive;
                return match answer.body {
                    Body::Cgi(next) => {
                        drop(answer.head); // empty (the script frames its own); frees `exchanger`
                        serve_cgi(stream, pending, next, server, shutdown, exchanger, peer)
                    }
                    _ => send(stream, answer, server, shutdown).map(|()| keep),
                };
            }
            CgiStep::Done => return Ok(cgi.keep_alive()),
        }
    }
}

/// Waits until the script's stdout is readable or its stdin writable, or its deadline.
/// Fails once shutdown's grace period is over (the caller drops the script).
fn wait_script(cgi: &CgiResponse, shutdown: &Shutdown) -> io::Result<()> {
    let grace = if shutdown.requested() { shutdown.deadline() } else { None };
    if grace.is_some_and(|d| Instant::now() >= d) {
        return Err(io::ErrorKind::TimedOut.into());
    }
    let deadline = grace.map_or(cgi.deadline(), |g| g.min(cgi.deadline()));
    let mut fds = Vec::with_capacity(2);
    if let Some(fd) = cgi.stdout_fd() {
        fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
    }
    if let Some(fd) = cgi.stdin_fd() {
        fds.push(PollFd::from_borrowed_fd(fd, PollFlags::OUT));
    }
    // Wake at least once a second to notice shutdown.
    poll_until(&mut fds, Some(deadline.min(Instant::now() + Duration::from_secs(1))))?;
    Ok(())
}

/// Sends an answer no session framed (a script's local redirect) by the same rules.
fn send(stream: &mut Client<'_>, answer: Answer<'_>, _server: &Server, _shutdown: &Shutdown) -> io::Result<()> {
    let mut out = Vec::new();
    let mut body = send::frame(&mut out, &answer.head, answer.body);
    if matches!(body, Some(Outgoing::Cgi(_))) {
        return Err(io::Error::other("a CGI body is driven by serve_cgi"));
    }
    let (mut pos, after) = (0, if answer.keep_alive { After::Answer } else { After::Close });
    stream.until_sent(|fd, t| t.send(&fd, None, Response { out: &mut out, pos: &mut pos, body: &mut body, after }))
}
