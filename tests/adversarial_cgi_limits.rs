//! Adversarial CGI cases about time and numbers: a request body trickled to a script is
//! bounded as a whole (`--body-timeout`, `--body-min-rate`: 408 and close), scripts running
//! at once are capped (`--max-cgi`: 503 with Retry-After beyond it), and a script that
//! leaves its process group is still killed when its time is up or its client leaves.
//!
//! Every case runs against every mode.

mod common;

use common::{status_of, Fixture, ReadRetry, Spidey};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Writes an executable script.
fn script(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn start(mode: &str, root: &Path, args: &[&str]) -> Spidey {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spidey"));
    command.arg("serve").arg(root).args(["--port", "0", "--mode", mode, "--quiet"]).args(args);
    Spidey::spawn(command, mode)
}

/// Reads until the server closes (or `limit` passes); returns what came and whether it closed.
fn read_until_close(s: &mut std::net::TcpStream, limit: Duration) -> (String, bool) {
    let end = Instant::now() + limit;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (String::from_utf8_lossy(&out).into_owned(), false);
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read_retry(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&out).into_owned(), true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (String::from_utf8_lossy(&out).into_owned(), true)
            }
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), false),
        }
    }
}

/// A CGI request body trickled at a byte per 200 ms (5 B/s, below --body-min-rate) is cut
/// off at --body-timeout: 408, and the connection closed, within a bound, however the
/// client keeps trickling. Before the fix each read got a fresh timeout, so the trickle
/// held the connection (and the script's slot) for as long as the client liked.
fn trickled_cgi_body_is_408(mode: &str) {
    let fx = Fixture::new();
    let root = fx.root();
    script(&root, "cgi-bin/echo", "#!/bin/sh\ncat >/dev/null\nprintf 'Content-Type: text/plain\\r\\n\\r\\nread'\n");
    let args = ["--body-timeout", "1s", "--idle-timeout", "1s", "--head-timeout", "2s", "--send-timeout", "2s"];
    let server = start(mode, &root, &args);
    let mut s = server.connect();
    let head = "POST /cgi-bin/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
    s.write_all(head.as_bytes()).unwrap();
    let mut writer = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..100 {
            if writer.write_all(b"x").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let start = Instant::now();
    let (text, closed) = read_until_close(&mut s, Duration::from_secs(8));
    let took = start.elapsed();
    drop(s);
    let _ = trickle.join();
    assert_eq!(status_of(&text), 408, "{text}");
    assert!(closed, "the connection stayed open after the 408 ({took:?}): {text}");
    assert!(took < Duration::from_secs(5), "408 and close took {took:?}");
    // A body that keeps above the minimum rate may take longer than --body-timeout:
    // 1000 bytes at about 650 B/s, 1.5 s in all.
    let mut s = server.connect();
    s.write_all(head.as_bytes()).unwrap();
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(150));
        s.write_all(&[b'y'; 100]).unwrap();
    }
    let (head, _) = common::read_response(&mut s);
    assert_eq!(status_of(&head), 200, "a body above the minimum rate: {head}");
    // The server still serves.
    assert_eq!(server.get("/hello.txt", &[]).status, 200);
}

crate::for_each_mode!(trickled_cgi_body_is_408);
