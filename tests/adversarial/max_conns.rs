//! `--max-conns`: one global bound with one behaviour in every mode. Beyond it, clients
//! wait in the kernel's listen queue (never reset, never accepted and dropped) and are
//! served as others leave; and no mode lets more connections in than the flag says,
//! however many loops or workers share the count.

use super::table::read_one;
use crate::common::{status_of, Conn, Spidey, HELLO};
use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const MAX: usize = 40;
const CLIENTS: usize = 60;

/// Modes whose every open connection is served at once, so the first `MAX` clients must be
/// answered before any leaves (`single` serves one at a time, `pool` and `prefork` one per
/// worker, and `prefork`'s kernel hashing may queue a client behind a busy worker).
fn serves_all_open(mode: &str) -> bool {
    matches!(mode, "thread" | "fork" | "event" | "uring")
}

/// A client: connects, sends a keep-alive GET, reports its response (or the error that
/// ended it) as `(index, Ok/Err)`, then holds the connection until told to close.
fn client(port: u16, tls: bool, i: usize, done: mpsc::Sender<(usize, Result<(), String>)>, close: mpsc::Receiver<()>) {
    let result = (|| {
        let s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
        let mut s = if tls { Conn::tls(s) } else { Conn::plain(s) };
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n").map_err(|e| format!("write: {e}"))?;
        let (head, body) = read_one(&mut s).map_err(|e| format!("no response: {e}"))?;
        if status_of(&head) != 200 || body != HELLO.as_bytes() {
            return Err(format!("got {head:?}"));
        }
        Ok(s)
    })();
    match result {
        Ok(s) => {
            let _ = done.send((i, Ok(())));
            let _ = close.recv();
            drop(s);
        }
        Err(e) => {
            let _ = done.send((i, Err(e)));
        }
    }
}

/// 60 clients against `--max-conns 40`, each holding its connection once answered: none
/// is reset; at most 40 are answered while they all hold on (exactly 40 in the modes that
/// serve every open connection at once); and as the answered ones leave, the rest are
/// answered too, every one with its 200.
fn check_bound(mode: &str, args: &[&str]) {
    let fx = crate::common::Fixture::new();
    let max = MAX.to_string();
    let mut all_args = vec!["--quiet", "--max-conns", &max, "--idle-timeout", "60s"];
    all_args.extend_from_slice(args);
    let server = Spidey::start(mode, &fx.root(), &all_args);
    let (done_tx, done) = mpsc::channel();
    let mut closers = Vec::new();
    let mut threads = Vec::new();
    for i in 0..CLIENTS {
        let (close_tx, close_rx) = mpsc::channel();
        closers.push(Some(close_tx));
        let (port, tls, done_tx) = (server.port, server.tls, done_tx.clone());
        threads.push(std::thread::spawn(move || client(port, tls, i, done_tx, close_rx)));
    }
    let mut answered = Vec::new();
    let mut failures = Vec::new();
    // First wave: answers until none has come for a second (10 s at most).
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match done.recv_timeout(Duration::from_secs(1)) {
            Ok((i, Ok(()))) => answered.push(i),
            Ok((i, Err(e))) => failures.push(format!("client {i}: {e}")),
            Err(_) => break,
        }
    }
    assert!(failures.is_empty(), "{mode}: clients failed while all held on:\n{}", failures.join("\n"));
    let first = answered.len();
    assert!(first <= MAX, "{mode}: {first} connections answered at once under --max-conns {MAX}");
    if serves_all_open(mode) {
        assert_eq!(first, MAX, "{mode}: only {first} of the first {MAX} clients were answered");
    } else {
        assert!(first > 0, "{mode}: nobody was answered");
    }
    // Then each answered client leaves, and the others are answered as places free up.
    for &i in &answered {
        closers[i].take();
    }
    while answered.len() < CLIENTS {
        match done.recv_timeout(Duration::from_secs(15)) {
            Ok((i, Ok(()))) => {
                answered.push(i);
                closers[i].take();
            }
            Ok((i, Err(e))) => panic!("{mode}: client {i} failed: {e} ({} answered)", answered.len()),
            Err(_) => {
                panic!("{mode}: {} of {CLIENTS} answered; the rest waited 15 s after places freed", answered.len())
            }
        }
    }
    drop(closers);
    for t in threads {
        t.join().unwrap();
    }
}

/// The bound with each mode's default worker count.
fn max_conns_queues_the_rest_until_places_free(mode: &str) {
    check_bound(mode, &[]);
}

/// The bound with three loops or workers, which do not divide it: one count shared by
/// all (a per-loop share of 40 / 3, rounded up, let 42 in).
fn max_conns_is_one_count_across_workers(mode: &str) {
    check_bound(mode, &crate::common::workers(mode, "3"));
}

crate::for_each_mode!(max_conns_queues_the_rest_until_places_free, max_conns_is_one_count_across_workers);
