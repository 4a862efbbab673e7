//! The case table every adversarial class is written in: raw request bytes → the status of
//! the one response expected, and whether the server must then close the connection.
//!
//! A case passes only if exactly one response comes back: when the connection is expected to
//! close, nothing may follow that response (so a request hidden in a body is never answered);
//! when it is expected to stay open, a follow-up request on it must be answered 200.

use crate::common::Conn;
use crate::common::{head_field, status_of, ReadRetry, Spidey, HELLO};
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

/// The connection is closed after the response.
pub const CLOSE: bool = true;
/// The connection stays open after the response.
pub const OPEN: bool = false;

pub struct Case {
    pub name: &'static str,
    pub request: Vec<u8>,
    pub status: u16,
    pub closes: bool,
}

/// One table line.
pub fn case(name: &'static str, request: impl Into<Vec<u8>>, status: u16, closes: bool) -> Case {
    Case { name, request: request.into(), status, closes }
}

/// Runs every case on its own connection and reports all failures at once.
pub fn run_table(server: &Spidey, cases: &[Case]) {
    let failures: Vec<String> =
        cases.iter().filter_map(|c| check(server, c).err().map(|e| format!("{}: {e}", c.name))).collect();
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

fn check(server: &Spidey, case: &Case) -> Result<(), String> {
    let mut s = server.connect();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // The server may answer and close before taking every byte of an oversized request.
    let _ = s.write_all(&case.request);
    let (head, _) = read_one(&mut s).map_err(|e| format!("no response: {e}"))?;
    let status = status_of(&head);
    if status != case.status {
        return Err(format!("status {status}, want {}; head {head:?}", case.status));
    }
    if case.closes {
        let after = read_rest(&mut s)?;
        if !after.is_empty() {
            return Err(format!("bytes after the response (a second answer?): {:?}", String::from_utf8_lossy(&after)));
        }
        if head_field(&head, "connection") != Some("close") {
            return Err(format!("closed without Connection: close; head {head:?}"));
        }
    } else {
        s.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n").map_err(|e| format!("follow-up write: {e}"))?;
        let (head, body) = read_one(&mut s).map_err(|e| format!("follow-up: {e}"))?;
        if status_of(&head) != 200 || body != HELLO.as_bytes() {
            return Err(format!("follow-up on the kept connection got {head:?}"));
        }
    }
    Ok(())
}

/// Reads one response: its head and a `Content-Length` body.
pub fn read_one(s: &mut Conn) -> std::io::Result<(String, Vec<u8>)> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read_retry(&mut byte)? == 0 {
            return Err(std::io::Error::new(
                ErrorKind::UnexpectedEof,
                format!("EOF after {:?}", String::from_utf8_lossy(&head)),
            ));
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let len = head_field(&head, "content-length").and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
    let mut body = vec![0u8; if head.starts_with("HTTP/1.1 304") { 0 } else { len }];
    s.read_exact(&mut body)?;
    Ok((head, body))
}

/// Everything until the server closes (a reset counts as closing), within 5 s.
fn read_rest(s: &mut Conn) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => Ok(out),
        Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(out),
        Err(e) => Err(format!("not closed: {e}")),
    }
}

/// Sends one GET on a fresh connection and returns the response.
pub fn get(server: &Spidey, target: &str, extra: &str) -> (String, Vec<u8>) {
    let mut s = server.connect();
    let req = format!("GET {target} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    read_one(&mut s).unwrap_or_else(|e| panic!("GET {target}: {e}"))
}
