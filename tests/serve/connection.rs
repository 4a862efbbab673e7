//! A connection's life: keep-alive by version, pipelining, the corked last response, the
//! lingering close, the head and idle timeouts, `--max-requests`.

use super::start;
use crate::common::*;
use std::io::Write;
use std::time::Duration;

crate::for_each_mode!(
    keep_alive_by_version,
    pipelined_requests_answered_in_order,
    close_response_survives_unread_pipelined_request,
    linger_is_bounded_by_idle_timeout,
    head_timeout_answers_408,
    idle_keep_alive_times_out,
    max_requests_per_connection,
);

fn keep_alive_by_version(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let cases: &[(&str, Option<&str>, bool)] = &[
        // request head → Connection field in the answer, connection kept open
        ("GET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n", None, true),
        ("GET /digits.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", Some("close"), false),
        ("GET /digits.txt HTTP/1.0\r\n\r\n", Some("close"), false),
        ("GET /digits.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", Some("keep-alive"), true),
    ];
    for (request, field, kept) in cases {
        let mut c = s.connect();
        c.write_all(request.as_bytes()).unwrap();
        let (head, body) = read_response(&mut c);
        assert_eq!(body, b"0123456789", "{request:?}");
        assert_eq!(head_field(&head, "connection"), *field, "{request:?}");
        assert_eq!(!closed_within(&mut c, Duration::from_millis(300)), *kept, "{request:?}");
    }
}

fn pipelined_requests_answered_in_order(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let mut c = s.connect();
    let mut batch = Vec::new();
    for path in ["/digits.txt", "/hello.txt", "/missing", "/digits.txt"] {
        batch.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    c.write_all(&batch).unwrap();
    let want: [(&str, &[u8]); 4] =
        [("200", b"0123456789"), ("200", HELLO.as_bytes()), ("404", b""), ("200", b"0123456789")];
    for (status, body) in want {
        let (head, got) = read_response(&mut c);
        assert_eq!(&head[9..12], status, "{head}");
        if !body.is_empty() {
            assert_eq!(got, body);
        }
    }
}

/// Guards the corked last response (`Session::cork_last_response`): a request sent after
/// a `Connection: close` one is still unread when the server closes (the `--delay` makes
/// sure), and closing with unread input resets the connection. The whole first response
/// must reach the client first, for a small file and for one larger than a socket buffer.
fn close_response_survives_unread_pipelined_request(mode: &str) {
    let (_fx, s) = start(mode, &["--delay", "200ms"]);
    for (path, len) in [("/digits.txt", 10), ("/big.bin", 4 * 1024 * 1024)] {
        let mut c = s.connect();
        c.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let (head, body) = read_response(&mut c);
        assert_eq!(status_of(&head), 200, "{path}: {head}");
        assert_eq!(body.len(), len, "{path}");
    }
}

/// The lingering close drops input only until the idle timeout counted from the end of
/// the response, not from the client's last byte: a client that trickles bytes cannot
/// hold the connection for good. The server's full close shows as a failed write.
fn linger_is_bounded_by_idle_timeout(mode: &str) {
    let (_fx, s) = start(mode, &["--idle-timeout", "1s"]);
    let mut c = s.connect();
    c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nleftover").unwrap();
    let (head, body) = read_response(&mut c);
    assert_eq!((status_of(&head), body), (200, HELLO.as_bytes().to_vec()));
    let start = std::time::Instant::now();
    while c.write_all(b"x").is_ok() {
        assert!(start.elapsed() < Duration::from_secs(4), "still lingering after {:?}", start.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn head_timeout_answers_408(mode: &str) {
    let (_fx, s) = start(mode, &["--head-timeout", "1s"]);
    let mut c = s.connect();
    c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n").unwrap();
    let r = read_to_close(&mut c);
    assert_eq!(status_of(&r), 408, "{r}");
}

fn idle_keep_alive_times_out(mode: &str) {
    let (_fx, s) = start(mode, &["--idle-timeout", "1s"]);
    let mut c = s.connect();
    c.write_all(b"GET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    read_response(&mut c);
    assert!(!closed_within(&mut c, Duration::from_millis(300)), "closed before the idle timeout");
    assert!(closed_within(&mut c, Duration::from_secs(5)), "still open after the idle timeout");
}

fn max_requests_per_connection(mode: &str) {
    let (_fx, s) = start(mode, &["--max-requests", "2"]);
    let mut c = s.connect();
    c.write_all(b"GET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let (first, _) = read_response(&mut c);
    let (second, _) = read_response(&mut c);
    assert_eq!(head_field(&first, "connection"), None);
    assert_eq!(head_field(&second, "connection"), Some("close"));
    assert!(closed_within(&mut c, Duration::from_secs(2)));
}
