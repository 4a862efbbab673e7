//! A connection's transport: how the bytes of its responses reach the client, chosen once
//! when the connection is accepted ([`Transport::choose`]), as nginx sets `c->send` once
//! (SSL swaps it) and pingora boxes one `IO` per connection. Every transport is driven by
//! the one set of rules in `send.rs` ([`Transport::send`]): a transport only says how a
//! byte is written ([`Wire`]), never when.
//!
//! - [`Transport::Plain`]: the socket itself. Out bytes and shared bodies with send(2)
//!   ([`send::send_bytes`]), file bodies with sendfile(2): no copy through user space.
//! - [`Transport::Tls`]: rustls (`tls.rs`). The same bytes encrypted a record at a time,
//!   a file body read with pread(2) a record at a time; the ciphertext written with
//!   [`send::send_bytes`]. Never corked, no sendfile (no kTLS here).
//! - [`Transport::Ring`]: a plain `uring` connection. The out bytes leave as a ring send,
//!   the buffer lent to the ring until its completion (or, when they are all that is left
//!   of a keep-alive response, from a copy sent ahead of the next receive); the body as on
//!   a plain socket (`transport/ring.rs`).
//!
//! Reads go through the transport too (`session/wire.rs`): plain reads into the receive
//! buffer, TLS through rustls; a ring connection's receives are the ring's (`uring`).

mod ring;

use super::send::{self, Response, Sent, Wire};
use super::tls::Tls;
use rustix::io::Errno;
use rustls::ServerConfig;
use std::fs::File;
use std::os::fd::AsFd;
use std::sync::Arc;

pub(crate) use ring::{Ahead, RingSend, Submitted};

/// Where a connection's next client bytes come from (`Session::inbound`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inbound {
    /// Decrypted bytes rustls already holds: read them (`Session::read_from`) before
    /// waiting on the socket, which may be drained.
    Held,
    /// The socket: wait until it is readable, then read it (`Session::read_from`).
    Socket,
    /// The ring's receives (`uring`'s plain connections): the bytes of each completion go
    /// in with `Session::push_bytes`.
    Ring,
}

/// How one connection's bytes reach its client (see the module docs).
#[derive(Debug)]
pub(crate) enum Transport {
    /// send(2) and sendfile(2) on the socket.
    Plain,
    /// rustls over the socket (`--tls-cert`).
    Tls(Box<Tls>),
    /// `uring`'s ring sends for the out bytes. `lent`: the out buffer is the ring's, lent
    /// to a send in flight until its completion, which the next send takes back
    /// ([`RingSend::returned`]).
    Ring { lent: bool },
}

impl Transport {
    /// The transport of a connection just accepted: TLS if the server serves HTTPS
    /// (`tls`), else the ring's if the driver sends through one (`ring`), else plain.
    /// `None` if it serves HTTPS and rustls cannot make this connection's state: the
    /// driver closes the connection, which fails closed (never plaintext on an HTTPS port).
    pub(crate) fn choose(tls: Option<&Arc<ServerConfig>>, ring: bool) -> Option<Transport> {
        Some(match tls {
            Some(config) => Transport::Tls(Tls::new(config).ok()?),
            None if ring => Transport::Ring { lent: false },
            None => Transport::Plain,
        })
    }

    /// Sends a framed response on the non-blocking socket `fd` by `send.rs`'s rules
    /// ([`send::send_response`]) over this transport. `ring`: the loop's ring, which a
    /// ring transport sends through (without it, its send fails).
    pub(crate) fn send<Fd: AsFd>(&mut self, fd: &Fd, ring: Option<&mut RingSend<'_>>, response: Response<'_>) -> Sent {
        match self {
            Transport::Plain => send::send_response(&mut Plain(fd), response),
            Transport::Tls(tls) => send::send_response(&mut tls.wire(fd), response),
            Transport::Ring { lent } => match ring {
                Some(ring) => {
                    ring.take_back(response.out, response.pos, lent);
                    send::send_response(&mut ring.wire(fd, lent), response)
                }
                None => {
                    debug_assert!(false, "a ring transport sent without its ring");
                    Sent::Failed
                }
            },
        }
    }

    /// Whether the transport holds bytes of the connection still to go out: ciphertext
    /// rustls wants written (a handshake flight, tickets, records), or the out buffer lent
    /// to a ring send in flight.
    pub(crate) fn pending(&self) -> bool {
        match self {
            Transport::Plain => false,
            Transport::Tls(tls) => tls.wants_write(),
            Transport::Ring { lent } => *lent,
        }
    }

    /// The application protocol the TLS handshake agreed on (ALPN), if any.
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        match self {
            Transport::Tls(tls) => tls.alpn(),
            _ => None,
        }
    }

    /// Whether a TLS handshake has begun and not ended: the head deadline bounds it.
    pub(crate) fn mid_handshake(&self) -> bool {
        matches!(self, Transport::Tls(tls) if tls.mid_handshake())
    }

    /// Where the connection's next client bytes come from ([`Inbound`]).
    pub(crate) fn inbound(&mut self) -> Inbound {
        match self {
            Transport::Plain => Inbound::Socket,
            Transport::Tls(tls) => {
                if tls.has_plaintext() {
                    Inbound::Held
                } else {
                    Inbound::Socket
                }
            }
            Transport::Ring { .. } => Inbound::Ring,
        }
    }

    /// Before the server closes: TLS's close_notify alert, if the socket takes it now.
    pub(crate) fn close_notify<Fd: AsFd>(&mut self, fd: &Fd) {
        if let Transport::Tls(tls) = self {
            tls.close_notify(fd);
        }
    }
}

/// The plain socket as a [`Wire`].
struct Plain<'a, Fd: AsFd>(&'a Fd);

impl<Fd: AsFd> Wire for Plain<'_, Fd> {
    fn cork(&mut self) {
        let _ = rustix::net::sockopt::set_tcp_cork(self.0, true);
    }

    fn write(&mut self, bytes: &[u8], more: bool) -> Result<usize, Errno> {
        send::send_bytes(self.0, bytes, more)
    }

    /// sendfile(2): the file's bytes never pass through user space (with `--copy-loop`,
    /// a read and a send through a buffer instead: [`send::copy_file`]).
    fn write_file(&mut self, file: &File, offset: u64, len: usize) -> Result<usize, Errno> {
        if let Some(copied) = send::copy_file(self.0, file, offset, len) {
            return copied;
        }
        let mut offset = offset;
        rustix::fs::sendfile(self.0, file, Some(&mut offset), len)
    }
}
