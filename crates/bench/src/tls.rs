//! `https://` targets: the rustls client configuration a run shares, built once from
//! [`TlsOptions`], and the [`Session`] each TLS connection carries.
//!
//! The connection is rustls' sans-IO [`ClientConnection`], driven by the worker's own
//! non-blocking socket code (`client_tls.rs`): rustls reads ciphertext into its receive
//! buffer and decrypts each record there, in place. rustls 0.23 then moves each record's
//! plaintext into a buffer of its own, and encrypts each record it sends into a new one:
//! one allocation per record each way, inside rustls (its unbuffered API does the same on
//! receive in 0.23). The worker adds none: the body is counted where rustls holds it.
//!
//! Certificates are verified against the system's CA bundle by default, against the
//! certificates of `--cacert` instead (a self-signed server certificate the file holds is
//! trusted as itself, [`Verifier`]), or not at all with `--insecure` (the handshake
//! signatures are still checked, so the peer must hold the key of the certificate it shows).
//! Session resumption (TLS 1.3 tickets, TLS 1.2 session IDs and tickets) is on unless
//! `--no-resume`; the session cache is shared by the run's threads.

use super::tls_verify::Verifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, HandshakeKind, RootCertStore, SignatureScheme};
use spidey_config::ConfigError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Debian's CA bundle (what curl and OpenSSL read there), unless `SSL_CERT_FILE` names another.
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// Which server certificates are trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Verify {
    /// The system's CA bundle (`SSL_CERT_FILE`, else Debian's path).
    #[default]
    System,
    /// Only the certificates in this PEM file.
    CaFile(PathBuf),
    /// Any certificate (for self-signed test servers); signatures are still checked.
    Insecure,
}

/// Whether a new connection may resume an earlier session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Resume {
    /// Resume with tickets or session IDs when the server offers them.
    #[default]
    On,
    /// Every new connection does a full handshake.
    Off,
}

/// How `https://` targets are loaded; plain `http://` runs ignore it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    pub verify: Verify,
    pub resume: Resume,
    /// Offer only these cipher suites (rustls' names, e.g. `TLS13_AES_128_GCM_SHA256`);
    /// empty for rustls' defaults. Only TLS 1.2 suites: only TLS 1.2 is offered.
    pub ciphers: Vec<String>,
}

/// How a completed handshake went, from rustls' [`HandshakeKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handshake {
    Full,
    Resumed,
}

/// What one target needs to open TLS connections: the shared configuration and the name
/// the URL gave (sent as SNI when it is a DNS name, and verified against the certificate).
#[derive(Clone)]
pub(crate) struct Endpoint {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl Endpoint {
    /// The endpoint of a target whose URL named `host`.
    pub fn new(config: &Arc<ClientConfig>, host: &str) -> Result<Endpoint, ConfigError> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| ConfigError(format!("'{host}' cannot be a TLS server name: {e}")))?;
        Ok(Endpoint { config: Arc::clone(config), name })
    }

    /// A new client session, its handshake timed from `connect_began`.
    pub fn session(&self, connect_began: Instant) -> Result<Box<Session>, rustls::Error> {
        let conn = ClientConnection::new(Arc::clone(&self.config), self.name.clone())?;
        Ok(Box::new(Session { conn, handshaking_since: Some(connect_began) }))
    }
}

/// One TLS connection's state beside its socket.
pub(crate) struct Session {
    pub conn: ClientConnection,
    /// When the TCP connect began, while the handshake is not complete; None after.
    pub handshaking_since: Option<Instant>,
}

impl Session {
    /// The protocol version, as OpenSSL writes it, and cipher suite negotiated, e.g.
    /// `TLSv1.3 TLS13_AES_128_GCM_SHA256`.
    pub fn negotiated(&self) -> String {
        let version = self.conn.protocol_version().map(version_name).unwrap_or_default();
        let suite = self.conn.negotiated_cipher_suite().map(|s| format!("{:?}", s.suite())).unwrap_or_default();
        format!("{version} {suite}")
    }

    /// If the handshake has just completed: when it began and what kind it was (once).
    pub fn handshake_done(&mut self) -> Option<(Instant, Handshake)> {
        if self.conn.is_handshaking() {
            return None;
        }
        let began = self.handshaking_since.take()?;
        let kind = match self.conn.handshake_kind() {
            Some(HandshakeKind::Resumed) => Handshake::Resumed,
            _ => Handshake::Full,
        };
        Some((began, kind))
    }
}

/// A protocol version as OpenSSL names it (`TLSv1.3`), not as rustls' Debug does (`TLSv1_3`).
fn version_name(v: rustls::ProtocolVersion) -> String {
    format!("{v:?}").replace('_', ".")
}

/// The client configuration for a run: ring, TLS 1.2 and 1.3, ALPN `http/1.1` (or `h2`).
pub(crate) fn client_config(opts: &TlsOptions, protocol: super::Protocol) -> Result<Arc<ClientConfig>, ConfigError> {
    let provider = Arc::new(provider(&opts.ciphers)?);
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| ConfigError(format!("TLS configuration: {e}")))?;
    let mut config = match &opts.verify {
        Verify::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
        Verify::CaFile(path) => {
            let (roots, pinned) = roots(path, "--cacert")?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier(roots, pinned, Some(path), &provider)?)
                .with_no_client_auth()
        }
        Verify::System => {
            let path = std::env::var_os("SSL_CERT_FILE").map_or_else(|| PathBuf::from(SYSTEM_BUNDLE), PathBuf::from);
            let (roots, _) = roots(&path, "the system CA bundle")
                .map_err(|e| ConfigError(format!("{}; give --cacert FILE or --insecure", e.0)))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier(roots, vec![], None, &provider)?)
                .with_no_client_auth()
        }
    };
    // `--h2` offers h2 alone: a server that cannot speak it fails the handshake or picks
    // nothing, and the run says so instead of measuring HTTP/1.1.
    config.alpn_protocols = vec![protocol.name().as_bytes().to_vec()];
    config.resumption = match opts.resume {
        Resume::On => Resumption::default(),
        Resume::Off => Resumption::disabled(),
    };
    Ok(Arc::new(config))
}

/// ring's provider, its suites narrowed to `ciphers` (all when empty).
fn provider(ciphers: &[String]) -> Result<CryptoProvider, ConfigError> {
    let mut provider = ring::default_provider();
    let name = |s: &rustls::SupportedCipherSuite| format!("{:?}", s.suite());
    if let Some(unknown) = ciphers.iter().find(|c| !provider.cipher_suites.iter().any(|s| name(s) == **c)) {
        let known: Vec<String> = provider.cipher_suites.iter().map(name).collect();
        return Err(ConfigError(format!("unknown --tls-cipher '{unknown}'; known: {}", known.join(", "))));
    }
    if !ciphers.is_empty() {
        provider.cipher_suites.retain(|s| ciphers.contains(&name(s)));
    }
    Ok(provider)
}

/// webpki's verification against `roots` (read from `ca_file`, or the system's), accepting
/// a `pinned` certificate presented as itself ([`Verifier`]).
fn verifier(
    roots: RootCertStore,
    pinned: Vec<CertificateDer<'static>>,
    ca_file: Option<&Path>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<Verifier>, ConfigError> {
    let v = Verifier::new(roots, pinned, ca_file.map(Path::to_path_buf), Arc::clone(provider))
        .map_err(|e| ConfigError(format!("TLS configuration: {e}")))?;
    Ok(Arc::new(v))
}

/// The certificates of a PEM file as trust anchors, and as they are; an unreadable file,
/// or one without a usable certificate, is a configuration error naming `what`.
fn roots(path: &Path, what: &str) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), ConfigError> {
    let bad = |why: String| ConfigError(format!("{what} {}: {why}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| bad(e.to_string()))?;
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(certs.iter().cloned());
    if added == 0 {
        return Err(bad("no usable certificate in it".into()));
    }
    Ok((store, certs))
}

/// `--insecure`: any certificate for any name, but the handshake signatures are verified
/// with the provider's algorithms, so the server must hold the certificate's key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_files_table() {
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap().cert.pem();
        let files = [("cert.pem", cert.as_str()), ("empty.pem", ""), ("junk.pem", "not a certificate\n")];
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let cases =
            [("cert.pem", None), ("empty.pem", Some("no usable certificate")), ("missing.pem", Some("No such file"))];
        for (name, want_err) in cases {
            let opts = TlsOptions { verify: Verify::CaFile(dir.path().join(name)), ..TlsOptions::default() };
            match (client_config(&opts, crate::Protocol::Http1), want_err) {
                (Ok(c), None) => assert_eq!(c.alpn_protocols, vec![b"http/1.1".to_vec()], "{name}"),
                (Err(e), Some(want)) => assert!(e.0.contains("--cacert") && e.0.contains(want), "{name}: {e}"),
                (got, _) => panic!("{name}: {:?}", got.map(|_| "a config")),
            }
        }
    }

    #[test]
    fn cipher_lists_table() {
        use rustls::CipherSuite::*;
        let cases: &[(&[&str], Option<&[rustls::CipherSuite]>)] = &[
            (&["TLS13_AES_128_GCM_SHA256"], Some(&[TLS13_AES_128_GCM_SHA256])),
            (&["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"], Some(&[TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256])),
            (&["TLS_AES_128_GCM_SHA256"], None),
        ];
        for (names, want) in cases {
            let ciphers: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            let got = provider(&ciphers).map(|p| p.cipher_suites.iter().map(|s| s.suite()).collect::<Vec<_>>());
            match (got, want) {
                (Ok(got), Some(want)) => assert_eq!(got, *want, "{names:?}"),
                (Err(e), None) => assert!(e.0.contains("known: TLS13_"), "{e}"),
                (got, _) => panic!("{names:?}: {got:?}"),
            }
        }
        let tls12 =
            TlsOptions { ciphers: vec!["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into()], ..TlsOptions::default() };
        assert!(client_config(&TlsOptions { verify: Verify::Insecure, ..tls12 }, crate::Protocol::Http1).is_ok());
    }

    #[test]
    fn versions_read_as_openssl_writes_them() {
        use rustls::ProtocolVersion::*;
        for (v, want) in [(TLSv1_3, "TLSv1.3"), (TLSv1_2, "TLSv1.2")] {
            assert_eq!(version_name(v), want);
        }
    }

    #[test]
    fn server_names_table() {
        let config =
            client_config(&TlsOptions { verify: Verify::Insecure, ..TlsOptions::default() }, crate::Protocol::Http1)
                .unwrap();
        for (host, ok) in [("localhost", true), ("127.0.0.1", true), ("::1", true), ("bad host", false)] {
            assert_eq!(Endpoint::new(&config, host).is_ok(), ok, "{host}");
        }
    }
}
