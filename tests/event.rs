//! The event-driven modes (`event`, `uring`) under the loads they exist for: thousands of
//! idle connections, slow clients on both sides, pipelining. Each case runs once per mode.

mod common;

use common::Conn;
use common::{read_response, status_of, Fixture, ReadRetry, Spidey};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

macro_rules! for_each_event_mode {
    ($($case:ident),* $(,)?) => {
        mod event {
            $( #[test] fn $case() { super::$case("event"); } )*
        }
        mod uring {
            $( #[test] fn $case() { super::$case("uring"); } )*
        }
    };
}

for_each_event_mode!(
    ten_thousand_idle_connections_stay_under_64_mib,
    slowloris_does_not_delay_a_normal_request,
    pipelined_requests_are_answered_in_order,
    big_file_reaches_a_slow_reader_whole,
);

const GET_HELLO: &[u8] = b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n";

/// The resident set of process `pid`, in KiB, from /proc/PID/status.
fn vm_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Lets this test process hold 10,000 sockets.
fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    setrlimit(Resource::Nofile, limit).unwrap();
}

fn ten_thousand_idle_connections_stay_under_64_mib(mode: &str) {
    const CONNS: usize = 10_000;
    raise_fd_limit();
    let fx = Fixture::new();
    let args = ["--quiet", "--workers", "2", "--max-conns", "12000", "--idle-timeout", "120s"];
    let spidey = Spidey::start(mode, &fx.root(), &args);
    let mut idle = Vec::with_capacity(CONNS);
    for i in 0..CONNS {
        let mut s = spidey.connect();
        if i % 10 == 0 {
            // Every tenth one has served a request first: a true kept-alive connection.
            s.write_all(GET_HELLO).unwrap();
            assert!(read_response(&mut s).0.starts_with("HTTP/1.1 200"), "connection {i}");
        }
        idle.push(s);
    }
    // An active client is still served while they are all held open.
    let reply = spidey.get("/hello.txt", &[]);
    assert_eq!((reply.status, reply.text().as_str()), (200, common::HELLO));
    let rss = vm_rss_kib(spidey.child.id());
    assert!(rss < 64 * 1024, "{CONNS} idle connections: VmRSS {rss} KiB, want < 64 MiB");
    // They are really still open: the last one still gets answers.
    let last = idle.last_mut().unwrap();
    last.write_all(GET_HELLO).unwrap();
    assert!(read_response(last).0.starts_with("HTTP/1.1 200"));
}

fn slowloris_does_not_delay_a_normal_request(mode: &str) {
    const CLIENTS: usize = 64;
    let fx = Fixture::new();
    let spidey = Spidey::start(mode, &fx.root(), &["--quiet", "--workers", "1"]);
    let request = b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nX-Slow: trickling-one-byte-at-a-time\r\n\r\n";
    let mut slow: Vec<Conn> = (0..CLIENTS).map(|_| spidey.connect()).collect();
    let bytes_sent = Arc::new(AtomicUsize::new(0));
    let trickle = {
        let bytes_sent = Arc::clone(&bytes_sent);
        std::thread::spawn(move || {
            for &b in request.iter() {
                for s in &mut slow {
                    s.write_all(&[b]).unwrap();
                }
                bytes_sent.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(40));
            }
            slow
        })
    };
    while bytes_sent.load(Ordering::SeqCst) < 3 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let reply = spidey.get("/hello.txt", &[]);
    let sent_when_served = bytes_sent.load(Ordering::SeqCst);
    assert_eq!((reply.status, reply.text().as_str()), (200, common::HELLO));
    assert!(
        sent_when_served < request.len(),
        "the normal request was served only after the slowloris finished ({sent_when_served} bytes each)"
    );
    // The trickling clients are answered too, once their heads are whole.
    for mut s in trickle.join().unwrap() {
        let (head, body) = read_response(&mut s);
        assert_eq!((status_of(&head), body.as_slice()), (200, common::HELLO.as_bytes()));
    }
}

fn pipelined_requests_are_answered_in_order(mode: &str) {
    let fx = Fixture::new();
    let spidey = Spidey::start(mode, &fx.root(), &["--quiet", "--workers", "1"]);
    let mut s = spidey.connect();
    // Three requests in one write, the fourth split across two writes.
    let batch = b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n\
                  HEAD /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n\
                  GET /digits.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=2-4\r\n\r\n\
                  GET /page.html HT";
    s.write_all(batch).unwrap();
    let cases: [(u16, &[u8]); 3] = [(200, common::HELLO.as_bytes()), (200, b""), (206, b"234")];
    for (i, (status, body)) in cases.into_iter().enumerate() {
        let (head, got) = if i == 1 { head_only(&mut s) } else { read_response(&mut s) };
        assert_eq!((status_of(&head), got.as_slice()), (status, body), "response {i}: {head}");
    }
    s.write_all(b"TP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let (head, body) = read_response(&mut s);
    assert_eq!((status_of(&head), body.as_slice()), (200, &b"<p>page</p>\n"[..]));
    assert!(common::closed_within(&mut s, Duration::from_secs(5)), "Connection: close was not honoured");
}

/// Reads a response to HEAD: the head alone, whatever its Content-Length says.
fn head_only(s: &mut Conn) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    (String::from_utf8_lossy(&head).into_owned(), Vec::new())
}

fn big_file_reaches_a_slow_reader_whole(mode: &str) {
    let fx = Fixture::new();
    let spidey = Spidey::start(mode, &fx.root(), &["--quiet", "--workers", "1"]);
    let mut slow = spidey.connect();
    slow.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    // While the slow reader's socket is full, the one loop still serves others.
    std::thread::sleep(Duration::from_millis(300));
    let reply = spidey.get("/hello.txt", &[]);
    assert_eq!(reply.status, 200);
    let (head, body) = {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            slow.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let mut body = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        while body.len() < 4 * 1024 * 1024 {
            let n = slow.read_retry(&mut chunk).unwrap();
            assert!(n > 0, "connection closed after {} body bytes", body.len());
            body.extend_from_slice(&chunk[..n]);
            if body.len() < 1024 * 1024 {
                std::thread::sleep(Duration::from_millis(5)); // a slow reader, for a while
            }
        }
        (String::from_utf8_lossy(&head).into_owned(), body)
    };
    assert_eq!(status_of(&head), 200, "{head}");
    let want: Vec<u8> = (0..4 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    assert!(body == want, "the 4 MiB body arrived corrupted");
    // Kept alive: the same connection answers again.
    slow.write_all(GET_HELLO).unwrap();
    assert!(read_response(&mut slow).0.starts_with("HTTP/1.1 200"));
}
