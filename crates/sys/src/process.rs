//! Child processes that do not outlive their parent, and descriptors handed to a child.
//!
//! A parent that unwinds can kill its children; one that is killed with SIGKILL cannot.
//! prctl(2) PR_SET_PDEATHSIG asks the kernel to send the child a signal when its parent
//! dies, so set between fork and execve it covers that case too. Two limits, from prctl(2):
//!
//! - "the 'parent' in this case is considered to be the thread that created this process":
//!   the signal is sent when the *spawning thread* exits, even if the rest of the process
//!   lives on. Spawn from a thread that lives as long as the child should (the main thread,
//!   say), never from a short-lived helper thread.
//! - The setting is cleared when the child executes a set-user-ID or set-group-ID binary,
//!   or one with file capabilities; such a child is not covered.
//!
//! It covers the direct child only: a program that forks children of its own must look
//! after them (nginx, for one, leaves its workers running when its master is SIGKILLed, but
//! stops them on SIGTERM).
//!
//! [`inherit_fd`] hands one descriptor to the child at a fixed number, open across exec.

use rustix::process::{getpid, getppid, kill_process, set_parent_process_death_signal, Signal};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the process `command` spawns receive `signal` when the thread that spawns it exits
/// (prctl(2) PR_SET_PDEATHSIG), so it ends with its parent even if the parent is SIGKILLed.
/// See the [module documentation](self) for which thread counts as the parent.
///
/// The parent's pid is taken now: spawn `command` from this process. If the parent has
/// already died when the child makes the prctl (the race prctl(2) leaves to the caller:
/// the death came between fork and prctl, so no signal will), the child notices that
/// getppid(2) no longer names it and kills itself with SIGKILL before exec.
pub fn die_with_parent(command: &mut Command, signal: Signal) -> &mut Command {
    let parent = getpid();
    let hook = move || -> io::Result<()> {
        set_parent_process_death_signal(Some(signal))?;
        if getppid() != Some(parent) {
            // kill(2): a signal a process sends itself, unblocked, is delivered before kill
            // returns, and SIGKILL cannot be blocked or caught, so this does not return Ok.
            kill_process(getpid(), Signal::KILL)?;
            return Err(rustix::io::Errno::SRCH.into());
        }
        Ok(())
    };
    // SAFETY: `CommandExt::pre_exec` (std docs) runs `hook` in the forked child before
    // execve(2), where only async-signal-safe code may run: no allocation, no locks. `hook`
    // captures two plain integers and only makes system calls through rustix (raw system
    // calls on Linux; thin libc wrappers under its `use-libc` backend): prctl(2)
    // PR_SET_PDEATHSIG (an integer argument; it sets a field of the calling process),
    // getppid(2), and on the race getpid(2) and kill(2), the last three listed as
    // async-signal-safe in signal-safety(7). Its errors are errno values; `io::Error` from
    // an errno does not allocate.
    unsafe { command.pre_exec(hook) }
}

/// Makes `fd` the descriptor `target` (at least 3) of the process `command` spawns, open
/// across execve(2) (not close-on-exec), whatever descriptor it is in the parent. CGI uses
/// it to run a script from the descriptor that was checked beneath ROOT: the child execs
/// `/proc/self/fd/3`, and an interpreter is given that path, so the kernel (for a `#!`
/// script) or the interpreter opens the very file that was checked, never a name that
/// could have been swapped since.
///
/// `fd` is moved into the hook and closed in the parent when `command` is dropped; std sets
/// up stdin, stdout and stderr before pre_exec hooks run, so `target` must not be 0, 1 or 2.
pub fn inherit_fd(command: &mut Command, fd: OwnedFd, target: RawFd) -> io::Result<&mut Command> {
    if target < 3 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "inherit_fd: target must be 3 or more"));
    }
    let hook = move || -> io::Result<()> {
        let source = fd.as_raw_fd();
        // SAFETY: dup2(2) and fcntl(2) F_SETFD take plain integers and only change the
        // calling process's descriptor table; both are async-signal-safe (signal-safety(7)),
        // as a pre_exec hook requires. dup2 onto `target` closes whatever the child had
        // there (the child's own copy, close-on-exec anyway) and the new descriptor does not
        // have FD_CLOEXEC (dup2(2)); when `source` already is `target`, dup2 would do
        // nothing, so its FD_CLOEXEC flag is cleared instead.
        let rc = unsafe {
            if source == target {
                libc::fcntl(target, libc::F_SETFD, 0)
            } else {
                libc::dup2(source, target)
            }
        };
        if rc == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: `CommandExt::pre_exec` (std docs) runs `hook` in the forked child before
    // execve(2), where only async-signal-safe code may run: no allocation, no locks. `hook`
    // reads a descriptor number it owns and makes the two system calls above; its error is
    // an errno value, and `io::Error::last_os_error` does not allocate.
    Ok(unsafe { command.pre_exec(hook) })
}

/// Makes the calling thread a real-time one (SCHED_FIFO at `priority`, 1 to 99), so it runs
/// as soon as it is runnable, ahead of every ordinary thread: for a thread whose job is to
/// act at a set time (the lab's delay line). Needs CAP_SYS_NICE (root); the error says
/// when it is refused.
pub fn make_thread_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: priority };
    // SAFETY: sched_setscheduler(2) reads one `struct sched_param` through the pointer, which
    // is valid for the whole call; pid 0 names the calling thread ("If pid equals zero, the
    // scheduling policy and parameters of the calling thread will be set").
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
