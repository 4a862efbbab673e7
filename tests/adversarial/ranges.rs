//! Ranges: no Range header, however hostile, gets more bytes than the file holds.

use super::table::get;
use crate::common::{head_field, status_of, Fixture, Spidey};

/// `Range` value against digits.txt (10 bytes) → status, body.
fn range_cases() -> Vec<(String, u16, &'static [u8])> {
    let hundreds = format!("bytes={}", vec!["0-9"; 300].join(","));
    let overlapping_suffixes = format!("bytes={}", vec!["-10"; 300].join(","));
    vec![
        ("bytes=0-0".into(), 206, b"0"),
        ("bytes=2-5".into(), 206, b"2345"),
        ("bytes=-3".into(), 206, b"789"),
        ("bytes=-100".into(), 206, b"0123456789"),
        ("bytes=5-".into(), 206, b"56789"),
        ("bytes=9-9".into(), 206, b"9"),
        ("bytes=-0".into(), 416, b""),
        ("bytes=10-".into(), 416, b""),
        ("bytes=10-20".into(), 416, b""),
        ("bytes=5-2".into(), 200, b"0123456789"),
        ("bytes=0-5,3-8".into(), 200, b"0123456789"),
        ("bytes=0-0,0-0".into(), 200, b"0123456789"),
        ("bytes=0-18446744073709551615".into(), 206, b"0123456789"),
        ("bytes=0-18446744073709551616".into(), 206, b"0123456789"),
        ("bytes=0-99999999999999999999999999999999".into(), 206, b"0123456789"),
        ("bytes=18446744073709551616-".into(), 416, b""),
        ("bytes=18446744073709551615-18446744073709551616".into(), 416, b""),
        ("bytes=-18446744073709551616".into(), 206, b"0123456789"),
        ("bytes=99999999999999999999-1".into(), 200, b"0123456789"),
        ("bytes=1-2-3".into(), 200, b"0123456789"),
        ("bytes=0x1-0x2".into(), 200, b"0123456789"),
        ("bytes=-".into(), 200, b"0123456789"),
        ("lines=0-1".into(), 200, b"0123456789"),
        (hundreds, 200, b"0123456789"),
        (overlapping_suffixes, 200, b"0123456789"),
    ]
}

fn hostile_ranges(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &["--quiet"]);
    let mut failures = Vec::new();
    for (range, status, body) in range_cases() {
        let (head, got) = get(&server, "/digits.txt", &format!("Range: {range}\r\n"));
        let short = &range[..range.len().min(60)];
        if status_of(&head) != status || (status != 416 && (got != body || got.len() > 10)) {
            failures.push(format!("{short}: got {head:?} {:?}", String::from_utf8_lossy(&got)));
        }
        if status == 416 && head_field(&head, "content-range") != Some("bytes */10") {
            failures.push(format!("{short}: 416 without Content-Range bytes */10"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

crate::for_each_mode!(hostile_ranges);
