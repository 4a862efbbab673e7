//! Configuration errors: one clear line on stderr and exit code 2; runtime failures say
//! what failed, with context.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spidey")).args(args).output().expect("run spidey");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn configuration_errors_exit_2_with_one_line() {
    let cases: &[(&[&str], &str)] = &[
        // arguments → what the one line says
        (&["serve", "/no/such/dir", "--port", "0"], "cannot serve /no/such/dir"),
        // A regular file is served alone (tests/features_serving.rs); a device is not.
        (&["serve", "/dev/null", "--port", "0"], "cannot serve /dev/null"),
        (&["serve", ".", "--port", "0", "--max-conns", "0"], "--max-conns"),
        (&["serve", ".", "--port", "0", "--max-conns", "16777217"], "--max-conns must be at most 16777216"),
        (&["serve", ".", "--port", "0", "--max-head", "100"], "--max-head"),
        // A missing input file is a configuration mistake in every command (it was exit 1).
        (
            &["lab", "--report", "/no/such/results.jsonl", "--out", "/no/such/out"],
            "no results file /no/such/results.jsonl",
        ),
        (&["lab", "--verdicts", "/no/such/results.jsonl"], "no results file"),
        (&["bench", "merge", "/no/such/a.json", "/no/such/b.json"], "cannot read /no/such/a.json"),
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

/// A port in use is a mistake in the configuration: exit code 2, one line naming the address.
#[test]
fn port_in_use_names_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let (code, stderr) = run(&["serve", ".", "--port", &port]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line, got {stderr:?}");
    assert!(stderr.contains(&format!("failed to bind 127.0.0.1:{port}")), "{stderr}");
}

/// Every other check runs before the bind: on a busy port, a mistake elsewhere is the one
/// reported, not the port.
#[test]
fn a_busy_port_does_not_hide_a_configuration_mistake() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        // arguments after `serve ROOT --port BUSY` → what the one line says
        (&["--tls-cert", missing, "--tls-key", missing], "--tls-cert"),
        (&["--header", "no colon"], "no colon"),
        (&["--basic-auth", "nohash"], "--basic-auth takes user:HASH"),
        (&["--handler", "/app=/no/such/lib.so"], "handler /app"),
        (&["--cors", ""], "cors"),
        (&["--max-conns", "0"], "--max-conns"),
        (&["--workers", "2", "--mode", "single"], "--workers"),
        // Third audit (Info): read whole with no bound, these ran out of memory.
        (&["--config", "/dev/zero"], "--config /dev/zero: larger than"),
        (&["--basic-auth-file", "/dev/zero"], "--basic-auth-file /dev/zero: larger than"),
    ];
    for (args, needle) in cases {
        let all = [&["serve", root, "--port", &port], *args].concat();
        let (code, stderr) = run(&all);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line, got {stderr:?}");
        assert!(!stderr.contains("failed to bind"), "{args:?}: the port hid the mistake: {stderr}");
        assert!(stderr.to_lowercase().contains(&needle.to_lowercase()), "{args:?}: {stderr:?}");
    }
    let (code, stderr) = run(&["serve", "/no/such/dir", "--port", &port]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot serve /no/such/dir"), "{stderr}");
}

/// Flags that the chosen mode (or the other flags) make meaningless are refused with one
/// line and exit code 2, never silently ignored.
#[test]
fn flags_that_do_not_apply_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        // arguments after `serve ROOT --port 0` → what the one line says
        (&["--mode", "single", "--workers", "2"], "--workers does not apply to mode single"),
        (&["--mode", "fork", "--workers", "2"], "--workers does not apply to mode fork"),
        (&["--mode", "thread", "--workers", "2"], "--workers does not apply to mode thread"),
        (&["--mode", "event", "--workers", "2-4"], "not a range 2-4"),
        (&["--mode", "uring", "--workers", "1-2"], "not a range 1-2"),
        (&["--mode", "hybrid", "--workers", "2-8"], "not a range 2-8"),
        (&["--mode", "event", "--pool-threads", "4"], "--pool-threads applies to mode hybrid only"),
        (&["--mode", "pool", "--pool-threads", "4"], "--pool-threads applies to mode hybrid only"),
        (&["--max-cgi", "4"], "--max-cgi applies to CGI scripts, which run only with --cgi"),
        (&["--cgi-timeout", "5s"], "--cgi-timeout applies to CGI scripts"),
        (&["--body-timeout", "5s"], "--body-timeout applies to CGI scripts"),
        (&["--body-min-rate", "100"], "--body-min-rate applies to CGI scripts"),
    ];
    for (args, needle) in cases {
        let all = [&["serve", root, "--port", "0"], *args].concat();
        let (code, stderr) = run(&all);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line, got {stderr:?}");
        assert!(stderr.contains(needle), "{args:?}: wanted {needle:?} in {stderr:?}");
    }
}

/// The same flags where they apply start a server (the refusals above are not blanket ones).
#[test]
fn flags_that_apply_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["--mode", "pool", "--workers", "1-2"],
        &["--mode", "prefork", "--workers", "1-2"],
        &["--mode", "event", "--workers", "2"],
        &["--mode", "hybrid", "--workers", "1", "--pool-threads", "2"],
        &["--cgi", "--max-cgi", "4", "--cgi-timeout", "5s", "--body-timeout", "5s", "--body-min-rate", "100"],
        &["--cgi-interpreter", ".py=/usr/bin/python3", "--max-cgi", "4"],
        &["--addr", "localhost"],
    ];
    for args in cases {
        let mut server = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .args([&["serve", root, "--port", "0", "--quiet"], *args].concat())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stdout.take().unwrap()), &mut line).unwrap();
        let _ = server.kill();
        let out = server.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(line.starts_with("spidey listening on http://127.0.0.1:"), "{args:?}: {line:?} {stderr}");
    }
}

/// What users of other servers type first works: `-p` for the port, `-i`/`--host` for the
/// address, `--spa` for `--fallback`, `--hidden` for `--show-hidden`; and a server on every
/// address (`::`) names addresses one can open, loopback first.
#[test]
fn peer_spellings_work_and_an_unspecified_address_names_reachable_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.html"), "<p>app</p>").unwrap();
    std::fs::write(dir.path().join(".env"), "SECRET=1").unwrap();
    let root = dir.path().to_str().unwrap();
    // (arguments, what the startup lines must contain, a path and the status it gets)
    let cases: &[(&[&str], &str, &str, u16)] = &[
        (&["-p", "0", "-i", "127.0.0.1", "--spa", "/app.html"], "http://127.0.0.1:", "/no/such/route", 200),
        (&["--port", "0", "--host", "127.0.0.1", "--hidden"], "http://127.0.0.1:", "/.env", 200),
        (&["-p", "0", "--addr", "::"], "spidey reachable at http://127.0.0.1:", "/app.html", 200),
    ];
    for (args, says, path, status) in cases {
        let mut server = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .args([&["serve", root, "--quiet"], *args].concat())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(server.stdout.take().unwrap());
        let mut lines = String::new();
        for _ in 0..(if args.contains(&"::") { 2 } else { 1 }) {
            std::io::BufRead::read_line(&mut out, &mut lines).unwrap();
        }
        let port: u16 = lines
            .split("]:")
            .nth(1)
            .or_else(|| lines.split("127.0.0.1:").nth(1))
            .and_then(|r| r.split([' ', '\n']).next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("{args:?}: {lines:?}"));
        let got = {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            std::io::Write::write_all(
                &mut s,
                format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .unwrap();
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut s, &mut text);
            text
        };
        let _ = server.kill();
        let _ = server.wait();
        assert!(lines.contains(says), "{args:?}: {lines:?}");
        assert!(got.starts_with(&format!("HTTP/1.1 {status} ")), "{args:?} {path}: {got}");
    }
}

/// `--addr` takes an IP address or `localhost`; any other name says what to give.
#[test]
fn addr_takes_an_ip_address_or_localhost() {
    let (code, stderr) = run(&["serve", ".", "--port", "0", "--addr", "example.com"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("give an IP address, e.g. 127.0.0.1"), "{stderr}");
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
    assert_eq!(code, Some(2), "{stderr}");
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

/// `spidey lab -h` fits one screen under headings; `--help` has the examples, and each is a
/// command line `spidey lab` accepts (`--list`, which measures nothing, is run). Regression
/// (audit M4): no example writes into a directory every user shares, where someone else
/// may have made the directory or planted links in it.
#[test]
fn lab_short_help_fits_one_screen_under_headings() {
    let spidey = env!("CARGO_BIN_EXE_spidey");
    let short = Command::new(spidey).args(["lab", "-h"]).output().unwrap();
    let short = String::from_utf8_lossy(&short.stdout);
    assert!(short.lines().count() <= 60, "spidey lab -h: {} lines\n{short}", short.lines().count());
    for heading in ["What to run:", "Results and reports:", "Measurement:", "Across hosts and links:"] {
        assert!(short.contains(heading), "no {heading} in\n{short}");
    }
    let long = Command::new(spidey).args(["lab", "--help"]).output().unwrap();
    let long = String::from_utf8_lossy(&long.stdout);
    let examples: Vec<&str> = long.lines().filter_map(|l| l.trim().strip_prefix("spidey lab")).collect();
    assert!(examples.len() >= 5, "{long}");
    for shared in ["/tmp", "/var/tmp", "/dev/shm"] {
        assert!(!long.contains(shared), "spidey lab --help suggests {shared}:\n{long}");
    }
    let dir = tempfile::tempdir().unwrap();
    for example in examples {
        let args: Vec<&str> = example.split_whitespace().collect();
        let mut cmd = Command::new(spidey);
        cmd.current_dir(dir.path()).arg("lab").args(&args);
        if args == ["--list"] {
            let out = cmd.output().unwrap();
            assert!(out.status.success(), "spidey lab --list: {}", String::from_utf8_lossy(&out.stderr));
            assert!(String::from_utf8_lossy(&out.stdout).contains("000"), "--list names experiment 000");
        } else {
            // Parsing only: an unknown flag or a missing value is exit 2 with clap's "error:"
            // before anything runs; `--help` appended makes an accepted line print its help.
            let out = cmd.arg("--help").output().unwrap();
            assert!(out.status.success(), "spidey lab{example}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

/// Shell completions and man pages come from the same definitions as `--help`: every
/// command and the flags added last are in them, bash's script is valid bash, and a page
/// names its command.
#[test]
fn completions_and_man_pages_are_made_from_the_command_line() {
    let bin = env!("CARGO_BIN_EXE_spidey");
    let output = |args: &[&str]| {
        let out = Command::new(bin).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    for shell in ["bash", "zsh", "fish", "elvish"] {
        let script = output(&["completions", shell]);
        for word in ["serve", "bench", "lab", "health", "log-format", "basic-auth-file"] {
            assert!(script.contains(word), "{shell} completions name {word}");
        }
    }
    let bash = output(&["completions", "bash"]);
    let mut check =
        Command::new("bash").args(["-n", "/dev/stdin"]).stdin(std::process::Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(check.stdin.as_mut().unwrap(), bash.as_bytes()).unwrap();
    assert!(check.wait().unwrap().success(), "bash -n accepts the completion script");
    // (subcommand, its page's title line, a flag of its)
    let pages = [
        (None, ".TH spidey 1", "serve"),
        (Some("serve"), ".TH spidey-serve 1", "\\-\\-basic\\-auth\\-file"),
        (Some("bench"), ".TH spidey-bench 1", "\\-\\-fail\\-on"),
        (Some("lab"), ".TH spidey-lab 1", "\\-\\-keep\\-disturbed"),
    ];
    for (command, title, flag) in pages {
        let args: Vec<&str> = std::iter::once("man").chain(command).collect();
        let page = output(&args);
        assert!(page.lines().any(|l| l.starts_with(title)), "{args:?}: {}", &page[..page.len().min(300)]);
        assert!(page.contains(flag), "{args:?} names {flag}");
    }
    let (code, stderr) = run(&["man", "<nope>"]);
    assert_eq!((code, stderr.lines().count()), (Some(2), 1), "{stderr}");
}

/// Warnings come after the startup line: through a terminal (as over `ssh -t`, the lab's
/// way to a server host) stderr and stdout are one stream, and the first line is what
/// scripts and the lab read for the port. As root with `--cgi` there is a warning; with
/// users whose hashes differ, another.
#[test]
fn warnings_come_after_the_startup_line() {
    let dir = tempfile::tempdir().unwrap();
    let sha = "$5$rounds=1000$saltsalt$FLZBNcPIHUI5fhKsgV3Ud8xe8x6kNWxRhLnzJIv7Hg.";
    let bcrypt = "$2y$04$abcdefghijklmnopqrstuuDDfC6eUOhFyz36vZxjAs.tGwCgqcTXe";
    let script = format!(
        "exec {} serve {} -p 0 -q --cgi --basic-auth 'ann:{sha}' --basic-auth 'bob:{bcrypt}' 2>&1",
        env!("CARGO_BIN_EXE_spidey"),
        dir.path().display()
    );
    let mut server = Command::new("sh").args(["-c", &script]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut out = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut lines = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        lines.push(line);
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(lines[0].starts_with("spidey listening on http://127.0.0.1:"), "{lines:?}");
    assert!(lines[1].starts_with("spidey: warning: "), "{lines:?}");
}
