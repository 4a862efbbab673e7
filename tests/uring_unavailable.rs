//! `--mode uring` on a kernel without io_uring: one line naming `event`, exit code 2.
//!
//! The kernel is made to lack io_uring for the spidey child alone, by a seccomp filter that
//! fails io_uring_setup(2) with a chosen errno (spidey_sys::seccomp, feature `test-support`),
//! so the machine-wide `kernel.io_uring_disabled` sysctl is never touched.

mod common;

use common::{signal, wait_timeout};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(10);
const EPERM: i32 = rustix::io::Errno::PERM.raw_os_error();
const ENOSYS: i32 = rustix::io::Errno::NOSYS.raw_os_error();

#[derive(Debug, PartialEq)]
enum Expect {
    /// Prints the startup line, serves until SIGTERM, exits 0.
    Starts,
    /// Exits 2 with one line on stderr naming io_uring and `--mode event`, and no startup line.
    Refuses,
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `spidey serve ROOT --port 0 --mode MODE`, with io_uring_setup failing with `deny` if
/// given. A server that starts is stopped with SIGTERM; nothing waits longer than [`LIMIT`].
fn serve(mode: &str, deny: Option<i32>) -> Outcome {
    let root = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_spidey"));
    command.arg("serve").arg(root.path()).args(["--port", "0", "--mode", mode]);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(errno) = deny {
        spidey_sys::seccomp::deny_io_uring_setup(&mut command, errno);
    }
    let mut child = command.spawn().expect("spawn spidey");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut first = String::new();
        let _ = stdout.read_line(&mut first);
        let _ = tx.send(first.clone());
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        first + &rest
    });
    // The startup line, or EOF (empty) once a refusing server has exited.
    let first = rx.recv_timeout(LIMIT).unwrap_or_default();
    if first.starts_with("spidey listening on ") {
        signal(child.id(), "TERM");
    }
    let Some(status) = wait_timeout(&mut child, LIMIT) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("spidey --mode {mode} (deny {deny:?}) neither started nor exited within {LIMIT:?}: {first:?}");
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    Outcome { code: status.code(), stdout: reader.join().unwrap(), stderr }
}

#[test]
fn uring_without_io_uring_names_event_and_exits_2() {
    use Expect::*;
    let cases: &[(&str, Option<i32>, Expect)] = &[
        // mode, errno of io_uring_setup (None: no filter) → expected
        ("uring", Some(EPERM), Refuses),  // kernel.io_uring_disabled=2
        ("uring", Some(ENOSYS), Refuses), // a kernel built without io_uring
        ("uring", None, Starts),          // control: the filter is what makes the difference
        ("event", Some(EPERM), Starts),   // the filter denies io_uring only
    ];
    for (mode, deny, expect) in cases {
        let out = serve(mode, *deny);
        let what = format!(
            "--mode {mode}, deny {deny:?}: exit {:?}, stdout {:?}, stderr {:?}",
            out.code, out.stdout, out.stderr
        );
        let listening = out.stdout.lines().any(|l| l.contains("listening"));
        match expect {
            Starts => {
                let want = format!("(mode {mode})");
                let first = out.stdout.lines().next().unwrap_or("");
                assert!(first.starts_with("spidey listening on ") && first.ends_with(&want), "{what}");
                assert_eq!(out.code, Some(0), "{what}");
            }
            Refuses => {
                assert_eq!(out.code, Some(2), "{what}");
                assert_eq!(out.stderr.lines().count(), 1, "one line: {what}");
                assert!(out.stderr.ends_with('\n') && !out.stderr.trim().is_empty(), "{what}");
                assert!(out.stderr.contains("io_uring") && out.stderr.contains("--mode event"), "{what}");
                assert!(!listening, "no startup line: {what}");
            }
        }
    }
}
