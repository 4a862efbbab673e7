//! The request head parser.
//!
//! ```text
//! HTTP-message   = start-line CRLF *( field-line CRLF ) CRLF [ message-body ]  (RFC 9112 §2.1)
//! request-line   = method SP request-target SP HTTP-version                   (RFC 9112 §3)
//! request-target = origin-form / absolute-form / authority-form / asterisk-form
//! field-line     = field-name ":" OWS field-value OWS                         (RFC 9112 §5)
//! ```
//!
//! [`parse`] is zero-copy: the returned [`Request`] borrows the caller's buffer and header
//! slots. It returns [`Parsed::Partial`] until a whole head has arrived, enforcing the size
//! limits on partial input too, so a client cannot make the server buffer without bound.
//! httparse does the tokenising (and already refuses obs-fold, whitespace before a colon,
//! bare CR and control bytes in requests); this module is the parse driver and adds the
//! size limits. The rules it applies to the parsed fields live beside it: `framing` (RFC
//! 9112 §6, where the body ends, and §9.3, whether the connection persists) and `target`
//! (the request-target's forms and `Host`).
//!
//! Empty lines before the request line are skipped (RFC 9112 §2.2: a server "SHOULD
//! ignore at least one empty line"), at most [`MAX_EMPTY_LINES`] of them (Apache's
//! `DEFAULT_LIMIT_BLANK_LINES`), and the request line and its limit are measured from after
//! them, so they neither hide an over-long line nor leave the log an empty request line.

mod fields;
mod framing;
mod target;

use crate::error::ParseError;
pub use fields::{Field, Fields};
pub use framing::parse_content_length;
use framing::{body_framing, keep_alive};
use std::mem::MaybeUninit;
use target::{host, split_target};

/// Size limits on a request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The longest request line, in bytes, CRLF excluded (default 8 KiB; beyond → 414).
    pub max_request_line: usize,
    /// The longest head, request line and fields together (default 16 KiB; beyond → 431).
    pub max_head: usize,
    /// The most header fields (default 100; beyond → 431).
    pub max_headers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_request_line: 8 * 1024, max_head: 16 * 1024, max_headers: 100 }
    }
}

/// The most empty lines (CRLF or LF) accepted before a request line; more → 400.
pub const MAX_EMPTY_LINES: usize = 10;

/// The most header fields [`Limits::max_headers`] can allow.
pub const MAX_HEADER_SLOTS: usize = 256;

/// Storage for the parsed header fields: a fixed array, so parsing never allocates. It is
/// left uninitialised (httparse writes only the slots it fills), so making one per request
/// costs nothing, where zeroing 256 slots showed up as ~6% of a keep-alive request.
pub struct HeaderSlots<'b>([MaybeUninit<httparse::Header<'b>>; MAX_HEADER_SLOTS]);

impl<'b> HeaderSlots<'b> {
    pub fn new() -> Self {
        HeaderSlots([const { MaybeUninit::uninit() }; MAX_HEADER_SLOTS])
    }
}

impl Default for HeaderSlots<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// The outcome of feeding bytes to the parser.
#[derive(Debug)]
pub enum Parsed<T> {
    /// A whole head: the request and the number of bytes it took.
    Complete(T, usize),
    /// More bytes are needed.
    Partial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
    /// HTTP/2 (RFC 9113): a request built from its decoded field block, not parsed here.
    Http2,
}

/// The request method (RFC 9110 §9). Unregistered tokens are `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method<'b> {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Patch,
    Connect,
    Trace,
    Other(&'b str),
}

impl<'b> Method<'b> {
    /// The method named by `token` (case-sensitive, RFC 9110 §9.1).
    pub fn from_token(token: &'b str) -> Self {
        match token {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            "PATCH" => Method::Patch,
            "CONNECT" => Method::Connect,
            "TRACE" => Method::Trace,
            other => Method::Other(other),
        }
    }

    pub fn as_str(&self) -> &'b str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Patch => "PATCH",
            Method::Connect => "CONNECT",
            Method::Trace => "TRACE",
            Method::Other(s) => s,
        }
    }
}

/// The request-target, split into the parts the content side uses.
///
/// ```text
/// origin-form   = absolute-path [ "?" query ]
/// absolute-form = absolute-URI                     ; "http://host:port/path?query"
/// asterisk-form = "*"                              ; OPTIONS only
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'b> {
    /// The path, still percent-encoded, always starting with `/` (or `*`).
    pub path: &'b str,
    /// The query without its `?`, if any.
    pub query: Option<&'b str>,
    /// The authority of an absolute-form target.
    pub authority: Option<&'b str>,
}

impl<'b> Target<'b> {
    /// Splits a request-target in one of its forms; [`ParseError::Target`] if it is none.
    pub fn parse(raw: &'b str) -> Result<Self, ParseError> {
        split_target(raw)
    }
}

/// How the request's body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFraming {
    None,
    Length(u64),
    Chunked,
}

/// A parsed request head, borrowing the receive buffer.
#[derive(Debug)]
pub struct Request<'h, 'b> {
    pub method: Method<'b>,
    /// The request-target exactly as sent.
    pub raw_target: &'b str,
    pub target: Target<'b>,
    pub version: Version,
    pub fields: Fields<'h, 'b>,
    pub body: BodyFraming,
    /// Whether the client lets the connection persist after this exchange.
    pub keep_alive: bool,
    /// The Host field (or the absolute-form authority).
    pub host: Option<&'b str>,
    /// The request line, for the access log.
    pub request_line: &'b [u8],
}

impl<'h, 'b> Request<'h, 'b> {
    /// The value of the first field named `name` (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'b [u8]> {
        self.fields.get(name)
    }

    /// Like [`Request::header`], as a string if it is valid UTF-8.
    pub fn header_str(&self, name: &str) -> Option<&'b str> {
        self.header(name).and_then(|v| std::str::from_utf8(v).ok())
    }
}

/// Parses a request head from the start of `buf`.
///
/// On success returns the request and its head length; the body (if any) starts there.
pub fn parse<'h, 'b>(
    buf: &'b [u8],
    slots: &'h mut HeaderSlots<'b>,
    limits: &Limits,
) -> Result<Parsed<Request<'h, 'b>>, ParseError> {
    let skipped = empty_lines(buf)?;
    let line = &buf[skipped..];
    let line_end = line.iter().position(|&b| b == b'\n');
    let line_len = match line_end {
        Some(i) => i.saturating_sub(usize::from(i > 0 && line[i - 1] == b'\r')),
        None => line.len(),
    };
    if line_len > limits.max_request_line {
        return Err(ParseError::RequestLineTooLong);
    }
    let slots = &mut slots.0[..limits.max_headers.min(MAX_HEADER_SLOTS)];
    let mut req = httparse::Request::new(&mut []);
    let head_len = match req.parse_with_uninit_headers(buf, slots) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > limits.max_head => return Err(ParseError::HeadTooLarge),
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(e) => return Err(map_httparse(e, buf)),
    };
    if head_len > limits.max_head {
        return Err(ParseError::HeadTooLarge);
    }
    let (Some(method), Some(raw_target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(ParseError::Method);
    };
    let version = if minor == 0 { Version::Http10 } else { Version::Http11 };
    let headers: &'h [httparse::Header<'b>] = req.headers;
    let target = split_target(raw_target)?;
    let method = Method::from_token(method);
    if raw_target == "*" && method != Method::Options {
        return Err(ParseError::Target);
    }
    let body = body_framing(headers, version)?;
    let host = host(headers, version, target.authority)?;
    let keep_alive = keep_alive(headers, version);
    let request_line = &line[..line_len];
    let fields = Fields::slots(headers);
    let request = Request { method, raw_target, target, version, fields, body, keep_alive, host, request_line };
    Ok(Parsed::Complete(request, head_len))
}

/// The length of the empty lines (CRLF or a bare LF each) at the start of `buf`, or
/// [`ParseError::EmptyLines`] if there are more than [`MAX_EMPTY_LINES`].
fn empty_lines(buf: &[u8]) -> Result<usize, ParseError> {
    let mut at = 0;
    for _ in 0..=MAX_EMPTY_LINES {
        match &buf[at..] {
            [b'\r', b'\n', ..] => at += 2,
            [b'\n', ..] => at += 1,
            _ => return Ok(at),
        }
    }
    Err(ParseError::EmptyLines)
}

/// `buf` without the empty lines before its request line (at most [`MAX_EMPTY_LINES`]),
/// for logging a head that did not parse.
pub fn skip_empty_lines(buf: &[u8]) -> &[u8] {
    let mut rest = buf;
    for _ in 0..MAX_EMPTY_LINES {
        rest = match rest {
            [b'\r', b'\n', tail @ ..] | [b'\n', tail @ ..] => tail,
            _ => break,
        };
    }
    rest
}

fn map_httparse(e: httparse::Error, buf: &[u8]) -> ParseError {
    match e {
        httparse::Error::Token => ParseError::Method,
        httparse::Error::HeaderName => ParseError::HeaderName,
        httparse::Error::HeaderValue => ParseError::HeaderValue,
        httparse::Error::NewLine | httparse::Error::Status => ParseError::NewLine,
        httparse::Error::TooManyHeaders => ParseError::TooManyHeaders,
        httparse::Error::Version => version_error(buf),
    }
}

/// httparse takes only `HTTP/1.0` and `HTTP/1.1`. A well-formed other version
/// (`HTTP/2.0`, `HTTP/1.2`) ending a three-part request line is 505; anything else is a
/// malformed request line (400), such as a target with a space in it.
fn version_error(buf: &[u8]) -> ParseError {
    let buf = skip_empty_lines(buf);
    let line = buf.split(|&b| b == b'\n').next().unwrap_or(buf);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.split(|&b| b == b' ').count() != 3 {
        return ParseError::Version;
    }
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or(b"");
    match version {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] if major.is_ascii_digit() && minor.is_ascii_digit() => {
            ParseError::UnsupportedVersion
        }
        _ => ParseError::Version,
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
