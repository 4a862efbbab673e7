//! One-line findings computed from a sweep's numbers (never written by hand).

use crate::lab::experiment::{Dim, FindingSpec};
use crate::lab::metric::{self, Better, Metric};
use crate::lab::table::{phrase, Sample};
use std::collections::BTreeMap;

/// The sentence a finding spec yields for these samples.
pub(crate) fn compute(spec: &FindingSpec, samples: &[Sample]) -> String {
    match spec {
        FindingSpec::Compare { metric, a, b, over, workload } => {
            compare(*metric, a, b, *over, &filter(samples, workload.as_deref()))
        }
        FindingSpec::Best { metric, workload } => best(*metric, &filter(samples, workload.as_deref())),
        FindingSpec::Trend { metric, over, workload } => trend(*metric, *over, &filter(samples, workload.as_deref())),
    }
}

fn filter<'a>(samples: &'a [Sample], workload: Option<&str>) -> Vec<&'a Sample> {
    samples.iter().filter(|s| !s.runs.is_empty() && workload.map_or(true, |w| s.workload == w)).collect()
}

/// How many times better `x` is than `y` on `m` (above 1: `x` wins).
fn advantage(m: Metric, x: f64, y: f64) -> f64 {
    match m.better() {
        Better::Higher => x / y,
        Better::Lower => y / x,
    }
}

/// Per coordinate along `over`, the median advantage of `a` over `b` across matching points.
fn ratios(m: Metric, a: &str, b: &str, over: Dim, samples: &[&Sample]) -> Vec<(f64, f64)> {
    let mut by_x: BTreeMap<i64, (f64, Vec<f64>)> = BTreeMap::new();
    for sa in samples.iter().filter(|s| s.server == a) {
        // The same client settings on the same workload; failing that (each server has a
        // workload of its own, like CGI's script and the handler's path), the same client.
        let same_client = |s: &&&Sample| s.server == b && s.client == sa.client;
        let twin = samples
            .iter()
            .find(|s| same_client(s) && s.workload == sa.workload)
            .or_else(|| samples.iter().find(|s| same_client(s)));
        if let Some(sb) = twin {
            let x = sa.coord(over);
            let r = advantage(m, sa.value(m), sb.value(m));
            if r.is_finite() && x.is_finite() {
                by_x.entry((x * 1000.0) as i64).or_insert((x, Vec::new())).1.push(r);
            }
        }
    }
    by_x.into_values().map(|(x, rs)| (x, metric::median(rs))).collect()
}

fn compare(m: Metric, a: &str, b: &str, over: Dim, samples: &[&Sample]) -> String {
    let rs = ratios(m, a, b, over, samples);
    let Some(&(last_x, last_r)) = rs.last() else {
        return format!("{a} vs {b}: not measured here (one of them did not run).");
    };
    let wins: Vec<f64> = rs.iter().filter(|(_, r)| *r > 1.0).map(|(x, _)| *x).collect();
    let at_last = format!("{last_r:.2}× at {}", phrase(over, last_x));
    let first_win = rs.iter().position(|(_, r)| *r > 1.0);
    match first_win {
        None => {
            let (bx, br) = rs.iter().copied().fold((f64::NAN, 0.0), |acc, (x, r)| if r > acc.1 { (x, r) } else { acc });
            format!("{a} never beats {b} on {} (closest: {br:.2}× at {}).", m.name(), phrase(over, bx))
        }
        Some(0) if wins.len() == rs.len() => format!("{a} beats {b} on {} everywhere, by {at_last}.", m.name()),
        Some(i) if rs[i..].iter().all(|(_, r)| *r > 1.0) => {
            format!("{a} beats {b} on {} from {} on, by {at_last}.", m.name(), phrase(over, rs[i].0))
        }
        Some(_) => {
            let list: Vec<String> = wins.iter().map(|x| phrase(over, *x)).collect();
            let (won, of) = (wins.len(), rs.len());
            format!("{a} beats {b} on {} at {won} of {of} points ({}); {at_last}.", m.name(), list.join(", "))
        }
    }
}

fn best(m: Metric, samples: &[&Sample]) -> String {
    let mut groups: BTreeMap<String, Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        groups.entry(format!("{}/{}", s.workload, s.client.label())).or_default().push(s);
    }
    let mut wins: BTreeMap<&str, usize> = BTreeMap::new();
    let mut contested = 0;
    for group in groups.values().filter(|g| g.len() > 1) {
        contested += 1;
        let top = group.iter().copied().reduce(|x, y| if advantage(m, y.value(m), x.value(m)) > 1.0 { y } else { x });
        if let Some(top) = top {
            *wins.entry(top.server.as_str()).or_default() += 1;
        }
    }
    let Some((server, n)) = wins.iter().max_by_key(|(_, n)| **n) else {
        return format!("Fewer than two servers ran, so none can be called best on {}.", m.name());
    };
    let peak = samples.iter().copied().reduce(|x, y| if advantage(m, y.value(m), x.value(m)) > 1.0 { y } else { x });
    let peak = peak.map(|p| {
        let at = phrase(Dim::Connections, f64::from(p.client.c));
        format!("; the best single point is {} {} with {} at {at}", metric::format(p.value(m)), m.name(), p.server)
    });
    format!("{server} is best on {} at {n} of {contested} points{}.", m.name(), peak.unwrap_or_default())
}

fn trend(m: Metric, over: Dim, samples: &[&Sample]) -> String {
    let mut servers: Vec<&str> = Vec::new();
    for s in samples {
        if !servers.contains(&s.server.as_str()) {
            servers.push(s.server.as_str());
        }
    }
    let parts: Vec<String> = servers
        .iter()
        .filter_map(|server| {
            let mut pts: Vec<(f64, f64)> =
                samples.iter().filter(|s| s.server == *server).map(|s| (s.coord(over), s.value(m))).collect();
            pts.sort_by(|x, y| x.0.total_cmp(&y.0));
            let (&(x0, y0), &(x1, y1)) = (pts.first()?, pts.last()?);
            (pts.len() > 1).then(|| {
                let factor = if y0 != 0.0 { format!(" ({:.2}×)", y1 / y0) } else { String::new() };
                format!(
                    "{server}: {} goes from {} at {} to {} at {}{factor}",
                    m.name(),
                    metric::format(y0),
                    phrase(over, x0),
                    metric::format(y1),
                    phrase(over, x1),
                )
            })
        })
        .collect();
    if parts.is_empty() {
        return format!("Too few points measured to show how {} changes.", m.name());
    }
    parts.join("; ") + "."
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::experiment::ClientSpec;
    use crate::lab::metric::Measurement;

    fn sample(server: &str, c: u32, mean_us: f64) -> Sample {
        let client = ClientSpec { c, n: Some(100), duration: None, rate: None, keepalive: true };
        let runs = vec![Measurement { mean_us, responses: 100, ..Default::default() }];
        Sample { server: server.into(), workload: "w".into(), client, runs }
    }

    #[test]
    fn compare_sentences_follow_the_numbers() {
        let cases: [(&[f64; 3], &str); 4] = [
            (&[90.0, 40.0, 50.0], "fork beats single on mean latency (ms) everywhere, by 2.00× at 4 connections."),
            (
                &[110.0, 40.0, 50.0],
                "fork beats single on mean latency (ms) from 2 connections on, by 2.00× at 4 connections.",
            ),
            (&[200.0, 300.0, 400.0], "fork never beats single on mean latency (ms) (closest: 0.67× at 2 connections)."),
            (
                &[90.0, 300.0, 50.0],
                "fork beats single on mean latency (ms) at 2 of 3 points (1 connection, 4 connections); 2.00× at 4 connections.",
            ),
        ];
        for (fork, want) in cases {
            let mut v = Vec::new();
            for (i, c) in [1, 2, 4].into_iter().enumerate() {
                v.push(sample("single", c, [100.0, 200.0, 100.0][i]));
                v.push(sample("fork", c, fork[i]));
            }
            let refs: Vec<&Sample> = v.iter().collect();
            assert_eq!(compare(Metric::MeanMs, "fork", "single", Dim::Connections, &refs), want);
        }
    }

    #[test]
    fn best_counts_wins() {
        let v =
            [(1, 10.0, 20.0), (2, 10.0, 5.0), (4, 1.0, 2.0)].map(|(c, a, b)| [sample("a", c, a), sample("b", c, b)]);
        let refs: Vec<&Sample> = v.iter().flatten().collect();
        let want = "a is best on mean latency (ms) at 2 of 3 points; the best single point is 0.001000 mean latency (ms) with a at 4 connections.";
        assert_eq!(best(Metric::MeanMs, &refs), want);
    }

    #[test]
    fn servers_with_workloads_of_their_own_are_compared_by_client() {
        let mut v = [sample("cgi", 1, 400.0), sample("handler", 1, 100.0)];
        v[0].workload = "cgi page".into();
        v[1].workload = "handler page".into();
        let refs: Vec<&Sample> = v.iter().collect();
        let want = "handler beats cgi on mean latency (ms) everywhere, by 4.00× at 1 connection.";
        assert_eq!(compare(Metric::MeanMs, "handler", "cgi", Dim::Connections, &refs), want);
    }

    #[test]
    fn a_trend_names_each_server_once_and_no_factor_from_zero() {
        let v = [sample("a", 1, 0.0), sample("b", 1, 5.0), sample("a", 4, 0.0), sample("b", 4, 10.0)];
        let refs: Vec<&Sample> = v.iter().collect();
        let want = "a: mean latency (ms) goes from 0 at 1 connection to 0 at 4 connections; \
                    b: mean latency (ms) goes from 0.005000 at 1 connection to 0.01000 at 4 connections (2.00×).";
        assert_eq!(trend(Metric::MeanMs, Dim::Connections, &refs), want);
    }
}
