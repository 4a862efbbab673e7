//! What a series does, from its intervals: steps up or down only where
//! neighbouring intervals do not overlap, first against last the same way, an interior peak
//! when its interval lies above both ends', linearity from the rate per client, and the
//! first coordinate past an onset. Used by `trend` claims (`verdict.rs`) and by computed
//! trend findings (`finding.rs`).

use crate::experiment::claim::{seed_coord, Select};
use crate::experiment::metric::{self, Metric};
use crate::experiment::plan::Active;
use crate::experiment::Dim;
use crate::judge::sample::{phrase, Sample};
use crate::judge::stats::{Call, Interval};

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
pub(crate) fn seed_series(a: &Active<'_>, at: &Select, m: Metric, over: Dim) -> Vec<(f64, Interval)> {
    let Some(col) = a.sweep.table.columns.iter().position(|c| c.metric == m) else { return Vec::new() };
    let mut out: Vec<(f64, Interval)> = a
        .sweep
        .seed_rows
        .iter()
        .filter(|r| at.matches_seed(r))
        .map(|r| (seed_coord(r, over), r.values[col]))
        .filter(|(x, v)| x.is_finite() && v.is_finite())
        .map(|(x, v)| (x, Interval::exact(v)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::claim::Shape;
    use crate::judge::stats;
    use crate::judge::verdict::{judge, Outcome};

    fn exact(v: f64) -> Interval {
        Interval::exact(v)
    }

    fn around(v: f64) -> Interval {
        stats::median_interval(&[v * 0.95, v, v * 1.05])
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
