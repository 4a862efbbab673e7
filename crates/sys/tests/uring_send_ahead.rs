//! A send made ahead of a receive (`Ring::send_ahead_of_recv`): its success posts nothing
//! and the receive linked behind it completes when input arrives; its failure posts the
//! send's completion and cancels the receive, so the caller always learns of a broken
//! response.

use spidey_sys::uring::{Outcome, Ring};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

const SEND: u64 = 1;
const RECV: u64 = 2;

/// What completed, by user data, until `done` says enough (at most 5 s).
fn reap_until(ring: &mut Ring, done: impl Fn(&[(u64, String)]) -> bool) -> Vec<(u64, String)> {
    let mut seen = Vec::new();
    for _ in 0..50 {
        ring.submit_and_wait(Some(Duration::from_millis(100))).expect("submit");
        ring.complete(|c| {
            let what = match c.outcome {
                Outcome::Received(Ok(bytes)) => format!("received {:?}", String::from_utf8_lossy(bytes)),
                Outcome::Received(Err(e)) => format!("receive failed {:?}", e.raw_os_error()),
                Outcome::Sent(r, _) => format!("sent {:?}", r.map_err(|e| e.raw_os_error())),
                Outcome::Polled(_) => "polled".to_string(),
            };
            seen.push((c.user_data, what));
        })
        .expect("reap");
        if done(&seen) {
            return seen;
        }
    }
    seen
}

#[test]
fn a_send_ahead_posts_nothing_and_its_receive_brings_the_next_request() {
    let mut ring = Ring::new(8, 2, 64).expect("io_uring with a buffer ring");
    let (mut client, server) = UnixStream::pair().unwrap();
    for i in 0..20 {
        let response = format!("response {i}");
        ring.send_ahead_of_recv(server.as_fd(), response.as_bytes(), SEND, true, RECV).expect("queue");
        // Nothing completes while the client has not answered.
        let quiet = reap_until(&mut ring, |_| true);
        assert_eq!(quiet, vec![], "round {i}: the send's success posted a completion");
        let mut got = vec![0; response.len()];
        client.read_exact(&mut got).unwrap();
        assert_eq!(got, response.as_bytes());
        client.write_all(format!("request {i}").as_bytes()).unwrap();
        let seen = reap_until(&mut ring, |s| !s.is_empty());
        assert_eq!(seen, vec![(RECV, format!("received {:?}", format!("request {i}")))], "round {i}");
        // The send that posted nothing is retired with its receive: nothing is left in
        // flight for the ring's drop to wait for.
        assert!(format!("{ring:?}").contains("in_flight: 0"), "round {i}: {ring:?}");
    }
}

#[test]
fn a_failed_send_ahead_is_reported_and_cancels_its_receive() {
    let mut ring = Ring::new(8, 2, 64).expect("io_uring with a buffer ring");
    let (client, server) = UnixStream::pair().unwrap();
    drop(client);
    ring.send_ahead_of_recv(server.as_fd(), b"response", SEND, true, RECV).expect("queue");
    let seen = reap_until(&mut ring, |s| s.len() >= 2);
    assert_eq!(
        seen,
        vec![
            (SEND, format!("sent {:?}", Err::<usize, _>(Some(libc::EPIPE)))),
            (RECV, format!("receive failed {:?}", Some(libc::ECANCELED))),
        ]
    );
    assert!(format!("{ring:?}").contains("in_flight: 0"), "{ring:?}");
}
