//! The grammar of a header field (RFC 9110 §5), written once for every reader and writer
//! of fields: request parsing's helpers, the CGI head reader, the handler ABI's checker,
//! the operator's `--header` flags and the bench client's.
//!
//! ```text
//! field-name    = token                                            (§5.1)
//! token         = 1*tchar                                          (§5.6.2)
//! tchar         = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
//!                 "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
//! field-value   = *field-content                                   (§5.5)
//! field-content = field-vchar [ 1*( SP / HTAB / field-vchar ) field-vchar ]
//! field-vchar   = VCHAR / obs-text
//! ```
//!
//! A value as it arrives in a field line is surrounded by optional whitespace, which is
//! not part of it (RFC 9112 §5): readers trim it ([`trim_ows`]) before checking.

/// `tchar` (RFC 9110 §5.6.2).
pub fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `token = 1*tchar` (RFC 9110 §5.6.2): a method, a field name, a transfer coding.
pub fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty() && bytes.iter().all(|&b| is_tchar(b))
}

/// Whether `name` is a valid field name: a `token` (RFC 9110 §5.1).
pub fn is_field_name(name: &[u8]) -> bool {
    is_token(name)
}

/// Whether `value` is a field value (RFC 9110 §5.5): visible bytes and obs-text (0x80 and
/// up), spaces and tabs only between them, and no control byte (CR, LF, NUL, DEL...), so
/// it can never end the field or the head early. Empty is valid.
pub fn is_field_value(value: &[u8]) -> bool {
    match value {
        [] => true,
        [first, .., last] => is_field_vchar(*first) && is_field_vchar(*last) && value.iter().all(|&b| is_field_byte(b)),
        [only] => is_field_vchar(*only),
    }
}

/// Whether `b` may appear in a field value at all: SP, HTAB or a `field-vchar`; every
/// control byte but HTAB may not. For a reader that checks byte by byte (a chunked
/// trailer line, a quoted-string's `qdtext`, which allows the same bytes).
pub fn is_field_byte(b: u8) -> bool {
    b == b' ' || b == b'\t' || is_field_vchar(b)
}

/// `field-vchar = VCHAR / obs-text`.
fn is_field_vchar(b: u8) -> bool {
    b >= 0x21 && b != 0x7f
}

/// Whether a field line's name and value, as a sender gave them, make a valid field: the
/// name a token, the value a field value once its surrounding whitespace is trimmed.
pub fn is_field(name: &[u8], value: &[u8]) -> bool {
    is_field_name(name) && is_field_value(trim_ows(value))
}

/// Trims optional whitespace (SP and HTAB, RFC 9110 §5.6.3) from both ends.
pub fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte against the tchar list and the field-value bytes (SP, HTAB, VCHAR
    /// 0x21-0x7e, obs-text 0x80-0xff), so no byte outside them can ever pass.
    #[test]
    fn tchar_and_field_bytes_are_exactly_the_rfc_lists() {
        let listed: Vec<u8> = (b'0'..=b'9').chain(b'a'..=b'z').chain(b'A'..=b'Z').chain(*b"!#$%&'*+-.^_`|~").collect();
        let field: Vec<u8> = [b' ', b'\t'].into_iter().chain(0x21..=0x7e).chain(0x80..=0xff).collect();
        for b in 0..=255u8 {
            assert_eq!(is_tchar(b), listed.contains(&b), "tchar {b:#04x}");
            assert_eq!(is_field_byte(b), field.contains(&b), "field byte {b:#04x}");
            assert_eq!(is_field_value(&[b]), field.contains(&b) && b != b' ' && b != b'\t', "value {b:#04x}");
        }
    }

    #[test]
    fn token_and_field_name_table() {
        let cases: &[(&[u8], bool)] = &[
            (b"GET", true),
            (b"X-Frame-Options", true),
            (b"!#$%&'*+-.^_`|~09azAZ", true),
            (b"", false),
            (b"Bad Name", false),
            (b"X:Y", false),
            (b"Content-Length\t", false),
            (b" Host", false),
            (b"X(A)", false),
            (b"X\"A", false),
            (b"X/A", false),
            (b"X@A", false),
            (b"X[A]", false),
            (b"X{A}", false),
            (b"X,A", false),
            (b"X;A", false),
            (b"X=A", false),
            (b"X?A", false),
            (b"X\\A", false),
            (b"X\x7fA", false),
            (b"X\0A", false),
            (b"X\r\nA", false),
            (b"X\xc3\xa9", false),
            (b"\xff", false),
        ];
        for (name, want) in cases {
            assert_eq!(is_token(name), *want, "{:?}", String::from_utf8_lossy(name));
            assert_eq!(is_field_name(name), *want, "{:?}", String::from_utf8_lossy(name));
        }
    }

    /// (value, a field value as is, a field value once its surrounding OWS is trimmed).
    #[test]
    fn field_value_table() {
        let cases: &[(&[u8], bool, bool)] = &[
            (b"DENY", true, true),
            (b"max-age=60, public", true, true),
            (b"a\tb", true, true),
            (b"a  b", true, true),
            (b"", true, true),
            (b"x", true, true),
            (b"caf\xc3\xa9", true, true),
            (b"\x80\xff", true, true),
            (b" lead", false, true),
            (b"trail ", false, true),
            (b"\tlead", false, true),
            (b"trail\t", false, true),
            (b" ", false, true),
            (b" \t ", false, true),
            (b"a\r\nSet-Cookie: x", false, false),
            (b"a\nb", false, false),
            (b"a\rb", false, false),
            (b"a\0b", false, false),
            (b"\0", false, false),
            (b"a\x01b", false, false),
            (b"\x1b[31m", false, false),
            (b"a\x7fb", false, false),
            (b"a\x0bb", false, false),
            (b"a\x0cb", false, false),
            (b"x\r\n", false, false),
            (b" \r\n ", false, false),
        ];
        for (value, as_is, trimmed) in cases {
            let shown = String::from_utf8_lossy(value);
            assert_eq!(is_field_value(value), *as_is, "{shown:?}");
            assert_eq!(is_field_value(trim_ows(value)), *trimmed, "{shown:?} trimmed");
            assert_eq!(is_field(b"X-A", value), *trimmed, "{shown:?} as a field line's value");
            assert!(!is_field(b"X A", value), "{shown:?} under a bad name");
        }
    }

    #[test]
    fn trim_ows_table() {
        let cases: &[(&[u8], &[u8])] =
            &[(b"", b""), (b" \t ", b""), (b" a b\t", b"a b"), (b"\r a \n", b"\r a \n"), (b"a", b"a")];
        for (input, want) in cases {
            assert_eq!(trim_ows(input), *want, "{:?}", String::from_utf8_lossy(input));
        }
    }
}
