//! One request-response exchange, shared by every mode: bytes of a request in, a framed
//! response head and a body source out.
//!
//! This is the seam between the protocol and content layers and the modes. A mode owns
//! the connection and its buffer; it hands [`Exchanger::step`] the unparsed bytes and
//! gets back either "need more" or an [`Answer`]: the head (in the exchanger's buffer),
//! the body to send, whether to keep the connection, and how many bytes were consumed.
//! Modes never look inside requests and this module never touches a socket.

use crate::content::{Body, Response};
use crate::log;
use crate::server::{Server, SOFTWARE};
use spidey_http::date::DateCache;
use spidey_http::response::Framing;
use spidey_http::{parse, BodyFraming, HeadOptions, HeaderSlots, Method, Parsed, StatusCode};
use std::net::SocketAddr;
use std::time::SystemTime;

/// Per-worker scratch space, reused for every exchange.
#[derive(Default)]
pub struct Exchanger {
    dates: DateCache,
    /// The last answer's head.
    pub head: Vec<u8>,
}

/// A response ready to be written: `Exchanger::head` first, then `body`.
#[derive(Debug)]
pub struct Answer {
    /// The body to send (already empty for HEAD and bodiless statuses).
    pub body: Body,
    /// Whether the connection stays open afterwards.
    pub keep_alive: bool,
    /// Request bytes consumed from the buffer.
    pub consumed: usize,
}

/// What the exchanger made of the bytes so far.
#[derive(Debug)]
pub enum Step {
    /// Not a whole request head yet.
    Partial,
    Respond(Answer),
}

impl Exchanger {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses one request from the front of `buf` and answers it.
    ///
    /// `must_close` asks for `Connection: close` whatever the client wants (the request cap
    /// was reached, or the server is shutting down).
    pub fn step(&mut self, server: &Server, buf: &[u8], peer: SocketAddr, must_close: bool) -> Step {
        let mut slots = HeaderSlots::new();
        let (req, head_len) = match parse(buf, &mut slots, &server.limits) {
            Ok(Parsed::Partial) => return Step::Partial,
            Ok(Parsed::Complete(req, n)) => (req, n),
            Err(e) => {
                let response = Response::error(e.status(), &e.to_string());
                return Step::Respond(self.finish(server, response, &Meta::unparsed(buf, peer), true, buf.len()));
            }
        };
        let response = match req.body {
            BodyFraming::Length(n) if n > server.max_body => {
                Response::error(StatusCode::PAYLOAD_TOO_LARGE, "The request body is larger than this server accepts.")
            }
            _ => server.site.respond(&req),
        };
        // A body this server does not read would be taken for the next request: close instead.
        let close = must_close || !req.keep_alive || req.body != BodyFraming::None || response.close;
        let meta = Meta {
            peer,
            request_line: req.request_line,
            referer: req.header("referer"),
            user_agent: req.header("user-agent"),
            head_only: req.method == Method::Head,
            http10: req.version == spidey_http::Version::Http10,
        };
        Step::Respond(self.finish(server, response, &meta, close, head_len))
    }

    /// The answer to a request head that did not arrive in time: 408, then close.
    pub fn timeout(&mut self, server: &Server, buf: &[u8], peer: SocketAddr) -> Answer {
        let response = Response::error(StatusCode::REQUEST_TIMEOUT, "The request took too long to arrive.");
        self.finish(server, response, &Meta::unparsed(buf, peer), true, buf.len())
    }

    fn finish(&mut self, server: &Server, response: Response, meta: &Meta<'_>, close: bool, consumed: usize) -> Answer {
        let Response { status, fields, mut body, .. } = response;
        let framing = if status.forbids_body() { Framing::None } else { Framing::Length(body.len()) };
        if meta.head_only || status.forbids_body() {
            body = Body::Empty;
        }
        let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let date = self.dates.get(SystemTime::now());
        let opts = HeadOptions { date, server: SOFTWARE, framing, keep_alive: !close, http10: meta.http10 };
        self.head.clear();
        spidey_http::write_head(&mut self.head, status, &fields, &opts);
        if !server.quiet {
            log::record(&log::Record {
                peer: meta.peer,
                request_line: meta.request_line,
                status: status.0,
                bytes: body.len(),
                referer: meta.referer,
                user_agent: meta.user_agent,
            });
        }
        Answer { body, keep_alive: !close, consumed }
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
    /// For a request that never parsed: its first line (at most 256 bytes) stands in.
    fn unparsed(buf: &'b [u8], peer: SocketAddr) -> Self {
        let line = buf.split(|&b| b == b'\n').next().unwrap_or(b"");
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let request_line = &line[..line.len().min(256)];
        Meta { peer, request_line, referer: None, user_agent: None, head_only: false, http10: false }
    }
}
