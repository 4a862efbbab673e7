//! Waiting with poll(2): the one wait with a deadline ([`poll_until`]), a socket or
//! shutdown ([`wait_readable`]), and a peek for unread client input.

use super::Shutdown;
use rustix::event::{poll, PollFd, PollFlags};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

/// Which of the fds given to [`wait_readable`] woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    Ready,
    Shutdown,
    Timeout,
}

/// Whether client bytes wait unread in `stream`'s receive queue (a non-blocking peek).
pub(crate) fn has_unread_input(stream: impl AsFd) -> bool {
    let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
    matches!(rustix::net::recv(stream, &mut [0u8; 1], flags), Ok((n, _)) if n > 0)
}

/// Waits until `fd` is readable, shutdown is asked, or `deadline` passes.
pub fn wait_readable(fd: BorrowedFd<'_>, shutdown: &Shutdown, deadline: Option<Instant>) -> io::Result<Wake> {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN), PollFd::from_borrowed_fd(shutdown.fd(), PollFlags::IN)];
    if !poll_until(&mut fds, deadline)? {
        return Ok(Wake::Timeout);
    }
    if !fds[0].revents().is_empty() {
        return Ok(Wake::Ready);
    }
    shutdown.note();
    Ok(Wake::Shutdown)
}

/// The one poll(2) wait: until one of `fds` is ready for the events it asks, or
/// `deadline` passes (`None`: no deadline). An interrupted wait (EINTR) is retried with
/// the time left. Returns whether one is ready (their `revents` say which); false once
/// the deadline has passed, without polling if it already had, so a caller looping until
/// a deadline stops there however busy its descriptors are.
pub(crate) fn poll_until(fds: &mut [PollFd<'_>], deadline: Option<Instant>) -> io::Result<bool> {
    loop {
        let timeout = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(to_timespec(left)),
                _ => return Ok(false),
            },
            None => None,
        };
        match poll(fds, timeout.as_ref()) {
            Ok(n) => return Ok(n > 0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A poll(2) timeout from a `Duration`.
fn to_timespec(d: Duration) -> rustix::time::Timespec {
    rustix::time::Timespec { tv_sec: d.as_secs() as i64, tv_nsec: i64::from(d.subsec_nanos()) }
}

#[cfg(test)]
mod poll_tests {
    use super::poll_until;
    use rustix::event::{PollFd, PollFlags};
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    /// (input waiting, deadline from now, ready expected, at least this long waited, at
    /// most this long): a passed deadline never polls, so even a ready descriptor is not
    /// reported; a ready one is reported at once; a quiet one waits out its deadline.
    #[test]
    fn poll_until_reports_readiness_within_its_deadline() {
        let ms = Duration::from_millis;
        let cases: [(bool, Option<i64>, bool, Duration, Duration); 5] = [
            (true, Some(-1), false, ms(0), ms(50)),
            (false, Some(-1), false, ms(0), ms(50)),
            (true, Some(2000), true, ms(0), ms(1000)),
            (true, None, true, ms(0), ms(1000)),
            (false, Some(100), false, ms(100), ms(2000)),
        ];
        for (input, deadline, ready, least, most) in cases {
            let (mut client, server) = UnixStream::pair().unwrap();
            if input {
                client.write_all(b"x").unwrap();
            }
            let start = Instant::now();
            let deadline = deadline.map(|d| match u64::try_from(d) {
                Ok(d) => start + ms(d),
                Err(_) => start - ms(1),
            });
            let mut fds = [PollFd::new(&server, PollFlags::IN)];
            let got = poll_until(&mut fds, deadline).unwrap();
            let took = start.elapsed();
            let case = format!("input {input}, deadline {deadline:?}");
            assert_eq!(got, ready, "{case}");
            assert_eq!(!fds[0].revents().is_empty(), ready, "{case}: revents");
            assert!(took >= least && took <= most, "{case}: took {took:?}");
        }
    }
}
