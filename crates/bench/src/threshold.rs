//! `--fail-on`: conditions on a run's result that make `spidey bench` exit non-zero, for
//! CI, as k6's thresholds do: `error-rate>1%`, `p99>50ms`, `rps<1000`.

use super::BenchResult;
use std::fmt;

/// What a threshold looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Failed requests as a share of counted requests: those with no answer (every error
    /// class: transport errors and, under `--rate`, `unsent`) plus the answers whose status
    /// is not 2xx or 3xx (as k6's `http_req_failed` and wrk's "Non-2xx or 3xx" count).
    ErrorRate,
    /// Requests with no answer (every error class) as a share of counted requests; the
    /// answers' statuses, 4xx and 5xx included, do not count.
    UnansweredRate,
    /// A latency percentile, in per mille (500 = p50, 999 = p99.9), or the mean (None).
    Latency(Option<u32>),
    /// Responses per second.
    Rps,
}

/// `METRIC>VALUE` or `METRIC<VALUE`: the run fails when the condition holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub text: String,
    metric: Metric,
    above: bool,
    /// A share (0..1), microseconds or responses per second, after the metric.
    limit: f64,
}

const METRICS: &str = "error-rate, unanswered-rate, p50, p90, p99, p99.9, max, mean, rps";

/// Parses `--fail-on`'s value; the refusal is one line naming the flag and its value. A
/// rate needs its `%` and a latency its unit: a bare `p99>50` would be read as 50 seconds,
/// a bare `error-rate>1` as 100%.
pub fn parse(text: &str) -> Result<Threshold, String> {
    let refuse = |why: String| format!("--fail-on '{text}': {why}");
    let at = text.find(['>', '<']).ok_or_else(|| refuse("expected METRIC>VALUE or METRIC<VALUE".into()))?;
    let (name, value) = (text[..at].trim(), text[at + 1..].trim());
    let above = text.as_bytes()[at] == b'>';
    let metric = match name {
        "error-rate" => Metric::ErrorRate,
        "unanswered-rate" => Metric::UnansweredRate,
        "p50" => Metric::Latency(Some(500)),
        "p90" => Metric::Latency(Some(900)),
        "p99" => Metric::Latency(Some(990)),
        "p99.9" => Metric::Latency(Some(999)),
        "max" => Metric::Latency(Some(1000)),
        "mean" => Metric::Latency(None),
        "rps" => Metric::Rps,
        _ => return Err(refuse(format!("unknown metric '{name}' (known: {METRICS})"))),
    };
    let bad = |what: &str| refuse(format!("'{value}' is not {what}"));
    let bare = value.parse::<f64>().is_ok();
    let op = &text[at..=at];
    let limit = match metric {
        Metric::ErrorRate | Metric::UnansweredRate => match value.strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0).map_err(|_| bad("a percentage"))?,
            None if bare => return Err(refuse(format!("give a %, e.g. {name}{op}{value}%"))),
            None => return Err(bad("a percentage such as 1%")),
        },
        Metric::Latency(_) if bare => return Err(refuse(format!("give a unit, e.g. {name}{op}{value}ms"))),
        Metric::Latency(_) => {
            spidey_config::duration(value).map_err(|_| bad("a duration such as 50ms"))?.as_secs_f64() * 1e6
        }
        Metric::Rps => value.parse::<f64>().map_err(|_| bad("a number"))?,
    };
    if !limit.is_finite() || limit < 0.0 {
        return Err(bad("a non-negative number"));
    }
    Ok(Threshold { text: text.to_string(), metric, above, limit })
}

impl Threshold {
    /// The run's value of this metric; None when it has none (a latency with no response).
    fn value(&self, r: &BenchResult) -> Option<f64> {
        let l = &r.latency;
        match self.metric {
            Metric::ErrorRate => share(r.errors.total() + r.non_2xx_3xx, r.requests),
            Metric::UnansweredRate => share(r.errors.total(), r.requests),
            Metric::Rps => Some(r.requests_per_sec),
            Metric::Latency(_) if l.count == 0 => None,
            Metric::Latency(p) => Some(match p {
                None => l.mean_us,
                Some(500) => l.p50_us as f64,
                Some(900) => l.p90_us as f64,
                Some(990) => l.p99_us as f64,
                Some(999) => l.p99_9_us as f64,
                _ => l.max_us as f64,
            }),
        }
    }

    /// Checks the run: `Crossed` when the condition holds, or when the metric has no value
    /// (a run with nothing to measure does not pass a CI gate).
    pub fn check(&self, r: &BenchResult) -> Check {
        let value = self.value(r);
        let crossed = value.map_or(true, |v| if self.above { v > self.limit } else { v < self.limit });
        Check { threshold: self.clone(), value, crossed }
    }
}

/// `n` of `of` (None when `of` is 0: no rate of nothing).
fn share(n: u64, of: u64) -> Option<f64> {
    (of > 0).then(|| n as f64 / of as f64)
}

/// A threshold against one run.
#[derive(Debug, Clone)]
pub struct Check {
    pub threshold: Threshold,
    value: Option<f64>,
    pub crossed: bool,
}

impl fmt::Display for Check {
    /// `p99>50ms: crossed (p99 was 73.20ms)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.threshold;
        let name = t.text[..t.text.find(['>', '<']).unwrap_or(0)].trim();
        let value = match (self.value, t.metric) {
            (None, _) => "none".to_string(),
            (Some(v), Metric::ErrorRate | Metric::UnansweredRate) => format!("{:.2}%", v * 100.0),
            (Some(v), Metric::Latency(_)) => super::report::time(v),
            (Some(v), Metric::Rps) => format!("{v:.2}"),
        };
        let verdict = if self.crossed { "crossed" } else { "ok" };
        write!(f, "{}: {verdict} ({name} was {value})", t.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_table() {
        // (text, (metric, above, limit), or what the refusal says)
        type Case<'a> = (&'a str, Result<(Metric, bool, f64), &'a str>);
        let cases: &[Case] = &[
            ("error-rate>1%", Ok((Metric::ErrorRate, true, 0.01))),
            ("error-rate > 0.5 %", Ok((Metric::ErrorRate, true, 0.005))),
            ("unanswered-rate>2%", Ok((Metric::UnansweredRate, true, 0.02))),
            ("p99>50ms", Ok((Metric::Latency(Some(990)), true, 50_000.0))),
            ("p99.9 > 1s", Ok((Metric::Latency(Some(999)), true, 1_000_000.0))),
            ("mean>200us", Ok((Metric::Latency(None), true, 200.0))),
            ("rps<1000", Ok((Metric::Rps, false, 1000.0))),
            // A bare number would be seconds, or a share: refused, the unit named.
            ("p99>50", Err("--fail-on 'p99>50': give a unit, e.g. p99>50ms")),
            ("max<0.5", Err("--fail-on 'max<0.5': give a unit, e.g. max<0.5ms")),
            ("error-rate>1", Err("--fail-on 'error-rate>1': give a %, e.g. error-rate>1%")),
            ("error-rate>0.05", Err("--fail-on 'error-rate>0.05': give a %, e.g. error-rate>0.05%")),
            ("p95>1ms", Err("--fail-on 'p95>1ms': unknown metric 'p95'")),
            ("p99=5ms", Err("--fail-on 'p99=5ms': expected METRIC>VALUE")),
            ("p99>fast", Err("not a duration")),
            ("error-rate>x%", Err("not a percentage")),
            ("rps<-1", Err("non-negative")),
        ];
        for (text, want) in cases {
            match (parse(text), want) {
                (Ok(t), Ok((metric, above, limit))) => {
                    assert_eq!((t.metric, t.above), (*metric, *above), "{text}");
                    assert!((t.limit - limit).abs() < 1e-9, "{text}: {}", t.limit);
                }
                (Err(e), Err(want)) => assert!(e.contains(want) && e.contains(text), "{text}: {e}"),
                (got, _) => panic!("{text}: {got:?}"),
            }
        }
    }
}
