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
//! Reads go through the transport too (`session/input.rs`).

use super::send::{self, Response, Sent};
use super::socket::Socket;
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
