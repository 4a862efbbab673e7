//! The `--max-conns` bound: a counting semaphore for the threaded modes ([`ConnLimit`]),
//! and the count the event-driven loops share ([`LoopLimit`]).
//!
//! Threaded modes: the acceptor takes a [`Permit`] before it accepts; the thread serving
//! the connection drops it when the connection closes, which wakes the acceptor (and the
//! final drain). Loops: see [`LoopLimit`]. Either way the bound is one count for the whole
//! server, and a client beyond it waits in the kernel's listen queue: never accepted and
//! closed, never reset.

use crate::net::Shutdown;
use rustix::event::{eventfd, EventfdFlags};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a waiter re-checks shutdown while nobody releases a permit.
const RECHECK: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(crate) struct ConnLimit {
    state: Mutex<Count>,
    released: Condvar,
    max: usize,
}

/// The count under [`ConnLimit`]'s lock.
#[derive(Debug, Default)]
struct Count {
    open: usize,
    /// Threads waiting on `released` (the acceptor at the cap, the final drain): a release
    /// with none makes no futex call.
    waiting: usize,
}

/// One open connection's place under the limit; released on drop.
#[derive(Debug)]
pub(crate) struct Permit(Arc<ConnLimit>);

impl ConnLimit {
    pub(crate) fn new(max: usize) -> Arc<ConnLimit> {
        Arc::new(ConnLimit { state: Mutex::new(Count::default()), released: Condvar::new(), max })
    }

    /// Waits for a free place; `None` once shutdown is asked.
    pub(crate) fn acquire(self: &Arc<Self>, shutdown: &Shutdown) -> Option<Permit> {
        let mut count = self.lock();
        while count.open >= self.max {
            if shutdown.requested() {
                return None;
            }
            count = self.wait(count, RECHECK);
        }
        count.open += 1;
        Some(Permit(Arc::clone(self)))
    }

    /// Waits until every permit is released or `deadline` passes; returns whether all were.
    pub(crate) fn wait_all_released(&self, deadline: Instant) -> bool {
        let mut count = self.lock();
        while count.open > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { return false };
            count = self.wait(count, left);
        }
        true
    }

    /// Waits on `released` for at most `timeout`, counted in `waiting` meanwhile.
    fn wait<'a>(&self, mut count: MutexGuard<'a, Count>, timeout: Duration) -> MutexGuard<'a, Count> {
        count.waiting += 1;
        let mut count = self.released.wait_timeout(count, timeout).unwrap_or_else(|e| e.into_inner()).0;
        count.waiting -= 1;
        count
    }

    fn lock(&self) -> MutexGuard<'_, Count> {
        // A panicking connection thread must not wedge the limit: the count stays valid.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut count = self.0.lock();
        count.open -= 1;
        if count.waiting > 0 {
            self.0.released.notify_all();
        }
    }
}

/// The one `--max-conns` count that the loops of `event` and `uring` share. A loop takes a
/// place ([`LoopLimit::try_take`]) before each accept and gives it back when that
/// connection closes (or the accept found nothing). A loop that finds no place stops
/// accepting (its listener leaves the epoll set, or no ring poll is armed on it), so new
/// connections wait in the kernel's listen queue; whichever loop gives back a place while
/// the count is full wakes every loop through its eventfd ([`LoopLimit::waker`]), so a
/// loop whose listener has clients queued resumes even if its own connections never close.
/// What one [`LoopLimit::accept`] came to.
pub(crate) enum Accepted<T> {
    /// A connection, holding one place of the count.
    Conn(T),
    /// No place free: stop accepting; new clients wait in the listen queue until a place
    /// frees up (the loop's waker).
    Full,
    /// Nothing queued now.
    Empty,
    /// Out of descriptors or memory: the connection stays queued; back off
    /// ([`super::accept::EXHAUSTED_BACKOFF`]) instead of spinning.
    Exhausted,
}

#[derive(Debug)]
pub(crate) struct LoopLimit {
    open: AtomicUsize,
    max: usize,
    /// One eventfd per loop, written when a place frees up in a full house.
    wakers: Vec<OwnedFd>,
}

impl LoopLimit {
    /// A count of at most `max` open connections shared by `loops` loops.
    pub(crate) fn new(max: usize, loops: usize) -> std::io::Result<Arc<LoopLimit>> {
        let flags = EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK;
        let wakers = (0..loops).map(|_| eventfd(0, flags)).collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(LoopLimit { open: AtomicUsize::new(0), max, wakers }))
    }

    /// Takes a place for one connection, if the count is below the bound.
    pub(crate) fn try_take(&self) -> bool {
        self.open.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < self.max).then_some(n + 1)).is_ok()
    }

    /// Gives back the place of a connection that closed (see [`LoopLimit::release`]).
    pub(crate) fn give_back(&self) {
        crate::metrics::sub(crate::metrics::Counter::OpenConnections);
        self.release();
    }

    /// Gives a place back; if the count was full, wakes every loop (some may have stopped
    /// accepting). Every loop that found no place did so before this decrement, so it is
    /// woken: no wake-up is lost.
    fn release(&self) {
        if self.open.fetch_sub(1, Ordering::SeqCst) == self.max {
            for w in &self.wakers {
                // A full eventfd counter (never, at 2^64 - 2) still leaves it readable.
                let _ = rustix::io::write(w, &1u64.to_ne_bytes());
            }
        }
    }

    /// One accept under the count, the step both loops repeat: takes a place, then calls
    /// `accept`; the place stays with a connection it returns and is given back on any
    /// error. A connection gone before it was accepted (ECONNABORTED and friends) is
    /// skipped and the next one tried.
    pub(crate) fn accept<T>(&self, mut accept: impl FnMut() -> std::io::Result<T>) -> Accepted<T> {
        loop {
            if !self.try_take() {
                return Accepted::Full;
            }
            match accept() {
                Ok(conn) => {
                    crate::metrics::add(crate::metrics::Counter::OpenConnections, 1);
                    return Accepted::Conn(conn);
                }
                Err(e) => {
                    self.release();
                    if e.kind() == std::io::ErrorKind::WouldBlock {
                        return Accepted::Empty;
                    }
                    let exhausted = super::accept::is_exhaustion(&e);
                    crate::metrics::accept_failed(exhausted);
                    if exhausted {
                        return Accepted::Exhausted;
                    }
                }
            }
        }
    }

    /// Whether no place is free now (a hint: [`LoopLimit::try_take`] decides).
    pub(crate) fn is_full(&self) -> bool {
        self.open.load(Ordering::SeqCst) >= self.max
    }

    /// Loop `i`'s vacancy eventfd: readable once a place has freed up since the last
    /// [`LoopLimit::drain`].
    pub(crate) fn vacancy(&self, i: usize) -> BorrowedFd<'_> {
        self.wakers[i].as_fd()
    }

    /// Resets loop `i`'s eventfd after a wake-up.
    pub(crate) fn drain(&self, i: usize) {
        let _ = rustix::io::read(&self.wakers[i], &mut [0u8; 8]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A release with a thread waiting wakes it, and a release with none makes no call the
    /// waiter would need: the drain below would otherwise sleep to its 30 s deadline.
    #[test]
    fn a_release_wakes_whoever_waits() {
        let shutdown = Shutdown::new(Duration::from_secs(1)).unwrap();
        let limit = ConnLimit::new(1);
        let held = limit.acquire(&shutdown).expect("a free place");
        let (limit_for_drain, started) = (Arc::clone(&limit), Instant::now());
        let drain = std::thread::spawn(move || limit_for_drain.wait_all_released(started + Duration::from_secs(30)));
        while limit.lock().waiting == 0 {
            std::thread::yield_now();
        }
        drop(held);
        assert!(drain.join().unwrap(), "every permit released");
        assert!(started.elapsed() < Duration::from_secs(10), "the drain slept to its deadline: no wake-up");
        assert_eq!(limit.lock().waiting, 0);
        let again = limit.acquire(&shutdown).expect("the place is free again");
        drop(again);
        let count = limit.lock();
        assert_eq!((count.open, count.waiting), (0, 0));
    }
}
