//! The system calls Spidey needs that no safe crate wraps. This is the only crate in the
//! workspace that may contain `unsafe`; every block cites the man page that makes it sound.
//! Everything else (sendfile, openat2, poll, sockets, signals, waitpid) goes through the
//! safe wrappers of rustix, socket2 and signal-hook. [`handler`] loads in-process handler
//! libraries (dlopen through libloading) and calls their C entry point. [`process`] ties a
//! spawned child's life to its parent's (prctl PR_SET_PDEATHSIG, set between fork and exec).
//! [`shared`] maps counters that forked workers share with their parent,
//! [`activation`] takes the listening sockets a service manager passed (LISTEN_FDS), and
//! [`tcp`] sets the one TCP option the safe crates lack, [`thread`] starts a detached thread
//! without std's per-thread extras, [`tun`] opens a TUN device,
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
pub mod thread;
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

/// How many threads this process has: the `num_threads` field of `/proc/self/stat`
/// (proc_pid_stat(5)), read into a stack buffer. Three system calls and no allocation, since
/// `fork` asks before every fork (listing `/proc/self/task` took five, and three
/// allocations).
pub fn thread_count() -> io::Result<usize> {
    use std::io::Read;
    let unreadable = |why: &dyn std::fmt::Display| {
        io::Error::new(io::ErrorKind::Unsupported, format!("cannot count this process's threads in /proc: {why}"))
    };
    let mut stat = [0u8; 1024];
    let mut file = std::fs::File::open("/proc/self/stat").map_err(|e| unreadable(&e))?;
    let len = file.read(&mut stat).map_err(|e| unreadable(&e))?;
    threads_in_stat(&stat[..len]).ok_or_else(|| unreadable(&"/proc/self/stat has no thread count"))
}

/// The `num_threads` field (the 20th) of a proc_pid_stat(5) line. The command name (the
/// 2nd, in parentheses) may hold spaces and parentheses itself, so the fields are counted
/// from the last `)`.
fn threads_in_stat(stat: &[u8]) -> Option<usize> {
    let after_name = &stat[stat.iter().rposition(|&b| b == b')')? + 1..];
    let field = after_name.split(u8::is_ascii_whitespace).filter(|f| !f.is_empty()).nth(20 - 3)?;
    std::str::from_utf8(field).ok()?.parse().ok()
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

    /// Eight parked threads count, and the count agrees with the listing of
    /// /proc/self/task taken at the same moment (within what this binary's other tests may
    /// start or end meanwhile).
    #[test]
    fn thread_count_counts_running_threads() {
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let parked = std::sync::Arc::new(std::sync::Mutex::new(parked));
        let others: Vec<_> = (0..8)
            .map(|_| {
                let parked = parked.clone();
                std::thread::spawn(move || {
                    let _ = parked.lock().map(|p| p.recv());
                })
            })
            .collect();
        let counted = thread_count().unwrap();
        let listed = std::fs::read_dir("/proc/self/task").unwrap().count();
        drop(stop);
        others.into_iter().for_each(|t| t.join().unwrap());
        assert!(counted >= 9, "{counted} threads counted with 9 running");
        assert!(counted.abs_diff(listed) <= 4, "{counted} threads counted, {listed} listed");
    }

    /// (stat line, threads): hostile command names included.
    #[test]
    fn threads_in_stat_reads_the_twentieth_field() {
        let rest = "S 1 2 3 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 7 0 12345 1000 200";
        for (name, threads) in [("spidey", Some(7)), ("a b) c (d", Some(7)), (")", Some(7)), ("", Some(7))] {
            let line = format!("4242 ({name}) {rest}\n");
            assert_eq!(threads_in_stat(line.as_bytes()), threads, "{line}");
        }
        for broken in ["", "4242 (spidey", "4242 (spidey) S 1 2", "4242 (x) S 1 2 3 0 -1 4 1 0 0 0 1 2 0 0 20 0 many 0"]
        {
            assert_eq!(threads_in_stat(broken.as_bytes()), None, "{broken}");
        }
    }
}
