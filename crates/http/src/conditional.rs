//! Validators and conditional requests (RFC 9110 §8.8, §13).
//!
//! ```text
//! ETag          = entity-tag
//! entity-tag    = [ weak ] opaque-tag        weak = %s"W/"
//! If-None-Match = "*" / #entity-tag
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A strong ETag for a file: modification time (seconds and nanoseconds) and size, in hex,
/// in the spirit of nginx's `"mtime-size"`.
pub fn etag(mtime: SystemTime, len: u64) -> String {
    use std::fmt::Write;
    let since = mtime.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    // Sized for the longest tag (two quotes, 16 + 8 + 16 hex digits, '.' and '-'), so
    // formatting never grows it.
    let mut tag = String::with_capacity(44);
    let _ = write!(tag, "\"{:x}.{:x}-{:x}\"", since.as_secs(), since.subsec_nanos(), len);
    tag
}

/// Whether a GET or HEAD may be answered 304 Not Modified (RFC 9110 §13.2.2).
///
/// `If-None-Match` wins when present; `If-Modified-Since` is consulted only without it,
/// and ignored when it is not a valid date or lies after `now` (a date in the future says
/// nothing about the file; Apache's `ap_meets_conditions` ignores it too). `now` reads the
/// clock, only when a date is compared with it.
pub fn not_modified(
    if_none_match: Option<&[u8]>,
    if_modified_since: Option<&[u8]>,
    etag: &str,
    mtime: SystemTime,
    now: impl FnOnce() -> SystemTime,
) -> bool {
    use crate::date::unix_seconds;
    match (if_none_match, if_modified_since) {
        (Some(inm), _) => none_match_hits(inm, etag),
        (None, Some(ims)) => match crate::date::parse(ims) {
            Some(since) if unix_seconds(since) > unix_seconds(now()) => false,
            Some(since) => unix_seconds(mtime) <= unix_seconds(since),
            None => false,
        },
        (None, None) => false,
    }
}

/// Weak comparison of each listed tag with ours; `*` matches any current representation.
fn none_match_hits(header: &[u8], etag: &str) -> bool {
    let ours = opaque(etag.as_bytes());
    header.split(|&b| b == b',').map(crate::field::trim_ows).any(|tag| tag == b"*" || opaque(tag) == ours)
}

fn opaque(tag: &[u8]) -> &[u8] {
    tag.strip_prefix(b"W/").unwrap_or(tag)
}

/// Whether a `Range` may be honoured given `If-Range` (RFC 9110 §13.1.5): the validator
/// must be our strong ETag exactly, or a date equal to the modification time that is a
/// strong validator.
///
/// A date is strong only when the modification time lies at least one second before
/// `now` (the response's `Date`), compared as the two header values are, in whole seconds
/// (§8.8.2.2, as Apache's `ap_condition_if_range` does): a file modified within the
/// current second may change again within it, and a range of the new version spliced onto
/// the old would look whole. Otherwise the whole representation is sent (a 200). `now`
/// reads the clock, only when a date is compared with it.
pub fn if_range_holds(
    if_range: Option<&[u8]>,
    etag: &str,
    mtime: SystemTime,
    now: impl FnOnce() -> SystemTime,
) -> bool {
    let Some(value) = if_range.map(crate::field::trim_ows) else {
        return true;
    };
    if value.starts_with(b"\"") {
        return value == etag.as_bytes();
    }
    if value.starts_with(b"W/") {
        return false;
    }
    use crate::date::unix_seconds;
    let strong = unix_seconds(now()) > unix_seconds(mtime);
    strong && crate::date::parse(value).is_some_and(|d| unix_seconds(d) == unix_seconds(mtime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditional_table() {
        let mtime = UNIX_EPOCH + Duration::new(784_111_777, 5);
        let tag = etag(mtime, 100);
        assert_eq!(tag, "\"2ebc98a1.5-64\"");
        let before = "Sat, 05 Nov 1994 08:49:37 GMT";
        let same = "Sun, 06 Nov 1994 08:49:37 GMT";
        let later = "Mon, 07 Nov 1994 08:49:37 GMT";
        let now = UNIX_EPOCH + Duration::new(784_111_777 + 3 * 86_400, 0);
        let future = "Fri, 01 Jan 2100 00:00:00 GMT";
        let tomorrow = "Thu, 10 Nov 1994 08:49:37 GMT";
        let weak = format!("W/{tag}");
        let listed = format!("\"x\", {tag}");
        let cases: &[(Option<&str>, Option<&str>, bool)] = &[
            (Some(&tag), None, true),
            (Some(&weak), None, true),
            (Some(&listed), None, true),
            (Some("*"), None, true),
            (Some("\"other\""), None, false),
            (Some("\"other\""), Some(later), false),
            (None, Some(same), true),
            (None, Some(later), true),
            (None, Some(before), false),
            (None, Some(future), false),
            (None, Some(tomorrow), false),
            (Some(&tag), Some(future), true),
            (None, Some("garbage"), false),
            (None, None, false),
        ];
        for (inm, ims, want) in cases {
            let got = not_modified(inm.map(str::as_bytes), ims.map(str::as_bytes), &tag, mtime, || now);
            assert_eq!(got, *want, "{inm:?} {ims:?}");
        }
    }

    #[test]
    fn if_range_table() {
        let mtime = UNIX_EPOCH + Duration::new(784_111_777, 500_000_000);
        let tag = etag(mtime, 1);
        let weak = format!("W/{tag}");
        let later = UNIX_EPOCH + Duration::new(784_111_778, 0);
        let same_second = UNIX_EPOCH + Duration::new(784_111_777, 900_000_000);
        let earlier = UNIX_EPOCH + Duration::new(784_111_000, 0);
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        // (If-Range, now) → whether the range is honoured
        let cases: &[(Option<&str>, SystemTime, bool)] = &[
            (None, later, true),
            (Some(&tag), later, true),
            (Some(&tag), same_second, true),
            (Some(&weak), later, false),
            (Some("\"x\""), later, false),
            (Some(date), later, true),
            (Some("Mon, 07 Nov 1994 08:49:37 GMT"), later, false),
            // A date is strong only a whole second after the modification: not within
            // its second, nor for a file modified "in the future" (clock skew, touch -d).
            (Some(date), same_second, false),
            (Some(date), earlier, false),
        ];
        for (value, now, want) in cases {
            assert_eq!(if_range_holds(value.map(str::as_bytes), &tag, mtime, || *now), *want, "{value:?} at {now:?}");
        }
    }
}
