//! How client bytes reach a [`Session`] through the socket, plain or TLS: one read of the
//! non-blocking socket ([`Session::read_from`]) for drivers that read by readiness. A plain
//! read lands straight in the receive buffer; over TLS the ciphertext goes to rustls and
//! the plaintext it yields is moved into the receive buffer, plaintext rustls still holds
//! (more than one receive's room) taken first on the next read, so a driver must ask
//! [`Session::has_buffered_plaintext`] before it waits on the socket.

use super::{Pool, Session};
use crate::modes::tls::{Inflow, Tls};
use crate::server::Server;
use rustix::io::Errno;
use std::net::SocketAddr;
use std::os::fd::AsFd;

impl Session {
    /// A session for a connection `server` accepted: over TLS if it serves HTTPS.
    pub(crate) fn open(peer: SocketAddr, server: &Server) -> Session {
        let mut session = Session::new(peer);
        session.tls = server.tls.as_ref().and_then(Tls::new);
        session
    }

    /// Whether the connection speaks TLS.
    pub(crate) fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Over TLS, whether decrypted bytes wait in rustls (the socket may be drained).
    pub(crate) fn has_buffered_plaintext(&mut self) -> bool {
        self.tls.as_mut().is_some_and(|t| t.has_plaintext())
    }

    /// Whether a TLS handshake has begun and not ended: at its head deadline the
    /// connection is closed (there is no HTTP to answer a 408 with).
    pub(crate) fn is_handshaking(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.mid_handshake())
    }

    /// Reads the non-blocking socket `fd` once into the receive buffer (see the module docs).
    pub(crate) fn read_from<Fd: AsFd>(&mut self, fd: &Fd, pool: &mut Pool) -> Inflow {
        let Some(tls) = self.tls.as_mut() else {
            let space = self.recv_space(pool);
            let asked = space.len();
            return match rustix::io::read(fd, space) {
                Ok(0) => {
                    self.received(0, pool);
                    Inflow::Closed
                }
                Ok(n) => {
                    self.received(n, pool);
                    Inflow::Bytes { short: n < asked }
                }
                Err(Errno::AGAIN) => {
                    self.received(0, pool); // gives an unused buffer back
                    Inflow::Again
                }
                Err(Errno::INTR) => {
                    self.received(0, pool);
                    Inflow::Bytes { short: false }
                }
                Err(_) => Inflow::Closed,
            };
        };
        if !tls.has_plaintext() {
            match tls.read_from(fd) {
                Inflow::Bytes { .. } => {}
                other => return other,
            }
        }
        self.take_plaintext(pool);
        Inflow::Bytes { short: false }
    }

    /// Moves what plaintext rustls holds into the receive buffer, as far as it has room.
    fn take_plaintext(&mut self, pool: &mut Pool) {
        let Some(mut tls) = self.tls.take() else { return };
        loop {
            let space = self.recv_space(pool);
            let n = tls.take_plaintext(space); // 0 once none is left or there is no room
            self.received(n, pool); // 0 gives an unused buffer back
            if n == 0 {
                break;
            }
        }
        self.tls = Some(tls);
    }

    /// For the blocking driver's CGI answer, which does its own I/O: lends the TLS state.
    pub(crate) fn take_tls(&mut self) -> Option<Box<Tls>> {
        self.tls.take()
    }

    /// Takes the TLS state lent with [`Session::take_tls`] back.
    pub(crate) fn return_tls(&mut self, tls: Option<Box<Tls>>) {
        self.tls = tls;
    }
}
