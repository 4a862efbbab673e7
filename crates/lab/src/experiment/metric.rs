//! The metrics an experiment file names (a table's columns, a claim's number), and how
//! the lab writes a number. What one point measured, and each metric's value in it, is
//! `measurement.rs`'s.

use serde::{Deserialize, Serialize};

/// A number read from a measurement ([`Metric::value`], `measurement.rs`), with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Metric {
    MeanS,
    MeanMs,
    P50Ms,
    P99Ms,
    Rps,
    /// Successful answers (2xx and 3xx) per second: [`Metric::Rps`] without the error
    /// answers (a 503 from an admission limit is an answer, and fast).
    OkRps,
    /// The time of one batch (the seed's whole test): the batches' time over their count.
    TotalS,
    KbS,
    MbS,
    GbS,
    ErrorPct,
    /// Server CPU time (process tree, reaped children included) per response, µs.
    CpuUs,
    /// The errors the seeds counted: non-2xx answers, timeouts and connection failures, as
    /// a share of the requests the open loop sent on time. Late and unsent requests are a
    /// class of their own ([`Metric::LatePct`]) and out of both counts: a late answer's
    /// status is not kept, so counting late requests as attempts would dilute the server's
    /// errors by the generator's own lateness.
    SeedErrorPct,
    /// Requests sent late or never sent, % of those scheduled.
    LatePct,
    /// Of [`Metric::SeedErrorPct`], the answers with an error status (a 503 from an
    /// admission limit, a 504): % of the requests sent on time.
    RefusedPct,
    /// Of [`Metric::SeedErrorPct`], the requests that got no answer (timeouts, resets,
    /// failed connects): % of the requests sent on time.
    UnansweredPct,
    /// The load generator's CPU time as a share of the CPUs it could keep busy during the
    /// point (its threads saturated near 100).
    ClientBusyPct,
    /// The mean latency of the successful answers (1xx to 3xx), ms.
    OkMs,
    /// The mean latency of the error answers (4xx, 5xx: a 503 from an admission limit),
    /// ms. Requests without an answer have none ([`Metric::UnansweredPct`] counts them).
    ErrorAnswerMs,
}

/// Whether larger values of a metric are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Better {
    Higher,
    Lower,
}

impl Metric {
    pub fn better(self) -> Better {
        match self {
            Metric::Rps | Metric::OkRps | Metric::KbS | Metric::MbS | Metric::GbS => Better::Higher,
            _ => Better::Lower,
        }
    }

    /// A short name for plot legends and findings.
    pub fn name(self) -> &'static str {
        match self {
            Metric::MeanS => "mean latency (s)",
            Metric::MeanMs => "mean latency (ms)",
            Metric::P50Ms => "p50 (ms)",
            Metric::P99Ms => "p99 (ms)",
            Metric::Rps => "req/s",
            Metric::OkRps => "successful answers/s (2xx, 3xx)",
            Metric::TotalS => "time (s)",
            Metric::KbS => "KB/s",
            Metric::MbS => "MB/s",
            Metric::GbS => "GB/s",
            Metric::ErrorPct => "errors (%)",
            Metric::CpuUs => "server CPU per request (µs)",
            Metric::SeedErrorPct => "errors as the seed counted them (%)",
            Metric::LatePct => "late or unsent (%)",
            Metric::RefusedPct => "error answers (%)",
            Metric::UnansweredPct => "no answer (%)",
            Metric::ClientBusyPct => "load generator busy (% of its CPUs)",
            Metric::OkMs => "mean latency of successful answers (ms)",
            Metric::ErrorAnswerMs => "mean latency of error answers (ms)",
        }
    }
}

/// Four significant digits, without exponent for everyday magnitudes.
pub(crate) fn format(v: f64) -> String {
    if v.is_nan() {
        return "–".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.3}"), 4)
    } else {
        let decimals = (-(a.log10().floor()) as usize + 3).min(9);
        format!("{v:.decimals$}")
    }
}

/// Keeps `sig` significant digits of a number formatted with enough decimals.
fn trim(s: String, sig: usize) -> String {
    let int_digits = s.split('.').next().map(|i| i.trim_start_matches('-').len()).unwrap_or(0);
    let decimals = sig.saturating_sub(int_digits);
    let v: f64 = s.parse().unwrap_or(0.0);
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_table() {
        let cases = [
            (0.0059, "0.005900"),
            (1.5, "1.500"),
            (29.31, "29.31"),
            (123.456, "123.5"),
            (1315.789, "1316"),
            (0.0, "0"),
            (f64::NAN, "–"),
        ];
        for (v, want) in cases {
            assert_eq!(format(v), want, "{v}");
        }
    }
}
