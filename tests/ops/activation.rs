//! Socket activation: the server takes the listening socket passed at fd 3 with
//! `LISTEN_FDS=1` and `LISTEN_PID` = its own pid, as systemd passes it, instead of binding;
//! its CGI scripts inherit neither the socket nor the variables.
//!
//! The launcher is what systemd does between fork and exec: `inherit_fd` puts the socket
//! at fd 3 (open across exec), and `sh` exports its own pid as LISTEN_PID before `exec`,
//! which keeps the pid.

use crate::common::{Fixture, Spidey, HELLO};
use crate::harness::{body, command, get, script, spawn};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::process::{Command, Output, Stdio};

const LAUNCHER: &str = "export LISTEN_PID=$$; exec \"$0\" \"$@\"";

/// `spidey serve ROOT --mode MODE ARGS...` started as a service manager would, with
/// `passed` at fd 3 and LISTEN_FDS=1.
fn activated(mode: &str, root: &std::path::Path, args: &[&str], passed: OwnedFd) -> Command {
    let inner = command(mode, root, args);
    let mut c = Command::new("sh");
    c.arg("-c").arg(LAUNCHER).arg(inner.get_program()).args(inner.get_args());
    c.env("LISTEN_FDS", "1").env("LISTEN_FDNAMES", "http").stderr(Stdio::inherit());
    spidey_sys::process::inherit_fd(&mut c, passed, 3).unwrap();
    c
}

fn env_script(root: &std::path::Path) {
    let text = "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nenv | grep '^LISTEN_' || true\nls -l /proc/$$/fd | grep -c socket: || true\n";
    script(root, "cgi-bin/env.sh", text);
}

fn socket_activation_serves_on_the_passed_socket(mode: &str) {
    let fx = Fixture::new();
    env_script(&fx.root());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let s: Spidey = spawn(activated(mode, &fx.root(), &[], OwnedFd::from(listener)));
    assert_eq!(s.port, addr.port(), "the startup line names the passed socket");
    // Enough connections to reach every worker sharing the socket (prefork, event, uring).
    for i in 0..12 {
        let (status, text) = get(addr, "/hello.txt");
        assert_eq!((status, body(&text)), (200, HELLO), "request {i}");
    }
    // The script sees no LISTEN_ variable and no socket among its descriptors.
    let (status, text) = get(addr, "/cgi-bin/env.sh");
    assert_eq!((status, body(&text)), (200, "0\n"), "CGI environment and descriptors");
}

crate::for_each_mode!(socket_activation_serves_on_the_passed_socket);

fn run_to_exit(mut c: Command) -> Output {
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).output().unwrap()
}

/// What is refused (exit 2, one line on stderr), once: it is decided before any mode runs.
#[test]
fn activation_config_errors_table() {
    let fx = Fixture::new();
    let file = std::fs::File::open(fx.root().join("hello.txt")).unwrap();
    let unlistened = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let listener = || OwnedFd::from(TcpListener::bind("127.0.0.1:0").unwrap());
    let cases: Vec<(&str, OwnedFd, Vec<&str>, &str)> = vec![
        ("--port with a passed socket", listener(), vec!["--port", "0"], "--addr and --port cannot be used"),
        ("--addr with a passed socket", listener(), vec!["--addr", "::1"], "--addr and --port cannot be used"),
        ("a file at fd 3", OwnedFd::from(file), vec![], "is not a socket"),
        ("a socket that does not listen", OwnedFd::from(unlistened), vec![], "is not listening"),
    ];
    for (what, fd, args, want) in cases {
        let out = run_to_exit(activated("single", &fx.root(), &args, fd));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(stderr.contains(want) && stderr.lines().count() == 1, "{what}: {stderr}");
    }
}

/// Variables meant for another process (LISTEN_PID not ours) are ignored: the server binds
/// as usual, and still removes them, so its scripts never see them.
#[test]
fn activation_variables_for_another_pid_are_ignored_and_removed() {
    let fx = Fixture::new();
    env_script(&fx.root());
    let mut c = command("thread", &fx.root(), &["--port", "0"]);
    c.env("LISTEN_FDS", "1").env("LISTEN_PID", "1");
    let s = spawn(c);
    let addr = SocketAddr::from(([127, 0, 0, 1], s.port));
    let (status, text) = get(addr, "/cgi-bin/env.sh");
    assert_eq!((status, body(&text)), (200, "0\n"));
}

/// The systemd units in `examples/systemd/` work as written: the service's `ExecStart`
/// (the binary under test in place of /usr/local/bin/spidey, the fixture in place of
/// /srv/www) started by `systemd-socket-activate` on the socket unit's `ListenStream` (its
/// port made a free one on loopback) serves the file, its health path and JSON log lines,
/// and stops cleanly on SIGTERM.
#[test]
fn the_example_systemd_units_serve() {
    let Some(activate) = ["/usr/bin/systemd-socket-activate", "/lib/systemd/systemd-socket-activate"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        eprintln!("SKIPPED the_example_systemd_units_serve: no systemd-socket-activate (package systemd)");
        return;
    };
    let units = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/systemd");
    let key = |file: &str, key: &str| {
        let text = std::fs::read_to_string(units.join(file)).unwrap();
        text.lines().find_map(|l| l.strip_prefix(&format!("{key}="))).map(str::to_string).expect(key)
    };
    assert_eq!(key("spidey.socket", "ListenStream"), "80", "the port the test replaces");
    let exec = key("spidey.service", "ExecStart");
    let fx = Fixture::new();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let words: Vec<String> = exec
        .split_whitespace()
        .map(|w| match w {
            "/usr/local/bin/spidey" => env!("CARGO_BIN_EXE_spidey").to_string(),
            "/srv/www" => fx.root().display().to_string(),
            w => w.to_string(),
        })
        .collect();
    let mut manager = Command::new(activate)
        .arg(format!("--listen=127.0.0.1:{port}"))
        .args(&words)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut answered = None;
    for _ in 0..100 {
        if std::net::TcpStream::connect(addr).is_ok() {
            answered = Some(get(addr, "/hello.txt"));
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (status, text) = answered.expect("the socket was listening");
    assert_eq!((status, body(&text)), (200, HELLO), "{text}");
    let (status, text) = get(addr, "/-/health");
    assert_eq!((status, body(&text)), (200, "ok\n"), "the health path answers: {text}");
    crate::common::signal(manager.id(), "TERM");
    let status =
        crate::common::wait_timeout(&mut manager, std::time::Duration::from_secs(20)).expect("stops on SIGTERM");
    assert!(status.success() || status.code() == Some(143), "{status}");
    let mut log = String::new();
    std::io::Read::read_to_string(manager.stdout.as_mut().unwrap(), &mut log).unwrap();
    let line = log.lines().find(|l| l.contains("/hello.txt")).unwrap_or_else(|| panic!("a log line: {log:?}"));
    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    assert_eq!(v["status"], 200, "{line}");
}
