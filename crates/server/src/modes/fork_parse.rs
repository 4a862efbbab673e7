//! `fork --fork-after-parse`: seed 000's forking server, whose parent read and parsed each
//! request before it forked the child that answered it. Here the parent reads a
//! connection's bytes until the parser has a whole head (or refuses it), then forks; the
//! child takes the bytes already read ([`Head`], through `blocking::serve_from`) and
//! answers them, and the rest of the connection, as plain `fork` does. The child parses
//! the head again (microseconds; the wait for it is what the parent kept).
//!
//! What this reproduces: the parent does the reading and parsing one connection at a
//! time, so a client slow to send its head holds up every connection behind it in the
//! listen queue, where plain `fork` hands the wait to the child at once.
//!
//! Bounds: the parent waits at most the idle timeout for a first byte (nothing came:
//! the connection closes without a child), then the head timeout from the first byte,
//! and reads at most `max_head` plus one receive; shutdown ends the wait. Whatever came
//! by then, a whole head or not, goes to the child with the time its first byte came, so
//! the child answers it (400, 408, 431...) within the same head deadline, not a new one.

use super::session::RECV_ROOM;
use crate::net::{wait_readable, Shutdown, Wake};
use crate::server::Server;
use rustix::io::Errno;
use spidey_http::{HeaderSlots, Parsed};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::time::Instant;

/// The start of a connection, read by the parent.
#[derive(Debug)]
pub(crate) struct Head {
    /// Every byte read: a whole head and perhaps what followed it, or what came before the
    /// deadline, shutdown, or the client's half-close.
    pub bytes: Vec<u8>,
    /// When the first byte came: the head deadline counts from here.
    pub started: Instant,
}

/// Reads from `stream` until its bytes hold a whole head or one the parser refuses, the
/// head deadline passes, the client stops sending, or shutdown is asked. `None`: not a
/// byte came (the connection just closes).
pub(crate) fn read_head(stream: &TcpStream, server: &Server, shutdown: &Shutdown) -> Option<Head> {
    stream.set_nonblocking(true).ok()?;
    let cap = server.limits.max_head + RECV_ROOM;
    let idle_deadline = Instant::now() + server.timeouts.idle;
    let mut bytes = Vec::new();
    let mut started = None;
    let mut chunk = [0u8; RECV_ROOM];
    loop {
        let deadline = started.map_or(idle_deadline, |t: Instant| t + server.timeouts.head);
        if !matches!(wait_readable(stream.as_fd(), shutdown, Some(deadline)), Ok(Wake::Ready)) {
            break;
        }
        let room = (cap - bytes.len()).min(chunk.len());
        match rustix::io::read(stream, &mut chunk[..room]) {
            Ok(0) => break,
            Ok(n) => {
                started.get_or_insert_with(Instant::now);
                bytes.extend_from_slice(&chunk[..n]);
                let mut slots = HeaderSlots::new();
                let partial = matches!(spidey_http::parse(&bytes, &mut slots, &server.limits), Ok(Parsed::Partial));
                if !partial || bytes.len() >= cap {
                    break;
                }
            }
            Err(Errno::AGAIN | Errno::INTR) => {}
            Err(_) => return None, // reset: nobody to answer
        }
    }
    started.map(|started| Head { bytes, started })
}
