//! Pipelining: long streams of requests on one connection, written at once, far longer
//! than any receive buffer. Every request must be answered, in order, exactly once; a
//! server that loses received bytes (a short copy into a nearly full buffer) merges
//! requests, answers fewer, or answers a request hidden in a body.

use super::table::read_one;
use crate::common::{status_of, Spidey, HELLO};
use std::io::Write;
use std::time::Duration;

/// `GET /hello.txt` with an `X-Pad` header of `pad` bytes (`pad` may be 0: no header).
fn padded_get(pad: usize, close: bool) -> Vec<u8> {
    let mut req = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n".to_vec();
    if pad > 0 {
        req.extend_from_slice(b"X-Pad: ");
        req.extend((0..pad).map(|i| b'a' + (i % 26) as u8));
        req.extend_from_slice(b"\r\n");
    }
    if close {
        req.extend_from_slice(b"Connection: close\r\n");
    }
    req.extend_from_slice(b"\r\n");
    req
}

/// Pad lengths that vary over 0..=700 without a short period, so request boundaries fall
/// everywhere in the server's buffers.
fn pad(i: usize) -> usize {
    (i * 379 + i * i * 7) % 701
}

/// Writes `stream` on one connection from a second thread (so neither side can block the
/// other on full socket buffers), reads responses until the server closes, and returns
/// each response's head and body.
fn exchange(server: &Spidey, stream: Vec<u8>) -> Vec<(String, Vec<u8>)> {
    let mut s = server.connect();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&stream);
    });
    let mut responses = Vec::new();
    while let Ok(response) = read_one(&mut s) {
        responses.push(response);
    }
    writer.join().unwrap();
    responses
}

/// Checks that `responses` are `want` answers of 200 with the hello body, reporting the
/// first one that is not.
fn all_hello(responses: &[(String, Vec<u8>)], want: usize) {
    for (i, (head, body)) in responses.iter().enumerate() {
        assert!(status_of(head) == 200 && body == HELLO.as_bytes(), "response {i} of {want}: {head:?} {body:?}");
    }
    assert_eq!(responses.len(), want, "{} responses to {want} pipelined requests", responses.len());
}

/// 200 pipelined GETs with 0..700-byte pads (about 80 KB in one write), the last with
/// `Connection: close`: all 200 are answered 200 with the file.
fn pipelined_padded_gets_all_answered(mode: &str) {
    let fx = crate::common::Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &["--quiet"]);
    let n = 200;
    let stream: Vec<u8> = (0..n).flat_map(|i| padded_get(pad(i), i == n - 1)).collect();
    assert!(stream.len() > 60_000, "the stream is only {} bytes", stream.len());
    all_hello(&exchange(&server, stream), n);
}

/// 2000 pipelined padded GETs (about 800 KB, dozens of times any receive buffer; the
/// per-connection request cap raised above them): all answered, in order.
fn pipelined_stream_longer_than_buffers_all_answered(mode: &str) {
    let fx = crate::common::Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &["--quiet", "--max-requests", "5000"]);
    let n = 2000;
    let stream: Vec<u8> = (0..n).flat_map(|i| padded_get(pad(i), i == n - 1)).collect();
    all_hello(&exchange(&server, stream), n);
}

/// A POST whose Content-Length body is the text of a request for a path that would
/// answer 404, behind 250 pipelined padded GETs and followed by one last GET, on six
/// connections (each shifting where the stream's bytes fall in the server's buffers):
/// every GET before it gets 200, the POST 405, and the request inside its body is never
/// answered. The POST's body is skipped when it came whole with its head; when it did not
/// the server closes after the 405 instead (`Connection: close`), which is also safe.
fn request_in_body_never_answered_in_long_stream(mode: &str) {
    let fx = crate::common::Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &["--quiet"]);
    let hidden = b"GET /smuggled-never-answered HTTP/1.1\r\nHost: x\r\n\r\n";
    let n = 250;
    for shift in 0..6 {
        let mut stream: Vec<u8> = (0..n).flat_map(|i| padded_get(pad(i + shift * 37), false)).collect();
        stream
            .extend(format!("POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", hidden.len()).bytes());
        stream.extend_from_slice(hidden);
        stream.extend(padded_get(0, true));
        let responses = exchange(&server, stream);
        for (i, (head, _)) in responses.iter().enumerate() {
            assert_ne!(
                status_of(head),
                404,
                "shift {shift}, response {i}: the request in a body was answered: {head:?}"
            );
        }
        let (gets, rest) = responses.split_at(n.min(responses.len()));
        all_hello(gets, n);
        let post = rest.first().map(|(head, _)| head.as_str()).unwrap_or("");
        assert_eq!(status_of(post), 405, "shift {shift}: the POST got {post:?}");
        let closed_after_post = post.contains("\r\nConnection: close\r\n");
        let want = if closed_after_post { 1 } else { 2 };
        assert_eq!(rest.len(), want, "shift {shift}: {} responses after the GETs: {rest:?}", rest.len());
        if let Some((head, body)) = rest.get(1) {
            assert!(status_of(head) == 200 && body == HELLO.as_bytes(), "shift {shift}: the last GET got {head:?}");
        }
    }
}

crate::for_each_mode!(
    pipelined_padded_gets_all_answered,
    pipelined_stream_longer_than_buffers_all_answered,
    request_in_body_never_answered_in_long_stream,
);
