//! Limits: oversized request lines, heads, field counts and bodies are refused with their
//! status and the connection closed; request caps per connection hold; many connections at
//! once are all answered.

use super::table::{case, read_one, run_table, Case, CLOSE, OPEN};
use crate::common::{head_field, status_of, Fixture, Spidey};
use std::io::Write;

const ARGS: &[&str] =
    &["--quiet", "--max-body", "1000", "--max-request-line", "1024", "--max-head", "4096", "--max-headers", "20"];

fn with_fields(n: usize, len: usize) -> Vec<u8> {
    let mut r = b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..n {
        r.extend_from_slice(format!("X-{i}: {}\r\n", "v".repeat(len)).as_bytes());
    }
    r.extend_from_slice(b"\r\n");
    r
}

fn long_line(target_len: usize, end: &str) -> Vec<u8> {
    format!("GET /{} HTTP/1.1{end}", "a".repeat(target_len)).into_bytes()
}

fn limit_cases() -> Vec<Case> {
    vec![
        case("request line at the limit", long_line(1024 - 14, "\r\nHost: x\r\n\r\n"), 404, OPEN),
        case("request line one over", long_line(1024 - 13, "\r\nHost: x\r\n\r\n"), 414, CLOSE),
        case("request line 100 KiB, never ended", long_line(100 * 1024, ""), 414, CLOSE),
        case("head just under max-head", with_fields(1, 4096 - 60), 200, OPEN),
        case("head over max-head", with_fields(2, 3000), 431, CLOSE),
        case("head of 1 MiB", with_fields(200, 5000), 431, CLOSE),
        case("field count at the limit", with_fields(19, 1), 200, OPEN),
        case("field count one over", with_fields(20, 1), 431, CLOSE),
        case("field count 1000", with_fields(1000, 1), 431, CLOSE),
        case(
            "body at max-body",
            &b"POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"[..],
            405,
            CLOSE,
        ),
        case(
            "body over max-body",
            &b"POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n"[..],
            413,
            CLOSE,
        ),
        case(
            "body of 10^17 bytes",
            &b"PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000000000000\r\n\r\n"[..],
            413,
            CLOSE,
        ),
    ]
}

fn limits(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), ARGS);
    run_table(&server, &limit_cases());
}

/// `--max-requests 3`: the third response on a connection says close, and nothing follows.
fn max_requests_per_connection(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &["--quiet", "--max-requests", "3"]);
    let mut s = server.connect();
    let pipelined = "GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n".repeat(5);
    s.write_all(pipelined.as_bytes()).unwrap();
    let heads: Vec<String> = (0..3).map(|_| read_one(&mut s).unwrap().0).collect();
    let connection: Vec<Option<&str>> = heads.iter().map(|h| head_field(h, "connection")).collect();
    assert_eq!(connection, [None, None, Some("close")], "{heads:?}");
    assert!(heads.iter().all(|h| status_of(h) == 200));
    assert_eq!(crate::common::read_to_close(&mut s), "", "a fourth response was sent");
}

/// 200 connections open at once, each with a whole request: every one is answered 200.
fn many_simultaneous_connections(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &["--quiet"]);
    let mut conns: Vec<_> = (0..200).map(|_| server.connect()).collect();
    for s in &mut conns {
        s.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    }
    let statuses: Vec<u16> = conns.iter_mut().map(|s| status_of(&read_one(s).unwrap().0)).collect();
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
}

crate::for_each_mode!(limits, max_requests_per_connection, many_simultaneous_connections);
