//! A tag (user data) names one operation in flight: the ring refuses a second operation
//! under a tag whose completion it has not reaped, so a send's buffer can never be
//! dropped while the kernel still reads it, and the tag is free again once reaped.

use spidey_sys::uring::{Outcome, Ring};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

const TAG: u64 = 1;
const OTHER: u64 = 2;
const BIG: usize = 1 << 20;
const FILL: u8 = b'f';

/// A connected pair whose `server` side cannot send: its socket buffer is full, so a send
/// through the ring waits in the kernel until the peer reads. Returns the bytes written.
fn full_pair() -> (UnixStream, UnixStream, usize) {
    let (client, mut server) = UnixStream::pair().unwrap();
    server.set_nonblocking(true).unwrap();
    let mut filled = 0;
    loop {
        match server.write(&[FILL; 4096]) {
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return (client, server, filled),
            Err(e) => panic!("filling the socket: {e}"),
        }
    }
}

/// Reaps until a completion tagged `tag` arrives (at most 10 s); returns its outcome as
/// (bytes sent, buffer given back) for a send, or None for any other operation.
fn reap(ring: &mut Ring, tag: u64) -> Option<(io::Result<usize>, Vec<u8>)> {
    for _ in 0..100 {
        ring.submit_and_wait(Some(Duration::from_millis(100))).expect("submit");
        let mut done = None;
        ring.complete(|c| {
            if c.user_data == tag {
                done = Some(match c.outcome {
                    Outcome::Sent(r, buf) => Some((r, buf)),
                    _ => None,
                });
            }
        })
        .expect("reap");
        if let Some(done) = done {
            return done;
        }
    }
    panic!("no completion for tag {tag} in 10 s");
}

#[test]
fn a_second_send_under_a_tag_in_flight_is_refused_and_the_first_arrives_intact() {
    let mut ring = Ring::new(8, 2, 64).expect("io_uring with a buffer ring");
    let (mut client, server, filled) = full_pair();
    ring.send(server.as_fd(), vec![b'a'; BIG], 0, false, TAG).expect("the first send");
    ring.submit_and_wait(Some(Duration::from_millis(50))).expect("submit");
    assert!(ring.is_in_flight(TAG), "the first send finished before the peer read: the test proves nothing");
    let refused = ring.send(server.as_fd(), vec![b'b'; BIG], 0, false, TAG).expect_err("a second send, same tag");
    assert_eq!(refused.kind(), io::ErrorKind::AlreadyExists);
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        client.read_to_end(&mut got).unwrap();
        got
    });
    let (sent, buf) = reap(&mut ring, TAG).expect("a send's completion");
    let sent = sent.expect("the first send");
    assert!(sent > 0);
    assert!(buf.len() == BIG && buf.iter().all(|&b| b == b'a'), "the first send's own buffer comes back");
    assert!(!ring.is_in_flight(TAG));
    drop(server);
    let got = reader.join().unwrap();
    let (fill, sent_bytes) = got.split_at(filled);
    assert!(fill.iter().all(|&b| b == FILL));
    assert_eq!(sent_bytes.len(), sent, "exactly the bytes the completion reports");
    assert!(sent_bytes.iter().all(|&b| b == b'a'), "a byte of the first send was not its own");
}

/// What can be in flight under TAG, and what is tried under it next.
#[derive(Debug, Clone, Copy)]
enum Op {
    Send,
    Recv,
    Poll,
    /// A send ahead of a receive, the send tagged TAG.
    AheadSend,
    /// A send ahead of a receive, the receive tagged TAG.
    AheadRecv,
}

fn start(ring: &mut Ring, socket: &UnixStream, op: Op) -> io::Result<()> {
    let fd = socket.as_fd();
    match op {
        Op::Send => ring.send(fd, vec![0; 64], 0, false, TAG),
        Op::Recv => ring.recv(fd, true, TAG),
        Op::Poll => ring.poll(fd, libc::POLLIN as u32, TAG),
        Op::AheadSend => ring.send_ahead_of_recv(fd, b"x", TAG, true, OTHER),
        Op::AheadRecv => ring.send_ahead_of_recv(fd, b"x", OTHER, true, TAG),
    }
}

#[test]
fn every_operation_that_keeps_state_under_a_tag_refuses_one_in_flight() {
    let firsts = [Op::Send, Op::Recv, Op::Poll];
    let seconds = [Op::Send, Op::Recv, Op::Poll, Op::AheadSend, Op::AheadRecv];
    for first in firsts {
        for second in seconds {
            let mut ring = Ring::new(8, 2, 64).expect("io_uring with a buffer ring");
            // The peer never writes (a receive or poll waits) nor reads (a send waits).
            let (_client, server, _) = full_pair();
            start(&mut ring, &server, first).expect("the first operation");
            ring.submit_and_wait(Some(Duration::from_millis(20))).expect("submit");
            assert!(ring.is_in_flight(TAG), "{first:?} finished at once: the case proves nothing");
            let refused = start(&mut ring, &server, second).expect_err("a second operation, same tag");
            assert_eq!(refused.kind(), io::ErrorKind::AlreadyExists, "{first:?} then {second:?}");
            assert!(!ring.is_in_flight(OTHER), "{first:?} then {second:?}: a refused pair queued half");
            // Once the first is cancelled and reaped, its tag serves again.
            ring.cancel(TAG).expect("cancel");
            reap(&mut ring, TAG);
            assert!(!ring.is_in_flight(TAG), "{first:?}: still in flight after its completion");
            start(&mut ring, &server, second).unwrap_or_else(|e| panic!("{first:?} then {second:?} once reaped: {e}"));
        }
    }
}

#[test]
fn a_send_ahead_and_its_receive_cannot_share_a_tag_nor_use_the_reserved_one() {
    let mut ring = Ring::new(8, 2, 64).expect("io_uring with a buffer ring");
    let (_client, server) = UnixStream::pair().unwrap();
    let shared = ring.send_ahead_of_recv(server.as_fd(), b"x", TAG, true, TAG).expect_err("one tag for both");
    assert_eq!(shared.kind(), io::ErrorKind::AlreadyExists);
    assert!(!ring.is_in_flight(TAG));
    let reserved = ring.recv(server.as_fd(), true, u64::MAX).expect_err("the ring's own tag");
    assert_eq!(reserved.kind(), io::ErrorKind::InvalidInput);
}
