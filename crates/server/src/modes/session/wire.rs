//! A [`Session`]'s transport, chosen when its connection is accepted ([`Session::open`]),
//! and how client bytes reach the session through it: one read of the non-blocking socket
//! ([`Session::read_from`]) for drivers that read by readiness. A plain read lands
//! straight in the receive buffer; over TLS the ciphertext goes to rustls and
//! the plaintext it yields is moved into the receive buffer, plaintext rustls still holds
//! (more than one receive's room) taken first on the next read, so a driver must ask
//! [`Session::inbound`] before it waits on the socket.

use super::{Buffers, Session};
use crate::modes::tls::Inflow;
use crate::modes::transport::{Inbound, Transport};
use crate::server::Server;
use rustix::io::Errno;
use rustls::ServerConfig;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::Arc;

impl Session {
    /// A session for a connection `server` accepted, with its transport
    /// ([`Transport::choose`]): TLS if it serves HTTPS, else the ring's if the driver sends
    /// through one (`ring`), else plain. `None` if it serves HTTPS and rustls could not
    /// make this connection's state: the driver closes the connection, which fails closed
    /// (a session without TLS on an HTTPS port is never made).
    pub(crate) fn open(peer: SocketAddr, server: &Server, ring: bool) -> Option<Session> {
        Session::open_with(peer, server.tls.as_ref(), ring)
    }

    fn open_with(peer: SocketAddr, tls: Option<&Arc<ServerConfig>>, ring: bool) -> Option<Session> {
        let mut session = Session::new(peer);
        session.transport = Transport::choose(tls, ring)?;
        Some(session)
    }

    /// Where the connection's next client bytes come from: plaintext rustls holds already
    /// (read it without waiting: the socket may be drained), the socket, or the ring's
    /// receives (`uring`).
    pub(crate) fn inbound(&mut self) -> Inbound {
        self.transport.inbound()
    }

    /// Whether a TLS handshake has begun and not ended: at its head deadline the
    /// connection is closed (there is no HTTP to answer a 408 with).
    pub(crate) fn is_handshaking(&self) -> bool {
        self.transport.mid_handshake()
    }

    /// Reads the non-blocking socket `fd` once into the receive buffer (see the module docs).
    /// A lingering session ([`Session::linger`]) reads the socket itself and drops what it
    /// reads, TLS or not: nothing more is answered, so nothing is decrypted.
    pub(crate) fn read_from<Fd: AsFd>(&mut self, fd: &Fd, buffers: &mut Buffers) -> Inflow {
        let tls = match &mut self.transport {
            Transport::Tls(tls) if !self.lingering => tls,
            _ => return self.read_plain(fd, buffers),
        };
        if !tls.has_plaintext() {
            match tls.read_from(fd) {
                Inflow::Bytes { .. } => {}
                other => return other,
            }
        }
        self.take_plaintext(buffers);
        Inflow::Bytes { short: false }
    }

    /// One read(2) of the socket straight into the receive buffer.
    fn read_plain<Fd: AsFd>(&mut self, fd: &Fd, buffers: &mut Buffers) -> Inflow {
        let space = self.recv_space(buffers);
        let asked = space.len();
        match rustix::io::read(fd, space) {
            Ok(0) => {
                self.received(0, buffers);
                Inflow::Closed
            }
            Ok(n) => {
                self.received(n, buffers);
                Inflow::Bytes { short: n < asked }
            }
            Err(Errno::AGAIN) => {
                self.received(0, buffers); // gives an unused buffer back
                Inflow::Again
            }
            Err(Errno::INTR) => {
                self.received(0, buffers);
                Inflow::Bytes { short: false }
            }
            Err(_) => Inflow::Closed,
        }
    }

    /// Moves what plaintext rustls holds into the receive buffer, as far as it has room.
    fn take_plaintext(&mut self, buffers: &mut Buffers) {
        // Taken out while the receive buffer is borrowed, then put back.
        let mut transport = std::mem::replace(&mut self.transport, Transport::Plain);
        if let Transport::Tls(tls) = &mut transport {
            loop {
                let space = self.recv_space(buffers);
                let n = tls.take_plaintext(space); // 0 once none is left or there is no room
                self.received(n, buffers); // 0 gives an unused buffer back
                if n == 0 {
                    break;
                }
            }
        }
        self.transport = transport;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server configuration with the test's own self-signed certificate; `fragment`:
    /// its largest record (rustls refuses to make a connection with one under 32).
    fn config(fragment: Option<usize>) -> Arc<ServerConfig> {
        let names = vec!["localhost".to_string()];
        let rcgen::CertifiedKey { cert, signing_key } = rcgen::generate_simple_self_signed(names).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(signing_key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .unwrap();
        config.max_fragment_size = fragment;
        Arc::new(config)
    }

    /// When rustls cannot make a connection's state, no session is made: the driver closes
    /// the connection rather than serve plaintext on the HTTPS port.
    #[test]
    fn https_session_fails_closed_without_tls_state() {
        let peer = SocketAddr::from(([127, 0, 0, 1], 1));
        assert!(
            crate::modes::tls::Tls::new(&config(Some(1))).is_err(),
            "the seam: rustls refuses a 1-byte record limit"
        );
        // (the server's TLS configuration, a ring driver, the transport chosen)
        type Case = (Option<Arc<ServerConfig>>, bool, Option<&'static str>);
        let cases: &[Case] = &[
            (None, false, Some("plain")),             // plain HTTP: a plain session
            (None, true, Some("ring")),               // plain HTTP on `uring`: its ring
            (Some(config(None)), false, Some("tls")), // HTTPS: a TLS session
            (Some(config(None)), true, Some("tls")),  // HTTPS on `uring` too
            (Some(config(Some(1))), false, None),     // HTTPS, rustls refuses: no session at all
            (Some(config(Some(1))), true, None),
        ];
        for (tls, ring, want) in cases {
            let got = Session::open_with(peer, tls.as_ref(), *ring).map(|s| match s.transport {
                Transport::Plain => "plain",
                Transport::Tls(_) => "tls",
                Transport::Ring { .. } => "ring",
            });
            assert_eq!(got, *want, "{:?} ring {ring}", tls.as_ref().map(|c| c.max_fragment_size));
        }
    }
}
