//! Starting and joining the per-core loops of `event` and `uring`.
//!
//! Each loop is a thread with its own SO_REUSEPORT listener per `--addr` (loop 0 takes the
//! originals, the others bind siblings), its own connections, buffers and exchanger: nothing is
//! shared on the hot path but the `--max-conns` count ([`LoopLimit`]: one atomic, touched
//! once per accept and close), and the kernel spreads new connections over the listeners.
//! Shutdown reaches every loop through the shutdown pipe, which each loop watches. No loop
//! accepts before every loop has made its own descriptors ([`StartLine`]).

use super::limit::LoopLimit;
use super::ModeContext;
use crate::net::Shutdown;
use crate::server::Server;
use anyhow::Context;
use std::net::TcpListener;
use std::sync::{Arc, Condvar, Mutex};

/// What one loop is given.
pub(crate) struct LoopContext {
    pub server: Arc<Server>,
    /// This loop's listeners, one per `--addr`.
    pub listeners: Vec<TcpListener>,
    pub shutdown: Shutdown,
    /// The `--max-conns` count every loop shares (not a share each: the kernel's spread
    /// over the listeners is uneven).
    pub limit: Arc<LoopLimit>,
    /// This loop's number, which names its vacancy eventfd in `limit`.
    pub index: usize,
    /// This loop's place at the start line: it waits there before its first accept.
    pub start: Arrival,
}

/// The loops' start line. A loop makes its descriptors (its epoll instance or ring and their
/// registrations) in its own thread, after the startup line is printed; no loop accepts
/// until every loop has made them (or failed to). Otherwise a crowd arriving at once is
/// accepted by the first loop up to the descriptor limit, and a later loop that then
/// cannot make its epoll instance stops the whole server (EMFILE). Connections that come
/// meanwhile wait in the listen queues, which hold no descriptor of the server's.
pub(crate) struct StartLine {
    /// Loops not yet arrived.
    waiting: Mutex<usize>,
    all_arrived: Condvar,
}

impl StartLine {
    /// A start line for `n` loops, and their places.
    pub(crate) fn places(n: usize) -> Vec<Arrival> {
        let line = Arc::new(StartLine { waiting: Mutex::new(n), all_arrived: Condvar::new() });
        (0..n).map(|_| Arrival { line: Arc::clone(&line), arrived: false }).collect()
    }

    fn arrive(&self) -> std::sync::MutexGuard<'_, usize> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        *waiting = waiting.saturating_sub(1);
        if *waiting == 0 {
            self.all_arrived.notify_all();
        }
        waiting
    }
}

/// One loop's place at the [`StartLine`]. Dropped without [`Arrival::wait_for_all`] (a loop
/// that failed to set up, a thread never started), it counts as arrived, so no loop ever
/// waits for one that will not come.
pub(crate) struct Arrival {
    line: Arc<StartLine>,
    arrived: bool,
}

impl Arrival {
    /// Arrives, then waits until every loop has arrived (at once on a second call).
    pub(crate) fn wait_for_all(&mut self) {
        if std::mem::replace(&mut self.arrived, true) {
            return;
        }
        let mut waiting = self.line.arrive();
        while *waiting > 0 {
            waiting = self.line.all_arrived.wait(waiting).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        if !std::mem::replace(&mut self.arrived, true) {
            drop(self.line.arrive());
        }
    }
}

/// How many loops [`run`] starts: `--workers`, by default one per core.
pub(crate) fn count(ctx: &ModeContext) -> usize {
    ctx.workers.map(|w| w.max).unwrap_or_else(super::cores).max(1)
}

/// Runs `body` on [`count`] threads, one loop each, and joins them all.
pub(crate) fn run<F>(mut ctx: ModeContext, name: &str, body: F) -> anyhow::Result<()>
where
    F: Fn(LoopContext) -> anyhow::Result<()> + Send + Sync + 'static,
{
    let n = count(&ctx);
    let limit = &LoopLimit::new(ctx.max_conns, n).context("eventfds for the loops")?;
    let body = Arc::new(body);
    // listeners[i]: loop i's socket for each address; loop 0 takes the bound ones.
    let mut per_loop: Vec<Vec<TcpListener>> = (0..n).map(|_| Vec::with_capacity(ctx.listeners.len())).collect();
    for original in ctx.listeners {
        for sockets in per_loop.iter_mut().skip(1) {
            sockets.push(original.bind_sibling().context("bind a sibling listener")?);
        }
        per_loop[0].push(original.socket);
    }
    ModeContext::all_bound(&mut ctx.account)?;
    let mut threads = Vec::with_capacity(n);
    // A place not handed out (a spawn failed) is dropped below: it counts as arrived.
    let mut starts = StartLine::places(n).into_iter();
    for (i, listeners) in per_loop.into_iter().enumerate() {
        let (server, shutdown, limit) = (Arc::clone(&ctx.server), ctx.shutdown.clone(), Arc::clone(limit));
        let Some(start) = starts.next() else { break };
        let lc = LoopContext { server, listeners, shutdown, limit, index: i, start };
        let body = Arc::clone(&body);
        let thread = std::thread::Builder::new().name(format!("{name}-{i}")).spawn(move || {
            let shutdown = lc.shutdown.clone();
            let result = body(lc);
            if result.is_err() {
                shutdown.trigger(); // one loop failing stops them all
            }
            result
        });
        match thread {
            Ok(t) => threads.push(t),
            Err(e) => {
                // Stop the loops already running before reporting (the places not handed
                // out count as arrived, so none of them waits at the start line).
                drop(starts);
                ctx.shutdown.trigger();
                let _ = join_all(threads);
                return Err(e).context("spawn a loop thread");
            }
        }
    }
    join_all(threads)
}

fn join_all(threads: Vec<std::thread::JoinHandle<anyhow::Result<()>>>) -> anyhow::Result<()> {
    let mut first_error = None;
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(anyhow::anyhow!("a loop thread panicked"));
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every loop waits at the start line until the last one arrives; a place dropped
    /// unused (a loop that failed to set up) counts as arrived.
    #[test]
    fn no_loop_starts_before_every_loop_has_arrived_or_failed() {
        let mut places = StartLine::places(3);
        let failed = places.pop().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiters: Vec<_> = places
            .into_iter()
            .map(|mut place| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    place.wait_for_all();
                    tx.send(()).unwrap();
                })
            })
            .collect();
        // Two have arrived, the third not yet: nobody is through.
        assert!(rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(), "a loop started early");
        drop(failed);
        for _ in 0..2 {
            rx.recv_timeout(std::time::Duration::from_secs(10)).expect("a loop still waits after the last arrived");
        }
        for w in waiters {
            w.join().unwrap();
        }
    }
}
