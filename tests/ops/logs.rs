//! `--access-log FILE` and the signals: SIGHUP reopens the file (logrotate's rename, HUP,
//! new lines in a new file), in the workers of `fork` and `prefork` too though only the
//! master is signalled; SIGUSR1 prints the metrics on stderr; neither stops the server.

use crate::common::{signal, Fixture};
use crate::harness::{command, eventually, get, read, spawn};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

fn access_log_file_reopens_on_sighup(mode: &str) {
    let fx = Fixture::new();
    let logs = tempfile::tempdir().unwrap();
    let (file, rotated) = (logs.path().join("access.log"), logs.path().join("access.log.1"));
    let mut s = spawn(command(mode, &fx.root(), &["--port", "0", "--access-log", file.to_str().unwrap()]));
    let addr = SocketAddr::from(([127, 0, 0, 1], s.port));
    assert_eq!(get(addr, "/hello.txt?before").0, 200);
    eventually("the first line in the file", || read(&file).contains("?before"));
    std::fs::rename(&file, &rotated).unwrap();
    signal(s.child.id(), "HUP");
    eventually("the file reopened by the signalled process", || file.exists());
    // Several connections, so that several workers (processes, in fork and prefork) write.
    for i in 0..8 {
        assert_eq!(get(addr, &format!("/hello.txt?after{i}")).0, 200);
    }
    eventually("every later line in the new file", || (0..8).all(|i| read(&file).contains(&format!("?after{i} "))));
    let (old, new) = (read(&rotated), read(&file));
    assert!(old.contains("?before") && !old.contains("?after"), "rotated file:\n{old}");
    assert!(!new.contains("?before"), "new file:\n{new}");
    assert!(s.stop().success(), "stopped cleanly after SIGHUP");
}

fn sigusr1_prints_metrics_and_sighup_without_a_file_is_harmless(mode: &str) {
    let fx = Fixture::new();
    let mut c = command(mode, &fx.root(), &["--port", "0", "--quiet"]);
    c.stderr(Stdio::piped());
    let mut s = spawn(c);
    let stderr = s.child.stderr.take().unwrap();
    let (lines, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], s.port));
    signal(s.child.id(), "HUP");
    for _ in 0..3 {
        assert_eq!(get(addr, "/hello.txt").0, 200, "serving after SIGHUP");
    }
    signal(s.child.id(), "USR1");
    let want = "spidey_responses_total{class=\"2xx\"} 3";
    let seen = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(10)).ok()).find(|l| l == want);
    assert!(seen.is_some(), "no `{want}` on stderr after SIGUSR1");
    assert!(s.stop().success());
}

/// `--log-format json`: one JSON object per request, whatever bytes the client sent, in
/// every worker of every mode.
fn json_access_log_lines_parse_and_say_what_was_sent(mode: &str) {
    let fx = Fixture::new();
    let logs = tempfile::tempdir().unwrap();
    let file = logs.path().join("access.json");
    let args = ["--port", "0", "--log-format", "json", "--access-log", file.to_str().unwrap()];
    let mut s = spawn(command(mode, &fx.root(), &args));
    let addr = SocketAddr::from(([127, 0, 0, 1], s.port));
    // (request, what its line's request field reads, status, user agent)
    let cases: [(&str, &str, u16, Option<&str>); 4] = [
        (
            "GET /hello.txt HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/8\r\nConnection: close\r\n\r\n",
            "GET /hello.txt HTTP/1.1",
            200,
            Some("curl/8"),
        ),
        ("GET /no\"}{ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET /no\"}{ HTTP/1.1", 404, None),
        (
            "GET /hello.txt?q HTTP/1.1\r\nHost: x\r\nUser-Agent: \"a\\b\"\r\nConnection: close\r\n\r\n",
            "GET /hello.txt?q HTTP/1.1",
            200,
            Some("\"a\\b\""),
        ),
        // Refused by the parser (a control byte in the target), logged as sent.
        ("GET /x?\x1b[31m HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "GET /x?\u{1b}[31m HTTP/1.1", 400, None),
    ];
    for (request, _, status, _) in &cases {
        assert_eq!(crate::harness::send(addr, request).0, *status, "{request:?}");
    }
    eventually("four lines in the file", || read(&file).lines().count() >= 4);
    let lines: Vec<serde_json::Value> =
        read(&file).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"))).collect();
    for (_, line, status, agent) in cases {
        let found = lines.iter().find(|v| v["request"] == line).unwrap_or_else(|| panic!("{line:?} in {lines:?}"));
        assert_eq!(found["status"].as_u64(), Some(u64::from(status)), "{found}");
        assert_eq!(found["user_agent"].as_str(), agent, "{found}");
        assert_eq!(found["remote_addr"], "127.0.0.1", "{found}");
    }
    assert!(s.stop().success());
}

crate::for_each_mode!(
    access_log_file_reopens_on_sighup,
    sigusr1_prints_metrics_and_sighup_without_a_file_is_harmless,
    json_access_log_lines_parse_and_say_what_was_sent,
);
