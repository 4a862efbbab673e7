//! `pool`: a pool of worker threads fed by a bounded queue. The main thread accepts and
//! queues; each worker takes the oldest queued connection and serves it to the end.
//!
//! Trade-off: thread creation is paid once and the thread count is fixed (or bounded by
//! `--workers MIN-MAX`), so memory stays flat under any crowd; but each worker serves one
//! connection at a time, so idle keep-alive clients can occupy every worker and queued
//! connections wait behind them (the idle timeout bounds for how long).
//!
//! Coordination: one mutex guards the queue and the worker counts, with two condvars.
//! The acceptor waits on `room` before each accept while the queue is full (or open
//! connections reach `--max-conns`): backpressure leaves new connections in the kernel's
//! listen queue and never drops one already accepted. Workers wait on `work`; the
//! acceptor wakes one per queued connection and, when no worker is idle and the pool is
//! below MAX, starts another. A worker idle for [`IDLE_RETIRE`] ends if the pool is above
//! MIN. Workers are detached; the counts are what the acceptor waits on.
//!
//! Shutdown: the acceptor stops accepting, closes the listener, marks the queue closed
//! and wakes every worker. Workers serve what is still queued (a request already sent
//! is answered, an idle connection closed), finish their in-flight responses (their
//! sockets are polled with the shutdown pipe), and end; the acceptor waits for the last
//! one within the grace period, plus a second.

use super::{accept, cores, ModeContext, Workers};
use crate::net::Shutdown;
use crate::server::Server;
use anyhow::Context;
use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a worker above the minimum stays idle before it ends (pool and prefork).
pub(crate) const IDLE_RETIRE: Duration = Duration::from_secs(2);
/// How often the acceptor re-checks shutdown while it waits for room.
const RECHECK: Duration = Duration::from_millis(100);
/// How long after the grace period the acceptor stops waiting for workers.
const ABANDON_MARGIN: Duration = Duration::from_secs(1);

struct Pool {
    state: Mutex<State>,
    /// Signalled when a connection is queued or the queue closes; workers wait on it.
    work: Condvar,
    /// Signalled when a worker takes a connection, finishes one, or ends; the acceptor waits on it.
    room: Condvar,
    workers: Workers,
    queue_cap: usize,
    max_conns: usize,
    server: Arc<Server>,
    shutdown: Shutdown,
}

#[derive(Default)]
struct State {
    queue: VecDeque<(TcpStream, SocketAddr)>,
    live: usize,
    idle: usize,
    closed: bool,
}

pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    let ModeContext { server, listeners, shutdown, workers, max_conns, .. } = ctx;
    let mut acceptor = accept::Acceptor::new(listeners);
    // Default: adapt from cores + 2 up to 256, so a crowd of slow or idle clients (each
    // pins a worker) makes the pool grow rather than queue everyone behind it.
    let workers = workers.unwrap_or(Workers { min: cores() + 2, max: super::DEFAULT_MAX_WORKERS });
    // More workers than connections could ever be open would only sit idle.
    let workers = Workers { min: workers.min.min(max_conns), max: workers.max.min(max_conns) };
    let pool = Arc::new(Pool {
        state: Mutex::default(),
        work: Condvar::new(),
        room: Condvar::new(),
        workers,
        queue_cap: workers.max,
        max_conns,
        server,
        shutdown: shutdown.clone(),
    });
    for _ in 0..workers.min {
        {
            let mut st = pool.lock();
            st.live += 1;
            st.idle += 1;
        }
        start_worker(&pool).context("cannot start the worker threads")?;
    }
    while pool.wait_for_room() {
        let Some(conn) = acceptor.next(&shutdown) else { break };
        pool.push(conn);
    }
    drop(acceptor);
    pool.close_and_wait();
    Ok(())
}

fn start_worker(pool: &Arc<Pool>) -> std::io::Result<()> {
    let pool = Arc::clone(pool);
    std::thread::Builder::new()
        .name("spidey-pool".into())
        .stack_size(super::thread::STACK_SIZE)
        .spawn(move || pool.work())
        .map(drop)
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Connections are served outside the lock, so a poisoned lock still holds valid state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until a connection may be accepted; false once shutdown is asked.
    fn wait_for_room(&self) -> bool {
        let mut st = self.lock();
        loop {
            let busy = st.live - st.idle;
            if st.queue.len() < self.queue_cap && st.queue.len() + busy < self.max_conns {
                return true;
            }
            if self.shutdown.requested() {
                return false;
            }
            st = self.room.wait_timeout(st, RECHECK).unwrap_or_else(|e| e.into_inner()).0;
        }
    }

    /// Queues an accepted connection, wakes a worker, and grows the pool if every worker
    /// is taken and MAX allows.
    fn push(self: &Arc<Self>, conn: (TcpStream, SocketAddr)) {
        let grow = {
            let mut st = self.lock();
            st.queue.push_back(conn);
            crate::metrics::add(crate::metrics::Counter::Queued, 1);
            let grow = st.queue.len() > st.idle && st.live < self.workers.max;
            if grow {
                st.live += 1;
                st.idle += 1;
            }
            grow
        };
        self.work.notify_one();
        if grow && start_worker(self).is_err() {
            // Out of threads: the queued connection waits for a current worker instead.
            let mut st = self.lock();
            st.live -= 1;
            st.idle -= 1;
        }
    }

    /// A worker's life: take a connection, serve it, repeat; end on retire or close.
    fn work(&self) {
        let mut worker = super::blocking::Worker::new(&self.server);
        let mut st = self.lock();
        loop {
            while st.queue.is_empty() {
                let retire = st.live > self.workers.min;
                if st.closed {
                    return self.end(st);
                }
                let (guard, waited) = self.work.wait_timeout(st, IDLE_RETIRE).unwrap_or_else(|e| e.into_inner());
                st = guard;
                if waited.timed_out() && retire && st.queue.is_empty() && st.live > self.workers.min {
                    return self.end(st);
                }
            }
            let (stream, peer) = st.queue.pop_front().expect("the queue is not empty");
            crate::metrics::sub(crate::metrics::Counter::Queued);
            st.idle -= 1;
            drop(st);
            self.room.notify_one();
            // A panic costs only its connection, not the worker or the counts.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let server = crate::server::newest(&self.server);
                super::blocking::serve(stream, peer, &server, &self.shutdown, &mut worker);
            }));
            st = self.lock();
            st.idle += 1;
            self.room.notify_one();
        }
    }

    fn end(&self, mut st: MutexGuard<'_, State>) {
        st.live -= 1;
        st.idle -= 1;
        drop(st);
        self.room.notify_all();
    }

    /// Closes the queue, wakes every worker, and waits for the last one to end.
    fn close_and_wait(&self) {
        self.shutdown.note();
        let deadline = self.shutdown.deadline().unwrap_or_else(Instant::now) + ABANDON_MARGIN;
        let mut st = self.lock();
        st.closed = true;
        self.work.notify_all();
        while st.live > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { return };
            st = self.room.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}
