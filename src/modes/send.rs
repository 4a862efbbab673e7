//! Where the bytes of a response leave, for every driver: the blocking one
//! (`blocking.rs`) and the event loops' [`Session`](super::session::Session) alike.
//!
//! A framed response is its out bytes (the head and any small in-memory body, one buffer)
//! and then an optional [`Outgoing`] body: a file moved without a copy through user space,
//! or bytes shared with other responses (a kept encoding over [`COPY_MAX`]), sent from
//! the one shared buffer rather than copied into each connection's. This module
//! holds the rules for sending them, written once: the out bytes leave with MSG_MORE when
//! a file follows (head and first file bytes share a segment); the connection's last
//! response corks the socket when a file follows ([`cork_before_head`]); a file moves with
//! sendfile(2) until done or the socket is full, and a file that shrank under us fails the
//! response ([`send_body`]). The sockets are non-blocking: how a driver waits for room
//! (poll(2), epoll, a ring poll) is its own business.
//!
//! With `--copy-loop BYTES` ([`use_copy_loop`], seed 004's 5000-byte loop) a file body
//! instead goes through a user-space buffer of BYTES, a pread(2) and a send per buffer,
//! in every driver. A send that takes only part of a buffer advances the offset by what
//! it took, and the next round reads from there (the seed's blocking send waited
//! instead; here the socket is non-blocking and the driver waits for room).
//!
//! [`send_bytes`] is the one place buffer bytes are written to a client socket by a system
//! call and [`send_body`] the one place file bytes are; `uring`'s ring send
//! (`spidey_sys::uring::Ring::send`) is the one other kind of write, of the same out bytes.
//! A TLS connection (`tls.rs`) encrypts the same bytes and writes the ciphertext through
//! [`send_bytes`] as well (file bodies read a record at a time, never with sendfile);
//! `uring` sends a TLS connection's ciphertext that way too, not with a ring send.

use super::tls::Tls;
use crate::exchange::{Body, CgiResponse};
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
    /// `end - offset` bytes of `file` from `offset` (sendfile: no copy through user space).
    /// INVARIANT: `offset <= end` once a send has run; `offset == end` means all is out.
    File { file: std::sync::Arc<File>, offset: u64, end: u64 },
    /// `bytes[offset..end]`, memory shared with other responses (a kept encoding).
    /// INVARIANT: `offset <= end <= bytes.len()`; `offset == end` means all is out.
    Shared { bytes: std::sync::Arc<[u8]>, offset: usize, end: usize },
    /// A CGI script's output, pumped into the out bytes as the script writes it (by the
    /// session, `session/cgi.rs`); dropping it kills and reaps the script.
    Cgi(Box<CgiResponse>),
}

/// How far a send got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// The whole response is out.
    Done,
    /// The socket is full: wait until it is writable.
    Blocked,
    /// The peer left (EPIPE, ECONNRESET) or the file shrank: close.
    Failed,
    /// A CGI script wants request-body bytes: read the socket, then send again.
    NeedRead,
    /// A CGI script is running: wait for its pipes (`Session::script_fds`) or its
    /// deadline, then send again.
    WaitScript,
}

/// Appends `head` and an in-memory body to `out`; returns the body to move after them.
pub(crate) fn frame(out: &mut Vec<u8>, head: &[u8], body: Body) -> Option<Outgoing> {
    out.extend_from_slice(head);
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
        Body::Cgi(cgi) => Some(Outgoing::Cgi(cgi)),
    }
}

/// Whether file (or shared) bytes are still to move after the out bytes.
pub(crate) fn file_follows(body: &Option<Outgoing>) -> bool {
    match body {
        Some(Outgoing::File { offset, end, .. }) => offset < end,
        Some(Outgoing::Shared { offset, end, .. }) => offset < end,
        _ => false,
    }
}

/// Sends a framed response on the non-blocking socket `fd`: `out[*pos..]`, then a file
/// body, until done, the socket is full, or the peer is gone. `last`: the connection
/// closes after this response. A CGI body is left to the caller ([`Sent::Done`] once the
/// out bytes are out). Over TLS (`tls`) the same bytes are encrypted and leave through
/// [`send_bytes`] too ([`Tls::send_response`]: no sendfile, no cork).
pub(crate) fn send_response<Fd: AsFd>(
    fd: &Fd,
    tls: Option<&mut Tls>,
    out: &[u8],
    pos: &mut usize,
    body: &mut Option<Outgoing>,
    last: bool,
) -> Sent {
    if let Some(tls) = tls {
        return tls.send_response(fd, out, pos, body);
    }
    if *pos == 0 {
        cork_before_head(fd, last, body);
    }
    let more = file_follows(body);
    while *pos < out.len() {
        match send_bytes(fd, &out[*pos..], more) {
            Ok(n) => *pos += n,
            Err(Errno::AGAIN) => return Sent::Blocked,
            Err(Errno::INTR) => {}
            Err(_) => return Sent::Failed,
        }
    }
    send_body(fd, body)
}

/// Before the head of the connection's `last` response goes out with a file body after
/// it: corks the socket (TCP_CORK, tcp(7)), so the body's last partial segment leaves
/// with the FIN, one packet instead of two (a loopback packet costs the sender the
/// receiver's processing too), as nginx's `tcp_nopush` does: close(2) sends tail and FIN
/// at once. With input left unread the driver half-closes first (`Session::linger`),
/// since a close that resets would drop the corked tail instead of sending it. Call it
/// once, before the head's first byte; a failure only costs the extra packet.
pub(crate) fn cork_before_head<Fd: AsFd>(fd: &Fd, last: bool, body: &Option<Outgoing>) {
    if last && file_follows(body) {
        let _ = rustix::net::sockopt::set_tcp_cork(fd, true);
    }
}

/// Writes buffer bytes to the client socket `fd`: the one place that does (see the module
/// docs). `more`: more of the response follows at once (MSG_MORE). Never raises SIGPIPE.
pub(crate) fn send_bytes<Fd: AsFd>(fd: &Fd, bytes: &[u8], more: bool) -> Result<usize, Errno> {
    let flags = if more { SendFlags::MORE } else { SendFlags::empty() };
    rustix::net::send(fd, bytes, flags | SendFlags::NOSIGNAL)
}

/// Moves a file body with sendfile(2) (through the copy loop with `--copy-loop`; a shared
/// one with [`send_bytes`]) on the non-blocking socket `fd` until it is all out (the body
/// becomes `None`), the socket is full, or it fails: the peer left, or the file shrank under us (sendfile moves nothing
/// before the end we framed). Any other body (none, or a CGI one, which the session pumps)
/// is [`Sent::Done`] at once.
pub(crate) fn send_body<Fd: AsFd>(fd: &Fd, body: &mut Option<Outgoing>) -> Sent {
    loop {
        if let Some(Outgoing::Shared { bytes, offset, end }) = body {
            if *offset >= *end {
                *body = None;
                return Sent::Done;
            }
            match send_bytes(fd, &bytes[*offset..*end], false) {
                Ok(n) => *offset += n,
                Err(Errno::AGAIN) => return Sent::Blocked,
                Err(Errno::INTR) => {}
                Err(_) => return Sent::Failed,
            }
            continue;
        }
        let Some(Outgoing::File { file, offset, end }) = body else {
            return Sent::Done;
        };
        if *offset >= *end {
            *body = None;
            return Sent::Done;
        }
        let left = usize::try_from(*end - *offset).unwrap_or(usize::MAX);
        if let Some(&size) = COPY_LOOP.get() {
            match copy_round(fd, file, offset, left.min(size)) {
                Sent::Done => continue,
                other => return other,
            }
        }
        match rustix::fs::sendfile(fd, &*file, Some(offset), left.min(1 << 30)) {
            Ok(0) => return Sent::Failed, // the file shrank under us
            Ok(_) => {}
            Err(Errno::AGAIN) => return Sent::Blocked,
            Err(Errno::INTR) => {}
            Err(_) => return Sent::Failed,
        }
    }
}

/// One round of the copy loop: reads up to `want` bytes of `file` at `offset` into this
/// thread's buffer and sends them; advances `offset` by what the socket took.
/// [`Sent::Done`]: a round went out (whole or in part), go on.
fn copy_round<Fd: AsFd>(fd: &Fd, file: &File, offset: &mut u64, want: usize) -> Sent {
    COPY_BUF.with_borrow_mut(|buf| {
        if buf.len() < want {
            buf.resize(want, 0);
        }
        let read = loop {
            match rustix::io::pread(file, &mut buf[..want], *offset) {
                Ok(0) => return Sent::Failed, // the file shrank under us
                Ok(n) => break n,
                Err(Errno::INTR) => {}
                Err(_) => return Sent::Failed,
            }
        };
        loop {
            match send_bytes(fd, &buf[..read], false) {
                Ok(n) => {
                    *offset += n as u64;
                    return Sent::Done;
                }
                Err(Errno::AGAIN) => return Sent::Blocked,
                Err(Errno::INTR) => {}
                Err(_) => return Sent::Failed,
            }
        }
    })
}
