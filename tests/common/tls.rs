//! The suite over TLS (`SPIDEY_TEST_TLS=1`): a test CA and a server certificate made with
//! rcgen when the test binary first needs them (never committed keys), and [`Conn`], the
//! stream `Spidey::connect` returns: a plain TCP stream, or TLS over one, with what tests
//! ask of a socket (read, write, half-close, timeouts, a clone for a second thread).
//!
//! Over TLS, a write completes the handshake first when the server answers at once, so the
//! request bytes reach the server when the test writes them, as over TCP (a server that
//! has not accepted yet gets them once a read completes the handshake); a read
//! returns 0 when the server closes, with close_notify or without; `shutdown(Write)` sends
//! close_notify and then half-closes the TCP stream.

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Whether this run is the TLS pass (`SPIDEY_TEST_TLS=1`, set by scripts/test.sh).
pub fn enabled() -> bool {
    std::env::var_os("SPIDEY_TEST_TLS").is_some_and(|v| v == "1")
}

/// The test PKI: a CA, and a certificate for `127.0.0.1` and `localhost` it signed.
pub struct Pki {
    _dir: tempfile::TempDir,
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The leaf's SubjectPublicKeyInfo pin (base64 of its SHA-256), for Chromium's
    /// `--ignore-certificate-errors-spki-list`.
    pub spki_pin: String,
    pub client: Arc<ClientConfig>,
}

/// The PKI of this test binary, made on first use.
pub fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "spidey test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let mut leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        leaf.distinguished_name.push(DnType::CommonName, "localhost");
        let leaf_key = KeyPair::generate().unwrap();
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (ca, cert, key) = (dir.path().join("ca.pem"), dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&ca, ca_cert.pem()).unwrap();
        std::fs::write(&cert, leaf_cert.pem()).unwrap();
        std::fs::write(&key, leaf_key.serialize_pem()).unwrap();
        let client = client_config(ca_cert.der().clone());
        let spki_pin = spki_pin(&leaf_key);
        Pki { _dir: dir, ca, cert, key, spki_pin, client }
    })
}

/// Base64 of the SHA-256 of `key`'s SubjectPublicKeyInfo: the form Chromium's
/// `--ignore-certificate-errors-spki-list` takes (and HPKP's `pin-sha256` did).
pub fn spki_pin(key: &rcgen::KeyPair) -> String {
    use base64::Engine;
    use rcgen::PublicKeyData;
    use sha2::Digest;
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(key.subject_public_key_info()))
}

/// A self-signed certificate for `127.0.0.1` and `localhost`, its key, written to `dir`
/// as `cert.pem` and `key.pem`; returns (cert, key, SPKI pin).
pub fn self_signed(dir: &Path) -> (PathBuf, PathBuf, String) {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let rcgen::CertifiedKey { cert, signing_key } = rcgen::generate_simple_self_signed(names).unwrap();
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, signing_key.serialize_pem()).unwrap();
    (cert_file, key_file, spki_pin(&signing_key))
}

fn client_config(ca: CertificateDer<'static>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(ca).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// The CA's PEM file, for curl's `--cacert` and Python's `cafile`.
pub fn ca_file() -> &'static Path {
    &pki().ca
}

/// How long a write waits for the server's side of the handshake before it queues.
const HANDSHAKE_IN_WRITE: Duration = Duration::from_millis(300);

/// A connection to the server under test: plain, or TLS over the same TCP stream.
pub struct Conn {
    sock: TcpStream,
    tls: Option<Arc<Shared>>,
}

/// A TLS connection's state, shared by the clones of a [`Conn`]. `read` serialises
/// socket reads and `write` socket writes, so ciphertext is neither reordered nor split
/// between two threads; `state` is held only while rustls is called, never across a
/// blocking socket call.
struct Shared {
    state: Mutex<State>,
    read: Mutex<()>,
    write: Mutex<()>,
}

struct State {
    conn: ClientConnection,
    /// Ciphertext read from the socket that rustls has not taken yet.
    pending: Vec<u8>,
}

impl State {
    /// Hands pending ciphertext to rustls as far as it takes it.
    fn feed(&mut self) -> io::Result<()> {
        while !self.pending.is_empty() {
            // An error: its plaintext buffer is full; read that first.
            let n = self.conn.read_tls(&mut &self.pending[..]).unwrap_or_default();
            if n == 0 {
                break;
            }
            self.pending.drain(..n);
            self.conn.process_new_packets().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
        Ok(())
    }
}

impl Conn {
    pub fn plain(sock: TcpStream) -> Conn {
        Conn { sock, tls: None }
    }

    /// TLS over `sock`, for `127.0.0.1`; the handshake starts with the first write or read.
    pub fn tls(sock: TcpStream) -> Conn {
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let mut conn = ClientConnection::new(Arc::clone(&pki().client), name).unwrap();
        conn.set_buffer_limit(None);
        let state = State { conn, pending: Vec::new() };
        let shared = Shared { state: Mutex::new(state), read: Mutex::new(()), write: Mutex::new(()) };
        Conn { sock, tls: Some(Arc::new(shared)) }
    }

    /// The TCP stream underneath (socket options, `SockRef`).
    pub fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(t)
    }

    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_write_timeout(t)
    }

    pub fn try_clone(&self) -> io::Result<Conn> {
        Ok(Conn { sock: self.sock.try_clone()?, tls: self.tls.clone() })
    }

    /// Over TLS, `Write` (or `Both`) sends close_notify before the TCP half-close.
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        if let (Some(tls), Shutdown::Write | Shutdown::Both) = (&self.tls, how) {
            let _ = self.handshake(tls);
            tls.state.lock().unwrap().conn.send_close_notify();
            self.flush_tls(tls)?;
        }
        self.sock.shutdown(how)
    }

    /// Writes what rustls has for the socket, in order.
    fn flush_tls(&self, tls: &Shared) -> io::Result<()> {
        let _order = tls.write.lock().unwrap();
        let mut out = Vec::new();
        {
            let mut st = tls.state.lock().unwrap();
            while st.conn.wants_write() {
                st.conn.write_tls(&mut out)?;
            }
        }
        (&self.sock).write_all(&out)
    }

    /// Reads ciphertext once, unless `done` holds once the socket is ours; Ok(false) at
    /// the end of the stream. `wait`: wait for another thread's read to end; else (the
    /// handshake of a writer while a reader reads, which drives it) just pause briefly.
    fn fill(&self, tls: &Shared, done: impl Fn(&mut State) -> bool, wait: bool) -> io::Result<bool> {
        let _turn = match tls.read.try_lock() {
            Ok(turn) => turn,
            Err(_) if !wait => {
                std::thread::sleep(Duration::from_millis(1));
                return Ok(true);
            }
            Err(_) => tls.read.lock().unwrap(),
        };
        {
            let mut st = tls.state.lock().unwrap();
            st.feed()?;
            if done(&mut st) {
                return Ok(true);
            }
        }
        let mut buf = vec![0u8; 32 * 1024];
        let n = (&self.sock).read(&mut buf)?;
        let mut st = tls.state.lock().unwrap();
        if n == 0 {
            let _ = st.conn.read_tls(&mut &[][..]); // rustls learns of the end
            return Ok(false);
        }
        st.pending.extend_from_slice(&buf[..n]);
        st.feed()?;
        Ok(true)
    }

    fn handshake(&self, tls: &Shared) -> io::Result<()> {
        loop {
            self.flush_tls(tls)?;
            if !tls.state.lock().unwrap().conn.is_handshaking() {
                return Ok(());
            }
            if !self.fill(tls, |st| !st.conn.is_handshaking(), false)? {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(tls) = self.tls.clone() else { return (&self.sock).read(buf) };
        loop {
            {
                let mut st = tls.state.lock().unwrap();
                st.feed()?;
                match st.conn.reader().read(buf) {
                    Ok(n) => return Ok(n), // 0: close_notify
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0), // closed without close_notify
                    Err(e) => return Err(e),
                }
            }
            self.flush_tls(&tls)?;
            let readable = |st: &mut State| {
                st.conn.process_new_packets().is_ok_and(|s| s.plaintext_bytes_to_read() > 0 || s.peer_has_closed())
            };
            if !self.fill(&tls, readable, true)? {
                let mut st = tls.state.lock().unwrap();
                return match st.conn.reader().read(buf) {
                    Ok(n) => Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
                    Err(e) => Err(e),
                };
            }
        }
    }
}

impl Write for Conn {
    /// Over TLS: completes the handshake first if the server answers within
    /// [`HANDSHAKE_IN_WRITE`]; one that does not (a connection still in the listen queue,
    /// a server holding only so many connections) gets the bytes queued in rustls, sent
    /// when a later read completes the handshake. So a write never waits for the server to
    /// accept, as a TCP write does not.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some(tls) = self.tls.clone() else { return (&self.sock).write(buf) };
        let timeout = self.sock.read_timeout()?;
        let short = timeout.map_or(HANDSHAKE_IN_WRITE, |t| t.min(HANDSHAKE_IN_WRITE));
        self.sock.set_read_timeout(Some(short))?;
        let done = self.handshake(&tls);
        self.sock.set_read_timeout(timeout)?;
        match done {
            Ok(()) => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
        let take = buf.len().min(64 * 1024);
        tls.state.lock().unwrap().conn.writer().write_all(&buf[..take])?;
        self.flush_tls(&tls)?;
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
