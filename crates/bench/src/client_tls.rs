//! The worker's https path: one function moves a TLS connection along as far as its socket
//! allows, whatever phase it is in, since a handshake reads and writes in every phase.
//!
//! The request is handed to rustls once (it holds it until the handshake is complete, then
//! encrypts it); ciphertext goes out while rustls has any and the socket takes it, and comes
//! in until the socket would block. rustls decrypts each record in its receive buffer; the
//! response head is copied into the connection's buffer (httparse needs it whole), body bytes
//! are counted where rustls holds them. The handshake's end (TCP connect to handshake
//! complete) and its kind, full or resumed, are recorded once per connection. Every rustls
//! error is a `tls` error; a connection closed before its handshake completed is one too.

use super::Worker;
use crate::conn::{Conn, Phase};
use crate::response::{Feed, ResponseReader};
use crate::stats::{classify_io, ErrorClass, Recorder};
use crate::tls::Session;
use std::io::{self, BufRead, Write};
use std::time::Instant;

/// What one pass over a TLS connection came to.
enum Step {
    /// Bytes moved; go again.
    Again,
    /// Nothing more until the socket is ready.
    Wait,
    /// The response is complete.
    Done,
    Fail(ErrorClass),
}

fn would_block(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::NotConnected)
}

impl Worker<'_> {
    /// Drives connection `ci` until it must wait for its socket, its response is complete,
    /// or it fails.
    pub(super) fn drive_tls(&mut self, ci: usize) {
        loop {
            match self.tls_step(ci) {
                Step::Again => continue,
                Step::Wait => return,
                Step::Done => return self.complete(ci),
                Step::Fail(class) => return self.fail(ci, class),
            }
        }
    }

    fn tls_step(&mut self, ci: usize) -> Step {
        let request = &self.requests.bytes[self.conns[ci].target];
        let Conn { stream, tls, buf, len, response, written, phase, wire, counted, .. } = &mut self.conns[ci];
        let (Some(stream), Some(session)) = (stream.as_mut(), tls.as_deref_mut()) else { return Step::Wait };
        let connecting = *phase == Phase::Connecting;
        // Out: the request as far as rustls takes it, and all the ciphertext the socket takes.
        loop {
            let mut took = 0;
            if *written < request.len() {
                match session.conn.writer().write(&request[*written..]) {
                    Ok(n) => took = n,
                    Err(e) => {
                        self.rec.note_tls_error(&format!("TLS: {}", crate::errors::describe_io(&e)));
                        return Step::Fail(ErrorClass::Tls);
                    }
                }
                *written += took;
            }
            let mut sent = 0;
            while session.conn.wants_write() {
                match session.conn.write_tls(stream) {
                    Ok(n) => {
                        sent += n;
                        *phase = Phase::Writing;
                    }
                    Err(e) if would_block(&e) => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Step::Fail(io_class(&mut self.rec, connecting, &e)),
                }
            }
            // Done, blocked (the socket is full, or not connected yet), or rustls took nothing.
            if *written == request.len() || session.conn.wants_write() || took + sent == 0 {
                break;
            }
        }
        if *phase == Phase::Writing && *written == request.len() && !session.conn.wants_write() {
            *phase = Phase::Reading;
        }
        // In: one read; only bytes read make another pass worth it (writing alone does not:
        // the answer comes as a readable event, and other connections get their turn).
        let mut moved = false;
        match session.conn.read_tls(stream) {
            Ok(n) => {
                *wire += n as u64;
                moved |= n > 0;
            }
            Err(e) if would_block(&e) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Step::Again,
            Err(e) => return Step::Fail(io_class(&mut self.rec, connecting, &e)),
        }
        if let Err(e) = session.conn.process_new_packets() {
            // The alert rustls queued tells the server why, if the socket takes it now.
            let _ = session.conn.write_tls(stream);
            self.rec.note_tls_error(&crate::tls_verify::describe(&e));
            return Step::Fail(ErrorClass::Tls);
        }
        if let Some((began, kind)) = session.handshake_done() {
            if self.rec.tls_negotiated.is_none() {
                self.rec.tls_negotiated = Some(session.negotiated());
            }
            if *counted {
                self.rec.handshake(Instant::now().saturating_duration_since(began), kind);
            }
        }
        if session.handshaking_since.is_some()
            && matches!(session.conn.reader().fill_buf(), Err(e) if e.kind() == io::ErrorKind::UnexpectedEof)
        {
            self.rec.note_tls_error(&"TLS: the server closed the connection during the handshake");
        }
        match plaintext(session, buf, len, response) {
            Step::Wait if moved => Step::Again,
            step => step,
        }
    }

    /// An idle kept-alive TLS connection became readable: a post-handshake message (a TLS
    /// 1.3 session ticket) keeps it; the server's close, an alert or unasked data drop it.
    pub(super) fn check_idle_tls(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let (Some(stream), Some(session)) = (c.stream.as_mut(), c.tls.as_deref_mut()) else { return };
        loop {
            match session.conn.read_tls(stream) {
                Err(e) if would_block(&e) => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(n) if n > 0 => {
                    let quiet = session.conn.process_new_packets().is_ok()
                        && matches!(session.conn.reader().fill_buf(), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
                    if !quiet {
                        return c.close();
                    }
                }
                _ => return c.close(),
            }
        }
    }
}

/// The class of a socket error: a connect error while connecting (its description kept).
fn io_class(rec: &mut Recorder, connecting: bool, e: &io::Error) -> ErrorClass {
    if connecting {
        rec.connect_failed(e)
    } else {
        classify_io(e)
    }
}

/// Feeds the plaintext rustls holds to the response: the head through the connection's
/// buffer, the body where it lies.
fn plaintext(session: &mut Session, buf: &mut [u8], len: &mut usize, response: &mut ResponseReader) -> Step {
    loop {
        let mut reader = session.conn.reader();
        let chunk = match reader.fill_buf() {
            // Empty: the server closed the session with close_notify.
            Ok([]) => return at_close(session, response),
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return at_close(session, response),
            Err(e) => return Step::Fail(classify_io(&e)),
        };
        let (taken, fed) = if response.in_body() {
            (chunk.len(), response.feed_body(chunk))
        } else {
            let taken = chunk.len().min(buf.len() - *len);
            buf[*len..*len + taken].copy_from_slice(&chunk[..taken]);
            *len += taken;
            (taken, response.feed(buf, len))
        };
        reader.consume(taken);
        match fed {
            Feed::NeedMore => {}
            Feed::Malformed => return Step::Fail(ErrorClass::Malformed),
            // Bytes beyond the response, unasked: as on plain http, the framing is broken.
            Feed::Done => match session.conn.reader().fill_buf() {
                Ok(rest) if !rest.is_empty() => return Step::Fail(ErrorClass::Malformed),
                _ => return Step::Done,
            },
        }
    }
}

/// The server closed the connection (cleanly or not): the end of a response read to the
/// close, a handshake that never completed, or a response cut short.
fn at_close(session: &Session, response: &ResponseReader) -> Step {
    if session.handshaking_since.is_some() {
        Step::Fail(ErrorClass::Tls)
    } else if response.complete_at_eof() {
        Step::Done
    } else {
        Step::Fail(ErrorClass::Closed)
    }
}
