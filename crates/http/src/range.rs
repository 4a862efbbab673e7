//! The `Range` request header, single byte ranges only (RFC 9110 §14).
//!
//! ```text
//! Range             = ranges-specifier
//! ranges-specifier  = range-unit "=" range-set
//! range-set         = 1#range-spec
//! int-range         = first-pos "-" [ last-pos ]
//! suffix-range      = "-" suffix-length
//! ```
//!
//! A server MAY ignore `Range` (§14.2). Spidey ignores — answers 200 with the whole
//! representation — anything it does not serve exactly: other units, syntax errors,
//! reversed ranges and multiple ranges. So no request is ever answered with more bytes
//! than the file holds (CVE-2011-3192), and numbers too large for 64 bits saturate
//! instead of wrapping (nginx CVE-2017-7529, HTTP.sys CVE-2015-1635).

/// What to send for a representation of a given length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeOutcome {
    /// 200 with the whole representation.
    Full,
    /// 206 with bytes `start..=end` (`end` < length).
    Partial { start: u64, end: u64 },
    /// 416 with `Content-Range: bytes */length`.
    Unsatisfiable,
}

/// Decides what a `Range` header value asks of a representation of `len` bytes.
pub fn resolve(value: &[u8], len: u64) -> RangeOutcome {
    let Some(spec) = strip_unit(value) else {
        return RangeOutcome::Full;
    };
    if spec.contains(&b',') {
        return RangeOutcome::Full;
    }
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return RangeOutcome::Full;
    };
    let (first, last) = (&spec[..dash], &spec[dash + 1..]);
    match (digits(first), digits(last)) {
        // "-n": the last n bytes.
        (None, Some(n)) if first.is_empty() => {
            if n == 0 || len == 0 {
                RangeOutcome::Unsatisfiable
            } else {
                RangeOutcome::Partial { start: len.saturating_sub(n), end: len - 1 }
            }
        }
        // "a-": from a to the end.
        (Some(a), None) if last.is_empty() => satisfiable(a, u64::MAX, len),
        // "a-b".
        (Some(a), Some(b)) if a <= b => satisfiable(a, b, len),
        _ => RangeOutcome::Full,
    }
}

fn satisfiable(start: u64, end: u64, len: u64) -> RangeOutcome {
    if start >= len {
        RangeOutcome::Unsatisfiable
    } else {
        RangeOutcome::Partial { start, end: end.min(len - 1) }
    }
}

/// `bytes=`, the unit compared case-insensitively, whitespace around the set allowed.
fn strip_unit(value: &[u8]) -> Option<&[u8]> {
    let value = crate::field::trim_ows(value);
    let (unit, rest) = value.split_at_checked(6)?;
    unit.eq_ignore_ascii_case(b"bytes=").then(|| crate::field::trim_ows(rest))
}

/// `1*DIGIT` as a saturating u64: values past 2^64 become u64::MAX, never wrap.
fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0'))))
}

#[cfg(test)]
mod tests {
    use super::RangeOutcome::{Full, Partial, Unsatisfiable};
    use super::*;

    #[test]
    fn ranges_against_a_100_byte_file() {
        let cases: &[(&str, RangeOutcome)] = &[
            ("bytes=0-9", Partial { start: 0, end: 9 }),
            ("bytes=10-", Partial { start: 10, end: 99 }),
            ("bytes=-10", Partial { start: 90, end: 99 }),
            ("bytes=-1000", Partial { start: 0, end: 99 }),
            ("bytes=50-1000", Partial { start: 50, end: 99 }),
            ("BYTES=0-0", Partial { start: 0, end: 0 }),
            (" bytes= 5-6 ", Partial { start: 5, end: 6 }),
            ("bytes=99-99", Partial { start: 99, end: 99 }),
            ("bytes=0-18446744073709551615", Partial { start: 0, end: 99 }),
            ("bytes=0-99999999999999999999999999", Partial { start: 0, end: 99 }),
            ("bytes=100-", Unsatisfiable),
            ("bytes=100-200", Unsatisfiable),
            ("bytes=18446744073709551616-", Unsatisfiable),
            ("bytes=-0", Unsatisfiable),
            ("bytes=9-5", Full),
            ("bytes=0-1,2-3", Full),
            ("bytes=0-1,0-1,0-1", Full),
            ("bytes=-", Full),
            ("bytes=", Full),
            ("bytes=a-b", Full),
            ("bytes=1", Full),
            ("bytes=+1-2", Full),
            ("bytes=1--2", Full),
            ("items=0-1", Full),
            ("", Full),
        ];
        for (header, want) in cases {
            assert_eq!(resolve(header.as_bytes(), 100), *want, "{header}");
        }
    }

    #[test]
    fn every_range_of_an_empty_file_is_unsatisfiable() {
        for header in ["bytes=0-0", "bytes=-1", "bytes=0-"] {
            assert_eq!(resolve(header.as_bytes(), 0), Unsatisfiable, "{header}");
        }
    }

    #[test]
    fn hundreds_of_ranges_are_ignored() {
        let many = format!("bytes={}", vec!["0-99"; 500].join(","));
        assert_eq!(resolve(many.as_bytes(), 100), Full);
    }
}
