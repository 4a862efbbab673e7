//! Framing and request smuggling: every head whose end or body length is in doubt is refused
//! and the connection closed; a request hidden in a body is never answered.

use super::table::{case, run_table, Case, CLOSE, OPEN};
use crate::common::{status_of, Fixture, Spidey};

fn framing_cases() -> Vec<Case> {
    vec![
        // Content-Length and Transfer-Encoding (RFC 9112 §6.1, §6.3).
        case("CL then TE", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"[..], 400, CLOSE),
        case("TE then CL", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"[..], 400, CLOSE),
        case("CL.TE hiding a GET", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("CL zero with TE", &b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n"[..], 400, CLOSE),
        case("two equal CL fields", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc"[..], 400, CLOSE),
        case("two different CL fields", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc"[..], 400, CLOSE),
        case("CL list", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\nabc"[..], 400, CLOSE),
        case("CL negative", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"[..], 400, CLOSE),
        case("CL plus sign", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc"[..], 400, CLOSE),
        case("CL hex", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x3\r\n\r\nabc"[..], 400, CLOSE),
        case("CL space inside", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\n"[..], 400, CLOSE),
        case("CL empty", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n"[..], 400, CLOSE),
        case("CL beyond 2^64", &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551617\r\n\r\n"[..], 400, CLOSE),
        case("TE unknown coding", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"[..], 501, CLOSE),
        case("TE chunked not last", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"[..], 400, CLOSE),
        case("TE gzip then chunked", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"[..], 501, CLOSE),
        case("TE chunked twice in one field", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"[..], 400, CLOSE),
        case("TE chunked in two fields", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"[..], 400, CLOSE),
        case("TE xchunked", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n"[..], 501, CLOSE),
        case("TE empty element", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ,chunked\r\n\r\n"[..], 400, CLOSE),
        case("TE from an HTTP/1.0 client", &b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"[..], 400, CLOSE),
        // Field syntax (RFC 9112 §5): obs-fold, whitespace before the colon, control bytes.
        case("obs-fold", &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n"[..], 400, CLOSE),
        case("obs-fold with tab", &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n"[..], 400, CLOSE),
        case("space before colon", &b"GET / HTTP/1.1\r\nHost : x\r\n\r\n"[..], 400, CLOSE),
        case("tab before colon", &b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding\t: chunked\r\n\r\n"[..], 400, CLOSE),
        case("space inside a name", &b"GET / HTTP/1.1\r\nHost: x\r\nX Y: z\r\n\r\n"[..], 400, CLOSE),
        case("empty name", &b"GET / HTTP/1.1\r\nHost: x\r\n: z\r\n\r\n"[..], 400, CLOSE),
        case("NUL in a name", &b"GET / HTTP/1.1\r\nHost: x\r\nX\0A: z\r\n\r\n"[..], 400, CLOSE),
        case("NUL in a value", &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n"[..], 400, CLOSE),
        case("SOH in a value", &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n"[..], 400, CLOSE),
        case("DEL in a value", &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x7fb\r\n\r\n"[..], 400, CLOSE),
        case("ESC in a value", &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: \x1b[31m\r\n\r\n"[..], 400, CLOSE),
        case("obs-text in a value is data", &b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nX-A: caf\xc3\xa9\r\n\r\n"[..], 200, OPEN),
        // Line endings (RFC 9112 §2.2): bare CR is refused; bare LF is taken as a line end.
        case("bare CR ends the request line", &b"GET / HTTP/1.1\rHost: x\r\n\r\n"[..], 400, CLOSE),
        case("bare CR inside a value", &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n"[..], 400, CLOSE),
        case("bare CR ends a field", &b"GET / HTTP/1.1\r\nHost: x\rX-A: b\r\n\r\n"[..], 400, CLOSE),
        case("bare CR hides Content-Length", &b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rContent-Length: 40\r\n\r\n"[..], 400, CLOSE),
        case("bare LF everywhere", &b"GET /hello.txt HTTP/1.1\nHost: x\n\n"[..], 200, OPEN),
        case("CR CR LF", &b"GET / HTTP/1.1\r\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("empty lines before the request line", &b"\r\n\r\nGET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 200, OPEN),
        case("bare LF empty lines before the request line", &b"\n\nGET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 200, OPEN),
        case("an empty line does not hide an over-long request line", long_line_after_empty_lines(1), 414, CLOSE),
        case("empty lines do not hide an over-long request line", long_line_after_empty_lines(10), 414, CLOSE),
        case("more than 10 empty lines before the request line", [&b"\r\n".repeat(11)[..], b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"].concat(), 400, CLOSE),
        // The request line and version (RFC 9112 §3, §2.3).
        case("HTTP/1.2", &b"GET / HTTP/1.2\r\nHost: x\r\n\r\n"[..], 505, CLOSE),
        case("HTTP/2.0", &b"GET / HTTP/2.0\r\nHost: x\r\n\r\n"[..], 505, CLOSE),
        case("HTTP/1", &b"GET / HTTP/1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("lowercase http", &b"GET / http/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("HTTP/0.9 request line", &b"GET /\r\n\r\n"[..], 400, CLOSE),
        case("trailing word", &b"GET / HTTP/1.1 x\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("two spaces", &b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("tab separator", &b"GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("NUL in the method", &b"G\0T / HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("unknown method", &b"BREW /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 501, OPEN),
        case("relative target", &b"GET hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("fragment in target", &b"GET /hello.txt#x HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("asterisk with GET", &b"GET * HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("absolute-form to a bad authority", &b"GET http://a b/ HTTP/1.1\r\nHost: x\r\n\r\n"[..], 400, CLOSE),
        case("absolute-form", &b"GET http://elsewhere/hello.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 200, OPEN),
        // Host (RFC 9112 §3.2).
        case("missing Host in 1.1", &b"GET /hello.txt HTTP/1.1\r\n\r\n"[..], 400, CLOSE),
        case("two Host fields", &b"GET /hello.txt HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"[..], 400, CLOSE),
        case("Host with a slash", &b"GET /hello.txt HTTP/1.1\r\nHost: a/b\r\n\r\n"[..], 400, CLOSE),
        case("Host with a space", &b"GET /hello.txt HTTP/1.1\r\nHost: a b\r\n\r\n"[..], 400, CLOSE),
        case("no Host in 1.0", &b"GET /hello.txt HTTP/1.0\r\n\r\n"[..], 200, CLOSE),
        case("1.0 keep-alive", &b"GET /hello.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"[..], 200, OPEN),
        // Bodies are never read as requests.
        case("CL body hiding a GET", &b"POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 37\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 405, OPEN),
        case("GET with a body hiding a GET", &b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 37\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 200, OPEN),
        case("body still arriving hides a GET", &b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 39\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 200, CLOSE),
        case("a one-byte body is skipped, not parsed", &b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nG"[..], 200, OPEN),
        case("chunked body hiding a GET", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n27\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n"[..], 405, CLOSE),
        case("chunk size not hex", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 405, CLOSE),
        case("chunk size beyond 2^64", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 405, CLOSE),
        case("chunk size with bare LF", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 405, CLOSE),
        case("negative chunk size", &b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n"[..], 405, CLOSE),
        case("oversized chunk extension", oversized_chunk_extension(), 405, CLOSE),
    ]
}

/// `empty` CRLFs, then a request line of 9000 bytes (over the 8 KiB limit, under the head's).
fn long_line_after_empty_lines(empty: usize) -> Vec<u8> {
    let mut r = b"\r\n".repeat(empty);
    r.extend_from_slice(format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(9000)).as_bytes());
    r
}

fn oversized_chunk_extension() -> Vec<u8> {
    let mut r = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;".to_vec();
    r.extend_from_slice(&[b'a'; 8000]);
    r.extend_from_slice(b"\r\nx\r\n0\r\n\r\nGET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    r
}

fn framing_and_smuggling(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &["--quiet", "--cgi"]);
    run_table(&server, &framing_cases());
}

/// Chunked bodies as a CGI script reads them (static resources do not read bodies): the
/// chunk line is `chunk-size [ chunk-ext ] CRLF` with `chunk-ext = *( BWS ";" BWS name [
/// BWS "=" BWS ( token / quoted-string ) ] )` (RFC 9112 §7.1.1), and trailer lines carry no
/// control bytes. Anything else is 400 and the connection closed.
fn chunk_lines_are_strict(mode: &str) {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let script = fx.root().join("len.cgi");
    std::fs::write(&script, "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nwc -c\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = Spidey::start(mode, &fx.root(), &["--quiet", "--cgi"]);
    let cases: &[(&str, &[u8], u16)] = &[
        ("plain", b"1\r\nx\r\n0\r\n\r\n", 200),
        ("extension", b"1;a=b\r\nx\r\n0\r\n\r\n", 200),
        ("extensions with BWS", b"1 ; a = b ;c\t\r\nx\r\n0;z\r\n\r\n", 200),
        ("quoted extension value", b"1;a=\"q \\\" ;x\"\r\nx\r\n0\r\n\r\n", 200),
        ("trailer field", b"1\r\nx\r\n0\r\nX-T: a\tb\r\n\r\n", 200),
        ("a second number after whitespace", b"1 2\r\nx\r\n0\r\n\r\n", 400),
        ("whitespace then a letter", b"1 x\r\nx\r\n0\r\n\r\n", 400),
        ("extension without a name", b"1;=b\r\nx\r\n0\r\n\r\n", 400),
        ("extension name not a token", b"1;a@b\r\nx\r\n0\r\n\r\n", 400),
        ("two words in an extension name", b"1;a b\r\nx\r\n0\r\n\r\n", 400),
        ("extension value not a token", b"1;a=b c\r\nx\r\n0\r\n\r\n", 400),
        ("empty extension value", b"1;a=\r\nx\r\n0\r\n\r\n", 400),
        ("unterminated quoted value", b"1;a=\"b\r\nx\r\n0\r\n\r\n", 400),
        ("control byte in an extension", b"1;a\x01\r\nx\r\n0\r\n\r\n", 400),
        ("DEL in a quoted value", b"1;a=\"\x7f\"\r\nx\r\n0\r\n\r\n", 400),
        ("control byte in a trailer", b"1\r\nx\r\n0\r\nX-T: a\x01b\r\n\r\n", 400),
        ("ESC in a trailer", b"1\r\nx\r\n0\r\nX-T: \x1b[31m\r\n\r\n", 400),
    ];
    let mut failures = Vec::new();
    for (name, body, want) in cases {
        let mut request =
            b"POST /len.cgi HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
        request.extend_from_slice(body);
        let response = server.raw(&request);
        if status_of(&response) != *want {
            failures.push(format!("{name}: want {want}, got {:?}", response.lines().next()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

crate::for_each_mode!(framing_and_smuggling, chunk_lines_are_strict);
