//! The ring's receive buffers go back to the kernel after each receive: many more receives
//! than buffers all complete, with the bytes that were sent, through the buffer ring's
//! wrap-around, with and without IORING_RECVSEND_POLL_FIRST.

use spidey_sys::uring::{Outcome, Ring};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Receives once on `socket` through the ring and returns the bytes.
fn receive(ring: &mut Ring, socket: &UnixStream, expect_wait: bool) -> Vec<u8> {
    ring.recv(socket.as_fd(), expect_wait, 7).expect("queue a receive");
    let mut got = None;
    for _ in 0..100 {
        ring.submit_and_wait(Some(Duration::from_millis(100))).expect("submit");
        ring.complete(|c| {
            assert_eq!(c.user_data, 7);
            if let Outcome::Received(r) = c.outcome {
                got = Some(r.expect("a receive that succeeds").to_vec());
            }
        })
        .expect("reap");
        if let Some(bytes) = got.take() {
            return bytes;
        }
    }
    panic!("no receive completed in 10 s");
}

#[test]
fn receive_buffers_are_given_back_and_reused_past_their_count() {
    let mut ring = Ring::new(8, 2, 64).expect("io_uring with a buffer ring");
    let (mut client, server) = UnixStream::pair().unwrap();
    for i in 0..1000u32 {
        let message = format!("request {i}");
        client.write_all(message.as_bytes()).unwrap();
        assert_eq!(receive(&mut ring, &server, i % 2 == 0), message.as_bytes(), "receive {i}");
    }
}

#[test]
fn a_receive_that_expects_to_wait_completes_when_input_arrives() {
    let mut ring = Ring::new(8, 1, 64).expect("io_uring with a buffer ring");
    let (mut client, server) = UnixStream::pair().unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        client.write_all(b"late").unwrap();
        client
    });
    assert_eq!(receive(&mut ring, &server, true), b"late");
    drop(writer.join());
}

#[test]
fn ring_sizes_that_are_not_a_power_of_two_are_refused() {
    assert!(Ring::new(8, 3, 64).is_err());
}
