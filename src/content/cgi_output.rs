//! Running one CGI script for one request: a non-blocking state machine that any driver
//! (the blocking [`crate::conn`] or an event loop) moves forward.
//!
//! ```text
//! NeedBody ──feed_body──▶ (body whole) ──spawn──▶ Wait ⇄ pump ──▶ Done | LocalRedirect
//! ```
//! [`CgiOutput::pump`] never blocks: it spawns the script once the request body is whole,
//! writes what it can of the body to the script's stdin, reads at most one buffer of its
//! stdout, and appends to `out` the bytes the client must get next: a `100 Continue`, the
//! response head once the script's header block has parsed, body bytes (chunk-framed on
//! HTTP/1.1, close-delimited on 1.0), or a whole 502/504 response. The driver writes `out`,
//! then waits for what [`CgiStep`] names. Both pipes are non-blocking and close-on-exec.
//!
//! No zombie, ever: the child runs in its own process group, and every way out (EOF,
//! timeout, error, a client gone, drop) kills the child and that group and reaps the child
//! without blocking ([`super::cgi_process::Running`]). The output holds its `--max-cgi`
//! [`Slot`] from the request head until the script is done.

use super::cgi::CgiOptions;
use super::cgi_process::{Running, Slot};
use super::page::error_page;
use spidey_http::cgi::{parse_cgi_head, CgiHead};
use spidey_http::chunked::ChunkedDecoder;
use spidey_http::response::Framing;
use spidey_http::{BodyFraming, HeadOptions, Parsed, Request, StatusCode};
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// What the driver must do after a [`CgiOutput::pump`] (always after writing `out`).
#[derive(Debug, PartialEq, Eq)]
pub enum CgiStep {
    /// Read more request-body bytes from the client and give them to `feed_body`.
    NeedBody,
    /// Wait until `stdout_fd` is readable or `stdin_fd` (if any) is writable, or until
    /// `deadline`, then pump again. With `out` empty, the script's stdout has been read
    /// until EAGAIN, so an edge-triggered poller will hear of whatever comes next; with
    /// `out` non-empty, write it and pump again without waiting.
    Wait,
    /// The script asked for another local path instead: answer a GET of it (the
    /// exchanger's `local_redirect`), and drop this output.
    LocalRedirect(String),
    /// Finished; `keep_alive()` says whether the connection may serve another request.
    Done,
}

/// How the request body is being taken in.
#[derive(Debug)]
enum Intake {
    Length(u64),
    Chunked(ChunkedDecoder),
    Whole,
    Failed(StatusCode, &'static str),
}

/// What the response head and the access log need about the connection.
#[derive(Debug, Default)]
pub struct ConnInfo {
    pub peer: Option<SocketAddr>,
    pub http10: bool,
    pub head_only: bool,
    /// Whether the client lets the connection persist (the upper bound).
    pub keep_alive: bool,
    pub quiet: bool,
    pub request_line: Vec<u8>,
    pub referer: Option<Vec<u8>>,
    pub user_agent: Option<Vec<u8>>,
    pub host: Option<String>,
}

/// The running (or about to run) script. Dropping it kills and reaps the script.
#[derive(Debug)]
pub struct CgiOutput {
    command: Option<Command>,
    intake: Intake,
    has_body: bool,
    body: Vec<u8>,
    stdin_pos: usize,
    max_body: u64,
    expect_continue: bool,
    timeout: Duration,
    deadline: Instant,
    /// When the request head was answered: the body's deadline counts from here.
    body_started: Instant,
    body_timeout: Duration,
    body_min_rate: u64,
    proc: Option<Running>,
    slot: Option<Slot>,
    raw: Vec<u8>,
    status: Option<StatusCode>,
    head_sent: bool,
    chunked: bool,
    body_allowed: bool,
    keep_alive: bool,
    done: bool,
    bytes_out: u64,
    logged: bool,
    /// Whether a `Location: /path` alone may be followed (once per request).
    pub allow_local_redirect: bool,
    pub conn: ConnInfo,
}

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
const READ_SIZE: usize = 64 * 1024;

impl CgiOutput {
    pub(crate) fn new(command: Command, req: &Request<'_, '_>, opts: &CgiOptions, slot: Option<Slot>) -> Self {
        let intake = match req.body {
            BodyFraming::None | BodyFraming::Length(0) => Intake::Whole,
            BodyFraming::Length(n) if n > opts.max_body => Intake::Failed(StatusCode::PAYLOAD_TOO_LARGE, TOO_LARGE),
            BodyFraming::Length(n) => Intake::Length(n),
            BodyFraming::Chunked => Intake::Chunked(ChunkedDecoder::new()),
        };
        let expect = req.header("expect").is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
        CgiOutput {
            command: Some(command),
            expect_continue: expect && matches!(intake, Intake::Length(_) | Intake::Chunked(_)),
            has_body: req.body != BodyFraming::None,
            intake,
            body: Vec::new(),
            stdin_pos: 0,
            max_body: opts.max_body,
            timeout: opts.timeout,
            deadline: Instant::now() + opts.timeout,
            body_started: Instant::now(),
            body_timeout: opts.body_timeout,
            body_min_rate: opts.body_min_rate,
            proc: None,
            slot,
            raw: Vec::new(),
            status: None,
            head_sent: false,
            chunked: false,
            body_allowed: true,
            keep_alive: false,
            done: false,
            bytes_out: 0,
            logged: false,
            allow_local_redirect: true,
            conn: ConnInfo::default(),
        }
    }

    /// Takes request-body bytes from the front of `bytes`; returns how many belonged to
    /// the body (the rest is the next request).
    pub fn feed_body(&mut self, bytes: &[u8]) -> usize {
        match &mut self.intake {
            Intake::Length(left) => {
                let take = usize::try_from(*left).unwrap_or(usize::MAX).min(bytes.len());
                self.body.extend_from_slice(&bytes[..take]);
                *left -= take as u64;
                if *left == 0 {
                    self.intake = Intake::Whole;
                }
                take
            }
            Intake::Chunked(decoder) => match decoder.decode(bytes, &mut self.body) {
                Ok(p) => {
                    if self.body.len() as u64 > self.max_body {
                        self.intake = Intake::Failed(StatusCode::PAYLOAD_TOO_LARGE, TOO_LARGE);
                    } else if p.done {
                        self.intake = Intake::Whole;
                    }
                    p.consumed
                }
                Err(_) => {
                    self.intake = Intake::Failed(StatusCode::BAD_REQUEST, "The chunked request body is malformed.");
                    bytes.len()
                }
            },
            Intake::Whole | Intake::Failed(..) => 0,
        }
    }

    /// Moves the exchange forward without blocking; see the module documentation.
    pub fn pump(&mut self, out: &mut Vec<u8>) -> CgiStep {
        if self.done {
            return CgiStep::Done;
        }
        match self.intake {
            Intake::Failed(status, detail) => return self.error(out, status, detail, true),
            Intake::Length(_) | Intake::Chunked(_) => {
                if self.body_deadline().is_some_and(|d| Instant::now() >= d) {
                    self.intake = Intake::Failed(StatusCode::REQUEST_TIMEOUT, BODY_TOO_SLOW);
                    return self.pump(out);
                }
                if std::mem::take(&mut self.expect_continue) {
                    out.extend_from_slice(CONTINUE);
                }
                return CgiStep::NeedBody;
            }
            Intake::Whole => {}
        }
        if self.proc.is_none() {
            if let Err(e) = self.spawn() {
                eprintln!("spidey: cannot run CGI script: {e}");
                return self.error(out, StatusCode::INTERNAL_SERVER_ERROR, "The script could not be started.", false);
            }
        }
        if Instant::now() >= self.deadline {
            return self.time_out(out);
        }
        self.write_stdin();
        self.read_stdout(out)
    }

    /// The script's stdout, to wait on for reading (non-blocking, close-on-exec).
    pub fn stdout_fd(&self) -> Option<BorrowedFd<'_>> {
        self.proc.as_ref().and_then(|p| p.stdout.as_ref()).map(|fd| fd.as_fd())
    }

    /// The script's stdin while request-body bytes are still to be written to it.
    pub fn stdin_fd(&self) -> Option<BorrowedFd<'_>> {
        self.proc.as_ref().and_then(|p| p.stdin.as_ref()).map(|fd| fd.as_fd())
    }

    /// While the request body is still to arrive: when it must have arrived (then `pump`
    /// answers 408 and the connection closes). `--body-timeout` from the request head, plus
    /// a second per `--body-min-rate` bytes received so far, as Apache's mod_reqtimeout
    /// `body=10,MinRate=500` does: a client trickling below the rate runs out of time,
    /// whatever the size of the body.
    pub fn body_deadline(&self) -> Option<Instant> {
        if !matches!(self.intake, Intake::Length(_) | Intake::Chunked(_)) {
            return None;
        }
        let earned = match self.body_min_rate {
            0 => Duration::ZERO,
            rate => Duration::from_secs_f64(self.body.len() as f64 / rate as f64),
        };
        Some(self.body_started + self.body_timeout + earned)
    }

    /// When the script is killed (504) if it has not finished.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the response head has gone out (after that, failures can only close).
    pub fn head_sent(&self) -> bool {
        self.head_sent
    }

    /// After [`CgiStep::Done`]: whether the connection may serve another request.
    pub fn keep_alive(&self) -> bool {
        self.done && self.keep_alive
    }

    /// The request line of the internal GET for a local redirect to `path`.
    pub fn redirect_request(&self, path: &str) -> Vec<u8> {
        let method = if self.conn.head_only { "HEAD" } else { "GET" };
        let version = if self.conn.http10 { "1.0" } else { "1.1" };
        let host = self.conn.host.as_deref().unwrap_or("localhost");
        let connection = if self.conn.keep_alive { "keep-alive" } else { "close" };
        format!("{method} {path} HTTP/{version}\r\nHost: {host}\r\nConnection: {connection}\r\n\r\n").into_bytes()
    }

    fn spawn(&mut self) -> std::io::Result<()> {
        let mut command = self.command.take().ok_or_else(|| std::io::Error::other("spawned twice"))?;
        if self.has_body {
            command.env("CONTENT_LENGTH", self.body.len().to_string());
        }
        let stdin = if self.body.is_empty() { Stdio::null() } else { Stdio::piped() };
        let mut child = command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?;
        let mut running = Running { stdin: None, stdout: None, child: None };
        let stdin = child.stdin.take().map(OwnedFd::from);
        let stdout = child.stdout.take().map(OwnedFd::from);
        running.child = Some(child);
        crate::metrics::add(crate::metrics::Counter::CgiRunning, 1); // taken back when `Running` drops
        for fd in stdin.iter().chain(stdout.iter()) {
            rustix::fs::fcntl_setfl(fd, rustix::fs::OFlags::NONBLOCK)?;
        }
        (running.stdin, running.stdout) = (stdin, stdout);
        self.proc = Some(running);
        self.deadline = Instant::now() + self.timeout;
        Ok(())
    }

    fn write_stdin(&mut self) {
        let Some(proc) = self.proc.as_mut() else { return };
        while let Some(fd) = &proc.stdin {
            if self.stdin_pos >= self.body.len() {
                proc.stdin = None; // EOF for the script
                break;
            }
            match rustix::io::write(fd, &self.body[self.stdin_pos..]) {
                Ok(n) => self.stdin_pos += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => break,
                Err(_) => proc.stdin = None, // the script stopped reading: its business
            }
        }
    }

    fn read_stdout(&mut self, out: &mut Vec<u8>) -> CgiStep {
        let mut buf = vec![0u8; READ_SIZE];
        loop {
            let Some(fd) = self.proc.as_ref().and_then(|p| p.stdout.as_ref()) else {
                return self.finish(out);
            };
            match rustix::io::read(fd, &mut buf[..]) {
                Ok(0) => return self.finish(out),
                Ok(n) => match self.output(&buf[..n], out) {
                    // Nothing for the client yet (a partial head): keep reading. `Wait` must
                    // mean the pipe is drained, or an edge-triggered loop never hears of
                    // output (or EOF) that arrived together with what was just read.
                    CgiStep::Wait if out.is_empty() => {}
                    step => return step,
                },
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => return CgiStep::Wait,
                Err(_) => return self.finish(out),
            }
        }
    }

    fn output(&mut self, data: &[u8], out: &mut Vec<u8>) -> CgiStep {
        if self.head_sent {
            self.emit(data, out);
            return CgiStep::Wait;
        }
        self.raw.extend_from_slice(data);
        match parse_cgi_head(&self.raw) {
            Ok(Parsed::Partial) => CgiStep::Wait,
            Err(e) => {
                eprintln!("spidey: CGI script output is not a valid header block: {e:?}");
                self.error(out, StatusCode::BAD_GATEWAY, "The script's answer was malformed.", false)
            }
            Ok(Parsed::Complete(head, n)) => {
                if let Some(path) = head.local_redirect() {
                    if !self.allow_local_redirect {
                        return self.error(out, StatusCode::BAD_GATEWAY, "The script redirected twice.", false);
                    }
                    self.proc = None;
                    self.done = true;
                    self.slot = None;
                    self.logged = true;
                    return CgiStep::LocalRedirect(path.to_string());
                }
                if head.status.is_some_and(|s| s < 200) {
                    return self.error(out, StatusCode::BAD_GATEWAY, "The script's status is not final.", false);
                }
                self.write_head(&head, out);
                let rest = self.raw.split_off(n);
                self.emit(&rest, out);
                CgiStep::Wait
            }
        }
    }

    fn write_head(&mut self, head: &CgiHead, out: &mut Vec<u8>) {
        let status = StatusCode(head.status.unwrap_or(if head.location.is_some() { 302 } else { 200 }));
        let mut fields: Vec<(&str, &str)> = Vec::new();
        if let Some(ct) = &head.content_type {
            fields.push(("Content-Type", ct));
        }
        if let Some(loc) = &head.location {
            fields.push(("Location", loc));
        }
        fields.extend(head.fields.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        self.body_allowed = !status.forbids_body() && !self.conn.head_only;
        let framing = if status.forbids_body() {
            Framing::None
        } else if self.conn.http10 {
            Framing::Close
        } else {
            Framing::Chunked
        };
        self.chunked = framing == Framing::Chunked;
        self.keep_alive = self.conn.keep_alive && framing != Framing::Close;
        self.put_head(out, status, &fields, framing);
    }

    fn put_head(&mut self, out: &mut Vec<u8>, status: StatusCode, fields: &[(&str, &str)], framing: Framing) {
        let date = spidey_http::date::format(SystemTime::now());
        let opts = HeadOptions {
            date: &date,
            server: crate::server::SOFTWARE,
            framing,
            keep_alive: self.keep_alive,
            http10: self.conn.http10,
        };
        spidey_http::write_head(out, status, fields, &opts);
        self.status = Some(status);
        self.head_sent = true;
    }

    fn emit(&mut self, data: &[u8], out: &mut Vec<u8>) {
        if !self.body_allowed || data.is_empty() {
            return;
        }
        if self.chunked {
            out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
            out.extend_from_slice(data);
            out.extend_from_slice(b"\r\n");
        } else {
            out.extend_from_slice(data);
        }
        self.bytes_out += data.len() as u64;
    }

    /// The script closed its stdout.
    fn finish(&mut self, out: &mut Vec<u8>) -> CgiStep {
        self.proc = None; // kill what is left of the group, and reap
        if !self.head_sent {
            return self.error(out, StatusCode::BAD_GATEWAY, "The script ended without a valid answer.", false);
        }
        if self.chunked && self.body_allowed {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        self.done = true;
        self.slot = None;
        self.log();
        CgiStep::Done
    }

    fn time_out(&mut self, out: &mut Vec<u8>) -> CgiStep {
        self.proc = None;
        eprintln!("spidey: CGI script killed after {:?}", self.timeout);
        if self.head_sent {
            // The body is cut short: only closing the connection can say so.
            self.keep_alive = false;
            self.done = true;
            self.slot = None;
            self.log();
            return CgiStep::Done;
        }
        self.error(out, StatusCode::GATEWAY_TIMEOUT, "The script took too long.", false)
    }

    /// A whole error response in `out`; `close` when the request body was not read whole.
    fn error(&mut self, out: &mut Vec<u8>, status: StatusCode, detail: &str, close: bool) -> CgiStep {
        self.proc = None;
        self.keep_alive = self.conn.keep_alive && !close;
        let page = error_page(status, detail);
        let len = page.len() as u64;
        self.put_head(out, status, &[("Content-Type", "text/html; charset=utf-8")], Framing::Length(len));
        if !self.conn.head_only {
            out.extend_from_slice(&page);
            self.bytes_out = len;
        }
        self.done = true;
        self.slot = None;
        self.log();
        CgiStep::Done
    }

    fn log(&mut self) {
        if self.logged {
            return;
        }
        self.logged = true;
        let (Some(status), Some(peer)) = (self.status, self.conn.peer) else { return };
        crate::metrics::answered(status.0, self.bytes_out);
        if self.conn.quiet {
            return;
        }
        crate::log::record(&crate::log::Record {
            peer,
            request_line: &self.conn.request_line,
            status: status.0,
            bytes: self.bytes_out,
            referer: self.conn.referer.as_deref(),
            user_agent: self.conn.user_agent.as_deref(),
        });
    }
}

impl Drop for CgiOutput {
    fn drop(&mut self) {
        self.proc = None;
        self.log();
    }
}

const TOO_LARGE: &str = "The request body is larger than this server accepts.";
const BODY_TOO_SLOW: &str = "The request body took too long to arrive.";
