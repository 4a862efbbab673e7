//! `hybrid`: the epoll event loops of `event` plus a bounded worker pool, as Apache's event
//! MPM, Tomcat NIO, Netty with a business pool and nginx's thread pools combine them.
//!
//! Model: the loops own every socket: they accept, read heads, hold idle keep-alive
//! connections and send every response (static files with sendfile, on the loop). A whole
//! request whose answer may block or burn CPU ([`Site::is_heavy`]: an in-process handler,
//! a path that may run a CGI script, `--cpu-work`, a directory listing) is not answered on
//! the loop: its bytes go to the pool ([`offload`](super::offload)), whose worker runs the
//! exchange and hands the answer back to the loop, which sends it (a script's output is
//! then pumped by the loop, as in `event`). A full pool (all workers busy and
//! [`QUEUE_PER_THREAD`] jobs per worker waiting) answers 503 at once rather than queue
//! without bound; an answer not back within `--cgi-timeout` is a 504.
//!
//! Trade-off: a slow handler or a listing of a huge directory no longer stalls every
//! connection of its loop (`event`'s weakness), and idle or slow clients still cost no
//! thread (`pool`'s weakness); the price is a hand-off to another thread and back (two
//! queue operations and an eventfd write) for each heavy request, and one more parse of
//! its head.
//!
//! Workers: `--workers N` sets the loops (default: one per core); `--pool-threads N` the
//! pool (default [`THREADS_PER_CORE`] per core), which queues at most
//! [`QUEUE_PER_THREAD`] jobs per thread.
//!
//! Shutdown: the loops drain as in `event` (an offloaded request still waiting keeps its
//! loop alive until its answer is sent or the grace period ends); once every loop has
//! returned, the pool's queue closes and its workers finish what they hold and are
//! joined.
//!
//! The loops are `event`'s, started as `event` starts them (`loops::run`); the pool is
//! the one optional part of their core, each loop holding its [`Desk`](super::offload::Desk).
//!
//! [`Site::is_heavy`]: crate::content::Site::is_heavy

use super::evloop::offload::Offload;
use super::loops;
use super::ModeContext;
use crate::exchange::Offloading;
use anyhow::Context;
use std::sync::Arc;

/// Pool threads per core: enough that a few blocking handlers (sleeping on I/O, not
/// burning CPU) do not starve the others.
pub(crate) const THREADS_PER_CORE: usize = 4;
/// Jobs that may wait per pool thread before the pool answers 503.
pub(crate) const QUEUE_PER_THREAD: usize = 16;

/// Starts the pool, then `event`'s loops, each with its desk at the pool; once every loop
/// has returned, finishes the pool.
pub fn run(ctx: ModeContext) -> anyhow::Result<()> {
    let threads = ctx.pool_threads.unwrap_or(THREADS_PER_CORE * super::cores());
    let queue = QUEUE_PER_THREAD * threads;
    let pool = Arc::new(
        Offload::start(Arc::clone(&ctx.server), loops::count(&ctx), threads, queue, Offloading::Heavy)
            .context("start the worker pool")?,
    );
    let desks = Arc::clone(&pool);
    let result = loops::run(ctx, "hybrid", move |lc| {
        let desk = desks.desk(lc.index);
        super::event::event_loop(lc, Some(desk))
    });
    pool.finish();
    result
}
