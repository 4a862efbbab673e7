use super::*;

/// What a head parses to: the error, or a summary of the request.
fn outcome(input: &str) -> Result<String, ParseError> {
    let limits = Limits { max_request_line: 64, max_head: 256, max_headers: 8 };
    let mut slots = HeaderSlots::new();
    match parse(input.as_bytes(), &mut slots, &limits)? {
        Parsed::Partial => Ok("partial".into()),
        Parsed::Complete(r, n) => Ok(format!(
            "{} {} {:?} q={:?} {:?} ka={} host={:?} len={}",
            r.method.as_str(),
            r.target.path,
            r.version,
            r.target.query,
            r.body,
            r.keep_alive,
            r.host,
            n
        )),
    }
}

#[test]
fn accepted_heads() {
    let cases = [
        ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET / Http11 q=None None ka=true host=Some(\"a\") len=27"),
        ("GET /x?y=1 HTTP/1.0\r\n\r\n", "GET /x Http10 q=Some(\"y=1\") None ka=false host=None len=23"),
        ("HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", "HEAD / Http10 q=None None ka=true host=None len=43"),
        (
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            "GET / Http11 q=None None ka=false host=Some(\"a\") len=46",
        ),
        (
            "GET http://h:8/p?q HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET /p Http11 q=Some(\"q\") None ka=true host=Some(\"h:8\") len=40",
        ),
        ("GET HTTP://h HTTP/1.1\r\nHost: a\r\n\r\n", "GET / Http11 q=None None ka=true host=Some(\"h\") len=34"),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n",
            "POST / Http11 q=None Length(5) ka=true host=Some(\"a\") len=47",
        ),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
            "POST / Http11 q=None None ka=true host=Some(\"a\") len=47",
        ),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n",
            "POST / Http11 q=None Chunked ka=true host=Some(\"a\") len=56",
        ),
        ("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "OPTIONS * Http11 q=None None ka=true host=Some(\"a\") len=31"),
        ("GET / HTTP/1.1\nHost: a\n\n", "GET / Http11 q=None None ka=true host=Some(\"a\") len=24"),
        ("\r\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", "GET / Http11 q=None None ka=true host=Some(\"a\") len=30"),
        (
            "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET / Http11 q=None None ka=true host=Some(\"a\") len=47",
        ),
        ("\r\n\r\n", "partial"),
        ("\r\n\r", "partial"),
        ("GET / HTTP/1.1\r\nHost: a\r\n", "partial"),
        ("GET / HT", "partial"),
    ];
    for (input, want) in cases {
        assert_eq!(outcome(input).as_deref(), Ok(want), "{input:?}");
    }
}

#[test]
fn refused_heads() {
    use ParseError::*;
    let long_line = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(80));
    let long_partial = format!("GET /{}", "a".repeat(80));

    let many = format!("GET / HTTP/1.1\r\nHost: a\r\n{}\r\n", "X: y\r\n".repeat(8));
    let huge_partial =
        format!("GET / HTTP/1.1\r\n{}", "X: yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\r\n".repeat(5));
    let long_after_empty = format!("\r\n\n{long_line}");
    let long_partial_after_empty = format!("\r\n{long_partial}");
    let many_empty = format!("{}GET / HTTP/1.1\r\nHost: a\r\n\r\n", "\r\n".repeat(11));
    let many_empty_partial = "\n".repeat(11);
    let cases: Vec<(&str, ParseError)> = vec![
        (&long_line, RequestLineTooLong),
        (&long_after_empty, RequestLineTooLong),
        (&long_partial_after_empty, RequestLineTooLong),
        (&many_empty, EmptyLines),
        (&many_empty_partial, EmptyLines),
        (&long_partial, RequestLineTooLong),
        (&many, TooManyHeaders),
        (&huge_partial, HeadTooLarge),
        ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", Method),
        ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", UnsupportedVersion),
        ("GET / HTTP/1.2\r\nHost: a\r\n\r\n", UnsupportedVersion),
        ("GET / FOO/1.1\r\nHost: a\r\n\r\n", Version),
        ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", HeaderName),
        ("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", HeaderName),
        ("GET / HTTP/1.1\r\nHo\x01st: a\r\n\r\n", HeaderName),
        ("GET / HTTP/1.1\r\nHost: a\x01b\r\n\r\n", HeaderValue),
        ("GET / HTTP/1.1\rHost: a\r\n\r\n", NewLine),
        ("GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", HeaderValue),
        ("GET / HTTP/1.1\r\n\r\n", Host),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", Host),
        ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", Host),
        ("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", Host),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", ContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", ContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", ContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", ContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1234567890123456789\r\n\r\n", ContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", ContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n", ContentLength),
        ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", LengthWithEncoding),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", TransferEncoding),
        (
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            TransferEncoding,
        ),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", TransferEncoding),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,chunked\r\n\r\n", TransferEncoding),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", TransferEncoding),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", UnsupportedCoding),
        ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", UnsupportedCoding),
        ("GET x HTTP/1.1\r\nHost: a\r\n\r\n", Target),
        ("GET ftp://h/ HTTP/1.1\r\nHost: a\r\n\r\n", Target),
        ("GET http:///p HTTP/1.1\r\nHost: a\r\n\r\n", Target),
        ("GET * HTTP/1.1\r\nHost: a\r\n\r\n", Target),
        ("GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", Target),
    ];

    for (input, want) in cases {
        assert_eq!(outcome(input), Err(want), "{input:?}");
    }
}

#[test]
fn statuses_of_errors() {
    let cases = [
        (ParseError::RequestLineTooLong, 414),
        (ParseError::EmptyLines, 400),
        (ParseError::HeadTooLarge, 431),
        (ParseError::TooManyHeaders, 431),
        (ParseError::UnsupportedVersion, 505),
        (ParseError::UnsupportedCoding, 501),
        (ParseError::Host, 400),
        (ParseError::LengthWithEncoding, 400),
    ];
    for (e, code) in cases {
        assert_eq!(e.status().0, code, "{e:?}");
    }
}

#[test]
fn headers_are_found_case_insensitively() {
    let limits = Limits::default();
    let mut slots = HeaderSlots::new();
    let buf = b"GET / HTTP/1.1\r\nhOsT: a\r\nX-Thing:  v \r\n\r\n";
    let Ok(Parsed::Complete(r, _)) = parse(buf, &mut slots, &limits) else { panic!() };
    assert_eq!(r.header("x-thing"), Some(&b"v"[..]));
    assert_eq!(r.header_str("HOST"), Some("a"));
    assert_eq!(r.header("missing"), None);
    assert_eq!(r.request_line, b"GET / HTTP/1.1");
}

#[test]
fn empty_lines_are_not_part_of_the_request_line() {
    let limits = Limits::default();
    let mut slots = HeaderSlots::new();
    let buf = b"\r\n\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n";
    let Ok(Parsed::Complete(r, n)) = parse(buf, &mut slots, &limits) else { panic!() };
    assert_eq!((r.request_line, n), (&b"GET /x HTTP/1.1"[..], buf.len()));
    assert_eq!(skip_empty_lines(b"\r\n\nGARBAGE\r\n"), b"GARBAGE\r\n");
    assert_eq!(skip_empty_lines(b"GET"), b"GET");
}

#[test]
fn a_request_line_with_a_space_in_its_target_is_400_not_505() {
    use ParseError::*;
    let cases = [
        ("GET http://a b/ HTTP/1.1\r\nHost: a\r\n\r\n", Version),
        ("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", Version),
        ("GET /a b HTTP/2.0\r\nHost: a\r\n\r\n", Version),
        ("GET /a HTTP/2.0\r\nHost: a\r\n\r\n", UnsupportedVersion),
    ];
    for (input, want) in cases {
        assert_eq!(outcome(input), Err(want), "{input:?}");
    }
}
