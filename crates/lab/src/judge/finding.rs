//! One-line findings computed from a sweep's numbers (never written by hand).

use crate::experiment::claim::Select;
use crate::experiment::metric::{Better, Metric};
use crate::experiment::{Dim, FindingSpec};
use crate::judge::sample::{phrase, Sample};
use crate::judge::shape;
use crate::judge::stats::{self, Call, Interval};
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
pub(crate) fn advantage(m: Metric, x: f64, y: f64) -> f64 {
    match m.better() {
        Better::Higher => x / y,
        Better::Lower => y / x,
    }
}

/// The advantage of `x` over `y` on `m` with its per-round interval (above 1: `x` wins).
pub(crate) fn advantage_interval(m: Metric, x: &Sample, y: &Sample) -> Interval {
    stats::ratio_interval(&x.keyed(m), &y.keyed(m), |a, b| advantage(m, a, b))
}

/// `1.31× [1.20–1.42, 93.8%]` (or `1.31×` without an interval, `–` without a value: no
/// clean rounds on both sides).
pub(crate) fn ratio_text(i: Interval) -> String {
    if !i.median.is_finite() {
        "–".into()
    } else if i.known() {
        format!("{} {}", crate::judge::rule::times(i.median), i.brackets(crate::judge::rule::number))
    } else {
        crate::judge::rule::times(i.median)
    }
}

/// For each point of `a` along `over`, the advantage of `a` over its twin `b`.
fn ratios(m: Metric, a: &str, b: &str, over: Dim, samples: &[&Sample]) -> Vec<(f64, String, Interval)> {
    let several = samples.iter().any(|s| s.workload != samples[0].workload);
    let mut out = Vec::new();
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
            let i = advantage_interval(m, sa, sb);
            if i.median.is_finite() && x.is_finite() {
                let place = if several && sa.workload == sb.workload {
                    format!("{} ({})", phrase(over, x), sa.workload)
                } else {
                    phrase(over, x)
                };
                out.push((x, place, i));
            }
        }
    }
    out.sort_by(|p, q| p.0.total_cmp(&q.0));
    out
}

/// Where `a` beats `b` (the ratio's interval above 1), where it loses, and where they are level.
fn compare(m: Metric, a: &str, b: &str, over: Dim, samples: &[&Sample]) -> String {
    let rs = ratios(m, a, b, over, samples);
    if rs.is_empty() {
        return format!("{a} vs {b}: not measured here (one of them did not run).");
    }
    let group = |call: Call| -> Vec<String> {
        rs.iter().filter(|r| r.2.call() == call).map(|(_, place, i)| format!("{place}: {}", ratio_text(*i))).collect()
    };
    let (wins, losses, level) = (group(Call::Win), group(Call::Loss), group(Call::Level));
    let name = m.name();
    if wins.len() == rs.len() {
        return format!("{a} beats {b} on {name} everywhere ({}).", wins.join("; "));
    }
    if losses.len() == rs.len() {
        return format!("{b} beats {a} on {name} everywhere ({a}'s advantage {}).", losses.join("; "));
    }
    if level.len() == rs.len() {
        return format!("{a} and {b} are level on {name} (intervals include 1: {}).", level.join("; "));
    }
    let mut parts = Vec::new();
    for (list, what) in [(wins, format!("{a} better")), (level, "level".into()), (losses, format!("{b} better"))] {
        if !list.is_empty() {
            parts.push(format!("{what} at {}", list.join("; ")));
        }
    }
    format!("{a} vs {b} on {name} ({a}'s advantage): {}.", parts.join(" | "))
}

/// Per point (workload and client settings), the best server when its advantage over the
/// runner-up has an interval above 1; a point where it does not is level.
fn best(m: Metric, samples: &[&Sample]) -> String {
    let mut groups: BTreeMap<String, Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        groups.entry(format!("{}/{}", s.workload, s.client.label())).or_default().push(s);
    }
    let mut wins: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let (mut contested, mut level) = (0, 0);
    for group in groups.values().filter(|g| g.len() > 1) {
        contested += 1;
        let mut sorted = group.clone();
        sorted.sort_by(|x, y| advantage(m, y.value(m), x.value(m)).total_cmp(&1.0));
        let (top, second) = (sorted[0], sorted[1]);
        match advantage_interval(m, top, second).call() {
            Call::Win => wins.entry(top.server.as_str()).or_default().push(top.place()),
            _ => level += 1,
        }
    }
    if contested == 0 {
        return format!("Fewer than two servers ran, so none can be called best on {}.", m.name());
    }
    let mut ranked: Vec<(&str, Vec<String>)> = wins.into_iter().collect();
    ranked.sort_by_key(|(_, places)| std::cmp::Reverse(places.len()));
    let mut parts: Vec<String> =
        ranked.iter().map(|(server, places)| format!("{server} at {} ({})", places.len(), places.join("; "))).collect();
    if level > 0 {
        parts.push(format!("no clear best at {level} (the top two's interval includes 1)"));
    }
    format!("Best on {} over {contested} points: {}.", m.name(), parts.join(", "))
}

/// Per server (and workload), the series' shape along `over`: each step up or down only
/// where neighbouring intervals are apart, the maximum and whether it is an interior peak,
/// and for rates against clients how much of the per-client rate is kept (linearity).
fn trend(m: Metric, over: Dim, samples: &[&Sample]) -> String {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for s in samples {
        if !keys.contains(&(s.server.as_str(), s.workload.as_str())) {
            keys.push((s.server.as_str(), s.workload.as_str()));
        }
    }
    let several = keys.iter().any(|k| k.1 != keys[0].1);
    let owned: Vec<Sample> = samples.iter().map(|s| (*s).clone()).collect();
    let linear = (m == Metric::Rps && matches!(over, Dim::Connections | Dim::Clients)).then_some(0.0);
    let parts: Vec<String> = keys
        .iter()
        .filter_map(|(server, workload)| {
            let at =
                Select { server: Some(server.to_string()), workload: Some(workload.to_string()), ..Default::default() };
            let series = shape::series(&owned, &at, m, over);
            (series.len() > 1).then(|| {
                let name = if several { format!("{server} ({workload})") } else { server.to_string() };
                format!("{name}: {}", shape::shape(&series, over, linear, None).text)
            })
        })
        .collect();
    if parts.is_empty() {
        return format!("Too few points measured to show how {} changes.", m.name());
    }
    format!(
        "{} along {} (↑/↓ a step whose intervals are apart, = otherwise): {}.",
        m.name(),
        dim_name(over),
        parts.join("; ")
    )
}

fn dim_name(d: Dim) -> &'static str {
    match d {
        Dim::Connections | Dim::Clients => "connections",
        Dim::Requests => "requests",
        Dim::Rate => "offered rate",
        Dim::Share => "offered share of capacity",
        Dim::Server => "servers",
        Dim::Workload => "workloads",
        Dim::Connection => "connection uses",
        Dim::Streams => "streams per connection",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::ClientSpec;
    use crate::run::measurement::Measurement;

    /// A sample with three repeats spread ±2% around `mean_us`, in an order of its own per
    /// server (rounds pair up by repeat: the same order would make the noise of two servers
    /// move together).
    pub(crate) fn sample(server: &str, c: u32, mean_us: f64) -> Sample {
        let client = ClientSpec::closed(c, 100);
        let mut spread = [0.98, 1.0, 1.02];
        spread.rotate_left(server.bytes().map(usize::from).sum::<usize>() % 3);
        let runs =
            spread.iter().map(|f| Measurement { mean_us: mean_us * f, responses: 100, ..Default::default() }).collect();
        Sample { server: server.into(), workload: "w".into(), client, runs }
    }

    #[test]
    fn compare_sentences_follow_the_intervals() {
        let cases: [(&[f64; 3], &str); 4] = [
            (&[50.0, 100.0, 50.0], "fork beats single on mean latency (ms) everywhere (1 connection: 2.04× [1.92–2.04, 75%]; 2 connections: 2.04× [1.92–2.04, 75%]; 4 connections: 2.04× [1.92–2.04, 75%])."),
            (&[101.0, 100.0, 50.0], "fork vs single on mean latency (ms) (fork's advantage): fork better at 2 connections: 2.04× [1.92–2.04, 75%]; 4 connections: 2.04× [1.92–2.04, 75%] | level at 1 connection: 1.01× [0.95–1.01, 75%]."),
            (&[200.0, 400.0, 200.0], "single beats fork on mean latency (ms) everywhere (fork's advantage 1 connection: 0.51× [0.48–0.51, 75%]; 2 connections: 0.51× [0.48–0.51, 75%]; 4 connections: 0.51× [0.48–0.51, 75%])."),
            (&[100.0, 201.0, 100.0], "fork and single are level on mean latency (ms) (intervals include 1: 1 connection: 1.02× [0.96–1.02, 75%]; 2 connections: 1.01× [0.96–1.02, 75%]; 4 connections: 1.02× [0.96–1.02, 75%])."),
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
    fn best_counts_only_clear_wins_and_names_the_point() {
        let v =
            [(1, 10.0, 20.0), (2, 10.0, 5.0), (4, 1.0, 1.01)].map(|(c, a, b)| [sample("a", c, a), sample("b", c, b)]);
        let refs: Vec<&Sample> = v.iter().flatten().collect();
        let want = "Best on mean latency (ms) over 3 points: a at 1 (1 connection, N = 100), b at 1 (2 connections, N = 100), no clear best at 1 (the top two's interval includes 1).";
        assert_eq!(best(Metric::MeanMs, &refs), want);
    }

    #[test]
    fn servers_with_workloads_of_their_own_are_compared_by_client() {
        let mut v = [sample("cgi", 1, 400.0), sample("handler", 1, 100.0)];
        v[0].workload = "cgi page".into();
        v[1].workload = "handler page".into();
        let refs: Vec<&Sample> = v.iter().collect();
        let want = "handler beats cgi on mean latency (ms) everywhere (1 connection: 3.92× [3.92–4.16, 75%]).";
        assert_eq!(compare(Metric::MeanMs, "handler", "cgi", Dim::Connections, &refs), want);
    }

    /// Regression: a trend compared only its first and last points, so a rise that
    /// collapsed in between read as a plain rise.
    #[test]
    fn a_trend_shows_every_step_and_an_interior_peak() {
        let v = [
            sample("a", 1, 1000.0),
            sample("a", 2, 4000.0),
            sample("a", 4, 2000.0),
            sample("b", 1, 5000.0),
            sample("b", 2, 5050.0),
            sample("b", 4, 10000.0),
        ];
        let refs: Vec<&Sample> = v.iter().collect();
        let want = "mean latency (ms) along connections (↑/↓ a step whose intervals are apart, = otherwise): \
                    a: 1.000 1 connection → 2.000 4 connections: ↑↓; max 4.000 at 2 connections (then falls); \
                    b: 5.000 1 connection → 10.00 4 connections: =↑; max 10.00 at 4 connections.";
        assert_eq!(trend(Metric::MeanMs, Dim::Connections, &refs), want);
    }
}
