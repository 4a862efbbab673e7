//! Where a request's body ends and whether its connection persists: the framing rules of
//! RFC 9112 §6 that httparse leaves to its caller (Content-Length with Transfer-Encoding,
//! repeated or signed lengths, unknown or repeated codings, Transfer-Encoding on 1.0), and
//! the `Connection` tokens of §9.3.

use super::{BodyFraming, Version};
use crate::error::ParseError;
use crate::field::trim_ows;

/// RFC 9112 §6.3: Transfer-Encoding overrides nothing here — a request carrying both it and
/// Content-Length is refused outright, as are repeated or malformed lengths.
pub(super) fn body_framing(headers: &[httparse::Header<'_>], version: Version) -> Result<BodyFraming, ParseError> {
    let mut length = None;
    let mut codings = 0usize;
    let mut chunked_last = false;
    for h in headers {
        if h.name.eq_ignore_ascii_case("content-length") {
            if length.is_some() {
                return Err(ParseError::ContentLength);
            }
            length = Some(parse_content_length(h.value)?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            for coding in h.value.split(|&b| b == b',') {
                let coding = trim_ows(coding);
                if coding.is_empty() || chunked_last {
                    // An empty list element, or anything after `chunked` (including a second
                    // `chunked`): the framing is ambiguous.
                    return Err(ParseError::TransferEncoding);
                }
                codings += 1;
                chunked_last = coding.eq_ignore_ascii_case(b"chunked");
            }
        }
    }
    match (length, codings) {
        (Some(_), 1..) => Err(ParseError::LengthWithEncoding),
        (None, 1..) if version == Version::Http10 => Err(ParseError::TransferEncoding),
        (None, 1) if chunked_last => Ok(BodyFraming::Chunked),
        (None, 1..) => Err(ParseError::UnsupportedCoding),
        (Some(0), _) | (None, _) => Ok(BodyFraming::None),
        (Some(n), _) => Ok(BodyFraming::Length(n)),
    }
}

/// ```text
/// Content-Length = 1*DIGIT          (RFC 9110 §8.6)
/// ```
/// No sign, no list, no whitespace inside, at most 18 digits (so it fits an i64 too).
pub fn parse_content_length(value: &[u8]) -> Result<u64, ParseError> {
    let digits = trim_ows(value);
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(ParseError::ContentLength);
    }
    Ok(digits.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

pub(super) fn keep_alive(headers: &[httparse::Header<'_>], version: Version) -> bool {
    let mut close = false;
    let mut keep = false;
    for h in headers.iter().filter(|h| h.name.eq_ignore_ascii_case("connection")) {
        for token in h.value.split(|&b| b == b',').map(trim_ows) {
            close |= token.eq_ignore_ascii_case(b"close");
            keep |= token.eq_ignore_ascii_case(b"keep-alive");
        }
    }
    match version {
        _ if close => false,
        Version::Http11 | Version::Http2 => true,
        Version::Http10 => keep,
    }
}
