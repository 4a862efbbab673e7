//! Medians with distribution-free intervals that state their real coverage, for one point's
//! repeats and for the ratio of two points, and the call a ratio's interval allows: a win
//! only when the interval excludes 1.
//!
//! The interval of a median is a pair of order statistics of the repeats: with `n` values
//! sorted, `[x(j), x(n+1-j)]` contains the true median unless `j` or more values fall on
//! one side of it, so its coverage is exactly `P(j ≤ B ≤ n-j)` for `B ~ Binomial(n, 1/2)`,
//! whatever the distribution (continuous, the repeats independent). The narrowest such pair
//! whose coverage reaches [`TARGET`] is taken; when even `[min, max]` falls short (fewer
//! than 6 repeats) it is `[min, max]` with its own coverage (5 repeats: 93.75%, 3: 75%),
//! and the report labels every interval with the coverage it has.
//!
//! A ratio of two points is taken per round: repeat `r` of one against repeat `r` of the
//! other (measured in the same round of the sweep, so a slow drift of the machine cancels),
//! and its interval is the order-statistic interval of the median of those per-round ratios,
//! with the same exact coverage for the ratio's median. With fewer than [`MIN_RUNS`] values
//! (or pairs) there is no interval (NaN bounds), and no call but "level".

/// The coverage an interval aims for.
pub(crate) const TARGET: f64 = 0.95;
/// The fewest repeats an interval is computed from.
pub(crate) const MIN_RUNS: usize = 3;

/// A median and its interval (NaN bounds when too few runs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Interval {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    /// The probability that an interval built this way contains the true median: exact for
    /// order-statistic intervals, 1 for an exact value, 0 when there is no interval.
    pub coverage: f64,
}

impl Interval {
    /// A value known exactly (a seed's published number).
    pub fn exact(v: f64) -> Interval {
        Interval { median: v, lo: v, hi: v, coverage: 1.0 }
    }

    /// A median without an interval.
    fn unknown(median: f64) -> Interval {
        Interval { median, lo: f64::NAN, hi: f64::NAN, coverage: 0.0 }
    }

    pub fn known(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }

    /// What the interval of a ratio (above 1: the first side is better) allows saying.
    pub fn call(&self) -> Call {
        Call::of(self.lo, self.hi)
    }

    /// The coverage as the report prints it: `93.8%`, `75%`.
    pub fn coverage_label(&self) -> String {
        let pct = format!("{:.1}", self.coverage * 100.0);
        format!("{}%", pct.strip_suffix(".0").unwrap_or(&pct))
    }

    /// `[lo–hi, 93.8%]` with the bounds formatted by `fmt`, or nothing without an interval.
    /// The same interval in another unit: every bound times `k`.
    pub fn scaled(self, k: f64) -> Interval {
        Interval { median: self.median * k, lo: self.lo * k, hi: self.hi * k, ..self }
    }

    pub fn brackets(&self, fmt: impl Fn(f64) -> String) -> String {
        if self.known() {
            format!("[{}–{}, {}]", fmt(self.lo), fmt(self.hi), self.coverage_label())
        } else {
            String::new()
        }
    }
}

/// The outcome of comparing two sides through their ratio's interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    /// The interval lies above 1.
    Win,
    /// The interval lies below 1.
    Loss,
    /// The interval contains 1, or could not be computed.
    Level,
}

impl Call {
    /// What the interval `[lo, hi]` of a ratio allows saying (NaN bounds: not computed).
    pub(crate) fn of(lo: f64, hi: f64) -> Call {
        match (lo.is_finite() && hi.is_finite(), lo > 1.0, hi < 1.0) {
            (true, true, _) => Call::Win,
            (true, _, true) => Call::Loss,
            _ => Call::Level,
        }
    }
}

/// The median of `xs` with its order-statistic interval.
pub(crate) fn median_interval(xs: &[f64]) -> Interval {
    let median = median(xs.to_vec());
    if xs.len() < MIN_RUNS {
        return Interval::unknown(median);
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (j, coverage) = order_pair(sorted.len(), TARGET);
    Interval { median, lo: sorted[j - 1], hi: sorted[sorted.len() - j], coverage }
}

/// `f(a_r, b_r)` (the advantage of one point over another) per round `r` that both sides
/// measured, its median and that median's order-statistic interval. Values are keyed by
/// repeat.
pub(crate) fn ratio_interval(a: &[(u32, f64)], b: &[(u32, f64)], f: impl Fn(f64, f64) -> f64) -> Interval {
    let per_round: Vec<f64> = a
        .iter()
        .filter_map(|(r, x)| b.iter().find(|(s, _)| s == r).map(|(_, y)| f(*x, *y)))
        .filter(|v| v.is_finite())
        .collect();
    median_interval(&per_round)
}

/// The order statistics `(j, n+1-j)` (1-based `j`) of the narrowest symmetric interval for
/// the median of `n` values whose coverage reaches `target`, or `j = 1` ([min, max]) when
/// none does, with the interval's exact coverage.
pub(crate) fn order_pair(n: usize, target: f64) -> (usize, f64) {
    let mut best = (1, coverage(n, 1));
    for j in 2..=n.div_ceil(2) {
        let c = coverage(n, j);
        if c < target {
            break;
        }
        best = (j, c);
    }
    best
}

/// `P(j ≤ B ≤ n-j)` for `B ~ Binomial(n, 1/2)`: the chance that `[x(j), x(n+1-j)]` of `n`
/// independent values contains their distribution's median.
pub(crate) fn coverage(n: usize, j: usize) -> f64 {
    if n == 0 || 2 * j > n + 1 {
        return 0.0;
    }
    // pmf(i) = C(n, i) / 2^n, built up term by term.
    let mut pmf = 0.5f64.powi(n as i32);
    let mut tail = 0.0;
    for i in 0..j {
        tail += pmf;
        pmf *= (n - i) as f64 / (i + 1) as f64;
    }
    (1.0 - 2.0 * tail).max(0.0)
}

/// The median of some values (NaN when empty).
pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[mid]
    } else {
        (xs[mid - 1] + xs[mid]) / 2.0
    }
}

/// `median [lo–hi, coverage]`, or the median alone when there is no interval.
pub(crate) fn with_interval(i: Interval) -> String {
    if i.known() {
        format!("{} {}", crate::experiment::metric::format(i.median), i.brackets(crate::experiment::metric::format))
    } else {
        crate::experiment::metric::format(i.median)
    }
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;
