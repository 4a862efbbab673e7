//! The core suite: every bullet of `spidey serve`'s contract, run against every mode.

mod common;

use common::*;
use std::io::Write;
use std::time::Duration;

for_each_mode!(
    startup_line_names_port_and_mode,
    get_file_has_standard_fields,
    head_has_same_fields_and_no_body,
    keep_alive_by_version,
    pipelined_requests_answered_in_order,
    close_response_survives_unread_pipelined_request,
    linger_is_bounded_by_idle_timeout,
    absolute_form_target,
    conditional_get_answers_304,
    range_requests,
    directory_index_and_slash_redirect,
    redirect_location_never_starts_with_two_slashes,
    listing_escapes_hostile_names,
    listing_sorts_and_hides_dotfiles,
    listing_as_json,
    show_hidden_lists_dotfiles,
    error_statuses,
    method_not_allowed_names_allow,
    limits_on_line_head_and_fields,
    traversal_never_leaves_root,
    fifo_is_forbidden_without_blocking,
    framing_errors_close_the_connection,
    head_timeout_answers_408,
    idle_keep_alive_times_out,
    max_requests_per_connection,
    access_log_is_combined_format,
    leading_empty_lines_are_not_logged_as_the_request_line,
    content_type_follows_the_served_file,
    every_response_says_nosniff,
    if_modified_since_in_the_future_is_ignored,
    quiet_has_no_access_log,
    sigterm_finishes_in_flight_response,
);

fn start(mode: &str, args: &[&str]) -> (Fixture, Spidey) {
    let fx = Fixture::new();
    let s = Spidey::start(mode, &fx.root(), &[&["--quiet"], args].concat());
    (fx, s)
}

fn get_raw(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").into_bytes()
}

fn startup_line_names_port_and_mode(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    assert_ne!(s.port, 0);
}

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

fn keep_alive_by_version(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let cases: &[(&str, Option<&str>, bool)] = &[
        // request head → Connection field in the answer, connection kept open
        ("GET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n", None, true),
        ("GET /digits.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", Some("close"), false),
        ("GET /digits.txt HTTP/1.0\r\n\r\n", Some("close"), false),
        ("GET /digits.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", Some("keep-alive"), true),
    ];
    for (request, field, kept) in cases {
        let mut c = s.connect();
        c.write_all(request.as_bytes()).unwrap();
        let (head, body) = read_response(&mut c);
        assert_eq!(body, b"0123456789", "{request:?}");
        assert_eq!(head_field(&head, "connection"), *field, "{request:?}");
        assert_eq!(!closed_within(&mut c, Duration::from_millis(300)), *kept, "{request:?}");
    }
}

fn pipelined_requests_answered_in_order(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let mut c = s.connect();
    let mut batch = Vec::new();
    for path in ["/digits.txt", "/hello.txt", "/missing", "/digits.txt"] {
        batch.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    c.write_all(&batch).unwrap();
    let want: [(&str, &[u8]); 4] =
        [("200", b"0123456789"), ("200", HELLO.as_bytes()), ("404", b""), ("200", b"0123456789")];
    for (status, body) in want {
        let (head, got) = read_response(&mut c);
        assert_eq!(&head[9..12], status, "{head}");
        if !body.is_empty() {
            assert_eq!(got, body);
        }
    }
}

/// Guards the corked last response (`Session::cork_last_response`): a request sent after
/// a `Connection: close` one is still unread when the server closes (the `--delay` makes
/// sure), and closing with unread input resets the connection. The whole first response
/// must reach the client first, for a small file and for one larger than a socket buffer.
fn close_response_survives_unread_pipelined_request(mode: &str) {
    let (_fx, s) = start(mode, &["--delay", "200ms"]);
    for (path, len) in [("/digits.txt", 10), ("/big.bin", 4 * 1024 * 1024)] {
        let mut c = s.connect();
        c.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let (head, body) = read_response(&mut c);
        assert_eq!(status_of(&head), 200, "{path}: {head}");
        assert_eq!(body.len(), len, "{path}");
    }
}

/// The lingering close drops input only until the idle timeout counted from the end of
/// the response, not from the client's last byte: a client that trickles bytes cannot
/// hold the connection for good. The server's full close shows as a failed write.
fn linger_is_bounded_by_idle_timeout(mode: &str) {
    let (_fx, s) = start(mode, &["--idle-timeout", "1s"]);
    let mut c = s.connect();
    c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\nleftover").unwrap();
    let (head, body) = read_response(&mut c);
    assert_eq!((status_of(&head), body), (200, HELLO.as_bytes().to_vec()));
    let start = std::time::Instant::now();
    while c.write_all(b"x").is_ok() {
        assert!(start.elapsed() < Duration::from_secs(4), "still lingering after {:?}", start.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
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

fn directory_index_and_slash_redirect(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let index = s.get("/site/", &[]);
    assert_eq!((index.status, index.text().as_str()), (200, "<h1>index</h1>\n"));
    let cases = [("/site", "/site/"), ("/site?x=1", "/site/?x=1"), ("/list/sub%20dir", "/list/sub%20dir/")];
    for (path, location) in cases {
        let r = s.get(path, &[]);
        assert_eq!((r.status, r.header("location")), (301, Some(location)), "{path}");
    }
}

fn redirect_location_never_starts_with_two_slashes(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    for path in ["//evil.com", "///evil.com", "//evil.com?q", "/./evil.com"] {
        let r = s.raw(&get_raw(path));
        let location = head_field(&r, "location").unwrap_or("");
        assert_eq!(status_of(&r), 301, "{path}: {r}");
        assert!(location.starts_with('/') && !location.starts_with("//"), "{path} → {location}");
    }
}

fn listing_escapes_hostile_names(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let r = s.get("/list/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let html = r.text();
    let cases = [
        // what must appear in the page
        ("<a href=\"%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E\">&lt;img src=x onerror=alert(1)&gt;</a>", true),
        ("<a href=\"q%22uote%27s\">q&quot;uote&#39;s</a>", true),
        ("<a href=\"a%20b\">a b</a>", true),
        ("<a href=\"%2520\">%20</a>", true),
        ("<a href=\"caf%C3%A9\">café</a>", true),
        ("<a href=\"new%0Aline\">new\nline</a>", true),
        ("<a href=\"bad%FFutf8\">bad\u{fffd}utf8</a>", true),
        ("<a href=\"sub%20dir/\">sub dir/</a>", true),
        ("<img src", false),
    ];
    for (needle, present) in cases {
        assert_eq!(html.contains(needle), present, "{needle:?} in listing");
    }
    // Every link in the listing leads to the entry it names.
    for (href, status) in [("/list/%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E", 200), ("/list/bad%FFutf8", 200)] {
        assert_eq!(s.get(href, &[]).status, status, "{href}");
    }
}

fn names_in_order(html: &str) -> Vec<String> {
    html.split("<tr><td><a href=\"")
        .skip(1)
        .map(|row| row.split('"').next().unwrap().to_string())
        .filter(|href| href != "../")
        .collect()
}

fn listing_sorts_and_hides_dotfiles(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let by_name = names_in_order(&s.get("/list/", &[]).text());
    assert_eq!(by_name.first().map(String::as_str), Some("sub%20dir/"), "directories first: {by_name:?}");
    assert!(!by_name.iter().any(|n| n.contains("hidden")), "dotfiles hidden: {by_name:?}");
    let by_size = names_in_order(&s.get("/list/?sort=size&order=desc", &[]).text());
    assert_eq!(&by_size[..3], ["sub%20dir/", "plain.txt", "q%22uote%27s"], "{by_size:?}");
    let desc = names_in_order(&s.get("/list/?sort=name&order=desc", &[]).text());
    let mut files = by_name[1..].to_vec();
    files.reverse();
    assert_eq!(desc[1..], files[..]);
}

fn listing_as_json(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let r = s.get("/list/?format=json", &[]);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_slice(&r.body).expect("valid JSON");
    // nginx autoindex's schema: a bare array (tests/features.rs checks it field by field).
    let entries = v.as_array().unwrap();
    let plain = entries.iter().find(|e| e["name"] == "plain.txt").unwrap();
    assert_eq!((plain["size"].as_u64(), plain["type"].as_str()), (Some(3), Some("file")));
    assert!(entries.iter().any(|e| e["name"] == "<img src=x onerror=alert(1)>"));
    assert_eq!(entries[0]["type"], "directory");
}

/// `--show-hidden` both lists dotfiles and serves them (by default they are neither).
fn show_hidden_lists_dotfiles(mode: &str) {
    let (_fx, s) = start(mode, &["--show-hidden"]);
    assert!(s.get("/list/", &[]).text().contains(".hidden"));
    let r = s.get("/list/.hidden", &[]);
    assert_eq!((r.status, r.text().as_str()), (200, "secret"));
}

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

fn head_timeout_answers_408(mode: &str) {
    let (_fx, s) = start(mode, &["--head-timeout", "1s"]);
    let mut c = s.connect();
    c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n").unwrap();
    let r = read_to_close(&mut c);
    assert_eq!(status_of(&r), 408, "{r}");
}

fn idle_keep_alive_times_out(mode: &str) {
    let (_fx, s) = start(mode, &["--idle-timeout", "1s"]);
    let mut c = s.connect();
    c.write_all(b"GET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    read_response(&mut c);
    assert!(!closed_within(&mut c, Duration::from_millis(300)), "closed before the idle timeout");
    assert!(closed_within(&mut c, Duration::from_secs(5)), "still open after the idle timeout");
}

fn max_requests_per_connection(mode: &str) {
    let (_fx, s) = start(mode, &["--max-requests", "2"]);
    let mut c = s.connect();
    c.write_all(b"GET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let (first, _) = read_response(&mut c);
    let (second, _) = read_response(&mut c);
    assert_eq!(head_field(&first, "connection"), None);
    assert_eq!(head_field(&second, "connection"), Some("close"));
    assert!(closed_within(&mut c, Duration::from_secs(2)));
}

fn access_log_is_combined_format(mode: &str) {
    let fx = Fixture::new();
    let mut s = Spidey::start(mode, &fx.root(), &[]);
    let r = s.raw(
        b"GET /hello.txt HTTP/1.1\r\nHost: t\r\nReferer: http://r/\r\nUser-Agent: \"evil\"\nConnection: close\r\n\r\n",
    );
    assert_eq!(status_of(&r), 200);
    let line = s.log_lines(1).remove(0);
    let want_tail = format!(" \"GET /hello.txt HTTP/1.1\" 200 {} \"http://r/\" \"\\\"evil\\\"\"\n", HELLO.len());
    assert!(line.starts_with("127.0.0.1 - - ["), "{line:?}");
    assert!(line.ends_with(&want_tail), "{line:?}");
}

/// Empty lines before a request line (RFC 9112 §2.2) are skipped, not logged as an empty
/// request line, and do not let the line past its limit.
fn leading_empty_lines_are_not_logged_as_the_request_line(mode: &str) {
    let fx = Fixture::new();
    let mut s = Spidey::start(mode, &fx.root(), &[]);
    let r = s.raw(b"\r\n\nGET /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&r), 200);
    let line = s.log_lines(1).remove(0);
    assert!(line.contains(" \"GET /hello.txt HTTP/1.1\" 200 "), "{line:?}");
    let long = format!("\r\nGET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(9000));
    assert_eq!(status_of(&s.raw(long.as_bytes())), 414);
    let line = s.log_lines(1).remove(0);
    assert!(line.contains(" \"GET /aaaaaaaa") && line.contains("\" 414 "), "{line:?}");
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

fn quiet_has_no_access_log(mode: &str) {
    let fx = Fixture::new();
    let mut s = Spidey::start(mode, &fx.root(), &["--quiet"]);
    assert_eq!(s.get("/hello.txt", &[]).status, 200);
    assert!(s.stop().success());
    let mut rest = String::new();
    std::io::Read::read_to_string(s.stdout.as_mut().unwrap(), &mut rest).unwrap();
    assert_eq!(rest, "");
}

fn sigterm_finishes_in_flight_response(mode: &str) {
    let (_fx, mut s) = start(mode, &[]);
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // Ask for 4 MiB and read only a little, so the response is still in flight.
    c.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut first = [0u8; 1024];
    std::io::Read::read_exact(&mut c, &mut first).unwrap();
    signal(s.child.id(), "TERM");
    std::thread::sleep(Duration::from_millis(300));
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut c, &mut rest).unwrap();
    let body_start = first.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(first.len() - body_start + rest.len(), 4 * 1024 * 1024, "the whole body arrived");
    let status = wait_timeout(&mut s.child, Duration::from_secs(15)).expect("exits after draining");
    assert!(status.success(), "{status:?}");
}
