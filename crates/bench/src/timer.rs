//! The open loop's clock: a timerfd in the worker's mio poll, so a send is not at the mercy
//! of epoll's millisecond timeout (which rounds every wait up to the next millisecond and
//! adds the thread's timer slack).
//!
//! [`SlotTimer::arm`] sets the timerfd to an absolute CLOCK_MONOTONIC time [`SPIN`] before
//! the next slot (a timerfd's hrtimer has no slack); the worker, woken there, busy-polls its
//! sockets (epoll with a zero timeout) for the last microseconds and sends on the slot. The
//! spin covers the scheduler's wake-up latency, which on a virtual machine is tens of
//! microseconds. `Instant` is CLOCK_MONOTONIC on Linux; the timer maps one to the other
//! through a pair of readings taken together at creation (tens of nanoseconds apart).

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::time::{
    clock_gettime, timerfd_create, timerfd_settime, ClockId, Itimerspec, TimerfdClockId, TimerfdFlags,
    TimerfdTimerFlags, Timespec,
};
use std::io;
use std::time::{Duration, Instant};

/// How long before a slot the timer fires; the rest is spun (busy-polled).
pub(crate) const SPIN: Duration = Duration::from_micros(50);

/// The timer's token in the worker's poll (connections use their index).
pub(crate) const TIMER: Token = Token(usize::MAX - 1);

pub(crate) struct SlotTimer {
    fd: OwnedFd,
    /// The same moment as an `Instant` and as CLOCK_MONOTONIC since its epoch.
    base: Instant,
    base_mono: Duration,
    /// The time the timer is set for, if it is set and has not fired.
    armed: Option<Instant>,
}

impl SlotTimer {
    /// A disarmed timer, registered with `registry` under [`TIMER`].
    pub fn new(registry: &Registry) -> io::Result<SlotTimer> {
        let fd = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)?;
        registry.register(&mut SourceFd(&fd.as_raw_fd()), TIMER, Interest::READABLE)?;
        let base = Instant::now();
        let now = clock_gettime(ClockId::Monotonic);
        let base_mono = Duration::new(now.tv_sec as u64, now.tv_nsec as u32);
        Ok(SlotTimer { fd, base, base_mono, armed: None })
    }

    /// Sets the timer to fire at `at` (unless it is already set for exactly then).
    pub fn arm(&mut self, at: Instant) -> io::Result<()> {
        if self.armed == Some(at) {
            return Ok(());
        }
        // A zero it_value disarms a timerfd; any time in the past fires at once.
        let mono = (self.base_mono + at.saturating_duration_since(self.base)).max(Duration::from_nanos(1));
        let value = Timespec { tv_sec: mono.as_secs() as _, tv_nsec: mono.subsec_nanos() as _ };
        let spec = Itimerspec { it_interval: Timespec { tv_sec: 0, tv_nsec: 0 }, it_value: value };
        timerfd_settime(&self.fd, TimerfdTimerFlags::ABSTIME, &spec)?;
        self.armed = Some(at);
        Ok(())
    }

    /// The timer fired: consume its expiry count so the next arming wakes the poll again.
    pub fn fired(&mut self) {
        let mut count = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut count);
        self.armed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};

    /// The timer is armed to the microsecond, not rounded up to epoll's millisecond, and it
    /// is what wakes the poll. Counted from the timer itself (`timerfd_gettime`: what is
    /// left to run right after arming), which a busy machine can only make smaller, not
    /// from wake-up times, which it can make anything.
    #[test]
    fn fires_within_a_millisecond_of_its_time_not_rounded_up() {
        let mut poll = Poll::new().unwrap();
        let mut timer = SlotTimer::new(poll.registry()).unwrap();
        let mut events = Events::with_capacity(4);
        for _ in 0..5 {
            let at = Instant::now() + Duration::from_micros(300);
            timer.arm(at).unwrap();
            let left = rustix::time::timerfd_gettime(&timer.fd).unwrap().it_value;
            let left = Duration::new(left.tv_sec as u64, left.tv_nsec as u32);
            // 300 µs, give or take the µs between the two clocks' readings at `new`: not the
            // whole millisecond epoll's own timeout would round it up to.
            assert!(left < Duration::from_micros(900), "armed for {left:?} to wait 300 µs");
            poll.poll(&mut events, Some(Duration::from_secs(60))).unwrap();
            let woke = Instant::now();
            assert!(events.iter().any(|e| e.token() == TIMER), "the timer woke the poll");
            assert!(woke >= at, "fired {:?} early", at - woke);
            timer.fired();
        }
    }
}
