//! Real TLS servers that are not Spidey, for `spidey bench https://`: nginx from Debian's
//! package (OpenSSL, its `ssl` module) and Python's `ssl` under `http.server`, each serving a
//! fixture directory with a certificate rcgen makes at test time (no key is committed).

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NGINX: &str = "/usr/sbin/nginx";

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

/// nginx with `ssl`, session tickets and a session cache, in the foreground as one process
/// with its own prefix; killed on drop.
pub struct Nginx {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// Serves `root` over TLS with `cert`/`key` (PEM files).
    pub fn start(root: &Path, cert: &str, key: &str, versions: Versions) -> Nginx {
        assert!(Path::new(NGINX).exists(), "{NGINX} not found: apt-get install nginx-light");
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let d = dir.path().display();
        let protocols = match versions {
            Versions::Tls13 => "TLSv1.2 TLSv1.3",
            Versions::Tls12Only => "TLSv1.2",
        };
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\nerror_log {d}/error.log info;\npid {d}/nginx.pid;\n\
             events {{ worker_connections 256; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
             default_type application/octet-stream;\n  \
             server {{\n    listen 127.0.0.1:{port} ssl;\n    root {};\n    \
             ssl_certificate {cert};\n    ssl_certificate_key {key};\n    ssl_protocols {protocols};\n    \
             ssl_session_cache shared:SSL:1m;\n    ssl_session_tickets on;\n  }}\n}}\n",
            root.display()
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = Command::new(NGINX)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {NGINX}: {e}"));
        let mut nginx = Nginx { child, port, dir };
        let log = nginx.dir.path().join("error.log");
        wait_listening(port, &mut nginx.child, &log);
        nginx
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_listening(port: u16, child: &mut Child, log: &PathBuf) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("nginx exited ({status}): {}", std::fs::read_to_string(log).unwrap_or_default());
        }
        assert!(start.elapsed() < Duration::from_secs(10), "nginx did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
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
