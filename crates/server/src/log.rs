//! The access log: one line per request in Combined Log Format, or one JSON object per
//! line with `--log-format json`, on stdout or in the `--access-log` file
//! ([`crate::log_sink`]).
//!
//! ```text
//! 127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET /a.gif HTTP/1.0" 200 2326 "http://ref/" "Mozilla/4.08"
//! {"time":"2000-10-10T13:55:36Z","remote_addr":"127.0.0.1","request":"GET /a.gif HTTP/1.0","status":200,"bytes":2326,"referer":"http://ref/","user_agent":"Mozilla/4.08"}
//! ```
//! A field the request did not send is `"-"` in the first and `null` in the second. Client
//! bytes can never forge a line: in Combined Log Format `"` and `\` are backslashed and
//! other bytes outside printable ASCII written `\xHH`; in JSON every byte outside
//! printable ASCII is `\u00HH` (one code point per byte, so invalid UTF-8 stays readable).
//! The client's address is printed as nginx's `$remote_addr` is: IPv6 without brackets
//! (`::1`), and an IPv4 client of a dual-stack `--addr ::` as its IPv4 address (`127.0.0.1`,
//! where nginx would print `::ffff:127.0.0.1`).
//!
//! Lines are gathered in a per-thread buffer and written with one `write` when the buffer
//! passes 16 KiB or when the caller is about to wait ([`flush`]: before a blocking read,
//! before `epoll_wait`, before a forked child exits), so a busy loop pays a memcpy per
//! request and a system call per batch.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::SystemTime;

const FLUSH_AT: usize = 16 * 1024;

/// How each line is written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Combined Log Format, as Apache and nginx write by default.
    #[default]
    Combined,
    /// One JSON object per line: time, remote_addr, request, status, bytes, referer,
    /// user_agent.
    Json,
}

/// The format every thread writes in: set once at start ([`set_format`]), before any
/// worker starts; 0 Combined, 1 JSON.
static FORMAT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Chooses the format of every line from now on (once, at start).
pub fn set_format(format: LogFormat) {
    FORMAT.store(u8::from(format == LogFormat::Json), std::sync::atomic::Ordering::Relaxed);
}

thread_local! {
    static BUFFER: RefCell<LogBuffer> = RefCell::new(LogBuffer::default());
}

#[derive(Default)]
struct LogBuffer {
    text: String,
    second: u64,
    stamp: String,
}

/// What one access-log line records.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    pub peer: SocketAddr,
    pub request_line: &'a [u8],
    pub status: u16,
    pub bytes: u64,
    pub referer: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
}

/// Appends a line for `r` to this thread's buffer.
pub fn record(r: &Record<'_>) {
    BUFFER.with(|b| {
        let mut b = b.borrow_mut();
        let now = SystemTime::now();
        let second = spidey_http::date::unix_seconds(now);
        let json = FORMAT.load(std::sync::atomic::Ordering::Relaxed) == 1;
        if second != b.second || b.stamp.is_empty() {
            b.second = second;
            b.stamp = if json { iso_time(second) } else { clf_time(second) };
        }
        let LogBuffer { text, stamp, .. } = &mut *b;
        if json {
            json_line(text, stamp, r);
        } else {
            let _ = write!(text, "{} - - [{stamp}] \"", r.peer.ip().to_canonical());
            escape_into(text, r.request_line);
            let _ = write!(text, "\" {} {} \"", r.status, r.bytes);
            escape_into(text, r.referer.unwrap_or(b"-"));
            text.push_str("\" \"");
            escape_into(text, r.user_agent.unwrap_or(b"-"));
            text.push_str("\"\n");
        }
        if text.len() >= FLUSH_AT {
            write_out(text);
        }
    });
}

/// Writes this thread's buffered lines.
pub fn flush() {
    BUFFER.with(|b| write_out(&mut b.borrow_mut().text));
}

fn write_out(text: &mut String) {
    if text.is_empty() {
        return;
    }
    crate::log_sink::write(text.as_bytes());
    text.clear();
}

/// Escapes client bytes for a quoted log field: `"` and `\` are backslashed, control
/// and non-ASCII bytes become `\xHH`, so a request can never forge a log line.
pub(crate) fn escape_into(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
}

/// One JSON line for `r`, its time `stamp` ([`iso_time`]).
fn json_line(text: &mut String, stamp: &str, r: &Record<'_>) {
    let _ = write!(text, "{{\"time\":\"{stamp}\",\"remote_addr\":\"{}\",\"request\":", r.peer.ip().to_canonical());
    json_string(text, Some(r.request_line));
    let _ = write!(text, ",\"status\":{},\"bytes\":{},\"referer\":", r.status, r.bytes);
    json_string(text, r.referer);
    text.push_str(",\"user_agent\":");
    json_string(text, r.user_agent);
    text.push_str("}\n");
}

/// `bytes` as a JSON string (`null` for none): `"` and `\` backslashed, every byte outside
/// printable ASCII `\u00HH`.
fn json_string(out: &mut String, bytes: Option<&[u8]>) {
    let Some(bytes) = bytes else { return out.push_str("null") };
    out.push('"');
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\u{b:04x}");
            }
        }
    }
    out.push('"');
}

/// `2000-10-10T13:55:36Z` for a Unix time (RFC 3339, UTC).
fn iso_time(secs: u64) -> String {
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `10/Oct/2000:13:55:36 +0000` for a Unix time, in UTC.
fn clf_time(secs: u64) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!("{d:02}/{}/{y}:{:02}:{:02}:{:02} +0000", MONTHS[(m - 1) as usize], rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JSON line parses as JSON whatever the client sent, and says what it sent.
    #[test]
    fn json_lines_table() {
        let peer: SocketAddr = "[::ffff:127.0.0.1]:9".parse().unwrap();
        // (request line, user agent) → (request, user_agent) as a JSON parser reads them
        type Case<'a> = (&'a [u8], Option<&'a [u8]>, &'a str, Option<&'a str>);
        let cases: [Case; 4] = [
            (b"GET / HTTP/1.1", Some(b"curl/8"), "GET / HTTP/1.1", Some("curl/8")),
            (b"GET /\"}\n{\"x\":1 HTTP/1.1", None, "GET /\"}\n{\"x\":1 HTTP/1.1", None),
            (
                b"GET /caf\xc3\xa9\\ HTTP/1.1",
                Some(b"\x00\x1b[31m"),
                "GET /caf\u{c3}\u{a9}\\ HTTP/1.1",
                Some("\u{0}\u{1b}[31m"),
            ),
            (b"GET /\xff HTTP/1.1", Some(b""), "GET /\u{ff} HTTP/1.1", Some("")),
        ];
        for (line, ua, request, user_agent) in cases {
            let mut text = String::new();
            let r = Record { peer, request_line: line, status: 404, bytes: 7, referer: None, user_agent: ua };
            json_line(&mut text, "2026-11-28T04:00:00Z", &r);
            assert!(text.ends_with('\n') && text.matches('\n').count() == 1, "one line: {text:?}");
            let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(v["request"], request, "{text}");
            assert_eq!(v["user_agent"].as_str(), user_agent, "{text}");
            assert_eq!((v["status"].as_u64(), v["bytes"].as_u64()), (Some(404), Some(7)));
            assert_eq!((v["remote_addr"].as_str(), v["referer"].is_null()), (Some("127.0.0.1"), true));
            assert_eq!(v["time"], "2026-11-28T04:00:00Z");
        }
        assert_eq!(iso_time(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn clf_times_table() {
        let cases = [
            (0, "01/Jan/1970:00:00:00 +0000"),
            (971_185_336, "10/Oct/2000:13:42:16 +0000"),
            (951_782_400, "29/Feb/2000:00:00:00 +0000"),
            (1_795_305_600, "22/Nov/2026:00:00:00 +0000"),
        ];
        for (secs, want) in cases {
            assert_eq!(clf_time(secs), want, "{secs}");
        }
    }

    #[test]
    fn escapes_forged_lines() {
        let cases: &[(&[u8], &str)] = &[
            (b"GET / HTTP/1.1", "GET / HTTP/1.1"),
            (b"a\"b\\c", "a\\\"b\\\\c"),
            (b"x\ny\r", "x\\x0ay\\x0d"),
            (b"\xff", "\\xff"),
        ];
        for (raw, want) in cases {
            let mut out = String::new();
            escape_into(&mut out, raw);
            assert_eq!(out, *want);
        }
    }
}
