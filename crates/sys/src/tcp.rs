//! TCP_NOTSENT_LOWAT (tcp(7)), which neither rustix nor socket2 wraps: how much written
//! data a TCP socket may hold unsent before sends stop and it polls unwritable.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Sets TCP_NOTSENT_LOWAT (tcp(7)) on the TCP socket `fd`: the socket counts as writable,
/// and a send stops queueing, once more than `bytes` of what was written are still unsent.
/// Sockets accepted from a listener inherit it. Neither rustix nor socket2 wraps it.
pub fn set_notsent_lowat(fd: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    let value: libc::c_int = bytes.try_into().unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt(2) reads `optlen` bytes at `optval`; both describe `value`, a live
    // c_int on this stack frame for the whole call, and TCP_NOTSENT_LOWAT takes an int
    // (tcp(7)). `fd` is a borrowed, open descriptor; a wrong kind of socket is an error
    // (ENOTSOCK, EOPNOTSUPP), not undefined behaviour.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&raw const value).cast(),
            std::mem::size_of_val(&value) as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads TCP_NOTSENT_LOWAT (tcp(7)) of the TCP socket `fd`; see [`set_notsent_lowat`].
pub fn notsent_lowat(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of_val(&value) as libc::socklen_t;
    // SAFETY: getsockopt(2) writes at most `*optlen` bytes at `optval` and stores the
    // length it wrote in `*optlen`; both point at live locals of this frame, `value` an int
    // as TCP_NOTSENT_LOWAT takes (tcp(7)), `len` its size. A bad `fd` is an error, not UB.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(value).map_err(|_| io::Error::other(format!("TCP_NOTSENT_LOWAT is {value}")))
}
