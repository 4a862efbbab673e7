//! `hybrid`'s own promises, beyond the whole suite it passes like every mode: a request
//! whose answer blocks is answered off the event loop, so it stalls nobody else (`event`
//! with one loop, the contrast row, is stalled by it), and a full worker pool answers 503
//! at once instead of queueing without bound.

mod common;

use common::Conn as TcpStream;
use common::{sleeper_handler, status_of, Fixture, Spidey, HELLO};
use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

fn start(mode: &str, fx: &Fixture, extra: &[&str]) -> Spidey {
    let mount = format!("/sleep={}", sleeper_handler().display());
    let mut args = vec!["--quiet", "--handler", mount.as_str(), "--workers", "1"];
    args.extend_from_slice(extra);
    Spidey::start(mode, &fx.root(), &args)
}

fn send(s: &Spidey, path: &str) -> TcpStream {
    let mut c = s.connect();
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    c
}

fn read_all(c: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// While one loop's only connection waits 1.5 s on a blocking handler, a static request
/// on another connection is answered at once in `hybrid` and only after the handler in
/// `event` (one loop, so the handler blocks it): the row that must differ shows the test
/// can tell the two apart.
#[test]
fn a_blocking_handler_stalls_no_static_request() {
    let cases = [("hybrid", true), ("event", false)];
    for (mode, static_is_prompt) in cases {
        let fx = Fixture::new();
        let s = start(mode, &fx, &[]);
        let mut slow = send(&s, "/sleep/x?1500");
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        let mut fast = send(&s, "/hello.txt");
        let reply = read_all(&mut fast);
        let waited = started.elapsed();
        assert_eq!(status_of(&reply), 200, "{mode}: {reply}");
        assert!(reply.ends_with(HELLO), "{mode}: {reply}");
        let prompt = waited < Duration::from_millis(700);
        assert_eq!(prompt, static_is_prompt, "{mode}: the static request took {waited:?}");
        let slow_reply = read_all(&mut slow);
        assert!(status_of(&slow_reply) == 200 && slow_reply.ends_with("slept"), "{mode}: {slow_reply}");
    }
}

/// `--pool-threads 1`: one job runs and 16 wait; the next heavy request is 503 with
/// `Retry-After` at once, while static requests, answered on the loop, are still served.
/// The queued jobs are still answered. Each job sleeps 600 ms, longer than the 250 ms
/// this takes to set up, so none has finished (freeing a place) when the 18th arrives.
#[test]
fn a_full_pool_answers_503_at_once() {
    let fx = Fixture::new();
    let s = start("hybrid", &fx, &["--pool-threads", "1"]);
    // The first job must be running (taken off the queue) before the other 16 fill the
    // queue: sent together, the worker (at nice 10) may not have taken it yet, the 17th is
    // refused, and a place frees for the 18th.
    let mut held = vec![send(&s, "/sleep/x?600")];
    std::thread::sleep(Duration::from_millis(150));
    held.extend((0..16).map(|_| send(&s, "/sleep/x?600")));
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let mut refused = send(&s, "/sleep/x?600");
    let reply = read_all(&mut refused);
    assert_eq!(status_of(&reply), 503, "{reply}");
    assert!(reply.contains("Retry-After: 1\r\n"), "{reply}");
    assert!(started.elapsed() < Duration::from_millis(500), "503 took {:?}", started.elapsed());
    assert_eq!(s.get("/hello.txt", &[]).status, 200, "static files do not need the pool");
    for c in &mut held {
        let r = read_all(c);
        assert!(status_of(&r) == 200 && r.ends_with("slept"), "a queued job was dropped: {r}");
    }
}

#[test]
fn pool_threads_must_be_a_positive_count() {
    for bad in ["0", "x", "5000"] {
        let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .args(["serve", "--port", "0", "--mode", "hybrid", "--pool-threads", bad, "."])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--pool-threads {bad}");
    }
}
