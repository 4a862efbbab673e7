//! How a server certificate is verified (the system's CA bundle or `--cacert`), and how a
//! TLS failure reads in a report.
//!
//! [`Verifier`] is rustls' webpki verifier with two additions. A certificate the `--cacert`
//! file holds itself, presented as the server's, is accepted when webpki refuses it only
//! for being a CA certificate (`openssl req -x509` marks its self-signed certificates
//! `CA:TRUE`, which webpki will not take as an end entity; curl accepts them): webpki has
//! then already checked its dates, and the name is still checked here. And an untrusted
//! certificate that is self-signed is told apart, and so is one the `--cacert` file does
//! not vouch for, so the report can say which it was.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, Error, OtherError, RootCertStore, SignatureScheme};
use std::path::PathBuf;
use std::sync::Arc;

/// Why a certificate was refused, beyond what rustls names.
#[derive(Debug)]
enum Refusal {
    /// Signed by itself, and not in the system's trusted set.
    SelfSigned,
    /// Not vouched for by the `--cacert` file: `why` says what was found instead.
    NotTrustedBy { file: PathBuf, why: &'static str },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::SelfSigned => f.write_str("self-signed"),
            Refusal::NotTrustedBy { file, why } => write!(f, "not trusted by {} ({why})", file.display()),
        }
    }
}

impl std::error::Error for Refusal {}

/// webpki's verification, accepting an exact match of a pinned certificate (see the module
/// documentation) and naming a self-signed certificate when it refuses one.
#[derive(Debug)]
pub(crate) struct Verifier {
    webpki: Arc<WebPkiServerVerifier>,
    /// The `--cacert` file's certificates (none for the system bundle).
    pinned: Vec<CertificateDer<'static>>,
    /// The `--cacert` file (None for the system bundle), named when it does not vouch for
    /// the server's certificate.
    ca_file: Option<PathBuf>,
    provider: Arc<CryptoProvider>,
}

impl Verifier {
    pub fn new(
        roots: RootCertStore,
        pinned: Vec<CertificateDer<'static>>,
        ca_file: Option<PathBuf>,
        provider: Arc<CryptoProvider>,
    ) -> Result<Verifier, String> {
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Verifier { webpki, pinned, ca_file, provider })
    }

    /// Whether `cert` verifies with itself as its only trust anchor.
    fn self_signed(&self, cert: &CertificateDer<'_>, now: UnixTime) -> bool {
        let mut own = RootCertStore::empty();
        let Ok(parsed) = ParsedCertificate::try_from(cert) else { return false };
        if own.add(cert.clone().into_owned()).is_err() {
            return false;
        }
        let algorithms = self.provider.signature_verification_algorithms.all;
        match verify_server_cert_signed_by_trust_anchor(&parsed, &own, &[], now, algorithms) {
            Ok(()) => true,
            Err(e) => is_ca_used_as_end_entity(&e),
        }
    }
}

/// webpki's refusal of a CA certificate as a server's, which rustls passes on as an
/// "other" certificate error.
fn is_ca_used_as_end_entity(e: &Error) -> bool {
    matches!(e, Error::InvalidCertificate(CertificateError::Other(o)) if o.to_string().contains("CaUsedAsEndEntity"))
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let err = match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let pinned = self.pinned.iter().any(|p| p.as_ref() == end_entity.as_ref());
        if pinned && is_ca_used_as_end_entity(&err) {
            verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
            return Ok(ServerCertVerified::assertion());
        }
        let ca = is_ca_used_as_end_entity(&err);
        if !(ca || matches!(err, Error::InvalidCertificate(CertificateError::UnknownIssuer))) {
            return Err(err);
        }
        let self_signed = self.self_signed(end_entity, now);
        let refusal = match &self.ca_file {
            Some(file) => {
                let why = match (self_signed, ca) {
                    (true, _) => "self-signed",
                    (false, true) => "a CA certificate presented as the server's",
                    (false, false) => "unknown issuer",
                };
                Refusal::NotTrustedBy { file: file.clone(), why }
            }
            None if self_signed => Refusal::SelfSigned,
            None => return Err(err),
        };
        Err(CertificateError::Other(OtherError(Arc::new(refusal))).into())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// A TLS failure as a sentence for the report, starting `TLS: `.
pub(crate) fn describe(e: &Error) -> String {
    const TRUST: &str = "pass --cacert FILE or --insecure";
    let why = match e {
        Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => format!("certificate not trusted (unknown issuer); {TRUST}"),
            CertificateError::Other(o) => match o.0.downcast_ref::<Refusal>() {
                Some(Refusal::SelfSigned) => format!("certificate not trusted (self-signed); {TRUST}"),
                Some(Refusal::NotTrustedBy { file, why }) => {
                    format!("certificate not trusted by the CA file given to --cacert, {} ({why})", file.display())
                }
                None if is_ca_used_as_end_entity(e) => {
                    format!("the server's certificate is a CA certificate, not trusted; {TRUST}")
                }
                None => format!("certificate refused ({o})"),
            },
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "certificate not valid for the URL's host name".to_string()
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => "certificate expired".to_string(),
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "certificate not valid yet".to_string()
            }
            CertificateError::Revoked => "certificate revoked".to_string(),
            CertificateError::BadSignature => "certificate signature invalid".to_string(),
            CertificateError::BadEncoding => "certificate malformed".to_string(),
            other => format!("certificate refused ({})", words(&format!("{other:?}"))),
        },
        Error::AlertReceived(alert) => format!("the server ended the handshake ({})", words(&format!("{alert:?}"))),
        Error::PeerIncompatible(why) => {
            format!("no protocol in common with the server ({})", words(&format!("{why:?}")))
        }
        Error::InvalidMessage(_) | Error::InappropriateMessage { .. } => {
            "the server's answer is not TLS (a plain http:// server?)".to_string()
        }
        Error::DecryptError => "a record could not be decrypted".to_string(),
        Error::NoCertificatesPresented => "the server sent no certificate".to_string(),
        other => other.to_string(),
    };
    format!("TLS: {why}")
}

/// `NoCipherSuitesInCommon` → `no cipher suites in common`; a variant's fields are dropped.
fn words(debug: &str) -> String {
    let name = debug.split(['(', '{', ' ']).next().unwrap_or(debug);
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

    /// A certificate for `names`, self-signed; `ca` marks it CA:TRUE as `openssl req -x509` does.
    fn self_signed(names: &[&str], ca: bool) -> CertificateDer<'static> {
        let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, format!("{} {}", names[0], fastrand::u32(..)));
        if ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        params.self_signed(&KeyPair::generate().unwrap()).unwrap().der().clone()
    }

    /// A CA and a leaf for `names` that it signed.
    fn issued(names: &[&str]) -> (CertificateDer<'static>, CertificateDer<'static>) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, format!("test CA {}", fastrand::u32(..)));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().unwrap();
        let ca = params.self_signed(&key).unwrap();
        let issuer = rcgen::Issuer::new(params, key);
        let leaf = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        let leaf = leaf.signed_by(&KeyPair::generate().unwrap(), &issuer).unwrap();
        (ca.der().clone(), leaf.der().clone())
    }

    /// `presented` verified for `host` against `pinned` as a `--cacert` file's contents (the
    /// system's bundle stood in for by an unrelated CA when `pinned` is empty).
    fn verify(pinned: &[&CertificateDer<'static>], presented: &CertificateDer<'_>, host: &str) -> Result<(), Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        let mut pins = Vec::new();
        for p in pinned {
            let _ = roots.add((*p).clone());
            pins.push((*p).clone());
        }
        if roots.is_empty() {
            roots.add(self_signed(&["unrelated.test"], true)).unwrap();
        }
        let ca_file = (!pinned.is_empty()).then(|| PathBuf::from("ca.pem"));
        let v = Verifier::new(roots, pins, ca_file, provider).unwrap();
        let name = ServerName::try_from(host.to_string()).unwrap();
        v.verify_server_cert(presented, &[], &name, &[], UnixTime::now()).map(|_| ())
    }

    #[test]
    fn pinned_certificates_table() {
        let ca_cert = self_signed(&["localhost", "127.0.0.1"], true);
        let leaf = self_signed(&["localhost"], false);
        let other = self_signed(&["localhost"], true);
        let (issuer, signed) = issued(&["localhost"]);
        // (pinned, presented, host, the report's sentence; None: accepted)
        let cases: &[(&[&CertificateDer], &CertificateDer, &str, Option<&str>)] = &[
            (&[&ca_cert], &ca_cert, "localhost", None),
            (&[&ca_cert], &ca_cert, "127.0.0.1", None),
            (&[&ca_cert], &ca_cert, "example.com", Some("not valid for the URL's host name")),
            (&[&leaf], &leaf, "localhost", None),
            (
                &[&other],
                &ca_cert,
                "localhost",
                Some("not trusted by the CA file given to --cacert, ca.pem (self-signed)"),
            ),
            (
                &[&other],
                &signed,
                "localhost",
                Some("not trusted by the CA file given to --cacert, ca.pem (unknown issuer)"),
            ),
            (&[&issuer], &signed, "localhost", None),
            (
                &[],
                &ca_cert,
                "localhost",
                Some("certificate not trusted (self-signed); pass --cacert FILE or --insecure"),
            ),
            (&[], &leaf, "localhost", Some("certificate not trusted (self-signed); pass --cacert FILE or --insecure")),
        ];
        for (i, (pinned, presented, host, want)) in cases.iter().enumerate() {
            match (verify(pinned, presented, host), want) {
                (Ok(()), None) => {}
                (Err(e), Some(want)) => assert!(describe(&e).contains(want), "case {i}: {}", describe(&e)),
                (got, _) => panic!("case {i}: {got:?}"),
            }
        }
    }

    #[test]
    fn sentences_table() {
        use rustls::{AlertDescription, PeerIncompatible};
        let cases = [
            (
                Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "TLS: certificate not trusted (unknown issuer); pass --cacert FILE or --insecure",
            ),
            (Error::InvalidCertificate(CertificateError::Expired), "TLS: certificate expired"),
            (
                Error::AlertReceived(AlertDescription::HandshakeFailure),
                "TLS: the server ended the handshake (handshake failure)",
            ),
            (
                Error::PeerIncompatible(PeerIncompatible::NoCipherSuitesInCommon),
                "TLS: no protocol in common with the server (no cipher suites in common)",
            ),
            (Error::DecryptError, "TLS: a record could not be decrypted"),
        ];
        for (e, want) in cases {
            assert_eq!(describe(&e), want);
        }
    }
}
