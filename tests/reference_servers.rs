//! The C reference servers of `bench/ref/` (one per architecture: iterative, fork, thread,
//! pool, prefork, epoll, uring), which the benchmarks and the lab measure Spidey's modes
//! against, checked with real clients before anything trusts their numbers.
//!
//! Each is built by `bench/ref/build.sh` (gcc -O2 -Wall -Wextra -Werror, so a warning fails
//! here) into a temporary directory and started as `NAME ROOT 0 [WORKERS]` on a root that
//! holds a 1 KiB file, a 1 MiB file and a file whose name has spaces, `<`, `>`, both quotes
//! and `%` (percent-encoded in every URL). Then [`CHECKS`], a table, each row for every
//! server: curl gets byte-identical bodies; HEAD has Content-Length and no body; a missing
//! file is 404; `/../etc/passwd` and `/%2e%2e/etc/passwd`, ten `..` deep (enough to reach
//! `/` from any temporary root) and sent raw (curl would normalise the path), are refused
//! and never serve /etc/passwd; pipelined requests are answered in
//! order; `Connection: close` and HTTP/1.0 close, HTTP/1.0 with keep-alive does not; 20
//! concurrent keep-alive connections of 10 requests each all get the right bodies. Last,
//! with a connection still open, SIGTERM must end the server (exit 0) within 5 s; for fork
//! and prefork, no child is a zombie before it, and none is left after.
//!
//! Without gcc or curl every case prints `SKIPPED ...: reason` and passes; the uring case
//! does the same without `<liburing.h>` (Debian's liburing-dev, which scripts/test.sh
//! installs). pool and prefork run with 4 workers and epoll and uring with 2 loops, so the
//! 20 connections outnumber the workers and the loops share the port.

mod common;

use common::{read_response, signal, wait_timeout, ReadRetry};
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The file with the hostile name: spaces, angle brackets, both quotes, a percent sign.
const HOSTILE: &str = "a b <i>\"q\" 'x' 100%.bin";
/// The files every server serves, with their lengths.
const FILES: [(&str, usize); 3] = [("1k.bin", 1024), ("1m.bin", 1 << 20), (HOSTILE, 3000)];

/// The server's name in bench/ref/, its WORKERS argument, and whether it has children.
const SERVERS: [(&str, Option<&str>, bool); 7] = [
    ("iterative", None, false),
    ("fork", None, true),
    ("thread", None, false),
    ("pool", Some("4"), false),
    ("prefork", Some("4"), true),
    ("epoll", Some("2"), false),
    ("uring", Some("2"), false),
];

type Check = fn(&Server);

/// What every reference server must do, row by row.
const CHECKS: [(&str, Check); 10] = [
    ("curl GETs each file; the bodies are byte-identical", curl_gets_each_file),
    ("HEAD: Content-Length of the file, no body", head_has_length_and_no_body),
    ("a missing file (hostile name): 404", missing_is_404),
    ("raw /../etc/passwd, ten deep: 400 or 404, never the file", dot_dot_is_refused),
    ("raw /%2e%2e/etc/passwd, ten deep: 400 or 404, never the file", encoded_dot_dot_is_refused),
    ("two pipelined requests: two responses, in order", pipelined_in_order),
    ("Connection: close: closed after the response", connection_close_closes),
    ("HTTP/1.0: closed after the response", http10_closes),
    ("HTTP/1.0 with keep-alive: kept open for a second request", http10_keep_alive),
    ("20 concurrent keep-alive connections x 10 requests: right bodies", concurrent_keep_alive),
];

/// The bytes of fixture file `i` (distinct in each, so a swapped body shows).
fn contents(i: usize) -> &'static [u8] {
    static CONTENTS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    let all = CONTENTS.get_or_init(|| {
        FILES
            .iter()
            .enumerate()
            .map(|(i, (_, len))| (0..*len).map(|j| ((j * 7 + i * 101) % 251) as u8).collect())
            .collect()
    });
    &all[i]
}

/// `name` in a URL path: every byte but the unreserved ones percent-encoded.
fn encoded(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

struct Server {
    name: &'static str,
    child: Child,
    port: u16,
    /// The fixture root, removed when the server is dropped.
    _root: tempfile::TempDir,
}

impl Server {
    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// Sends `request` on a new connection and reads until the server closes it (within 5 s).
    fn raw(&self, request: &str) -> Vec<u8> {
        let mut s = self.connect();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let (mut out, mut buf) = (Vec::new(), [0u8; 65536]);
        loop {
            match s.read_retry(&mut buf) {
                Ok(0) => return out,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => panic!("{request:?}: not closed within 5 s ({e}); got {:?}", String::from_utf8_lossy(&out)),
            }
        }
    }

    fn url(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/{}", self.port, encoded(name))
    }
}

impl Drop for Server {
    /// A server a failed case left running: killed with its process group (fork, prefork).
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.child.id())]).status();
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Whether `tool` runs at all.
fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// Whether gcc finds `header`.
fn have_header(header: &str) -> bool {
    let Ok(mut cpp) = Command::new("gcc")
        .args(["-E", "-x", "c", "-", "-o", "/dev/null"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    let _ = cpp.stdin.take().unwrap().write_all(format!("#include <{header}>\n").as_bytes());
    cpp.wait().is_ok_and(|s| s.success())
}

/// Builds `name` with bench/ref/build.sh into `dir`; the binary's path.
fn build(name: &str, dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/ref/build.sh");
    let out = Command::new("bash").arg(script).arg(dir).arg(name).output().expect("run bench/ref/build.sh");
    assert!(out.status.success(), "bench/ref/build.sh {name} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    dir.join(name)
}

/// Starts `binary ROOT 0 [workers]` on a new fixture root; waits for its startup line.
fn start(name: &'static str, binary: &Path, workers: Option<&str>) -> Server {
    let root = tempfile::tempdir().unwrap();
    for (i, (file, _)) in FILES.iter().enumerate() {
        std::fs::write(root.path().join(file), contents(i)).unwrap();
    }
    let mut command = Command::new(binary);
    command.arg(root.path()).arg("0").args(workers).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = command.spawn().expect("spawn the reference server");
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let port = line
        .trim_end()
        .strip_prefix("listening on http://127.0.0.1:")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{name}: startup line {line:?}"));
    Server { name, child, port, _root: root }
}

fn curl_gets_each_file(s: &Server) {
    for (i, (file, _)) in FILES.iter().enumerate() {
        let out = Command::new("curl").args(["-sS", "--max-time", "20"]).arg(s.url(file)).output().unwrap();
        assert!(out.status.success(), "curl {file:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout == contents(i), "curl {file:?}: {} bytes, not the file's {}", out.stdout.len(), FILES[i].1);
    }
}

fn head_has_length_and_no_body(s: &Server) {
    let path = encoded(HOSTILE);
    let reply = s.raw(&format!("HEAD /{path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    let text = String::from_utf8_lossy(&reply);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head in {text:?}"));
    assert!(head.starts_with("HTTP/1.1 200"), "{head:?}");
    assert_eq!(common::head_field(head, "content-length"), Some("3000"), "{head:?}");
    assert_eq!(body, "", "HEAD sent a body");
}

fn missing_is_404(s: &Server) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(s.url("no such <file> \"here\" 100%"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "404");
}

fn refuses(s: &Server, path: &str) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let reply = String::from_utf8_lossy(&s.raw(&request)).into_owned();
    let status = common::status_of(&reply);
    let first = reply.lines().next().unwrap_or("");
    assert!(!reply.contains("root:"), "{path} served /etc/passwd: {first:?}");
    assert!(status == 400 || status == 404, "{path}: {first:?}");
}

/// Ten `..` segments: from any temporary root, enough to reach `/` if one were followed.
fn dot_dot_is_refused(s: &Server) {
    refuses(s, &format!("{}/etc/passwd", "/..".repeat(10)));
}

fn encoded_dot_dot_is_refused(s: &Server) {
    refuses(s, &format!("{}/etc/passwd", "/%2e%2E".repeat(10)));
}

fn pipelined_in_order(s: &Server) {
    let mut c = s.connect();
    let hostile = encoded(HOSTILE);
    c.write_all(
        format!("GET /1k.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /{hostile} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
    )
    .unwrap();
    for i in [0, 2] {
        let (head, body) = read_response(&mut c);
        assert!(head.starts_with("HTTP/1.1 200"), "response {i}: {head:?}");
        assert!(body == contents(i), "response for {:?}: {} bytes, not that file", FILES[i].0, body.len());
    }
}

/// Whether the server closes `c` within 2 s (EOF or reset).
fn closes(c: &mut TcpStream) -> bool {
    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 64];
    match c.read_retry(&mut buf) {
        Ok(n) => n == 0,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

fn connection_close_closes(s: &Server) {
    let mut c = s.connect();
    c.write_all(b"GET /1k.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut c);
    assert!(head.starts_with("HTTP/1.1 200") && body == contents(0), "{head:?}");
    assert!(closes(&mut c), "still open 2 s after the response");
}

fn http10_closes(s: &Server) {
    let mut c = s.connect();
    c.write_all(b"GET /1k.bin HTTP/1.0\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut c);
    assert!(head.contains(" 200 ") && body == contents(0), "{head:?}");
    assert!(closes(&mut c), "still open 2 s after the response");
}

fn http10_keep_alive(s: &Server) {
    let mut c = s.connect();
    for _ in 0..2 {
        c.write_all(b"GET /1k.bin HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").unwrap();
        let (head, body) = read_response(&mut c);
        assert!(head.contains(" 200 ") && body == contents(0), "{head:?}");
        assert_eq!(common::head_field(&head, "connection").map(str::to_ascii_lowercase).as_deref(), Some("keep-alive"));
    }
}

fn concurrent_keep_alive(s: &Server) {
    let all_connected = Arc::new(Barrier::new(20));
    let clients: Vec<_> = (0..20)
        .map(|k| {
            let mut c = s.connect();
            let all_connected = Arc::clone(&all_connected);
            std::thread::spawn(move || {
                all_connected.wait();
                for r in 0..10 {
                    let i = (k + r) % FILES.len();
                    c.write_all(format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", encoded(FILES[i].0)).as_bytes())
                        .unwrap();
                    let (head, body) = read_response(&mut c);
                    assert!(head.starts_with("HTTP/1.1 200"), "client {k}, request {r}: {head:?}");
                    assert!(body == contents(i), "client {k}, request {r}: the wrong {} bytes", body.len());
                }
            })
        })
        .collect();
    for (k, client) in clients.into_iter().enumerate() {
        if let Err(e) = client.join() {
            std::panic::resume_unwind(Box::new(format!("client {k}: {}", panic_text(&*e))));
        }
    }
}

fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// The children of `pid`, with their state letter (`Z`: a zombie), from /proc.
fn children(pid: u32) -> Vec<(u32, char)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let mut fields = rest.split_whitespace();
        let state = fields.next().and_then(|s| s.chars().next()).unwrap_or('?');
        if fields.next().and_then(|p| p.parse::<u32>().ok()) == Some(pid) {
            found.push((child, state));
        }
    }
    found
}

/// Polls `done` every 20 ms for up to `limit`.
fn within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if done() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM with a keep-alive connection still open: the server exits 0 within 5 s; with
/// children, none is a zombie before and none is left after.
fn stops_on_sigterm(mut s: Server, has_children: bool) {
    let mut idle = s.connect();
    idle.write_all(b"GET /1k.bin HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    read_response(&mut idle);
    let pid = s.child.id();
    let mut kids = children(pid);
    if has_children {
        let reaped = within(Duration::from_secs(2), || {
            kids = children(pid);
            kids.iter().all(|&(_, state)| state != 'Z')
        });
        assert!(reaped, "{}: zombie children before SIGTERM: {kids:?}", s.name);
        assert!(!kids.is_empty(), "{}: no child while a connection is open", s.name);
    }
    signal(pid, "TERM");
    let status = wait_timeout(&mut s.child, Duration::from_secs(5));
    assert!(status.is_some_and(|st| st.success()), "{}: SIGTERM: {status:?} within 5 s", s.name);
    let gone = within(Duration::from_secs(2), || kids.iter().all(|(k, _)| !Path::new(&format!("/proc/{k}")).exists()));
    if !gone {
        for (k, _) in &kids {
            signal(*k, "KILL"); // not to leave them running after a failure
        }
    }
    assert!(gone, "{}: children left after it exited: {:?}", s.name, kids);
}

/// Builds, starts and checks one reference server: every row of [`CHECKS`], then SIGTERM.
fn check(name: &'static str) {
    let &(_, workers, has_children) = SERVERS.iter().find(|s| s.0 == name).unwrap();
    let test = format!("reference_servers::{name}");
    for tool in ["gcc", "curl"] {
        if !have(tool) {
            eprintln!("SKIPPED {test}: {tool} not found (apt-get install {tool}, or run scripts/test.sh)");
            return;
        }
    }
    if name == "uring" && !have_header("liburing.h") {
        eprintln!("SKIPPED {test}: <liburing.h> not found (apt-get install liburing-dev, or run scripts/test.sh)");
        return;
    }
    let bin = tempfile::tempdir().unwrap();
    let server = start(name, &build(name, bin.path()), workers);
    let mut failed = Vec::new();
    for (what, check) in CHECKS {
        let started = Instant::now();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&server))) {
            Ok(()) => eprintln!("{name}: ok   {what} ({} ms)", started.elapsed().as_millis()),
            Err(e) => {
                eprintln!("{name}: FAIL {what}: {}", panic_text(&*e));
                failed.push(format!("{name}: {what}: {}", panic_text(&*e)));
            }
        }
    }
    assert!(failed.is_empty(), "{} of {} checks failed:\n{}", failed.len(), CHECKS.len(), failed.join("\n"));
    stops_on_sigterm(server, has_children);
}

#[test]
fn iterative() {
    check("iterative");
}

#[test]
fn fork() {
    check("fork");
}

#[test]
fn thread() {
    check("thread");
}

#[test]
fn pool() {
    check("pool");
}

#[test]
fn prefork() {
    check("prefork");
}

#[test]
fn epoll() {
    check("epoll");
}

#[test]
fn uring() {
    check("uring");
}

#[test]
fn every_reference_server_has_a_case() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/ref");
    let mut sources: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".c").map(str::to_string))
        .collect();
    sources.sort();
    let mut listed: Vec<String> = SERVERS.iter().map(|s| s.0.to_string()).collect();
    listed.sort();
    assert_eq!(sources, listed, "bench/ref/*.c and this test's SERVERS differ");
}
