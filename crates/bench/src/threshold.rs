//! `--fail-on`: conditions on a run's result that make `spidey bench` exit non-zero, for
//! CI, as k6's thresholds do: `error-rate>1%`, `p99>50ms`, `rps<1000`.

use super::BenchResult;
use std::fmt;

/// What a threshold looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Unanswered requests (every error class) as a share of counted requests.
    ErrorRate,
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

const METRICS: &str = "error-rate, p50, p90, p99, p99.9, max, mean, rps";

/// Parses `--fail-on`'s value.
pub fn parse(text: &str) -> Result<Threshold, String> {
    let at = text.find(['>', '<']).ok_or_else(|| format!("'{text}': expected METRIC>VALUE or METRIC<VALUE"))?;
    let (name, value) = (text[..at].trim(), text[at + 1..].trim());
    let above = text.as_bytes()[at] == b'>';
    let metric = match name {
        "error-rate" => Metric::ErrorRate,
        "p50" => Metric::Latency(Some(500)),
        "p90" => Metric::Latency(Some(900)),
        "p99" => Metric::Latency(Some(990)),
        "p99.9" => Metric::Latency(Some(999)),
        "max" => Metric::Latency(Some(1000)),
        "mean" => Metric::Latency(None),
        "rps" => Metric::Rps,
        _ => return Err(format!("'{text}': unknown metric '{name}' (known: {METRICS})")),
    };
    let bad = |what: &str| format!("'{text}': '{value}' is not {what}");
    let limit = match metric {
        Metric::ErrorRate => match value.strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0).map_err(|_| bad("a percentage"))?,
            None => value.parse::<f64>().map_err(|_| bad("a share such as 0.01 or 1%"))?,
        },
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
            Metric::ErrorRate => (r.requests > 0).then(|| r.errors.total() as f64 / r.requests as f64),
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
            (Some(v), Metric::ErrorRate) => format!("{:.2}%", v * 100.0),
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
            ("error-rate>0.05", Ok((Metric::ErrorRate, true, 0.05))),
            ("p99>50ms", Ok((Metric::Latency(Some(990)), true, 50_000.0))),
            ("p99.9 > 1s", Ok((Metric::Latency(Some(999)), true, 1_000_000.0))),
            ("mean>200us", Ok((Metric::Latency(None), true, 200.0))),
            ("rps<1000", Ok((Metric::Rps, false, 1000.0))),
            ("p95>1ms", Err("unknown metric 'p95'")),
            ("p99=5ms", Err("expected METRIC>VALUE")),
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
