//! One client connection's state: its socket (and, for https, its TLS session), where it is
//! in its request (a small state machine, Idle → Connecting → Writing → Reading → Idle), its
//! fixed read buffer, and the times the open loop measures from.

use super::response::ResponseReader;
use super::tls::Session;
use mio::net::TcpStream;
use std::time::Instant;

/// Each connection's read buffer; a response head must fit in it.
const READ_BUFFER: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Idle,
    Backoff(Instant),
    Connecting,
    Writing,
    Reading,
}

pub(super) struct Conn {
    pub stream: Option<TcpStream>,
    /// https: the TLS session over `stream` (present exactly when `stream` is).
    pub tls: Option<Box<Session>>,
    pub phase: Phase,
    pub buf: Box<[u8]>,
    pub len: usize,
    pub target: usize,
    pub written: usize,
    /// When the request should have been sent (open loop) or was issued (closed loop).
    pub intended: Instant,
    /// When work on the request began (connect or write).
    pub issued: Instant,
    /// Open loop: sent more than `late_after` after `intended`.
    pub late: bool,
    /// Issued after the warmup: recorded.
    pub counted: bool,
    pub wire: u64,
    pub response: ResponseReader,
}

impl Conn {
    pub fn new(response: &ResponseReader, now: Instant) -> Conn {
        Conn {
            stream: None,
            tls: None,
            phase: Phase::Idle,
            buf: vec![0; READ_BUFFER].into_boxed_slice(),
            len: 0,
            target: 0,
            written: 0,
            intended: now,
            issued: now,
            late: false,
            counted: false,
            wire: 0,
            response: response.clone(),
        }
    }

    /// Drops the connection: a TLS session that got past its handshake first queues a
    /// close_notify, sent if the socket takes it at once (so the server may keep the
    /// session resumable); never waited for.
    pub fn close(&mut self) {
        if let (Some(stream), Some(tls)) = (self.stream.as_mut(), self.tls.as_deref_mut()) {
            if !tls.conn.is_handshaking() {
                tls.conn.send_close_notify();
                let _ = tls.conn.write_tls(stream);
            }
        }
        self.tls = None;
        self.stream = None;
    }

    pub fn in_flight(&self) -> bool {
        matches!(self.phase, Phase::Connecting | Phase::Writing | Phase::Reading)
    }
}
