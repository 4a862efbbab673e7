//! Slow clients: a head trickled a byte at a time, a body that never finishes, an idle
//! connection and a client that never reads are all let go within the server's timeouts.

use crate::common::{status_of, Fixture, ReadRetry, Spidey};
use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

const ARGS: &[&str] = &["--quiet", "--head-timeout", "1s", "--idle-timeout", "1s", "--send-timeout", "1s"];
/// How long past its timeout the server may take to let a connection go.
const SLACK: Duration = Duration::from_secs(3);

/// Sends `prefix`, then one byte of `drip` every 100 ms, until the server answers or closes.
/// Returns what it answered and how long the connection lasted.
fn trickle(server: &Spidey, prefix: &[u8], drip: u8) -> (String, Duration) {
    let mut s = server.connect();
    s.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let start = Instant::now();
    let mut got = Vec::new();
    let _ = s.write_all(prefix);
    while start.elapsed() < Duration::from_secs(15) {
        let mut buf = [0u8; 4096];
        match s.read_retry(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
        if s.write_all(&[drip]).is_err() {
            break;
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), start.elapsed())
}

/// Slowloris: a head that never ends, a byte at a time → 408 and closed within --head-timeout.
fn slowloris_head(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), ARGS);
    let (answer, lasted) = trickle(&server, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ", b'a');
    assert_eq!(status_of(&answer), 408, "{answer:?}");
    assert!(lasted < Duration::from_secs(1) + SLACK, "held for {lasted:?}");
}

/// A byte at a time from the very first byte of the request line.
fn slowloris_request_line(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), ARGS);
    let (answer, lasted) = trickle(&server, b"G", b'E');
    assert_eq!(status_of(&answer), 408, "{answer:?}");
    assert!(lasted < Duration::from_secs(1) + SLACK, "held for {lasted:?}");
}

/// A body that trickles in: the server does not wait for it (it answers and closes).
fn slow_body(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), ARGS);
    let head = b"POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n";
    let (answer, lasted) = trickle(&server, head, b'b');
    assert_eq!(status_of(&answer), 405, "{answer:?}");
    assert!(lasted < Duration::from_secs(1) + SLACK, "held for {lasted:?}");
}

/// A connection that never sends a byte is closed, without a response, after --idle-timeout.
fn idle_connection(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), ARGS);
    let mut s = server.connect();
    let start = Instant::now();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(out.is_empty(), "{:?}", String::from_utf8_lossy(&out));
    assert!(start.elapsed() < Duration::from_secs(1) + SLACK, "held for {:?}", start.elapsed());
}

/// A client that asks for 32 MiB with a 4 KiB receive window and never reads: the server
/// gives up after --send-timeout, so a later read finds the end, well short of the file.
fn slow_reader(mode: &str) {
    const SIZE: usize = 32 << 20;
    let fx = Fixture::new();
    std::fs::write(fx.root().join("huge.bin"), vec![7u8; SIZE]).unwrap();
    let server = Spidey::start(mode, &fx.root(), ARGS);
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&std::net::SocketAddr::from(([127, 0, 0, 1], server.port)).into()).unwrap();
    let mut s = server.wrap(socket.into());
    s.write_all(b"GET /huge.bin HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_secs(1) + SLACK);
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut total = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let ended = loop {
        match s.read_retry(&mut buf) {
            Ok(0) => break true,
            Ok(n) => total += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
    };
    assert!(ended, "the server still held the connection after {total} bytes");
    assert!(total < SIZE, "the whole file was sent ({total} bytes): the test did not exercise the timeout");
}

crate::for_each_mode!(slowloris_head, slowloris_request_line, slow_body, idle_connection, slow_reader);
