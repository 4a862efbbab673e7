//! The system calls Spidey needs that no safe crate wraps. This is the only crate in the
//! workspace that may contain `unsafe`; every block cites the man page that makes it sound.
//! Everything else (sendfile, openat2, poll, sockets, signals, waitpid) goes through the
//! safe wrappers of rustix, socket2 and signal-hook. [`handler`] loads in-process handler
//! libraries (dlopen through libloading) and calls their C entry point. [`process`] ties a
//! spawned child's life to its parent's (prctl PR_SET_PDEATHSIG, set between fork and exec).
//! [`shared`] maps counters that forked workers share with their parent,
//! [`activation`] takes the listening sockets a service manager passed (LISTEN_FDS), and
//! [`tcp`] sets the one TCP option the safe crates lack, [`tun`] opens a TUN device,
//! [`cputime`] reads another process's CPU-time clock, and [`user`] looks up an account and
//! drops to it (`--user`). For tests only (`test-support`): [`alloc_count`], an allocator
//! that counts, and `seccomp`.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod activation;
#[cfg(feature = "test-support")]
pub mod alloc_count;
pub mod cputime;
pub mod process;
#[cfg(feature = "test-support")]
pub mod seccomp;
pub mod shared;
pub mod tcp;
pub mod tun;
pub mod uring;
pub mod user;

use std::io;

/// Which side of a [`fork`] we are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fork {
    Parent { child: i32 },
    Child,
}

/// fork(2), refused unless the calling process has exactly one thread.
///
/// The child gets a copy of the calling thread alone (fork(2) NOTES), so a lock held by any
/// other thread (malloc's, stdio's, a handler library's) would stay locked in it forever.
/// Spidey's forking parents (`fork`, `prefork`) are single-threaded by design, but code
/// loaded into the process (a `--handler` library's initialisers) may start threads, so the
/// contract is checked here rather than trusted: with more than one thread (or when
/// `/proc/self/task` cannot be read) this returns an error of kind
/// [`io::ErrorKind::Unsupported`] and does not fork. The check cannot go stale: with one
/// thread, the only thread that could start another is the one calling fork.
pub fn fork() -> io::Result<Fork> {
    let threads = thread_count()?;
    if threads != 1 {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("fork refused: this process has {threads} threads, and fork(2) is only sound with one"),
        ));
    }
    // SAFETY: fork(2) has no memory-safety preconditions of its own; its hazards (fork(2)
    // NOTES: "the child process is created with a single thread") concern multi-threaded
    // callers, and the check above makes this one single-threaded: only the calling thread
    // exists, so no other can appear before the call.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Fork::Child),
        child => Ok(Fork::Parent { child }),
    }
}

/// How many threads this process has (the entries of `/proc/self/task`, proc(5)).
pub fn thread_count() -> io::Result<usize> {
    let tasks = std::fs::read_dir("/proc/self/task").map_err(|e| {
        io::Error::new(io::ErrorKind::Unsupported, format!("cannot count this process's threads in /proc: {e}"))
    })?;
    Ok(tasks.filter(|t| t.is_ok()).count())
}

/// _exit(2): ends the calling process at once with `code`.
///
/// For forked children: unlike `exit(3)` it runs no atexit handlers and flushes no stdio
/// buffers copied from the parent, so a child can never replay or corrupt the parent's
/// pending output, and it never returns into the parent's code.
pub fn exit_immediately(code: i32) -> ! {
    // SAFETY: _exit(2) takes a plain integer, "does not return", and is listed as
    // async-signal-safe in signal-safety(7); it touches no memory of the caller.
    unsafe { libc::_exit(code) }
}

pub mod handler;

/// Sets FD_CLOEXEC on a raw fd number this process may have inherited without knowing it
/// (no owner in this process holds it, so no safe handle exists).
pub fn set_cloexec(fd: i32) -> io::Result<()> {
    // SAFETY: fcntl(2) F_GETFD/F_SETFD only read and set the descriptor flags of `fd`; an
    // fd that is not open yields EBADF, which is reported, not undefined behaviour.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test binary always has more than one thread (the harness's main thread and the test's
    /// own), plus the one started here: fork must refuse, without forking.
    #[test]
    fn fork_refuses_while_other_threads_run() {
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || parked.recv());
        assert!(thread_count().unwrap() >= 2);
        let refused = fork().expect_err("fork went ahead with other threads running");
        assert_eq!(refused.kind(), io::ErrorKind::Unsupported, "{refused}");
        drop(stop);
        let _ = other.join();
    }
}
