//! A connection's transport: what runs over its socket, chosen once when the connection
//! is accepted ([`Transport::choose`]), as nginx sets `c->send` once (SSL swaps it) and
//! pingora boxes one `IO` per connection. A transport runs over whatever [`Socket`] the
//! driver hands the session (`socket.rs`), by the one set of rules in `send.rs`
//! ([`Transport::carry`]): it only says how a byte is written ([`Wire`]), never when.
//!
//! - [`Transport::Clear`]: the socket's own writes (send(2), sendfile(2): no copy through
//!   user space; on `uring` the out bytes as a ring send) and reads.
//! - [`Transport::Tls`]: rustls (`tls.rs`). The same bytes encrypted a record at a time,
//!   a file body read with pread(2) a record at a time, the ciphertext written with the
//!   socket's buffer writes. Never corked, no sendfile (no kTLS here).
//!
//! Reads go through the transport too: it fills the session's receive buffer, lent to it
//! as an [`Intake`] (`session/input.rs`), from the socket or from bytes a driver received.

use super::intake::Intake;
use super::send::{self, Response, Sent};
use super::socket::{Inflow, Socket};
use super::tls::Tls;
use rustls::ServerConfig;
use std::sync::Arc;

/// How one connection's bytes are carried (see the module docs).
#[derive(Debug)]
pub(crate) enum Transport {
    /// The socket's bytes as they are.
    Clear,
    /// rustls over the socket (`--tls-cert`).
    Tls(Box<Tls>),
}

impl Transport {
    /// The transport of a connection just accepted: TLS if the server serves HTTPS
    /// (`tls`), else clear. `None` if it serves HTTPS and rustls cannot make this
    /// connection's state: the driver closes the connection, which fails closed (never
    /// plaintext on an HTTPS port).
    pub(crate) fn choose(tls: Option<&Arc<ServerConfig>>) -> Option<Transport> {
        Some(match tls {
            Some(config) => Transport::Tls(Tls::new(config).ok()?),
            None => Transport::Clear,
        })
    }

    /// Sends a framed response on `socket` by `send.rs`'s rules ([`send::send_response`])
    /// over this transport.
    pub(crate) fn carry<S: Socket>(&mut self, socket: &mut S, response: Response<'_>) -> Sent {
        match self {
            Transport::Clear => send::send_response(socket, response),
            Transport::Tls(tls) => send::send_response(&mut tls.wire(socket), response),
        }
    }

    /// Reads `socket` once into `intake`: clear bytes straight in; over TLS, ciphertext
    /// into rustls (unless it holds plaintext already) and the plaintext it yields moved
    /// in, as far as there is room.
    pub(crate) fn read_into<S: Socket>(&mut self, socket: &mut S, intake: &mut Intake<'_>) -> Inflow {
        let tls = match self {
            Transport::Clear => return intake.read_once(socket),
            Transport::Tls(tls) => tls,
        };
        if !tls.has_plaintext() {
            match tls.read_from(socket) {
                Inflow::Bytes { .. } => {}
                other => return other,
            }
        }
        take_plaintext(tls, intake);
        Inflow::Bytes { short: false }
    }

    /// Takes `data` a driver received from the socket into `intake`; false if the stream
    /// is broken (TLS: its alert written to `socket` if it takes it now) or, which never
    /// happens, the bytes do not fit.
    pub(crate) fn push_into<S: Socket>(&mut self, data: &[u8], socket: &mut S, intake: &mut Intake<'_>) -> bool {
        let tls = match self {
            Transport::Clear => return intake.push(data),
            Transport::Tls(tls) => tls,
        };
        let mut data = data;
        while !data.is_empty() {
            if tls.feed(&mut data, socket) == Inflow::Closed {
                return false;
            }
            take_plaintext(tls, intake);
        }
        true
    }

    /// Whether the transport holds bytes of the connection still to go out: ciphertext
    /// rustls wants written (a handshake flight, tickets, records).
    pub(crate) fn pending(&self) -> bool {
        match self {
            Transport::Clear => false,
            Transport::Tls(tls) => tls.wants_write(),
        }
    }

    /// Whether a TLS handshake has begun and not ended: the head deadline bounds it.
    pub(crate) fn mid_handshake(&self) -> bool {
        matches!(self, Transport::Tls(tls) if tls.mid_handshake())
    }

    /// The application protocol the TLS handshake agreed on (ALPN), if any.
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        match self {
            Transport::Tls(tls) => tls.alpn(),
            Transport::Clear => None,
        }
    }

    /// Whether client bytes wait in the transport already (plaintext rustls decrypted
    /// beyond what the receive buffer took): read them before waiting on the socket.
    pub(crate) fn holds_input(&mut self) -> bool {
        match self {
            Transport::Tls(tls) => tls.has_plaintext(),
            Transport::Clear => false,
        }
    }

    /// Before the server closes: TLS's close_notify alert, if the socket takes it now.
    pub(crate) fn close_notify<S: Socket>(&mut self, socket: &mut S) {
        if let Transport::Tls(tls) = self {
            tls.close_notify(socket);
        }
    }
}

/// Moves what plaintext rustls holds into `intake`, as far as it has room.
fn take_plaintext(tls: &mut Tls, intake: &mut Intake<'_>) {
    loop {
        let n = tls.take_plaintext(intake.space()); // 0 once none is left or there is no room
        intake.received(n); // 0 gives an unused buffer back
        if n == 0 {
            break;
        }
    }
}
