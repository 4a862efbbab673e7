//! A CGI answer on its way out: the exchanger's side of a running script. The content side's
//! [`CgiRun`] says what the script did as events; [`CgiResponse::pump`] turns them into a
//! response written part by part to the connection's protocol (a [`PartWriter`]: a head,
//! body bytes, an end), and logs the request. It writes no protocol's bytes itself.
//!
//! ```text
//! Pending ──Head──▶ Body ──End──▶ Done(keep-alive?)     Continue: an interim response, still Pending
//!    │ Fail: whole error page       │ Cut: Done(close)
//!    ├──────────────────────────────┴──▶ Done
//!    └─LocalRedirect─▶ Redirected (the exchanger's `local_redirect` answers instead)
//! ```
//! The head follows the script's own (its status, `Content-Type`, `Location`, passed-through
//! fields) with a [`Length::Streamed`] body, which the protocol delimits (HTTP/1.1: chunked,
//! or by the close for HTTP/1.0 clients); no body follows for HEAD and bodiless statuses. A
//! failure before the head is a whole error response like any other; after it, only closing
//! can say so.

use super::{reply, Meta, PartWriter};
use crate::content::cgi::run::{CgiEvent, CgiRun, Failure};
use crate::content::{Body, FieldValue, Response};
use crate::head::{Head, Length};
use spidey_http::cgi::CgiHead;
use spidey_http::{Field, Method, StatusCode};
use std::borrow::Cow;
use std::net::SocketAddr;
use std::os::fd::BorrowedFd;
use std::time::{Instant, SystemTime};

/// What the driver must do after a [`CgiResponse::pump`] (always after writing `out`).
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
    /// exchanger's `local_redirect` of [`CgiResponse::redirect_request`]), and drop this.
    LocalRedirect(String),
    /// Finished; `keep_alive()` says whether the connection may serve another request.
    Done,
}

/// Where the response to the client is.
///
/// INVARIANT: the head goes out once, entering `Body`; an error page only from `Pending`;
/// the log line once, leaving `Body` (or on drop in it) or with the error page.
#[derive(Debug)]
enum Output {
    /// No head sent yet (a `100 Continue` may have been).
    Pending,
    /// The head is out with `status`; the script's bytes follow as the body if `body`
    /// (else, for HEAD or a status without a body, they are dropped).
    Body { status: StatusCode, body: bool, keep_alive: bool },
    /// The response is complete (or was cut short: then `keep_alive` is false) and logged.
    Done { keep_alive: bool },
    /// The script redirected locally: another answer stands in, which logs itself.
    Redirected,
}

/// What the head and the access log need about the request, owned (the request's buffer
/// moves on while the script runs).
#[derive(Debug)]
struct Request {
    peer: SocketAddr,
    request_line: Vec<u8>,
    referer: Option<Vec<u8>>,
    user_agent: Option<Vec<u8>>,
    host: Option<String>,
    /// The request's credentials, which the internal GET of a local redirect carries (it
    /// is the same client's request, and `--basic-auth` guards its target too).
    authorization: Option<Vec<u8>>,
    head_only: bool,
    http10: bool,
    /// Whether the connection may persist (the client's wish and the server's limits).
    keep_alive: bool,
    quiet: bool,
    /// Whether a `Location: /path` alone may be followed (once per request).
    may_redirect: bool,
    /// Fields added to whatever head this answer writes (CORS, `--header`).
    extra: Vec<(String, String)>,
}

/// The request a script's local redirect asks the server to answer instead, made by
/// [`CgiResponse::redirect_request`] and answered by the exchanger's `local_redirect`.
#[derive(Debug)]
pub struct InternalRequest {
    pub(super) method: Method<'static>,
    pub(super) path: String,
    pub(super) http10: bool,
    pub(super) keep_alive: bool,
    pub(super) host: Option<String>,
    pub(super) authorization: Option<Vec<u8>>,
    pub(super) request_line: Vec<u8>,
}

impl InternalRequest {
    /// Its header fields: the host and the credentials, when the client sent them.
    pub(super) fn fields(&self) -> Vec<Field<'_>> {
        let host = self.host.as_deref().map(|h| Field { name: "host", value: h.as_bytes() });
        let auth = self.authorization.as_deref().map(|a| Field { name: "authorization", value: a });
        host.into_iter().chain(auth).collect()
    }
}

/// What a connection waits on while its scripts run: every running script's pipes, and
/// the earliest of their deadlines (then the connection pumps: 504 for a script past its
/// own). One script over HTTP/1.1; over HTTP/2 one per stream that runs one, all watched at
/// once, so a quick script's answer never waits for a slow sibling's output.
#[derive(Debug, Default)]
pub struct ScriptWatch<'a> {
    pipes: smallvec::SmallVec<[(BorrowedFd<'a>, Ready); 2]>,
    deadline: Option<Instant>,
}

/// What a pipe of a [`ScriptWatch`] is waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// The script's stdout (or once it is closed, its pidfd) is readable.
    Read,
    /// Its stdin can take more of the request body.
    Write,
}

impl<'a> ScriptWatch<'a> {
    /// Adds a running script's pipes and deadline.
    pub fn add(&mut self, cgi: &'a CgiResponse) {
        self.pipes.extend(cgi.stdout_fd().map(|fd| (fd, Ready::Read)));
        self.pipes.extend(cgi.stdin_fd().map(|fd| (fd, Ready::Write)));
        let at = cgi.deadline();
        self.deadline = Some(self.deadline.map_or(at, |d| d.min(at)));
    }

    /// The pipes to wait on, and for what.
    pub fn pipes(&self) -> impl Iterator<Item = (BorrowedFd<'a>, Ready)> + '_ {
        self.pipes.iter().copied()
    }

    /// The earliest deadline of the scripts added; `None` if none was.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

/// A script's answer being framed. Dropping it kills and reaps the script, and logs a
/// response whose head went out but whose body did not end.
#[derive(Debug)]
pub struct CgiResponse {
    run: Box<CgiRun>,
    output: Output,
    request: Request,
    /// Body bytes sent (before framing), for the log.
    bytes_out: u64,
}

impl CgiResponse {
    /// `keep_alive`: whether the connection may persist at all; `may_redirect`: whether a
    /// local redirect may be followed (not while answering one).
    pub(super) fn new(
        run: Box<CgiRun>,
        meta: &Meta<'_>,
        req: &spidey_http::Request<'_, '_>,
        keep_alive: bool,
        quiet: bool,
        may_redirect: bool,
        extra: Vec<(String, String)>,
    ) -> Self {
        let request = Request {
            peer: meta.peer,
            request_line: meta.request_line.to_vec(),
            referer: meta.referer.map(<[u8]>::to_vec),
            user_agent: meta.user_agent.map(<[u8]>::to_vec),
            host: req.host.map(str::to_string),
            authorization: req.header("authorization").filter(|_| may_redirect).map(<[u8]>::to_vec),
            head_only: meta.head_only,
            http10: meta.http10,
            keep_alive,
            quiet,
            may_redirect,
            extra,
        };
        CgiResponse { run, output: Output::Pending, request, bytes_out: 0 }
    }

    /// Moves the script on without blocking and writes to `to` what the client must get
    /// next: an interim `100 Continue`, the head, body bytes, the body's end, or a whole
    /// error response. See `crate::exchange`'s module docs for the driver's side.
    pub fn pump(&mut self, to: &mut impl PartWriter) -> CgiStep {
        loop {
            if let Output::Done { .. } | Output::Redirected = self.output {
                return CgiStep::Done;
            }
            match self.run.advance() {
                CgiEvent::Continue => to.interim_continue(),
                CgiEvent::NeedBody => return CgiStep::NeedBody,
                CgiEvent::Wait => return CgiStep::Wait,
                CgiEvent::Head(head, body) => {
                    self.output = open(&self.request, &head, to);
                    self.bytes_out += write_data(&self.output, body, to);
                    return CgiStep::Wait; // with the head written, to send first
                }
                CgiEvent::Data(body) => {
                    // Nothing for the client (HEAD, a bodiless status): keep reading, so
                    // `Wait` still means the script's stdout is drained.
                    let written = write_data(&self.output, body, to);
                    self.bytes_out += written;
                    if written > 0 {
                        return CgiStep::Wait;
                    }
                }
                CgiEvent::End => return self.end(to),
                CgiEvent::Cut => return self.close(false),
                CgiEvent::Fail(failure) => return self.fail(failure, to),
                CgiEvent::LocalRedirect(path) if self.request.may_redirect => {
                    self.output = Output::Redirected;
                    return CgiStep::LocalRedirect(path);
                }
                CgiEvent::LocalRedirect(_) => {
                    let twice = "The script redirected twice.";
                    let failure =
                        Failure { status: StatusCode::BAD_GATEWAY, detail: twice, close: false, retry: false };
                    return self.fail(failure, to);
                }
            }
        }
    }

    /// Takes request-body bytes from the front of `bytes`; returns how many belonged to
    /// the body (the rest is the next request).
    pub fn feed_body(&mut self, bytes: &[u8]) -> usize {
        self.run.feed_body(bytes)
    }

    /// What to wait on for reading: the script's stdout, or once it is closed, a pidfd
    /// readable when the script has exited.
    pub fn stdout_fd(&self) -> Option<BorrowedFd<'_>> {
        self.run.stdout_fd()
    }

    /// The script's stdin while request-body bytes are still to be written to it.
    pub fn stdin_fd(&self) -> Option<BorrowedFd<'_>> {
        self.run.stdin_fd()
    }

    /// While the request body is still to arrive: when it must have arrived (then `pump`
    /// answers 408 and the connection closes).
    pub fn body_deadline(&self) -> Option<Instant> {
        self.run.body_deadline()
    }

    /// When the script is killed (504) if it has not finished.
    pub fn deadline(&self) -> Instant {
        self.run.deadline()
    }

    /// After [`CgiStep::Done`]: whether the request body was left unread (refused or late),
    /// so the connection closes while its client may still be sending.
    pub fn body_unread(&self) -> bool {
        self.run.body_unread()
    }

    /// After [`CgiStep::Done`]: whether the connection may serve another request.
    pub fn keep_alive(&self) -> bool {
        matches!(self.output, Output::Done { keep_alive: true })
    }

    /// The internal GET (HEAD for a HEAD) of a local redirect to `path`: the client's host,
    /// connection wish and credentials, nothing else of the request.
    pub fn redirect_request(&self, path: &str) -> InternalRequest {
        let r = &self.request;
        let method = if r.head_only { Method::Head } else { Method::Get };
        // The log's request line keeps the client's protocol version, its last word.
        let version = r.request_line.rsplit(|&b| b == b' ').next().unwrap_or(b"");
        let mut request_line = format!("{} {path} ", method.as_str()).into_bytes();
        request_line.extend_from_slice(version);
        InternalRequest {
            method,
            path: path.to_string(),
            http10: r.http10,
            keep_alive: r.keep_alive,
            host: r.host.clone(),
            authorization: r.authorization.clone(),
            request_line,
        }
    }

    /// The script's output ended: the body's end, and done.
    fn end(&mut self, to: &mut impl PartWriter) -> CgiStep {
        let keep_alive = match self.output {
            Output::Body { body, keep_alive, .. } => {
                // Whole: the script closed its output and exited with status 0.
                if body {
                    to.end();
                }
                keep_alive
            }
            _ => false,
        };
        self.close(keep_alive)
    }

    /// Body → Done: logs the response.
    fn close(&mut self, keep_alive: bool) -> CgiStep {
        self.log();
        self.output = Output::Done { keep_alive };
        CgiStep::Done
    }

    /// Pending → Done with a whole error response written.
    ///
    /// INVARIANT: called before any head went out (a [`CgiEvent::Fail`] comes only then).
    fn fail(&mut self, failure: Failure, to: &mut impl PartWriter) -> CgiStep {
        let date = spidey_http::date::format(SystemTime::now());
        let mut response = Response::error(failure.status, failure.detail);
        if failure.retry {
            response.fields.push(("Retry-After", "1".into()));
        }
        let (head, body) = reply(&date, self.request.quiet, response, &self.request.extra, &self.meta());
        let page = match &body {
            Body::Bytes(page) => &page[..],
            _ => &[],
        };
        let keep_alive = to.head(&head, self.request.keep_alive && !failure.close, !page.is_empty());
        if !page.is_empty() {
            to.data(page);
            to.end();
        }
        self.output = Output::Done { keep_alive };
        CgiStep::Done
    }

    fn meta(&self) -> Meta<'_> {
        let r = &self.request;
        Meta {
            peer: r.peer,
            request_line: &r.request_line,
            referer: r.referer.as_deref(),
            user_agent: r.user_agent.as_deref(),
            head_only: r.head_only,
            http10: r.http10,
        }
    }

    /// The access-log line of a response whose head went out (none for one that never
    /// had a head: a client gone before the script answered).
    fn log(&self) {
        if let Output::Body { status, .. } = &self.output {
            crate::metrics::answered(status.0, self.bytes_out);
            if !self.request.quiet {
                super::log_line(&self.meta(), *status, self.bytes_out);
            }
        }
    }
}

impl Drop for CgiResponse {
    fn drop(&mut self) {
        self.log();
    }
}

/// The response head for the script's `head`, written to `to`; whether a body follows and
/// whether the connection may persist follow from the status, the method and the
/// protocol's framing.
fn open(request: &Request, head: &CgiHead, to: &mut impl PartWriter) -> Output {
    let head = response_head(request, head);
    let body = !request.head_only && head.length == Length::Streamed;
    let keep_alive = to.head(&head, request.keep_alive, body);
    Output::Body { status: head.status, body, keep_alive }
}

/// The head of the script's answer: its status (302 with a `Location` and none said),
/// `Content-Type`, `Location`, its other fields, then the answer's extra fields.
fn response_head(request: &Request, head: &CgiHead) -> Head<'static> {
    let status = StatusCode(head.status.unwrap_or(if head.location.is_some() { 302 } else { 200 }));
    let content_type = head.content_type.clone().map(|v| ("Content-Type", FieldValue::Owned(v)));
    let location = head.location.clone().map(|v| ("Location", FieldValue::Owned(v)));
    let fields = content_type.into_iter().chain(location).collect();
    let extra = head.fields.iter().chain(&request.extra).cloned().collect();
    let length = if status.forbids_body() { Length::Unstated } else { Length::Streamed };
    let date = Cow::Owned(spidey_http::date::format(SystemTime::now()));
    Head { status, fields, extra, headers: Cow::Borrowed(&[]), date, length, http10: request.http10 }
}

/// Writes `data` as body bytes if the body is sent; returns how many body bytes that was
/// (0 when the body is dropped).
fn write_data(output: &Output, data: &[u8], to: &mut impl PartWriter) -> u64 {
    match output {
        Output::Body { body: true, .. } if !data.is_empty() => {
            to.data(data);
            data.len() as u64
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(http10: bool, head_only: bool) -> Request {
        Request {
            peer: SocketAddr::from(([127, 0, 0, 1], 1)),
            request_line: b"GET /cgi-bin/x HTTP/1.1".to_vec(),
            referer: None,
            user_agent: None,
            host: None,
            authorization: None,
            head_only,
            http10,
            keep_alive: true,
            quiet: true,
            may_redirect: true,
            extra: Vec::new(),
        }
    }

    /// The head's status line, framing and `Connection` lines (here in HTTP/1.1, the
    /// protocol of today's connections), whether the body follows, and whether the
    /// connection may persist, for a script's status and the client's request.
    #[test]
    fn the_head_follows_the_status_the_method_and_the_version() {
        #[rustfmt::skip]
        let cases = [
            // (status, location, http10, head_only) → (status line, framing line, body, keep-alive)
            ((None, None, false, false), ("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", true, true)),
            ((None, None, true, false), ("HTTP/1.1 200 OK", "Connection: close", true, false)),
            ((None, None, false, true), ("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", false, true)),
            ((None, Some("http://x/"), false, false), ("HTTP/1.1 302 Found", "Transfer-Encoding: chunked", true, true)),
            ((Some(204), None, false, false), ("HTTP/1.1 204 No Content", "", false, true)),
            ((Some(304), None, true, false), ("HTTP/1.1 304 Not Modified", "Connection: keep-alive", false, true)),
            ((Some(404), None, false, false), ("HTTP/1.1 404 Not Found", "Transfer-Encoding: chunked", true, true)),
        ];
        for ((status, location, http10, head_only), (line, framing, want_body, want_keep)) in cases {
            let head =
                CgiHead { status, content_type: None, location: location.map(str::to_string), fields: Vec::new() };
            let (mut out, mut parts) = (Vec::new(), crate::h1::H1Parts::default());
            let output = open(&request(http10, head_only), &head, &mut parts.writer(&mut out));
            let text = String::from_utf8(out).unwrap();
            let Output::Body { body, keep_alive, .. } = output else { panic!("{output:?}") };
            assert!(text.starts_with(&format!("{line}\r\n")), "{status:?} {http10}: {text}");
            assert!(text.ends_with("\r\n\r\n"), "{text}");
            assert!(framing.is_empty() || text.contains(&format!("\r\n{framing}\r\n")), "{status:?} {http10}: {text}");
            assert!(framing.starts_with("Transfer") || !text.contains("Transfer-Encoding"), "{text}");
            assert!(!text.contains("Content-Length"), "{text}");
            assert_eq!((body, keep_alive), (want_body, want_keep), "{status:?} {http10} {head_only}");
        }
    }
}
