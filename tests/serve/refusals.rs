//! Requests refused: error statuses, 405 with `Allow`, size limits, paths outside ROOT, FIFOs,
//! framing errors that close the connection.

use super::{get_raw, start};
use crate::common::*;
use std::io::Write;
use std::time::Duration;

crate::for_each_mode!(
    error_statuses,
    method_not_allowed_names_allow,
    limits_on_line_head_and_fields,
    traversal_never_leaves_root,
    fifo_is_forbidden_without_blocking,
    framing_errors_close_the_connection,
);

fn error_statuses(mode: &str) {
    let (_fx, s) = start(mode, &["--max-body", "100"]);
    let cases: &[(&[u8], u16)] = &[
        (b"GET /missing HTTP/1.1\r\nHost: t\r\n\r\n", 404),
        (b"GET /list/missing/deeper HTTP/1.1\r\nHost: t\r\n\r\n", 404),
        (b"GET /hello.txt/x HTTP/1.1\r\nHost: t\r\n\r\n", 404),
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nBad Name: x\r\n\r\n", 400),
        (b"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 101\r\n\r\n", 413),
        (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505),
        (b"GET / HTTP/1.1\r\n\r\n", 400),
    ];
    for (request, want) in cases {
        let r = s.raw(request);
        assert_eq!(status_of(&r), *want, "{:?} → {r}", String::from_utf8_lossy(request));
        assert!(r.contains("Content-Type: text/html"), "error pages are HTML: {r}");
    }
}

/// 405 (with `Allow`) is for a static file or directory that exists; for anything else the
/// resolution error answers first, whatever the method (as nginx and Apache do).
fn method_not_allowed_names_allow(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let cases: &[(&str, &str, u16)] = &[
        ("PUT", "/hello.txt", 405),
        ("DELETE", "/hello.txt", 405),
        ("OPTIONS", "/hello.txt", 405),
        ("PATCH", "/hello.txt", 405),
        ("POST", "/hello.txt", 405),
        ("DELETE", "/list/", 405),
        ("POST", "/list", 405),
        ("POST", "/missing", 404),
        ("PUT", "/list/missing/deeper", 404),
        ("DELETE", "/hello.txt/x", 404),
        ("POST", "/out-file", 403),
        ("PUT", "/out-dir/", 403),
        ("POST", "/hello.txt%00.html", 400),
    ];
    for &(method, path, want) in cases {
        let r = s.raw(format!("{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n").as_bytes());
        assert_eq!(status_of(&r), want, "{method} {path}: {r}");
        let allow = (want == 405).then_some("GET, HEAD");
        assert_eq!(head_field(&r, "allow"), allow, "{method} {path}: {r}");
    }
}

fn limits_on_line_head_and_fields(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let long_line = format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(9000));
    let fields = format!("GET / HTTP/1.1\r\nHost: t\r\n{}\r\n", "X-A: b\r\n".repeat(101));
    let big_head = format!("GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n", "b".repeat(17 * 1024));
    let just_under =
        format!("GET /hello.txt HTTP/1.1\r\nHost: t\r\n{}Connection: close\r\n\r\n", "X-A: b\r\n".repeat(98));
    let cases = [(long_line, 414), (fields, 431), (big_head, 431), (just_under, 200)];
    for (request, want) in cases {
        assert_eq!(status_of(&s.raw(request.as_bytes())), want, "{}", &request[..40]);
    }
}

fn traversal_never_leaves_root(mode: &str) {
    let (fx, s) = start(mode, &[]);
    let secret = fx.outside.path().join("secret.txt");
    let cases: &[(&str, u16)] = &[
        ("/../../../../etc/passwd", 400),
        ("/%2e%2e/%2e%2e/etc/passwd", 400),
        ("/.%2E/.%2e/etc/passwd", 400),
        ("/list/..%2f..%2fetc%2fpasswd", 400),
        ("/%252e%252e/etc/passwd", 404),
        ("/hello.txt%00.html", 400),
        ("/out-file", 403),
        ("/out-dir/secret.txt", 403),
        ("/out-dir/", 403),
        ("/in-link", 200),
    ];
    for (path, want) in cases {
        let r = s.raw(&get_raw(path));
        assert_eq!(status_of(&r), *want, "{path}: {r}");
        assert!(!r.contains("TOP SECRET"), "{path} leaked {}", secret.display());
    }
}

fn fifo_is_forbidden_without_blocking(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&get_raw("/fifo")).unwrap();
    let r = read_to_close(&mut c);
    assert_eq!(status_of(&r), 403, "{r}");
}

fn framing_errors_close_the_connection(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let cases: &[&[u8]] = &[
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: t\r\nX-Folded: a\r\n b\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost : t\r\n\r\n",
    ];
    for request in cases {
        let mut c = s.connect();
        c.write_all(request).unwrap();
        // No Connection: close from the client: the server must close by itself.
        let (head, _) = read_response(&mut c);
        assert_eq!(status_of(&head), 400, "{:?} → {head}", String::from_utf8_lossy(request));
        assert_eq!(head_field(&head, "connection"), Some("close"));
        assert!(closed_within(&mut c, Duration::from_secs(2)), "{:?} left open", String::from_utf8_lossy(request));
    }
}
