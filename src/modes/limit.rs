//! A counting semaphore for open connections, for the threaded modes.
//!
//! The acceptor takes a [`Permit`] before it accepts; the thread serving the connection
//! drops it when the connection closes, which wakes the acceptor (and the final drain).

use crate::net::Shutdown;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a waiter re-checks shutdown while nobody releases a permit.
const RECHECK: Duration = Duration::from_millis(100);

#[derive(Debug)]
pub(crate) struct ConnLimit {
    open: Mutex<usize>,
    released: Condvar,
    max: usize,
}

/// One open connection's place under the limit; released on drop.
#[derive(Debug)]
pub(crate) struct Permit(Arc<ConnLimit>);

impl ConnLimit {
    pub(crate) fn new(max: usize) -> Arc<ConnLimit> {
        Arc::new(ConnLimit { open: Mutex::new(0), released: Condvar::new(), max })
    }

    /// Waits for a free place; `None` once shutdown is asked.
    pub(crate) fn acquire(self: &Arc<Self>, shutdown: &Shutdown) -> Option<Permit> {
        let mut open = self.lock();
        while *open >= self.max {
            if shutdown.requested() {
                return None;
            }
            open = self.released.wait_timeout(open, RECHECK).unwrap_or_else(|e| e.into_inner()).0;
        }
        *open += 1;
        Some(Permit(Arc::clone(self)))
    }

    /// Waits until every permit is released or `deadline` passes; returns whether all were.
    pub(crate) fn wait_all_released(&self, deadline: Instant) -> bool {
        let mut open = self.lock();
        while *open > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else { return false };
            open = self.released.wait_timeout(open, left).unwrap_or_else(|e| e.into_inner()).0;
        }
        true
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        // A panicking connection thread must not wedge the limit: the count stays valid.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        *self.0.lock() -= 1;
        self.0.released.notify_all();
    }
}
