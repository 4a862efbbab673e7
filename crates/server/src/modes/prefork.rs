//! `prefork`: a master process and `--workers` worker processes that all accept on the
//! listening sockets bound at startup (one per `--addr`), each serving one connection at
//! a time like `single`.
//!
//! Trade-off: process isolation without a fork per connection. The workers share one
//! accept queue, so a connection is taken by whichever worker is free first (Apache's
//! prefork, nginx with `accept_mutex off`), never queued behind a busy one while another
//! idles. Each idle worker waits in its own epoll set with the listener registered
//! `EPOLLEXCLUSIVE`, so a new connection wakes one waiter (or a few), not all 256: the
//! thundering herd is the kernel's to avoid, and there is no accept lock. A worker that
//! finishes a connection re-enters `epoll_wait`, and the level-triggered listener entry
//! hands it whatever was queued meanwhile. Workers do not get SO_REUSEPORT sockets of
//! their own: the kernel would hash each connection to one worker's queue, where it waits
//! behind that worker's slow client while other workers idle.
//!
//! Coordination: the master is single-threaded and sleeps in poll(2) on the shutdown
//! pipe, the SIGCHLD pipe and, when `--workers MIN-MAX` adapts, a status pipe on which
//! workers report busy/idle (5-byte records, atomic under PIPE_BUF). It reaps with
//! waitpid(WNOHANG), keeps MIN running (a short back-off when one dies young), starts
//! another while every worker is busy and fewer than MAX run, and retires one idle for
//! [`IDLE_RETIRE`] above MIN by writing its retire pipe: the worker finishes its
//! connection and exits. Nothing queued is lost when a worker dies or retires: the queue
//! belongs to the listener, which the master and every worker hold. Workers set
//! PR_SET_PDEATHSIG to SIGTERM, so if the master dies they stop gracefully.
//!
//! Reload (SIGHUP; `signals.rs` sets a flag and writes the master's SIGCHLD pipe, and
//! `Children::reap` services it: the access log is reopened and `signals::reloads()`
//! grows): the master forks as many new workers as are running (at least MIN), which
//! accept at once, then writes a byte to each old worker's retire pipe and counts it out
//! of MIN. An old worker serves under a shutdown signal of its own
//! (`Shutdown::or_when_readable`: the server's shutdown pipe or its retire pipe), so the
//! byte ends it as a stop would: it stops accepting, finishes the response under way
//! (within the grace period; a connection it had accepted but whose first request had not
//! arrived yet is still answered, that wait being under the server's shutdown alone, up
//! to the idle timeout), closes its keep-alive connection at its next idle wait
//! (a response being formed then says `Connection: close`), and exits; the master reaps
//! it on SIGCHLD like any other. Connections queued meanwhile wait in the shared listen
//! queue for the new workers; none is dropped. Only the master gets the signal (a
//! worker's handler just sets a flag nobody reads), so workers never restart on their own.
//!
//! Shutdown: the shutdown pipe is shared by all, so SIGTERM to the master wakes every
//! worker at once; that is how the stop is passed on. It is not forwarded with kill(2):
//! a worker that already saw the pipe would take a second SIGTERM as "exit now". Workers
//! finish their in-flight response and exit; the master reaps them all, killing any
//! still running a second after the grace period.

use super::children::{first_readable, Children, Fds};
use super::pool::IDLE_RETIRE;
use super::{accept, cores, ModeContext, Workers};
use crate::net::{Listener, Shutdown};
use crate::server::Server;
use anyhow::Context;
use rustix::event::epoll;
use rustix::process::{Pid, Signal};
use spidey_sys::Fork;
use std::collections::HashMap;
use std::io;
use std::net::TcpListener;
use std::os::fd::{AsFd, OwnedFd};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long to wait before starting a worker after one died young, or after a failed fork.
const RESTART_BACKOFF: Duration = Duration::from_millis(100);
/// A worker that dies sooner than this after its start is replaced only after the back-off.
const YOUNG: Duration = Duration::from_secs(1);
const IDLE: u8 = 0;
const BUSY: u8 = 1;

/// The master's view of one worker process.
struct Worker {
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
    /// The listening sockets (one per `--addr`) every worker accepts on.
    listeners: Vec<Listener>,
    range: Workers,
    children: Children,
    workers: HashMap<Pid, Worker>,
    /// Read by the master, written by workers; only when the pool adapts.
    status: Option<(OwnedFd, OwnedFd)>,
    restart_after: Instant,
    /// `signals::reloads()` when the workers were last replaced.
    reloads: u64,
}

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    let ModeContext { server, listeners, shutdown, workers, max_conns, .. } = ctx;
    // Default: adapt from cores up to 256 processes (Apache prefork's MaxRequestWorkers).
    let range = workers.unwrap_or(Workers { min: cores(), max: super::DEFAULT_MAX_WORKERS });
    // Each worker holds at most one connection, so MAX workers bound the open connections.
    let range = Workers { min: range.min.min(max_conns), max: range.max.min(max_conns) };
    let status = if range.min < range.max { Some(pipe().context("cannot create the status pipe")?) } else { None };
    let children = Children::watch().context("cannot watch SIGCHLD")?;
    super::children::warm();
    let mut master = Master {
        server,
        shutdown,
        listeners,
        range,
        children,
        workers: HashMap::new(),
        status,
        restart_after: Instant::now(),
        reloads: crate::signals::reloads(),
    };
    while master.workers.len() < range.min {
        master.start()?;
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
    /// Forks a worker that accepts on the shared listener.
    fn start(&mut self) -> anyhow::Result<()> {
        crate::server::refresh(&mut self.server); // a SIGHUP's configuration, for new workers
        let (retire_read, retire) = pipe().context("cannot create a retire pipe")?;
        let master = rustix::process::getpid();
        match spidey_sys::fork().context("cannot fork a worker")? {
            Fork::Parent { child } => {
                let pid = Pid::from_raw(child).expect("fork(2) returns a positive pid to the parent");
                self.children.insert(pid);
                let now = Instant::now();
                self.workers
                    .insert(pid, Worker { started: now, busy: false, idle_since: now, retiring: false, retire });
                Ok(())
            }
            Fork::Child => {
                // Close the master's ends of the other workers' retire pipes.
                drop(std::mem::take(&mut self.workers));
                drop(retire);
                let status = self.status.take().map(|(_, write)| write);
                let sockets: Vec<&TcpListener> = self.listeners.iter().map(|l| &l.socket).collect();
                worker(&sockets, master, retire_read, status, &self.server, &self.shutdown)
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
            if crate::signals::reloads() != self.reloads {
                self.reload();
            }
            self.read_status();
            self.keep_minimum();
            self.adapt();
            let timeout = self.next_timer();
            let mut fds: Fds<'_> = [self.shutdown.fd(), self.children.fd()].into_iter().collect();
            if let Some((read, _)) = &self.status {
                fds.push(read.as_fd());
            }
            if first_readable(&fds, timeout)? == Some(0) {
                self.shutdown.note();
                return Ok(());
            }
        }
    }

    /// The workers not asked to retire (those count towards MIN).
    fn active(&self) -> usize {
        self.workers.values().filter(|w| !w.retiring).count()
    }

    /// SIGHUP: replace every worker. New workers start first and accept at once; each old
    /// one is sent a byte on its retire pipe, stops accepting, finishes its response,
    /// closes its keep-alive connection and exits; `supervise` reaps it like any other.
    fn reload(&mut self) {
        self.reloads = crate::signals::reloads();
        let old: Vec<Pid> = self.workers.iter().filter(|(_, w)| !w.retiring).map(|(&pid, _)| pid).collect();
        self.restart_after = Instant::now();
        for _ in 0..old.len().max(self.range.min) {
            if let Err(e) = self.start() {
                self.failed(&e);
                break;
            }
        }
        for pid in old {
            if let Some(w) = self.workers.get_mut(&pid) {
                w.retiring = true;
                let _ = rustix::io::write(&w.retire, b"r");
            }
        }
    }

    fn ended(&mut self, pid: Pid) {
        let Some(w) = self.workers.remove(&pid) else { return };
        if !w.retiring && w.started.elapsed() < YOUNG {
            self.restart_after = Instant::now() + RESTART_BACKOFF;
        }
    }

    /// Starts workers until MIN run (after the back-off, if one died young or a fork failed).
    fn keep_minimum(&mut self) {
        while self.active() < self.range.min && Instant::now() >= self.restart_after {
            if let Err(e) = self.start() {
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
            if let Err(e) = self.start() {
                self.failed(&e);
            }
            return;
        }
        if self.workers.values().filter(|w| !w.retiring).count() <= self.range.min {
            return;
        }
        let idle = self.workers.values_mut().find(|w| !w.retiring && !w.busy && w.idle_since.elapsed() >= IDLE_RETIRE);
        if let Some(w) = idle {
            w.retiring = true;
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
        if self.active() < self.range.min {
            due = Some(self.restart_after);
        }
        if self.status.is_some() && self.workers.len() > self.range.min {
            let idle = self.workers.values().filter(|w| !w.retiring && !w.busy).map(|w| w.idle_since + IDLE_RETIRE);
            due = due.into_iter().chain(idle).min();
        }
        due.map(|d| d.saturating_duration_since(Instant::now()).max(Duration::from_millis(10)))
    }
}

/// What a waiting worker is woken to do, in the order it acts on them.
#[derive(Debug, PartialEq, Eq)]
enum Duty {
    Shutdown,
    /// Asked to retire, and a connection may be queued on the `index`th listener in the
    /// same wake-up: accept and serve that one last connection (an `EPOLLEXCLUSIVE`
    /// wake-up may have been this worker's alone, and no other idle worker was woken for
    /// it), then exit.
    LastConnection {
        index: usize,
    },
    /// Asked to retire (or replaced by a SIGHUP reload): exit without accepting.
    Retire,
    /// A connection may be queued on the `index`th listener.
    Connection {
        index: usize,
    },
}

/// The worker's epoll set: the shutdown pipe, its retire pipe, and each shared listener
/// registered `EPOLLEXCLUSIVE` (epoll_ctl(2)), so one connection wakes one idle worker.
struct Waiter {
    epoll: OwnedFd,
}

impl Waiter {
    const SHUTDOWN: u64 = 0;
    const RETIRE: u64 = 1;
    const LISTENER: u64 = 2;

    /// `LISTENER + i` names the `i`th listener.
    fn new(shutdown: &Shutdown, retire: &OwnedFd, listeners: &[&TcpListener]) -> io::Result<Waiter> {
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        let level = epoll::EventFlags::IN;
        epoll::add(&epoll, shutdown.fd(), epoll::EventData::new_u64(Self::SHUTDOWN), level)?;
        epoll::add(&epoll, retire, epoll::EventData::new_u64(Self::RETIRE), level)?;
        let exclusive = epoll::EventFlags::IN | epoll::EventFlags::EXCLUSIVE;
        for (i, listener) in listeners.iter().enumerate() {
            epoll::add(&epoll, listener, epoll::EventData::new_u64(Self::LISTENER + i as u64), exclusive)?;
        }
        Ok(Waiter { epoll })
    }

    /// Blocks until something is ready; `Err` only for a failing epoll_wait (not EINTR).
    fn wait(&self) -> io::Result<Duty> {
        let mut events = Vec::with_capacity(8);
        loop {
            events.clear();
            match epoll::wait(&self.epoll, rustix::buffer::spare_capacity(&mut events), None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let ready = |key| events.iter().any(|e| e.data.u64() == key);
            if ready(Self::SHUTDOWN) {
                return Ok(Duty::Shutdown);
            }
            let listener = events.iter().find(|e| e.data.u64() >= Self::LISTENER);
            let index = listener.map(|e| (e.data.u64() - Self::LISTENER) as usize);
            match (ready(Self::RETIRE), index) {
                (true, Some(index)) => return Ok(Duty::LastConnection { index }),
                (true, None) => return Ok(Duty::Retire),
                (false, Some(index)) => return Ok(Duty::Connection { index }),
                (false, None) => {}
            }
        }
    }
}

/// A worker's whole life: accept and serve one connection at a time until shutdown or
/// retirement, then _exit. Never returns.
fn worker(
    listeners: &[&TcpListener],
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
    let waiter = Waiter::new(shutdown, &retire, listeners);
    // Connections are served under `retirable`: the server's shutdown, or this worker's
    // retirement (a SIGHUP reload, or the pool shrinking), whichever comes first.
    let retirable = retire.try_clone().and_then(|r| shutdown.or_when_readable(r));
    let (waiter, retirable) = match (waiter, retirable) {
        (Ok(waiter), Ok(retirable)) => (waiter, retirable),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("spidey: prefork worker cannot wait on its listener: {e}");
            spidey_sys::exit_immediately(1)
        }
    };
    let mut worker = super::blocking::Worker::new(server);
    loop {
        let (listener, last) = match waiter.wait() {
            Ok(Duty::Connection { index }) => (listeners[index], false),
            Ok(Duty::LastConnection { index }) => (listeners[index], true),
            Ok(Duty::Shutdown) => {
                shutdown.note();
                break;
            }
            Ok(Duty::Retire) | Err(_) => break,
        };
        // The listener is non-blocking: another worker may have taken the connection.
        match listener.accept() {
            Ok((stream, peer)) => {
                report(BUSY);
                // A connection this worker accepted is its to answer: its first request is
                // waited for under the server's shutdown alone, within the idle timeout, as
                // `serve` would wait. Under `retirable`, a reload's retirement arriving
                // between the accept and the request's bytes closed it unanswered (the
                // readable socket wins over a fired stop in `serve`'s wait).
                // Silent until the idle timeout, or shutdown: closed unserved, as `serve` closes it.
                let first =
                    crate::net::wait_readable(stream.as_fd(), shutdown, Some(Instant::now() + server.timeouts.idle));
                if matches!(first, Ok(crate::net::Wake::Ready)) {
                    // The last connection is served under the server's shutdown alone: under
                    // `retirable`, already fired, it would be closed before its first request.
                    let stop = if last { shutdown } else { &retirable };
                    let serve = || super::blocking::serve(stream, peer, server, stop, &mut worker);
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(serve));
                }
                report(IDLE);
            }
            Err(e) if accept::is_exhaustion(&e) => {
                if accept::pause(shutdown, accept::EXHAUSTED_BACKOFF) {
                    break;
                }
            }
            // WouldBlock (taken by another worker), ECONNABORTED, EINTR: wait again.
            Err(_) => {}
        }
        if last {
            break;
        }
    }
    crate::log::flush();
    spidey_sys::exit_immediately(0)
}
