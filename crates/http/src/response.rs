//! Status codes and the response head writer.
//!
//! ```text
//! status-line = HTTP-version SP status-code SP [ reason-phrase ]   (RFC 9112 §4)
//! ```
//! Spidey always answers `HTTP/1.1`, whatever minor version the client spoke (RFC 9110 §6.2).

use std::io::Write;

/// An HTTP status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StatusCode(pub u16);

impl StatusCode {
    pub const CONTINUE: StatusCode = StatusCode(100);
    pub const OK: StatusCode = StatusCode(200);
    pub const NO_CONTENT: StatusCode = StatusCode(204);
    pub const PARTIAL_CONTENT: StatusCode = StatusCode(206);
    pub const MOVED_PERMANENTLY: StatusCode = StatusCode(301);
    pub const FOUND: StatusCode = StatusCode(302);
    pub const NOT_MODIFIED: StatusCode = StatusCode(304);
    pub const BAD_REQUEST: StatusCode = StatusCode(400);
    pub const UNAUTHORIZED: StatusCode = StatusCode(401);
    pub const FORBIDDEN: StatusCode = StatusCode(403);
    pub const NOT_FOUND: StatusCode = StatusCode(404);
    pub const METHOD_NOT_ALLOWED: StatusCode = StatusCode(405);
    pub const REQUEST_TIMEOUT: StatusCode = StatusCode(408);
    pub const LENGTH_REQUIRED: StatusCode = StatusCode(411);
    pub const PAYLOAD_TOO_LARGE: StatusCode = StatusCode(413);
    pub const URI_TOO_LONG: StatusCode = StatusCode(414);
    pub const RANGE_NOT_SATISFIABLE: StatusCode = StatusCode(416);
    pub const EXPECTATION_FAILED: StatusCode = StatusCode(417);
    pub const TOO_MANY_REQUESTS: StatusCode = StatusCode(429);
    pub const REQUEST_HEADER_FIELDS_TOO_LARGE: StatusCode = StatusCode(431);
    pub const INTERNAL_SERVER_ERROR: StatusCode = StatusCode(500);
    pub const NOT_IMPLEMENTED: StatusCode = StatusCode(501);
    pub const BAD_GATEWAY: StatusCode = StatusCode(502);
    pub const SERVICE_UNAVAILABLE: StatusCode = StatusCode(503);
    pub const GATEWAY_TIMEOUT: StatusCode = StatusCode(504);
    pub const HTTP_VERSION_NOT_SUPPORTED: StatusCode = StatusCode(505);

    /// The reason phrase from RFC 9110 §15, or `""` for codes it does not name.
    pub fn reason(self) -> &'static str {
        match self.0 {
            100 => "Continue",
            200 => "OK",
            201 => "Created",
            202 => "Accepted",
            204 => "No Content",
            206 => "Partial Content",
            301 => "Moved Permanently",
            302 => "Found",
            303 => "See Other",
            304 => "Not Modified",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            411 => "Length Required",
            413 => "Content Too Large",
            414 => "URI Too Long",
            416 => "Range Not Satisfiable",
            417 => "Expectation Failed",
            429 => "Too Many Requests", // RFC 6585 §4
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            505 => "HTTP Version Not Supported",
            _ => "",
        }
    }

    /// Whether a response with this status never carries content (RFC 9110 §6.4.1).
    pub fn forbids_body(self) -> bool {
        self.0 < 200 || self.0 == 204 || self.0 == 304
    }
}

/// How the head frames what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked` (only to 1.1 clients).
    Chunked,
    /// Neither: the body ends when the connection closes.
    Close,
    /// No framing header at all (304, 1xx).
    None,
}

/// What the writer needs besides the status and the content's own fields.
#[derive(Debug, Clone, Copy)]
pub struct HeadOptions<'a> {
    /// The `Date` value, an IMF-fixdate (see [`crate::date::DateCache`]).
    pub date: &'a str,
    /// The `Server` value.
    pub server: &'a str,
    pub framing: Framing,
    /// Whether the connection stays open after this response.
    pub keep_alive: bool,
    /// Whether the client spoke HTTP/1.0 (then keep-alive must be announced).
    pub http10: bool,
}

/// Appends a complete response head, ending with the blank line, to `out`.
///
/// `fields` are the content's own header fields; the writer adds `Date`, `Server`,
/// `X-Content-Type-Options: nosniff` (every response: browsers must not second-guess the
/// declared media type of files a visitor could have placed in ROOT), the framing header
/// and `Connection`. Names and values are written as given: callers only
/// pass values they built themselves or validated, never raw client input. `fields` is
/// any sequence of pairs, so a caller with fields in several places chains them instead of
/// collecting them into a list first.
pub fn write_head<'f>(
    out: &mut Vec<u8>,
    status: StatusCode,
    fields: impl IntoIterator<Item = (&'f str, &'f str)>,
    opts: &HeadOptions<'_>,
) {
    out.extend_from_slice(b"HTTP/1.1 ");
    write_u64(out, u64::from(status.0));
    out.push(b' ');
    out.extend_from_slice(status.reason().as_bytes());
    out.extend_from_slice(b"\r\nServer: ");
    out.extend_from_slice(opts.server.as_bytes());
    out.extend_from_slice(b"\r\nDate: ");
    out.extend_from_slice(opts.date.as_bytes());
    out.extend_from_slice(b"\r\nX-Content-Type-Options: nosniff\r\n");
    for (name, value) in fields {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    match opts.framing {
        Framing::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            write_u64(out, n);
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::Close | Framing::None => {}
    }
    if !opts.keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if opts.http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

fn write_u64(out: &mut Vec<u8>, n: u64) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{n}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(status: StatusCode, framing: Framing, keep_alive: bool, http10: bool) -> String {
        let mut out = Vec::new();
        let opts = HeadOptions { date: "D", server: "S", framing, keep_alive, http10 };
        write_head(&mut out, status, [("Content-Type", "text/plain")], &opts);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn heads_table() {
        let cases = [
            (head(StatusCode::OK, Framing::Length(5), true, false),
             "HTTP/1.1 200 OK\r\nServer: S\r\nDate: D\r\nX-Content-Type-Options: nosniff\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n"),
            (head(StatusCode::NOT_FOUND, Framing::Length(0), false, false),
             "HTTP/1.1 404 Not Found\r\nServer: S\r\nDate: D\r\nX-Content-Type-Options: nosniff\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            (head(StatusCode::OK, Framing::Chunked, true, true),
             "HTTP/1.1 200 OK\r\nServer: S\r\nDate: D\r\nX-Content-Type-Options: nosniff\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"),
            (head(StatusCode::NOT_MODIFIED, Framing::None, true, false),
             "HTTP/1.1 304 Not Modified\r\nServer: S\r\nDate: D\r\nX-Content-Type-Options: nosniff\r\nContent-Type: text/plain\r\n\r\n"),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn statuses_without_body() {
        for (code, forbids) in [(100, true), (200, false), (204, true), (304, true), (404, false)] {
            assert_eq!(StatusCode(code).forbids_body(), forbids, "{code}");
        }
    }
}
