//! `--basic-auth`'s failed-guess limits, counted per guesser as nginx's `limit_req` counts
//! per key and fail2ban per user and address: at most [`LIMIT`] wrong passwords for one
//! user name from one client address, and at most [`ADDRESS_LIMIT`] from one address for
//! all names together, within [`WINDOW`]. Past either, the address (for that name, or for
//! every name) is answered 429 with `Retry-After` until the window ends, without hashing
//! anything. A guess takes its place in both counts *before* its hash is checked
//! ([`Failures::reserve`]) and gives it back only if the password was right
//! ([`Failures::give_back`]), so guesses that arrive together are counted together: no more
//! than the limit are ever hashed, however many connections or processes they come on.
//! Guessing one user's password does not lock the other users out; spraying many names
//! from one address is bounded by the address's own count.
//!
//! The counts live in one fixed table of [`BUCKETS`] atomic words (32 KiB), mapped shared
//! before any fork (`spidey_sys::shared`), so `fork`'s per-connection processes and
//! `prefork`'s workers count together, as the threads of the other modes do. An address
//! is an IPv4 address or an IPv6 /64 (one host's usual share); a key (an address, or an
//! address and a user name) is hashed with a key random per server start into a bucket
//! and a 24-bit tag. A word is `tag << 40 | since << 12 | count`: `since`, the monotonic
//! second the window began (28 bits, so windows compare modulo 8.5 years), and the guesses
//! in it. A key looks at [`PROBES`] neighbouring buckets: its own tag, else an empty or
//! expired one, else it takes the first (so a flood of keys makes the table forget, never
//! grow; the memory is bounded, not the keys). Each update is one compare-and-swap of one
//! word, across processes alike.

use std::hash::BuildHasher;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Wrong passwords allowed for one user name from one address within [`WINDOW`].
pub(crate) const LIMIT: u64 = 20;
/// Wrong passwords allowed from one address within [`WINDOW`], for all names together.
pub(crate) const ADDRESS_LIMIT: u64 = 100;
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

/// One count's place: its bucket and tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    bucket: usize,
    tag: u64,
}

/// A guess's places in the user's and the address's counts, taken before its hash is
/// checked. Dropped, the guess stays counted (a wrong password); [`Failures::give_back`]
/// returns it (a right one).
#[must_use]
#[derive(Debug)]
pub(crate) struct Reservation {
    places: [Place; 2],
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

    /// The first bucket and the tag (never 0) of the count for `peer`'s address, or for
    /// `user` guessed from it.
    fn place(&self, peer: IpAddr, user: Option<&str>) -> (usize, u64) {
        let address: u128 = match peer.to_canonical() {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => (u128::from(v6) >> 64 << 64) | (1 << 32), // its /64, apart from any IPv4
        };
        let hash = self.key.hash_one((address, user));
        ((hash as usize) % BUCKETS, ((hash >> 40) & 0xff_ffff).max(1))
    }

    /// Takes one guess in the count for (`peer`, `user`) at `now`, unless that count has
    /// reached `limit` in its window: then the seconds left in the window.
    ///
    /// The key's bucket is the first of its probes, in order, that holds its tag or holds
    /// nothing live, found in one pass and taken with one compare-and-swap of that word; a
    /// failed swap looks again from the first probe. Guesses that arrive together therefore
    /// choose the same bucket: two passes (the tag anywhere first, then a free bucket) let
    /// one guess claim a second bucket while another claimed the first, splitting the count
    /// (21 of 80 simultaneous guesses got through, seen under load). A count can still split
    /// if a neighbouring key's window ends between two guessers' passes.
    fn take(&self, peer: IpAddr, user: Option<&str>, limit: u64, now: u64) -> Result<Place, u64> {
        let (first, tag) = self.place(peer, user);
        loop {
            let probes = (0..PROBES).map(|i| (first + i) % BUCKETS);
            let (bucket, current) = probes
                .map(|b| (b, self.words[b].load(Relaxed)))
                .find(|&(_, w)| {
                    let e = Entry::unpack(w);
                    e.tag == tag || !e.live(now)
                })
                .unwrap_or_else(|| (first, self.words[first].load(Relaxed)));
            let old = Entry::unpack(current);
            let next = if old.tag == tag && old.live(now) {
                if old.count >= limit {
                    return Err(WINDOW - old.age(now));
                }
                Entry { count: old.count + 1, ..old }
            } else {
                Entry { tag, since: now, count: 1 }
            };
            if self.words[bucket].compare_exchange(current, next.pack(), Relaxed, Relaxed).is_ok() {
                return Ok(Place { bucket, tag });
            }
        }
    }

    /// Takes a guess at `user`'s password from `peer` at `now` in both counts, before it
    /// is checked; if either is full, the seconds until it empties, and nothing is taken.
    pub(crate) fn reserve(&self, peer: IpAddr, user: &str, now: u64) -> Result<Reservation, u64> {
        let by_user = self.take(peer, Some(user), LIMIT, now)?;
        match self.take(peer, None, ADDRESS_LIMIT, now) {
            Ok(by_address) => Ok(Reservation { places: [by_user, by_address] }),
            Err(wait) => {
                self.untake(by_user);
                Err(wait)
            }
        }
    }

    /// Returns a guess whose password was right: it is not a failure.
    pub(crate) fn give_back(&self, reservation: Reservation) {
        for place in reservation.places {
            self.untake(place);
        }
    }

    /// One guess less in the count at `place`, if that count is still there (the bucket
    /// may have been taken by another key since; then there is nothing to return).
    fn untake(&self, place: Place) {
        let word = &self.words[place.bucket];
        let mut current = word.load(Relaxed);
        loop {
            let old = Entry::unpack(current);
            if old.tag != place.tag || old.count == 0 {
                return;
            }
            let next = Entry { count: old.count - 1, ..old };
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

    /// `n` wrong guesses at `user` from `addr` at `now` (each reserved and kept).
    fn fail(f: &Failures, addr: &str, user: &str, n: u64, now: u64) {
        for i in 0..n {
            let _kept =
                f.reserve(ip(addr), user, now).unwrap_or_else(|w| panic!("guess {i} at {user} from {addr}: wait {w}"));
        }
    }

    #[test]
    fn limit_table() {
        let f = Failures::new().unwrap();
        let t = 1000;
        fail(&f, "192.0.2.1", "ann", LIMIT - 1, t);
        fail(&f, "192.0.2.1", "ann", 1, t + 10);
        // (address, user, now) -> Err(seconds to wait) or Ok (a guess may be hashed)
        let cases: [(&str, &str, u64, Result<(), u64>); 7] = [
            ("192.0.2.1", "ann", t + 10, Err(WINDOW - 10)), // at the limit: the rest of the window
            ("::ffff:192.0.2.1", "ann", t + 10, Err(WINDOW - 10)), // the same address, mapped
            ("192.0.2.1", "ann", t + WINDOW - 1, Err(1)),   // the last second
            ("192.0.2.1", "bob", t + 10, Ok(())),           // another user, same address
            ("192.0.2.2", "ann", t + 10, Ok(())),           // the same user, another address
            ("192.0.2.1", "Ann", t + 10, Ok(())),           // names are compared exactly
            ("192.0.2.1", "ann", t + WINDOW, Ok(())),       // the window is over
        ];
        for (addr, user, now, want) in cases {
            assert_eq!(f.reserve(ip(addr), user, now).map(drop), want, "{user} from {addr} at {now}");
        }
        // IPv6: one /64 counts as one address.
        for i in 0..LIMIT {
            fail(&f, &format!("2001:db8:1:2::{i:x}"), "ann", 1, t);
        }
        assert_eq!(f.reserve(ip("2001:db8:1:2:ffff::1"), "ann", t).map(drop), Err(WINDOW));
        assert!(f.reserve(ip("2001:db8:1:3::1"), "ann", t).is_ok());
    }

    /// Spraying names from one address: each name under its own limit, the address's
    /// count stops the spray at ADDRESS_LIMIT, for every name, the unused ones included.
    #[test]
    fn the_address_count_bounds_a_spray_of_names() {
        let f = Failures::new().unwrap();
        let names: Vec<String> = (0..ADDRESS_LIMIT / LIMIT).map(|i| format!("user{i}")).collect();
        for name in &names {
            fail(&f, "198.51.100.1", name, LIMIT, 50);
        }
        assert_eq!(f.reserve(ip("198.51.100.1"), "somebody-else", 50).map(drop), Err(WINDOW));
        assert!(f.reserve(ip("198.51.100.2"), "somebody-else", 50).is_ok(), "another address is not affected");
    }

    /// A right password gives its place back, in both counts; a reservation refused by the
    /// address's count leaves the user's count as it was.
    #[test]
    fn right_passwords_are_not_counted() {
        let f = Failures::new().unwrap();
        for _ in 0..3 * LIMIT {
            let r = f.reserve(ip("203.0.113.9"), "ann", 7).expect("right passwords never fill a count");
            f.give_back(r);
        }
        fail(&f, "203.0.113.9", "ann", LIMIT, 7);
        assert!(f.reserve(ip("203.0.113.9"), "ann", 7).is_err());
    }

    /// Guesses taken together, from many threads (as `thread`'s connections, or `fork`'s
    /// processes through the shared words, take them): exactly LIMIT get through, for each
    /// of 200 fresh addresses (the race between two first guesses is at a key's start).
    #[test]
    fn simultaneous_guesses_are_counted_together() {
        let f = std::sync::Arc::new(Failures::new().unwrap());
        for round in 0..200 {
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let (f, start) = (std::sync::Arc::clone(&f), std::sync::Arc::clone(&start));
                    std::thread::spawn(move || {
                        let peer = IpAddr::V4((0xc633_6400 + round).into()); // 198.51.100.0 on
                        start.wait();
                        (0..10).filter(|_| f.reserve(peer, "ann", 3).is_ok()).count()
                    })
                })
                .collect();
            let passed: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
            assert_eq!(passed as u64, LIMIT, "round {round}: 80 simultaneous guesses");
        }
    }

    /// A flood of addresses never grows the table, and an address that was limited still is
    /// unless the flood took its bucket (then it is forgotten, never blamed on another).
    #[test]
    fn table_is_bounded() {
        let f = Failures::new().unwrap();
        let limited = ip("198.51.100.7");
        fail(&f, "198.51.100.7", "ann", LIMIT, 7);
        assert!(f.reserve(limited, "ann", 7).is_err());
        let flood = || (1..=(4 * BUCKETS as u32)).map(|i| IpAddr::V4(i.into()));
        for addr in flood() {
            let _ = f.reserve(addr, "ann", 7);
        }
        assert_eq!(f.words.len(), BUCKETS);
        let blamed = flood().filter(|&addr| f.reserve(addr, "ann", 7).is_err()).count();
        assert_eq!(blamed, 0, "two guesses each are under the limit, whoever held the bucket before");
    }
}
