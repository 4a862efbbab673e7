//! Merging runs built from known latencies: the merged percentiles must be those of one
//! histogram of all the values, and everything countable must add.

use super::*;
use crate::stats::histogram;

/// A run whose latencies are `values`, started at `start_ms`, lasting `duration_s`, with one
/// series second per entry of `per_second` (the values recorded in it).
fn run_of(values: &[u64], start_ms: u64, duration_s: f64, per_second: &[&[u64]]) -> BenchResult {
    let hist = |vs: &[u64], sigfig| {
        let mut h = histogram(sigfig);
        vs.iter().for_each(|v| h.record(*v).unwrap());
        h
    };
    let latency = hist(values, 3);
    let series = per_second
        .iter()
        .enumerate()
        .map(|(i, vs)| {
            let mut s = SecondSample::new(i as u64);
            s.responses = vs.len() as u64;
            s.latency = hist(vs, 2);
            s.stats()
        })
        .collect();
    let n = values.len() as u64;
    BenchResult {
        urls: vec!["http://10.0.0.1:8080/".into()],
        method: "GET".into(),
        protocol: "http/1.1".into(),
        streams: None,
        h2: None,
        connections: 10,
        threads: 1,
        loop_mode: "closed".into(),
        rate: None,
        open_model: None,
        late_after_us: None,
        keepalive: true,
        warmup_s: 0.0,
        timeout_s: 5.0,
        requests: n + 1,
        responses: n,
        non_2xx_3xx: 0,
        late: 0,
        late_by_class: BTreeMap::new(),
        late_latency_sum_by_class_us: BTreeMap::new(),
        duration_s,
        requests_per_sec: n as f64 / duration_s,
        body_bytes: 100 * n,
        wire_bytes: 200 * n,
        body_bytes_per_sec: 0.0,
        wire_bytes_per_sec: 0.0,
        latency: LatencySummary::of(&latency),
        latency_uncorrected: None,
        send_lateness: None,
        handshake: None,
        handshakes: None,
        tls_error: None,
        connect_error: None,
        tls_negotiated: None,
        status: BTreeMap::from([(200, n)]),
        latency_sum_by_class_us: BTreeMap::from([("2xx".to_string(), values.iter().sum())]),
        errors: ErrorCounts { timeout: 1, ..ErrorCounts::default() },
        backlog: 0,
        series,
        started_at_unix_ms: Some(start_ms),
        histograms: Some(Histograms::of(&latency, None, None)),
    }
}

/// Deterministic, spread over four decades, with a long tail.
fn values(n: usize) -> Vec<u64> {
    (0..n as u64).map(|i| 50 + (i * 7919) % 1000 + if i % 97 == 0 { 250_000 + i } else { 0 }).collect()
}

#[test]
fn merged_percentiles_equal_one_histogram_of_all_values() {
    let all = values(10_000);
    let mut one = histogram(3);
    all.iter().for_each(|v| one.record(*v).unwrap());
    let want = LatencySummary::of(&one);
    // How to split the values: cut points.
    let splits: &[&[usize]] = &[&[5_000], &[1, 9_999], &[1_000, 3_000, 9_000], &[2_500, 5_000, 7_500]];
    for cuts in splits {
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(all.len());
        let parts: Vec<BenchResult> = bounds.windows(2).map(|w| run_of(&all[w[0]..w[1]], 0, 1.0, &[])).collect();
        let merged = merge(&parts).unwrap();
        assert_eq!(merged.latency, want, "split at {cuts:?}");
        assert_eq!(merged.requests, all.len() as u64 + parts.len() as u64, "{cuts:?}");
        // And the merged histogram itself, re-read, is the one of all values.
        let (back, _, _) = merged.histograms.unwrap().decode().unwrap();
        assert_eq!(LatencySummary::of(&back), want, "{cuts:?}");
    }
}

#[test]
fn counts_bytes_statuses_and_errors_add() {
    let mut second = run_of(&[300, 400, 500], 0, 1.0, &[]);
    // One of its answers a 503 to a request sent late.
    second.status = BTreeMap::from([(200, 2), (503, 1)]);
    (second.late, second.non_2xx_3xx) = (1, 1);
    second.late_by_class = BTreeMap::from([("5xx".to_string(), 1)]);
    second.late_latency_sum_by_class_us = BTreeMap::from([("5xx".to_string(), 500)]);
    let m = merge(&[run_of(&[100, 200], 0, 1.0, &[]), second]).unwrap();
    let got = (m.requests, m.responses, m.body_bytes, m.wire_bytes, m.status[&200], m.errors.timeout, m.connections);
    assert_eq!(got, (7, 5, 500, 1000, 4, 2, 20));
    assert_eq!((m.requests_per_sec, m.late, m.non_2xx_3xx), (5.0, 1, 1));
    assert_eq!(m.latency_sum_by_class_us, BTreeMap::from([("2xx".to_string(), 1500)]), "latency sums by class add");
    assert_eq!(m.late_by_class, BTreeMap::from([("5xx".to_string(), 1)]));
    assert_eq!(m.late_latency_sum_by_class_us, BTreeMap::from([("5xx".to_string(), 500)]));
}

#[test]
fn duration_is_the_union_of_the_windows() {
    // (start ms, duration s) of each run, and the merged duration.
    let cases: &[(&[(u64, f64)], f64)] = &[
        (&[(1_000, 2.0), (1_000, 2.0)], 2.0),
        (&[(1_000, 2.0), (1_500, 2.0)], 2.5),
        (&[(5_000, 1.0), (1_000, 10.0)], 10.0),
        (&[(0, 1.0), (3_000, 1.0)], 4.0),
    ];
    for (windows, want) in cases {
        let parts: Vec<BenchResult> = windows.iter().map(|&(start, d)| run_of(&[100], start, d, &[])).collect();
        let m = merge(&parts).unwrap();
        assert!((m.duration_s - want).abs() < 1e-9, "{windows:?}: {}", m.duration_s);
        assert_eq!(m.started_at_unix_ms, windows.iter().map(|w| w.0).min());
    }
}

#[test]
fn series_seconds_align_on_the_earliest_start_with_exact_percentiles() {
    let a = run_of(&[10, 20], 10_000, 2.0, &[&[10], &[20]]);
    let b = run_of(&[30, 40], 11_000, 2.0, &[&[30], &[40]]);
    let m = merge(&[a, b]).unwrap();
    let got: Vec<(u64, u64, u64)> = m.series.iter().map(|s| (s.second, s.responses, s.latency_max_us)).collect();
    // b's second 0 is the merged second 1, where a's second 1 is.
    assert_eq!(got, vec![(0, 1, 10), (1, 2, 30), (2, 1, 40)]);
    assert_eq!(m.series[1].latency_p50_us, 20);
}

#[test]
fn runs_of_different_kinds_of_load_are_refused() {
    type Change = fn(&mut BenchResult);
    let cases: &[(&str, Change)] = &[
        ("methods", |r| r.method = "HEAD".into()),
        ("loops", |r| r.loop_mode = "open".into()),
        ("keep-alive", |r| r.keepalive = false),
        ("warmups", |r| r.warmup_s = 1.0),
        ("timeouts", |r| r.timeout_s = 1.0),
    ];
    for (field, change) in cases {
        let mut b = run_of(&[1], 0, 1.0, &[]);
        change(&mut b);
        let err = merge(&[run_of(&[1], 0, 1.0, &[]), b]).unwrap_err();
        assert!(matches!(err, MergeError::Mismatch { field: f, .. } if f == *field), "{field}: {err}");
    }
}

#[test]
fn a_run_without_histograms_is_refused_by_its_position() {
    let mut old = run_of(&[1], 0, 1.0, &[]);
    old.histograms = None;
    let err = merge(&[run_of(&[1], 0, 1.0, &[]), old]).unwrap_err();
    assert!(matches!(err, MergeError::NoHistograms { part: 2 }), "{err}");
    assert!(matches!(merge(&[]), Err(MergeError::Empty)));
}
