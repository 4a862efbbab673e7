//! The loop core, driven through each backend on a real loopback listener.

use crate::modes::limit::LoopLimit;
use crate::modes::loops::LoopContext;
use crate::net::Shutdown;
use crate::server::Server;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// A connection queued on the listener before the loop's thread starts is accepted and
/// answered on the loop's first turn, before any wait: that turn counts as busy too. (The
/// scrape's own answer read `spidey_workers_busy 0` when the kernel had put it on a loop
/// that was still starting; tests/ops metrics, about 1 run in 10.)
#[test]
fn first_turn_counts_as_busy() {
    type Body = fn(LoopContext) -> anyhow::Result<()>;
    let backends: [(&str, Body); 2] = [
        ("event", |lc| crate::modes::event::event_loop(lc, None)),
        ("uring", |lc| crate::modes::uring::ring_loop(lc, None)),
    ];
    crate::metrics::init("test", Some(crate::content::endpoint_path("/-/metrics"))).unwrap();
    let root = tempfile::tempdir().unwrap();
    for (name, body) in backends {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        client.write_all(b"GET /-/metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        client.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let shutdown = Shutdown::new(Duration::from_secs(1)).unwrap();
        let lc = LoopContext {
            server: Arc::new(Server::for_tests(root.path()).unwrap()),
            listeners: vec![listener],
            shutdown: shutdown.clone(),
            limit: LoopLimit::new(16, 1).unwrap(),
            index: 0,
            start: crate::modes::loops::StartLine::places(1).pop().unwrap(),
        };
        let thread = std::thread::spawn(move || body(lc));
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        shutdown.trigger();
        thread.join().unwrap().unwrap();
        let busy = answer.lines().find_map(|l| l.strip_prefix("spidey_workers_busy "));
        let busy: u64 = busy.unwrap_or_else(|| panic!("{name}: no busy gauge in\n{answer}")).parse().unwrap();
        assert!(busy >= 1, "{name}: the loop answering the scrape is busy:\n{answer}");
    }
}
