//! The header block a CGI script writes before its body (RFC 3875 §6).
//!
//! ```text
//! CGI-Response  = document-response | local-redir-response | client-redir-response
//! header-field  = CGI-field | other-field
//! CGI-field     = Content-Type | Location | Status
//! Status        = "Status:" status-code SP reason-phrase NL
//! NL            = LF | CR LF
//! ```
//!
//! [`parse_cgi_head`] is pure and incremental: feed it the script's output so far and it
//! answers `Partial` until the blank line has arrived. It is strict where a lenient
//! reading would let a script (or the client input it echoes) forge the server's head:
//! a field name must be a token, a value may hold no control byte but HTAB (so no bare
//! CR, no NUL), obs-fold is refused, and the block must name at least one CGI-field.
//! Fields that frame the message (`Content-Length`, `Transfer-Encoding`, `Connection`,
//! `Keep-Alive`, ...) are dropped: the server frames the body itself.

use crate::field::{is_field_name, is_field_value, trim_ows};
use crate::request::Parsed;

/// The largest header block accepted from a script, blank line included.
pub const MAX_CGI_HEAD: usize = 16 * 1024;
/// The most fields accepted from a script.
pub const MAX_CGI_FIELDS: usize = 100;

/// A script's header block, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CgiHead {
    /// `Status: 404 Not Found` → 404.
    pub status: Option<u16>,
    pub content_type: Option<String>,
    /// `Location`, either a local path (`/x`, a local redirect) or an absolute URI.
    pub location: Option<String>,
    /// Every other field, in order, to be passed through.
    pub fields: Vec<(String, String)>,
}

impl CgiHead {
    /// A local redirect: `Location` is an absolute path and nothing else was said.
    pub fn local_redirect(&self) -> Option<&str> {
        let loc = self.location.as_deref()?;
        let lone = self.status.is_none() && self.content_type.is_none() && self.fields.is_empty();
        (lone && loc.starts_with('/') && !loc.starts_with("//")).then_some(loc)
    }
}

/// Why a script's output is not a valid header block (the client gets 502).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgiHeadError {
    /// Longer than [`MAX_CGI_HEAD`], or more than [`MAX_CGI_FIELDS`] fields.
    TooLarge,
    /// A line without a colon, a name that is not a token, or obs-fold.
    Malformed,
    /// A control byte (CR, NUL, ...) inside a field value.
    ControlByte,
    /// `Status` is not a three-digit code from 100 to 599.
    BadStatus,
    /// No `Content-Type`, `Location` or `Status` field.
    NoCgiField,
}

/// Fields the server sets or that frame the connection: a script's copies are dropped.
const DROPPED: [&str; 7] =
    ["content-length", "transfer-encoding", "connection", "keep-alive", "date", "server", "trailer"];

/// Parses the header block at the front of `out`. On success, returns the head and how
/// many bytes it took (the body starts there).
pub fn parse_cgi_head(out: &[u8]) -> Result<Parsed<CgiHead>, CgiHeadError> {
    let Some(end) = find_blank_line(out) else {
        return if out.len() > MAX_CGI_HEAD { Err(CgiHeadError::TooLarge) } else { Ok(Parsed::Partial) };
    };
    if end > MAX_CGI_HEAD {
        return Err(CgiHeadError::TooLarge);
    }
    let mut head = CgiHead::default();
    let mut count = 0;
    for line in out[..end].split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        count += 1;
        if count > MAX_CGI_FIELDS {
            return Err(CgiHeadError::TooLarge);
        }
        field(&mut head, line)?;
    }
    if head.status.is_none() && head.content_type.is_none() && head.location.is_none() {
        return Err(CgiHeadError::NoCgiField);
    }
    Ok(Parsed::Complete(head, end))
}

/// The index just past the first empty line (`\n\n` or `\n\r\n`), if any.
fn find_blank_line(out: &[u8]) -> Option<usize> {
    if out.starts_with(b"\n") {
        return Some(1);
    }
    if out.starts_with(b"\r\n") {
        return Some(2);
    }
    let mut i = 0;
    while let Some(off) = out[i..].iter().position(|&b| b == b'\n') {
        let nl = i + off;
        match out.get(nl + 1..) {
            Some([b'\n', ..]) => return Some(nl + 2),
            Some([b'\r', b'\n', ..]) => return Some(nl + 3),
            _ => i = nl + 1,
        }
    }
    None
}

fn field(head: &mut CgiHead, line: &[u8]) -> Result<(), CgiHeadError> {
    let colon = line.iter().position(|&b| b == b':').ok_or(CgiHeadError::Malformed)?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if !is_field_name(name) {
        return Err(CgiHeadError::Malformed);
    }
    let value = trim_ows(value);
    if !is_field_value(value) {
        return Err(CgiHeadError::ControlByte);
    }
    let name = std::str::from_utf8(name).map_err(|_| CgiHeadError::Malformed)?;
    let value = String::from_utf8_lossy(value).into_owned();
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "status" => head.status = Some(status(&value)?),
        "content-type" => head.content_type = Some(value),
        "location" => head.location = Some(value),
        l if DROPPED.contains(&l) => {}
        _ => head.fields.push((name.to_string(), value)),
    }
    Ok(())
}

fn status(value: &str) -> Result<u16, CgiHeadError> {
    let code = value.split(' ').next().unwrap_or("");
    match code.parse::<u16>() {
        Ok(c) if code.len() == 3 && (100..=599).contains(&c) => Ok(c),
        _ => Err(CgiHeadError::BadStatus),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Outcome = Result<Option<(CgiHead, usize)>, CgiHeadError>;

    fn parsed(input: &str) -> Outcome {
        parse_cgi_head(input.as_bytes()).map(|p| match p {
            Parsed::Complete(h, n) => Some((h, n)),
            Parsed::Partial => None,
        })
    }

    #[test]
    fn cgi_heads_table() {
        use CgiHeadError::*;
        let ok = |s: Option<u16>, ct: Option<&str>, loc: Option<&str>, n: usize| {
            Ok(Some((
                CgiHead { status: s, content_type: ct.map(Into::into), location: loc.map(Into::into), fields: vec![] },
                n,
            )))
        };
        let cases: &[(&str, Outcome)] = &[
            ("Content-Type: text/plain\n\nbody", ok(None, Some("text/plain"), None, 26)),
            ("Content-Type: text/plain\r\n\r\nbody", ok(None, Some("text/plain"), None, 28)),
            ("Status: 404 Not Found\nContent-Type: a/b\n\n", ok(Some(404), Some("a/b"), None, 41)),
            ("Location: /other\n\n", ok(None, None, Some("/other"), 18)),
            ("Status: 201\n\n", ok(Some(201), None, None, 13)),
            ("Content-Type: text/plain\n", Ok(None)),
            ("", Ok(None)),
            ("\n\n", Err(NoCgiField)),
            ("X-Other: 1\n\n", Err(NoCgiField)),
            ("no colon here\n\n", Err(Malformed)),
            ("Bad Name: x\nContent-Type: a/b\n\n", Err(Malformed)),
            (" folded: x\n\n", Err(Malformed)),
            ("Content-Type: a\rInjected: 1\n\n", Err(ControlByte)),
            ("Content-Type: a\0b\n\n", Err(ControlByte)),
            ("Status: 99 Low\n\n", Err(BadStatus)),
            ("Status: 600\n\n", Err(BadStatus)),
            ("Status: 2000\n\n", Err(BadStatus)),
            ("Status: abc\n\n", Err(BadStatus)),
        ];
        for (input, want) in cases {
            assert_eq!(&parsed(input), want, "{input:?}");
        }
    }

    #[test]
    fn cgi_head_passes_other_fields_and_drops_framing() {
        let input = "Content-Type: a/b\nX-A: 1\nContent-Length: 5\nTransfer-Encoding: chunked\nSet-Cookie: c=d\n\n";
        let (head, _) = parsed(input).unwrap().unwrap();
        assert_eq!(head.fields, vec![("X-A".into(), "1".into()), ("Set-Cookie".into(), "c=d".into())]);
    }

    #[test]
    fn cgi_head_too_large() {
        let big = format!("Content-Type: a/b\nX: {}\n", "a".repeat(MAX_CGI_HEAD));
        assert_eq!(parsed(&big), Err(CgiHeadError::TooLarge));
        let many: String = (0..=MAX_CGI_FIELDS).map(|i| format!("X-{i}: 1\n")).collect::<String>() + "\n";
        assert_eq!(parsed(&many), Err(CgiHeadError::TooLarge));
    }

    #[test]
    fn local_redirect_only_when_location_is_alone() {
        let cases = [
            ("Location: /a\n\n", Some("/a")),
            ("Location: //evil.com/\n\n", None),
            ("Location: http://x/\n\n", None),
            ("Location: /a\nStatus: 302\n\n", None),
            ("Location: /a\nX-B: 1\n\n", None),
        ];
        for (input, want) in cases {
            let (head, _) = parsed(input).unwrap().unwrap();
            assert_eq!(head.local_redirect(), want, "{input:?}");
        }
    }
}
