//! A sweep's second table (`table.versus`): each server labelled `X{suffix}` (`event tls`)
//! beside server `X` (`event`) at the same workload and client, and for each metric the
//! ratio of the suffixed server to the other per round (repeat `r` of each), the median of
//! those ratios and its order-statistic interval, as findings do. Experiment 007 reads TLS's
//! cost per mode from it: requests/s `TLS ÷ plain` below 1 and CPU per response above 1.

use crate::experiment::{Dim, Versus};
use crate::judge::finding::ratio_text;
use crate::judge::sample::Sample;
use crate::judge::stats;
use crate::judge::stats::with_interval;

/// Headers and rows: server, workload, connection use, then per metric: X, X{suffix}, the ratio;
/// then the disturbed repeats of both.
pub(crate) fn build(v: &Versus, samples: &[Sample]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut headers: Vec<String> = ["Server", "Workload", "Connection"].map(String::from).to_vec();
    for m in &v.metrics {
        let name = m.name();
        headers.extend([
            format!("{name} (plain)"),
            format!("{name} ({})", v.suffix.trim()),
            format!("{name}: {}", v.name),
        ]);
    }
    headers.push("Disturbed repeats (both)".into());
    let rows = samples
        .iter()
        .filter_map(|s| Some((s, s.server.strip_suffix(v.suffix.as_str())?)))
        .filter_map(|(s, base)| {
            let twin = samples.iter().find(|t| t.server == base && t.workload == s.workload && t.client == s.client)?;
            Some(row(v, twin, s))
        })
        .collect();
    (headers, rows)
}

fn row(v: &Versus, plain: &Sample, with: &Sample) -> Vec<String> {
    let mut row = vec![plain.server.clone(), plain.workload.clone(), with.label(Dim::Connection)];
    for &m in &v.metrics {
        let cell = |s: &Sample| if s.runs.is_empty() { "–".into() } else { with_interval(s.interval(m)) };
        row.extend([cell(plain), cell(with)]);
        let ratio = stats::ratio_interval(&with.keyed(m), &plain.keyed(m), |a, b| a / b);
        let measured = !(plain.runs.is_empty() || with.runs.is_empty());
        row.push(if measured && ratio.median.is_finite() { ratio_text(ratio) } else { "–".into() });
    }
    let both = || plain.runs.iter().chain(&with.runs);
    let (disturbed, excluded) = (both().filter(|r| r.cpu.disturbed).count(), both().filter(|r| r.excluded).count());
    let mut cell = format!("{disturbed}/{}", plain.runs.len() + with.runs.len());
    if excluded > 0 {
        cell += &format!("; {excluded} excluded");
    }
    row.push(cell);
    row
}

#[cfg(test)]
mod tests {
    use super::build;
    use crate::experiment::metric::Metric;
    use crate::experiment::Versus;
    use crate::judge::sample::Sample;
    use crate::run::measurement::Measurement;

    fn sample(server: &str, rps: &[f64]) -> Sample {
        let client = crate::experiment::ClientSpec::closed(4, 100);
        let runs = rps.iter().map(|&rps| Measurement { rps, responses: 100, ..Default::default() }).collect();
        Sample { server: server.into(), workload: "w".into(), client, runs }
    }

    /// Rows only for the suffixed servers that have a plain twin; the ratio is theirs over it.
    #[test]
    fn pairs_each_suffixed_server_with_its_plain_twin() {
        let v = Versus { suffix: " tls".into(), name: "TLS ÷ plain".into(), metrics: vec![Metric::Rps] };
        let samples = [
            sample("event", &[1000.0, 1000.0, 1000.0]),
            sample("event tls", &[500.0, 500.0, 500.0]),
            sample("fork tls", &[100.0, 100.0, 100.0]),
        ];
        let (headers, rows) = build(&v, &samples);
        assert_eq!(headers[3..6], ["req/s (plain)", "req/s (tls)", "req/s: TLS ÷ plain"]);
        assert_eq!(rows.len(), 1, "fork tls has no plain twin: {rows:?}");
        assert_eq!(rows[0][0], "event");
        assert!(rows[0][5].starts_with("0.50×"), "{:?}", rows[0]);
    }
}
