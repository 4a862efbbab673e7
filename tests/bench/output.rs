//! What `spidey bench` prints: every documented JSON field, and the one line refusing an https
//! URL.

use crate::common::{Fixture, Spidey};
use std::process::Command;
#[test]
fn json_has_every_documented_field() {
    let fx = Fixture::new();
    let s = Spidey::start("single", &fx.root(), &["-q"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let url = s.url("/hello.txt");
    let status = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(["bench", "-c1", "-t1", "--rate", "200", "-d", "1200ms", "--json", path.to_str().unwrap(), &url])
        .output()
        .unwrap();
    assert!(status.status.success());
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases = [
        ("/urls/0", "string"),
        ("/loop_mode", "string"),
        ("/connections", "number"),
        ("/threads", "number"),
        ("/rate", "number"),
        ("/requests", "number"),
        ("/responses", "number"),
        ("/duration_s", "number"),
        ("/requests_per_sec", "number"),
        ("/body_bytes_per_sec", "number"),
        ("/wire_bytes_per_sec", "number"),
        ("/latency/p50_us", "number"),
        ("/latency/p99_9_us", "number"),
        ("/latency/percentiles/0/1", "number"),
        ("/latency_uncorrected/p99_us", "number"),
        ("/status/200", "number"),
        ("/errors/ports_exhausted", "number"),
        ("/errors/fd_exhausted", "number"),
        ("/backlog", "number"),
        ("/errors/unsent", "number"),
        ("/late", "number"),
        ("/non_2xx_3xx", "number"),
        ("/open_model", "string"),
        ("/late_after_us", "number"),
        ("/send_lateness/p50_us", "number"),
        ("/send_lateness/p99_us", "number"),
        ("/send_lateness/max_us", "number"),
        ("/send_lateness/percentiles/0/1", "number"),
        ("/series/0/responses", "number"),
        ("/series/1/latency_p99_us", "number"),
    ];
    for (pointer, kind) in cases {
        let field = v.pointer(pointer).unwrap_or_else(|| panic!("no {pointer} in {v}"));
        let is = if field.is_number() {
            "number"
        } else if field.is_string() {
            "string"
        } else {
            "other"
        };
        assert_eq!(is, kind, "{pointer}");
    }
    assert_eq!(
        (&v["loop_mode"], &v["open_model"], &v["late_after_us"]),
        (&"open".into(), &"pool".into(), &1000.into())
    );
    assert_eq!(v.pointer("/send_lateness/count"), v.pointer("/latency/count"), "every request sent has its lateness");
    let series_total: u64 = v["series"].as_array().unwrap().iter().map(|s| s["responses"].as_u64().unwrap()).sum();
    assert_eq!(Some(series_total), v["responses"].as_u64(), "the series adds up to the total");
}
