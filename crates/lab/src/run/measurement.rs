//! What one point measured ([`Measurement`], a line of `results.jsonl`), and the value of
//! each [`Metric`] in it: the metrics are the experiment file's, how they are read from a
//! measurement is here, beside what they read.

use crate::experiment::metric::Metric;
use serde::{Deserialize, Serialize};

/// The lab's view of one load run (whatever client produced it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Measurement {
    /// Requests answered (any status).
    pub responses: u64,
    /// Answers that were not 2xx or 3xx.
    pub non_success: u64,
    /// Requests that got no answer (connect, reset, timeout, malformed), and the open
    /// loop's own classes: `unsent` and `late`.
    pub errors: u64,
    /// Of `errors`, the open loop's own classes: scheduled but never sent, or sent more
    /// than bench's `--late-after` after the slot (the server's backlog, or the generator's
    /// own lateness on a busy machine: the two look alike).
    #[serde(default)]
    pub late_or_unsent: u64,
    /// The time the load ran, all batches together.
    pub duration_s: f64,
    /// How many times the point's batch (the seed's request count, or its duration) ran
    /// back to back to last the lab's minimum duration (`runner.rs`); counts, bytes and
    /// times are the batches' sums, latencies from their summed histograms.
    #[serde(default = "one")]
    pub batches: u32,
    /// How many times the point was measured: a repeat measured on a disturbed machine is
    /// measured again (`runner.rs`), and the last try kept.
    #[serde(default = "one")]
    pub tries: u32,
    /// The repeat stayed disturbed through its tries: it is left out of intervals, findings
    /// and verdicts (kept in the file and counted in the report).
    #[serde(default)]
    pub excluded: bool,
    pub rps: f64,
    /// Response bytes (head and body) per second.
    pub bytes_per_s: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// The server's CPU time and the machine's state during the point.
    #[serde(default)]
    pub cpu: crate::run::cpu::PointCpu,
    /// What the server itself counted during the point (spidey's `--metrics`; none for
    /// peers, or if a scrape failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::run::server_counts::ServerCounts>,
    /// The latencies of the successful answers (1xx to 3xx) summed, µs: with
    /// [`Metric::OkMs`], the mean latency by status class. None in records made before it
    /// was kept: their means by class are unknown (NaN), not 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok_latency_sum_us: Option<u64>,
    /// The latencies of the error answers (4xx, 5xx) summed, µs ([`Metric::ErrorAnswerMs`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_answer_latency_sum_us: Option<u64>,
    /// The server's capacity the point's rate was a share of (`capacity.rs`), in
    /// successful answers per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_rps: Option<f64>,
    /// The repeat this run was, filled in when a sample gathers its runs from the records
    /// (which carry it), so two samples' repeats pair up by round.
    #[serde(skip)]
    pub repeat: Option<u32>,
}

fn one() -> u32 {
    1
}

impl Metric {
    /// The metric's value in one measurement, in its unit.
    ///
    /// A latency or a CPU time per request of a point that got no answer is NaN (no value,
    /// left out of medians and trends), not 0: nothing was that fast or that cheap.
    pub fn value(self, m: &Measurement) -> f64 {
        match self {
            Metric::MeanS | Metric::MeanMs | Metric::P50Ms | Metric::P99Ms | Metric::CpuUs if m.responses == 0 => {
                f64::NAN
            }
            Metric::MeanS => m.mean_us / 1e6,
            Metric::MeanMs => m.mean_us / 1e3,
            Metric::P50Ms => m.p50_us / 1e3,
            Metric::P99Ms => m.p99_us / 1e3,
            Metric::Rps => m.rps,
            Metric::OkRps => ok_rps(m),
            Metric::TotalS => m.duration_s / f64::from(m.batches.max(1)),
            Metric::KbS => m.bytes_per_s / 1e3,
            Metric::MbS => m.bytes_per_s / 1e6,
            Metric::GbS => m.bytes_per_s / 1e9,
            Metric::ErrorPct => error_pct(m),
            Metric::SeedErrorPct => seed_error_pct(m),
            Metric::LatePct => pct(m.late_or_unsent, m),
            Metric::RefusedPct => on_time_pct(m.non_success, m),
            Metric::UnansweredPct => on_time_pct(m.errors.saturating_sub(m.late_or_unsent), m),
            Metric::CpuUs => m.cpu.server_cpu_us / m.responses as f64,
            Metric::ClientBusyPct => m.cpu.client_busy_pct(),
            Metric::OkMs => mean_ms(m.ok_latency_sum_us, m.responses.saturating_sub(m.non_success)),
            Metric::ErrorAnswerMs => mean_ms(m.error_answer_latency_sum_us, m.non_success),
        }
    }
}

/// The answers per second less the error answers' share of them (0 without answers).
fn ok_rps(m: &Measurement) -> f64 {
    if m.responses == 0 {
        return 0.0;
    }
    m.rps * m.responses.saturating_sub(m.non_success) as f64 / m.responses as f64
}

/// A latency sum over its count, in ms (NaN without a count or a sum: left out of medians).
fn mean_ms(sum_us: Option<u64>, count: u64) -> f64 {
    match sum_us {
        Some(sum) if count > 0 => sum as f64 / count as f64 / 1e3,
        _ => f64::NAN,
    }
}

/// `n` as a share of the requests attempted (answered or failed).
fn pct(n: u64, m: &Measurement) -> f64 {
    let attempted = m.responses + m.errors;
    if attempted == 0 {
        return 0.0;
    }
    100.0 * n as f64 / attempted as f64
}

fn seed_error_pct(m: &Measurement) -> f64 {
    on_time_pct(m.errors.saturating_sub(m.late_or_unsent) + m.non_success, m)
}

/// `n` as a share of the requests sent on time (NaN when none was).
fn on_time_pct(n: u64, m: &Measurement) -> f64 {
    let on_time = (m.responses + m.errors).saturating_sub(m.late_or_unsent);
    if on_time == 0 {
        return f64::NAN; // nothing sent on time: no rate (left out of medians, as CpuUs)
    }
    100.0 * n as f64 / on_time as f64
}

fn error_pct(m: &Measurement) -> f64 {
    let failed = m.errors + m.non_success;
    let attempted = m.responses + m.errors;
    if attempted == 0 {
        return 0.0;
    }
    100.0 * failed as f64 / attempted as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::metric::Better;

    #[test]
    fn error_pct_counts_non_success_and_failures() {
        let m = Measurement { responses: 90, non_success: 5, errors: 10, ..Default::default() };
        assert_eq!(Metric::ErrorPct.value(&m), 15.0);
        // Of the 10 failures, 4 were the open loop's late or unsent requests: 11 of the 96
        // requests sent on time failed.
        let m = Measurement { late_or_unsent: 4, ..m };
        assert_eq!(Metric::SeedErrorPct.value(&m), 1100.0 / 96.0);
        assert_eq!(Metric::LatePct.value(&m), 4.0);
        // The seed's errors split into error answers (5) and no answer (6 of the 10 failures).
        assert_eq!(Metric::RefusedPct.value(&m), 500.0 / 96.0);
        assert_eq!(Metric::UnansweredPct.value(&m), 600.0 / 96.0);
        // Latency by status class: 85 successful answers in 170 ms, 5 error answers in 1 ms.
        let m = Measurement { ok_latency_sum_us: Some(170_000), error_answer_latency_sum_us: Some(1_000), ..m };
        assert_eq!((Metric::OkMs.value(&m), Metric::ErrorAnswerMs.value(&m)), (2.0, 0.2));
        let none = Measurement { responses: 3, ok_latency_sum_us: Some(600), ..Default::default() };
        assert!(Metric::ErrorAnswerMs.value(&none).is_nan(), "no error answer: no mean");
        assert_eq!(Metric::OkMs.value(&none), 0.2);
    }

    /// Regression: a record made before the sums by status class were kept (the full run
    /// lab-full-c69ce8d) read its successful answers' mean as 0 ms, a number 003's response
    /// time claims would be judged on; it is unknown (NaN: the claim is "not measured").
    #[test]
    fn a_record_without_the_sums_by_class_has_no_mean_by_class() {
        let old = r#"{"responses":1500,"non_success":0,"errors":0,"duration_s":3.0,"rps":500.0,"bytes_per_s":1.0,
            "mean_us":800.0,"p50_us":700.0,"p90_us":900.0,"p99_us":1000.0,"max_us":1200.0}"#;
        let new =
            old.replace("\"max_us\"", "\"ok_latency_sum_us\":1200000,\"error_answer_latency_sum_us\":0,\"max_us\"");
        let cases = [(old.to_string(), f64::NAN), (new, 0.8)];
        for (json, want) in cases {
            let m: Measurement = serde_json::from_str(&json).unwrap();
            let got = Metric::OkMs.value(&m);
            assert!(got == want || (got.is_nan() && want.is_nan()), "{json}: {got}");
            assert_eq!(Metric::MeanMs.value(&m), 0.8, "the mean over all answers is kept either way");
        }
    }

    /// Regression: 011's unbounded arm got no answer at 1.5x its capacity and beyond, and
    /// its mean response time read 0 ms there, so "the response time rises with the rate"
    /// was judged not reproduced on points that had no response time at all.
    #[test]
    fn a_point_without_answers_has_no_latency() {
        let none = Measurement { responses: 0, errors: 2262, duration_s: 13.0, ..Default::default() };
        let some = Measurement { responses: 10, mean_us: 4000.0, p50_us: 3000.0, p99_us: 9000.0, ..none.clone() };
        for metric in [Metric::MeanS, Metric::MeanMs, Metric::P50Ms, Metric::P99Ms, Metric::OkMs, Metric::CpuUs] {
            assert!(metric.value(&none).is_nan(), "{metric:?} of a point without answers");
        }
        let got: Vec<f64> = [Metric::MeanMs, Metric::P50Ms, Metric::P99Ms].iter().map(|m| m.value(&some)).collect();
        assert_eq!(got, [4.0, 3.0, 9.0]);
        // Errors and rates stay numbers: none answered is 100% errors and 0 per second.
        assert_eq!((Metric::SeedErrorPct.value(&none), Metric::Rps.value(&none)), (100.0, 0.0));
    }

    /// Successful answers per second leave the error answers (503s) out of the rate.
    #[test]
    fn ok_rps_counts_successful_answers_only() {
        let cases = [
            (Measurement { responses: 100, non_success: 0, rps: 50.0, ..Default::default() }, 50.0),
            (Measurement { responses: 100, non_success: 75, rps: 400.0, ..Default::default() }, 100.0),
            (Measurement { responses: 100, non_success: 100, rps: 400.0, ..Default::default() }, 0.0),
            (Measurement { responses: 0, errors: 9, ..Default::default() }, 0.0),
        ];
        for (m, want) in cases {
            assert_eq!(Metric::OkRps.value(&m), want, "{m:?}");
        }
        assert_eq!(Metric::OkRps.better(), Better::Higher);
    }

    /// Regression: seed 003's CGI collapse (503s beyond --max-cgi) read as 19% errors when
    /// the generator sent most requests late, because the late ones (their status not kept)
    /// counted as attempts that did not fail. Numbers of one quick-run point: CGI at 1500
    /// req/s, 305 answered on time of which 290 were 503, 1191 late, 4 unsent.
    #[test]
    fn seed_errors_are_a_share_of_the_requests_sent_on_time() {
        let m =
            Measurement { responses: 305, non_success: 290, errors: 1195, late_or_unsent: 1195, ..Default::default() };
        assert_eq!(Metric::SeedErrorPct.value(&m), 100.0 * 290.0 / 305.0);
        let all_late = Measurement { responses: 0, errors: 10, late_or_unsent: 10, ..Default::default() };
        assert!(Metric::SeedErrorPct.value(&all_late).is_nan(), "nothing sent on time: no error rate");
    }
}
