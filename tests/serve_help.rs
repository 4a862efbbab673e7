//! `spidey serve -h` and `spidey bench -h` fit one screen, grouped under headings, and
//! every serve example that `-h` and `--help` end with runs: each is started for real (its ports made 0) in a
//! directory holding the files it names, and answers `/` as the example says.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

fn help(flag: &str) -> String {
    help_of("serve", flag)
}

fn help_of(command: &str, flag: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_spidey")).args([command, flag]).env("COLUMNS", "100").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn short_help_fits_one_screen_under_headings() {
    let short = help("-h");
    let lines = short.lines().count();
    assert!(lines <= 60, "spidey serve -h is {lines} lines at 100 columns (at most 60):\n{short}");
    for heading in ["Connections:", "Serving:", "Access:", "TLS:", "CGI and handlers:", "Logging:", "Examples:"] {
        assert!(short.lines().any(|l| l == heading), "-h lacks {heading}\n{short}");
    }
    // A flag's line in -h is its summary, not its whole description.
    let flag_lines = short.lines().filter(|l| l.trim_start().starts_with("--")).count();
    assert!(flag_lines >= 25, "{short}");
    assert!(!short.contains("the startup line names it"), "{short}");
    // --help has every flag -h leaves out, and the whole doc comment of each.
    let long = help("--help");
    for flag in ["--backlog", "--max-head ", "--delay", "--notsent-lowat", "--body-min-rate"] {
        assert!(!short.contains(flag) && long.contains(flag), "{flag}");
    }
    assert!(long.contains("Experiments:") && long.contains("the startup line names it"));
}

#[test]
fn bench_short_help_fits_one_screen_under_headings() {
    let short = help_of("bench", "-h");
    let lines = short.lines().count();
    assert!(lines <= 60, "spidey bench -h is {lines} lines at 100 columns (at most 60):\n{short}");
    for heading in ["Load:", "Open loop:", "TLS:", "Requests:", "Results:", "Examples:"] {
        assert!(short.lines().any(|l| l == heading), "-h lacks {heading}\n{short}");
    }
    let long = help_of("bench", "--help");
    assert!(!short.contains("--tls-cipher") && long.contains("--tls-cipher"));
    assert!(long.contains("coordinated omission corrected"), "{long}");
}

/// The example lines of `text`: the command, without the `# comment`.
fn examples(text: &str) -> Vec<String> {
    let lines = text.lines().map(str::trim).filter(|l| l.starts_with("spidey serve"));
    lines.map(|l| l.split(" # ").next().unwrap().trim().to_string()).collect()
}

/// A directory holding everything the examples name.
fn workspace(dir: &Path) {
    let w = |p: &str, body: &[u8]| {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    };
    w("index.html", b"<h1>here</h1>\n");
    w("site/index.html", b"<h1>site</h1>\n");
    w("site/page.php", b"<?php echo 'php'; ?>\n");
    w("dist/index.html", b"<div id=app></div>\n");
    w("dist/404.html", b"<h1>not here</h1>\n");
    w("report.pdf", b"%PDF-1.4\n");
    let hash = Command::new("openssl").args(["passwd", "-6", "secret"]).output().unwrap();
    w("users.htpasswd", format!("ann:{}", String::from_utf8(hash.stdout).unwrap()).as_bytes());
    common::tls::self_signed(dir); // cert.pem, key.pem
    w("spidey.toml", b"root = \"site\"\nport = 8080\nsecurity-headers = true\n");
}

/// Runs `example` in `dir` with its ports 0, and the status of `/` from curl.
fn run(dir: &Path, example: &str) -> u16 {
    let mut words: Vec<String> = example.split_whitespace().skip(1).map(String::from).collect();
    for i in 1..words.len() {
        if matches!(words[i - 1].as_str(), "--port" | "--redirect-http") {
            words[i] = "0".into();
        }
    }
    if !words.iter().any(|w| w == "--port") {
        words.extend(["--port".into(), "0".into()]);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(&words)
        .arg("--quiet")
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    // Kept open while the server runs: it writes more startup lines (--redirect-http's).
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    let url = line.split_whitespace().nth(3).unwrap_or_default().replace("0.0.0.0", "127.0.0.1");
    let status = if url.is_empty() {
        let _ = child.wait();
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
        panic!("{example}: did not start: {err}");
    } else {
        let out = Command::new("curl")
            .args(["-sS", "-k", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"])
            .arg(format!("{url}/"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
    };
    common::signal(child.id(), "TERM");
    common::wait_timeout(&mut child, std::time::Duration::from_secs(20)).expect("stops on SIGTERM");
    status
}

#[test]
fn every_example_runs() {
    let dir = tempfile::tempdir().unwrap();
    workspace(dir.path());
    let all = [examples(&help("-h")), examples(&help("--help"))].concat();
    assert!(all.len() >= 10, "{all:?}");
    for example in &all {
        let want = if example.contains("--basic-auth-file") { 401 } else { 200 };
        assert_eq!(run(dir.path(), example), want, "{example}");
    }
}
