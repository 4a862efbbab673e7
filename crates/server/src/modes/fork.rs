//! `fork`: a child process per connection. The parent only accepts; each connection is
//! served, all its keep-alive requests, by a fresh child that then exits.
//!
//! Trade-off: the strongest isolation there is (a crash or leak in one connection dies
//! with its child, and children share nothing writable), paid for with a fork(2) and an
//! exit per connection and a whole process per open connection.
//!
//! Coordination: the parent is single-threaded (so fork is sound) and sleeps in poll(2)
//! on the shutdown pipe, the SIGCHLD pipe and the listeners (left out at the
//! `--max-conns` cap, so a full house stops accepting until a child ends). When the
//! SIGCHLD pipe wakes it, it reaps every ended child with waitpid(WNOHANG): the parent
//! never blocks on a child and leaves no zombie, and a wake-up for a connection costs no
//! reaping call. A failed fork (EAGAIN, ENOMEM) keeps the connection,
//! reaps, backs off and tries again. The child closes the listener, serves, flushes its
//! access log and leaves with _exit(2), so it can never return into the accept loop.
//!
//! With `--fork-after-parse` (seed 000's design, `fork_parse.rs`) the parent reads and
//! parses each connection's first head before it forks, and the child answers it.
//!
//! Shutdown: SIGTERM writes the shutdown pipe, which every child inherited and nobody
//! drains, so the parent and every child wake together: the parent stops accepting and
//! closes the listeners, children finish their in-flight response and exit, and the
//! parent reaps them all (killing any still running after the grace period).

use super::children::{first_readable, Children, Fds};
use super::fork_parse::Head;
use super::{accept, ModeContext};
use crate::net::Shutdown;
use crate::server::Server;
use anyhow::Context;
use rustix::process::Pid;
use spidey_sys::Fork;
use std::net::{SocketAddr, TcpStream};
use std::panic::AssertUnwindSafe;
use std::time::Duration;

/// How long to wait before retrying a fork that failed for lack of resources.
const FORK_BACKOFF: Duration = Duration::from_millis(100);

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    let ModeContext { mut server, listeners, shutdown, max_conns, fork_after_parse, .. } = ctx;
    let mut children = Children::watch().context("cannot watch SIGCHLD")?;
    super::children::warm();
    let mut listener = Some(accept::Acceptor::new(listeners));
    loop {
        if shutdown.flagged() {
            break;
        }
        let acceptor = listener.as_mut().context("the parent keeps its listeners")?;
        let full = children.len() >= max_conns;
        let woke = {
            let fds: Fds<'_> = [shutdown.fd(), children.fd()].into_iter().chain(acceptor.fds()).collect();
            first_readable(if full { &fds[..2] } else { &fds }, None)?
        };
        match woke {
            Some(0) => {
                shutdown.note();
                break;
            }
            Some(1) => {
                children.reap(); // a child ended (or a signal to service came)
                continue;
            }
            _ => {}
        }
        let Some((stream, peer)) = acceptor.next(&shutdown) else { break };
        crate::server::refresh(&mut server); // a SIGHUP's configuration, for the children from now on
        let head = if fork_after_parse {
            match super::fork_parse::read_head(&stream, &server, &shutdown) {
                Some(head) => Some(head),
                None => continue, // closed before a byte came: no child
            }
        } else {
            None
        };
        match fork_child(&mut children, &shutdown)? {
            Some(Fork::Child) => {
                drop(listener.take());
                serve_and_exit(stream, peer, head, &server, &shutdown);
            }
            // The parent's copy of the stream closes here; the child owns the connection.
            Some(Fork::Parent { .. }) | None => drop(stream),
        }
    }
    drop(listener); // refuse new connections while the children drain
    children.wait_all(&shutdown);
    Ok(())
}

/// Forks, retrying with back-off (and reaping meanwhile) while the system is out of
/// processes or memory. `None` if shutdown came first; an error if fork was refused for
/// good (the process has grown threads, see `spidey_sys::fork`).
fn fork_child(children: &mut Children, shutdown: &Shutdown) -> std::io::Result<Option<Fork>> {
    let mut warned = false;
    loop {
        match spidey_sys::fork() {
            Ok(Fork::Parent { child }) => {
                children.insert(Pid::from_raw(child).expect("fork(2) returns a positive pid to the parent"));
                return Ok(Some(Fork::Parent { child }));
            }
            Ok(Fork::Child) => return Ok(Some(Fork::Child)),
            // Refused because the process has grown threads: retrying cannot help, and
            // forking would not be sound. (serve.rs checks before the mode starts.)
            Err(e) if e.kind() == std::io::ErrorKind::Unsupported => return Err(e),
            Err(e) => {
                crate::metrics::add(crate::metrics::Counter::ErrorWorkerStart, 1);
                if !warned {
                    eprintln!("spidey: fork failed ({e}); retrying");
                    warned = true;
                }
                children.reap();
                if accept::pause(shutdown, FORK_BACKOFF) {
                    return Ok(None);
                }
            }
        }
    }
}

/// The child's whole life: serve the connection (from the `head` the parent read, if it
/// did), flush the log, _exit. Never returns.
fn serve_and_exit(stream: TcpStream, peer: SocketAddr, head: Option<Head>, server: &Server, shutdown: &Shutdown) -> ! {
    let read = head.as_ref().map(|h| (&h.bytes[..], h.started));
    let served = std::panic::catch_unwind(AssertUnwindSafe(|| {
        super::blocking::serve_from(stream, peer, server, shutdown, read, &mut super::blocking::Worker::new(server))
    }));
    crate::log::flush();
    spidey_sys::exit_immediately(if served.is_ok() { 0 } else { 1 })
}
