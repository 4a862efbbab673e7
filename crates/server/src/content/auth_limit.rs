//! `--basic-auth`'s failed-guess limit: after [`LIMIT`] wrong passwords from one client
//! address within [`WINDOW`], that address is answered 429 with `Retry-After` until the
//! window ends, without hashing anything.
//!
//! The counts live in one fixed table of [`BUCKETS`] atomic words (32 KiB), mapped shared
//! before any fork (`spidey_sys::shared`), so `fork`'s per-connection processes and
//! `prefork`'s workers count together, as the threads of the other modes do. An address
//! is an IPv4 address or an IPv6 /64 (one host's usual share), hashed with a key random
//! per server start into a bucket and a 24-bit tag. A word is `tag << 40 | since << 12 |
//! count`: `since`, the monotonic second the window began (28 bits, so windows compare
//! modulo 8.5 years), and the failures in it. An address looks at [`PROBES`] neighbouring
//! buckets: its own tag, else an empty or expired one, else it takes the first (so a flood
//! of addresses makes the table forget, never grow; the memory is bounded, not the
//! addresses). Each update is one compare-and-swap of one word, across processes alike.

use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Failed guesses allowed from one address within [`WINDOW`].
pub(crate) const LIMIT: u64 = 20;
/// The window's length, in seconds, from the first failure in it.
pub(crate) const WINDOW: u64 = 60;
const BUCKETS: usize = 4096;
const PROBES: usize = 4;
const SINCE_MASK: u64 = (1 << 28) - 1;
const COUNT_MASK: u64 = (1 << 12) - 1;

/// The shared table of failures.
pub(crate) struct Failures {
    words: &'static [AtomicU64],
    key: std::collections::hash_map::RandomState,
}

impl std::fmt::Debug for Failures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Failures").field("buckets", &self.words.len()).finish()
    }
}

/// One word, unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    tag: u64,
    since: u64,
    count: u64,
}

impl Entry {
    fn unpack(word: u64) -> Entry {
        Entry { tag: word >> 40, since: (word >> 12) & SINCE_MASK, count: word & COUNT_MASK }
    }

    fn pack(self) -> u64 {
        (self.tag << 40) | ((self.since & SINCE_MASK) << 12) | self.count.min(COUNT_MASK)
    }

    /// Seconds since the window began, as of `now` (both modulo 2^28).
    fn age(self, now: u64) -> u64 {
        now.wrapping_sub(self.since) & SINCE_MASK
    }

    fn live(self, now: u64) -> bool {
        self.tag != 0 && self.age(now) < WINDOW
    }
}

impl Failures {
    /// An empty table, shared with every process forked from now on.
    pub(crate) fn new() -> std::io::Result<Failures> {
        let words = spidey_sys::shared::shared_counters(BUCKETS)?;
        Ok(Failures { words, key: Default::default() })
    }

    /// The monotonic clock's second: the same clock in every process.
    pub(crate) fn now() -> u64 {
        rustix::time::clock_gettime(rustix::time::ClockId::Monotonic).tv_sec as u64
    }

    /// The first bucket and the tag (never 0) of `peer`'s address.
    fn place(&self, peer: IpAddr) -> (usize, u64) {
        let key: u128 = match peer.to_canonical() {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => (u128::from(v6) >> 64 << 64) | (1 << 32), // its /64, apart from any IPv4
        };
        let hash = self.key.hash_one(key);
        ((hash as usize) % BUCKETS, ((hash >> 40) & 0xff_ffff).max(1))
    }

    /// The bucket holding `tag` among `first`'s probes, if any.
    fn find(&self, first: usize, tag: u64) -> Option<usize> {
        (0..PROBES).map(|i| (first + i) % BUCKETS).find(|&b| Entry::unpack(self.words[b].load(Relaxed)).tag == tag)
    }

    /// Whether `peer` is over the limit at `now`: the seconds left in its window if so.
    pub(crate) fn blocked(&self, peer: IpAddr, now: u64) -> Option<u64> {
        let (first, tag) = self.place(peer);
        let entry = Entry::unpack(self.words[self.find(first, tag)?].load(Relaxed));
        (entry.live(now) && entry.count >= LIMIT).then(|| WINDOW - entry.age(now))
    }

    /// Counts one failed guess from `peer` at `now`.
    pub(crate) fn record(&self, peer: IpAddr, now: u64) {
        let (first, tag) = self.place(peer);
        let bucket = self.find(first, tag).unwrap_or_else(|| {
            let probes = (0..PROBES).map(|i| (first + i) % BUCKETS);
            let mut free = probes.clone().filter(|&b| !Entry::unpack(self.words[b].load(Relaxed)).live(now));
            free.next().unwrap_or(first)
        });
        let word = &self.words[bucket];
        let mut current = word.load(Relaxed);
        loop {
            let old = Entry::unpack(current);
            let next = if old.tag == tag && old.live(now) {
                Entry { count: old.count + 1, ..old }
            } else {
                Entry { tag, since: now, count: 1 }
            };
            match word.compare_exchange_weak(current, next.pack(), Relaxed, Relaxed) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn limit_table() {
        let f = Failures::new().unwrap();
        let t = 1000;
        for _ in 0..LIMIT - 1 {
            f.record(ip("192.0.2.1"), t);
        }
        assert_eq!(f.blocked(ip("192.0.2.1"), t), None, "one guess short of the limit");
        f.record(ip("192.0.2.1"), t + 10);
        let cases = [
            ("192.0.2.1", t + 10, Some(WINDOW - 10)), // at the limit: the rest of the window
            ("::ffff:192.0.2.1", t + 10, Some(WINDOW - 10)), // the same address, mapped
            ("192.0.2.2", t + 10, None),              // another address
            ("192.0.2.1", t + WINDOW - 1, Some(1)),   // the last second
            ("192.0.2.1", t + WINDOW, None),          // the window is over
        ];
        for (addr, now, want) in cases {
            assert_eq!(f.blocked(ip(addr), now), want, "{addr} at {now}");
        }
        // IPv6: one /64 counts as one address.
        for i in 0..LIMIT {
            f.record(ip(&format!("2001:db8:1:2::{i:x}")), t);
        }
        assert_eq!(f.blocked(ip("2001:db8:1:2:ffff::1"), t), Some(WINDOW));
        assert_eq!(f.blocked(ip("2001:db8:1:3::1"), t), None);
        // A failure after the window starts a new one.
        f.record(ip("192.0.2.1"), t + WINDOW + 5);
        assert_eq!(f.blocked(ip("192.0.2.1"), t + WINDOW + 5), None);
    }

    /// A flood of addresses never grows the table, and an address that was limited still is
    /// unless the flood took its bucket (then it is forgotten, never blamed on another).
    #[test]
    fn table_is_bounded() {
        let f = Failures::new().unwrap();
        let limited = ip("198.51.100.7");
        for _ in 0..LIMIT {
            f.record(limited, 7);
        }
        assert!(f.blocked(limited, 7).is_some());
        let flood = || (1..=(4 * BUCKETS as u32)).map(|i| IpAddr::V4(i.into()));
        for addr in flood() {
            f.record(addr, 7);
        }
        assert_eq!(f.words.len(), BUCKETS);
        let blamed = flood().filter(|&addr| f.blocked(addr, 7).is_some()).count();
        assert_eq!(blamed, 0, "one failure each is under the limit, whoever held the bucket before");
    }
}
