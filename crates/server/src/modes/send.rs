//! The rules by which a response leaves, written once for every driver (the blocking one,
//! `blocking.rs`, and the event loops' [`Session`](super::session::Session)) and every
//! transport (`transport.rs`: clear or TLS) over every socket (`socket.rs`: direct system
//! calls, or `uring`'s ring sends), over the one [`Wire`] they make together.
//!
//! A framed response is its out bytes (the head and any small in-memory body, one buffer)
//! and then an optional [`Outgoing`] body: a file moved without a copy through user space
//! where the transport can, or bytes shared with other responses (a kept encoding over
//! [`COPY_MAX`]), sent from the one shared buffer rather than copied into each
//! connection's. The rules ([`send_response`]): the connection's last response corks the
//! socket before its head when a file follows ([`Wire::cork`]); the out bytes leave with
//! MSG_MORE when a file follows (head and first file bytes share a segment); the body moves
//! until done or the socket is full, and a file that shrank under us fails the response;
//! the response is done once the transport has nothing left to flush. The sockets are
//! non-blocking: how a driver waits for room (poll(2), epoll, a ring poll) is its own
//! business.
//!
//! With `--copy-loop BYTES` ([`use_copy_loop`], seed 004's 5000-byte loop) a file body
//! instead goes through a user-space buffer of BYTES, a pread(2) and a send per buffer,
//! in every driver. A send that takes only part of a buffer advances the offset by what
//! it took, and the next round reads from there (the seed's blocking send waited
//! instead; here the socket is non-blocking and the driver waits for room).
//!
//! [`send_bytes`] is the one place buffer bytes are written to a client socket by a system
//! call (clear out bytes and shared bodies, TLS ciphertext); a clear file body moves with
//! sendfile(2) in `socket.rs`, and `uring`'s ring send (`spidey_sys::uring::Ring::send`,
//! `uring/socket.rs`) is the one other kind of write, of the same out bytes.

use crate::exchange::{Body, CgiResponse};
use crate::h1::H1Parts;
use rustix::io::Errno;
use rustix::net::SendFlags;
use std::cell::RefCell;
use std::fs::File;
use std::os::fd::AsFd;
use std::sync::OnceLock;

/// Shared in-memory bodies up to this size are copied after the head (head and body then
/// leave in one send); larger ones are sent from the shared buffer, so a slow reader pins
/// no copy of its own.
pub(crate) const COPY_MAX: usize = 16 << 10;

/// `--copy-loop`: the buffer size file bodies are copied through instead of sendfile(2).
static COPY_LOOP: OnceLock<usize> = OnceLock::new();

thread_local! {
    /// This thread's copy-loop buffer, made at its first file body.
    static COPY_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Sends every file body through a buffer of `bytes` (at least 1) from now on: call once
/// at startup, before any worker starts (forked workers inherit it).
pub(crate) fn use_copy_loop(bytes: usize) {
    let _ = COPY_LOOP.set(bytes.max(1));
}

/// A body still to be moved after the out bytes.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// `end - offset` bytes of `file` from `offset` (plain: sendfile, no copy through
    /// user space).
    /// INVARIANT: `offset <= end` once a send has run; `offset == end` means all is out.
    File { file: std::sync::Arc<File>, offset: u64, end: u64 },
    /// `bytes[offset..end]`, memory shared with other responses (a kept encoding).
    /// INVARIANT: `offset <= end <= bytes.len()`; `offset == end` means all is out.
    Shared { bytes: std::sync::Arc<[u8]>, offset: usize, end: usize },
    /// A CGI script's output, pumped into the out bytes as the script writes it (by the
    /// session, `session/cgi.rs`), framed by `parts`; dropping it kills and reaps the
    /// script.
    Cgi(Box<CgiResponse>, H1Parts),
}

/// How far a send got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// The whole response is out.
    Done,
    /// The socket is full: wait until it is writable (or, on `uring`, a ring send holds
    /// the out bytes: wait for its completion).
    Blocked,
    /// The peer left (EPIPE, ECONNRESET) or the file shrank: close.
    Failed,
    /// A CGI script wants request-body bytes: read the socket, then send again.
    NeedRead,
    /// A CGI script is running: wait for its pipes (`Session::script_watch`) or its
    /// deadline, then send again.
    WaitScript,
}

/// Appends an in-memory body to `out` (after the head already there); returns the body
/// to move after them.
pub(crate) fn stage(out: &mut Vec<u8>, body: Body) -> Option<Outgoing> {
    match body {
        Body::Empty => None,
        Body::Bytes(bytes) => {
            out.extend_from_slice(&bytes);
            None
        }
        Body::Shared(bytes, range) if range.len() <= COPY_MAX => {
            out.extend_from_slice(&bytes[range]);
            None
        }
        Body::Shared(bytes, range) => Some(Outgoing::Shared { bytes, offset: range.start, end: range.end }),
        Body::File { file, offset, len } => Some(Outgoing::File { file, offset, end: offset + len }),
        Body::Cgi(cgi) => Some(Outgoing::Cgi(cgi, H1Parts::default())),
    }
}

/// Whether file (or shared) bytes are still to move after the out bytes.
fn file_follows(body: &Option<Outgoing>) -> bool {
    match body {
        Some(Outgoing::File { offset, end, .. }) => offset < end,
        Some(Outgoing::Shared { offset, end, .. }) => offset < end,
        _ => false,
    }
}

/// What follows the response being sent on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum After {
    /// The connection closes after it: its last response.
    Close,
    /// Another request is buffered already and is answered next.
    Answer,
    /// Nothing: the connection waits for its next request.
    Wait,
}

/// How one transport writes a response's bytes to the client socket (`transport.rs`).
/// Every method is non-blocking: EAGAIN is the socket full, EINTR a retry.
pub(crate) trait Wire {
    /// Corks the socket (TCP_CORK, tcp(7)) before the head of the connection's last
    /// response when a file body follows ([`send_response`]); a failure only costs a packet.
    fn cork(&mut self);

    /// Writes some of `bytes`; returns how many it took (0: it can take none, which fails
    /// the response). `more`: more of the response follows at once (MSG_MORE).
    fn write(&mut self, bytes: &[u8], more: bool) -> Result<usize, Errno>;

    /// Writes up to `len` bytes of `file` from `offset`; returns how many (0: the file
    /// ended before `offset + len`, it shrank under us).
    fn write_file(&mut self, file: &File, offset: u64, len: usize) -> Result<usize, Errno>;

    /// Writes what the transport still holds of the response (TLS: ciphertext).
    fn flush(&mut self) -> Result<(), Errno> {
        Ok(())
    }

    /// Writes the out bytes still unsent ([`OutBytes::Held`]), moving `pos` past what
    /// leaves. `then_waits`: they are all that is left of the response, and the connection
    /// then waits for its next request. A socket that sends asynchronously (`uring`'s ring)
    /// may lend itself the buffer ([`OutBytes::Lent`]) and say EAGAIN until its completion
    /// gives it back; no other wire has a lent buffer to write.
    fn write_out(&mut self, out: &mut OutBytes, more: bool, then_waits: bool) -> Result<(), Errno> {
        let _ = then_waits;
        let OutBytes::Held { buf, pos } = out else { return Err(Errno::AGAIN) };
        while *pos < buf.len() {
            match self.write(&buf[*pos..], more) {
                Ok(0) => return Err(Errno::IO),
                Ok(n) => *pos += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// A response's out bytes (its head and any in-memory body) and who holds them: the one
/// place that says so.
#[derive(Debug)]
pub(crate) enum OutBytes {
    /// The connection holds them; `buf[pos..]` is still to send (an empty `buf`: none).
    /// INVARIANT: `pos <= buf.len()`.
    Held { buf: Vec<u8>, pos: usize },
    /// An asynchronous send (`uring`'s ring send) holds the buffer, from `pos` on, until its
    /// completion gives it back to the socket that lent it, whose next
    /// [`Wire::write_out`] makes it [`OutBytes::Held`] again.
    Lent { pos: usize },
}

impl Default for OutBytes {
    fn default() -> OutBytes {
        OutBytes::Held { buf: Vec::new(), pos: 0 }
    }
}

impl OutBytes {
    /// Whether there are no out bytes (none framed, or all given back).
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, OutBytes::Held { buf, .. } if buf.is_empty())
    }

    /// Whether some are still to leave (a lent buffer counts until it is given back).
    fn unsent(&self) -> bool {
        match self {
            OutBytes::Held { buf, pos } => *pos < buf.len(),
            OutBytes::Lent { .. } => true,
        }
    }

    /// Whether none has left yet.
    fn at_start(&self) -> bool {
        matches!(self, OutBytes::Held { pos: 0, .. })
    }

    /// The held buffer to append to, or `None` while it is lent.
    pub(crate) fn buf_mut(&mut self) -> Option<&mut Vec<u8>> {
        match self {
            OutBytes::Held { buf, .. } => Some(buf),
            OutBytes::Lent { .. } => None,
        }
    }

    /// Empties them, handing back the held buffer if it has an allocation (a lent one is
    /// its send's, and is dropped with it).
    pub(crate) fn take(&mut self) -> Option<Vec<u8>> {
        match std::mem::take(self) {
            OutBytes::Held { buf, .. } if buf.capacity() > 0 => Some(buf),
            _ => None,
        }
    }
}

/// A framed response being sent, as its connection holds it.
pub(crate) struct Response<'a> {
    /// The out bytes.
    pub(crate) out: &'a mut OutBytes,
    /// The body to move after them.
    pub(crate) body: &'a mut Option<Outgoing>,
    /// What follows the response on its connection.
    pub(crate) after: After,
}

/// Sends a framed response over `wire`: `out[*pos..]`, then the body, until done, the
/// socket is full, or the peer is gone (see the module docs for the rules). A CGI body is
/// left to the caller ([`Sent::Done`] once the out bytes are out), which pumps the
/// script's output into the out bytes.
pub(crate) fn send_response<W: Wire>(wire: &mut W, response: Response<'_>) -> Sent {
    let Response { out, body, after } = response;
    let more = file_follows(body);
    if out.at_start() && more && after == After::Close {
        // The body's last partial segment then leaves with the FIN, one packet instead of
        // two (a loopback packet costs the sender the receiver's processing too), as
        // nginx's `tcp_nopush` does: close(2) sends tail and FIN at once. With input left
        // unread the driver half-closes first (`Session::linger`), since a close that
        // resets would drop the corked tail instead of sending it.
        wire.cork();
    }
    if out.unsent() {
        let then_waits = after == After::Wait && body.is_none();
        if let Err(e) = wire.write_out(out, more, then_waits) {
            return blocked_or_failed(e);
        }
    }
    match send_body(wire, body) {
        Sent::Done => {}
        other => return other,
    }
    match wire.flush() {
        Ok(()) => Sent::Done,
        Err(e) => blocked_or_failed(e),
    }
}

/// Moves the body after the out bytes until it is all out (the body becomes `None`), the
/// socket is full, or it fails: the peer left, or the file shrank under us (the transport
/// finds its end before the end we framed). Any other body (none, or a CGI one, which the
/// session pumps) is [`Sent::Done`] at once.
fn send_body<W: Wire>(wire: &mut W, body: &mut Option<Outgoing>) -> Sent {
    loop {
        let step = match body {
            Some(Outgoing::Shared { bytes, offset, end }) if *offset < *end => {
                wire.write(&bytes[*offset..*end], false).inspect(|&n| *offset += n)
            }
            Some(Outgoing::File { file, offset, end }) if *offset < *end => {
                let chunk = usize::try_from(*end - *offset).unwrap_or(usize::MAX).min(1 << 30);
                wire.write_file(file, *offset, chunk).inspect(|&n| *offset += n as u64)
            }
            Some(Outgoing::Cgi(..)) | None => return Sent::Done,
            Some(Outgoing::Shared { .. } | Outgoing::File { .. }) => {
                *body = None;
                return Sent::Done;
            }
        };
        match step {
            Ok(0) => return Sent::Failed, // the file shrank under us, or the wire took nothing
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return blocked_or_failed(e),
        }
    }
}

/// EAGAIN: the socket is full (or a ring send holds the out bytes); anything else: the
/// peer left or the transport failed.
fn blocked_or_failed(e: Errno) -> Sent {
    if e == Errno::AGAIN {
        Sent::Blocked
    } else {
        Sent::Failed
    }
}

/// Writes buffer bytes to the client socket `fd`: the one place that does (see the module
/// docs). `more`: more of the response follows at once (MSG_MORE). Never raises SIGPIPE.
pub(crate) fn send_bytes<Fd: AsFd>(fd: &Fd, bytes: &[u8], more: bool) -> Result<usize, Errno> {
    let flags = if more { SendFlags::MORE } else { SendFlags::empty() };
    rustix::net::send(fd, bytes, flags | SendFlags::NOSIGNAL)
}

/// With `--copy-loop`, one round of the copy loop in place of sendfile(2): reads up to
/// `len` bytes (at most the loop's buffer) of `file` at `offset` into this thread's buffer
/// and sends them; what the socket took, as sendfile(2) would say it (`Ok(0)`: no bytes
/// at `offset`, the file shrank). `None` without `--copy-loop`.
pub(crate) fn copy_file<Fd: AsFd>(fd: &Fd, file: &File, offset: u64, len: usize) -> Option<Result<usize, Errno>> {
    let want = len.min(*COPY_LOOP.get()?);
    Some(COPY_BUF.with_borrow_mut(|buf| {
        if buf.len() < want {
            buf.resize(want, 0);
        }
        let read = loop {
            match rustix::io::pread(file, &mut buf[..want], offset) {
                Ok(n) => break n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        };
        if read == 0 {
            return Ok(0);
        }
        send_bytes(fd, &buf[..read], false)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A transport that records what the rules ask of it: it takes `room` bytes in all,
    /// then says EAGAIN; its file holds `file_len` bytes (fewer than framed: it shrank);
    /// its flush answers `flush`.
    struct Recorder {
        log: Vec<String>,
        room: usize,
        file_len: u64,
        flush: Result<(), Errno>,
    }

    impl Wire for Recorder {
        fn cork(&mut self) {
            self.log.push("cork".into());
        }

        fn write(&mut self, bytes: &[u8], more: bool) -> Result<usize, Errno> {
            let n = bytes.len().min(self.room);
            if n == 0 {
                return Err(Errno::AGAIN);
            }
            self.room -= n;
            self.log.push(format!("send {n}{}", if more { " more" } else { "" }));
            Ok(n)
        }

        fn write_file(&mut self, _: &File, offset: u64, len: usize) -> Result<usize, Errno> {
            let left = usize::try_from(self.file_len.saturating_sub(offset)).unwrap();
            if self.room == 0 && left > 0 {
                return Err(Errno::AGAIN);
            }
            let n = len.min(left).min(self.room);
            self.room -= n;
            self.log.push(format!("file {offset}+{n}"));
            Ok(n)
        }

        fn flush(&mut self) -> Result<(), Errno> {
            self.log.push("flush".into());
            self.flush
        }
    }

    enum Then {
        Nothing,
        File(u64),
        Shared(usize),
    }

    /// The rules, whatever the transport: the cork only before the head of a closing
    /// response with a file, MSG_MORE on the out bytes only when a body follows, a file
    /// that shrank fails, a full socket or an unflushed transport blocks.
    #[test]
    fn the_rules_over_any_wire() {
        // (name, out bytes already sent, body, after, room, the file's real length, flush,
        // sent, the calls made)
        type Case = (&'static str, usize, Then, After, usize, u64, Result<(), Errno>, Sent, &'static str);
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("closing with a file: corked", 0, Then::File(10), After::Close, 99, 10, Ok(()), Sent::Done,
             "cork, send 4 more, file 0+10, flush"),
            ("keep-alive with a file: no cork", 0, Then::File(10), After::Wait, 99, 10, Ok(()), Sent::Done,
             "send 4 more, file 0+10, flush"),
            ("pipelined with a file: no cork", 0, Then::File(10), After::Answer, 99, 10, Ok(()), Sent::Done,
             "send 4 more, file 0+10, flush"),
            ("closing without a body: no cork, no MSG_MORE", 0, Then::Nothing, After::Close, 99, 0, Ok(()), Sent::Done,
             "send 4, flush"),
            ("resumed after part of the head: corked once only", 2, Then::File(10), After::Close, 99, 10, Ok(()),
             Sent::Done, "send 2 more, file 0+10, flush"),
            ("a shared body follows as a file does", 0, Then::Shared(6), After::Close, 99, 0, Ok(()), Sent::Done,
             "cork, send 4 more, send 6, flush"),
            ("the file shrank: failed", 0, Then::File(10), After::Wait, 99, 6, Ok(()), Sent::Failed,
             "send 4 more, file 0+6, file 6+0"),
            ("the socket filled: blocked", 0, Then::File(10), After::Wait, 7, 10, Ok(()), Sent::Blocked,
             "send 4 more, file 0+3"),
            ("the transport still holds bytes: blocked", 0, Then::Nothing, After::Wait, 99, 0, Err(Errno::AGAIN),
             Sent::Blocked, "send 4, flush"),
            ("the transport failed: failed", 0, Then::Nothing, After::Wait, 99, 0, Err(Errno::PIPE), Sent::Failed,
             "send 4, flush"),
        ];
        for (name, sent, then, after, room, file_len, flush, want, calls) in cases {
            let mut wire = Recorder { log: Vec::new(), room: *room, file_len: *file_len, flush: *flush };
            let mut out = OutBytes::Held { buf: b"HEAD".to_vec(), pos: *sent };
            let mut body = match then {
                Then::Nothing => None,
                Then::File(len) => {
                    let file = Arc::new(tempfile::tempfile().unwrap());
                    Some(Outgoing::File { file, offset: 0, end: *len })
                }
                Then::Shared(len) => Some(Outgoing::Shared { bytes: vec![b'x'; *len].into(), offset: 0, end: *len }),
            };
            let response = Response { out: &mut out, body: &mut body, after: *after };
            assert_eq!(send_response(&mut wire, response), *want, "{name}");
            assert_eq!(wire.log.join(", "), *calls, "{name}");
            if *want == Sent::Done {
                assert!(!out.unsent() && body.is_none(), "{name}: all out");
            }
        }
    }
}
