//! Running one CGI script for one request: a body source that yields events, moved forward
//! without blocking by whatever drives the connection.
//!
//! ```text
//! Intake ──body whole: slot, spawn──▶ Head ──header block──▶ Body ──EOF, exit 0──▶ Over
//!   │ 413/400/408, 503, 500             │ 502, 504, local redirect │ timeout, failed exit: cut short
//!   └───────────────────────────────────┴──────────────────────────┴──────▶ Over
//! ```
//! [`CgiRun::advance`] never blocks: it takes the request body in ([`super::intake`]),
//! spawns the script once the body is whole, writes what it can of the body to the script's
//! stdin, reads the script's stdout, and says what happened as a [`CgiEvent`]: the parsed
//! head, body bytes, the end, or a failure status. A body is whole only when the script
//! closes its stdout and exits with status 0: after a closed stdout the run waits for the
//! exit (a pidfd, until the script's deadline), and a script that exits otherwise or is
//! killed cuts its body short ([`CgiEvent::Cut`]: the client sees no last chunk), as nginx
//! does when an upstream fails mid-body. Its stderr is relayed, a line at a time,
//! prefixed and escaped ([`super::stderr`]). It frames nothing and logs nothing:
//! the exchanger (`crate::exchange`'s `CgiResponse`) turns events into the bytes the
//! client gets and the access-log line. Both pipes are non-blocking and close-on-exec.
//!
//! No zombie, ever: the child runs in its own process group, and every way out (EOF,
//! timeout, error, a client gone, drop) kills the child and that group and reaps the child
//! without blocking ([`super::process::Running`]). The run takes its `--max-cgi`
//! [`Slot`] when the script is to start, the request body whole (none free: 503 with
//! `Retry-After`), and holds it until it is over: a client trickling a body holds no slot,
//! so slow uploads cannot lock everyone else out of CGI.

use super::intake::{Intake, Progress};
use super::options::CgiOptions;
use super::process::{CgiSlots, Running, Slot};
use super::stderr::Stderr;
use spidey_http::cgi::{parse_cgi_head, CgiHead};
use spidey_http::{Parsed, Request, StatusCode};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the script did since the last [`CgiRun::advance`].
#[derive(Debug, PartialEq, Eq)]
pub enum CgiEvent<'a> {
    /// The client waits for `100 Continue` before it sends the body (once, before `NeedBody`).
    Continue,
    /// More request-body bytes are needed: give them to [`CgiRun::feed_body`].
    NeedBody,
    /// Nothing new: wait until `stdout_fd` is readable or `stdin_fd` (if any) writable, or
    /// the deadline. The script's stdout has been read until EAGAIN, so an edge-triggered
    /// poller hears of whatever comes next.
    Wait,
    /// The script's header block (a final status), and the body bytes read with it.
    Head(CgiHead, &'a [u8]),
    /// More body bytes.
    Data(&'a [u8]),
    /// The script closed its stdout after its head: the body is whole.
    End,
    /// The script's head asked for another local path instead (`Location: /path` alone).
    LocalRedirect(String),
    /// No answer from the script: answer this instead, before any head.
    Fail(Failure),
    /// The script ran out of time, or exited with a failure or was killed, after its
    /// head: only closing can end the body (no last chunk: the client sees it cut short).
    Cut,
}

/// Why a script gave no answer, and what to answer instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    pub status: StatusCode,
    /// The error page's one sentence.
    pub detail: &'static str,
    /// The request body was not read whole: the connection must close.
    pub close: bool,
    /// The failure is a passing one (no `--max-cgi` slot free): say `Retry-After: 1`.
    pub retry: bool,
}

/// Where the run is. Every way into `Over` drops the process (kill and reap).
///
/// INVARIANT: a process exists exactly in `Head` and `Body` (it lives in the variant), so
/// a script cannot outlive its run's `Over`, and no event but `Data` comes after `Head`.
#[derive(Debug)]
enum Phase {
    /// Taking in the request body; the script is not started.
    Intake(Command),
    /// The script runs; its header block is not whole yet.
    Head(Running),
    /// The script runs; what it writes is body.
    Body(Running),
    /// Ended, failed or redirected: killed, reaped (or being reaped), its slot given back.
    Over,
}

/// A script about to run or running. Dropping it kills and reaps the script.
#[derive(Debug)]
pub struct CgiRun {
    phase: Phase,
    /// The script's `SCRIPT_NAME`, for its stderr lines.
    name: String,
    intake: Intake,
    /// How much of the body the script's stdin has taken.
    stdin_pos: usize,
    timeout: Duration,
    /// When the script is killed if it has not finished (counted from the spawn).
    deadline: Instant,
    /// `--max-cgi`'s slots, if there is a cap.
    slots: Option<Arc<CgiSlots>>,
    /// INVARIANT: `Some` (with `--max-cgi`) exactly while the script runs (`Head`, `Body`).
    slot: Option<Slot>,
    /// What the script wrote of its header block (and the body bytes that came with it).
    raw: Vec<u8>,
    /// The read buffer, allocated at spawn.
    buf: Vec<u8>,
    /// The status the answer has whatever the script's head says (an `--error-page`
    /// script's: the error's), if any.
    status: Option<StatusCode>,
}

const READ_SIZE: usize = 64 * 1024;

impl CgiRun {
    pub(crate) fn new(command: Command, name: String, req: &Request<'_, '_>, opts: &CgiOptions) -> Self {
        CgiRun {
            phase: Phase::Intake(command),
            name,
            intake: Intake::new(req, opts),
            stdin_pos: 0,
            timeout: opts.timeout,
            deadline: Instant::now() + opts.timeout,
            slots: opts.slots.clone(),
            slot: None,
            raw: Vec::new(),
            buf: Vec::new(),
            status: None,
        }
    }

    /// Answers with `status` whatever the script's head says, as an `--error-page` script
    /// keeps the error's status; a `Location` is then a field, never a local redirect.
    pub(crate) fn answer_with(&mut self, status: StatusCode) {
        self.status = Some(status);
    }

    /// Takes request-body bytes from the front of `bytes`; returns how many belonged to
    /// the body (the rest is the next request).
    pub fn feed_body(&mut self, bytes: &[u8]) -> usize {
        self.intake.feed(bytes)
    }

    /// Moves the run forward without blocking; see the module documentation.
    pub fn advance(&mut self) -> CgiEvent<'_> {
        if let Phase::Intake(_) = self.phase {
            match self.intake.poll() {
                Progress::Continue => return CgiEvent::Continue,
                Progress::NeedBody => return CgiEvent::NeedBody,
                Progress::Failed(status, detail) => return self.fail(status, detail, true),
                Progress::Whole => {
                    if let Some(slots) = &self.slots {
                        match slots.try_take() {
                            Some(slot) => self.slot = Some(slot),
                            None => return self.busy(),
                        }
                    }
                    if let Err(e) = self.spawn() {
                        eprintln!("spidey: cannot run CGI script: {e}");
                        return self.fail(StatusCode::INTERNAL_SERVER_ERROR, "The script could not be started.", false);
                    }
                }
            }
        }
        if matches!(self.phase, Phase::Over) {
            return CgiEvent::End;
        }
        if Instant::now() >= self.deadline {
            return self.time_out();
        }
        self.write_stdin();
        self.read_stdout()
    }

    /// What to wait on for reading (non-blocking, close-on-exec): the script's stdout, or
    /// once it is closed, the script's pidfd, readable when it has exited.
    pub fn stdout_fd(&self) -> Option<BorrowedFd<'_>> {
        self.running().and_then(|p| p.stdout.as_ref().or(p.exit.as_ref())).map(|fd| fd.as_fd())
    }

    /// The script's stdin while request-body bytes are still to be written to it.
    pub fn stdin_fd(&self) -> Option<BorrowedFd<'_>> {
        self.running().and_then(|p| p.stdin.as_ref()).map(|fd| fd.as_fd())
    }

    /// While the request body is still to arrive: when it must have arrived (then `advance`
    /// fails with 408 and the connection closes); see [`Intake::deadline`].
    pub fn body_deadline(&self) -> Option<Instant> {
        self.intake.deadline()
    }

    /// Whether the request body was left unread ([`Intake::left_unread`]).
    pub fn body_unread(&self) -> bool {
        self.intake.left_unread()
    }

    /// When the script is killed (504) if it has not finished.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    fn running(&self) -> Option<&Running> {
        match &self.phase {
            Phase::Head(p) | Phase::Body(p) => Some(p),
            Phase::Intake(_) | Phase::Over => None,
        }
    }

    /// Intake → Head: starts the script with the whole body waiting for its stdin.
    fn spawn(&mut self) -> std::io::Result<()> {
        let Phase::Intake(command) = std::mem::replace(&mut self.phase, Phase::Over) else {
            return Err(std::io::Error::other("spawned twice"));
        };
        let mut command = command;
        if let Some(n) = self.intake.content_length() {
            command.env("CONTENT_LENGTH", n.to_string());
        }
        let stdin = if self.intake.body().is_empty() { Stdio::null() } else { Stdio::piped() };
        let (relay, stderr) = Stderr::pipe();
        let mut child = command.stdin(stdin).stdout(Stdio::piped()).stderr(stderr).spawn()?;
        drop(command); // closes the server's copy of the stderr pipe's write end
        relay.relay(&self.name, child.id());
        let mut running = Running { stdin: None, stdout: None, exit: None, child: None };
        crate::metrics::add(crate::metrics::Counter::CgiRunning, 1); // taken back when `Running` drops
        let stdin = child.stdin.take().map(OwnedFd::from);
        let stdout = child.stdout.take().map(OwnedFd::from);
        running.child = Some(child);
        for fd in stdin.iter().chain(stdout.iter()) {
            rustix::fs::fcntl_setfl(fd, rustix::fs::OFlags::NONBLOCK)?;
        }
        (running.stdin, running.stdout) = (stdin, stdout);
        self.phase = Phase::Head(running);
        self.buf = vec![0u8; READ_SIZE];
        self.deadline = Instant::now() + self.timeout;
        Ok(())
    }

    fn write_stdin(&mut self) {
        let body = self.intake.body();
        let (Phase::Head(proc) | Phase::Body(proc)) = &mut self.phase else { return };
        while let Some(fd) = &proc.stdin {
            if self.stdin_pos >= body.len() {
                proc.stdin = None; // EOF for the script
                break;
            }
            match rustix::io::write(fd, &body[self.stdin_pos..]) {
                Ok(n) => self.stdin_pos += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => break,
                Err(_) => proc.stdin = None, // the script stopped reading: its business
            }
        }
    }

    /// Reads until there is something to say: a whole head, body bytes, EOF or EAGAIN.
    /// A partial head says nothing, so reading goes on: `Wait` must mean the pipe is
    /// drained, or an edge-triggered loop never hears of output (or EOF) that arrived
    /// together with what was just read.
    fn read_stdout(&mut self) -> CgiEvent<'_> {
        loop {
            let (Phase::Head(proc) | Phase::Body(proc)) = &self.phase else { return self.end() };
            let Some(fd) = &proc.stdout else { return self.end() };
            let n = match rustix::io::read(fd, &mut self.buf[..]) {
                Ok(0) => return self.end(),
                Ok(n) => n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(rustix::io::Errno::AGAIN) => return CgiEvent::Wait,
                Err(_) => return self.end(),
            };
            if let Phase::Body(_) = self.phase {
                return CgiEvent::Data(&self.buf[..n]);
            }
            self.raw.extend_from_slice(&self.buf[..n]);
            match parse_cgi_head(&self.raw) {
                Ok(Parsed::Partial) => {}
                Err(e) => {
                    eprintln!("spidey: CGI script output is not a valid header block: {e:?}");
                    return self.fail(StatusCode::BAD_GATEWAY, "The script's answer was malformed.", false);
                }
                Ok(Parsed::Complete(head, n)) => return self.head(head, n),
            }
        }
    }

    /// Head → Body, or Over for a local redirect or a status that is not final.
    fn head(&mut self, mut head: CgiHead, len: usize) -> CgiEvent<'_> {
        if let Some(status) = self.status {
            head.status = Some(status.0);
        }
        if let Some(path) = head.local_redirect() {
            let path = path.to_string();
            self.over();
            return CgiEvent::LocalRedirect(path);
        }
        if head.status.is_some_and(|s| s < 200) {
            return self.fail(StatusCode::BAD_GATEWAY, "The script's status is not final.", false);
        }
        if let Phase::Head(proc) = std::mem::replace(&mut self.phase, Phase::Over) {
            self.phase = Phase::Body(proc);
        }
        CgiEvent::Head(head, &self.raw[len..])
    }

    /// The script closed its stdout: before its head, a 502; after it, the end once the
    /// script has exited with status 0, the body cut short if it exited otherwise (or
    /// cannot be watched), and meanwhile a wait for its exit ([`Running::exit`]).
    fn end(&mut self) -> CgiEvent<'_> {
        let Phase::Body(proc) = &mut self.phase else {
            return self.fail(StatusCode::BAD_GATEWAY, "The script ended without a valid answer.", false);
        };
        (proc.stdout, proc.stdin) = (None, None);
        let mut ended = proc.ended();
        if let Ok(None) = ended {
            // Readable once it exits; it may have exited just now, so ask once more.
            ended = proc.watch_exit().and_then(|()| proc.ended());
        }
        match ended {
            Ok(None) => CgiEvent::Wait,
            Ok(Some(true)) => {
                self.over();
                CgiEvent::End
            }
            Ok(Some(false)) | Err(_) => {
                eprintln!("spidey: CGI script {} failed after its head: its body is cut short", self.name);
                self.over();
                CgiEvent::Cut
            }
        }
    }

    /// Past the deadline: the body cut short after a head, else a 504.
    fn time_out(&mut self) -> CgiEvent<'_> {
        eprintln!("spidey: CGI script killed after {:?}", self.timeout);
        self.stop(CgiEvent::Cut, StatusCode::GATEWAY_TIMEOUT, "The script took too long.")
    }

    /// Any phase → Over: `after_head` if the head went out, else a failure with `status`.
    fn stop(&mut self, after_head: CgiEvent<'static>, status: StatusCode, detail: &'static str) -> CgiEvent<'_> {
        let headed = matches!(self.phase, Phase::Body(_));
        if headed {
            self.over();
            after_head
        } else {
            self.fail(status, detail, false)
        }
    }

    fn fail(&mut self, status: StatusCode, detail: &'static str, close: bool) -> CgiEvent<'_> {
        self.over();
        CgiEvent::Fail(Failure { status, detail, close, retry: false })
    }

    /// Intake → Over: every `--max-cgi` slot is taken (the body was read whole: the
    /// connection may stay open).
    fn busy(&mut self) -> CgiEvent<'_> {
        self.over();
        let detail = "Too many scripts are running.";
        CgiEvent::Fail(Failure { status: StatusCode::SERVICE_UNAVAILABLE, detail, close: false, retry: true })
    }

    /// Any phase → Over: kills and reaps the script, gives the slot back.
    fn over(&mut self) {
        self.phase = Phase::Over;
        self.slot = None;
    }
}
