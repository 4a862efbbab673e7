//! Real TLS servers that are not Spidey, for `spidey bench https://`: nginx from Debian's
//! package (OpenSSL, its `ssl` module) and Python's `ssl` under `http.server`, each serving a
//! fixture directory with a certificate rcgen makes at test time (no key is committed).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub use crate::common::nginx::Nginx;

/// Test certificates in a temporary directory: `ca.pem` (a CA), `cert.pem`/`key.pem` (a
/// leaf for localhost and 127.0.0.1 signed by it), `other-ca.pem` (a CA that signed nothing
/// here), `self.pem`/`self-key.pem` (a self-signed leaf).
pub struct Certs {
    pub dir: tempfile::TempDir,
}

impl Certs {
    pub fn new() -> Certs {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| std::fs::write(dir.path().join(name), text).unwrap();
        let ca = |name: &str| {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.distinguished_name.push(DnType::CommonName, name);
            let key = KeyPair::generate().unwrap();
            let cert = params.self_signed(&key).unwrap();
            (cert, Issuer::new(params, key))
        };
        let (ca_cert, issuer) = ca("spidey bench test CA");
        let (other_ca, _) = ca("another test CA");
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(names.clone()).unwrap().signed_by(&leaf_key, &issuer).unwrap();
        let self_signed = rcgen::generate_simple_self_signed(names).unwrap();
        write("ca.pem", ca_cert.pem());
        write("other-ca.pem", other_ca.pem());
        write("cert.pem", leaf.pem());
        write("key.pem", leaf_key.serialize_pem());
        write("self.pem", self_signed.cert.pem());
        write("self-key.pem", self_signed.signing_key.serialize_pem());
        Certs { dir }
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// Which TLS versions a server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    Tls13,
    Tls12Only,
}

/// nginx with `ssl`, session tickets and a session cache, serving `root` over TLS with
/// `cert`/`key` (PEM files); see [`crate::common::nginx`].
pub fn nginx_tls(root: &Path, cert: &str, key: &str, versions: Versions) -> Nginx {
    let protocols = match versions {
        Versions::Tls13 => "TLSv1.2 TLSv1.3",
        Versions::Tls12Only => "TLSv1.2",
    };
    let directives = format!(
        "ssl_certificate {cert};\n    ssl_certificate_key {key};\n    ssl_protocols {protocols};\n    \
         ssl_session_cache shared:SSL:1m;\n    ssl_session_tickets on;"
    );
    Nginx::start(root, "ssl", &directives)
}

/// Python's `http.server` (HTTP/1.1, keep-alive) behind `ssl`, threads per connection;
/// killed on drop.
pub struct PythonTls {
    child: Child,
    pub port: u16,
}

const PYTHON_SERVER: &str = r#"
import http.server, os, ssl, sys
os.chdir(sys.argv[1])
class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

impl PythonTls {
    pub fn start(root: &Path, cert: &str, key: &str) -> PythonTls {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(PYTHON_SERVER)
            .arg(root)
            .arg(cert)
            .arg(key)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| panic!("python3 printed {line:?}, not its port"));
        PythonTls { child, port }
    }
}

impl Drop for PythonTls {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory with `1k` (1024 bytes) and `64k` (65536 bytes).
pub fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, len) in [("1k", 1024), ("64k", 65536)] {
        let body: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    dir
}
