//! Configuration errors: one clear line on stderr and exit code 2; runtime failures say
//! what failed, with context.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spidey")).args(args).output().expect("run spidey");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn configuration_errors_exit_2_with_one_line() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let file = file.path().to_str().unwrap().to_string();
    let cases: &[(&[&str], &str)] = &[
        // arguments → what the one line says
        (&["serve", "/no/such/dir", "--port", "0"], "cannot serve /no/such/dir"),
        (&["serve", &file, "--port", "0"], "cannot serve"),
        (&["serve", ".", "--port", "0", "--max-conns", "0"], "--max-conns"),
        (&["serve", ".", "--port", "0", "--max-conns", "16777217"], "--max-conns must be at most 16777216"),
        (&["serve", ".", "--port", "0", "--max-head", "100"], "--max-head"),
    ];
    for (args, needle) in cases {
        let (code, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line, got {stderr:?}");
        assert!(stderr.contains(needle), "{args:?}: {stderr:?}");
    }
}

#[test]
fn invalid_flag_values_exit_2() {
    let cases: &[&[&str]] = &[
        &["serve", "--mode", "turbo"],
        &["serve", "--workers", "0"],
        &["serve", "--workers", "8-2"],
        &["serve", "--idle-timeout", "soon"],
        &["serve", "--max-headers", "1000"],
        &["serve", "--port", "70000"],
        &["serve", "--notsent-lowat", "-1"],
        &["serve", "--notsent-lowat", "3000000000"],
        &["serve", "--notsent-lowat", "64k"],
    ];
    for args in cases {
        let (code, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
    }
}

#[test]
fn port_in_use_names_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (code, stderr) = run(&["serve", ".", "--port", &port]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&format!("failed to bind 127.0.0.1:{port}")), "{stderr}");
}

#[test]
fn second_server_on_the_same_port_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(["serve", dir.path().to_str().unwrap(), "--port", "0", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(first.stdout.take().unwrap()), &mut line).unwrap();
    let port = line.rsplit(':').next().unwrap().split(' ').next().unwrap().to_string();
    let (code, stderr) = run(&["serve", ".", "--port", &port]);
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("failed to bind"), "{stderr}");
}

/// A server started with no `--mode` is one we would put on a public port: `event`, where
/// one slow client holds up nobody else (it used to be `single`).
#[test]
fn default_mode_is_event() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(["serve", dir.path().to_str().unwrap(), "--port", "0", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stdout.take().unwrap()), &mut line).unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(line.trim_end().ends_with("(mode event)"), "startup line: {line:?}");
}
