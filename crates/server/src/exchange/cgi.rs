//! A CGI answer on its way out: the exchanger's side of a running script. The content side's
//! [`CgiRun`] says what the script did as events; [`CgiResponse::pump`] frames them into the
//! bytes the client gets, as the exchanger frames every other answer, and logs the request.
//!
//! ```text
//! Pending ──Head──▶ Body ──End──▶ Done(keep-alive?)     Continue: `100 Continue`, still Pending
//!    │ Fail: whole error page       │ Cut: Done(close)
//!    ├──────────────────────────────┴──▶ Done
//!    └─LocalRedirect─▶ Redirected (the exchanger's `local_redirect` answers instead)
//! ```
//! The head follows the script's own (its status, `Content-Type`, `Location`, passed-through
//! fields); the body is chunked for HTTP/1.1 clients and close-delimited for HTTP/1.0 ones
//! (an [`Encoder`]), dropped for HEAD and bodiless statuses. A failure before the head is a
//! whole error response framed like any other; after it, only closing can say so.

use super::{reply, Meta};
use crate::content::cgi::run::{CgiEvent, CgiRun, Failure};
use crate::content::{Body, Response};
use crate::software::SOFTWARE;
use spidey_http::cgi::CgiHead;
use spidey_http::response::Framing;
use spidey_http::{Encoder, HeadOptions, StatusCode};
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
    /// exchanger's `local_redirect`, with [`CgiResponse::redirect_request`]), and drop this.
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
    /// The head is out with `status`; the body follows through `encoder` (`None`: HEAD,
    /// or a status without a body: the script's bytes are dropped).
    Body { status: StatusCode, encoder: Option<Encoder>, keep_alive: bool },
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

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

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

    /// Moves the script on without blocking and appends to `out` the bytes the client must
    /// get next: a `100 Continue`, the head, framed body bytes, the last chunk, or a whole
    /// error response. See `crate::exchange`'s module docs for the driver's side.
    pub fn pump(&mut self, out: &mut Vec<u8>) -> CgiStep {
        loop {
            if let Output::Done { .. } | Output::Redirected = self.output {
                return CgiStep::Done;
            }
            match self.run.advance() {
                CgiEvent::Continue => out.extend_from_slice(CONTINUE),
                CgiEvent::NeedBody => return CgiStep::NeedBody,
                CgiEvent::Wait => return CgiStep::Wait,
                CgiEvent::Head(head, body) => {
                    self.output = head_output(&self.request, &head, out);
                    self.bytes_out += encode(&mut self.output, body, out);
                    return CgiStep::Wait; // with the head in `out`, to write first
                }
                CgiEvent::Data(body) => {
                    self.bytes_out += encode(&mut self.output, body, out);
                    // Nothing for the client (HEAD, a bodiless status): keep reading, so
                    // `Wait` still means the script's stdout is drained.
                    if !out.is_empty() {
                        return CgiStep::Wait;
                    }
                }
                CgiEvent::End => return self.end(out),
                CgiEvent::Cut => return self.close(false),
                CgiEvent::Fail(failure) => return self.fail(failure, out),
                CgiEvent::LocalRedirect(path) if self.request.may_redirect => {
                    self.output = Output::Redirected;
                    return CgiStep::LocalRedirect(path);
                }
                CgiEvent::LocalRedirect(_) => {
                    let twice = "The script redirected twice.";
                    let failure =
                        Failure { status: StatusCode::BAD_GATEWAY, detail: twice, close: false, retry: false };
                    return self.fail(failure, out);
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

    /// After [`CgiStep::Done`]: whether the connection may serve another request.
    pub fn keep_alive(&self) -> bool {
        matches!(self.output, Output::Done { keep_alive: true })
    }

    /// The head of the internal GET for a local redirect to `path`: the client's host,
    /// connection wish and credentials, nothing else of the request.
    pub fn redirect_request(&self, path: &str) -> Vec<u8> {
        let r = &self.request;
        let method = if r.head_only { "HEAD" } else { "GET" };
        let version = if r.http10 { "1.0" } else { "1.1" };
        let host = r.host.as_deref().unwrap_or("localhost");
        let connection = if r.keep_alive { "keep-alive" } else { "close" };
        let mut head =
            format!("{method} {path} HTTP/{version}\r\nHost: {host}\r\nConnection: {connection}\r\n").into_bytes();
        if let Some(credentials) = &r.authorization {
            head.extend_from_slice(b"Authorization: ");
            head.extend_from_slice(credentials);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        head
    }

    /// The script's output ended: the last chunk, and done.
    fn end(&mut self, out: &mut Vec<u8>) -> CgiStep {
        let keep_alive = match &mut self.output {
            Output::Body { encoder, keep_alive, .. } => {
                // Whole: the script closed its output and exited with status 0.
                let _ = encoder.as_mut().map(|e| e.finish(out));
                *keep_alive
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

    /// Pending → Done with a whole error response in `out`.
    ///
    /// INVARIANT: called before any head went out (a [`CgiEvent::Fail`] comes only then).
    fn fail(&mut self, failure: Failure, out: &mut Vec<u8>) -> CgiStep {
        let keep_alive = self.request.keep_alive && !failure.close;
        let date = spidey_http::date::format(SystemTime::now());
        let mut response = Response::error(failure.status, failure.detail);
        if failure.retry {
            response.fields.push(("Retry-After", "1".into()));
        }
        let (head, body) = reply(&date, self.request.quiet, response, &self.request.extra, &self.meta());
        crate::h1::write_head(out, &head, keep_alive);
        if let Body::Bytes(page) = body {
            out.extend_from_slice(&page);
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

/// Writes the response head for the script's `head` into `out`; the body's framing and
/// whether the connection may persist follow from the status and the client's version.
fn head_output(request: &Request, head: &CgiHead, out: &mut Vec<u8>) -> Output {
    let status = StatusCode(head.status.unwrap_or(if head.location.is_some() { 302 } else { 200 }));
    let content_type = head.content_type.as_deref().map(|v| ("Content-Type", v));
    let location = head.location.as_deref().map(|v| ("Location", v));
    let rest = head.fields.iter().chain(&request.extra).map(|(n, v)| (n.as_str(), v.as_str()));
    let fields = content_type.into_iter().chain(location).chain(rest);
    let framing = if status.forbids_body() {
        Framing::None
    } else if request.http10 {
        Framing::Close
    } else {
        Framing::Chunked
    };
    let keep_alive = request.keep_alive && framing != Framing::Close;
    let date = spidey_http::date::format(SystemTime::now());
    let opts = HeadOptions { date: &date, server: SOFTWARE, framing, keep_alive, http10: request.http10 };
    spidey_http::write_head(out, status, fields, &opts);
    let encoder = if request.head_only { None } else { Encoder::new(framing) };
    Output::Body { status, encoder, keep_alive }
}

/// Appends `data` framed as the body; returns how many body bytes that was (0 when the
/// body is dropped).
fn encode(output: &mut Output, data: &[u8], out: &mut Vec<u8>) -> u64 {
    match output {
        Output::Body { encoder: Some(encoder), .. } if !data.is_empty() => {
            // Chunked and close-delimited encoders take any length.
            let _ = encoder.encode(data, out);
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

    /// The head's status line, framing and `Connection` lines, the body's encoder, and
    /// whether the connection may persist, for a script's status and the client's request.
    #[test]
    fn head_output_frames_by_status_and_version() {
        #[rustfmt::skip]
        let cases = [
            // (status, location, http10, head_only) → (status line, framing line, encoder, keep-alive)
            ((None, None, false, false), ("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", Some(Encoder::Chunked), true)),
            ((None, None, true, false), ("HTTP/1.1 200 OK", "Connection: close", Some(Encoder::CloseDelimited), false)),
            ((None, None, false, true), ("HTTP/1.1 200 OK", "Transfer-Encoding: chunked", None, true)),
            ((None, Some("http://x/"), false, false), ("HTTP/1.1 302 Found", "Transfer-Encoding: chunked", Some(Encoder::Chunked), true)),
            ((Some(204), None, false, false), ("HTTP/1.1 204 No Content", "", None, true)),
            ((Some(304), None, true, false), ("HTTP/1.1 304 Not Modified", "Connection: keep-alive", None, true)),
            ((Some(404), None, false, false), ("HTTP/1.1 404 Not Found", "Transfer-Encoding: chunked", Some(Encoder::Chunked), true)),
        ];
        for ((status, location, http10, head_only), (line, framing, want_encoder, want_keep)) in cases {
            let head =
                CgiHead { status, content_type: None, location: location.map(str::to_string), fields: Vec::new() };
            let mut out = Vec::new();
            let output = head_output(&request(http10, head_only), &head, &mut out);
            let text = String::from_utf8(out).unwrap();
            let Output::Body { encoder, keep_alive, .. } = output else { panic!("{output:?}") };
            assert!(text.starts_with(&format!("{line}\r\n")), "{status:?} {http10}: {text}");
            assert!(text.ends_with("\r\n\r\n"), "{text}");
            assert!(framing.is_empty() || text.contains(&format!("\r\n{framing}\r\n")), "{status:?} {http10}: {text}");
            assert!(framing.starts_with("Transfer") || !text.contains("Transfer-Encoding"), "{text}");
            assert!(!text.contains("Content-Length"), "{text}");
            assert_eq!((encoder, keep_alive), (want_encoder, want_keep), "{status:?} {http10} {head_only}");
        }
    }
}
