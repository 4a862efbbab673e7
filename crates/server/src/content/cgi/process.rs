//! A running CGI script's process, and the cap on how many run at once.
//!
//! [`Running`] owns the script's pipes and its unreaped [`Child`]. Dropping it kills the
//! script itself and its process group (a script that moved to another group with
//! setpgid(2) is still killed: the pid is signalled directly), and reaps it without ever
//! blocking the calling thread, which may be an event loop: if the child has not died by
//! the time of a WNOHANG wait, it is handed to one reaper thread per process that waits
//! for it. The reaper runs only in processes that serve (never in the forking parents of
//! `fork` and `prefork`, which stay single-threaded).
//!
//! [`CgiSlots`] is `--max-cgi`: a pipe holding one byte per slot, made before any worker
//! is forked, so every process and thread of the server shares it. Taking a slot reads a
//! byte (none left: the caller answers 503); dropping the [`Slot`] writes it back. A
//! process that dies holding a slot (killed while a script of its ran) loses it for the
//! life of the server: no mode's processes end that way short of a crash, and a crash in
//! `fork` or `prefork` happens in a handler, never while that process drives a script.

use std::io;
use std::os::fd::OwnedFd;
use std::process::Child;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// A spawned script. Dropping it closes the pipes, kills the script and its process group,
/// and reaps the script (now, or soon on the reaper thread).
#[derive(Debug)]
pub(crate) struct Running {
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    /// Once its stdout is closed: a pidfd of the script, readable when it has exited
    /// ([`Running::watch_exit`]).
    pub exit: Option<OwnedFd>,
    pub child: Option<Child>,
}

impl Running {
    /// How the script ended: `Some(true)` if it exited with status 0, `Some(false)` for
    /// any other status or a signal, `None` while it runs. The status is read without
    /// reaping (WNOWAIT, waitid(2)), so the pid stays the script's until the drop.
    pub(crate) fn ended(&self) -> io::Result<Option<bool>> {
        use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
        let Some(child) = &self.child else { return Ok(Some(false)) };
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        let status = waitid(WaitId::Pid(Pid::from_child(child)), options)?;
        Ok(status.map(|s| s.exit_status() == Some(0)))
    }

    /// Opens [`Running::exit`] (pidfd_open(2); close-on-exec), to wait on for the exit.
    pub(crate) fn watch_exit(&mut self) -> io::Result<()> {
        use rustix::process::{pidfd_open, Pid, PidfdFlags};
        let Some(child) = &self.child else { return Err(io::ErrorKind::NotFound.into()) };
        if self.exit.is_none() {
            self.exit = Some(pidfd_open(Pid::from_child(child), PidfdFlags::NONBLOCK)?);
        }
        Ok(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stdin = None;
        self.stdout = None;
        self.exit = None;
        if let Some(mut child) = self.child.take() {
            crate::metrics::sub(crate::metrics::Counter::CgiRunning);
            // The pid and the group outlive the script while it is unreaped, so neither
            // kill can hit a recycled process or group.
            let pid = rustix::process::Pid::from_child(&child);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            if !matches!(child.try_wait(), Ok(Some(_))) {
                reap_later(child);
            }
        }
    }
}

/// Hands a killed child to the reaper thread (started on first use).
fn reap_later(child: Child) {
    static REAPER: OnceLock<Sender<Child>> = OnceLock::new();
    let sender = REAPER.get_or_init(|| {
        let (sender, receiver) = channel::<Child>();
        let reaper = move || {
            let mut children: Vec<Child> = Vec::new();
            loop {
                let next = if children.is_empty() {
                    receiver.recv().map_err(|_| RecvTimeoutError::Disconnected)
                } else {
                    receiver.recv_timeout(Duration::from_millis(20))
                };
                match next {
                    Ok(child) => children.push(child),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
            }
        };
        // If no thread can be started, `send` fails below and the caller waits itself.
        let _ = std::thread::Builder::new().name("spidey-cgi-reaper".into()).spawn(reaper);
        sender
    });
    if let Err(std::sync::mpsc::SendError(mut child)) = sender.send(child) {
        let _ = child.wait();
    }
}

/// `--max-cgi`: the scripts that may run at once (a slot is taken when the script is to
/// start, its request body whole).
#[derive(Debug)]
pub struct CgiSlots {
    take: OwnedFd,
    give: OwnedFd,
}

/// The most slots: the pipe must hold them all without blocking a writer.
pub const MAX_SLOTS: usize = 4096;

impl CgiSlots {
    /// `n` slots (1 to [`MAX_SLOTS`]). Make them before forking workers.
    pub fn new(n: usize) -> io::Result<Arc<CgiSlots>> {
        if n == 0 || n > MAX_SLOTS {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "--max-cgi must be 1 to 4096"));
        }
        let flags = rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK;
        let (take, give) = rustix::pipe::pipe_with(flags)?;
        let tokens = vec![b's'; n];
        let mut written = 0;
        while written < n {
            written += rustix::io::write(&give, &tokens[written..])?;
        }
        Ok(Arc::new(CgiSlots { take, give }))
    }

    /// A slot, or `None` if all are taken.
    pub(crate) fn try_take(self: &Arc<Self>) -> Option<Slot> {
        let mut byte = [0u8; 1];
        loop {
            match rustix::io::read(&self.take, &mut byte) {
                Ok(1) => return Some(Slot(Arc::clone(self))),
                Err(rustix::io::Errno::INTR) => {}
                _ => return None,
            }
        }
    }
}

/// One taken slot; dropping it gives it back.
#[derive(Debug)]
pub(crate) struct Slot(Arc<CgiSlots>);

impl Drop for Slot {
    fn drop(&mut self) {
        // The pipe has room: it held every slot at the start.
        while let Err(rustix::io::Errno::INTR) = rustix::io::write(&self.0.give, b"s") {}
    }
}
