//! The streams sent to both servers, and the differences from nginx that Spidey keeps on
//! purpose, each with its reason. A row with `differs: None` must summarise the same on
//! both; a listed difference must still hold exactly (so a change on either side shows).

/// The body of `/smuggled.txt`: seeing it answered means a request hidden in a body ran.
pub const SMUGGLED: &str = "SMUGGLED\n";

pub struct Differs {
    pub spidey: &'static str,
    pub nginx: &'static str,
    pub why: &'static str,
}

pub struct Row {
    pub name: &'static str,
    pub stream: Vec<u8>,
    pub differs: Option<Differs>,
}

/// A pipelined follow-up: whether it is answered shows where the server thinks the
/// previous request ended.
const NEXT: &str = "GET /digits.txt HTTP/1.1\r\nHost: x\r\n\r\n";
const HIDDEN: &str = "GET /smuggled.txt HTTP/1.1\r\nHost: x\r\n\r\n";

fn same(name: &'static str, stream: impl AsRef<[u8]>) -> Row {
    Row { name, stream: stream.as_ref().to_vec(), differs: None }
}

fn differs(
    name: &'static str,
    stream: impl AsRef<[u8]>,
    spidey: &'static str,
    nginx: &'static str,
    why: &'static str,
) -> Row {
    Row { name, stream: stream.as_ref().to_vec(), differs: Some(Differs { spidey, nginx, why }) }
}

/// `GET target` with the given extra field lines, then the follow-up.
fn get(target: &str, fields: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: x\r\n{fields}\r\n{NEXT}")
}

/// A GET of /hello.txt with `fields` and `body`, then the follow-up.
fn with_body(fields: &str, body: &str) -> String {
    format!("GET /hello.txt HTTP/1.1\r\nHost: x\r\n{fields}\r\n{body}{NEXT}")
}

fn chunk_of(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n0\r\n\r\n", data.len())
}

// The deliberate differences, by reason.
const UNREAD_BODY: &str = "Spidey answers a static GET before its body and, when the body is chunked, closes the \
                           connection after the answer instead of reading the body (exchange.rs: a body this server \
                           does not read would be taken for the next request). So nothing after the head is ever \
                           parsed: no body byte can become a request, and a malformed chunk is never seen. nginx \
                           reads and discards the body, then serves the next request or refuses the bad chunk.";
const TAB_OWS: &str = "OWS is SP or HTAB (RFC 9110 §5.6.3), so `Transfer-Encoding:<TAB>chunked` is chunked; nginx \
                       skips only spaces and refuses `<TAB>chunked` as an unknown coding (501). Spidey then closes \
                       after the answer as for any chunked body it does not read, so no framing is disputed.";
const ONE_SP: &str = "The request line is method SP target SP version with single spaces (RFC 9112 §3); Spidey \
                      refuses extra whitespace (400, as Apache's strict mode does), nginx skips it.";
const METHOD_TOKEN: &str = "Methods are case-sensitive tokens (RFC 9110 §9.1): `get` is a well-framed request for \
                            a method Spidey does not implement, so 501 and the connection stays usable; nginx \
                            refuses a lowercase method as a malformed line (400) and closes.";
const NO_09: &str = "Spidey has no HTTP/0.9: a request line without a version is 400. nginx still answers HTTP/0.9 \
                     with a headerless body.";
const DOTDOT: &str = "Spidey refuses any `..` segment, encoded or not (crates/server/src/content/resolve.rs: \
                      decode once, refuse `..`, then open beneath ROOT) rather than resolving it as nginx does; \
                      the target is well framed, so the connection stays usable.";
const TARGET_KEEPS: &str = "Both refuse the target; Spidey's refusal is a content-side answer to a well-framed \
                            request, so it keeps the connection and answers the next request; nginx treats it as a \
                            malformed request line and closes.";
const HOST_PORT: &str = "A port is digits only (RFC 9110 §7.2, RFC 3986 §3.2.3); Spidey refuses `Host: x:8o`, as \
                         Apache's strict mode does (tests/http_strict.rs); nginx does not check the port.";
const VERSION: &str = "Spidey speaks only HTTP/1.0 and 1.1 and answers another well-formed version 505 (RFC 9110 \
                       §15.6.6); nginx serves HTTP/1.2 as 1.1.";
const LIMITS: &str = "Different limits: Spidey bounds the request line (8 KiB, 414) and the whole head (16 KiB, \
                      431), nginx each header line (8 KiB, large_client_header_buffers, 400). A 9 KB field fits \
                      Spidey's head.";

pub fn rows() -> Vec<Row> {
    let hidden_len = HIDDEN.len();
    vec![
        // Framing.
        same("two pipelined requests", format!("GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n{NEXT}")),
        same("bare LF line ends", format!("GET /hello.txt HTTP/1.1\nHost: x\n\n{NEXT}")),
        same("GET with a Content-Length body", with_body("Content-Length: 5\r\n", "hello")),
        same("Content-Length body holding a request", with_body(&format!("Content-Length: {hidden_len}\r\n"), HIDDEN)),
        differs(
            "chunked body holding a request",
            with_body("Transfer-Encoding: chunked\r\n", &chunk_of(HIDDEN)),
            "hello",
            "hello,digits",
            UNREAD_BODY,
        ),
        same(
            "CL.TE: both, body holds a request after 0",
            with_body("Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", &format!("0\r\n\r\n{HIDDEN}")),
        ),
        same(
            "TE.CL: both, chunk holds a request",
            with_body("Transfer-Encoding: chunked\r\nContent-Length: 4\r\n", &chunk_of(HIDDEN)),
        ),
        same("TE xchunked with CL", with_body("Content-Length: 5\r\nTransfer-Encoding: xchunked\r\n", "hello")),
        same(
            "TE with space before the colon, and CL",
            with_body(&format!("Content-Length: {hidden_len}\r\nTransfer-Encoding : chunked\r\n"), HIDDEN),
        ),
        differs(
            "TE value after a tab",
            with_body("Transfer-Encoding:\tchunked\r\n", &chunk_of(HIDDEN)),
            "hello",
            "rej",
            TAB_OWS,
        ),
        same("TE chunked, chunked", with_body("Transfer-Encoding: chunked, chunked\r\n", &chunk_of(HIDDEN))),
        same("TE gzip, chunked", with_body("Transfer-Encoding: gzip, chunked\r\n", &chunk_of(HIDDEN))),
        same("TE identity", with_body("Transfer-Encoding: identity\r\n", "")),
        same(
            "TE twice: chunked then identity",
            with_body("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", &chunk_of(HIDDEN)),
        ),
        same("TE with a vertical tab", with_body("Transfer-Encoding: \x0bchunked\r\n", &chunk_of(HIDDEN))),
        same(
            "TE on HTTP/1.0",
            format!("GET /hello.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n{}{NEXT}", chunk_of(HIDDEN)),
        ),
        same("TE folded onto a second line", with_body("Transfer-Encoding:\r\n chunked\r\n", &chunk_of(HIDDEN))),
        same("Content-Length twice, same value", with_body("Content-Length: 5\r\nContent-Length: 5\r\n", "hello")),
        same("Content-Length twice, differing", with_body("Content-Length: 5\r\nContent-Length: 6\r\n", "hello!")),
        same("Content-Length list", with_body("Content-Length: 5, 5\r\n", "hello")),
        same("Content-Length with a sign", with_body("Content-Length: +5\r\n", "hello")),
        same("Content-Length in hex", with_body("Content-Length: 0x5\r\n", "hello")),
        same("Content-Length negative", with_body("Content-Length: -1\r\n", "")),
        same("Content-Length with a space inside", with_body("Content-Length: 5 0\r\n", "hello")),
        same("Content-Length too large", with_body("Content-Length: 99999999999999999999999\r\n", "")),
        differs(
            "chunk extension",
            with_body("Transfer-Encoding: chunked\r\n", "5;a=b\r\nhello\r\n0\r\n\r\n"),
            "hello",
            "hello,digits",
            UNREAD_BODY,
        ),
        differs(
            "chunk size in 0x",
            with_body("Transfer-Encoding: chunked\r\n", "0x5\r\nhello\r\n0\r\n\r\n"),
            "hello",
            "rej",
            UNREAD_BODY,
        ),
        differs(
            "chunk size overflowing",
            with_body("Transfer-Encoding: chunked\r\n", "fffffffffffffffff1\r\nhello\r\n0\r\n\r\n"),
            "hello",
            "rej",
            UNREAD_BODY,
        ),
        differs(
            "chunk data longer than its size",
            with_body("Transfer-Encoding: chunked\r\n", "3\r\nhello\r\n0\r\n\r\n"),
            "hello",
            "rej",
            UNREAD_BODY,
        ),
        // Field syntax.
        same("obs-fold in a field", get("/hello.txt", "X-A: a\r\n b\r\n")),
        same("space before a colon", get("/hello.txt", "X-A : a\r\n")),
        same("NUL in a field value", get("/hello.txt", "X-A: a\0b\r\n")),
        same(
            "field line starting with a space first",
            format!("GET /hello.txt HTTP/1.1\r\n X-A: a\r\nHost: x\r\n\r\n{NEXT}"),
        ),
        // Whitespace in the request line.
        differs(
            "two spaces after the method",
            format!("GET  /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n{NEXT}"),
            "rej",
            "hello,digits",
            ONE_SP,
        ),
        same("tab after the method", format!("GET\t/hello.txt HTTP/1.1\r\nHost: x\r\n\r\n{NEXT}")),
        same("blank line before the request", format!("\r\nGET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n{NEXT}")),
        differs(
            "lowercase method",
            format!("get /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n{NEXT}"),
            "rej,digits",
            "rej",
            METHOD_TOKEN,
        ),
        same("lowercase version", format!("GET /hello.txt http/1.1\r\nHost: x\r\n\r\n{NEXT}")),
        same("HTTP/1.0 without Host", "GET /hello.txt HTTP/1.0\r\n\r\n"),
        differs("HTTP/0.9 request line", "GET /hello.txt\r\n\r\n", "rej", "http0.9", NO_09),
        // Targets: encodings and dot segments.
        same("percent-encoded letter", get("/%68ello.txt", "")),
        same("percent-encoded dot", get("/hello%2etxt", "")),
        same("query string", get("/hello.txt?a=1", "")),
        same("directory without its slash", get("/site", "")),
        same("directory index", get("/site/", "")),
        same("dot segment", get("/./hello.txt", "")),
        differs("dot-dot inside the root", get("/site/../hello.txt", ""), "rej,digits", "hello,digits", DOTDOT),
        differs(
            "encoded dot-dot inside the root",
            get("/site/%2e%2e/hello.txt", ""),
            "rej,digits",
            "hello,digits",
            DOTDOT,
        ),
        differs("dot-dot above the root", get("/../hello.txt", ""), "rej,digits", "rej", TARGET_KEEPS),
        differs("encoded dot-dot above the root", get("/%2e%2e/hello.txt", ""), "rej,digits", "rej", TARGET_KEEPS),
        same("double slash", get("//hello.txt", "")),
        same("encoded slash", get("/site%2findex.html", "")),
        differs("encoded NUL", get("/hello.txt%00", ""), "rej,digits", "rej", TARGET_KEEPS),
        differs("bad percent escape", get("/hello%zz.txt", ""), "rej,digits", "rej", TARGET_KEEPS),
        same("missing file", get("/nope.txt", "")),
        same("absolute-form", get("http://x/hello.txt", "")),
        same("absolute-form, uppercase scheme", get("HTTP://x/hello.txt", "")),
        same("absolute-form without a path", format!("GET http://x HTTP/1.1\r\nHost: x\r\n\r\n{NEXT}")),
        same("absolute-form, other authority than Host", get("http://elsewhere/hello.txt", "")),
        same("absolute-form with userinfo", get("http://u@x/hello.txt", "")),
        same("asterisk-form with GET", get("*", "")),
        // Host.
        same("HTTP/1.1 without Host", format!("GET /hello.txt HTTP/1.1\r\n\r\n{NEXT}")),
        same("Host twice", get("/hello.txt", "Host: y\r\n")),
        same("Host with a port", format!("GET /hello.txt HTTP/1.1\r\nHost: x:8080\r\n\r\n{NEXT}")),
        same("Host with a space", format!("GET /hello.txt HTTP/1.1\r\nHost: x y\r\n\r\n{NEXT}")),
        same("Host with a slash", format!("GET /hello.txt HTTP/1.1\r\nHost: x/y\r\n\r\n{NEXT}")),
        differs(
            "Host with a bad port",
            format!("GET /hello.txt HTTP/1.1\r\nHost: x:8o\r\n\r\n{NEXT}"),
            "rej",
            "hello,digits",
            HOST_PORT,
        ),
        // Versions and sizes.
        differs(
            "HTTP/1.2",
            format!("GET /hello.txt HTTP/1.2\r\nHost: x\r\n\r\n{NEXT}"),
            "rej",
            "hello,digits",
            VERSION,
        ),
        same("HTTP/2.0 in a 1.x request line", format!("GET /hello.txt HTTP/2.0\r\nHost: x\r\n\r\n{NEXT}")),
        differs(
            "9 KB header field",
            get("/hello.txt", &format!("X-Big: {}\r\n", "a".repeat(9000))),
            "hello,digits",
            "rej",
            LIMITS,
        ),
    ]
}

/// HTTP/2 (`h2.py`'s cases, by name): where Spidey and nginx 1.22 answer a case
/// differently on purpose. Every other case must summarise the same on both.
pub fn h2_differs() -> Vec<(&'static str, Differs)> {
    let malformed = "RFC 9113 §8.2.2: a connection-specific field (or te other than trailers) makes the \
                     request malformed; nginx drops the field and serves it";
    let d = |spidey, nginx, why| Differs { spidey, nginx, why };
    vec![
        ("te gzip", d("rej", "hello", malformed)),
        ("connection field", d("rej", "hello", malformed)),
        ("keep-alive field", d("rej", "hello", malformed)),
        ("transfer-encoding field", d("rej", "hello", malformed)),
        ("upgrade field", d("rej", "hello", malformed)),
        (
            "pseudo-field after a field",
            d("rej", "hello", "RFC 9113 §8.3: a pseudo-field after a regular field is malformed; nginx serves it"),
        ),
        (
            "no :authority, no host",
            d(
                "hello",
                "rej",
                "RFC 9113 §8.3.1 lets a request carry no authority; nginx asks HTTP/2 for HTTP/1.1's Host (400)",
            ),
        ),
        (
            "stream ids going down",
            d(
                "- - goaway:1",
                "hello - goaway:1",
                "both end the connection (RFC 9113 §5.1.1); nginx first answers the stream it took, Spidey's \
                 GOAWAY goes out at the error and the connection closes after it (§5.4.1)",
            ),
        ),
        (
            "DATA on an idle stream",
            d("- goaway:1", "-", "RFC 9113 §5.1: a frame other than HEADERS or PRIORITY on an idle stream is a connection error; nginx ignores it"),
        ),
        (
            "RST_STREAM on an idle stream",
            d("- goaway:1", "-", "RFC 9113 §6.4: RST_STREAM on an idle stream is a connection error; nginx ignores it"),
        ),
    ]
}
