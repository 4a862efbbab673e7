//! What a request's field block may say (RFC 9113 §8.2, §8.3): the rules that make a
//! request malformed, checked once on the decoded list, and [`RequestHead`], the request as
//! the caller receives it.

use crate::hpack::{Field, FieldList, Span};

/// A request's head as the client sent it, validated (RFC 9113 §8.3.1): every decoded
/// name and value in one buffer, followed by the regular fields' spans of it, so a request
/// costs one allocation however many fields it has.
///
/// INVARIANT: `method` is present; for CONNECT, `authority` is present and `scheme` and
/// `path` are absent; for every other method `scheme` and `path` are present and not
/// empty. Every regular field's name is lower case, has no colon, and is not one of the
/// connection-specific fields §8.2.2 forbids; `te`, if present, is `trailers`. `octets`
/// holds the names and values up to `table`, then [`SPAN_ROW`] octets per regular field;
/// every span lies below `table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    octets: Vec<u8>,
    table: usize,
    method: Span,
    scheme: Option<Span>,
    authority: Option<Span>,
    path: Option<Span>,
    /// The `content-length`, if sent: the DATA frames must add up to it (§8.1.1).
    pub content_length: Option<u64>,
}

/// A regular field's row in a [`RequestHead`]'s table: its name's span and its value's,
/// four `u32`s, little-endian.
const SPAN_ROW: usize = 16;

impl RequestHead {
    fn at(&self, (start, end): Span) -> &[u8] {
        &self.octets[start as usize..end as usize]
    }

    pub fn method(&self) -> &[u8] {
        self.at(self.method)
    }

    pub fn scheme(&self) -> Option<&[u8]> {
        self.scheme.map(|s| self.at(s))
    }

    pub fn authority(&self) -> Option<&[u8]> {
        self.authority.map(|s| self.at(s))
    }

    pub fn path(&self) -> Option<&[u8]> {
        self.path.map(|s| self.at(s))
    }

    /// The regular fields in order, `cookie` crumbs as separate fields (§8.2.3: the caller
    /// joins them with "; " before passing them to HTTP/1.1 code).
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.octets[self.table..].chunks_exact(SPAN_ROW).map(|row| {
            let word = |i: usize| u32::from_le_bytes([row[i], row[i + 1], row[i + 2], row[i + 3]]);
            (self.at((word(0), word(4))), self.at((word(8), word(12))))
        })
    }
}

/// Fields that have no meaning in HTTP/2 and make a message malformed (§8.2.2).
const CONNECTION_SPECIFIC: [&[u8]; 5] =
    [b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"];

/// The name rules of §8.2.1 (no byte 0x00-0x20, no upper case, nothing from 0x7f up, a
/// colon only as the first byte) and the value rules (no NUL, CR or LF, no leading or
/// trailing space or tab). An empty name is refused too: it is no field at all.
fn check_field(name: &[u8], value: &[u8]) -> Result<(), &'static str> {
    let Some((&first, rest)) = name.split_first() else { return Err("an empty field name") };
    let bad_name = |b: u8| b <= 0x20 || b.is_ascii_uppercase() || b >= 0x7f || b == b':';
    if (first != b':' && bad_name(first)) || rest.iter().any(|&b| bad_name(b)) {
        return Err("a field name with a byte RFC 9113 forbids (upper case, space, colon, control)");
    }
    if value.iter().any(|&b| matches!(b, 0 | b'\r' | b'\n')) {
        return Err("a field value with NUL, CR or LF");
    }
    if matches!(value.first(), Some(b' ' | b'\t')) || matches!(value.last(), Some(b' ' | b'\t')) {
        return Err("a field value with leading or trailing whitespace");
    }
    Ok(())
}

/// A regular field's own rules: not connection-specific, `te` only "trailers" (§8.2.2).
fn check_regular(name: &[u8], value: &[u8]) -> Result<(), &'static str> {
    if CONNECTION_SPECIFIC.contains(&name) {
        return Err("a connection-specific field");
    }
    if name == b"te" && value != b"trailers" {
        return Err("te other than \"trailers\"");
    }
    Ok(())
}

/// Validates a request's decoded field list into a [`RequestHead`]; the reason it is
/// malformed otherwise (a stream error of type PROTOCOL_ERROR, §8.1.1).
pub(crate) fn request(list: &FieldList) -> Result<RequestHead, &'static str> {
    let octets = list.octets();
    let at = |(start, end): Span| &octets[start as usize..end as usize];
    let (mut method, mut scheme, mut authority, mut path) = (None, None, None, None);
    let mut host = None;
    let mut content_length = None;
    // The names and values copied at their exact size, and the table after them: one
    // allocation, the list kept for the next.
    let mut head = Vec::with_capacity(octets.len() + SPAN_ROW * list.len());
    head.extend_from_slice(octets);
    let mut regular = 0;
    for (n, v) in list.spans() {
        let (name, value) = (at(n), at(v));
        check_field(name, value)?;
        if name.first() == Some(&b':') {
            if regular > 0 {
                return Err("a pseudo-header after a regular field");
            }
            let slot = match name {
                b":method" => &mut method,
                b":scheme" => &mut scheme,
                b":authority" => &mut authority,
                b":path" => &mut path,
                _ => return Err("an unknown or response pseudo-header"),
            };
            if slot.replace(v).is_some() {
                return Err("a pseudo-header twice");
            }
            continue;
        }
        check_regular(name, value)?;
        match name {
            b"content-length" => {
                let n = parse_length(value).ok_or("a content-length that is not a number")?;
                if content_length.is_some_and(|m| m != n) {
                    return Err("two content-lengths that differ");
                }
                content_length = Some(n);
            }
            b"host" if host.is_none() => host = Some(v),
            _ => {}
        }
        for word in [n.0, n.1, v.0, v.1] {
            head.extend_from_slice(&word.to_le_bytes());
        }
        regular += 1;
    }
    let method = method.ok_or("no :method")?;
    if at(method) == b"CONNECT" {
        if authority.is_none() || scheme.is_some() || path.is_some() {
            return Err("CONNECT without :authority, or with :scheme or :path");
        }
    } else if scheme.is_none() || !matches!(path, Some(p) if !at(p).is_empty()) {
        return Err("no :scheme, or no or an empty :path");
    } else if path.is_some_and(|p| at(p).iter().any(|&b| b <= b' ' || b == 0x7f)) {
        // A request-target has no whitespace or control character (RFC 9110 §7.1, RFC
        // 3986): HTTP/1.1's request line could not carry one either.
        return Err("a :path with whitespace or a control character");
    }
    if let (Some(host), Some(authority)) = (host, authority) {
        if at(host) != at(authority) {
            return Err("host differs from :authority");
        }
    }
    Ok(RequestHead { octets: head, table: octets.len(), method, scheme, authority, path, content_length })
}

/// Validates a trailer section (§8.1): the field rules, and no pseudo-header at all.
pub(crate) fn trailers(list: &FieldList) -> Result<(), &'static str> {
    for Field { name, value, .. } in list.iter() {
        check_field(name, value)?;
        if name.first() == Some(&b':') {
            return Err("a pseudo-header in trailers");
        }
        check_regular(name, value)?;
    }
    Ok(())
}

/// A content-length's digits as a number; `None` for anything else, or past u64.
fn parse_length(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    value.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

/// Fields a response must not carry in HTTP/2 (§8.2.2), which [`super::Conn::send_head`]
/// drops rather than send a malformed response: what an HTTP/1.1 head writer adds.
pub(crate) fn is_connection_specific(name: &[u8]) -> bool {
    CONNECTION_SPECIFIC.contains(&name)
}
