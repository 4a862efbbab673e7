//! HTTP dates (IMF-fixdate, RFC 9110 §5.6.7) with a cache that formats once per second.

use std::time::{SystemTime, UNIX_EPOCH};

/// Formats `Date` values, reformatting only when the second changes.
#[derive(Debug, Default)]
pub struct DateCache {
    second: u64,
    text: String,
}

impl DateCache {
    /// The IMF-fixdate for `now`.
    pub fn get(&mut self, now: SystemTime) -> &str {
        let second = unix_seconds(now);
        if second != self.second || self.text.is_empty() {
            self.second = second;
            self.text = httpdate::fmt_http_date(now);
        }
        &self.text
    }
}

/// Whole seconds since the epoch (0 for times before it).
pub fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Formats a time as an IMF-fixdate.
pub fn format(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

/// Parses any of the three date formats a recipient must accept.
pub fn parse(value: &[u8]) -> Option<SystemTime> {
    httpdate::parse_http_date(std::str::from_utf8(value).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_and_parses_round_trip() {
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(format(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            assert_eq!(parse(text.as_bytes()), Some(t), "{text}");
        }
        assert_eq!(parse(b"yesterday"), None);
    }

    #[test]
    fn cache_changes_with_the_second() {
        let mut cache = DateCache::default();
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(cache.get(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(cache.get(t + Duration::from_millis(500)), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(cache.get(t + Duration::from_secs(1)), "Sun, 06 Nov 1994 08:49:38 GMT");
    }
}
