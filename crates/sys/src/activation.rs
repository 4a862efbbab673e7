//! Socket activation: the listening sockets a service manager (systemd, or anything that
//! speaks its protocol) opened for this process and passed to it, as sd_listen_fds(3)
//! describes: descriptors 3, 4, ... (`SD_LISTEN_FDS_START`), `LISTEN_FDS` of them, meant for
//! the process whose pid is `LISTEN_PID`.
//!
//! The variables are removed from the environment whatever they say, so no child (a CGI
//! script) inherits them and takes the sockets for its own; the descriptors are made
//! close-on-exec, so no child inherits the sockets either. Variables meant for another
//! process (a `LISTEN_PID` that is not ours, or none: the parent that set them did not
//! exec us directly) are dropped and the descriptors left alone, as sd_listen_fds(3) does.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// The first passed descriptor (`SD_LISTEN_FDS_START`).
pub const LISTEN_FDS_START: RawFd = 3;
/// More passed descriptors than this is taken for a malformed `LISTEN_FDS`.
const MAX_FDS: u32 = 1024;

/// Set once the descriptors have been handed out: they have one owner each.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Why the passed descriptors cannot be used.
#[derive(Debug)]
pub enum ActivationError {
    /// `LISTEN_FDS` or `LISTEN_PID` is not a number.
    Malformed(&'static str, String),
    /// A descriptor `LISTEN_FDS` promises is not open, or is not a socket.
    NotASocket(RawFd, io::Error),
}

impl std::fmt::Display for ActivationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ActivationError::Malformed(var, value) => write!(f, "{var}={value:?} is not a valid count or pid"),
            ActivationError::NotASocket(fd, e) => {
                write!(f, "descriptor {fd} passed in LISTEN_FDS is not a socket: {e}")
            }
        }
    }
}

impl std::error::Error for ActivationError {}

/// Takes the descriptors passed to this process, in order (empty when none were, or they
/// were meant for another process), and removes `LISTEN_FDS`, `LISTEN_PID` and
/// `LISTEN_FDNAMES` from the environment. Only the first call can return descriptors.
///
/// Call it at startup, before starting threads (it changes the environment) and before
/// opening files: the descriptors are taken on the word of the service manager.
pub fn take_listen_fds() -> Result<Vec<OwnedFd>, ActivationError> {
    let fds = std::env::var("LISTEN_FDS").ok();
    let pid = std::env::var("LISTEN_PID").ok();
    for var in ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] {
        std::env::remove_var(var);
    }
    let (Some(fds), Some(pid)) = (fds, pid) else { return Ok(Vec::new()) };
    let pid: u32 = pid.trim().parse().map_err(|_| ActivationError::Malformed("LISTEN_PID", pid.clone()))?;
    if pid != std::process::id() {
        return Ok(Vec::new());
    }
    let n: u32 =
        fds.trim().parse().ok().filter(|&n| n <= MAX_FDS).ok_or(ActivationError::Malformed("LISTEN_FDS", fds))?;
    if n == 0 || TAKEN.swap(true, Ordering::SeqCst) {
        return Ok(Vec::new());
    }
    let mut taken = Vec::with_capacity(n as usize);
    for fd in LISTEN_FDS_START..LISTEN_FDS_START + n as RawFd {
        check_socket(fd).map_err(|e| ActivationError::NotASocket(fd, e))?;
        // SAFETY: fcntl(2) F_SETFD on a plain descriptor number only sets its flags; an fd
        // that is not open yields EBADF (checked above anyway). FD_CLOEXEC keeps the socket
        // from every child this process execs.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == -1 {
            return Err(ActivationError::NotASocket(fd, io::Error::last_os_error()));
        }
        // SAFETY: `OwnedFd::from_raw_fd` needs an open descriptor that nothing else owns.
        // It is open and a socket (`check_socket`). sd_listen_fds(3): descriptors
        // SD_LISTEN_FDS_START.. SD_LISTEN_FDS_START+LISTEN_FDS-1 are passed to the process
        // LISTEN_PID names, which is this one (checked above), so they were open when it
        // started and nothing in it opened them; `TAKEN` makes this loop run once per
        // process, and the variables are gone, so no second owner can be made here.
        taken.push(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    Ok(taken)
}

/// Whether `fd` is open and a socket (fstat(2), S_IFSOCK).
fn check_socket(fd: RawFd) -> io::Result<()> {
    // SAFETY: fstat(2) writes a `struct stat` into the zeroed buffer we own; a bad fd is
    // EBADF, reported. A zeroed `libc::stat` is a valid value (plain integers).
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `st` is a valid, writable `struct stat`.
    if unsafe { libc::fstat(fd, &mut st) } == -1 {
        return Err(io::Error::last_os_error());
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a socket"));
    }
    Ok(())
}
