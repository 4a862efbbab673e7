//! TLS on one connection, with rustls driven sans-IO: the connection's [`Tls`] is its
//! transport (`transport.rs`), and touches the driver's [`Socket`] only with its buffer
//! writes (ciphertext out) and one non-blocking read (ciphertext in, [`Tls::read_from`]),
//! or takes ciphertext the driver received itself ([`Tls::feed`], `uring`'s ring
//! receives), so a handshake never blocks an event loop: a loop learns readiness as for
//! any other connection and the session flushes what rustls wants written
//! (`Session::is_sending` is true while it has some).
//!
//! Response bytes are encrypted in records of at most [`RECORD`] bytes ([`TlsWire`], the
//! transport's [`Wire`]): out bytes as they are, a file body read with pread(2) (the
//! open-file cache shares the descriptor, so its offset never moves) a record at a time,
//! each flushed before the next is read, so at most one record of a response is in
//! memory and a large file never sits whole in it. sendfile(2) is for plain connections
//! only; kTLS is left out (no `tls` ULP here).
//!
//! The server's configuration (certificate, key, ALPN, tickets) is made once at startup
//! by [`server_config`]; every mode's connections share it, forked processes included.
//! The certificate and key are read again on SIGHUP ([`reload_certificate`]): handshakes
//! from then on use the new pair, or, if it does not load, the one in use stays.

use super::send::Wire;
use super::socket::{Inflow, Socket};
use rustix::io::Errno;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, ServerConfig, ServerConnection, ServerSessionMemoryCache};
use rustls::sign::CertifiedKey;
use spidey_config::ConfigError;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

/// The most plaintext bytes encrypted at once: one full TLS record.
pub(crate) const RECORD: usize = 16 * 1024;

/// Longer than any ticket's plaintext (a session's secrets, ALPN, SNI: a few hundred bytes).
const TICKET_BOUND: usize = 1024;

/// Session IDs remembered for TLS 1.2 resumption without a ticket, per process.
const SESSION_CACHE: usize = 4096;

/// Loads `--tls-cert` and `--tls-key` (PEM) and makes the server's TLS configuration:
/// TLS 1.3 and 1.2 with ring's cipher suites, ALPN `http/1.1` (after `h2` when `http2`),
/// stateless session tickets
/// (rustls's rotating ticketer) and a per-process session-ID cache. Every mistake is one
/// line naming the file: unreadable, no certificate, no key, or a key that is not the
/// certificate's. The pair is this process's [`Certificate`], which SIGHUP reloads.
pub(crate) fn server_config(cert: &Path, key: &Path, http2: bool) -> Result<Arc<ServerConfig>, ConfigError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certificate = Arc::new(Certificate {
        current: RwLock::new(Arc::new(load_pair(cert, key, &provider)?)),
        cert: cert.to_path_buf(),
        key: key.to_path_buf(),
        provider: Arc::clone(&provider),
    });
    let versions: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13, &rustls::version::TLS12];
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| ConfigError(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::clone(&certificate) as Arc<dyn ResolvesServerCert>);
    let _ = CERTIFICATE.set(certificate); // made once per process, at startup
    config.alpn_protocols = match http2 {
        true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        false => vec![b"http/1.1".to_vec()],
    };
    config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
    config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(|e| ConfigError(format!("TLS tickets: {e}")))?;
    // ring's ticketer refuses to decrypt a ticket longer than the longest it has made
    // itself, and a `fork` child or a `prefork` worker starts with that bound at 0 (its
    // parent never made one), so it would refuse its siblings' tickets. One ticket made
    // here, longer than any real one, gives every process the bound before it forks.
    let _ = config.ticketer.encrypt(&[0; TICKET_BOUND]);
    Ok(Arc::new(config))
}

/// The certificate chain and key handshakes use, and the files they came from.
#[derive(Debug)]
struct Certificate {
    current: RwLock<Arc<CertifiedKey>>,
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
}

impl ResolvesServerCert for Certificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner())))
    }
}

/// This process's certificate (set by [`server_config`]).
static CERTIFICATE: OnceLock<Arc<Certificate>> = OnceLock::new();

/// SIGHUP: reads `--tls-cert` and `--tls-key` again. If they load (the same checks as at
/// startup), handshakes from now on use them and one line says so; if not, one line says
/// why and the pair in use stays. Nothing without `--tls-cert`. Processes forked later
/// (`fork`'s children, `prefork`'s replacement workers) inherit what this process holds.
pub(crate) fn reload_certificate() {
    let Some(certificate) = CERTIFICATE.get() else { return };
    match load_pair(&certificate.cert, &certificate.key, &certificate.provider) {
        Ok(pair) => {
            *certificate.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(pair);
            eprintln!("spidey: SIGHUP: reloaded the certificate {}", certificate.cert.display());
        }
        Err(e) => eprintln!("spidey: SIGHUP: {e}; the certificate in use stays"),
    }
}

/// Reads a certificate chain and its private key (PEM) and checks they belong together.
fn load_pair(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, ConfigError> {
    let bad = |what: &str, path: &Path, e: &dyn std::fmt::Display| {
        ConfigError(format!("--tls-{what} {}: {e}", path.display()))
    };
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad("cert", cert, &pem_error(e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad("cert", cert, &pem_error(e)))?;
    if certs.is_empty() {
        return Err(bad("cert", cert, &"no certificate (-----BEGIN CERTIFICATE-----) in the file"));
    }
    if is_encrypted(key) {
        return Err(bad("key", key, &"encrypted private keys are not supported; decrypt it with openssl pkey"));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| match e {
        pem::Error::NoItemsFound => bad("key", key, &"no private key (-----BEGIN ... PRIVATE KEY-----) in the file"),
        e => bad("key", key, &pem_error(e)),
    })?;
    CertifiedKey::from_der(certs, key_der, provider).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => {
            bad("key", key, &format_args!("does not match the certificate in {}", cert.display()))
        }
        e => bad("key", key, &e),
    })
}

/// Whether the PEM file at `path` holds a password-protected key: PKCS#8's `ENCRYPTED
/// PRIVATE KEY` or OpenSSL's legacy `Proc-Type: 4,ENCRYPTED` header.
fn is_encrypted(path: &Path) -> bool {
    let Ok(text) = std::fs::read(path) else { return false };
    let has = |needle: &[u8]| text.windows(needle.len()).any(|w| w == needle);
    has(b"-----BEGIN ENCRYPTED PRIVATE KEY-----") || has(b"Proc-Type: 4,ENCRYPTED")
}

fn pem_error(e: pem::Error) -> String {
    match e {
        pem::Error::Io(e) => format!("cannot read it ({e})"),
        e => format!("not PEM ({e:?})"),
    }
}

/// One connection's TLS state.
pub(crate) struct Tls {
    conn: ServerConnection,
    /// Whether any ciphertext has arrived: from then until the handshake ends, the head
    /// deadline bounds it.
    began: bool,
    /// rustls refused the stream (not TLS, a bad record): every later read is the end.
    broken: bool,
    /// Where a file body's record is read into before it is encrypted (taken on first use).
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("handshaking", &self.conn.is_handshaking()).finish()
    }
}

/// The driver's socket as rustls's reader and writer.
struct Io<'a, S: Socket>(&'a mut S);

impl<S: Socket> Read for Io<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(Socket::read(self.0, buf)?)
    }
}

impl<S: Socket> Write for Io<'_, S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(Wire::write(self.0, buf, false)?)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Tls {
    /// A new connection's TLS state; an error if rustls cannot make one (the caller then
    /// closes the connection: never plaintext on an HTTPS port).
    pub(crate) fn new(config: &Arc<ServerConfig>) -> Result<Box<Tls>, rustls::Error> {
        let conn = ServerConnection::new(Arc::clone(config))?;
        Ok(Box::new(Tls { conn, began: false, broken: false, scratch: Vec::new() }))
    }

    /// Whether the handshake has begun and not ended: the head deadline runs.
    pub(crate) fn mid_handshake(&self) -> bool {
        self.began && self.conn.is_handshaking()
    }

    /// The application protocol ALPN agreed on, once the handshake has got that far.
    pub(crate) fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// Whether rustls has ciphertext to send (handshake, tickets, alerts, records).
    pub(crate) fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Whether decrypted bytes wait in rustls: read them before waiting on the socket.
    pub(crate) fn has_plaintext(&mut self) -> bool {
        self.conn.process_new_packets().is_ok_and(|s| s.plaintext_bytes_to_read() > 0)
    }

    /// Moves decrypted bytes into `space`; returns how many.
    pub(crate) fn take_plaintext(&mut self, space: &mut [u8]) -> usize {
        // WouldBlock: none yet; UnexpectedEof: the caller sees the close at its next read.
        self.conn.reader().read(space).unwrap_or_default()
    }

    /// Reads ciphertext from the non-blocking `socket` and decrypts it; the plaintext
    /// waits in rustls ([`Tls::take_plaintext`]).
    pub(crate) fn read_from<S: Socket>(&mut self, socket: &mut S) -> Inflow {
        if self.broken {
            return Inflow::Closed;
        }
        match self.conn.read_tls(&mut Io(&mut *socket)) {
            Ok(0) => Inflow::Closed,
            Ok(_) => self.decrypt(socket),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Inflow::Again,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Inflow::Bytes { short: false },
            Err(_) => Inflow::Closed,
        }
    }

    /// Takes as much of `ciphertext` (received by the driver itself) as rustls has room
    /// for, and decrypts it; `data` moves past what it took. [`Inflow::Closed`] if the
    /// stream is broken (the alert sent on `socket` if it takes it now), or if rustls took
    /// nothing: it holds a full buffer of plaintext not yet taken.
    pub(crate) fn feed<S: Socket>(&mut self, data: &mut &[u8], socket: &mut S) -> Inflow {
        if self.broken {
            return Inflow::Closed;
        }
        match self.conn.read_tls(data) {
            Ok(n) if n > 0 => self.decrypt(socket),
            _ => Inflow::Closed,
        }
    }

    /// After ciphertext came in: decrypts what is whole.
    fn decrypt<S: Socket>(&mut self, socket: &mut S) -> Inflow {
        self.began = true;
        match self.conn.process_new_packets() {
            Ok(_) => Inflow::Bytes { short: false },
            Err(_) => {
                // Not TLS, or a broken stream: send rustls's alert if the socket takes it
                // now, then close.
                let _ = self.flush(socket);
                self.broken = true;
                Inflow::Closed
            }
        }
    }

    /// Writes pending ciphertext until none is left or the socket is full (EAGAIN).
    pub(crate) fn flush<S: Socket>(&mut self, socket: &mut S) -> Result<(), Errno> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut Io(&mut *socket)) {
                Ok(_) => {}
                Err(e) => match Errno::from_io_error(&e) {
                    Some(Errno::INTR) => {}
                    Some(errno) => return Err(errno),
                    None => return Err(Errno::IO),
                },
            }
        }
        Ok(())
    }

    /// This connection's [`Wire`] over `socket`.
    pub(crate) fn wire<'a, S: Socket>(&'a mut self, socket: &'a mut S) -> TlsWire<'a, S> {
        TlsWire { tls: self, socket }
    }

    /// Before the server closes: a close_notify alert, sent if the socket takes it now
    /// (it has just taken the whole response, so it has room).
    pub(crate) fn close_notify<S: Socket>(&mut self, socket: &mut S) {
        self.conn.send_close_notify();
        let _ = self.flush(socket);
    }
}

/// The TLS transport's [`Wire`]: each write first flushes the ciphertext still pending
/// (EAGAIN while the socket is full), then encrypts one record more; the response is done
/// once [`Wire::flush`] has written the last of it.
pub(crate) struct TlsWire<'a, S: Socket> {
    tls: &'a mut Tls,
    socket: &'a mut S,
}

impl<S: Socket> Wire for TlsWire<'_, S> {
    /// Records leave one at a time as they are made: nothing to cork.
    fn cork(&mut self) {}

    /// Encrypts up to one record of `bytes`.
    fn write(&mut self, bytes: &[u8], _more: bool) -> Result<usize, Errno> {
        self.tls.flush(self.socket)?;
        let take = bytes.len().min(RECORD);
        Ok(self.tls.conn.writer().write(&bytes[..take]).unwrap_or(0))
    }

    /// Reads up to one record of the file with pread(2) and encrypts it.
    fn write_file(&mut self, file: &File, offset: u64, len: usize) -> Result<usize, Errno> {
        self.tls.flush(self.socket)?;
        let Tls { conn, scratch, .. } = &mut *self.tls;
        scratch.resize(RECORD, 0);
        let n = rustix::io::pread(file, &mut scratch[..len.min(RECORD)], offset)?;
        Ok(conn.writer().write(&scratch[..n]).unwrap_or(0)) // 0 read: the file shrank
    }

    fn flush(&mut self) -> Result<(), Errno> {
        self.tls.flush(self.socket)
    }
}
