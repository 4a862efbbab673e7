//! Medians with percentile-bootstrap 95% intervals, for one point's repeats and for the
//! ratio of two points' medians, and the call a ratio's interval allows: a win only when
//! the interval excludes 1.
//!
//! The bootstrap is hand-written and seeded (the same numbers give the same report): each
//! of [`RESAMPLES`] rounds draws the repeats again with replacement and takes the median;
//! the interval is the 2.5th and 97.5th percentiles of those medians. With fewer than
//! [`MIN_RUNS`] repeats there is no interval (NaN bounds), and no call but "level".

/// Bootstrap rounds per interval.
pub(crate) const RESAMPLES: usize = 2000;
/// The fewest repeats an interval is computed from.
pub(crate) const MIN_RUNS: usize = 3;
const SEED: u64 = 0x5eed_0015;

/// A median and its 95% interval (NaN bounds when too few runs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Interval {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub fn known(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }

    /// What the interval of a ratio (above 1: the first side is better) allows saying.
    pub fn call(&self) -> Call {
        match (self.known(), self.lo > 1.0, self.hi < 1.0) {
            (true, true, _) => Call::Win,
            (true, _, true) => Call::Loss,
            _ => Call::Level,
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

/// The median of `xs` with its bootstrap interval.
pub(crate) fn median_interval(xs: &[f64]) -> Interval {
    let median = crate::lab::metric::median(xs.to_vec());
    if xs.len() < MIN_RUNS {
        return Interval { median, lo: f64::NAN, hi: f64::NAN };
    }
    let mut rng = fastrand::Rng::with_seed(SEED);
    let medians: Vec<f64> = (0..RESAMPLES).map(|_| resampled_median(&mut rng, xs)).collect();
    let (lo, hi) = percentiles(medians);
    Interval { median, lo, hi }
}

/// `f(median(a), median(b))` (a ratio of two points' medians) with its bootstrap interval,
/// each side resampled on its own.
pub(crate) fn ratio_interval(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) -> Interval {
    let median = f(crate::lab::metric::median(a.to_vec()), crate::lab::metric::median(b.to_vec()));
    if a.len() < MIN_RUNS || b.len() < MIN_RUNS {
        return Interval { median, lo: f64::NAN, hi: f64::NAN };
    }
    let mut rng = fastrand::Rng::with_seed(SEED);
    let ratios: Vec<f64> = (0..RESAMPLES)
        .map(|_| f(resampled_median(&mut rng, a), resampled_median(&mut rng, b)))
        .filter(|r| !r.is_nan())
        .collect();
    if ratios.len() < RESAMPLES / 2 {
        return Interval { median, lo: f64::NAN, hi: f64::NAN };
    }
    let (lo, hi) = percentiles(ratios);
    Interval { median, lo, hi }
}

fn resampled_median(rng: &mut fastrand::Rng, xs: &[f64]) -> f64 {
    let draw: Vec<f64> = (0..xs.len()).map(|_| xs[rng.usize(..xs.len())]).collect();
    crate::lab::metric::median(draw)
}

/// The 2.5th and 97.5th percentiles (nearest rank).
fn percentiles(mut xs: Vec<f64>) -> (f64, f64) {
    xs.sort_by(f64::total_cmp);
    let at = |q: f64| xs[((q * (xs.len() - 1) as f64).round() as usize).min(xs.len() - 1)];
    (at(0.025), at(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_runs_have_no_interval_and_call_level() {
        let i = median_interval(&[1.0, 2.0]);
        assert_eq!(i.median, 1.5);
        assert!(!i.known());
        assert_eq!(ratio_interval(&[2.0], &[1.0], |a, b| a / b).call(), Call::Level);
    }

    #[test]
    fn intervals_lie_within_the_data_and_contain_the_median() {
        let xs = [10.0, 12.0, 11.0, 30.0, 9.0];
        let i = median_interval(&xs);
        assert_eq!(i.median, 11.0);
        assert!(i.lo >= 9.0 && i.lo <= 11.0 && i.hi >= 11.0 && i.hi <= 30.0, "{i:?}");
        assert_eq!(median_interval(&xs), i, "seeded: the same data gives the same interval");
    }

    #[test]
    fn calls_table() {
        let div = |a: f64, b: f64| a / b;
        let cases: [(&[f64], &[f64], Call); 4] = [
            (&[20.0, 21.0, 19.0, 20.5, 19.5], &[10.0, 10.5, 9.5, 10.2, 9.8], Call::Win),
            (&[10.0, 10.5, 9.5], &[20.0, 21.0, 19.0], Call::Loss),
            // Overlapping repeats: the ratio's interval contains 1.
            (&[10.0, 14.0, 9.0, 13.0, 11.0], &[11.0, 9.5, 13.5, 10.0, 12.0], Call::Level),
            (&[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0], Call::Level),
        ];
        for (a, b, want) in cases {
            assert_eq!(ratio_interval(a, b, div).call(), want, "{a:?} vs {b:?}");
        }
    }
}
