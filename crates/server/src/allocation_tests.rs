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
/// file in the open-file cache, the head's fields, the answer) allocates at most once: the
/// field list. A path already in its decoded form (no `%` escape, no empty or dot segment)
/// is not copied to be decoded.
#[test]
fn a_cached_small_file_costs_at_most_one_allocation() {
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
    assert!(calls <= N, "{calls} allocations for {N} answers: {:.2} each", calls as f64 / N as f64);
}

/// The same GET over HTTP/2, through the connection (`h2.rs`): frames decoded, the field
/// block HPACK-decoded, the request built, answered, its head HPACK-encoded into HEADERS,
/// the body into DATA, the output taken into a buffer of a pool as a session does. Counted
/// per response, the client's bytes made before counting: in batches of 20 streams at once
/// as a multiplexing client sends them, and one stream at a time.
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
    // The client's batches: the preface first; each batch gives back the credit the last
    // one used, as a client that keeps up does.
    let mut client = Encoder::new();
    let mut next = 1u32;
    let mut make = |streams: u32| {
        let mut input = Vec::new();
        if next == 1 {
            input.extend_from_slice(spidey_http::choice::HTTP2_PREFACE);
            encode_settings(&mut input, &[]);
            encode_settings_ack(&mut input);
        }
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
        (input, streams)
    };
    let warm: Vec<_> = (0..3).map(|_| make(20)).collect();
    let batched: Vec<_> = (0..10).map(|_| make(20)).collect();
    let single: Vec<_> = (0..50).map(|_| make(1)).collect();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut answer = |input: &[u8], streams: u32| {
        assert_eq!(h2.receive(input, &mut ex, &server, peer, false, crate::exchange::Offloading::Never), input.len());
        h2.fill(&mut ex, &server, peer);
        let mut out = pool.pop().unwrap_or_default();
        if let Some(spare) = h2.take_output(&mut out) {
            pool.push(spare);
        }
        let (mut at, mut data) = (0, 0);
        while at + 9 <= out.len() {
            let len = u32::from_be_bytes([0, out[at], out[at + 1], out[at + 2]]) as usize;
            data += if out[at + 3] == 0 { len } else { 0 };
            at += 9 + len;
        }
        assert_eq!(data, streams as usize * 1024, "every body whole");
        out.clear();
        pool.push(out); // sent: the session's out buffer goes back to the pool
    };
    for (input, streams) in &warm {
        answer(input, *streams); // the caches, the tables, the pool settle
    }
    let calls = allocations(|| batched.iter().for_each(|(input, streams)| answer(input, *streams)));
    let per = calls as f64 / 200.0;
    let calls = allocations(|| single.iter().for_each(|(input, streams)| answer(input, *streams)));
    let one = calls as f64 / 50.0;
    eprintln!("allocations per HTTP/2 answer: {per:.2} in batches of 20, {one:.2} one at a time");
    // At this writing 3.3 and 9.1: 1 in the exchange, as over HTTP/1.1; 1 for the decoded
    // head (its names and values and its table of fields, in one buffer copied at its size
    // from the list the connection keeps); the stream's state; and, one at a time, the
    // queues and the log line a connection drops each time it idles (`H2::take_output`).
    // The request's and the response's field lists are on the stack, the header block and
    // the log line kept while busy (14.2 and 17.1 before; 5.3 and 11.1 with the path
    // copied and the head in two buffers).
    assert!(per <= 4.0, "{per:.2} allocations per HTTP/2 answer, 20 streams at a time");
    assert!(one <= 10.0, "{one:.2} allocations per HTTP/2 answer, one stream at a time");
}

/// A long-lived blocking worker (`single`'s loop, a `pool` thread, a `prefork` process)
/// keeps its exchanger and buffers from one connection to the next: a connection per
/// request costs what the answer costs (the one of the test above), not a fresh receive
/// buffer, send buffer and date cache each time (eight allocations per connection before).
#[test]
fn a_worker_allocates_nothing_per_connection_but_the_answer() {
    use std::io::{Read, Write};
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("1k.bin"), vec![b'x'; 1024]).unwrap();
    let server = Server::for_tests(root.path()).unwrap();
    let shutdown = crate::net::Shutdown::new(std::time::Duration::from_secs(1)).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    const WARM: usize = 10;
    const N: usize = 50;
    let client = std::thread::spawn(move || {
        for _ in 0..WARM + N {
            let mut c = std::net::TcpStream::connect(address).unwrap();
            c.write_all(b"GET /1k.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
            let mut response = Vec::new();
            c.read_to_end(&mut response).unwrap();
            assert!(response.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&response));
        }
    });
    let mut worker = crate::modes::blocking::Worker::new(&server);
    let mut serve_one = || {
        let (stream, peer) = listener.accept().unwrap();
        crate::modes::blocking::serve(stream, peer, &server, &shutdown, &mut worker);
    };
    (0..WARM).for_each(|_| serve_one());
    let calls = allocations(|| (0..N).for_each(|_| serve_one()));
    client.join().unwrap();
    // The date cache formats once a second: a few more over the run.
    let most = N as u64 + 10;
    assert!(calls <= most, "{calls} allocations for {N} connections: {:.2} each", calls as f64 / N as f64);
}
