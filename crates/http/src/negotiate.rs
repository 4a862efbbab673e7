//! Proactive negotiation: `Accept-Encoding` (RFC 9110 §12.5.3) and `Accept` (§12.5.1).
//!
//! ```text
//! Accept-Encoding = #( codings [ weight ] )      codings = content-coding / "identity" / "*"
//! Accept          = #( media-range [ weight ] )  media-range = ( "*/*" / type "/*" / type "/" subtype ) parameters
//! weight          = OWS ";" OWS "q=" qvalue
//! qvalue          = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
//! ```
//!
//! Weights are kept in thousandths (`1000` is `q=1`). An element whose `q` is malformed
//! is ignored, as if it were not listed. Codings: an explicit entry wins, then `*`, else
//! the coding is not acceptable. `identity` is acceptable unless `identity;q=0`, or `*;q=0`
//! with no entry for `identity`. No header at all means identity only here: a server may
//! send any coding then, but a client that sent nothing may not decode any.

use crate::field::trim_ows;

/// A content coding Spidey can send, in the server's order of preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coding {
    Br,
    Zstd,
    Gzip,
}

impl Coding {
    /// Every coding, best first: the tie-break when the client weighs several alike.
    pub const PREFERENCE: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    /// The token in `Content-Encoding`.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Br => "br",
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }

    /// The file name suffix of a precompressed sibling (`app.js.br`).
    pub fn extension(self) -> &'static str {
        match self {
            Coding::Br => ".br",
            Coding::Zstd => ".zst",
            Coding::Gzip => ".gz",
        }
    }

    fn matches(self, token: &[u8]) -> bool {
        token.eq_ignore_ascii_case(self.token().as_bytes())
            || (self == Coding::Gzip && token.eq_ignore_ascii_case(b"x-gzip"))
    }
}

/// The weight given by a `q` parameter value, in thousandths; `None` if malformed.
pub fn qvalue(v: &[u8]) -> Option<u16> {
    let (int, frac) = match v.iter().position(|&b| b == b'.') {
        Some(dot) => (&v[..dot], &v[dot + 1..]),
        None => (v, &b""[..]),
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + frac.get(i).map_or(0, |d| u16::from(d - b'0'));
    }
    match int {
        b"0" => Some(thousandths),
        b"1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// The elements of a list header: each element's first token (lowercase comparison is
/// the caller's) and its weight, malformed weights left out.
fn elements(header: &[u8]) -> impl Iterator<Item = (&[u8], u16)> {
    header.split(|&b| b == b',').filter_map(|element| {
        let mut parts = element.split(|&b| b == b';');
        let token = trim_ows(parts.next()?);
        if token.is_empty() {
            return None;
        }
        let mut weight = 1000;
        for param in parts {
            let param = trim_ows(param);
            if let Some(v) = param.strip_prefix(b"q=").or_else(|| param.strip_prefix(b"Q=")) {
                weight = qvalue(v)?;
            }
        }
        Some((token, weight))
    })
}

/// The weight of an explicit entry for which `hit` holds (the first one), if any.
fn weight_of(header: &[u8], hit: impl Fn(&[u8]) -> bool) -> Option<u16> {
    elements(header).find(|(t, _)| hit(t)).map(|(_, w)| w)
}

/// How much the client wants `coding` (0: not acceptable).
pub fn coding_weight(accept_encoding: Option<&[u8]>, coding: Coding) -> u16 {
    let Some(h) = accept_encoding else { return 0 };
    weight_of(h, |t| coding.matches(t)).or_else(|| weight_of(h, |t| t == b"*")).unwrap_or(0)
}

/// How much the client wants no coding at all (0: it refuses identity).
pub fn identity_weight(accept_encoding: Option<&[u8]>) -> u16 {
    stated_identity_weight(accept_encoding).unwrap_or(1000)
}

/// The weight the header gives identity, by name or through `*`, if it gives one.
fn stated_identity_weight(accept_encoding: Option<&[u8]>) -> Option<u16> {
    let h = accept_encoding?;
    weight_of(h, |t| t.eq_ignore_ascii_case(b"identity")).or_else(|| weight_of(h, |t| t == b"*"))
}

/// The coding to send among those `available`, or `None` for identity: the acceptable
/// coding with the highest weight (ties go to [`Coding::PREFERENCE`]), if it weighs at
/// least as much as identity where the header weighs identity (by name or `*`); identity
/// left unstated is acceptable but never preferred (`gzip;q=0.5` alone means gzip). When nothing is acceptable, not even identity, the answer
/// is `None` too: the caller sends identity anyway (RFC 9110 §12.5.3 allows that, and a
/// 406 would help no one).
pub fn choose_coding(accept_encoding: Option<&[u8]>, available: impl Fn(Coding) -> bool) -> Option<Coding> {
    accept_encoding?;
    let mut best: Option<(Coding, u16)> = None;
    for coding in Coding::PREFERENCE {
        let w = coding_weight(accept_encoding, coding);
        if w > 0 && best.map_or(true, |(_, b)| w > b) && available(coding) {
            best = Some((coding, w));
        }
    }
    let identity = stated_identity_weight(accept_encoding);
    best.filter(|&(_, w)| identity.map_or(true, |i| w >= i)).map(|(c, _)| c)
}

/// How much an `Accept` header wants `kind/subtype`: the most specific matching range
/// wins (`kind/subtype`, then `kind/*`, then `*/*`); no header accepts everything.
pub fn media_weight(accept: Option<&[u8]>, kind: &str, subtype: &str) -> u16 {
    let Some(h) = accept else { return 1000 };
    let mut best: Option<(u8, u16)> = None;
    for (range, w) in elements(h) {
        let Some(slash) = range.iter().position(|&b| b == b'/') else { continue };
        let (t, s) = (&range[..slash], &range[slash + 1..]);
        let specificity = match (t, s) {
            (b"*", b"*") => 0,
            (t, b"*") if t.eq_ignore_ascii_case(kind.as_bytes()) => 1,
            (t, s) if t.eq_ignore_ascii_case(kind.as_bytes()) && s.eq_ignore_ascii_case(subtype.as_bytes()) => 2,
            _ => continue,
        };
        if best.map_or(true, |(b, _)| specificity > b) {
            best = Some((specificity, w));
        }
    }
    best.map_or(0, |(_, w)| w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qvalue_table() {
        let cases: &[(&str, Option<u16>)] = &[
            ("1", Some(1000)),
            ("1.", Some(1000)),
            ("1.000", Some(1000)),
            ("1.001", None),
            ("0", Some(0)),
            ("0.5", Some(500)),
            ("0.25", Some(250)),
            ("0.001", Some(1)),
            ("0.0001", None),
            ("2", None),
            ("-1", None),
            ("0.x", None),
            ("", None),
            (".5", None),
        ];
        for (v, want) in cases {
            assert_eq!(qvalue(v.as_bytes()), *want, "{v:?}");
        }
    }

    #[test]
    fn choose_coding_table() {
        use Coding::*;
        let all = |_: Coding| true;
        let cases: &[(Option<&str>, Option<Coding>)] = &[
            (None, None),
            (Some(""), None),
            (Some("gzip"), Some(Gzip)),
            (Some("GZIP"), Some(Gzip)),
            (Some("x-gzip"), Some(Gzip)),
            (Some("gzip, deflate, br, zstd"), Some(Br)),
            (Some("gzip;q=1, br;q=0.5"), Some(Gzip)),
            (Some("br;q=0, gzip"), Some(Gzip)),
            (Some("gzip;q=0"), None),
            (Some("gzip ; q=0.8 , zstd;q=0.9"), Some(Zstd)),
            (Some("identity"), None),
            (Some("*"), Some(Br)),
            (Some("*;q=0.5, gzip"), Some(Gzip)),
            (Some("*;q=0"), None),
            (Some("gzip;q=0.5, identity"), None),
            (Some("gzip;q=0.5, identity;q=0.5"), Some(Gzip)),
            (Some("gzip;q=0.5, identity;q=0"), Some(Gzip)),
            (Some("gzip;q=2, br"), Some(Br)),
            (Some("gzip;q=0.5"), Some(Gzip)),
            (Some("gzip;q=bogus"), None),
            (Some("deflate, compress"), None),
            (Some(",,gzip,,"), Some(Gzip)),
        ];
        for (header, want) in cases {
            assert_eq!(choose_coding(header.map(str::as_bytes), all), *want, "{header:?}");
        }
        let only_gzip = |c: Coding| c == Gzip;
        assert_eq!(choose_coding(Some(b"br, gzip;q=0.1"), only_gzip), Some(Gzip));
        assert_eq!(choose_coding(Some(b"br"), only_gzip), None);
    }

    #[test]
    fn identity_weight_table() {
        let cases: &[(Option<&str>, u16)] = &[
            (None, 1000),
            (Some("gzip"), 1000),
            (Some("identity;q=0"), 0),
            (Some("*;q=0"), 0),
            (Some("*;q=0, identity"), 1000),
            (Some("identity;q=0.3"), 300),
        ];
        for (header, want) in cases {
            assert_eq!(identity_weight(header.map(str::as_bytes)), *want, "{header:?}");
        }
    }

    #[test]
    fn media_weight_table() {
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        let cases: &[(Option<&str>, (&str, &str), u16)] = &[
            (None, ("application", "json"), 1000),
            (Some("application/json"), ("application", "json"), 1000),
            (Some("application/json"), ("text", "html"), 0),
            (Some("Application/JSON;charset=utf-8"), ("application", "json"), 1000),
            (Some(browser), ("text", "html"), 1000),
            (Some(browser), ("application", "json"), 800),
            (Some("*/*"), ("application", "json"), 1000),
            (Some("text/*;q=0.3, text/html;q=0.7"), ("text", "html"), 700),
            (Some("text/*;q=0.3, text/html;q=0.7"), ("text", "plain"), 300),
            (Some("application/json;q=0, */*"), ("application", "json"), 0),
            (Some("nonsense"), ("text", "html"), 0),
        ];
        for (header, (kind, sub), want) in cases {
            assert_eq!(media_weight(header.map(str::as_bytes), kind, sub), *want, "{header:?} {kind}/{sub}");
        }
    }
}
