//! Allocations on the request's path, counted: a deterministic measure that a busy machine
//! cannot move, where a timing could (docs/performance.md counts the same with uprobes on
//! the release server). The test build's allocator counts the calls each thread makes
//! while it is told to (`spidey_sys::alloc_count`); other tests' threads are not counted.

use crate::exchange::{Exchanger, Step};
use crate::server::Server;
use spidey_sys::alloc_count::{allocations, Counting};
use std::net::SocketAddr;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A keep-alive GET of a cached 1 KiB file: the exchange (parse, decode the path, find the
/// file in the open-file cache, the head's fields, the answer) allocates at most twice: the
/// field list and the decoded path. A path without `%` escapes is not copied to be decoded.
#[test]
fn a_cached_small_file_costs_at_most_two_allocations() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("1k.bin"), vec![b'x'; 1024]).unwrap();
    let server = Server::for_tests(root.path()).unwrap();
    let peer = SocketAddr::from(([127, 0, 0, 1], 1));
    let mut ex = Exchanger::new();
    let request = b"GET /1k.bin HTTP/1.1\r\nHost: localhost\r\nUser-Agent: t\r\n\r\n";
    let mut answer = || match ex.step(&server, request, peer, false) {
        Step::Respond(a) => assert_eq!(a.head.as_ref().map(|h| h.status.0), Some(200)),
        other => panic!("{other:?}"),
    };
    for _ in 0..10 {
        answer(); // the open-file cache and the date cache fill
    }
    const N: u64 = 200;
    let calls = allocations(|| (0..N).for_each(|_| answer()));
    assert!(calls <= 2 * N, "{calls} allocations for {N} answers: {:.2} each", calls as f64 / N as f64);
}

/// The same GET over HTTP/2, through the connection (`h2.rs`): frames decoded, the field
/// block HPACK-decoded, the request built, answered, its head HPACK-encoded into HEADERS,
/// the body into DATA, the output taken. Counted per response, in batches of 20 streams
/// at once as a multiplexing client sends them.
#[test]
fn an_http2_answer_costs_a_bounded_number_of_allocations() {
    use spidey_http::h2::{encode_headers, encode_settings, encode_settings_ack, encode_window_update};
    use spidey_http::hpack::{Encoder, Field};
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("1k.bin"), vec![b'x'; 1024]).unwrap();
    let server = Server::for_tests(root.path()).unwrap();
    let peer = SocketAddr::from(([127, 0, 0, 1], 1));
    let mut ex = Exchanger::new();
    let mut h2 = crate::h2::H2::new();
    let mut client = Encoder::new();
    let mut next = 1u32;
    let mut out = Vec::new();
    let mut batch = |h2: &mut crate::h2::H2, streams: u32| {
        let mut input = Vec::new();
        if next == 1 {
            input.extend_from_slice(spidey_http::choice::HTTP2_PREFACE);
            encode_settings(&mut input, &[]);
            encode_settings_ack(&mut input);
        }
        // The credit the last batch used, back (a client that keeps up).
        encode_window_update(&mut input, 0, 64 * 1024);
        for _ in 0..streams {
            let mut block = Vec::new();
            let fields = [
                Field::new(b":method", b"GET"),
                Field::new(b":scheme", b"http"),
                Field::new(b":authority", b"localhost"),
                Field::new(b":path", b"/1k.bin"),
                Field::new(b"user-agent", b"t"),
            ];
            client.encode(fields, &mut block);
            encode_headers(&mut input, next, &block, true, 16_384);
            next += 2;
        }
        assert_eq!(h2.receive(&input, &mut ex, &server, peer, false), input.len());
        h2.fill(&mut ex, &server, peer);
        out.clear();
        h2.take_output(&mut out);
        let mut frames = Vec::new();
        let mut at = 0;
        while at + 9 <= out.len() {
            let len = u32::from_be_bytes([0, out[at], out[at + 1], out[at + 2]]) as usize;
            frames.push((out[at + 3], len));
            at += 9 + len;
        }
        assert!(out.len() > streams as usize * 1024, "{} bytes out: {frames:?}", out.len());
    };
    for _ in 0..3 {
        batch(&mut h2, 20); // the caches, the tables, the buffers settle
    }
    const BATCHES: u64 = 10;
    let calls = allocations(|| (0..BATCHES).for_each(|_| batch(&mut h2, 20)));
    let per = calls as f64 / (BATCHES * 20) as f64;
    eprintln!("{calls} allocations for {} answers: {per:.2} each", BATCHES * 20);
    // 16.76 at this writing (25.75 before the decoded field block became one buffer and
    // the connection kept its scratch): 2 in the exchange, as over HTTP/1.1; 3 for the
    // decoded head (its buffer, its spans, its fields); the request's field list and log
    // line; the response's field list; about 1 for the connection giving its buffers back
    // each time a batch leaves it idle (`H2::take_output`) and growing them again.
    assert!(per <= 17.0, "{per:.2} allocations per HTTP/2 answer");
}
