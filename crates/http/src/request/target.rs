//! The request-target's forms (RFC 9112 §3.2) and the `Host` field (RFC 9110 §7.2): which
//! targets are accepted, how they split into path, query and authority, and which host
//! values are well-formed.

use super::{Target, Version};
use crate::error::ParseError;
use crate::field::trim_ows;

pub(super) fn split_target(raw: &str) -> Result<Target<'_>, ParseError> {
    if raw == "*" {
        return Ok(Target { path: raw, query: None, authority: None });
    }
    let (authority, rest) = if raw.starts_with('/') {
        (None, raw)
    } else {
        let after_scheme = strip_prefix_ignore_case(raw, "http://")
            .or_else(|| strip_prefix_ignore_case(raw, "https://"))
            .ok_or(ParseError::Target)?;
        let slash = after_scheme.find(['/', '?']).unwrap_or(after_scheme.len());
        let (authority, rest) = after_scheme.split_at(slash);
        if authority.is_empty() || !valid_host(authority.as_bytes()) {
            return Err(ParseError::Target);
        }
        (Some(authority), if rest.is_empty() { "/" } else { rest })
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    if !path.starts_with('/') || rest.contains('#') {
        return Err(ParseError::Target);
    }
    Ok(Target { path, query, authority })
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

pub(super) fn host<'b>(
    headers: &[httparse::Header<'b>],
    version: Version,
    authority: Option<&'b str>,
) -> Result<Option<&'b str>, ParseError> {
    let mut found = None;
    for h in headers.iter().filter(|h| h.name.eq_ignore_ascii_case("host")) {
        if found.is_some() {
            return Err(ParseError::Host);
        }
        let value = trim_ows(h.value);
        if !value.is_empty() && !valid_host(value) {
            return Err(ParseError::Host);
        }
        found = Some(std::str::from_utf8(value).map_err(|_| ParseError::Host)?);
    }
    if found.is_none() && version == Version::Http11 {
        return Err(ParseError::Host);
    }
    Ok(authority.or(found))
}

/// ```text
/// Host     = uri-host [ ":" port ]                          (RFC 9110 §7.2)
/// uri-host = IP-literal / IPv4address / reg-name            (RFC 3986 §3.2.2)
/// port     = *DIGIT
/// ```
/// An IP-literal is checked loosely (hex digits, colons and dots, at most one `::`); a
/// reg-name takes unreserved, sub-delims and `%`. No userinfo, one port, digits only: the
/// httpd-tests http_strict rows `http://localhost:80x/`, `http://localhost::80/` and
/// `Host: 4714::abcd:8001` (tests/http_strict.rs) hold this.
fn valid_host(value: &[u8]) -> bool {
    let port = match value.strip_prefix(b"[") {
        Some(rest) => {
            let Some(close) = rest.iter().position(|&b| b == b']') else { return false };
            let literal = &rest[..close];
            let chars_ok = literal.iter().all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
            let elisions = literal.windows(2).filter(|w| w == b"::").count();
            if !chars_ok || !literal.contains(&b':') || elisions > 1 {
                return false;
            }
            &rest[close + 1..]
        }
        None => {
            let end = value.iter().position(|&b| b == b':').unwrap_or(value.len());
            if !value[..end].iter().all(|&b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b)) {
                return false;
            }
            &value[end..]
        }
    };
    match port {
        [] => true,
        [b':', digits @ ..] => digits.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}
