//! `prefork`: a master process and `--workers` worker processes, each with its own
//! listening socket on the one port (SO_REUSEPORT), each serving one connection at a
//! time like `single`.
//!
//! Trade-off: process isolation without a fork per connection, and no shared accept
//! lock (the kernel spreads connections across the workers' sockets); but the kernel
//! hashes each connection to one socket, so a connection can wait behind a busy worker
//! while another is idle, and a connection that lands on a retiring worker's socket in
//! the instant before it closes is reset (Linux before `net.ipv4.tcp_migrate_req`).
//!
//! Sockets: the first worker takes over the listener bound at startup (so nothing already
//! queued on it is lost); the master binds a sibling for every other worker. The master
//! keeps its copy of each socket while the worker lives: if the worker dies, connections
//! wait in that socket's queue (instead of being reset) until the master forks the
//! replacement on the very same socket, at once. So every socket has a worker accepting
//! on it, except for the moment of a restart. A retired worker's socket is closed by the
//! master when it asks and by the worker once it has served what was queued on it.
//!
//! Coordination: the master is single-threaded and sleeps in poll(2) on the shutdown
//! pipe, the SIGCHLD pipe and, when `--workers MIN-MAX` adapts, a status pipe on which
//! workers report busy/idle (5-byte records, atomic under PIPE_BUF). It reaps with
//! waitpid(WNOHANG), replaces every dead worker and keeps MIN (a short back-off when one
//! dies young), starts another while every worker is busy and fewer than MAX run, and
//! retires one idle for [`IDLE_RETIRE`] above MIN by writing its retire pipe: the worker
//! finishes its connection, closes its socket and exits. Workers set PR_SET_PDEATHSIG to
//! SIGTERM, so if the master dies they stop gracefully.
//!
//! Shutdown: the shutdown pipe is shared by all, so SIGTERM to the master wakes every
//! worker at once; that is how the stop is passed on. It is not forwarded with kill(2):
//! a worker that already saw the pipe would take a second SIGTERM as "exit now". Workers
//! finish their in-flight response and exit; the master reaps them all, killing any
//! still running a second after the grace period.

use super::children::{first_readable, Children};
use super::pool::IDLE_RETIRE;
use super::{accept, cores, ModeContext, Workers};
use crate::net::{Listener, Shutdown};
use crate::server::Server;
use anyhow::Context;
use rustix::process::{Pid, Signal};
use spidey_sys::Fork;
use std::collections::HashMap;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsFd, OwnedFd};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long to wait before replacing a worker that died young, or after a failed fork.
const RESTART_BACKOFF: Duration = Duration::from_millis(100);
/// A worker that dies sooner than this after its start is replaced only after the back-off.
const YOUNG: Duration = Duration::from_secs(1);
const IDLE: u8 = 0;
const BUSY: u8 = 1;

/// A worker's listening socket as the master keeps it; `None` is the startup listener,
/// which lives in [`Master::listener`] for the life of the server.
type Socket = Option<TcpListener>;

/// The master's view of one worker process.
struct Worker {
    socket: Socket,
    started: Instant,
    busy: bool,
    idle_since: Instant,
    retiring: bool,
    /// Writing a byte here asks the worker to finish its connection and exit.
    retire: OwnedFd,
}

struct Master {
    server: Arc<Server>,
    shutdown: Shutdown,
    listener: Listener,
    range: Workers,
    children: Children,
    workers: HashMap<Pid, Worker>,
    /// Sockets whose worker died, waiting for their replacement.
    vacant: Vec<Socket>,
    /// Read by the master, written by workers; only when the pool adapts.
    status: Option<(OwnedFd, OwnedFd)>,
    restart_after: Instant,
}

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    let ModeContext { server, listener, shutdown, workers, max_conns } = ctx;
    // Default: adapt from cores up to 256 processes (Apache prefork's MaxRequestWorkers).
    let range = workers.unwrap_or(Workers { min: cores(), max: super::DEFAULT_MAX_WORKERS });
    // Each worker holds at most one connection, so MAX workers bound the open connections.
    let range = Workers { min: range.min.min(max_conns), max: range.max.min(max_conns) };
    let status = if range.min < range.max { Some(pipe().context("cannot create the status pipe")?) } else { None };
    let children = Children::watch().context("cannot watch SIGCHLD")?;
    let mut master = Master {
        server,
        shutdown,
        listener,
        range,
        children,
        workers: HashMap::new(),
        vacant: vec![None],
        status,
        restart_after: Instant::now(),
    };
    while master.workers.len() < range.min {
        let socket = match master.vacant.pop() {
            Some(socket) => socket,
            None => Some(master.listener.bind_sibling().context("cannot bind a worker's socket")?),
        };
        master.start(socket)?;
    }
    master.supervise()?;
    master.children.wait_all(&master.shutdown);
    Ok(())
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let flags = rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK;
    Ok(rustix::pipe::pipe_with(flags)?)
}

impl Master {
    /// Forks a worker that accepts on `socket`; the master keeps its copy.
    fn start(&mut self, socket: Socket) -> anyhow::Result<()> {
        let (retire_read, retire) = pipe().context("cannot create a retire pipe")?;
        let master = rustix::process::getpid();
        match spidey_sys::fork().context("cannot fork a worker")? {
            Fork::Parent { child } => {
                let pid = Pid::from_raw(child).expect("fork(2) returns a positive pid to the parent");
                self.children.insert(pid);
                let now = Instant::now();
                let w = Worker { socket, started: now, busy: false, idle_since: now, retiring: false, retire };
                self.workers.insert(pid, w);
                Ok(())
            }
            Fork::Child => {
                // Close the master's copies of other workers' sockets and pipes. (The
                // startup listener stays open here too; it is never retired, so that is
                // harmless.)
                drop(std::mem::take(&mut self.workers));
                drop(std::mem::take(&mut self.vacant));
                drop(retire);
                let status = self.status.take().map(|(_, write)| write);
                let own = socket.as_ref().unwrap_or(&self.listener.socket);
                worker(own, master, retire_read, status, &self.server, &self.shutdown)
            }
        }
    }

    /// The master's loop, until shutdown is asked.
    fn supervise(&mut self) -> anyhow::Result<()> {
        loop {
            for (pid, _) in self.children.reap() {
                self.ended(pid);
            }
            if self.shutdown.flagged() {
                return Ok(());
            }
            self.read_status();
            self.replace_and_keep_minimum();
            self.adapt();
            let timeout = self.next_timer();
            let mut fds = vec![self.shutdown.fd(), self.children.fd()];
            if let Some((read, _)) = &self.status {
                fds.push(read.as_fd());
            }
            if first_readable(&fds, timeout)? == Some(0) {
                self.shutdown.note();
                return Ok(());
            }
        }
    }

    fn ended(&mut self, pid: Pid) {
        let Some(w) = self.workers.remove(&pid) else { return };
        if !w.retiring {
            // Died: its socket (and any connection queued on it) goes to the replacement.
            self.vacant.push(w.socket);
            if w.started.elapsed() < YOUNG {
                self.restart_after = Instant::now() + RESTART_BACKOFF;
            }
        }
    }

    /// Replaces every dead worker on its own socket, and starts more until MIN run
    /// (after the back-off, if one died young or a fork failed).
    fn replace_and_keep_minimum(&mut self) {
        while Instant::now() >= self.restart_after {
            let socket = match self.vacant.pop() {
                Some(socket) => socket,
                None if self.workers.len() < self.range.min => match self.listener.bind_sibling() {
                    Ok(socket) => Some(socket),
                    Err(e) => return self.failed(&e.into()),
                },
                None => return,
            };
            if let Err(e) = self.start(socket) {
                return self.failed(&e);
            }
        }
    }

    fn failed(&mut self, e: &anyhow::Error) {
        crate::metrics::add(crate::metrics::Counter::ErrorWorkerStart, 1);
        eprintln!("spidey: cannot start a worker: {e:#}");
        self.restart_after = Instant::now() + RESTART_BACKOFF;
    }

    /// Grows while every worker is busy (up to MAX); retires one long-idle worker above MIN.
    fn adapt(&mut self) {
        if self.status.is_none() || Instant::now() < self.restart_after {
            return;
        }
        let all_busy = self.workers.values().filter(|w| !w.retiring).all(|w| w.busy);
        if all_busy && self.workers.len() < self.range.max {
            let started = self.listener.bind_sibling().map_err(anyhow::Error::from).and_then(|s| self.start(Some(s)));
            if let Err(e) = started {
                self.failed(&e);
            }
            return;
        }
        if self.workers.values().filter(|w| !w.retiring).count() <= self.range.min {
            return;
        }
        // The startup listener's worker is never retired (its socket lives on in the master).
        let idle = self
            .workers
            .values_mut()
            .find(|w| w.socket.is_some() && !w.retiring && !w.busy && w.idle_since.elapsed() >= IDLE_RETIRE);
        if let Some(w) = idle {
            w.retiring = true;
            drop(w.socket.take());
            let _ = rustix::io::write(&w.retire, b"r");
        }
    }

    /// Applies the busy/idle records workers wrote since the last look.
    fn read_status(&mut self) {
        let Some((read, _)) = &self.status else { return };
        let mut buf = [0u8; 5 * 128];
        while let Ok(n @ 1..) = rustix::io::read(read, &mut buf) {
            for record in buf[..n].chunks_exact(5) {
                let pid = Pid::from_raw(i32::from_le_bytes([record[0], record[1], record[2], record[3]]));
                if let Some(w) = pid.and_then(|p| self.workers.get_mut(&p)) {
                    w.busy = record[4] == BUSY;
                    if !w.busy {
                        w.idle_since = Instant::now();
                    }
                }
            }
        }
    }

    /// How long the master may sleep before a timer is due: a restart or a retirement.
    fn next_timer(&self) -> Option<Duration> {
        let mut due: Option<Instant> = None;
        if !self.vacant.is_empty() || self.workers.len() < self.range.min {
            due = Some(self.restart_after);
        }
        if self.status.is_some() && self.workers.len() > self.range.min {
            let idle = self.workers.values().filter(|w| !w.retiring && !w.busy).map(|w| w.idle_since + IDLE_RETIRE);
            due = due.into_iter().chain(idle).min();
        }
        due.map(|d| d.saturating_duration_since(Instant::now()).max(Duration::from_millis(10)))
    }
}

/// A worker's whole life: accept and serve one connection at a time until shutdown or
/// retirement, then _exit. Never returns.
fn worker(
    socket: &TcpListener,
    master: Pid,
    retire: OwnedFd,
    status: Option<OwnedFd>,
    server: &Server,
    shutdown: &Shutdown,
) -> ! {
    // Stop gracefully if the master dies; it may already have died before this call.
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::TERM));
    if rustix::process::getppid() != Some(master) {
        spidey_sys::exit_immediately(0);
    }
    let me = rustix::process::getpid().as_raw_nonzero().get().to_le_bytes();
    let report = |state: u8| {
        if let Some(fd) = &status {
            let _ = rustix::io::write(fd, &[me[0], me[1], me[2], me[3], state]);
        }
    };
    let serve = |(stream, peer)| {
        report(BUSY);
        let _ = std::panic::catch_unwind(AssertUnwindSafe(|| crate::conn::serve(stream, peer, server, shutdown)));
        report(IDLE);
    };
    loop {
        match first_readable(&[shutdown.fd(), retire.as_fd(), socket.as_fd()], None) {
            Ok(Some(2)) => {}
            Ok(Some(0)) => {
                shutdown.note();
                break;
            }
            Ok(Some(1)) => {
                // Retired: the master has closed its copy; serve what is already queued.
                while let Ok(conn) = socket.accept() {
                    serve(conn);
                }
                break;
            }
            _ => break,
        }
        let Some(conn) = accept::next(socket, shutdown) else { break };
        serve(conn);
    }
    crate::log::flush();
    spidey_sys::exit_immediately(0)
}
