//! Running `spidey bench` from a test: the tests of the load generator itself, over plain
//! HTTP (tests/bench.rs) and TLS (tests/bench_tls.rs).

use spidey::bench::BenchResult;
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
