//! How client bytes reach a [`Session`] through its transport, chosen when its connection
//! is accepted ([`Session::open`]): one read of the driver's non-blocking [`Socket`]
//! ([`Session::read_from`]) for drivers that read by readiness, or bytes the driver
//! received itself ([`Session::push_bytes`], `uring`'s ring receives and `fork`'s bytes
//! read before the fork). Clear bytes land straight in the receive buffer; over TLS the
//! ciphertext goes to rustls and the plaintext it yields is moved into the receive buffer,
//! plaintext rustls still holds (more than one receive's room) taken first on the next
//! read, so a driver asks [`Session::holds_input`] before it waits on the socket.

use super::{Buffers, Session};
use crate::modes::intake::Intake;
use crate::modes::socket::{Direct, Inflow, Socket};
use crate::modes::transport::Transport;
use crate::server::Server;
use rustls::ServerConfig;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::Arc;

impl Session {
    /// A session for a connection `server` accepted, with its transport
    /// ([`Transport::choose`]): TLS if it serves HTTPS, else clear. `None` if it serves
    /// HTTPS and rustls could not make this connection's state: the driver closes the
    /// connection, which fails closed (a session without TLS on an HTTPS port is never
    /// made).
    pub(crate) fn open(peer: SocketAddr, server: &Server) -> Option<Session> {
        Session::open_with(peer, server.tls.as_ref())
    }

    fn open_with(peer: SocketAddr, tls: Option<&Arc<ServerConfig>>) -> Option<Session> {
        let mut session = Session::new(peer);
        session.transport = Transport::choose(tls)?;
        Some(session)
    }

    /// Whether client bytes wait in the transport already (plaintext rustls decrypted
    /// beyond one receive's room): read them ([`Session::read_from`]) without waiting,
    /// since the socket may be drained.
    pub(crate) fn holds_input(&mut self) -> bool {
        !self.lingering && self.transport.holds_input()
    }

    /// Whether a TLS handshake has begun and not ended: at its head deadline the
    /// connection is closed (there is no HTTP to answer a 408 with).
    pub(crate) fn is_handshaking(&self) -> bool {
        self.transport.mid_handshake()
    }

    /// Reads `socket` once into the receive buffer (see the module docs), taking what the
    /// transport holds first. A lingering session ([`Session::linger`]) reads the socket
    /// itself and drops what it reads, TLS or not: nothing more is answered, so nothing is
    /// decrypted.
    pub(crate) fn read_from<S: Socket>(&mut self, socket: &mut S, buffers: &mut Buffers) -> Inflow {
        let (transport, mut intake) = self.intake(buffers);
        match intake.dropping {
            true => intake.read_once(socket),
            false => transport.read_into(socket, &mut intake),
        }
    }

    /// Takes in `data`, at most [`super::RECV_ROOM`] bytes a driver received itself, from
    /// the connection's socket `fd`. All of it always fits ([`Intake::space`], and
    /// over TLS the plaintext is never longer than its ciphertext); should it ever not,
    /// or should TLS find the stream broken (its alert written to `fd` if it takes it now),
    /// this returns false: the driver must close the connection, as answering what
    /// follows a gap in the stream could answer bytes of a body.
    #[must_use]
    pub(crate) fn push_bytes<Fd: AsFd>(&mut self, data: &[u8], fd: &Fd, buffers: &mut Buffers) -> bool {
        let (transport, mut intake) = self.intake(buffers);
        let taken = match intake.dropping {
            true => intake.push(data),
            false => transport.push_into(data, &mut Direct(fd), &mut intake),
        };
        if !taken {
            self.release(buffers);
        }
        taken
    }

    /// The transport and, borrowed apart from it, the receive buffer it fills.
    pub(super) fn intake<'a>(&'a mut self, buffers: &'a mut Buffers) -> (&'a mut Transport, Intake<'a>) {
        let intake = Intake {
            inbuf: &mut self.inbuf,
            start: &mut self.start,
            end: &mut self.end,
            dropping: self.lingering,
            buffers,
        };
        (&mut self.transport, intake)
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
        // (the server's TLS configuration, the transport chosen)
        type Case = (Option<Arc<ServerConfig>>, Option<&'static str>);
        let cases: &[Case] = &[
            (None, Some("clear")),             // plain HTTP: a clear session
            (Some(config(None)), Some("tls")), // HTTPS: a TLS session
            (Some(config(Some(1))), None),     // HTTPS, rustls refuses: no session at all
        ];
        for (tls, want) in cases {
            let got = Session::open_with(peer, tls.as_ref()).map(|s| match s.transport {
                Transport::Clear => "clear",
                Transport::Tls(_) => "tls",
            });
            assert_eq!(got, *want, "{:?}", tls.as_ref().map(|c| c.max_fragment_size));
        }
    }
}
