//! A verdict per seed claim: reproduced, not reproduced or inconclusive, decided from the
//! bootstrap intervals, with the seed's number beside ours.
//!
//! - `beats`: per point the interval of `a`'s advantage over its twin; reproduced when `a`
//!   wins at most points and loses at none, not reproduced when it loses at most points
//!   (or loses and never wins), inconclusive otherwise.
//! - `level`: reproduced when every ratio's interval lies within 1 ± `within`, not
//!   reproduced when one lies wholly outside, inconclusive otherwise.
//! - `trend`: the series' shape ([`shape`]): steps up or down only where neighbouring
//!   intervals do not overlap, first against last the same way, an interior peak when its
//!   interval lies above both ends', linearity from the rate per client; with
//!   `onset_above`, the first coordinate past it must be within 1.5× of the seed's.
//! - `at_most`: every point's interval at or below the limit; not when one lies above it.
//! - `best`: as `beats`, with the claimed server against the best of the others.

use crate::lab::claim::{seed_coord, twin, Claim, Select, Shape};
use crate::lab::experiment::Dim;
use crate::lab::finding::{advantage, advantage_interval, ratio_text};
use crate::lab::metric::{self, Metric};
use crate::lab::plan::Active;
use crate::lab::stats::{Call, Interval};
use crate::lab::table::{phrase, seed_matches, Sample};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Reproduced,
    NotReproduced,
    Inconclusive,
    /// The claim's sweep or points did not run (a quick run, a server unavailable here).
    NotMeasured,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Reproduced => "reproduced",
            Outcome::NotReproduced => "not reproduced",
            Outcome::Inconclusive => "inconclusive",
            Outcome::NotMeasured => "not measured",
        }
    }
}

/// One row of the verdict table.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    pub claim: String,
    pub seed: String,
    pub here: String,
    pub outcome: Outcome,
}

/// Checks `claim` against its sweep (`None` when the sweep did not run).
pub(crate) fn check(claim: &Claim, sweep: Option<(&Active<'_>, &[Sample])>) -> Verdict {
    let Some((a, samples)) = sweep else {
        return verdict(claim, "–".into(), "sweep not run".into(), Outcome::NotMeasured);
    };
    let seed = |s: &Sample, m: Metric| seed_value(a, s, m);
    match claim {
        Claim::Beats { metric, a: sa, b, at, seed_ratio, .. } => {
            let pairs = pairs(*metric, sa, b, at, samples, &seed);
            let seed_text = seed_ratio.map(|r| format!("{r:.2}×")).unwrap_or_else(|| seed_ratios(&pairs));
            let calls: Vec<Call> = pairs.iter().map(|p| p.here.call()).collect();
            verdict(claim, seed_text, list(&pairs), majority(&calls))
        }
        Claim::Level { metric, a: sa, b, at, within, .. } => {
            let pairs = pairs(*metric, sa, b, at, samples, &seed);
            let (lo, hi) = (1.0 / (1.0 + within), 1.0 + within);
            let inside = pairs.iter().filter(|p| p.here.known() && p.here.lo >= lo && p.here.hi <= hi).count();
            let outside = pairs.iter().filter(|p| p.here.known() && (p.here.lo > hi || p.here.hi < lo)).count();
            let outcome = match (pairs.len(), inside, outside) {
                (0, ..) => Outcome::NotMeasured,
                (_, _, o) if o > 0 => Outcome::NotReproduced,
                (n, i, _) if i == n => Outcome::Reproduced,
                _ => Outcome::Inconclusive,
            };
            let here = format!("{} (level band {lo:.2}–{hi:.2})", list(&pairs));
            verdict(claim, seed_ratios(&pairs), here, outcome)
        }
        Claim::Trend { metric, over, at, expect, linear_min, onset_above, .. } => {
            let here_series = series(samples, at, *metric, *over);
            let seed_series = seed_series(a, at, *metric, *over);
            let here = shape(&here_series, *over, *linear_min, *onset_above);
            let seed = shape(&seed_series, *over, *linear_min, *onset_above);
            let mut outcome =
                if here_series.len() < 2 { Outcome::NotMeasured } else { judge(&here, *expect, *linear_min) };
            // The onset is part of the claim ("errors rise from 2000 req/s"): ours must lie
            // within a factor of 1.5 of the seed's.
            if let (Some(limit), Outcome::Reproduced) = (onset_above, outcome) {
                let first = |s: &[(f64, Interval)]| s.iter().find(|p| p.1.median > *limit).map(|p| p.0);
                if let (Some(seed_x), here_x) = (first(&seed_series), first(&here_series)) {
                    if here_x.map_or(true, |x| x / seed_x > 1.5 || seed_x / x > 1.5) {
                        outcome = Outcome::NotReproduced;
                    }
                }
            }
            verdict(claim, seed.text, here.text, outcome)
        }
        Claim::AtMost { metric, at, limit, .. } => {
            let chosen: Vec<&Sample> = samples.iter().filter(|s| !s.runs.is_empty() && at.matches(s)).collect();
            let ints: Vec<Interval> = chosen.iter().map(|s| s.interval(*metric)).collect();
            let above = ints.iter().filter(|i| i.known() && i.lo > *limit).count();
            let below = ints.iter().filter(|i| i.known() && i.hi <= *limit).count();
            let outcome = match (ints.len(), above, below) {
                (0, ..) => Outcome::NotMeasured,
                (_, a, _) if a > 0 => Outcome::NotReproduced,
                (n, _, b) if b == n => Outcome::Reproduced,
                _ => Outcome::Inconclusive,
            };
            let worst = |vals: Vec<f64>| vals.into_iter().filter(|v| v.is_finite()).fold(f64::NAN, f64::max);
            let seed_max = worst(chosen.iter().filter_map(|s| seed(s, *metric)).collect());
            let here_max = ints.iter().copied().max_by(|x, y| x.median.total_cmp(&y.median));
            let here = here_max.map(|i| format!("max {}", crate::lab::table::with_interval(i))).unwrap_or_default();
            verdict(claim, format!("max {}", metric::format(seed_max)), here, outcome)
        }
        Claim::Best { metric, server, among, at, .. } => best(claim, *metric, server, among, at, samples, &seed),
    }
}

fn verdict(claim: &Claim, seed: String, here: String, outcome: Outcome) -> Verdict {
    Verdict { claim: claim.text().to_string(), seed, here, outcome }
}

/// The seed's value for a sample's point, when its table gives one for this metric.
fn seed_value(a: &Active<'_>, s: &Sample, m: Metric) -> Option<f64> {
    let col = a.sweep.table.columns.iter().position(|c| c.metric == m)?;
    let row = a.sweep.seed_rows.iter().find(|r| seed_matches(r, s))?;
    Some(row.values[col]).filter(|v| v.is_finite())
}

struct Pair {
    place: String,
    here: Interval,
    seed: Option<f64>,
}

fn pairs(
    m: Metric,
    a: &Select,
    b: &Select,
    at: &Select,
    samples: &[Sample],
    seed: &dyn Fn(&Sample, Metric) -> Option<f64>,
) -> Vec<Pair> {
    let several = samples.iter().any(|s| s.workload != samples[0].workload);
    samples
        .iter()
        .filter(|s| !s.runs.is_empty() && a.matches(s) && at.matches(s))
        .filter_map(|sa| {
            let sb = twin(sa, b, samples)?;
            let mut place = sa.place();
            if several && sa.workload == sb.workload {
                place = format!("{}, {place}", sa.workload);
            }
            if a.server.is_none() {
                place = format!("{}, {place}", sa.server);
            }
            let seed = seed(sa, m).zip(seed(sb, m)).map(|(x, y)| advantage(m, x, y));
            Some(Pair { place, here: advantage_interval(m, sa, sb), seed })
        })
        .collect()
}

fn list(pairs: &[Pair]) -> String {
    if pairs.is_empty() {
        return "not measured".into();
    }
    pairs.iter().map(|p| format!("{}: {}", p.place, ratio_text(p.here))).collect::<Vec<_>>().join("; ")
}

fn seed_ratios(pairs: &[Pair]) -> String {
    let known: Vec<String> = pairs.iter().filter_map(|p| p.seed.map(|r| format!("{}: {r:.2}×", p.place))).collect();
    if known.is_empty() {
        "–".into()
    } else {
        known.join("; ")
    }
}

/// Reproduced when most calls are wins and none a loss; not reproduced when most are
/// losses, or there are losses and no win.
fn majority(calls: &[Call]) -> Outcome {
    let n = calls.len();
    let wins = calls.iter().filter(|c| **c == Call::Win).count();
    let losses = calls.iter().filter(|c| **c == Call::Loss).count();
    match () {
        _ if n == 0 => Outcome::NotMeasured,
        _ if wins * 2 > n && losses == 0 => Outcome::Reproduced,
        _ if losses * 2 > n || (losses > 0 && wins == 0) => Outcome::NotReproduced,
        _ => Outcome::Inconclusive,
    }
}

/// (x, interval) along `over` for the points `at` selects, in order.
pub(crate) fn series(samples: &[Sample], at: &Select, m: Metric, over: Dim) -> Vec<(f64, Interval)> {
    let mut out: Vec<(f64, Interval)> = samples
        .iter()
        .filter(|s| !s.runs.is_empty() && at.matches(s))
        .map(|s| (s.coord(over), s.interval(m)))
        .filter(|(x, i)| x.is_finite() && i.median.is_finite())
        .collect();
    out.sort_by(|p, q| p.0.total_cmp(&q.0));
    out
}

/// The seed's series for the same selection, as exact intervals.
fn seed_series(a: &Active<'_>, at: &Select, m: Metric, over: Dim) -> Vec<(f64, Interval)> {
    let Some(col) = a.sweep.table.columns.iter().position(|c| c.metric == m) else { return Vec::new() };
    let mut out: Vec<(f64, Interval)> = a
        .sweep
        .seed_rows
        .iter()
        .filter(|r| at.matches_seed(r))
        .map(|r| (seed_coord(r, over), r.values[col]))
        .filter(|(x, v)| x.is_finite() && v.is_finite())
        .map(|(x, v)| (x, Interval { median: v, lo: v, hi: v }))
        .collect();
    out.sort_by(|p, q| p.0.total_cmp(&q.0));
    out
}

/// What a series does, in numbers and words.
pub(crate) struct ShapeReport {
    pub text: String,
    pub ups: usize,
    pub downs: usize,
    /// Last against first: Win when higher (intervals apart), Loss when lower.
    pub overall: Call,
    /// An interior maximum whose interval lies above both ends'.
    pub peak: bool,
    /// `(y_last / x_last) / (y_first / x_first)`, when asked for.
    pub linearity: Option<f64>,
}

/// `a` lies wholly above `b`.
fn above(a: Interval, b: Interval) -> bool {
    a.known() && b.known() && a.lo > b.hi
}

pub(crate) fn shape(series: &[(f64, Interval)], over: Dim, linear: Option<f64>, onset: Option<f64>) -> ShapeReport {
    let empty =
        ShapeReport { text: "–".into(), ups: 0, downs: 0, overall: Call::Level, peak: false, linearity: None };
    let (Some(&(x0, first)), Some(&(xn, last))) = (series.first(), series.last()) else { return empty };
    if series.len() < 2 {
        return empty;
    }
    let steps: Vec<&str> = series
        .windows(2)
        .map(|w| match (above(w[1].1, w[0].1), above(w[0].1, w[1].1)) {
            (true, _) => "↑",
            (_, true) => "↓",
            _ => "=",
        })
        .collect();
    let (ups, downs) = (steps.iter().filter(|s| **s == "↑").count(), steps.iter().filter(|s| **s == "↓").count());
    let overall = match (above(last, first), above(first, last)) {
        (true, _) => Call::Win,
        (_, true) => Call::Loss,
        _ => Call::Level,
    };
    let (px, top) = series.iter().copied().fold((x0, first), |acc, p| if p.1.median > acc.1.median { p } else { acc });
    let peak = above(top, first) && above(top, last);
    let mut text = format!(
        "{} {} → {} {}: {}",
        metric::format(first.median),
        phrase(over, x0),
        metric::format(last.median),
        phrase(over, xn),
        steps.join("")
    );
    text += &format!("; max {} at {}", metric::format(top.median), phrase(over, px));
    if peak {
        text += " (then falls)";
    }
    let linearity = linear.map(|_| (last.median / xn) / (first.median / x0));
    if let Some(l) = linearity {
        text += &format!("; per-{} rate kept {l:.2}", phrase(over, 1.0).trim_start_matches("1 "));
    }
    if let Some(limit) = onset {
        let at = series.iter().find(|p| p.1.median > limit).map(|p| phrase(over, p.0));
        text += &format!("; first above {}: {}", metric::format(limit), at.unwrap_or_else(|| "never".into()));
    }
    ShapeReport { text, ups, downs, overall, peak, linearity }
}

fn judge(r: &ShapeReport, expect: Shape, linear_min: Option<f64>) -> Outcome {
    let linear_ok = match (linear_min, r.linearity) {
        (Some(min), Some(l)) => l >= min,
        _ => true,
    };
    match expect {
        Shape::Rising | Shape::Falling => {
            let (good, bad, against) = match expect {
                Shape::Rising => (Call::Win, Call::Loss, r.downs),
                _ => (Call::Loss, Call::Win, r.ups),
            };
            match r.overall {
                // A rise that peaks inside and falls back is not a rise.
                _ if expect == Shape::Rising && r.peak => Outcome::NotReproduced,
                o if o == good && against == 0 && linear_ok => Outcome::Reproduced,
                o if o == good && against == 0 => Outcome::NotReproduced,
                o if o == bad => Outcome::NotReproduced,
                _ => Outcome::Inconclusive,
            }
        }
        Shape::Peak if r.peak => Outcome::Reproduced,
        Shape::Peak if r.overall == Call::Win && r.downs == 0 => Outcome::NotReproduced,
        Shape::Peak => Outcome::Inconclusive,
    }
}

/// The claimed server against the best of the others, per point.
fn best(
    claim: &Claim,
    m: Metric,
    server: &str,
    among: &[String],
    at: &Select,
    samples: &[Sample],
    seed: &dyn Fn(&Sample, Metric) -> Option<f64>,
) -> Verdict {
    let in_race = |s: &&Sample| !s.runs.is_empty() && at.matches(s) && (among.is_empty() || among.contains(&s.server));
    let (mut calls, mut here, mut seed_wins, mut seed_points) = (Vec::new(), Vec::new(), 0, 0);
    for mine in samples.iter().filter(in_race).filter(|s| s.server == server) {
        let rivals: Vec<&Sample> = samples
            .iter()
            .filter(in_race)
            .filter(|s| s.server != server && s.workload == mine.workload && s.client == mine.client)
            .collect();
        let Some(rival) =
            rivals.iter().copied().reduce(|x, y| if advantage(m, y.value(m), x.value(m)) > 1.0 { y } else { x })
        else {
            continue;
        };
        let i = advantage_interval(m, mine, rival);
        calls.push(i.call());
        here.push(format!(
            "{}: {} vs {} {}",
            mine.place(),
            ratio_text(i),
            rival.server,
            metric::format(rival.value(m))
        ));
        if let Some(v) = seed(mine, m) {
            let others: Vec<f64> = rivals.iter().filter_map(|r| seed(r, m)).collect();
            if !others.is_empty() {
                seed_points += 1;
                seed_wins += usize::from(others.iter().all(|o| advantage(m, v, *o) > 1.0));
            }
        }
    }
    let seed_text = if seed_points > 0 { format!("best at {seed_wins} of {seed_points} points") } else { "–".into() };
    let here_text = if here.is_empty() { "not measured".into() } else { here.join("; ") };
    verdict(claim, seed_text, here_text, majority(&calls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::stats;

    fn exact(v: f64) -> Interval {
        Interval { median: v, lo: v, hi: v }
    }

    fn around(v: f64) -> Interval {
        stats::median_interval(&[v * 0.95, v, v * 1.05])
    }

    #[test]
    fn majority_table() {
        use Call::*;
        let cases: [(&[Call], Outcome); 6] = [
            (&[Win, Win, Level], Outcome::Reproduced),
            (&[Win, Level, Level], Outcome::Inconclusive),
            (&[Win, Win, Loss], Outcome::Inconclusive),
            (&[Loss, Loss, Win], Outcome::NotReproduced),
            (&[Loss, Level], Outcome::NotReproduced),
            (&[], Outcome::NotMeasured),
        ];
        for (calls, want) in cases {
            assert_eq!(majority(calls), want, "{calls:?}");
        }
    }

    /// Regression: a trend compared only its first and last points, so a rise that
    /// collapsed read as a rise.
    #[test]
    fn shapes_follow_every_step_not_the_ends() {
        let s = |ys: &[f64]| ys.iter().enumerate().map(|(i, y)| ((i + 1) as f64, around(*y))).collect::<Vec<_>>();
        let cases: [(&[f64], Shape, Outcome); 7] = [
            (&[10.0, 20.0, 40.0], Shape::Rising, Outcome::Reproduced),
            (&[10.0, 40.0, 20.0], Shape::Rising, Outcome::NotReproduced),
            (&[10.0, 40.0, 39.0], Shape::Rising, Outcome::Reproduced),
            (&[10.0, 40.0, 20.0], Shape::Peak, Outcome::Reproduced),
            (&[10.0, 20.0, 40.0], Shape::Peak, Outcome::NotReproduced),
            (&[40.0, 20.0, 10.0], Shape::Rising, Outcome::NotReproduced),
            (&[10.0, 10.2, 10.1], Shape::Rising, Outcome::Inconclusive),
        ];
        for (ys, expect, want) in cases {
            let r = shape(&s(ys), Dim::Connections, None, None);
            assert_eq!(judge(&r, expect, None), want, "{ys:?} {expect:?}: {}", r.text);
        }
    }

    #[test]
    fn linearity_and_onset_are_reported() {
        let series = [(1.0, exact(20.0)), (10.0, exact(186.0)), (100.0, exact(1316.0))];
        let r = shape(&series, Dim::Connections, Some(0.5), Some(500.0));
        assert_eq!(r.linearity.map(|l| (l * 100.0).round()), Some(66.0));
        assert!(r.text.ends_with("; per-connection rate kept 0.66; first above 500.0: 100 connections"), "{}", r.text);
        assert_eq!(judge(&r, Shape::Rising, Some(0.5)), Outcome::Reproduced);
        assert_eq!(judge(&r, Shape::Rising, Some(0.9)), Outcome::NotReproduced);
    }
}
