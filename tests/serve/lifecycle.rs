//! The server's life: the startup line, the access log (and `--quiet`), SIGTERM finishing a
//! response in flight.

use super::start;
use crate::common::*;
use std::io::Write;
use std::time::Duration;

crate::for_each_mode!(
    startup_line_names_port_and_mode,
    access_log_is_combined_format,
    leading_empty_lines_are_not_logged_as_the_request_line,
    quiet_has_no_access_log,
    sigterm_finishes_in_flight_response,
);

fn startup_line_names_port_and_mode(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    assert_ne!(s.port, 0);
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
