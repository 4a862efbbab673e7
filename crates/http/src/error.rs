//! Why a request head was refused, named by where parsing failed.

use crate::response::StatusCode;
use std::fmt;

/// Where a request head failed to parse or broke a rule. Each maps to one status code in
/// [`ParseError::status`]; after any of them the connection is closed, because the
/// framing of whatever follows can no longer be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The request line is longer than `Limits::max_request_line` → 414.
    RequestLineTooLong,
    /// The head is longer than `Limits::max_head` → 431.
    HeadTooLarge,
    /// More header fields than `Limits::max_headers` → 431.
    TooManyHeaders,
    /// More than `request::MAX_EMPTY_LINES` empty lines before the request line → 400.
    EmptyLines,
    /// The method is not a token → 400.
    Method,
    /// The request-target is malformed or of a form this server does not take → 400.
    Target,
    /// The HTTP-version is well formed but not 1.0 or 1.1 → 505.
    UnsupportedVersion,
    /// The HTTP-version is not of the form `HTTP/d.d` → 400.
    Version,
    /// A field name is not a token, is followed by whitespace before the colon, or a line
    /// is an obs-fold continuation → 400.
    HeaderName,
    /// A field value holds a control byte → 400.
    HeaderValue,
    /// A line ending is malformed (a bare CR, for instance) → 400.
    NewLine,
    /// `Content-Length` is repeated, malformed or too large → 400.
    ContentLength,
    /// `Transfer-Encoding` is malformed, repeats `chunked`, or is sent by a 1.0 client → 400.
    TransferEncoding,
    /// `Transfer-Encoding` names a coding this server does not implement → 501.
    UnsupportedCoding,
    /// Both `Content-Length` and `Transfer-Encoding` are present → 400.
    LengthWithEncoding,
    /// `Host` is missing from a 1.1 request, repeated, or malformed → 400.
    Host,
}

impl ParseError {
    /// The one mapping from parse failure to response status.
    pub fn status(self) -> StatusCode {
        match self {
            ParseError::RequestLineTooLong => StatusCode::URI_TOO_LONG,
            ParseError::HeadTooLarge | ParseError::TooManyHeaders => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ParseError::UnsupportedVersion => StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            ParseError::UnsupportedCoding => StatusCode::NOT_IMPLEMENTED,
            ParseError::EmptyLines
            | ParseError::Method
            | ParseError::Target
            | ParseError::Version
            | ParseError::HeaderName
            | ParseError::HeaderValue
            | ParseError::NewLine
            | ParseError::ContentLength
            | ParseError::TransferEncoding
            | ParseError::LengthWithEncoding
            | ParseError::Host => StatusCode::BAD_REQUEST,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            ParseError::RequestLineTooLong => "request line too long",
            ParseError::HeadTooLarge => "request head too large",
            ParseError::TooManyHeaders => "too many header fields",
            ParseError::EmptyLines => "too many empty lines before the request line",
            ParseError::Method => "invalid method",
            ParseError::Target => "invalid request target",
            ParseError::UnsupportedVersion => "unsupported HTTP version",
            ParseError::Version => "invalid HTTP version",
            ParseError::HeaderName => "invalid header field name",
            ParseError::HeaderValue => "invalid header field value",
            ParseError::NewLine => "invalid line ending",
            ParseError::ContentLength => "invalid Content-Length",
            ParseError::TransferEncoding => "invalid Transfer-Encoding",
            ParseError::UnsupportedCoding => "unsupported transfer coding",
            ParseError::LengthWithEncoding => "both Content-Length and Transfer-Encoding",
            ParseError::Host => "missing, repeated or invalid Host",
        };
        f.write_str(what)
    }
}

impl std::error::Error for ParseError {}
