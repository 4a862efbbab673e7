//! Running `spidey bench` from a test: the tests of the load generator itself, over plain
//! HTTP (tests/bench.rs) and TLS (tests/bench_tls.rs).

use spidey_bench::BenchResult;
use std::process::{Command, Output};

/// Runs `spidey bench ARGS --json FILE`, asserts it succeeded, and returns the parsed
/// results and the output.
pub fn run(args: &[&str]) -> (BenchResult, Output) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run spidey bench");
    assert!(out.status.success(), "spidey bench {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&json).expect("the --json file");
    (serde_json::from_str(&text).expect("the --json file parses as a BenchResult"), out)
}

/// Runs `spidey bench ARGS --json FILE`, asserts it exited with status 1 (nothing answered,
/// or a `--fail-on` threshold crossed), and returns the parsed results, the report (stdout)
/// and the error line (stderr).
pub fn run_failing(args: &[&str]) -> (BenchResult, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run spidey bench");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "spidey bench {args:?}: {stdout}{stderr}");
    let text = std::fs::read_to_string(&json).expect("the --json file, written before the exit");
    let result = serde_json::from_str(&text).expect("the --json file parses as a BenchResult");
    (result, stdout.into_owned(), stderr.into_owned())
}
