//! HTTPS (`--tls-cert`, `--tls-key`) in every mode, checked with clients that are not ours:
//! curl (TLS 1.2 and 1.3: a file, a 1 MiB file byte for byte, a listing, a CGI script) and
//! Python's `ssl` (ALPN, session resumption with TLS 1.3 and 1.2 tickets); a plain-HTTP
//! request to the TLS port is closed at once; a client that stalls halfway through its
//! ClientHello is cut at the head timeout; configuration mistakes are one line and exit 2.
//! The certificate is made by rcgen when the binary starts (`common/tls.rs`).

mod common;

use common::tls::{ca_file, pki};
use common::{Fixture, Spidey, HELLO};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

const MIB: usize = 1 << 20;

/// A fixture with a 1 MiB file and a CGI script, served over TLS with the test certificate.
fn start(mode: &str, args: &[&str]) -> (Fixture, Spidey) {
    let fx = Fixture::new();
    let root = fx.root();
    std::fs::write(root.join("mib.bin"), (0..MIB).map(|i| (i % 253) as u8).collect::<Vec<_>>()).unwrap();
    std::fs::create_dir_all(root.join("cgi-bin")).unwrap();
    let script = root.join("cgi-bin/hi.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\ncgi over %s\\n' \"$HTTPS\"\n")
        .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pki = pki();
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    let all = [&["--quiet", "--cgi", "--tls-cert", cert, "--tls-key", key], args].concat();
    let s = Spidey::start(mode, &root, &all);
    assert!(s.tls, "the startup line did not say https");
    (fx, s)
}

/// curl's body for `path` with the given TLS version flags; panics if curl fails.
fn curl(s: &Spidey, version: &[&str], path: &str) -> Vec<u8> {
    let out = Command::new("curl")
        .args(["-sS", "--fail", "--max-time", "20", "--cacert"])
        .arg(ca_file())
        .args(version)
        .arg(s.url(path))
        .output()
        .expect("curl");
    assert!(out.status.success(), "curl {version:?} {path}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn curl_fetches_files_listings_and_cgi_over_tls_1_2_and_1_3(mode: &str) {
    let (fx, s) = start(mode, &[]);
    let mib = std::fs::read(fx.root().join("mib.bin")).unwrap();
    for version in [&["--tlsv1.2", "--tls-max", "1.2"][..], &["--tlsv1.3"][..]] {
        assert_eq!(curl(&s, version, "/hello.txt"), HELLO.as_bytes(), "{version:?}");
        let got = curl(&s, version, "/mib.bin");
        assert!(got == mib, "{version:?}: the 1 MiB file came back as {} other bytes", got.len());
        let listing = String::from_utf8(curl(&s, version, "/list/")).unwrap();
        assert!(listing.contains("plain.txt"), "{version:?}: {listing}");
        // CGI scripts are not told of TLS (no HTTPS variable), but their output travels in it.
        assert_eq!(curl(&s, version, "/cgi-bin/hi.sh"), b"cgi over \n", "{version:?}");
    }
}

/// Python's ssl: the protocol version, ALPN, and whether a second connection resumed the
/// first one's session, for a context capped at `max` (`TLSv1_2` or `TLSv1_3`).
const PYTHON: &str = r#"
import socket, ssl, sys
port, ca, top = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context(cafile=ca)
ctx.maximum_version = getattr(ssl.TLSVersion, top)
ctx.set_alpn_protocols(["http/1.1"])
def get(session=None):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                        server_hostname="127.0.0.1", session=session)
    s.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    info = (s.version(), s.selected_alpn_protocol(), s.session_reused, data.endswith(b"hello, spidey\n"))
    return info, s.session
first, session = get()
second, _ = get(session)
print(first[0], first[1], first[3], second[2], second[3])
"#;

fn python_ssl_negotiates_alpn_and_resumes(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    for (top, version) in [("TLSv1_3", "TLSv1.3"), ("TLSv1_2", "TLSv1.2")] {
        let out = Command::new("python3")
            .args(["-c", PYTHON, &s.port.to_string(), ca_file().to_str().unwrap(), top])
            .output()
            .expect("python3");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{top}: {text} {}", String::from_utf8_lossy(&out.stderr));
        // version, ALPN, first body right, second connection resumed, second body right
        assert_eq!(text.trim(), format!("{version} http/1.1 True True True"), "{top}");
    }
}

/// Reads until the server closes (EOF or reset) or `limit` passes; returns what came and
/// whether it closed.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (got, true),
            Err(_) => return (got, false),
        }
    }
}

fn plain_http_to_the_tls_port_is_closed_at_once(mode: &str) {
    let (_fx, s) = start(mode, &["--idle-timeout", "20s", "--head-timeout", "20s"]);
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let start = Instant::now();
    let (got, closed) = read_until_closed(&mut c, Duration::from_secs(5));
    assert!(closed, "a plain-HTTP request held the connection for {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(2), "closed only after {:?}", start.elapsed());
    // At most a TLS alert record (content type 21), never an HTTP response.
    assert!(got.is_empty() || got[0] == 21, "got {:?}", String::from_utf8_lossy(&got));
    assert_eq!(s.get("/hello.txt", &[]).status, 200, "the server stopped serving HTTPS");
}

/// The first bytes a rustls client sends: a whole ClientHello record.
fn client_hello() -> Vec<u8> {
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = rustls::ClientConnection::new(pki().client.clone(), name).unwrap();
    let mut hello = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut hello).unwrap();
    }
    hello
}

fn half_a_client_hello_is_cut_at_the_head_timeout(mode: &str) {
    let (_fx, s) = start(mode, &["--head-timeout", "1s", "--idle-timeout", "30s"]);
    let hello = client_hello();
    let mut c = TcpStream::connect(("127.0.0.1", s.port)).unwrap();
    c.write_all(&hello[..hello.len() / 2]).unwrap();
    let start = Instant::now();
    let (got, closed) = read_until_closed(&mut c, Duration::from_secs(6));
    let took = start.elapsed();
    assert!(closed, "a stalled handshake was still open after {took:?}");
    assert!(took >= Duration::from_millis(800), "cut after {took:?}, before the head timeout");
    assert!(took < Duration::from_secs(4), "cut only after {took:?} (head timeout 1 s, idle 30 s)");
    assert!(got.is_empty(), "sent {got:?} to a half ClientHello");
    assert_eq!(s.get("/hello.txt", &[]).status, 200, "the server stopped serving HTTPS");
}

/// A connection whose TLS handshake a rustls client has finished; the raw TCP stream, so
/// the test writes whatever bytes it likes underneath TLS.
fn handshaken(port: u16) -> (TcpStream, rustls::ClientConnection) {
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut conn = rustls::ClientConnection::new(pki().client.clone(), name).unwrap();
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while conn.is_handshaking() {
        conn.complete_io(&mut c).expect("handshake");
    }
    (c, conn)
}

/// After the handshake, ciphertext that never yields plaintext, a little every 300 ms:
/// the header of a 16 KiB record and then its bytes one at a time, or a KeyUpdate each
/// time. Each must be closed within the head timeout (event loops: the idle one, both
/// 1 s here) of its first byte, however long the client keeps trickling.
fn trickled_ciphertext_is_closed_within_the_head_timeout(mode: &str) {
    let (_fx, s) = start(mode, &["--head-timeout", "1s", "--idle-timeout", "1s"]);
    type Drip = fn(&mut rustls::ClientConnection, usize) -> Vec<u8>;
    let cases: &[(&str, Drip)] = &[
        ("a 16 KiB record a byte at a time", |_, i| if i == 0 { vec![23, 3, 3, 0x40, 0] } else { vec![b'x'] }),
        ("a KeyUpdate each time", |conn, _| {
            conn.refresh_traffic_keys().expect("KeyUpdate");
            let mut out = Vec::new();
            while conn.wants_write() {
                conn.write_tls(&mut out).unwrap();
            }
            out
        }),
    ];
    for (what, drip) in cases {
        let (mut c, mut conn) = handshaken(s.port);
        let start = Instant::now();
        let mut closed = false;
        for i in 0..30 {
            if c.write_all(&drip(&mut conn, i)).is_err() {
                closed = true;
                break;
            }
            // The pause between drips: a read of whatever the server sends (tickets, its
            // own KeyUpdate), or the end.
            c.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
            let mut buf = [0u8; 4096];
            match c.read(&mut buf) {
                Ok(0) => closed = true,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed = true,
                Err(_) => {}
            }
            if closed {
                break;
            }
        }
        let took = start.elapsed();
        assert!(closed, "{what}: still open after {took:?} (head and idle timeouts 1 s)");
        assert!(took < Duration::from_secs(3), "{what}: closed only after {took:?}");
    }
    assert_eq!(s.get("/hello.txt", &[]).status, 200, "the server stopped serving HTTPS");
}

/// Python's ssl, verifying nothing: whether the certificate the server on `port` presents
/// is the one in the PEM file `cert` now ("same") or not ("other").
const PRESENTED: &str = r#"
import socket, ssl, sys
port, cert = int(sys.argv[1]), sys.argv[2]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10)) as s:
    served = s.getpeercert(binary_form=True)
print("same" if served == ssl.PEM_cert_to_DER_cert(open(cert).read()) else "other")
"#;

fn presented(port: u16, cert: &std::path::Path) -> String {
    let out = Command::new("python3")
        .args(["-c", PRESENTED, &port.to_string(), cert.to_str().unwrap()])
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// SIGHUP reloads `--tls-cert` and `--tls-key` without a restart: new connections get the
/// new certificate, and a pair that does not load leaves the one in use serving, with one
/// line on stderr saying why.
fn sighup_reloads_the_certificate(mode: &str) {
    let fx = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, _) = common::tls::self_signed(dir.path());
    let mut command = Command::new(env!("CARGO_BIN_EXE_spidey"));
    command.arg("serve").arg(fx.root()).args(["--port", "0", "--mode", mode, "--quiet"]);
    command.arg("--tls-cert").arg(&cert).arg("--tls-key").arg(&key).stderr(std::process::Stdio::piped());
    let mut s = Spidey::spawn(command, mode);
    let stderr = std::io::BufReader::new(s.child.stderr.take().unwrap());
    let lines = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.0.send(line);
        }
    });
    let reloaded = |want: &str| {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            match lines.1.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                // Each SIGHUP also reloads the configuration, in a line of its own.
                Ok(line) if line.starts_with("spidey: SIGHUP:") && line.contains("certificate") => {
                    assert!(line.contains(want), "{mode}: {line:?}, want it to say {want:?}");
                    return;
                }
                Ok(_) => {}
                Err(_) => panic!("{mode}: no SIGHUP line saying {want:?} within 15 s"),
            }
        }
    };
    assert_eq!(presented(s.port, &cert), "same", "{mode}: the certificate it started with");
    let first = std::fs::read(&cert).unwrap();

    common::tls::self_signed(dir.path()); // a new key and certificate in the same files
    common::signal(s.child.id(), "HUP");
    reloaded("reloaded the certificate");
    // prefork's workers are replaced after the reload: the old ones may finish a handshake.
    let deadline = Instant::now() + Duration::from_secs(10);
    while presented(s.port, &cert) != "same" {
        assert!(Instant::now() < deadline, "{mode}: still the old certificate 10 s after SIGHUP");
        std::thread::sleep(Duration::from_millis(50));
    }

    let second = std::fs::read(&cert).unwrap();
    std::fs::write(&cert, &first).unwrap(); // the old certificate with the new key: no pair
    common::signal(s.child.id(), "HUP");
    reloaded("does not match the certificate");
    std::fs::write(&cert, &second).unwrap();
    assert_eq!(presented(s.port, &cert), "same", "{mode}: a pair that did not load replaced the one in use");
    let body = Command::new("curl").args(["-sk", &s.url("/hello.txt")]).output().expect("curl").stdout;
    assert_eq!(body, HELLO.as_bytes(), "{mode}: serving after the reloads");
}

for_each_mode!(
    sighup_reloads_the_certificate,
    curl_fetches_files_listings_and_cgi_over_tls_1_2_and_1_3,
    python_ssl_negotiates_alpn_and_resumes,
    plain_http_to_the_tls_port_is_closed_at_once,
    half_a_client_hello_is_cut_at_the_head_timeout,
    trickled_ciphertext_is_closed_within_the_head_timeout,
);

/// Every TLS configuration mistake: exit code 2 and one line on stderr naming it. The
/// configuration is checked before any mode runs, so one mode stands for all.
#[test]
fn tls_configuration_mistakes_exit_2_with_one_line() {
    let fx = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let other_key = dir.path().join("other-key.pem");
    std::fs::write(&other_key, rcgen::KeyPair::generate().unwrap().serialize_pem()).unwrap();
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    let other_key = other_key.to_str().unwrap();
    // The same key under a password: PKCS#8 (ENCRYPTED PRIVATE KEY) and OpenSSL's legacy
    // form (Proc-Type: 4,ENCRYPTED).
    let pkcs8 = dir.path().join("pkcs8-encrypted.pem");
    let legacy = dir.path().join("legacy-encrypted.pem");
    let encrypt = |args: &[&str], out: &std::path::Path| {
        let ok = Command::new("openssl").args(args).arg("-in").arg(&pki.key).arg("-out").arg(out).status().unwrap();
        assert!(ok.success(), "openssl {args:?}");
    };
    encrypt(&["pkey", "-aes256", "-passout", "pass:secret"], &pkcs8);
    encrypt(&["ec", "-aes256", "-passout", "pass:secret"], &legacy);
    assert!(std::fs::read_to_string(&legacy).unwrap().contains("Proc-Type: 4,ENCRYPTED"));
    let (pkcs8, legacy) = (pkcs8.to_str().unwrap(), legacy.to_str().unwrap());
    let encrypted = "encrypted private keys are not supported; decrypt it with openssl pkey";
    let cases: &[(&[&str], &str)] = &[
        (&["--tls-cert", cert], "--tls-cert needs --tls-key"),
        (&["--tls-key", key], "--tls-key needs --tls-cert"),
        (&["--tls-cert", missing, "--tls-key", key], "cannot read"),
        (&["--tls-cert", cert, "--tls-key", missing], "cannot read"),
        (&["--tls-cert", key, "--tls-key", key], "no certificate"),
        (&["--tls-cert", cert, "--tls-key", cert], "no private key"),
        (&["--tls-cert", cert, "--tls-key", other_key], "does not match the certificate"),
        (&["--tls-cert", cert, "--tls-key", pkcs8], encrypted),
        (&["--tls-cert", cert, "--tls-key", legacy], encrypted),
    ];
    for (args, want) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .arg("serve")
            .arg(fx.root())
            .args(["--port", "0"])
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed a startup line");
    }
}
