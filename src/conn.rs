//! The blocking connection driver shared by `single`, `fork`, `thread`, `pool` and
//! `prefork`: read a head, answer it, repeat while the connection is kept alive.
//!
//! Waiting is done with poll(2) on the socket and the shutdown pipe together, so an idle
//! keep-alive connection notices shutdown at once and every wait has a deadline: the idle
//! timeout between requests, the whole-head timeout once a request has begun. Writes
//! block with SO_SNDTIMEO set to the send timeout; file bodies go out with sendfile(2) on
//! the socket switched to non-blocking, each wait for room bounded by the send timeout.
//! EPIPE and ECONNRESET are how clients leave, not errors: the connection just ends.
//!
//! `--delay` is a sleep before the answer is written. A CGI answer ([`Body::Cgi`]) is
//! driven here by [`serve_cgi`]: request-body bytes come from the same buffer (those that
//! followed the head) and then from the socket until the body's deadline (`--body-timeout`,
//! then 408), and the script's pipes are waited on with
//! poll(2) until the script's deadline; a write error drops the output, which kills and
//! reaps the script.

use crate::content::cgi_output::{CgiOutput, CgiStep};
use crate::content::Body;
use crate::exchange::{Answer, Exchanger, Step};
use crate::net::{wait_readable, Shutdown, Wake};
use crate::server::Server;
use rustix::event::{poll, PollFd, PollFlags};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

/// Receive buffer size: the largest head the limits allow, plus room for pipelining.
fn buffer_size(server: &Server) -> usize {
    server.limits.max_head + 4096
}

/// Serves one connection until it closes, times out, or shutdown is asked between
/// requests. Returns when the connection is done; the stream is closed on drop.
pub fn serve(mut stream: TcpStream, peer: SocketAddr, server: &Server, shutdown: &Shutdown) {
    let _counted = crate::metrics::serving();
    crate::net::tune_stream(&stream);
    let _ = stream.set_write_timeout(Some(server.timeouts.send));
    let mut exchanger = Exchanger::new();
    let mut buf = vec![0u8; buffer_size(server)];
    let (mut start, mut end) = (0usize, 0usize);
    let mut served = 0u32;
    let mut head_started: Option<Instant> = None;
    loop {
        if start < end {
            let must_close = served + 1 >= server.max_requests || shutdown.flagged();
            if let Step::Respond(answer) = exchanger.step(server, &buf[start..end], peer, must_close) {
                served += 1;
                start += answer.consumed;
                if let Some(delay) = answer.delay {
                    std::thread::sleep(delay);
                }
                let keep = answer.keep_alive;
                let sent = match answer.body {
                    Body::Cgi(cgi) => {
                        let mut pending = Pending { buf: &mut buf, start: &mut start, end: &mut end };
                        serve_cgi(&mut stream, &mut pending, cgi, server, shutdown, &mut exchanger, peer)
                    }
                    _ => send(&mut stream, &exchanger.head, answer, server, shutdown).map(|()| keep),
                };
                head_started = (start < end).then(Instant::now);
                if !matches!(sent, Ok(true)) {
                    if sent.is_ok() {
                        linger(&mut stream, start < end, server, shutdown);
                    }
                    break;
                }
                continue;
            }
        }
        // Need more bytes: compact the buffer, then wait for them.
        buf.copy_within(start..end, 0);
        (end, start) = (end - start, 0);
        crate::log::flush();
        let deadline = match head_started {
            Some(t) => t + server.timeouts.head,
            None => Instant::now() + server.timeouts.idle,
        };
        match wait_readable(stream.as_fd(), shutdown, Some(deadline)) {
            Ok(Wake::Ready) => {}
            Ok(Wake::Timeout) if end > 0 => {
                let answer = exchanger.timeout(server, &buf[..end], peer);
                if send(&mut stream, &exchanger.head, answer, server, shutdown).is_ok() {
                    linger(&mut stream, false, server, shutdown);
                }
                break;
            }
            // Idle, or asked to stop with no request under way.
            Ok(Wake::Timeout | Wake::Shutdown) if end == 0 => break,
            Ok(Wake::Shutdown) => {} // a request has begun: let it finish within its deadline
            Ok(Wake::Timeout) | Err(_) => break,
        }
        match stream.read(&mut buf[end..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                head_started.get_or_insert_with(Instant::now);
                end += n;
            }
        }
    }
    crate::log::flush();
}

/// After the response the server closes on: when client input is left over (`leftover`
/// bytes buffered, or unread in the socket), half-closes and drops input until the client
/// closes, the idle timeout passes or shutdown is asked, so that closing cannot reset the
/// connection before the response is out (see `Session::linger`).
fn linger(stream: &mut TcpStream, leftover: bool, server: &Server, shutdown: &Shutdown) {
    if !leftover && !crate::net::has_unread_input(&*stream) {
        return;
    }
    if stream.shutdown(std::net::Shutdown::Write).is_err() {
        return;
    }
    let deadline = Instant::now() + server.timeouts.idle;
    let mut sink = [0u8; 4096];
    while let Ok(Wake::Ready) = wait_readable(stream.as_fd(), shutdown, Some(deadline)) {
        if matches!(stream.read(&mut sink), Ok(0) | Err(_)) {
            return;
        }
    }
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
    stream: &mut TcpStream,
    pending: &mut Pending<'_>,
    mut cgi: Box<CgiOutput>,
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
                // The whole body is bounded (`CgiOutput::body_deadline`), not each read:
                // past it, the next pump answers 408.
                let deadline = cgi.body_deadline().unwrap_or_else(|| Instant::now() + server.timeouts.head);
                match wait_readable(stream.as_fd(), shutdown, Some(deadline))? {
                    Wake::Ready => {}
                    Wake::Timeout => continue,
                    Wake::Shutdown => return Ok(false),
                }
                match stream.read(&mut pending.buf[..])? {
                    0 => return Ok(false),
                    n => *pending.end = n,
                }
            }
            CgiStep::Wait => wait_script(&cgi, shutdown)?,
            CgiStep::LocalRedirect(path) => {
                let request = cgi.redirect_request(&path);
                drop(cgi);
                let answer = exchanger.local_redirect(server, &request, peer);
                let keep = answer.keep_alive;
                return match answer.body {
                    Body::Cgi(next) => serve_cgi(stream, pending, next, server, shutdown, exchanger, peer),
                    _ => send(stream, &exchanger.head, answer, server, shutdown).map(|()| keep),
                };
            }
            CgiStep::Done => return Ok(cgi.keep_alive()),
        }
    }
}

/// Waits until the script's stdout is readable or its stdin writable, or its deadline.
/// Fails once shutdown's grace period is over (the caller drops the script).
fn wait_script(cgi: &CgiOutput, shutdown: &Shutdown) -> io::Result<()> {
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
    let left = deadline.saturating_duration_since(Instant::now()).min(Duration::from_secs(1));
    let timeout = crate::net::to_timespec(left);
    match poll(&mut fds, Some(&timeout)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Writes a head with MSG_MORE, so it leaves in one segment with the start of the body
/// that follows it.
fn send_head_before_body(stream: &mut TcpStream, head: &[u8]) -> io::Result<()> {
    let n = rustix::net::send(&*stream, head, rustix::net::SendFlags::MORE)?;
    stream.write_all(&head[n..])
}

/// Writes the head and the body. Small in-memory bodies share the head's write.
fn send(stream: &mut TcpStream, head: &[u8], answer: Answer, server: &Server, shutdown: &Shutdown) -> io::Result<()> {
    let last = !answer.keep_alive;
    match answer.body {
        Body::Empty => stream.write_all(head),
        Body::Cgi(_) => Err(io::Error::other("a CGI body is driven by serve_cgi")),
        Body::Bytes(bytes) if bytes.len() > 16 * 1024 => {
            // Large (a handler's page): no copy, the head leaves with the body's first segment.
            send_head_before_body(stream, head)?;
            stream.write_all(&bytes)
        }
        Body::Bytes(bytes) => {
            let mut out = Vec::with_capacity(head.len() + bytes.len());
            out.extend_from_slice(head);
            out.extend_from_slice(&bytes);
            stream.write_all(&out)
        }
        Body::File { file, offset, len } => {
            if last {
                // As `Session::cork_last_response` does: the body's last partial segment then
                // leaves with the FIN (close or the lingering half-close flushes the cork),
                // one packet instead of two. A failure only costs that packet.
                let _ = rustix::net::sockopt::set_tcp_cork(&*stream, true);
            }
            send_head_before_body(stream, head)?;
            // SO_SNDTIMEO does not bound sendfile(2) (a client that never read held the
            // connection for good on Linux 6.18), so the file goes out non-blocking, each
            // stall bounded by poll(2).
            stream.set_nonblocking(true)?;
            let sent = send_file(stream, &file, offset, len, server.timeouts.send, shutdown);
            stream.set_nonblocking(false)?;
            sent
        }
    }
}

/// sendfile(2) on a non-blocking socket until `len` bytes are out; every wait for room is
/// bounded by the send timeout, and the whole by the shutdown grace period.
fn send_file(
    stream: &TcpStream,
    file: &std::fs::File,
    offset: u64,
    len: u64,
    send_timeout: Duration,
    shutdown: &Shutdown,
) -> io::Result<()> {
    let mut offset = offset;
    let end = offset + len;
    while offset < end {
        if shutdown.deadline().is_some_and(|d| Instant::now() >= d) {
            return Err(io::ErrorKind::TimedOut.into());
        }
        let chunk = usize::try_from(end - offset).unwrap_or(usize::MAX).min(1 << 30);
        match rustix::fs::sendfile(stream, file, Some(&mut offset), chunk) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()), // the file shrank
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(rustix::io::Errno::AGAIN) => wait_writable(stream, send_timeout)?,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Waits until `stream` has room to write, or fails with `TimedOut` after `limit`.
fn wait_writable(stream: &TcpStream, limit: Duration) -> io::Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = crate::net::to_timespec(left);
        let mut fds = [PollFd::new(stream, PollFlags::OUT)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => return Err(io::ErrorKind::TimedOut.into()),
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
