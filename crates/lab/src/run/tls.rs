//! The certificates of the lab's HTTPS servers (`scheme = "https"`), made with rcgen at run
//! time, never committed: a CA and a leaf for `127.0.0.1` and `localhost` it signed, as
//! PEM files in the server's scratch directory (removed with it at the end of the run; a
//! key in the output directory would end up committed with a run's report). The server
//! gets the leaf and its key; the load verifies against the CA (`spidey bench --cacert`),
//! so the client does the work a real one does. The keys are ECDSA P-256 (rcgen's default).

use anyhow::Context;
use std::path::{Path, PathBuf};

/// The PEM files of one server's certificate.
pub(crate) struct Pki {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// Makes a CA and a server certificate in `dir` (created if missing).
pub(crate) fn make(dir: &Path) -> anyhow::Result<Pki> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "spidey lab CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let mut leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?;
    leaf.distinguished_name.push(DnType::CommonName, "localhost");
    let leaf_key = KeyPair::generate()?;
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer)?;
    let pki = Pki { ca: dir.join("ca.pem"), cert: dir.join("cert.pem"), key: dir.join("key.pem") };
    std::fs::write(&pki.ca, ca_cert.pem())?;
    std::fs::write(&pki.cert, leaf_cert.pem())?;
    std::fs::write(&pki.key, leaf_key.serialize_pem())?;
    Ok(pki)
}

#[cfg(test)]
mod tests {
    /// The files are PEM of the right kinds, and the key is not the CA's.
    #[test]
    fn makes_a_ca_a_leaf_and_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let pki = super::make(&dir.path().join("tls")).unwrap();
        let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
        let cases = [(&pki.ca, "-----BEGIN CERTIFICATE-----"), (&pki.cert, "-----BEGIN CERTIFICATE-----")];
        for (file, head) in cases {
            assert!(read(file).starts_with(head), "{}", file.display());
        }
        assert!(read(&pki.key).contains("PRIVATE KEY-----"));
        assert_ne!(read(&pki.ca), read(&pki.cert));
    }
}
