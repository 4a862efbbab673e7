//! The integration harness: start the real `spidey` binary on `--port 0`, talk to it over
//! loopback with ureq and raw sockets, stop it with SIGTERM.
//!
//! With `SPIDEY_TEST_TLS=1` (scripts/test.sh's second pass) every server starts with a
//! test certificate (`tls.rs`) and every client of this harness speaks TLS: `connect`,
//! `raw`, `get`, `url` (https) and `curl`. A case that measures what TLS changes opts out
//! with [`plaintext_only`], which names why.
#![allow(dead_code)]

pub mod bench;
pub mod nginx;
pub mod tls;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;
pub use tls::Conn;

/// A running server; stopped (SIGTERM, then SIGKILL) on drop.
pub struct Spidey {
    pub child: Child,
    pub port: u16,
    pub stdout: Option<BufReader<ChildStdout>>,
    /// Whether it serves HTTPS (its startup line said `https://`).
    pub tls: bool,
}

/// A new connection to the server on `port` (for threads that hold no `Spidey`), over
/// TLS if `tls`; a 10 s read timeout.
pub fn dial(port: u16, tls: bool) -> Conn {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    if tls {
        Conn::tls(s)
    } else {
        Conn::plain(s)
    }
}

/// In the TLS pass, says why a case is left out and returns true: the case measures
/// something TLS changes on purpose (name it in `reason`). Plain runs always run it.
pub fn plaintext_only(reason: &str) -> bool {
    if tls::enabled() {
        eprintln!("plaintext only, skipped over TLS: {reason}");
        return true;
    }
    false
}

impl Spidey {
    /// Starts `spidey serve ROOT --port 0 --mode MODE ARGS...` and waits for its startup line.
    pub fn start(mode: &str, root: &Path, args: &[&str]) -> Spidey {
        let mut command = Command::new(env!("CARGO_BIN_EXE_spidey"));
        command.arg("serve").arg(root).args(["--port", "0", "--mode", mode]).args(args).stderr(Stdio::inherit());
        Spidey::spawn(command, mode)
    }

    /// Spawns `command` (a `spidey serve ... --port 0 --mode MODE`, perhaps behind a wrapper
    /// such as prlimit) with stdout piped, and waits for its startup line.
    ///
    /// In the TLS pass a `serve` command without `--tls-cert` gets the test certificate.
    pub fn spawn(mut command: Command, mode: &str) -> Spidey {
        let args: Vec<_> = command.get_args().map(|a| a.to_os_string()).collect();
        let add_tls = tls::enabled() && args.iter().any(|a| a == "serve") && !args.iter().any(|a| a == "--tls-cert");
        if add_tls {
            let pki = tls::pki();
            command.arg("--tls-cert").arg(&pki.cert).arg("--tls-key").arg(&pki.key);
        }
        let mut child = command.stdout(Stdio::piped()).spawn().expect("spawn spidey");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read startup line");
        let want = format!("(mode {mode})");
        let tls = line.starts_with("spidey listening on https://");
        assert!(tls || !add_tls, "the TLS pass started a server that does not say https: {line:?}");
        assert!(
            (tls || line.starts_with("spidey listening on http://127.0.0.1:"))
                && line.contains("://127.0.0.1:")
                && line.trim_end().ends_with(&want),
            "startup line: {line:?}"
        );
        let port = line
            .split(':')
            .nth(2)
            .and_then(|p| p.split(' ').next())
            .and_then(|p| p.parse().ok())
            .expect("port in startup line");
        Spidey { child, port, stdout: Some(stdout), tls }
    }

    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    /// A new connection, over TLS if the server speaks it (the handshake runs with the
    /// first write or read).
    pub fn connect(&self) -> Conn {
        dial(self.port, self.tls)
    }

    /// `stream` (connected to this server some other way) as this server's clients speak.
    pub fn wrap(&self, stream: TcpStream) -> Conn {
        if self.tls {
            Conn::tls(stream)
        } else {
            Conn::plain(stream)
        }
    }

    /// `curl`, trusting the test CA when the server speaks TLS.
    pub fn curl(&self) -> Command {
        let mut c = Command::new("curl");
        if self.tls {
            c.arg("--cacert").arg(tls::ca_file());
        }
        c
    }

    /// Sends `request` on a fresh connection and reads until the server closes it.
    pub fn raw(&self, request: &[u8]) -> String {
        let mut s = self.connect();
        s.write_all(request).unwrap();
        let _ = s.shutdown(Shutdown::Write);
        read_to_close(&mut s)
    }

    /// GET with ureq, never following redirects; any status is returned, not an error.
    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut agent = ureq::AgentBuilder::new().redirects(0).timeout(Duration::from_secs(10));
        if self.tls {
            agent = agent.tls_config(std::sync::Arc::clone(&tls::pki().client));
        }
        let agent = agent.build();
        let mut req = agent.get(&self.url(path));
        for (n, v) in headers {
            req = req.set(n, v);
        }
        let resp = match req.call() {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("GET {path}: {e}"),
        };
        let status = resp.status();
        let headers = resp
            .headers_names()
            .into_iter()
            .map(|n| (n.to_ascii_lowercase(), resp.header(&n).unwrap_or("").to_string()))
            .collect();
        let mut body = Vec::new();
        resp.into_reader().read_to_end(&mut body).unwrap();
        Reply { status, headers, body }
    }

    /// SIGTERM, and the exit status once it has stopped.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        signal(self.child.id(), "TERM");
        wait_timeout(&mut self.child, Duration::from_secs(20)).expect("spidey did not stop within 20 s of SIGTERM")
    }

    /// The access log so far (reads stdout until `lines` lines have arrived).
    /// The next `lines` lines on stdout after the first (access-log lines, or the startup
    /// lines a test asks for, such as `spidey redirecting ...`); `spidey reachable at ...`
    /// (`--addr ::`) is skipped.
    pub fn log_lines(&mut self, lines: usize) -> Vec<String> {
        let out = self.stdout.as_mut().unwrap();
        let mut got = Vec::with_capacity(lines);
        while got.len() < lines {
            let mut l = String::new();
            assert!(out.read_line(&mut l).unwrap() > 0, "stdout closed after {} log lines", got.len());
            if !l.starts_with("spidey reachable at ") {
                got.push(l);
            }
        }
        got
    }
}

impl Drop for Spidey {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            signal(self.child.id(), "TERM");
            if wait_timeout(&mut self.child, Duration::from_secs(5)).is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}

pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status();
}

pub fn wait_timeout(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub fn read_to_close(s: &mut impl Read) -> String {
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads exactly one response (head plus Content-Length body) from a kept-alive stream.
pub fn read_response(s: &mut impl Read) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match s.read_retry(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => panic!("connection ended inside a head: {:?}", String::from_utf8_lossy(&head)),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let len = head_field(&head, "content-length").map(|v| v.parse::<usize>().unwrap()).unwrap_or(0);
    let skip_body = head.starts_with("HTTP/1.1 304") || head.contains("\r\nX-Head-Request: 1");
    let mut body = vec![0u8; if skip_body { 0 } else { len }];
    s.read_exact(&mut body).unwrap();
    (head, body)
}

/// The status code of a raw response text.
pub fn status_of(response: &str) -> u16 {
    response.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0)
}

pub fn head_field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// Whether the server has closed `s` (EOF within `wait`).
pub fn closed_within(s: &mut Conn, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 64];
    loop {
        match s.read_retry(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// The document root every test serves: plain files, an index, hostile names, a dotfile.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub outside: tempfile::TempDir,
}

pub const HELLO: &str = "hello, spidey\n";

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        let w = |p: &str, body: &[u8]| std::fs::write(root.join(p), body).unwrap();
        std::fs::create_dir_all(root.join("site")).unwrap();
        std::fs::create_dir_all(root.join("list/sub dir")).unwrap();
        std::fs::create_dir_all(root.join("evil.com")).unwrap();
        w("hello.txt", HELLO.as_bytes());
        w("digits.txt", b"0123456789");
        w("page.html", b"<p>page</p>\n");
        w("site/index.html", b"<h1>index</h1>\n");
        w("big.bin", &(0..4 * 1024 * 1024).map(|i| (i % 251) as u8).collect::<Vec<_>>());
        w("list/plain.txt", b"123");
        w("list/<img src=x onerror=alert(1)>", b"x");
        w("list/q\"uote's", b"xy");
        w("list/a b", b"");
        w("list/%20", b"");
        w("list/café", b"");
        w("list/.hidden", b"secret");
        use std::os::unix::ffi::OsStrExt;
        std::fs::write(root.join("list").join(std::ffi::OsStr::from_bytes(b"new\nline")), b"").unwrap();
        std::fs::write(root.join("list").join(std::ffi::OsStr::from_bytes(b"bad\xffutf8")), b"").unwrap();
        std::fs::write(outside.path().join("secret.txt"), b"TOP SECRET").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.join("out-file")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out-dir")).unwrap();
        std::os::unix::fs::symlink("hello.txt", root.join("in-link")).unwrap();
        let fifo = root.join("fifo");
        let ok = Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "mkfifo failed");
        Fixture { dir, outside }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

/// Generates `mod <mode> { #[test] fn <case>() }` for every mode and every case, so each
/// case runs once per mode with its own test name (`single::range_requests`).
///
/// `--workers N` where `mode` has workers to count, nothing where it has none (`single`,
/// `fork` and `thread`, which refuse the flag): for a test that runs in every mode.
#[allow(dead_code)]
pub fn workers<'a>(mode: &str, n: &'a str) -> Vec<&'a str> {
    match mode {
        "single" | "fork" | "thread" => vec![],
        _ => vec!["--workers", n],
    }
}

/// The list of modes below is the one place a new mode joins the whole suite.
#[macro_export]
macro_rules! for_each_mode {
    ($($case:ident),* $(,)?) => {
        $crate::for_each_mode!(@modes [single, fork, thread, pool, prefork, event, uring, hybrid] [$($case),*]);
    };
    (@modes [$($mode:ident),*] $cases:tt) => {
        $( $crate::for_each_mode!(@one $mode $cases); )*
    };
    (@one $mode:ident [$($case:ident),*]) => {
        mod $mode {
            $(
                #[test]
                fn $case() {
                    super::$case(stringify!($mode));
                }
            )*
        }
    };
}

/// `read`, retried when a signal interrupts it. A socket read with a timeout (as every
/// test socket has) fails with EINTR instead of restarting when the test process is
/// stopped and continued (socket(7), SO_RCVTIMEO; checked with SIGSTOP/SIGCONT), which
/// says nothing about the server. Seen once in a CI run: four tests of one binary failed
/// with EINTR at the same instant, something outside having paused the process.
pub trait ReadRetry: Read {
    fn read_retry(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            match self.read(buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }
}

impl<R: Read + ?Sized> ReadRetry for R {}

/// A C handler library built with `cc -shared` (include/ on the path, pthreads linked)
/// from `source`, once per `name` in this test binary; it lives as long as the binary.
pub fn c_handler(name: &'static str, source: &str) -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    static BUILT: std::sync::Mutex<Vec<(&'static str, &'static Path)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, lib)) = built.iter().find(|(n, _)| *n == name) {
        return lib;
    }
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap());
    let src = dir.path().join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let lib: &'static Path = Box::leak(dir.path().join(format!("{name}.so")).into_boxed_path());
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let ok = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-pthread", "-I"])
        .arg(&include)
        .arg("-o")
        .arg(lib)
        .arg(&src)
        .status()
        .unwrap();
    assert!(ok.success(), "cc {name}.c failed");
    built.push((name, lib));
    lib
}

/// A handler that sleeps for the milliseconds its query names (blocking I/O, as a database
/// call would), then answers `slept`.
const SLEEPER: &str = r#"
#include "spidey_handler.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
uint32_t spidey_handler_abi_version(void) { return SPIDEY_HANDLER_ABI_VERSION; }
int spidey_handle(const struct spidey_request *req, const struct spidey_response *res) {
    char q[16] = {0};
    memcpy(q, req->query.ptr, req->query.len < 15 ? req->query.len : 15);
    usleep((useconds_t)atoi(q) * 1000);
    res->set_status(res->ctx, 200);
    return res->write(res->ctx, (const unsigned char *)"slept", 5);
}
"#;

/// [`SLEEPER`], built.
pub fn sleeper_handler() -> &'static Path {
    c_handler("sleeper", SLEEPER)
}

/// examples/handlers/page.c (the 102,400-byte page, `?burn=`, `?fail`) as a handler library.
pub fn page_handler() -> &'static Path {
    c_handler("page", include_str!("../../examples/handlers/page.c"))
}
