//! Latency distributions, for the sweeps a seed's claim about latency is checked against:
//! at the sweep's heaviest client setting, per workload, every request of every clean
//! repeat of each server (the HDR histograms bench stores in each point's
//! `raw.histograms.latency`, merged exactly; repeats excluded as disturbed left out), drawn
//! as a cumulative distribution over a log latency axis.

use crate::experiment::metric::Metric;
use crate::experiment::plan::{point_id, Active};
use crate::experiment::{ClientSpec, Experiment};
use crate::report::chart::{svg_chart, Axis, Frame, Legend, PALETTE};
use crate::run::results::{Outcome, Record};
use hdrhistogram::Histogram;
use plotters::prelude::*;
use std::collections::HashMap;

/// Distributions drawn per sweep at most (one per workload).
const MAX_PLOTS: usize = 3;

/// One chart: its title and SVG.
pub(crate) struct Cdf {
    pub title: String,
    pub svg: String,
}

/// Whether a claim about latency is checked against this sweep.
pub(crate) fn wanted(exp: &Experiment, sweep: &str) -> bool {
    exp.claims.iter().filter(|c| c.sweep() == sweep).filter_map(|c| c.metric()).any(is_latency)
}

fn is_latency(m: Metric) -> bool {
    matches!(m, Metric::MeanS | Metric::MeanMs | Metric::P50Ms | Metric::P99Ms | Metric::OkMs)
}

/// The client setting with the most load: the most connections, then the highest rate,
/// then the most requests (the last of equals).
fn heaviest(clients: &[ClientSpec]) -> Option<&ClientSpec> {
    let key = |c: &ClientSpec| (c.c, c.rate.unwrap_or(0.0), c.n.unwrap_or(0));
    clients.iter().fold(None, |best: Option<&ClientSpec>, c| match best {
        Some(b) if key(b).partial_cmp(&key(c)) == Some(std::cmp::Ordering::Greater) => Some(b),
        _ => Some(c),
    })
}

/// The latency distributions of a sweep (none when no claim about latency uses it, or no
/// point has a histogram).
pub(crate) fn plots(exp: &Experiment, a: &Active<'_>, quick: bool, records: &HashMap<String, Record>) -> Vec<Cdf> {
    let Some(client) = heaviest(&a.clients).filter(|_| wanted(exp, &a.sweep.name)) else { return Vec::new() };
    let mut out = Vec::new();
    for workload in a.workloads.iter().take(MAX_PLOTS) {
        let mut lines = Vec::new();
        for server in a.servers.iter().filter(|s| s.runs(workload)) {
            let hists = (0..a.repeats).filter_map(|r| {
                let id = point_id(quick, &exp.id, &a.sweep.name, &server.label, workload, client, r);
                // A repeat left out as disturbed is left out here too, as from the intervals.
                let clean = |x: &&Record| !x.measurement.as_ref().is_some_and(|m| m.excluded);
                records.get(&id).filter(|x| x.outcome == Outcome::Measured).filter(clean).and_then(latency)
            });
            if let Some(h) = merge(hists) {
                lines.push((server.label.clone(), h));
            }
        }
        if lines.is_empty() {
            continue;
        }
        let place = crate::judge::sample::Sample {
            server: String::new(),
            workload: workload.clone(),
            client: client.clone(),
            runs: Vec::new(),
        }
        .place();
        let several = a.workloads.len() > 1;
        let title = format!(
            "Latency distribution{}, {place}: every request of every clean repeat",
            if several { format!(": {workload}") } else { String::new() }
        );
        if let Some(svg) = chart(&title, &lines) {
            out.push(Cdf { title, svg });
        }
    }
    out
}

/// The latency histogram a point stored, if it stored one.
fn latency(r: &Record) -> Option<Histogram<u64>> {
    let text = r.raw.as_ref()?.get("histograms")?.get("latency")?.as_str()?;
    spidey_bench::decode_histogram(text).ok()
}

/// The histograms added together (None when there are none).
fn merge(hists: impl Iterator<Item = Histogram<u64>>) -> Option<Histogram<u64>> {
    hists.reduce(|mut a, b| {
        // Both were recorded with bench's bounds; adding can fail only beyond them.
        let _ = a.add(&b);
        a
    })
}

/// (latency in ms, % of requests at or below it) at every value the histogram recorded:
/// the exact distribution, at the histogram's resolution.
pub(crate) fn points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to().max(1) as f64 / 1e3, v.quantile_iterated_to() * 100.0))
        .collect();
    out.dedup_by(|b, a| a.0 == b.0 && a.1 == b.1);
    out
}

/// A distribution's points as a staircase: level until the next recorded value, then up.
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, p) in points.iter().enumerate() {
        out.push((p.0, if i == 0 { 0.0 } else { points[i - 1].1 }));
        out.push(*p);
    }
    out
}

/// Each line's latency at every whole percent of its requests: where the requests lie,
/// for the axis to tick ([`crate::report::chart::log_ticks`]).
fn percentiles(series: &[(String, Vec<(f64, f64)>)]) -> Vec<f64> {
    let at = |p: &[(f64, f64)], q: f64| p.iter().find(|x| x.1 >= q).map(|x| x.0);
    series.iter().flat_map(|(_, p)| (1..100).filter_map(|q| at(p, f64::from(q)))).collect()
}

fn chart(title: &str, lines: &[(String, Histogram<u64>)]) -> Option<String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = lines
        .iter()
        .map(|(name, h)| (format!("{name} ({} requests)", h.len()), points(h)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let all = || series.iter().flat_map(|s| s.1.iter());
    let lo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let hi = all().map(|p| p.0).fold(0.0, f64::max);
    if !(lo.is_finite() && hi > 0.0) {
        return None;
    }
    let (lo, hi) = if hi > lo * 1.5 { (lo / 1.1, hi * 1.1) } else { (lo / 2.0, hi * 2.0) };
    let frame = Frame {
        title,
        x_desc: "latency (ms, log scale)",
        y_desc: "requests answered within it (%)",
        x: Axis::log10(lo, hi, percentiles(&series)),
        y: Axis::linear(0.0..100.0),
    };
    let color = |i: usize| PALETTE[i % PALETTE.len()].to_rgba();
    let legend: Vec<Legend> = series
        .iter()
        .enumerate()
        .map(|(i, s)| Legend { name: s.0.clone(), color: color(i), width: 2, dashed: false })
        .collect();
    svg_chart(&frame, &legend, |chart| {
        for (i, (_, pts)) in series.iter().enumerate() {
            let style = ShapeStyle { color: color(i), filled: false, stroke_width: 2 };
            chart.draw_series(LineSeries::new(steps(pts).into_iter().map(|p| (p.0.log10(), p.1)), style))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distribution of known latencies: rises to 100% at the largest, monotone.
    #[test]
    fn cdf_of_a_known_histogram() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for us in [1000, 1000, 2000, 4000] {
            h.record(us).unwrap();
        }
        let mut merged = merge([h.clone(), h].into_iter()).unwrap();
        assert_eq!(merged.len(), 8);
        let p = points(&merged);
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1), "{p:?}");
        let last = p.last().unwrap();
        assert!((last.0 - 4.0).abs() < 0.01 && (last.1 - 100.0).abs() < 1e-9, "{p:?}");
        let at_1ms = p.iter().filter(|x| x.0 <= 1.001).map(|x| x.1).fold(0.0, f64::max);
        assert!((at_1ms - 50.0).abs() < 1e-9, "half the requests took 1 ms: {p:?}");
        merged.reset();
        assert!(points(&merged).is_empty());
    }

    #[test]
    fn heaviest_client_table() {
        let closed = |c, n| ClientSpec::closed(c, n);
        let rate = |r| ClientSpec { rate: Some(r), ..ClientSpec::closed(10, 100) };
        let cases = [
            (vec![closed(1, 100), closed(4, 400), closed(2, 200)], "c4-n400"),
            (vec![rate(500.0), rate(5500.0), rate(1000.0)], "c10-n100-r5500"),
            (vec![closed(10, 10), closed(10, 100_000), closed(10, 100)], "c10-n100000"),
        ];
        for (clients, want) in cases {
            assert_eq!(heaviest(&clients).unwrap().label(), want);
        }
    }
}
