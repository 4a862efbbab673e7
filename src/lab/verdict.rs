//! A verdict per seed claim: reproduced, not reproduced or inconclusive, decided from the
//! order-statistic intervals (`stats.rs`), with the seed's number beside ours.
//!
//! - `beats`: per point the interval of `a`'s advantage over its twin; reproduced when `a`
//!   wins at most points and loses at none, not reproduced when it loses at most points
//!   (or loses and never wins), inconclusive otherwise.
//! - `level`: reproduced when every ratio's interval lies within 1 ± `within`, not
//!   reproduced when one lies wholly outside, inconclusive otherwise.
//! - `trend`: the series' shape (`shape.rs`: steps up or down only where neighbouring
//!   intervals do not overlap, first against last the same way, an interior peak when its
//!   interval lies above both ends', linearity from the rate per client) judged against the
//!   expected one; with `onset_above`, the first coordinate past it must be within 1.5× of
//!   the seed's.
//! - `at_most`: every point's interval at or below the limit; not when one lies above it.
//! - `best`: as `beats`, with the claimed server against the best of the others.

use crate::lab::claim::{twin, Claim, Select};
use crate::lab::finding::{advantage, advantage_interval, ratio_text};
use crate::lab::metric::{self, Metric};
use crate::lab::plan::Active;
use crate::lab::shape::{judge, seed_series, series, shape};
use crate::lab::stats::{Call, Interval};
use crate::lab::table::{seed_matches, Sample};

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
}
