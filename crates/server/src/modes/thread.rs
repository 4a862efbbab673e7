//! `thread`: a thread per connection. The main thread accepts; each connection gets a
//! fresh detached thread (`spidey_sys::thread`) that serves all its requests and ends when
//! it closes.
//!
//! Trade-off: simple blocking code with true parallelism and cheap sharing, but a thread
//! (and its stack) per open connection, so `--max-conns` is what stands between a crowd
//! of idle keep-alive clients and the memory and thread limits. Stacks are kept small.
//!
//! Coordination: the acceptor takes a permit from a counting semaphore
//! ([`ConnLimit`]) before each accept, so at the cap it sleeps on a condvar instead of
//! spawning; a connection thread returns its permit when its connection closes, which
//! wakes the acceptor. Threads are detached: the stack is freed as each one ends. If a
//! thread cannot be created (EAGAIN), the acceptor keeps the connection, backs off and
//! tries again.
//!
//! Shutdown: every connection thread polls the shutdown pipe with its socket, so all of
//! them wake with the acceptor; idle ones close at once, busy ones finish their response.
//! The acceptor stops accepting, closes the listener, and waits (within the grace
//! period, plus a second) for the last permit to come back before returning.

use super::limit::{ConnLimit, Permit};
use super::{accept, ModeContext};
use crate::net::Shutdown;
use crate::server::Server;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Stack size for connection threads: the driver keeps its buffers on the heap.
pub(crate) const STACK_SIZE: usize = 256 * 1024;
/// How long to wait before retrying a thread that could not be created.
const SPAWN_BACKOFF: Duration = Duration::from_millis(100);
/// How long after the grace period the acceptor stops waiting for connection threads.
const ABANDON_MARGIN: Duration = Duration::from_secs(1);

type Job = (TcpStream, SocketAddr, Permit);

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    let ModeContext { server, listeners, shutdown, max_conns, .. } = ctx;
    let mut acceptor = accept::Acceptor::new(listeners);
    let limit = ConnLimit::new(max_conns);
    while let Some(permit) = limit.acquire(&shutdown) {
        let Some((stream, peer)) = acceptor.next(&shutdown) else { break };
        if !spawn((stream, peer, permit), &server, &shutdown) {
            break;
        }
    }
    drop(acceptor);
    shutdown.note();
    let deadline = shutdown.deadline().unwrap_or_else(Instant::now) + ABANDON_MARGIN;
    limit.wait_all_released(deadline);
    Ok(())
}

/// Starts a detached thread serving `job`, retrying with back-off while the system
/// refuses threads (the job comes back from a refused start, so the connection is kept).
/// Returns false if shutdown came first (the connection is closed).
///
/// The thread is `spidey_sys::thread`'s, not `std::thread`'s: no signal stack, handle or
/// result packet per connection (8 system calls and several allocations fewer).
fn spawn(job: Job, server: &Arc<Server>, shutdown: &Shutdown) -> bool {
    let mut conn = Conn { job, server: crate::server::newest(server), shutdown: shutdown.clone() };
    let mut warned = false;
    loop {
        match spidey_sys::thread::spawn_detached(STACK_SIZE, conn, serve_conn) {
            Ok(()) => return true,
            Err((e, unstarted)) => {
                conn = unstarted;
                crate::metrics::add(crate::metrics::Counter::ErrorWorkerStart, 1);
                if !warned {
                    eprintln!("spidey: cannot start a thread ({e}); retrying");
                    warned = true;
                }
                if accept::pause(shutdown, SPAWN_BACKOFF) {
                    return false;
                }
                conn.server = crate::server::newest(server);
            }
        }
    }
}

/// What a connection thread owns.
struct Conn {
    job: Job,
    server: Arc<Server>,
    shutdown: Shutdown,
}

/// A connection thread's whole life: serve, then give the permit back.
fn serve_conn(Conn { job: (stream, peer, permit), server, shutdown }: Conn) {
    super::blocking::serve(stream, peer, &server, &shutdown, &mut super::blocking::Worker::new(&server));
    drop(permit);
}
