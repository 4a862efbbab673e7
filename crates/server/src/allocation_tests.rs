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
