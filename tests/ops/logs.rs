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

crate::for_each_mode!(access_log_file_reopens_on_sighup, sigusr1_prints_metrics_and_sighup_without_a_file_is_harmless);
