//! A driver for fuzzing the connection state machine (`fuzzing` feature only, never in the
//! production binary): feeds client bytes, in the read chunks given, through the same
//! [`Session`] the event-driven modes use (and so through `Exchanger::step`, which every
//! mode uses), sends each response over a socketpair and returns every byte the client
//! would have received. It panics where a real driver would stall: a full receive buffer
//! that yields no answer.

use super::send::Sent;
use super::session::{Answered, Buffers, Session};
use super::socket::Direct;
use crate::exchange::Exchanger;
use crate::server::Server;
use std::io::Read;
use std::os::unix::net::UnixStream;

/// Runs one connection: `chunks` arrive in order, each as one read; returns what the
/// client received until the server closed or the input ran out.
pub fn run_connection(server: &Server, chunks: &[&[u8]]) -> Vec<u8> {
    let (ours, mut theirs) = UnixStream::pair().expect("socketpair");
    ours.set_nonblocking(true).unwrap();
    theirs.set_nonblocking(true).unwrap();
    let mut ex = Exchanger::new();
    let mut buffers = Buffers::new(server);
    let mut session = Session::for_tests("127.0.0.1:1".parse().unwrap());
    let mut received = Vec::new();
    'chunks: for chunk in chunks {
        let mut data = *chunk;
        while !data.is_empty() {
            // As `event` reads: into the free tail the session offers, as much as fits.
            let n = session.receive_for_tests(data, &mut buffers);
            data = &data[n..];
            let mut answered = false;
            while session.answer(&mut ex, server, &mut buffers, false, crate::exchange::Offloading::Never)
                == Answered::Ready
            {
                answered = true;
                loop {
                    match session.write_to(&mut Direct(&ours), &mut ex, server, &mut buffers) {
                        Sent::Done => break,
                        Sent::Blocked => drain(&mut theirs, &mut received),
                        Sent::Failed => break 'chunks,
                        other => panic!("no script is served here, yet send said {other:?}"),
                    }
                }
                drain(&mut theirs, &mut received);
                if !session.finish_response(&mut buffers) {
                    break 'chunks;
                }
            }
            assert!(n > 0 || answered, "receive buffer full, yet no answer: the connection would stall");
        }
    }
    session.release(&mut buffers);
    drop(ours);
    drain(&mut theirs, &mut received);
    received
}

fn drain(peer: &mut UnixStream, into: &mut Vec<u8>) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match peer.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => into.extend_from_slice(&buf[..n]),
        }
    }
}
