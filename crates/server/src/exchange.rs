//! One request-response exchange, shared by every mode: bytes of a request in, a response
//! [`Head`] and a body source out.
//!
//! This is the seam between the protocol and content layers and the modes. A mode owns
//! the connection and its buffer; it hands [`Exchanger::step`] the unparsed bytes and
//! gets back either "need more" or an [`Answer`]: the head as a value (status, fields,
//! date, length: no protocol's bytes; the connection encodes it when it stages the answer,
//! `modes/h1.rs` for HTTP/1.1), the body to send, whether to keep the connection, and how
//! many bytes were consumed.
//! Modes never look inside requests and this module never touches a socket.
//!
//! # Answers that are not ready at once
//!
//! Two kinds of answer need more from the driver than "write head, then body":
//!
//! - **`Answer::delay`** (`--delay`): wait that long before writing anything. Blocking
//!   drivers sleep; an event loop parks the connection on a timer and keeps serving others.
//! - **`Body::Cgi`**: the head is not known yet, so `Answer::head` is `None` and
//!   `Answer::consumed` covers the request head only. The content side's script
//!   ([`CgiRun`](crate::content::cgi::run::CgiRun)) only says what it did; the
//!   [`CgiResponse`] here turns that into a response written part by part to the
//!   connection's protocol (a [`PartWriter`]: HTTP/1.1's appends to the out bytes). The
//!   driver loops on [`CgiResponse::pump`], sending whatever the writer produced (an
//!   interim 100 Continue, the head, body bytes, the body's end, or a whole error
//!   response) before acting on the returned step:
//!   - `NeedBody`: give it the request bytes that follow the head (`feed_body` returns how
//!     many it took; advance the buffer by that), reading the socket when none are left;
//!   - `Wait`: wait for `stdout_fd()` readable or `stdin_fd()` (when `Some`) writable, or
//!     `deadline()`, then pump again; an event loop registers both fds (they are
//!     non-blocking) and pumps only once `out` has drained, which is its backpressure;
//!   - `LocalRedirect(path)`: drop the output and send `Exchanger::local_redirect`'s answer;
//!   - `Done`: the response is complete; keep the connection iff `cgi.keep_alive()`
//!     (`Answer::keep_alive` is only its upper bound).
//!
//!   A client that goes away, a write error, or shutdown past its grace: drop the output,
//!   which kills the script's process group and reaps it, and logs what was sent.
//!
//! Every response is counted and its access-log line recorded here ([`reply`]), a script's
//! included; the connection's protocol encodes heads and bodies (`h1.rs`), and the modes
//! move bytes. Nothing here writes a protocol's bytes.

mod cgi;

pub use crate::head::{Head, Length};
pub use cgi::{CgiResponse, CgiStep, InternalRequest, Ready, ScriptWatch};

use crate::content::{self, DecodedPath, Response};
use crate::log;
use crate::server::Server;
use spidey_http::date::DateCache;
use spidey_http::{
    parse, BodyFraming, Fields, HeaderSlots, Method, ParseError, Parsed, Request, StatusCode, Target, Version,
};
use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::Duration;

/// How the connection's protocol writes one response part by part: the exchange hands it a
/// script's answer (or the error page standing in for one) as a head, body bytes and an
/// end, in no protocol's bytes. HTTP/1.1's is [`crate::h1::H1Parts`].
pub trait PartWriter {
    /// An interim `100 Continue`.
    fn interim_continue(&mut self);
    /// The head. `keep_alive`: the connection may persist after this response as far as
    /// the exchange is concerned; `body`: body bytes follow (not for HEAD, nor a status
    /// without a body). Returns whether the connection may persist as the protocol's
    /// framing of this body allows (HTTP/1.0 with a streamed body: no).
    fn head(&mut self, head: &Head<'_>, keep_alive: bool, body: bool) -> bool;
    /// Body bytes, after a head that said a body follows.
    fn data(&mut self, bytes: &[u8]);
    /// The body is whole.
    fn end(&mut self);
}

/// Per-worker scratch space, reused for every exchange.
#[derive(Default)]
pub struct Exchanger {
    /// The `Date` value, formatted once a second; [`Head::date`] borrows it.
    dates: DateCache,
}

/// What a driver moves after [`Answer::head`]: the content side's [`content::Body`], with
/// a script wrapped in the [`CgiResponse`] that answers with its output.
pub type Body = content::Body<Box<CgiResponse>>;

/// A response ready to be staged: `head` first, then `body`.
#[derive(Debug)]
pub struct Answer<'h> {
    /// The response head: borrowing the [`Exchanger`] that made it (so it is staged before
    /// that exchanger answers again), owned once [`Answer::into_owned`] has taken it
    /// elsewhere. `None` for a script's answer, whose output brings its own head.
    pub head: Option<Head<'h>>,
    /// The body to send (already empty for HEAD and bodiless statuses).
    pub body: Body,
    /// Whether the connection stays open afterwards.
    pub keep_alive: bool,
    /// The request declared a body that this answer leaves unread, so the connection
    /// closes while its client may still be sending: the close must linger (RFC 9112
    /// §9.6), or the client's next bytes reset the connection, response and all.
    pub body_unread: bool,
    /// Request bytes consumed from the buffer.
    pub consumed: usize,
    /// Wait this long before writing the answer (`--delay`; see the module docs).
    pub delay: Option<Duration>,
}

impl Answer<'_> {
    /// The answer with its own copy of the head, free of the exchanger (for an answer made
    /// on `hybrid`'s pool and sent by a loop).
    pub fn into_owned(self) -> Answer<'static> {
        let Answer { head, body, keep_alive, body_unread, consumed, delay } = self;
        Answer { head: head.map(Head::into_owned), body, keep_alive, body_unread, consumed, delay }
    }
}

/// What the exchanger made of the bytes so far.
#[derive(Debug)]
pub enum Step<'h> {
    /// Not a whole request head yet.
    Partial,
    Respond(Answer<'h>),
    /// A whole head that [`Exchanger::step_routed`]'s [`Offloading`] sends to a worker
    /// pool: nothing was consumed or answered, and the caller runs [`Exchanger::step`] on
    /// the same bytes there.
    Offload,
}

/// Which requests an event loop hands to its worker pool rather than answering them itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offloading {
    /// Every request is answered where it was read (no pool).
    Never,
    /// (`event`, `uring` with `--basic-auth`) A password to hash ([`Site::must_hash`]).
    ///
    /// [`Site::must_hash`]: crate::content::Site::must_hash
    Passwords,
    /// (`hybrid`) Whatever may block or burn CPU ([`Site::is_heavy`]), passwords included.
    ///
    /// [`Site::is_heavy`]: crate::content::Site::is_heavy
    Heavy,
}

impl Offloading {
    /// Whether `req` (its path decoded as `path`) goes to the pool.
    pub(crate) fn takes(self, server: &Server, req: &Request<'_, '_>, path: &DecodedPath<'_>) -> bool {
        match self {
            Offloading::Never => false,
            Offloading::Passwords => server.site.must_hash(req),
            Offloading::Heavy => server.site.is_heavy(req, path),
        }
    }
}

impl Exchanger {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses one request from the front of `buf` and answers it.
    ///
    /// `must_close` asks for `Connection: close` whatever the client wants (the request cap
    /// was reached, or the server is shutting down).
    pub fn step<'h>(&'h mut self, server: &'h Server, buf: &[u8], peer: SocketAddr, must_close: bool) -> Step<'h> {
        self.step_routed(server, buf, peer, must_close, Offloading::Never)
    }

    /// [`Exchanger::step`], but a request that `offload` sends to a worker pool is not
    /// answered: [`Step::Offload`] says so, after one parse of the head.
    pub fn step_routed<'h>(
        &'h mut self,
        server: &'h Server,
        buf: &[u8],
        peer: SocketAddr,
        must_close: bool,
        offload: Offloading,
    ) -> Step<'h> {
        let mut slots = HeaderSlots::new();
        let (req, head_len) = match parse(buf, &mut slots, &server.limits) {
            Ok(Parsed::Partial) => return Step::Partial,
            Ok(Parsed::Complete(req, n)) => (req, n),
            Err(e) => return Step::Respond(self.parse_error(server, e, buf, peer)),
        };
        let path = DecodedPath::of(&req);
        if offload.takes(server, &req, &path) {
            return Step::Offload;
        }
        let mut answer = self.answer(server, &req, path, head_len, buf, peer, must_close, Redirect::Allowed);
        answer.delay = server.site.options().delay;
        Step::Respond(answer)
    }

    /// Answers `req`, a request its protocol decoded on its own (HTTP/2's field block)
    /// with its whole body in `body`: the answer [`Exchanger::step`] gives the same request
    /// parsed from HTTP/1.1 bytes, logged and counted the same way. Nothing is consumed
    /// from any buffer (`consumed` is 0) and no `--delay` is set.
    pub fn answer_request<'h>(
        &'h mut self,
        server: &'h Server,
        req: &Request<'_, '_>,
        body: &[u8],
        peer: SocketAddr,
    ) -> Answer<'h> {
        let path = DecodedPath::of(req);
        let mut answer = self.answer(server, req, path, 0, body, peer, false, Redirect::Allowed);
        answer.consumed = 0;
        answer
    }

    /// The answer to a request its protocol could decode but this server cannot take
    /// (`line` stands for it in the log): `status` with `why`, the stream or connection
    /// ending after it.
    pub fn refuse_request<'h>(
        &'h mut self,
        server: &'h Server,
        status: StatusCode,
        why: &str,
        line: &[u8],
        peer: SocketAddr,
    ) -> Answer<'h> {
        let mut answer = self.refuse(server, Response::error(status, why), line, peer);
        answer.consumed = 0;
        answer
    }

    /// The answer to a script's local redirect (`Location: /path` alone): the internal GET
    /// that [`CgiResponse::redirect_request`] made. The target may not redirect again.
    pub fn local_redirect<'h>(
        &'h mut self,
        server: &'h Server,
        internal: &InternalRequest,
        peer: SocketAddr,
    ) -> Answer<'h> {
        let Ok(target) = Target::parse(&internal.path) else {
            let response = Response::error(StatusCode::BAD_GATEWAY, "The script redirected to an invalid path.");
            return self.finish(server, response, &Meta::unparsed(&internal.request_line, peer), true, 0);
        };
        let fields = internal.fields();
        let req = Request {
            method: internal.method,
            raw_target: &internal.path,
            target,
            version: if internal.http10 { Version::Http10 } else { Version::Http11 },
            fields: Fields::listed(&fields),
            body: BodyFraming::None,
            keep_alive: internal.keep_alive,
            host: internal.host.as_deref(),
            request_line: &internal.request_line,
        };
        let path = DecodedPath::of(&req);
        self.answer(server, &req, path, 0, &[], peer, false, Redirect::Refused)
    }

    /// The answer to a head that did not parse: its error status, then close.
    fn parse_error<'h>(&'h mut self, server: &'h Server, e: ParseError, buf: &[u8], peer: SocketAddr) -> Answer<'h> {
        let response = Response::error(e.status(), &e.to_string());
        self.refuse(server, response, buf, peer)
    }

    /// Answers the parsed request `req` (its head `head_len` bytes of `buf`, its path
    /// decoded as `path`); the caller sets the `--delay`.
    #[allow(clippy::too_many_arguments)]
    fn answer<'h>(
        &'h mut self,
        server: &'h Server,
        req: &Request<'_, '_>,
        path: DecodedPath<'_>,
        head_len: usize,
        buf: &[u8],
        peer: SocketAddr,
        must_close: bool,
        redirect: Redirect,
    ) -> Answer<'h> {
        if let Some(cpu) = server.site.options().cpu_work {
            burn_cpu(cpu);
        }
        let response = match req.body {
            BodyFraming::Length(n) if n > server.max_body => {
                Response::error(StatusCode::PAYLOAD_TOO_LARGE, "The request body is larger than this server accepts.")
            }
            _ => server.site.respond_from(req, path, peer, whole_body(req, &buf[head_len..])),
        };
        let mut consumed = head_len;
        if let (false, BodyFraming::Length(n)) = (matches!(response.body, content::Body::Cgi(_)), req.body) {
            // A body that came whole with the head (a handler's, say) is skipped, so the
            // connection can stay open.
            if n > 0 && whole_body(req, &buf[head_len..]).len() as u64 == n {
                consumed += n as usize;
            }
        }
        let reads_body = matches!(response.body, content::Body::Cgi(_)) || consumed > head_len;
        // A body this server does not read would be taken for the next request: close instead.
        let body_unread = req.body != BodyFraming::None && !reads_body;
        let close = must_close || !req.keep_alive || body_unread || response.close;
        let meta = Meta {
            peer,
            request_line: req.request_line,
            referer: req.header("referer"),
            user_agent: req.header("user-agent"),
            head_only: req.method == Method::Head,
            http10: req.version == spidey_http::Version::Http10,
        };
        match response.body {
            content::Body::Cgi(run) => {
                // The script's head is written later, by its output: it takes along the
                // fields the content side set (CORS) and `--header`'s.
                let own = response.fields.into_iter().map(|(n, v)| (n.to_string(), v.to_string()));
                let headers = server.site.options().response_headers.iter().cloned();
                let extra = own.chain(response.extra_fields).chain(headers).collect();
                let may_redirect = redirect == Redirect::Allowed;
                let cgi = CgiResponse::new(run, &meta, req, !close, server.quiet, may_redirect, extra);
                let body = Body::Cgi(Box::new(cgi));
                Answer { head: None, body, keep_alive: !close, body_unread: false, consumed, delay: None }
            }
            _ => Answer { body_unread, ..self.finish(server, response, &meta, close, consumed) },
        }
    }

    /// The answer when `hybrid`'s worker pool is full: 503 with `Retry-After`, then close
    /// (the request, and any body it has, is not read further).
    pub fn busy<'h>(&'h mut self, server: &'h Server, buf: &[u8], peer: SocketAddr) -> Answer<'h> {
        let mut response =
            Response::error(StatusCode::SERVICE_UNAVAILABLE, "The server is too busy; try again shortly.");
        response.fields.push(("Retry-After", "1".into()));
        self.refuse(server, response, buf, peer)
    }

    /// The answer when `hybrid`'s pool did not answer in time: 504, then close.
    pub fn late<'h>(&'h mut self, server: &'h Server, buf: &[u8], peer: SocketAddr) -> Answer<'h> {
        let response = Response::error(StatusCode::GATEWAY_TIMEOUT, "The answer took too long.");
        self.refuse(server, response, buf, peer)
    }

    /// The answer to a request head that did not arrive in time: 408, then close.
    pub fn timeout<'h>(&'h mut self, server: &'h Server, buf: &[u8], peer: SocketAddr) -> Answer<'h> {
        let response = Response::error(StatusCode::REQUEST_TIMEOUT, "The request took too long to arrive.");
        self.refuse(server, response, buf, peer)
    }

    /// Answers the request at the front of `buf` (unparsed, or not read further) with
    /// `response`, taking all of `buf`; the connection then closes.
    fn refuse<'h>(&'h mut self, server: &'h Server, response: Response, buf: &[u8], peer: SocketAddr) -> Answer<'h> {
        self.finish(server, response, &Meta::unparsed(buf, peer), true, buf.len())
    }

    fn finish<'h>(
        &'h mut self,
        server: &'h Server,
        response: Response,
        meta: &Meta<'_>,
        close: bool,
        consumed: usize,
    ) -> Answer<'h> {
        let date = self.dates.get(crate::clock::wall());
        let headers = &server.site.options().response_headers;
        let (head, body) = reply(date, server.quiet, response, headers, meta);
        let body = body.whole().unwrap_or_else(|script| {
            // `answer` gives a script's answer to a `CgiResponse`; only error pages and
            // whole answers come here. Should one not, the script is dropped (killed and
            // reaped) and the answer has no body.
            drop(script);
            Body::Empty
        });
        Answer { head: Some(head), body, keep_alive: !close, body_unread: false, consumed, delay: None }
    }
}

/// Whether a script's answer may be a local redirect: not while answering one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    Allowed,
    Refused,
}

/// The head of `response` (with `Date`, its length and `--header`'s `headers`), counted
/// and its access-log line recorded unless `quiet`, and its body, emptied for HEAD and
/// bodiless statuses.
fn reply<'h>(
    date: &'h str,
    quiet: bool,
    response: Response,
    headers: &'h [(String, String)],
    meta: &Meta<'_>,
) -> (Head<'h>, content::Body) {
    let Response { status, fields, mut body, extra_fields, length_unknown, .. } = response;
    let length = if status.forbids_body() || (length_unknown && meta.head_only) {
        Length::Unstated
    } else {
        Length::Known(body.len())
    };
    if meta.head_only || status.forbids_body() {
        body = content::Body::Empty;
    }
    crate::metrics::answered(status.0, body.len());
    if !quiet {
        log_line(meta, status, body.len());
    }
    let (headers, date) = (Cow::Borrowed(headers), Cow::Borrowed(date));
    (Head { status, fields, extra: extra_fields, headers, date, length, http10: meta.http10 }, body)
}

/// Records the access-log line of a response of `bytes` body bytes to the request `meta`.
fn log_line(meta: &Meta<'_>, status: StatusCode, bytes: u64) {
    log::record(&log::Record {
        peer: meta.peer,
        request_line: meta.request_line,
        status: status.0,
        bytes,
        referer: meta.referer,
        user_agent: meta.user_agent,
    });
}

/// The request body if it is whole in `rest` (the bytes after the head), else empty.
fn whole_body<'b>(req: &spidey_http::Request<'_, '_>, rest: &'b [u8]) -> &'b [u8] {
    match req.body {
        BodyFraming::Length(n) if n as usize <= rest.len() => &rest[..n as usize],
        _ => &[],
    }
}

/// Burns `work` of this thread's CPU time in a busy loop (`--cpu-work`).
fn burn_cpu(work: Duration) {
    use rustix::time::{clock_gettime, ClockId};
    let now = || {
        let t = clock_gettime(ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    };
    let end = now() + work;
    let mut x = 0u64;
    while now() < end {
        for i in 0..1000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
}

/// What the log and the head writer need to know about the request.
struct Meta<'b> {
    peer: SocketAddr,
    request_line: &'b [u8],
    referer: Option<&'b [u8]>,
    user_agent: Option<&'b [u8]>,
    head_only: bool,
    http10: bool,
}

impl<'b> Meta<'b> {
    /// For a request that never parsed: its first line (at most 256 bytes) after any empty
    /// lines stands in.
    fn unparsed(buf: &'b [u8], peer: SocketAddr) -> Self {
        let buf = spidey_http::request::skip_empty_lines(buf);
        let line = buf.split(|&b| b == b'\n').next().unwrap_or(b"");
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let request_line = &line[..line.len().min(256)];
        Meta { peer, request_line, referer: None, user_agent: None, head_only: false, http10: false }
    }
}
