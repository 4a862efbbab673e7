//! The seeds' own implementation choices as server options (the lab's arms that tell an
//! architecture from Spidey's implementation of it): `--fork-after-parse` (seed 000's
//! parent parses before it forks), `--copy-loop` (seed 004's 5000-byte read/send loop)
//! and a fixed `pool` (seed 004's cores+2 threads, `--workers N`). Each is tested in every
//! mode it applies to and refused, one line and exit 2, where it does not.

mod common;

use common::*;
use std::io::Write;
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// The sizes around the copy loop's 5000-byte buffer, and a large file.
const SIZES: [usize; 6] = [0, 1, 4999, 5000, 5001, 3 << 20];

fn body_of(size: usize) -> Vec<u8> {
    (0..size).map(|i| (i % 253) as u8).collect()
}

fn sized_fixture() -> Fixture {
    let fx = Fixture::new();
    for size in SIZES {
        std::fs::write(fx.dir.path().join(format!("s{size}.bin")), body_of(size)).unwrap();
    }
    fx
}

/// The read(2)-family system calls (sendfile and pread included) that the server's
/// process tree has made: its own (reaped children added in, proc(5) /proc/PID/io) and
/// its live children's.
fn tree_syscr(pid: u32) -> u64 {
    let syscr = |pid: u32| {
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
        io.lines().find_map(|l| l.strip_prefix("syscr: ")).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0)
    };
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    syscr(pid) + children.split_whitespace().filter_map(|c| c.parse().ok()).map(syscr).sum::<u64>()
}

/// `tree_syscr` once it has stopped changing (a forked child reaped, a worker idle).
fn settled_syscr(pid: u32) -> u64 {
    let mut last = tree_syscr(pid);
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(200));
        let now = tree_syscr(pid);
        if now == last && std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).is_ok() {
            return now;
        }
        last = now;
    }
    last
}

/// Fetches every size, and a range across a buffer boundary, on one kept-alive connection;
/// returns the read-family system calls the 3 MiB body cost the server.
fn fetch_all(s: &Spidey) -> u64 {
    let pid = s.child.id();
    let mut c = s.connect();
    let mut big_cost = 0;
    for size in SIZES {
        let before = settled_syscr(pid);
        c.write_all(format!("GET /s{size}.bin HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
        let (head, body) = read_response(&mut c);
        assert_eq!(status_of(&head), 200, "{size}: {head}");
        assert!(body == body_of(size), "{size}-byte body differs ({} bytes came)", body.len());
        if size == 3 << 20 {
            big_cost = settled_syscr(pid) - before;
        }
    }
    c.write_all(b"GET /s5001.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=4990-5000\r\nConnection: close\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut c);
    assert_eq!((status_of(&head), body.as_slice()), (206, &body_of(5001)[4990..]), "{head}");
    big_cost
}

/// `--copy-loop 5000`: every body is exact at the buffer's edges and beyond, and a 3 MiB
/// body costs at least one read per 5000 bytes (sendfile alone makes far fewer calls: the
/// same mode without the flag is checked to stay under half of that).
fn copy_loop_sends_exact_bodies(mode: &str) {
    if plaintext_only("--copy-loop is refused over TLS") {
        return;
    }
    let fx = sized_fixture();
    let rounds = ((3u64 << 20) / 5000) + 1;
    let s = Spidey::start(mode, &fx.root(), &["--quiet", "--copy-loop", "5000"]);
    let copied = fetch_all(&s);
    assert!(copied >= rounds, "{mode}: 3 MiB with --copy-loop 5000 took {copied} reads, want >= {rounds}");
    drop(s);
    let s = Spidey::start(mode, &fx.root(), &["--quiet"]);
    let sent = fetch_all(&s);
    assert!(sent < rounds / 2, "{mode}: 3 MiB by sendfile took {sent} reads: the count cannot tell the loop apart");
}

/// A `spidey serve` that must refuse to start: its exit code and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let fx = Fixture::new();
    let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .arg("serve")
        .arg(fx.root())
        .args(["--port", "0"])
        .args(args)
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn seed_choices_are_refused_where_they_do_not_apply() {
    let pki = common::tls::pki();
    let (cert, key) = (pki.cert.to_str().unwrap(), pki.key.to_str().unwrap());
    let tls = ["--tls-cert", cert, "--tls-key", key];
    let mut cases: Vec<(Vec<&str>, &str)> = ["single", "thread", "pool", "prefork", "event", "uring", "hybrid"]
        .into_iter()
        .map(|m| (vec!["--mode", m, "--fork-after-parse"], "--fork-after-parse applies to --mode fork only"))
        .collect();
    cases.push((
        [&["--mode", "fork", "--fork-after-parse"][..], &tls].concat(),
        "--fork-after-parse is plain HTTP only",
    ));
    cases.push(([&["--mode", "event", "--copy-loop", "5000"][..], &tls].concat(), "--copy-loop is plain HTTP only"));
    cases.push((vec!["--copy-loop", "0"], "'0'"));
    for (args, want) in cases {
        let (code, stderr) = refused(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.lines().next().is_some_and(|l| l.contains(want)), "{args:?}: {stderr}");
    }
}

/// A script that echoes its request body: the body's first bytes may have been read by
/// the parent along with the head.
fn cgi_fixture() -> Fixture {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let dir = fx.dir.path().join("cgi-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("echo.sh");
    std::fs::write(&script, "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\ncat\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    fx
}

/// What a raw exchange returned, without the Date fields (they differ by the second).
fn exchange(port: u16, parts: &[&[u8]]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for part in parts {
        s.write_all(part).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
    let text = read_to_close(&mut s);
    text.split("\r\n").filter(|l| !l.starts_with("Date: ")).collect::<Vec<_>>().join("\r\n")
}

/// `--fork-after-parse` answers every request exactly as plain `fork` does: whole heads,
/// heads in pieces, pipelined requests, bodies that came with the head, bad heads.
#[test]
fn fork_after_parse_answers_as_fork_does() {
    if plaintext_only("--fork-after-parse is refused over TLS") {
        return;
    }
    let fx = cgi_fixture();
    let plain = Spidey::start("fork", &fx.root(), &["--quiet", "--cgi"]);
    let parsed = Spidey::start("fork", &fx.root(), &["--quiet", "--cgi", "--fork-after-parse"]);
    let huge = format!("GET / HTTP/1.1\r\nHost: t\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let cases: [(&str, Vec<&[u8]>, u16); 8] = [
        ("a GET", vec![b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"], 200),
        ("a HEAD", vec![b"HEAD /hello.txt HTTP/1.0\r\n\r\n"], 200),
        ("a head in pieces", vec![b"GET /hel", b"lo.txt HTTP/1.1\r\nHo", b"st: t\r\n\r\n"], 200),
        (
            "two pipelined",
            vec![b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n"],
            200,
        ),
        ("a missing file", vec![b"GET /nope HTTP/1.1\r\nHost: t\r\n\r\n"], 404),
        ("a bad head", vec![b"BAD\r\n\r\n"], 400),
        ("a head too large", vec![huge.as_bytes()], 431),
        (
            "a body with the head",
            vec![
                b"POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello",
                b" world",
            ],
            200,
        ),
    ];
    for (name, parts, status) in cases {
        let want = exchange(plain.port, &parts);
        let got = exchange(parsed.port, &parts);
        assert_eq!(status_of(&got), status, "{name}: {got}");
        assert_eq!(got, want, "{name}");
    }
}

/// Sends a head's first line on a new connection and returns it, the rest unsent.
fn begin_slow_head(port: u16) -> TcpStream {
    let mut a = TcpStream::connect(("127.0.0.1", port)).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    a.write_all(b"GET /hello.txt HTTP/1.1\r\n").unwrap();
    a
}

/// How long a whole request on a new connection waits for its answer, while a client
/// trickles its head for `trickle`: with `--fork-after-parse` the parent is reading that
/// head, so the next connection waits in the listen queue; in plain `fork` a child waits.
fn wait_behind_slow_head(extra: &[&str], trickle: Duration) -> Duration {
    let fx = Fixture::new();
    let s = Spidey::start("fork", &fx.root(), &[&["--quiet"], extra].concat());
    let mut slow = begin_slow_head(s.port);
    std::thread::sleep(Duration::from_millis(200));
    let port = s.port;
    let next = std::thread::spawn(move || {
        let start = Instant::now();
        let reply = exchange(port, &[b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"]);
        assert_eq!(status_of(&reply), 200, "{reply}");
        start.elapsed()
    });
    std::thread::sleep(trickle - Duration::from_millis(200));
    slow.write_all(b"Host: t\r\nConnection: close\r\n\r\n").unwrap();
    let reply = read_to_close(&mut slow);
    assert_eq!(status_of(&reply), 200, "the slow client: {reply}");
    next.join().unwrap()
}

#[test]
fn fork_after_parse_serialises_slow_heads() {
    if plaintext_only("--fork-after-parse is refused over TLS") {
        return;
    }
    let trickle = Duration::from_secs(2);
    let parsed = wait_behind_slow_head(&["--fork-after-parse"], trickle);
    assert!(parsed >= Duration::from_millis(1500), "with the parent parsing, the next client waited only {parsed:?}");
    let plain = wait_behind_slow_head(&[], trickle);
    assert!(plain < Duration::from_millis(1500), "plain fork held the next client {plain:?}");
}

/// A head that never ends gets its 408 at the head deadline counted from its first byte:
/// the child does not start a new one.
#[test]
fn fork_after_parse_keeps_the_head_deadline() {
    if plaintext_only("--fork-after-parse is refused over TLS") {
        return;
    }
    let fx = Fixture::new();
    let s = Spidey::start("fork", &fx.root(), &["--quiet", "--fork-after-parse", "--head-timeout", "2s"]);
    let start = Instant::now();
    let mut slow = begin_slow_head(s.port);
    let reply = read_to_close(&mut slow);
    let took = start.elapsed();
    assert_eq!(status_of(&reply), 408, "{reply}");
    assert!(took >= Duration::from_millis(1900) && took < Duration::from_millis(3500), "408 after {took:?}");
    // The parent is free again: the next connection is answered.
    assert_eq!(status_of(&exchange(s.port, &[b"GET /hello.txt HTTP/1.0\r\n\r\n"])), 200);
}

/// Connections that close before sending a byte leave the parent free for the next.
#[test]
fn fork_after_parse_passes_over_empty_connections() {
    if plaintext_only("--fork-after-parse is refused over TLS") {
        return;
    }
    let fx = Fixture::new();
    let s = Spidey::start("fork", &fx.root(), &["--quiet", "--fork-after-parse"]);
    for _ in 0..20 {
        drop(TcpStream::connect(("127.0.0.1", s.port)).unwrap());
    }
    let start = Instant::now();
    assert_eq!(status_of(&exchange(s.port, &[b"GET /hello.txt HTTP/1.0\r\n\r\n"])), 200);
    assert!(start.elapsed() < Duration::from_secs(3), "answered after {:?}", start.elapsed());
}

/// The threads of `pid` that serve, leaving out the signal thread (as tests/modes.rs counts).
fn threads_of(pid: u32) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().filter_map(Result::ok);
    let names = tasks.map(|t| std::fs::read_to_string(t.path().join("comm")).unwrap_or_default());
    names.filter(|name| name.trim() != "spidey-signals").count()
}

/// Seed 004's pool is cores+2 threads, fixed: `--workers N` (one number) is such a pool,
/// neither growing under a crowd nor shrinking when idle, unlike the default cores+2-256.
#[test]
fn pool_with_one_worker_count_is_fixed() {
    let fx = Fixture::new();
    let s = Spidey::start("pool", &fx.root(), &["--quiet", "--workers", "3", "--idle-timeout", "30s"]);
    let pid = s.child.id();
    let get = b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n";
    let held: Vec<Conn> = (0..3)
        .map(|_| {
            let mut c = s.connect();
            c.write_all(get).unwrap();
            assert_eq!(status_of(&read_response(&mut c).0), 200);
            c
        })
        .collect();
    let mut fourth = s.connect();
    fourth.write_all(get).unwrap();
    fourth.set_read_timeout(Some(Duration::from_millis(700))).unwrap();
    let mut byte = [0u8; 1];
    assert!(fourth.read_retry(&mut byte).is_err(), "a fourth connection was served: the pool grew");
    assert_eq!(threads_of(pid), 4, "the main thread and 3 workers");
    drop(held);
    fourth.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    fourth.read_retry(&mut byte).unwrap();
    // Idle longer than a worker above the minimum would live (2 s): none retires.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(threads_of(pid), 4, "a fixed pool shrank");
}

/// Statuses of `n` simultaneous requests for a script that sleeps half a second.
fn simultaneous_script_statuses(s: &Spidey, n: usize) -> Vec<u16> {
    let port = s.port;
    let clients: Vec<_> = (0..n)
        .map(|_| {
            std::thread::spawn(move || {
                let reply = exchange(port, &[b"GET /cgi-bin/nap.sh HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"]);
                status_of(&reply)
            })
        })
        .collect();
    let mut statuses: Vec<u16> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    statuses.sort();
    statuses
}

/// Seed 003's baseline had no admission limit: overload queued, and timed out. With
/// --max-cgi at least --max-conns (the lab's `cgi unbounded` arm) a 503 for want of a
/// slot cannot happen, since a connection runs one script at a time: surplus connections
/// wait for one to close. One slot fewer than connections does 503 (the check can fail).
fn max_cgi_at_max_conns_never_refuses(mode: &str) {
    if plaintext_only("counts scripts, not TLS") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let dir = fx.dir.path().join("cgi-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("nap.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 0.5\nprintf 'Content-Type: text/plain\\n\\nrested\\n'\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // One event loop, as the lab's arm runs.
    let one_loop: &[&str] = if matches!(mode, "event" | "uring" | "hybrid") { &["--workers", "1"] } else { &[] };
    let args = |cgi: &'static str| [&["--quiet", "--cgi", "--max-conns", "2", "--max-cgi", cgi][..], one_loop].concat();
    let s = Spidey::start(mode, &fx.root(), &args("2"));
    assert_eq!(simultaneous_script_statuses(&s, 6), vec![200; 6], "{mode}: --max-cgi 2 --max-conns 2");
    drop(s);
    if mode == "single" {
        return; // one connection at a time: never two scripts, so never a 503 either way
    }
    let s = Spidey::start(mode, &fx.root(), &args("1"));
    let statuses = simultaneous_script_statuses(&s, 6);
    assert!(statuses.contains(&503), "{mode}: --max-cgi 1 --max-conns 2 refused none: {statuses:?}");
}

for_each_mode!(copy_loop_sends_exact_bodies, max_cgi_at_max_conns_never_refuses);
