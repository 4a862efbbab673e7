//! `spidey bench` against servers that know the truth: tiny in-test servers that count what
//! they receive, stall once, or misbehave in one known way ([`fake_server`]); and the real
//! `spidey serve`. What it counts ([`accounting`]), its open loop ([`open_loop`]) and its
//! output ([`output`]).

mod common;

#[path = "bench/accounting.rs"]
mod accounting;
#[path = "bench/fake_server.rs"]
mod fake_server;
#[path = "bench/open_loop.rs"]
mod open_loop;
#[path = "bench/output.rs"]
mod output;

use spidey::bench::BenchResult;
use std::process::{Command, Output};

/// Runs `spidey bench ARGS --json FILE` and returns the parsed results and the output.
fn bench(args: &[&str]) -> (BenchResult, Output) {
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
