//! `spidey bench merge` on real runs' JSON against the real server, and the histograms in
//! that JSON read by HdrHistogram's standard decoders (the Rust crate's, and Python's
//! `hdrhistogram` package where it is installed).

mod common;

use common::{Fixture, Spidey};
use spidey_bench::{decode_histogram, BenchResult};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn spidey(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spidey")).args(args).output().expect("run spidey")
}

fn read(path: &Path) -> BenchResult {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON file")).expect("a BenchResult")
}

/// Starts `spidey bench URL -n N -c 2 -t 1 --json PATH` (not waited for).
fn bench_child(url: &str, n: u64, json: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(["bench", url, "-n", &n.to_string(), "-c", "2", "-t", "1", "--json"])
        .arg(json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn spidey bench")
}

#[test]
fn merge_of_two_concurrent_runs_adds_their_requests_and_sums_their_histograms() {
    let fx = Fixture::new();
    let server = Spidey::start("event", &fx.root(), &["-q"]);
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = ["a.json", "b.json"].iter().map(|f| dir.path().join(f)).collect();
    let (na, nb) = (300, 500);
    let mut children =
        [bench_child(&server.url("/hello.txt"), na, &files[0]), bench_child(&server.url("/"), nb, &files[1])];
    for c in &mut children {
        assert!(c.wait().unwrap().success(), "spidey bench failed");
    }
    let merged_path = dir.path().join("merged.json");
    let out = spidey(&["bench", "merge", path(&files[0]), path(&files[1]), "--json", path(&merged_path)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "merge failed: {}", String::from_utf8_lossy(&out.stderr));
    let (a, b, m) = (read(&files[0]), read(&files[1]), read(&merged_path));
    assert_eq!((a.requests, b.requests), (na, nb));
    assert_eq!(m.requests, na + nb);
    assert_eq!(m.responses, a.responses + b.responses);
    assert_eq!(m.status.get(&200), Some(&(na + nb)));
    assert_eq!(m.connections, 4);
    assert_eq!(m.urls.len(), 2);
    assert!(stdout.contains(&format!("{} requests in", na + nb)), "{stdout}");
    assert!(stdout.starts_with("spidey bench merge: 2 runs"), "{stdout}");
    // The merged latency is that of the two histograms summed, not of averaged figures.
    let mut sum = decode_histogram(&a.histograms.as_ref().unwrap().latency).unwrap();
    sum.add(decode_histogram(&b.histograms.as_ref().unwrap().latency).unwrap()).unwrap();
    assert_eq!(m.latency.count, na + nb);
    assert_eq!(m.latency.p99_us, sum.value_at_quantile(0.99));
    assert_eq!(m.latency.max_us, a.latency.max_us.max(b.latency.max_us));
    // The windows overlap: the union is at least the longer run and at most their sum.
    assert!(
        m.duration_s >= a.duration_s.max(b.duration_s) - 1e-9,
        "{} vs {} {}",
        m.duration_s,
        a.duration_s,
        b.duration_s
    );
}

#[test]
fn merge_refuses_what_is_not_a_result_with_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] =
        &[("{\"hello\": 1}", "is not a spidey bench JSON result"), ("not json", "is not a spidey bench JSON result")];
    for (i, (content, want)) in cases.iter().enumerate() {
        let f = dir.path().join(format!("{i}.json"));
        std::fs::write(&f, content).unwrap();
        let out = spidey(&["bench", "merge", path(&f)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{content}: {stderr}");
        assert!(stderr.contains(want) && stderr.trim().lines().count() == 1, "{content}: {stderr}");
    }
}

/// HdrHistogram's own Python implementation (`pip install hdrhistogram`) decodes the
/// latency histogram of a real run to the same count and percentiles.
#[test]
fn histograms_decode_with_pythons_hdrhistogram() {
    let has_module =
        Command::new("python3").args(["-c", "import hdrh.histogram"]).output().is_ok_and(|o| o.status.success());
    if !has_module {
        println!("SKIPPED histograms_decode_with_pythons_hdrhistogram: python3 module hdrh (pip install hdrhistogram) not found");
        return;
    }
    let fx = Fixture::new();
    let server = Spidey::start("event", &fx.root(), &["-q"]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    assert!(bench_child(&server.url("/hello.txt"), 400, &json).wait().unwrap().success());
    let r = read(&json);
    let script = "import json,sys\nfrom hdrh.histogram import HdrHistogram\n\
        h = HdrHistogram.decode(json.load(open(sys.argv[1]))['histograms']['latency'])\n\
        print(h.get_total_count(), h.get_value_at_percentile(50), h.get_value_at_percentile(99), h.get_max_value())";
    let out = Command::new("python3").args(["-c", script]).arg(&json).output().unwrap();
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let l = &r.latency;
    assert_eq!(got, format!("{} {} {} {}", l.count, l.p50_us, l.p99_us, l.max_us));
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}
