use super::*;
use std::io;

/// A summary of `values` (microseconds) recorded one by one.
fn summary_of(values: impl IntoIterator<Item = u64>) -> LatencySummary {
    let mut h = histogram(3);
    for v in values {
        h.record(v).unwrap();
    }
    LatencySummary::of(&h)
}

/// `got` is within HDR's 3-significant-digit precision (0.1%) of `want`.
fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= want.abs() * 0.001 + 1.0
}

#[test]
fn percentiles_of_known_distributions() {
    let uniform = summary_of(1..=10_000);
    let bimodal = summary_of((0..9_900).map(|_| 100).chain((0..100).map(|_| 10_000)));
    // Exponential with mean 1000 µs, by inverse CDF on an even grid: the p-th percentile is -1000·ln(1-p).
    let exponential =
        summary_of((0..100_000).map(|i| (-1000.0 * (1.0 - (i as f64 + 0.5) / 100_000.0).ln()) as u64 + 1));
    let exp_q = |p: f64| -1000.0 * (1.0 - p).ln();
    // (name, summary, min, p50, p90, p99, p99.9, max, mean, stdev)
    type Case<'a> = (&'a str, &'a LatencySummary, f64, f64, f64, f64, f64, f64, f64, f64);
    #[rustfmt::skip]
    let cases: &[Case] = &[
        ("uniform 1..=10000", &uniform, 1.0, 5_000.0, 9_000.0, 9_900.0, 9_990.0, 10_000.0, 5_000.5, 2_886.75),
        ("99% at 100, 1% at 10000", &bimodal, 100.0, 100.0, 100.0, 100.0, 10_000.0, 10_000.0, 199.0, 990.0),
        ("exponential mean 1000", &exponential, 1.0, exp_q(0.5), exp_q(0.9), exp_q(0.99), exp_q(0.999), exp_q(1.0 - 0.5e-5).ceil(), 1_000.5, 1_000.0),
    ];
    for (name, s, min, p50, p90, p99, p999, max, mean, stdev) in cases {
        let got =
            [s.min_us as f64, s.p50_us as f64, s.p90_us as f64, s.p99_us as f64, s.p99_9_us as f64, s.max_us as f64];
        let want = [*min, *p50, *p90, *p99, *p999, *max];
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(close(*g, w), "{name}: figure {i} is {g}, want {w}");
        }
        assert!((s.mean_us - mean).abs() <= mean * 0.01, "{name}: mean {} want {mean}", s.mean_us);
        assert!((s.stdev_us - stdev).abs() <= stdev * 0.01, "{name}: stdev {} want {stdev}", s.stdev_us);
    }
}

/// A request sent at `issued` for `intended`, within the lateness bound.
fn on_time(intended: Instant, issued: Instant) -> Sent {
    Sent { intended, issued, late: false }
}

#[test]
fn late_answers_are_responses_tallied_apart_unsent_are_errors_and_lateness_merges() {
    let start = Instant::now();
    let ms = |n| start + Duration::from_millis(n);
    let mut a = Recorder::new(true, start);
    let mut b = Recorder::new(true, start);
    a.sent(ms(0), ms(0));
    b.sent(ms(0), ms(5));
    b.sent(ms(1), ms(6));
    a.response(ms(10), on_time(ms(0), ms(0)), 200, 5, 50);
    b.response(ms(30), Sent { intended: ms(0), issued: ms(5), late: true }, 200, 5, 50);
    b.response(ms(31), Sent { intended: ms(1), issued: ms(6), late: true }, 503, 3, 40);
    b.unsent(3);
    a.merge(&b);
    // Every answer is a response in its status, late or not; the late ones are also apart.
    assert_eq!((a.responses, a.status[200], a.status[503], a.errors.unsent, a.backlog), (3, 2, 1, 3, 3));
    assert_eq!((a.late[2], a.late[5], a.late.iter().sum::<u64>()), (1, 1, 2));
    assert_eq!((a.late_latency_us[2], a.late_latency_us[5]), (30_000, 30_000));
    assert_eq!(a.class_latency_us[2], 40_000, "a class's sum holds its late answers too");
    assert_eq!((a.errors.total(), a.latency.len(), a.body_bytes), (3, 3, 13));
    let lateness = LatencySummary::of(a.lateness.as_ref().unwrap());
    assert_eq!((lateness.count, lateness.min_us), (3, 1));
    assert!(close(lateness.max_us as f64, 5_000.0), "{lateness:?}");
    assert!(Recorder::new(false, start).lateness.is_none(), "a closed loop has no schedule to be late for");
}

#[test]
fn empty_histogram_summarises_to_zeros() {
    let s = LatencySummary::of(&histogram(3));
    assert_eq!((s.count, s.min_us, s.max_us, s.p99_us), (0, 0, 0, 0));
}

#[test]
fn latencies_beyond_an_hour_are_clamped_not_dropped() {
    let start = Instant::now();
    let mut r = Recorder::new(false, start);
    r.response(start + Duration::from_secs(7200), on_time(start, start), 200, 0, 0);
    assert_eq!(r.latency.len(), 1);
    assert!(r.latency.max() >= MAX_LATENCY_US);
}

#[test]
fn merged_recorders_sum_counts_and_histograms() {
    let start = Instant::now();
    let ms = |n| start + Duration::from_millis(n);
    let mut a = Recorder::new(true, start);
    let mut b = Recorder::new(true, start);
    a.response(ms(10), on_time(ms(0), ms(5)), 200, 100, 150);
    b.response(ms(30), on_time(ms(0), ms(20)), 404, 7, 60);
    b.error(ms(40), ErrorClass::PortsExhausted);
    a.merge(&b);
    assert_eq!((a.responses, a.body_bytes, a.wire_bytes), (2, 107, 210));
    assert_eq!((a.status[200], a.status[404]), (1, 1));
    assert_eq!((a.errors.ports_exhausted, a.errors.total()), (1, 1));
    assert_eq!(a.last_event, Some(ms(40)));
    let corrected = LatencySummary::of(&a.latency);
    let uncorrected = LatencySummary::of(a.uncorrected.as_ref().unwrap());
    let figures = [corrected.min_us, corrected.max_us, uncorrected.min_us, uncorrected.max_us];
    for (got, want) in figures.into_iter().zip([10_000, 30_000, 5_000, 10_000]) {
        assert!(close(got as f64, want as f64), "{figures:?}");
    }
}

#[test]
fn series_has_every_second_from_every_thread() {
    let start = Instant::now();
    let at = |ms| start + Duration::from_millis(ms);
    let mut merger = SeriesMerger::new(2);
    let mut threads = [Recorder::new(false, start), Recorder::new(false, start)];
    // Thread 0 answers in seconds 0 and 2; thread 1 only in second 0; both run 3.5 s.
    threads[0].response(at(100), on_time(at(90), at(90)), 200, 1, 2);
    threads[1].response(at(200), on_time(at(100), at(100)), 200, 1, 2);
    threads[0].roll(at(2_100), &mut |s| merger.add(s));
    threads[0].error(at(2_200), ErrorClass::Timeout);
    for t in &mut threads {
        t.roll(at(3_500), &mut |s| merger.add(s));
        t.flush(&mut |s| merger.add(s));
    }
    let series = merger.finish();
    let got: Vec<(u64, u64, u64)> = series.iter().map(|s| (s.second, s.responses, s.errors)).collect();
    assert_eq!(got, [(0, 2, 0), (1, 0, 0), (2, 0, 1)]);
    assert_eq!((series[0].latency_max_us / 1000, series[0].body_bytes), (100, 2));
}

#[test]
fn errno_classes_table() {
    use rustix::io::Errno;
    let cases = [
        (Errno::MFILE, ErrorClass::FdExhausted),
        (Errno::NFILE, ErrorClass::FdExhausted),
        (Errno::ADDRNOTAVAIL, ErrorClass::PortsExhausted),
        (Errno::CONNREFUSED, ErrorClass::Connect),
        (Errno::NETUNREACH, ErrorClass::Connect),
    ];
    for (errno, want) in cases {
        let e = io::Error::from_raw_os_error(errno.raw_os_error());
        assert_eq!(classify_connect(&e), want, "{errno:?}");
    }
    let io_cases = [
        (Errno::CONNRESET, ErrorClass::Reset),
        (Errno::PIPE, ErrorClass::Reset),
        (Errno::TIMEDOUT, ErrorClass::Timeout),
        (Errno::IO, ErrorClass::Other),
    ];
    for (errno, want) in io_cases {
        let e = io::Error::from_raw_os_error(errno.raw_os_error());
        assert_eq!(classify_io(&e), want, "{errno:?}");
    }
}
