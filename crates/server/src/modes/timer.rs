//! Deadlines for the event-driven loops, at O(1) per event.
//!
//! Each kind of timeout has one fixed duration (head, idle, send: [`Fixed`]), so deadlines
//! of one kind are armed in increasing order: a FIFO per kind is already sorted. The other
//! kinds ([`At`]: a `--delay`, a script's deadline, `hybrid`'s pool's) come with their own time, nearly
//! always in order too. Arming appends to its
//! back; expiry pops from the fronts. Nothing is ever removed from the middle: re-arming or
//! disarming a connection just gives it a new stamp, and an entry whose stamp no longer
//! matches its connection's is skipped when it reaches the front (lazy deletion).

use crate::server::Timeouts;
use std::collections::VecDeque;
use std::time::Instant;

/// The kinds of deadline a connection can be under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// From the first byte of a request head to its end.
    Head = 0,
    /// Between requests on a kept-alive connection.
    Idle = 1,
    /// For a blocked write to make progress.
    Send = 2,
    /// The end of an answer's `--delay`.
    Delay = 3,
    /// A CGI script's deadline, or its request body's.
    Script = 4,
    /// (`hybrid`) The worker pool's deadline for an offloaded request's answer: 504.
    Offload = 5,
}

/// The kinds armed for their fixed duration from now ([`Deadlines::arm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fixed {
    Head,
    Idle,
    Send,
}

/// The kinds armed at a time of their own ([`Deadlines::arm_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    Delay,
    Script,
    Offload,
}

impl From<Fixed> for Kind {
    fn from(kind: Fixed) -> Kind {
        match kind {
            Fixed::Head => Kind::Head,
            Fixed::Idle => Kind::Idle,
            Fixed::Send => Kind::Send,
        }
    }
}

impl From<At> for Kind {
    fn from(kind: At) -> Kind {
        match kind {
            At::Delay => Kind::Delay,
            At::Script => Kind::Script,
            At::Offload => Kind::Offload,
        }
    }
}

const KINDS: [Kind; 6] = [Kind::Head, Kind::Idle, Kind::Send, Kind::Delay, Kind::Script, Kind::Offload];

/// One armed deadline: connection `slot`, valid while that connection's stamp is `stamp`.
#[derive(Debug, Clone, Copy)]
struct Entry {
    at: Instant,
    slot: usize,
    stamp: u64,
}

/// The per-loop deadline lists.
#[derive(Debug)]
pub(crate) struct Deadlines {
    /// INVARIANT: each list is sorted by `at`, so only fronts are ever due.
    lists: [VecDeque<Entry>; KINDS.len()],
    timeouts: Timeouts,
    next_stamp: u64,
}

impl Deadlines {
    pub(crate) fn new(t: &Timeouts) -> Deadlines {
        Deadlines { lists: Default::default(), timeouts: *t, next_stamp: 1 }
    }

    /// Arms a `kind` deadline for its duration from `now` for `slot`; returns the stamp
    /// the connection must keep for it to fire (any other stamp disarms it).
    pub(crate) fn arm(&mut self, kind: Fixed, now: Instant, slot: usize) -> u64 {
        let duration = match kind {
            Fixed::Head => self.timeouts.head,
            Fixed::Idle => self.timeouts.idle,
            Fixed::Send => self.timeouts.send,
        };
        self.push(kind.into(), now + duration, slot)
    }

    /// Arms a `kind` deadline at `at` for `slot`; returns its stamp, as [`Deadlines::arm`].
    pub(crate) fn arm_at(&mut self, kind: At, at: Instant, slot: usize) -> u64 {
        self.push(kind.into(), at, slot)
    }

    /// Each kind's deadlines arrive in (nearly always) increasing order, so the entry is
    /// appended; the rare earlier one walks back to its place.
    fn push(&mut self, kind: Kind, at: Instant, slot: usize) -> u64 {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        let list = &mut self.lists[kind as usize];
        let mut i = list.len();
        while i > 0 && list[i - 1].at > at {
            i -= 1;
        }
        list.insert(i, Entry { at, slot, stamp });
        stamp
    }

    /// The earliest deadline still queued (possibly stale: waking early is harmless).
    pub(crate) fn next(&self) -> Option<Instant> {
        self.lists.iter().filter_map(|l| l.front().map(|e| e.at)).min()
    }

    /// Pops every entry due by `now` and calls `fire(kind, slot, stamp)` for each; the
    /// caller checks the stamp against the connection's.
    pub(crate) fn expire(&mut self, now: Instant, mut fire: impl FnMut(Kind, usize, u64)) {
        for kind in KINDS {
            let list = &mut self.lists[kind as usize];
            while let Some(e) = list.front().copied() {
                if e.at > now {
                    break;
                }
                list.pop_front();
                fire(kind, e.slot, e.stamp);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn deadlines_fire_in_order_and_only_when_due() {
        let t = Timeouts { head: Duration::from_secs(1), idle: Duration::from_secs(2), send: Duration::from_secs(3) };
        let mut d = Deadlines::new(&t);
        let t0 = Instant::now();
        let a = d.arm(Fixed::Idle, t0, 7);
        let b = d.arm(Fixed::Head, t0, 8);
        assert_eq!(d.next(), Some(t0 + Duration::from_secs(1)));
        let cases = [(0, vec![]), (1, vec![(Kind::Head, 8, b)]), (2, vec![(Kind::Idle, 7, a)]), (9, vec![])];
        for (secs, want) in cases {
            let mut got = Vec::new();
            d.expire(t0 + Duration::from_secs(secs), |k, s, st| got.push((k, s, st)));
            assert_eq!(got, want, "at +{secs}s");
        }
        assert_eq!(d.next(), None);
    }
}
