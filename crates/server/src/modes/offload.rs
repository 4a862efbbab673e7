//! The worker pool behind `hybrid`'s event loops: requests whose answer may block or burn
//! CPU ([`Site::is_heavy`](crate::content::Site::is_heavy): a CGI spawn, an in-process
//! handler, `--cpu-work`, a directory listing) are answered here, off the loops, and each
//! answer goes back to the loop that owns the connection, which sends it.
//!
//! Coordination: one mutex guards a bounded FIFO of jobs, with one condvar the workers
//! wait on. A loop submits a job (a copy of the request's bytes, and whose it is) with
//! [`Offload::submit`], which refuses when the queue is full, so the loop answers 503 at
//! once rather than queueing without bound. A worker takes the oldest job, runs the whole
//! exchange on its own [`Exchanger`], puts the [`Done`] answer in the owning loop's inbox
//! and writes that loop's eventfd (the one `--max-conns` also wakes it with,
//! [`LoopLimit::wake`]); a woken loop drains its inbox ([`Offload::take`]). An answer for
//! a connection that has gone since (its slot freed or reused: the generation differs) is
//! dropped, which also kills a script it started.
//!
//! Shutdown: the loops stop first; [`Offload::finish`] then closes the queue; the workers
//! answer what is still queued (those answers find no loop and are dropped) and end, and
//! it joins them. A worker whose exchange panics (a handler bug) answers that job with
//! nothing: its connection then gets the 504 of the loop's deadline, and the worker lives on.

use super::evloop::conns::ConnId;
use super::limit::LoopLimit;
use crate::exchange::{Answer, Exchanger, Step};
use crate::server::Server;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

/// One request for the pool.
pub(crate) struct Job {
    /// The loop that owns the connection, and which connection.
    pub loop_index: usize,
    pub conn: ConnId,
    /// The connection's buffered bytes, from the start of the request.
    pub bytes: Vec<u8>,
    pub peer: SocketAddr,
    pub must_close: bool,
}

/// A finished job, on its way back to its loop.
pub(crate) struct Done {
    pub conn: ConnId,
    /// The answer, with its own copy of the head the pool's exchanger framed.
    pub answer: Answer<'static>,
}

struct State {
    jobs: VecDeque<Job>,
    closed: bool,
    /// Answers waiting for loop `i`.
    inboxes: Vec<Vec<Done>>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled when a job is queued or the queue closes.
    work: Condvar,
    cap: usize,
    limit: Arc<LoopLimit>,
    server: Arc<Server>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The pool: its queue, the loops' inboxes and the worker threads.
pub(crate) struct Offload {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Offload {
    /// Starts `threads` workers with a queue of at most `cap` jobs, for `loops` loops woken
    /// through `limit`'s eventfds.
    pub(crate) fn start(
        server: Arc<Server>,
        limit: Arc<LoopLimit>,
        loops: usize,
        threads: usize,
        cap: usize,
    ) -> std::io::Result<Offload> {
        let state = State { jobs: VecDeque::new(), closed: false, inboxes: (0..loops).map(|_| Vec::new()).collect() };
        let shared = Arc::new(Shared { state: Mutex::new(state), work: Condvar::new(), cap, limit, server });
        let pool = Offload { shared, threads: Mutex::new(Vec::with_capacity(threads)) };
        for i in 0..threads {
            let shared = Arc::clone(&pool.shared);
            match std::thread::Builder::new().name(format!("offload-{i}")).spawn(move || work(&shared)) {
                Ok(t) => pool.threads.lock().unwrap_or_else(PoisonError::into_inner).push(t),
                Err(e) => {
                    pool.finish();
                    return Err(e);
                }
            }
        }
        Ok(pool)
    }

    /// Queues `job`; false if the queue is full or closed (the caller answers 503).
    pub(crate) fn submit(&self, job: Job) -> bool {
        let mut st = self.shared.lock();
        if st.closed || st.jobs.len() >= self.shared.cap {
            return false;
        }
        st.jobs.push_back(job);
        drop(st);
        self.shared.work.notify_one();
        true
    }

    /// The answers waiting for loop `index`.
    pub(crate) fn take(&self, index: usize, into: &mut Vec<Done>) {
        let mut st = self.shared.lock();
        if let Some(inbox) = st.inboxes.get_mut(index) {
            into.append(inbox);
        }
    }

    /// Closes the queue, lets the workers answer what is queued, and joins them.
    pub(crate) fn finish(&self) {
        self.shared.lock().closed = true;
        self.shared.work.notify_all();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for t in threads {
            let _ = t.join();
        }
    }
}

/// How much lower than the loops' the workers' scheduling priority is (a nice value).
/// On a machine with as many loops as cores, CPU-bound jobs would otherwise share the
/// cores evenly with the loops, and a static request would wait its turn behind them as
/// it does in `event`; at nice 10 a worker gets about a tenth of a core's time against a
/// runnable loop (CFS weights 110 against 1024), and a loop that wakes preempts it.
pub(crate) const WORKER_NICENESS: i32 = 10;

/// A worker's life: take the oldest job, answer it, hand the answer to its loop.
fn work(shared: &Shared) {
    // setpriority(2) with a thread id sets that thread's nice value on Linux. If it fails
    // (a seccomp filter, say) the pool still works, only without the priority.
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), WORKER_NICENESS);
    let mut ex = Exchanger::new();
    loop {
        let job = {
            let mut st = shared.lock();
            loop {
                if let Some(job) = st.jobs.pop_front() {
                    break job;
                }
                if st.closed {
                    return;
                }
                st = shared.work.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let step = std::panic::catch_unwind(AssertUnwindSafe(|| {
            match ex.step(&shared.server, &job.bytes, job.peer, job.must_close) {
                Step::Respond(answer) => Some(answer.into_owned()),
                Step::Partial | Step::Offload => None,
            }
        }));
        // The exchange recorded the answer's access-log line in this thread's buffer, which
        // no loop turn flushes: write it now, as a loop does each turn.
        crate::log::flush();
        // A panic, or (never: the loop saw a whole head) a partial request: no answer.
        let Ok(Some(answer)) = step else { continue };
        let done = Done { conn: job.conn, answer };
        let mut st = shared.lock();
        let Some(inbox) = st.inboxes.get_mut(job.loop_index) else { continue };
        inbox.push(done);
        drop(st);
        shared.limit.wake(job.loop_index);
    }
}
