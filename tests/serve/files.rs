//! A file answered: its fields, HEAD, conditional requests, ranges, the media type, `nosniff`.

use super::start;
use crate::common::*;
use std::io::Write;

crate::for_each_mode!(
    get_file_has_standard_fields,
    head_has_same_fields_and_no_body,
    absolute_form_target,
    conditional_get_answers_304,
    range_requests,
    content_type_follows_the_served_file,
    every_response_says_nosniff,
    if_modified_since_in_the_future_is_ignored,
    if_range_date_counts_only_when_strong,
);

fn get_file_has_standard_fields(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let r = s.get("/hello.txt", &[]);
    assert_eq!((r.status, r.text().as_str()), (200, HELLO));
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.header("content-length"), Some(HELLO.len().to_string().as_str()));
    assert!(r.header("server").unwrap().starts_with("spidey/"));
    assert!(r.header("date").unwrap().ends_with(" GMT"));
    assert!(r.header("last-modified").unwrap().ends_with(" GMT"));
    assert!(r.header("etag").unwrap().starts_with('"'));
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    let html = s.get("/page.html", &[]);
    assert_eq!(html.header("content-type"), Some("text/html; charset=utf-8"));
}

fn head_has_same_fields_and_no_body(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let mut c = s.connect();
    c.write_all(b"HEAD /hello.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        std::io::Read::read_exact(&mut c, &mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert_eq!(head_field(&head, "content-length"), Some(HELLO.len().to_string().as_str()));
    // The very next bytes are the second response: the HEAD answer carried no body.
    let (second, body) = read_response(&mut c);
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    assert_eq!(body, b"0123456789");
}

fn absolute_form_target(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let r = s.raw(b"GET http://example.test/hello.txt HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&r), 200, "{r}");
    assert!(r.ends_with(HELLO));
}

fn conditional_get_answers_304(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let first = s.get("/hello.txt", &[]);
    let etag = first.header("etag").unwrap().to_string();
    let modified = first.header("last-modified").unwrap().to_string();
    let weak = format!("W/{etag}");
    let cases: &[(&str, &str, u16)] = &[
        ("If-None-Match", &etag, 304),
        ("If-None-Match", &weak, 304),
        ("If-None-Match", "\"something-else\"", 200),
        ("If-None-Match", "*", 304),
        ("If-Modified-Since", &modified, 304),
        ("If-Modified-Since", "Mon, 01 Jan 1990 00:00:00 GMT", 200),
        ("If-Modified-Since", "not a date", 200),
    ];
    for (name, value, want) in cases {
        let r = s.get("/hello.txt", &[(name, value)]);
        assert_eq!(r.status, *want, "{name}: {value}");
        if *want == 304 {
            assert!(r.body.is_empty());
            assert_eq!(r.header("etag"), Some(etag.as_str()));
        }
    }
}

fn range_requests(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let cases: &[(&str, u16, &str, Option<&str>)] = &[
        // Range → status, body, Content-Range
        ("bytes=0-3", 206, "0123", Some("bytes 0-3/10")),
        ("bytes=7-", 206, "789", Some("bytes 7-9/10")),
        ("bytes=-2", 206, "89", Some("bytes 8-9/10")),
        ("bytes=5-100", 206, "56789", Some("bytes 5-9/10")),
        ("bytes=10-", 416, "", Some("bytes */10")),
        ("bytes=-0", 416, "", Some("bytes */10")),
        ("bytes=0-1,3-4", 200, "0123456789", None),
        ("bytes=5-2", 200, "0123456789", None),
        ("bytes=x-y", 200, "0123456789", None),
        ("lines=0-1", 200, "0123456789", None),
    ];
    for (range, status, body, content_range) in cases {
        let r = s.get("/digits.txt", &[("Range", range)]);
        assert_eq!(r.status, *status, "{range}");
        assert_eq!(r.header("content-range"), *content_range, "{range}");
        if *status != 416 {
            assert_eq!(r.text(), *body, "{range}");
        }
    }
    let big = s.get("/big.bin", &[("Range", "bytes=1000000-1000009")]);
    assert_eq!(big.body, (1_000_000..1_000_010).map(|i| (i % 251) as u8).collect::<Vec<_>>());
}

/// The media type is the served file's: an index answers `/dir/` as HTML, and an encoded
/// dot names the extension it decodes to.
fn content_type_follows_the_served_file(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let cases = [
        ("/site/", "text/html; charset=utf-8"),
        ("/site/index.html", "text/html; charset=utf-8"),
        ("/hello%2Etxt", "text/plain; charset=utf-8"),
        ("/hello.txt", "text/plain; charset=utf-8"),
        ("/big.bin", "application/octet-stream"),
    ];
    for (path, want) in cases {
        let r = s.get(path, &[]);
        assert_eq!((r.status, r.header("content-type")), (200, Some(want)), "{path}");
    }
}

/// `X-Content-Type-Options: nosniff` on every response: files, listings, redirects, errors.
fn every_response_says_nosniff(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let requests: &[&[u8]] = &[
        b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        b"GET /list/ HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        b"GET /site HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        b"GET /missing HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: *\r\nConnection: close\r\n\r\n",
        b"GARBAGE\r\n\r\n",
    ];
    for request in requests {
        let r = s.raw(request);
        assert_eq!(head_field(&r, "x-content-type-options"), Some("nosniff"), "{r}");
    }
}

/// An `If-Modified-Since` date in the future says nothing about the file (Apache ignores
/// it too): the file is sent, not 304.
fn if_modified_since_in_the_future_is_ignored(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let r = s.get("/hello.txt", &[("If-Modified-Since", "Fri, 01 Jan 2100 00:00:00 GMT")]);
    assert_eq!((r.status, r.text().as_str()), (200, HELLO));
}

/// `If-Range` with a date (RFC 9110 §13.1.5) honours the range only when the date is the
/// file's Last-Modified and that is a strong validator, a whole second before the
/// response's Date (§8.8.2.2); otherwise the whole file is sent. A file modified "in the
/// future" (or within the current second) may still change within that second, so a
/// range of it could be spliced onto another version.
fn if_range_date_counts_only_when_strong(mode: &str) {
    let (fx, s) = start(mode, &[]);
    let set_mtime = |name: &str, at: std::time::SystemTime| {
        let f = std::fs::OpenOptions::new().write(true).open(fx.root().join(name)).unwrap();
        f.set_modified(at).unwrap();
    };
    let now = std::time::SystemTime::now();
    set_mtime("digits.txt", now - std::time::Duration::from_secs(3600));
    set_mtime("hello.txt", now + std::time::Duration::from_secs(3600));
    // path → (status, body) for a Range with If-Range: the file's own Last-Modified
    let cases: &[(&str, u16, &str)] = &[("/digits.txt", 206, "012"), ("/hello.txt", 200, HELLO)];
    for (path, status, body) in cases {
        let modified = s.get(path, &[]).header("last-modified").expect("Last-Modified").to_string();
        let r = s.get(path, &[("Range", "bytes=0-2"), ("If-Range", &modified)]);
        assert_eq!((r.status, r.text().as_str()), (*status, *body), "{path} If-Range: {modified}");
    }
}
