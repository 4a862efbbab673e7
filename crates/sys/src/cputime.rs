//! The CPU time of another process, to the nanosecond: its CPU-time clock
//! (clock_getcpuclockid(3), read with clock_gettime(2)). The clock counts every thread the
//! process has had, those that have exited included, but not the children it has reaped.

use std::io;
use std::time::Duration;

/// The CPU time (user and system, all threads, exited ones included) process `pid` has used.
pub fn process_cpu_time(pid: u32) -> io::Result<Duration> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: clock_getcpuclockid(3) writes one clockid_t through its second argument, which
    // points at a live local of that type; it returns an error number (ESRCH: no such
    // process) instead of setting errno, and touches no other memory.
    let err = unsafe { libc::clock_getcpuclockid(pid, &mut clock) };
    if err != 0 {
        return Err(io::Error::from_raw_os_error(err));
    }
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(2) writes one struct timespec through its second argument, which
    // points at a live local of that type; an invalid clock (the process has gone) yields
    // EINVAL in errno, reported below.
    if unsafe { libc::clock_gettime(clock, &mut ts) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A busy child's clock advances by about the CPU it burns (far finer than a tick); a
    /// process that is gone has no clock.
    #[test]
    fn a_busy_process_clock_advances_and_a_gone_one_errs() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; sleep 5"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let first = process_cpu_time(pid).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let later = process_cpu_time(pid).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert!(later > first, "{first:?} then {later:?}");
        assert!(later.subsec_nanos() % 10_000_000 != 0 || later.as_secs() > 0, "nanoseconds, not ticks: {later:?}");
        assert!(process_cpu_time(pid).is_err(), "a reaped process has no clock");
        assert!(process_cpu_time(std::process::id()).unwrap() > Duration::ZERO);
    }
}
