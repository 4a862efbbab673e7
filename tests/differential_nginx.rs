//! Differential test: the same raw bytes go to Spidey (every mode) and to nginx from
//! Debian's package, started here on the same fixture; where and how each splits the stream
//! into requests, and which it accepts, must agree, except for the differences listed in
//! the table with their reasons.
//!
//! The method is the HTTP Garden's (github.com/narfindustries/http-garden, `tools/diff.py`):
//! feed one payload to several servers, reduce what each made of it to a comparable form,
//! and call any mismatch a discrepancy unless it is a known, explained quirk (its
//! `quirks.yml`). The Garden's servers echo the parsed request; here the servers are
//! unmodified, so what each made of a request is read from its answer instead: the body of
//! a 200 names the fixture file served (so the parsed target shows), and every response of
//! a pipelined stream is listed (so where a request ended, and whether bytes inside a body
//! were taken for a request, shows).
//!
//! Each request stream is sent at once, then half-closed; the replies are read to the close
//! and summarised as tokens, one per response: the file name for a 200 whose body is a
//! fixture file, `404`, `3xx`, `ok` (another success), `rej` (4xx other than 404, 5xx), or
//! `http0.9` (a reply without a status line).
//!
//! nginx must be installed (`apt-get install nginx-light`); without it the test fails.

mod common;

use common::nginx::Nginx;
use common::{Fixture, Spidey, HELLO};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

#[path = "differential_nginx/cases.rs"]
mod cases;

/// Sends `stream`, half-closes, reads every response to the close, and summarises them.
fn summarise(mut s: common::Conn, stream: &[u8]) -> String {
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(stream);
    let _ = s.shutdown(Shutdown::Write);
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Err(e) => return format!("(not closed within 5 s: {e})"),
    }
    let mut tokens = Vec::new();
    let mut rest = &out[..];
    while !rest.is_empty() {
        if !rest.starts_with(b"HTTP/") {
            tokens.push("http0.9".into()); // a headerless HTTP/0.9 reply
            break;
        }
        let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else {
            tokens.push(format!("(garbage {:?})", String::from_utf8_lossy(rest)));
            break;
        };
        let head = String::from_utf8_lossy(&rest[..end + 4]).into_owned();
        rest = &rest[end + 4..];
        let status = common::status_of(&head);
        let body = if let Some(len) = common::head_field(&head, "content-length") {
            let len = len.parse::<usize>().unwrap_or(0).min(rest.len());
            let (body, after) = rest.split_at(len);
            rest = after;
            body.to_vec()
        } else if common::head_field(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            let (body, after) = dechunk(rest);
            rest = after;
            body
        } else {
            std::mem::take(&mut rest).to_vec()
        };
        tokens.push(token(status, &body));
    }
    tokens.join(",")
}

fn token(status: u16, body: &[u8]) -> String {
    let named = [
        (HELLO.as_bytes(), "hello"),
        (&b"0123456789"[..], "digits"),
        (&b"<h1>index</h1>\n"[..], "index"),
        (cases::SMUGGLED.as_bytes(), "SMUGGLED"),
    ];
    match status {
        200 => named.iter().find(|(b, _)| *b == body).map_or("ok", |(_, n)| n).to_string(),
        404 => "404".into(),
        300..=399 => "3xx".into(),
        201..=299 => "ok".into(),
        0 => "(no status)".into(),
        _ => "rej".into(),
    }
}

/// A chunked body and what follows it.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, &[u8]) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else { return (body, &[]) };
        let size = std::str::from_utf8(&rest[..eol]).ok().and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let Some(size) = size else { return (body, &[]) };
        rest = &rest[eol + 2..];
        if size == 0 {
            return (body, rest.get(2..).unwrap_or(&[]));
        }
        let take = size.min(rest.len());
        body.extend_from_slice(&rest[..take]);
        rest = rest.get(take + 2..).unwrap_or(&[]);
    }
}

fn spidey_and_nginx_split_and_accept_the_same_streams(mode: &str) {
    let fx = Fixture::new();
    std::fs::write(fx.root().join("smuggled.txt"), cases::SMUGGLED).unwrap();
    let spidey = Spidey::start(mode, &fx.root(), &[]);
    let nginx = Nginx::start(&fx.root(), "", "autoindex on;");
    let rows = cases::rows();
    let mut failures = Vec::new();
    for row in &rows {
        // Spidey over TLS in the TLS pass (the same bytes inside it); nginx always plain.
        let got_spidey = summarise(spidey.connect(), &row.stream);
        let nginx_conn = TcpStream::connect(("127.0.0.1", nginx.port)).expect("connect");
        let got_nginx = summarise(common::Conn::plain(nginx_conn), &row.stream);
        let (want_spidey, want_nginx) = match &row.differs {
            None => (got_nginx.as_str(), got_nginx.as_str()),
            Some(d) => (d.spidey, d.nginx),
        };
        if got_spidey != want_spidey || got_nginx != want_nginx {
            failures.push(format!(
                "{}: spidey {got_spidey:?} nginx {got_nginx:?}{}",
                row.name,
                row.differs.as_ref().map_or(String::new(), |d| format!(
                    " (listed difference: spidey {:?} nginx {:?}, because: {})",
                    d.spidey, d.nginx, d.why
                ))
            ));
        }
        if got_spidey.contains("SMUGGLED") {
            failures.push(format!("{}: Spidey answered a request hidden in a body", row.name));
        }
    }
    assert!(failures.is_empty(), "{} of {} streams disagree:\n{}", failures.len(), rows.len(), failures.join("\n"));
}

/// Runs `h2.py`'s cases against the HTTP/2 server on `port` (over TLS with `ca`): each
/// case's name and summary.
fn h2_cases(port: u16, ca: Option<&std::path::Path>) -> Vec<(String, String)> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential_nginx/h2.py");
    let (tls, ca) = match ca {
        Some(ca) => ("1", ca.to_str().unwrap().to_string()),
        None => ("0", "-".to_string()),
    };
    let out = std::process::Command::new("/usr/bin/python3")
        .arg(&script)
        .args([&port.to_string(), tls, &ca])
        .output()
        .expect("/usr/bin/python3 (python3-hpack) runs");
    assert!(out.status.success(), "h2.py: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().filter_map(|l| l.split_once('\t')).map(|(n, s)| (n.to_string(), s.to_string())).collect()
}

/// The same HTTP/2 frames, case by case (`differential_nginx/h2.py`: pseudo-fields,
/// connection-specific fields, field syntax, paths, bodies against their length,
/// trailers, stream ids, frames on idle streams), to Spidey (`--http2`) and to nginx
/// (`listen ... http2`, h2c by prior knowledge): which each serves, refuses or ends the
/// connection on must agree, except for the differences listed with their reasons.
fn spidey_and_nginx_accept_the_same_http2_requests(mode: &str) {
    let fx = Fixture::new();
    let spidey = Spidey::start(mode, &fx.root(), &["--http2", "-q"]);
    let ca = spidey.tls.then(common::tls::ca_file);
    let got_spidey = h2_cases(spidey.port, ca);
    // nginx's answers do not depend on Spidey's mode: asked once for every mode.
    static NGINX_H2: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    let got_nginx = NGINX_H2.get_or_init(|| {
        // nginx 1.22 stalls HTTP/2 with sendfile on (docs/performance.md).
        let nginx = Nginx::start(&fx.root(), "http2", "sendfile off;");
        h2_cases(nginx.port, None)
    });
    assert!(got_spidey.len() >= 40, "h2.py ran {} cases", got_spidey.len());
    assert_eq!(got_spidey.len(), got_nginx.len(), "the same cases on both");
    let listed = cases::h2_differs();
    let mut failures = Vec::new();
    for ((name, spidey), (_, nginx)) in got_spidey.iter().zip(got_nginx) {
        let (want_spidey, want_nginx) = match listed.iter().find(|(n, _)| n == name) {
            Some((_, d)) => (d.spidey, d.nginx),
            None => (nginx.as_str(), nginx.as_str()),
        };
        if spidey != want_spidey || nginx != want_nginx {
            failures
                .push(format!("{name}: spidey {spidey:?} nginx {nginx:?} (want {want_spidey:?} and {want_nginx:?})"));
        }
    }
    assert!(listed.iter().all(|(n, _)| got_spidey.iter().any(|(m, _)| m == n)), "a listed case no longer runs");
    let n = got_spidey.len();
    assert!(failures.is_empty(), "{} of {n} HTTP/2 cases disagree:\n{}", failures.len(), failures.join("\n"));
}

for_each_mode!(spidey_and_nginx_split_and_accept_the_same_streams, spidey_and_nginx_accept_the_same_http2_requests);
