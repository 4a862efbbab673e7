//! Apache httpd's `HttpProtocolOptions Strict` conformance cases, run against every mode.
//!
//! Ported from `t/apache/http_strict.t` of the Apache HTTP Server test framework,
//! <https://github.com/apache/httpd-tests>, commit c80f65f35d181cde20df4bf51e07d2dbd928807a
//! (the file itself last changed in a55deb9d67c025ab96f6dbacf082c62e07784803), licensed under
//! the Apache License 2.0 (<http://www.apache.org/licenses/LICENSE-2.0>); the folding case
//! comes from `c-modules/fold/mod_fold.c` of the same repository. The request bytes are
//! Apache's; the expectations are the `http_strict` virtual host's column (the second, or the
//! first where there is one), since Spidey is always strict.
//!
//! Each row is: the raw request, what Apache's test expects, what Spidey answers, and, where
//! the two disagree, `why` Spidey deliberately differs. The table checks itself: a row whose
//! expectations disagree must say why, and a row that says why must disagree.
//!
//! Mapping: Apache's `GET /` is its htdocs index; here it is the fixture root, which Spidey
//! lists (200). Apache's `send_hdr.pl` (the `R` rows: a CGI script that writes the decoded
//! query as a response header field) is `cgi-bin/send_hdr.sh` here, the same script in sh.
//! Not ported: the `/regression-header` row, which needs mod_headers' `Header always set`
//! (Spidey has no configured response headers), and Apache's `http_unsafe` host.
//! Like Apache's test, every request is followed by a half-close and the whole reply read.

mod common;

use common::{status_of, Fixture, Spidey};
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

/// What Apache's test expects (its encoding: 1 any success, 0 any error, a status, undef a
/// dropped connection, 90 a headerless HTTP/0.9 reply).
#[derive(Debug, Clone, Copy)]
enum Apache {
    Success,
    Error,
    Is(u16),
    Drop,
}

/// What Spidey answers: a status, or no bytes at all before the close.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Got {
    Is(u16),
    Drop,
}
use Apache::{Drop as ADrop, Error as AErr, Is as A, Success as AOk};
use Got::{Drop as SDrop, Is as S};

struct Row {
    request: Vec<u8>,
    apache: Apache,
    spidey: Got,
    why: &'static str,
}

fn row(request: impl Into<Vec<u8>>, apache: Apache, spidey: Got, why: &'static str) -> Row {
    Row { request: request.into(), apache, spidey, why }
}

/// An `R` row: the header line `field` is sent base64-encoded to the script, which writes it
/// into its response head.
fn r(field: &[u8], apache: Apache, spidey: Got, why: &'static str) -> Row {
    let q = base64(field);
    row(format!("GET /cgi-bin/send_hdr.sh?{q} HTTP/1.0\r\n\r\n"), apache, spidey, why)
}

const LF_OK: &str = "RFC 9112 §2.2 lets a server take a bare LF as a line end; Spidey (httparse) does, as nginx \
                     does. A bare CR is still refused (the GET\\r/ and F\\ro rows).";
const VERSION_505: &str = "Spidey speaks only HTTP/1.0 and 1.1 and answers any other well-formed version 505 \
                           (RFC 9110 §15.6.6); Apache serves it as 1.x.";
const CLEAR_STATUS: &str = "House rule: bad input gets a clear status before the close, never a silent drop; \
                            a bare CR (or a request line without a version: no HTTP/0.9 here) is 400.";
const WHOLE_HEAD: &str = "Spidey judges a head once it is whole; a client that half-closes inside the head gets \
                          the connection closed with no answer (there is no request), as nginx does. Apache \
                          checks the request line and each field as it reads them.";
const NUMERIC_HOST: &str = "Spidey has no virtual hosts and never resolves or connects to the authority, which is \
                            a syntactically valid reg-name (RFC 3986 §3.2.2); Apache's strict mode refuses \
                            numeric hosts that are not dotted-quad IPv4.";
const BAD_GATEWAY: &str = "A script's malformed header block is the gateway's fault: Spidey answers 502 Bad \
                           Gateway (RFC 9110 §15.6.3), Apache 500. Both refuse to pass the field on.";

#[rustfmt::skip]
fn rows() -> Vec<Row> {
    vec![
        row(&b"GET / HTTP/1.0\r\n\r\n"[..],                         AOk,    S(200), ""),
        row(&b"GET / HTTP/1.0\n\n"[..],                             A(400), S(200), LF_OK),
        row(&b"get / HTTP/1.0\r\n\r\n"[..],                         A(501), S(501), ""),
        row(&b"G ET / HTTP/1.0\r\n\r\n"[..],                        A(400), S(400), ""),
        row(&b"G\0ET / HTTP/1.0\r\n\r\n"[..],                       A(400), S(400), ""),
        row(&b"G/T / HTTP/1.0\r\n\r\n"[..],                         A(400), S(400), ""),
        row(&b"GET /\0 HTTP/1.0\r\n\r\n"[..],                       A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\0\r\n\r\n"[..],                       A(400), S(400), ""),
        row(&b"GET\x0c/ HTTP/1.0\r\n\r\n"[..],                      A(400), S(400), ""),
        row(&b"GET\r/ HTTP/1.0\r\n\r\n"[..],                        A(400), S(400), ""),
        row(&b"GET\t/ HTTP/1.0\r\n\r\n"[..],                        A(400), S(400), ""),
        row(&b"GET / HTT/1.0\r\n\r\n"[..],                          AErr,   S(400), ""),
        row(&b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n"[..],      AOk,    S(200), ""),
        row(&b"GET / HTTP/2.0\r\nHost: localhost\r\n\r\n"[..],      AOk,    S(505), VERSION_505),
        row(&b"GET / HTTP/1.2\r\nHost: localhost\r\n\r\n"[..],      AOk,    S(505), VERSION_505),
        row(&b"GET / HTTP/1.11\r\nHost: localhost\r\n\r\n"[..],     A(400), S(400), ""),
        row(&b"GET / HTTP/10.0\r\nHost: localhost\r\n\r\n"[..],     A(400), S(400), ""),
        row(&b"GET / HTTP/1.0  \r\nHost: localhost\r\n\r\n"[..],    A(400), S(400), ""),
        row(&b"GET / HTTP/1.0 x\r\nHost: localhost\r\n\r\n"[..],    A(400), S(400), ""),
        row(&b"GET / HTTP/\r\nHost: localhost\r\n\r\n"[..],         AErr,   S(400), ""),
        row(&b"GET / HTTP/0.9\r\n\r\n"[..],                         AErr,   S(505), ""),
        row(&b"GET / HTTP/0.8\r\n\r\n"[..],                         AErr,   S(505), ""),
        row(&b"GET /\x01 HTTP/1.0\r\n\r\n"[..],                     A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nFoo: bar\r\n\r\n"[..],             A(200), S(200), ""),
        row(&b"GET / HTTP/1.0\r\nFoo:bar\r\n\r\n"[..],              A(200), S(200), ""),
        row(&b"GET / HTTP/1.0\r\nFoo: b\0ar\r\n\r\n"[..],           A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nFoo: b\x01ar\r\n\r\n"[..],         A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nFoo\r\n\r\n"[..],                  A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nFoo bar\r\n\r\n"[..],              A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\n: bar\r\n\r\n"[..],                A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nX: bar\r\n\r\n"[..],               A(200), S(200), ""),
        row(&b"GET / HTTP/1.0\r\nFoo bar:bash\r\n\r\n"[..],         A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nFoo :bar\r\n\r\n"[..],             A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\n Foo:bar\r\n\r\n"[..],             A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nF\x01o: bar\r\n\r\n"[..],          A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nF\ro: bar\r\n\r\n"[..],            A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nF\to: bar\r\n\r\n"[..],            A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nFo: b\tar\r\n\r\n"[..],            A(200), S(200), ""),
        row(&b"GET / HTTP/1.0\r\nFo: bar\r\r\n\r\n"[..],            A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\r"[..],                             ADrop,  S(400), CLEAR_STATUS),
        row(&b"GET /\r\n"[..],                                      ADrop,  S(400), CLEAR_STATUS),
        row(&b"GET /#frag HTTP/1.0\r\n"[..],                        A(400), SDrop,  WHOLE_HEAD),
        row(&b"GET / HTTP/1.0\r\nHost: localhost\r\nHost: localhost\r\n\r\n"[..], A(400), S(400), ""),
        row(&b"GET http://017700000001/ HTTP/1.0\r\n\r\n"[..],      A(400), S(200), NUMERIC_HOST),
        row(&b"GET http://0x7f.1/ HTTP/1.0\r\n\r\n"[..],            A(400), S(200), NUMERIC_HOST),
        row(&b"GET http://127.0.0.1/ HTTP/1.0\r\n\r\n"[..],         A(200), S(200), ""),
        row(&b"GET http://127.01.0.1/ HTTP/1.0\r\n\r\n"[..],        A(400), S(200), NUMERIC_HOST),
        row(&b"GET http://%3127.0.0.1/ HTTP/1.0\r\n\r\n"[..],       A(400), S(200), NUMERIC_HOST),
        row(&b"GET / HTTP/1.0\r\nHost: localhost:80\r\nHost: localhost:80\r\n\r\n"[..], A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nHost: localhost:80 x\r\n\r"[..],   A(400), SDrop,  WHOLE_HEAD),
        row(&b"GET http://localhost:80/ HTTP/1.0\r\n\r\n"[..],      A(200), S(200), ""),
        row(&b"GET http://localhost:80x/ HTTP/1.0\r\n\r\n"[..],     A(400), S(400), ""),
        row(&b"GET http://localhost:80:80/ HTTP/1.0\r\n\r\n"[..],   A(400), S(400), ""),
        row(&b"GET http://localhost::80/ HTTP/1.0\r\n\r\n"[..],     A(400), S(400), ""),
        row(&b"GET http://foo@localhost:80/ HTTP/1.0\r\n\r\n"[..],  A(400), S(400), ""),
        row(&b"GET http://[::1]/ HTTP/1.0\r\n\r\n"[..],             AOk,    S(200), ""),
        row(&b"GET http://[::1:2]/ HTTP/1.0\r\n\r\n"[..],           AOk,    S(200), ""),
        row(&b"GET http://[4712::abcd]/ HTTP/1.0\r\n\r\n"[..],      AOk,    S(200), ""),
        row(&b"GET http://[4712::abcd:1]/ HTTP/1.0\r\n\r\n"[..],    AOk,    S(200), ""),
        row(&b"GET http://[4712::abcd::]/ HTTP/1.0\r\n\r\n"[..],    A(400), S(400), ""),
        row(&b"GET http://[4712:abcd::]/ HTTP/1.0\r\n\r\n"[..],     AOk,    S(200), ""),
        row(&b"GET http://[4712::abcd]:8000/ HTTP/1.0\r\n\r\n"[..], AOk,    S(200), ""),
        row(&b"GET http://4713::abcd:8001/ HTTP/1.0\r\n\r\n"[..],   A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nHost: [::1]\r\n\r\n"[..],          AOk,    S(200), ""),
        row(&b"GET / HTTP/1.0\r\nHost: [::1:2]\r\n\r\n"[..],        AOk,    S(200), ""),
        row(&b"GET / HTTP/1.0\r\nHost: [4711::abcd]\r\n\r\n"[..],   AOk,    S(200), ""),
        row(&b"GET / HTTP/1.0\r\nHost: [4711::abcd:1]\r\n\r\n"[..], AOk,    S(200), ""),
        row(&b"GET / HTTP/1.0\r\nHost: [4711:abcd::]\r\n\r\n"[..],  AOk,    S(200), ""),
        row(&b"GET / HTTP/1.0\r\nHost: [4711::abcd]:8000\r\n\r\n"[..], AOk, S(200), ""),
        row(&b"GET / HTTP/1.0\r\nHost: 4714::abcd:8001\r\n\r\n"[..], A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nHost: abc\xa0\r\n\r\n"[..],        A(400), S(400), ""),
        row(&b"GET / HTTP/1.0\r\nHost: abc\\foo\r\n\r\n"[..],       A(400), S(400), ""),
        row(&b"GET http://foo/ HTTP/1.0\r\nHost: bar\r\n\r\n"[..],  A(200), S(200), ""),
        row(&b"GET http://foo:81/ HTTP/1.0\r\nHost: bar\r\n\r\n"[..], A(200), S(200), ""),
        row(&b"GET http://[::1]:81/ HTTP/1.0\r\nHost: bar\r\n\r\n"[..], A(200), S(200), ""),
        row(&b"GET http://10.0.0.1:81/ HTTP/1.0\r\nHost: bar\r\n\r\n"[..], A(200), S(200), ""),
        row(&b"GET / HTTP/1.0\r\nHost: foo-bar.example.com\r\n\r\n"[..], A(200), S(200), ""),
        row(&b"GET / HTTP/1.0\r\nHost: foo_bar.example.com\r\n\r\n"[..], A(200), S(200), ""),
        row(&b"GET http://foo_bar/ HTTP/1.0\r\n\r\n"[..],           A(200), S(200), ""),
        // Response header fields written by a script.
        r(b"Foo: bar",     A(200), S(200), ""),
        r(b"Foo:",         A(200), S(200), ""),
        r(b": bar",        A(500), S(502), BAD_GATEWAY),
        r(b"F\0oo: bar",   A(500), S(502), BAD_GATEWAY),
        r(b"F\x01oo: bar", A(500), S(502), BAD_GATEWAY),
        r(b"F\noo: bar",   A(500), S(502), BAD_GATEWAY),
        r(b"Foo: b\tar",   A(200), S(200), ""),
        r(b"Foo: b\x01ar", A(500), S(502), BAD_GATEWAY),
    ]
}

fn agrees(apache: Apache, spidey: Got) -> bool {
    match (apache, spidey) {
        (AOk, S(s)) => (200..400).contains(&s),
        (AErr, S(s)) => s >= 400,
        (A(a), S(s)) => a == s,
        (ADrop, SDrop) => true,
        _ => false,
    }
}

/// The fixture plus Apache's two scripts: `send_hdr.sh` (the `R` rows) and `fold.sh`, which
/// writes a header field folded over two lines, as `mod_fold` does.
fn fixture() -> Fixture {
    let fx = Fixture::new();
    let bin = fx.root().join("cgi-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = |name: &str, body: &str| {
        std::fs::write(bin.join(name), body).unwrap();
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    script(
        "send_hdr.sh",
        "#!/bin/sh\nprintf 'Content-type: text/plain\\r\\n'\nprintf '%s' \"$QUERY_STRING\" | base64 -d\nprintf '\\r\\n\\r\\nHi!\\n'\n",
    );
    script("fold.sh", "#!/bin/sh\nprintf 'Content-Type: text/html\\r\\nFoo: Bar\\r\\n Baz\\r\\n\\r\\nfolded\\n'\n");
    fx
}

/// Sends `request`, half-closes, and reads the whole reply (as Apache's test does).
fn exchange(server: &Spidey, request: &[u8]) -> Result<Vec<u8>, String> {
    let mut s = server.connect();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(request);
    let _ = s.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => Ok(out),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(out),
        Err(e) => Err(format!("not closed within 5 s: {e}; got {:?}", String::from_utf8_lossy(&out))),
    }
}

fn http_strict_cases_answer_as_the_table_says(mode: &str) {
    let fx = fixture();
    let server = Spidey::start(mode, &fx.root(), &["--cgi"]);
    let rows = rows();
    let mut failures = Vec::new();
    for row in &rows {
        let name = format!("{:?}", String::from_utf8_lossy(&row.request));
        if agrees(row.apache, row.spidey) != row.why.is_empty() {
            failures.push(format!("{name}: table: a difference from Apache needs a why, and only a difference"));
        }
        let got = match exchange(&server, &row.request) {
            Ok(out) if out.is_empty() => SDrop,
            Ok(out) => S(status_of(&String::from_utf8_lossy(&out))),
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        if got != row.spidey {
            failures.push(format!("{name}: got {got:?}, want {:?} (Apache: {:?})", row.spidey, row.apache));
        }
    }
    assert!(failures.is_empty(), "{} of {} rows failed:\n{}", failures.len(), rows.len(), failures.join("\n"));
}

/// Apache's fold case: a header field whose value is folded over two lines (`Foo: Bar\r\n
/// Baz`). Apache unfolds it (200, `Foo: Bar Baz`). Spidey refuses obs-fold in a script's head
/// (RFC 9112 §5.2 deprecates it) and answers 502, so a fold never reaches the client, folded
/// or not.
fn http_strict_folded_response_field_is_never_passed_on(mode: &str) {
    let fx = fixture();
    let server = Spidey::start(mode, &fx.root(), &["--cgi"]);
    let out = exchange(&server, b"GET /cgi-bin/fold.sh HTTP/1.0\r\n\r\n").unwrap();
    let text = String::from_utf8_lossy(&out);
    assert_eq!(status_of(&text), 502, "{text:?}");
    assert!(!text.contains("Baz"), "{text:?}");
}

fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A client speaking HTTP/2 by prior knowledge (Python's hyper-h2, Debian's python3-h2,
/// over TLS after offering ALPN `h2` and `http/1.1`): it prints the ALPN agreed, the
/// HTTP/2 events it read until the server closed, and (over TLS) what a client offering
/// `h2` alone gets.
const H2_CLIENT: &str = r#"
import socket, ssl, sys
import h2.config, h2.connection, h2.events
port, ca = int(sys.argv[1]), sys.argv[2]
def connect(alpn):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if ca == "-":
        return s, "-"
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(alpn)
    s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    return s, s.selected_alpn_protocol()
s, agreed = connect(["h2", "http/1.1"])
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection()
c.send_headers(1, [(":method", "GET"), (":path", "/hello.txt"), (":scheme", "http"), (":authority", "t")], end_stream=True)
s.sendall(c.data_to_send())
seen = []
while True:
    data = s.recv(65536)
    if not data:
        break
    for e in c.receive_data(data):
        if isinstance(e, h2.events.ConnectionTerminated):
            seen.append("GOAWAY %d last %d %s" % (e.error_code, e.last_stream_id, e.additional_data.decode()))
        else:
            seen.append(type(e).__name__)
alone = "-"
if ca != "-":
    try:
        connect(["h2"])
        alone = "accepted"
    except ssl.SSLError as e:
        alone = "no application protocol" if "no application protocol" in str(e) else str(e)
print(agreed, "|", ", ".join(seen), "|", alone)
"#;

/// The protocol is chosen before any HTTP/1 parsing: HTTP/2's preface is answered in
/// HTTP/2 (SETTINGS, then GOAWAY `HTTP_1_1_REQUIRED` = 13) and the connection closes,
/// where the HTTP/1 parser alone answered `505` in HTTP/1.1 bytes an HTTP/2 client cannot
/// read. Over TLS, a client offering `h2` and `http/1.1` gets `http/1.1`, and one offering
/// `h2` alone is refused in the handshake (RFC 7301's `no_application_protocol`).
fn http2_by_prior_knowledge_gets_http2s_own_refusal(mode: &str) {
    let fx = Fixture::new();
    let s = Spidey::start(mode, &fx.root(), &[]);
    let ca = if s.tls { common::tls::ca_file().to_str().unwrap().to_string() } else { "-".into() };
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", H2_CLIENT, &s.port.to_string(), &ca])
        .output()
        .expect("/usr/bin/python3");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text} {}", String::from_utf8_lossy(&out.stderr));
    let goaway = "RemoteSettingsChanged, GOAWAY 13 last 0 HTTP/2 is not served here; use HTTP/1.1";
    let want =
        if s.tls { format!("http/1.1 | {goaway} | no application protocol") } else { format!("- | {goaway} | -") };
    assert_eq!(text.trim(), want);
    // The server still serves HTTP/1.1 on the next connection.
    assert_eq!(s.get("/hello.txt", &[]).status, 200);
}

for_each_mode!(
    http_strict_cases_answer_as_the_table_says,
    http_strict_folded_response_field_is_never_passed_on,
    http2_by_prior_knowledge_gets_http2s_own_refusal,
);
