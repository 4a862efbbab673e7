//! The worker pool behind event loops: requests its [`Offloading`] names are answered here,
//! off the loops, and each answer goes back to the loop that owns the connection, which
//! sends it. `hybrid`'s pool takes whatever may block or burn CPU
//! ([`Site::is_heavy`](crate::content::Site::is_heavy): a CGI spawn, an in-process handler,
//! `--cpu-work`, a directory listing, a password to hash); `event` and `uring` keep one
//! only with `--basic-auth`, for the passwords that must be hashed ([`for_passwords`]), so
//! a wrong guess (up to a quarter of a second of CPU) never stalls a loop.
//!
//! The loop core sees the pool only through its [`Desk`], the one optional part of the
//! core (`evloop/mod.rs`): it hands the desk a request ([`Desk::submit`]) and takes
//! answers from it when the desk's doorbell rings ([`Desk::take`]); the backend watches
//! the doorbell (`event.rs`).
//!
//! Coordination: one mutex guards a bounded FIFO of jobs, with one condvar the workers
//! wait on. A loop submits a job (a copy of the request's bytes, and whose it is), which is
//! refused when the queue is full, so the loop answers 503 at once rather than queueing
//! without bound. A worker takes the oldest job, runs the whole exchange on its own
//! [`Exchanger`], puts the [`Done`] answer in the owning loop's inbox and rings that loop's
//! doorbell, an eventfd of the pool's own (one per loop); the rung loop drains its inbox.
//! An answer for a connection that has gone since (its slot freed or reused: the
//! generation differs) is dropped, which also kills a script it started.
//!
//! Shutdown: the loops stop first; [`Offload::finish`] then closes the queue; the workers
//! answer what is still queued (those answers find no loop and are dropped) and end, and
//! it joins them. A worker whose exchange panics (a handler bug) answers that job with
//! nothing: its connection then gets the 504 of the loop's deadline, and the worker lives on.

use super::conns::ConnId;
use crate::exchange::{Answer, Exchanger, Offloading, Step};
use crate::h2::StreamJob;
use crate::modes::ModeContext;
use crate::server::Server;
use rustix::event::{eventfd, EventfdFlags};
use spidey_http::h2::StreamId;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// One request for the pool.
struct Job {
    /// The loop that owns the connection, and which connection.
    loop_index: usize,
    conn: ConnId,
    peer: SocketAddr,
    work: Work,
}

/// What a job asks, in its protocol's terms.
enum Work {
    /// An HTTP/1.1 request: the connection's buffered bytes, from the start of the request.
    Http1 { bytes: Vec<u8>, must_close: bool },
    /// An HTTP/2 stream's request, decoded, with its whole body.
    Stream(StreamJob),
}

/// A finished job, on its way back to its loop.
pub(crate) struct Done {
    pub(crate) conn: ConnId,
    /// The answer, with its own copy of the head the pool's exchanger framed.
    pub(crate) answer: Answer<'static>,
    /// For an HTTP/2 stream: which, and its request body (a script's stdin).
    pub(crate) stream: Option<(StreamId, Vec<u8>)>,
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
    /// Loop `i`'s doorbell: an eventfd written when an answer is put in its inbox.
    doorbells: Vec<OwnedFd>,
    server: Arc<Server>,
    /// Which requests the loops hand to this pool.
    offloading: Offloading,
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
    /// Starts `threads` workers with a queue of at most `cap` jobs, for `loops` loops, each
    /// with a doorbell of its own, taking the requests `offloading` names.
    pub(crate) fn start(
        server: Arc<Server>,
        loops: usize,
        threads: usize,
        cap: usize,
        offloading: Offloading,
    ) -> std::io::Result<Offload> {
        let flags = EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK;
        let doorbells = (0..loops).map(|_| eventfd(0, flags)).collect::<Result<Vec<_>, _>>()?;
        let state = State { jobs: VecDeque::new(), closed: false, inboxes: (0..loops).map(|_| Vec::new()).collect() };
        let shared =
            Arc::new(Shared { state: Mutex::new(state), work: Condvar::new(), cap, doorbells, server, offloading });
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

    /// Loop `index`'s desk at the pool.
    pub(crate) fn desk(&self, index: usize) -> Desk {
        Desk { shared: Arc::clone(&self.shared), index, answers: Vec::new() }
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

/// Jobs that may wait per password worker before the loop answers 503.
const PASSWORD_QUEUE_PER_THREAD: usize = 16;

/// `event`'s and `uring`'s pool with `--basic-auth`: one worker per core, which checks the
/// passwords that must be hashed (and answers those requests whole), so a wrong guess
/// never stalls a loop; `None` without `--basic-auth`. Like `hybrid`'s, its queue is
/// bounded (503 past it) and its workers run at a lower priority than the loops.
pub(crate) fn for_passwords(ctx: &ModeContext) -> anyhow::Result<Option<Arc<Offload>>> {
    if ctx.server.site.options().auth.is_none() {
        return Ok(None);
    }
    let threads = crate::modes::cores();
    let loops = crate::modes::loops::count(ctx);
    let pool = Offload::start(
        Arc::clone(&ctx.server),
        loops,
        threads,
        PASSWORD_QUEUE_PER_THREAD * threads,
        Offloading::Passwords,
    );
    Ok(Some(Arc::new(pool.map_err(|e| anyhow::anyhow!("start the password workers: {e}"))?)))
}

/// `event`'s and `uring`'s start: the password pool if `--basic-auth` asks for one
/// ([`for_passwords`]), then `name`'s loops (`loops::run`), each running `body` with its
/// desk at that pool; once every loop has returned, the pool is finished.
pub(crate) fn run_loops_with_password_pool<F>(ctx: ModeContext, name: &str, body: F) -> anyhow::Result<()>
where
    F: Fn(crate::modes::loops::LoopContext, Option<Desk>) -> anyhow::Result<()> + Send + Sync + 'static,
{
    let pool = for_passwords(&ctx)?;
    let desks = pool.clone();
    let result = crate::modes::loops::run(ctx, name, move |lc| {
        let desk = desks.as_ref().map(|pool| pool.desk(lc.index));
        body(lc, desk)
    });
    if let Some(pool) = pool {
        pool.finish();
    }
    result
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
    let mut server = Arc::clone(&shared.server);
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
            crate::server::refresh(&mut server); // a SIGHUP's configuration, from this job on
            match &job.work {
                Work::Http1 { bytes, must_close } => match ex.step(&server, bytes, job.peer, *must_close) {
                    Step::Respond(answer) => Some(answer.into_owned()),
                    Step::Partial | Step::Offload => None,
                },
                Work::Stream(s) => Some(crate::h2::answer_offloaded(&mut ex, &server, s, job.peer).into_owned()),
            }
        }));
        // The exchange recorded the answer's access-log line in this thread's buffer, which
        // no loop turn flushes: write it now, as a loop does each turn.
        crate::log::flush();
        // A panic, or (never: the loop saw a whole head) a partial request: no answer.
        let Ok(Some(answer)) = step else { continue };
        let stream = match job.work {
            Work::Http1 { .. } => None,
            Work::Stream(s) => Some((s.stream, s.body)),
        };
        let done = Done { conn: job.conn, answer, stream };
        let mut st = shared.lock();
        let Some(inbox) = st.inboxes.get_mut(job.loop_index) else { continue };
        inbox.push(done);
        drop(st);
        if let Some(doorbell) = shared.doorbells.get(job.loop_index) {
            // A full eventfd counter (never, at 2^64 - 2) still leaves it readable.
            let _ = rustix::io::write(doorbell, &1u64.to_ne_bytes());
        }
    }
}

/// One loop's window onto the pool: what the loop core calls.
pub(crate) struct Desk {
    shared: Arc<Shared>,
    /// The loop's number: its inbox and its doorbell.
    index: usize,
    /// Scratch list of answers taken, kept to avoid an allocation per ring.
    answers: Vec<Done>,
}

impl Desk {
    /// Which requests the loop hands to the pool.
    pub(crate) fn offloading(&self) -> Offloading {
        self.shared.offloading
    }

    /// The eventfd this loop's backend watches: readable once answers wait ([`Desk::take`]).
    pub(crate) fn doorbell(&self) -> BorrowedFd<'_> {
        self.shared.doorbells[self.index].as_fd()
    }

    /// Queues connection `conn`'s request (`bytes`, from the start of its head) for the
    /// pool; returns how long its answer may take (then the loop answers 504), or `None` if
    /// the queue is full or closed (the loop answers 503).
    pub(crate) fn submit(&self, conn: ConnId, bytes: Vec<u8>, peer: SocketAddr, must_close: bool) -> Option<Duration> {
        self.queue(conn, peer, Work::Http1 { bytes, must_close })
    }

    /// Queues an HTTP/2 stream's request of connection `conn` for the pool; false if the
    /// queue is full or closed (the stream gets 503). Its deadline is the session's.
    pub(crate) fn submit_stream(&self, conn: ConnId, job: StreamJob, peer: SocketAddr) -> bool {
        self.queue(conn, peer, Work::Stream(job)).is_some()
    }

    fn queue(&self, conn: ConnId, peer: SocketAddr, work: Work) -> Option<Duration> {
        let mut st = self.shared.lock();
        if st.closed || st.jobs.len() >= self.shared.cap {
            return None;
        }
        st.jobs.push_back(Job { loop_index: self.index, conn, peer, work });
        drop(st);
        self.shared.work.notify_one();
        Some(self.shared.server.site.options().cgi.timeout)
    }

    /// The doorbell rang: resets it and takes the answers waiting for this loop. Hand the
    /// list back with [`Desk::give_back`] once drained, to reuse it.
    pub(crate) fn take(&mut self) -> Vec<Done> {
        let _ = rustix::io::read(&self.shared.doorbells[self.index], &mut [0u8; 8]);
        let mut answers = std::mem::take(&mut self.answers);
        if let Some(inbox) = self.shared.lock().inboxes.get_mut(self.index) {
            answers.append(inbox);
        }
        answers
    }

    /// The list [`Desk::take`] returned, drained.
    pub(crate) fn give_back(&mut self, answers: Vec<Done>) {
        self.answers = answers;
    }
}
