//! The verdict rule: one test per claim, pooled over the claim's points and paired by repeat.
//!
//! A claim compares sides at one or more points: `a` against its twin `b`, or a gain against
//! another gain. Each point gives a contrast per repeat, `c[r] = ln a[r] − ln b[r]`, signed
//! so that above 0 favours the claimed side; the points form groups (one for "a beats b";
//! a gain and its base, the base counted negatively, for a ratio of ratios), each the mean
//! of its points with equal weights. Repeat `r` of every point was measured in the same
//! rotation of the servers, so the pooled contrast is computed per repeat:
//! `D_r = Σ_g sign_g · mean_p c_p[r]`. The pooled ratio is `exp(mean D)` and its 95% interval
//! `exp(mean D ± t(0.975, R − 1) · sd(D) / √R)`, the one-sample t interval over the `R`
//! repeats.
//!
//! A value may be missing (a repeat excluded as disturbed, a failed point, a value that is
//! not positive): it takes out its own point at its own repeat, never the repeat's other
//! points. A point's contrast is then its mean over its clean repeats, `m_p`, and `D_r` is
//! `Σ_g sign_g · (mean_p m_p + mean over the points present at r of (c_p[r] − m_p))`: the
//! points' levels always count with equal weights, and the repeat's shared drift is read
//! from the points it has. With every value present this is the mean above. A point with
//! fewer than [`MIN_POINT_REPEATS`] clean repeats is left out of the claim (the caller
//! names it), and a repeat counts when every group has a point there.
//!
//! Why this shape: adding points averages them into each `D_r` instead of adding tests, so
//! a claim over 39 points is no more fragile than one over 2 (the old rule let one spurious
//! loss among 39 points veto it); whatever the repeats of one server run share (a slow
//! machine for a minute, a server that started slowly) stays inside one `D_r` instead of
//! passing for agreement between points; and a direction is called only when the interval
//! excludes 1, so under no difference a claim is called in its direction at most 2.5% of
//! the time (one-sided), whatever its number of points. `tests` below simulate that with the
//! lab's repeats and point counts, under noise with outliers, and check the power under a
//! real 10% difference (`verdict_sim_tests.rs` does it with excluded repeats). The rate is
//! per claim: with `K` claims in a run, the expected number of claims called in their
//! direction by chance alone is at most `0.025 · K`.

use crate::judge::stats::Call;

/// The fewest clean repeats a point needs to enter a pooled contrast, as a point's own
/// interval needs.
pub(crate) const MIN_POINT_REPEATS: usize = crate::judge::stats::MIN_RUNS;

/// Points pooled with equal weights: each point's contrast per repeat (NaN where missing),
/// the group's mean counted with `sign` (−1 for the base of a ratio of ratios).
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub points: Vec<Vec<f64>>,
    pub sign: f64,
}

/// The pooled ratio of a claim with its 95% interval (NaN bounds with fewer than two repeats).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pooled {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Repeats in which every group had a point measured (the repeats of `D`).
    pub repeats: usize,
}

impl Pooled {
    pub fn known(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }

    /// Above 1 (the claimed side ahead), below 1, or neither.
    pub fn call(&self) -> Call {
        Call::of(self.lo, self.hi)
    }

    /// The interval lies within `1 ± band` (as factors: `[1/(1+band), 1+band]`).
    pub fn within(&self, band: f64) -> bool {
        self.known() && self.lo >= 1.0 / (1.0 + band) && self.hi <= 1.0 + band
    }

    /// The interval lies wholly outside `1 ± band`.
    pub fn beyond(&self, band: f64) -> bool {
        self.known() && (self.lo > 1.0 + band || self.hi < 1.0 / (1.0 + band))
    }

    /// `1.31× [1.20–1.42] (5 repeats)`.
    pub fn text(&self) -> String {
        if self.known() {
            format!("{}× [{}–{}]", number(self.ratio), number(self.lo), number(self.hi))
        } else if self.ratio.is_finite() {
            format!("{} (no interval: {} repeats)", times(self.ratio), self.repeats)
        } else {
            "not measured".into()
        }
    }
}

/// A ratio as reports write it: two decimals (`1.31`), two significant digits below 0.01
/// (`0.0042`, never a bare `0.00`), none from 1000 (`1234`); `0` and `∞` (a zero divisor,
/// as where a seed reports 0 ms) as such; `–` for no number.
pub fn number(r: f64) -> String {
    if r.is_nan() {
        "–".into()
    } else if r.is_infinite() {
        "∞".into()
    } else if r == 0.0 {
        "0".into()
    } else if r.abs() < 0.01 {
        let digits = (1 - r.abs().log10().floor() as i32).clamp(2, 12) as usize;
        format!("{r:.digits$}")
    } else if r.abs() >= 1000.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.2}")
    }
}

/// [`number`] with its `×`.
pub fn times(r: f64) -> String {
    format!("{}×", number(r))
}

#[cfg(test)]
mod number_tests {
    use super::*;

    #[test]
    fn ratios_read_as_numbers_never_as_inf_or_zero_points() {
        let cases: &[(f64, &str)] = &[
            (1.3149, "1.31"),
            (0.5, "0.50"),
            (0.02, "0.02"),
            (0.0042, "0.0042"),
            (0.000_123_4, "0.00012"),
            (0.0, "0"),
            (f64::INFINITY, "∞"),
            (f64::NAN, "–"),
            (332.56, "332.56"),
            (1234.4, "1234"),
        ];
        for (r, want) in cases {
            assert_eq!(number(*r), *want, "{r}");
        }
        assert_eq!(times(f64::INFINITY), "∞×");
    }
}

/// The clean repeats of a point's contrast (those with a value).
pub(crate) fn clean(contrast: &[f64]) -> usize {
    contrast.iter().filter(|x| x.is_finite()).count()
}

/// The pooled contrast of `groups` (see the module comment), with its 95% interval.
pub(crate) fn pooled(groups: &[Group]) -> Pooled {
    pooled_at(groups, 0.025)
}

/// [`pooled`] with an interval that misses the true ratio on each side with probability
/// `tail` (0.025: the 95% interval; less for a family of comparisons, as `best`'s).
pub(crate) fn pooled_at(groups: &[Group], tail: f64) -> Pooled {
    let none = Pooled { ratio: f64::NAN, lo: f64::NAN, hi: f64::NAN, repeats: 0 };
    // Each group's points with enough clean repeats, each with its mean.
    type Used<'a> = Vec<(&'a [f64], f64)>;
    let used: Vec<(f64, Used<'_>)> = groups
        .iter()
        .map(|g| {
            let points = g
                .points
                .iter()
                .filter(|c| clean(c) >= MIN_POINT_REPEATS)
                .map(|c| {
                    let vals: Vec<f64> = c.iter().copied().filter(|x| x.is_finite()).collect();
                    (c.as_slice(), vals.iter().sum::<f64>() / vals.len() as f64)
                })
                .collect();
            (g.sign, points)
        })
        .collect();
    if used.is_empty() || used.iter().any(|(_, points)| points.is_empty()) {
        return none;
    }
    let level: f64 = used.iter().map(|(sign, ps)| sign * ps.iter().map(|p| p.1).sum::<f64>() / ps.len() as f64).sum();
    let rounds = used.iter().flat_map(|(_, ps)| ps.iter().map(|p| p.0.len())).max().unwrap_or(0);
    let d: Vec<f64> = (0..rounds)
        .filter_map(|r| {
            let mut d_r = level;
            for (sign, ps) in &used {
                let dev: Vec<f64> =
                    ps.iter().filter_map(|(c, m)| c.get(r).filter(|x| x.is_finite()).map(|x| x - m)).collect();
                if dev.is_empty() {
                    return None;
                }
                d_r += sign * dev.iter().sum::<f64>() / dev.len() as f64;
            }
            Some(d_r)
        })
        .collect();
    let n = d.len();
    if n == 0 {
        return none;
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Pooled { ratio: mean.exp(), lo: f64::NAN, hi: f64::NAN, repeats: n };
    }
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = if tail == 0.025 { t975(n - 1) } else { t_quantile(1.0 - tail, n - 1) };
    let half = t * (var / n as f64).sqrt();
    Pooled { ratio: mean.exp(), lo: (mean - half).exp(), hi: (mean + half).exp(), repeats: n }
}

/// A point's contrast per repeat: how far `a` is ahead of `b` (`ln a − ln b` for a metric
/// where higher is better, `ln b − ln a` otherwise), NaN where either has no positive value.
pub(crate) fn contrast(a: &[f64], b: &[f64], higher: bool) -> Vec<f64> {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    a.iter()
        .zip(b)
        .map(|(&x, &y)| match (ok(x), ok(y), higher) {
            (true, true, true) => x.ln() - y.ln(),
            (true, true, false) => y.ln() - x.ln(),
            _ => f64::NAN,
        })
        .collect()
}

/// One group of points, counted positively.
pub(crate) fn one(points: Vec<Vec<f64>>) -> Group {
    Group { points, sign: 1.0 }
}

/// The `p` quantile (`p` above 0.5) of Student's t with `df` degrees of freedom, by
/// bisection on its distribution function.
pub(crate) fn t_quantile(p: f64, df: usize) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    let (mut lo, mut hi) = (0.0, 1e6);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df as f64) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom, `t` ≥ 0.
fn t_cdf(t: f64, df: f64) -> f64 {
    1.0 - 0.5 * inc_beta(df / (df + t * t), df / 2.0, 0.5)
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz).
fn inc_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - inc_beta(1.0 - x, b, a);
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp() / a;
    let tiny = 1e-300;
    let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
    d = 1.0 / if d.abs() < tiny { tiny } else { d };
    let mut f = d;
    for m in 1..300 {
        let m = f64::from(m);
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            d = 1.0 / if d.abs() < tiny { tiny } else { d };
            c = 1.0 + num / c;
            c = if c.abs() < tiny { tiny } else { c };
            f *= c * d;
        }
        if (c * d - 1.0).abs() < 1e-15 {
            break;
        }
    }
    front * f
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum: f64 = G[0] + G[1..].iter().enumerate().map(|(i, g)| g / (x + i as f64 + 1.0)).sum::<f64>();
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The 97.5th percentile of Student's t with `df` degrees of freedom (rounded up beyond
/// 30, so the interval errs wide).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        31..=60 => 2.042,
        61..=120 => 2.000,
        _ => 1.980,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_table() {
        // Two points, a 2× ahead at both in every repeat with a little noise.
        let two = |x: f64| vec![x * 0.98, x, x * 1.02, x * 0.99, x * 1.01];
        let other = |x: f64| vec![x * 1.01, x * 0.99, x, x * 1.02, x * 0.98];
        let points = vec![contrast(&two(20.0), &other(10.0), true), contrast(&two(40.0), &other(20.0), true)];
        let p = pooled(&[one(points)]);
        assert!((p.ratio - 2.0).abs() < 1e-9 && p.lo < 2.0 && p.hi > 2.0 && p.lo > 1.9, "{p:?}");
        assert_eq!((p.call(), p.repeats), (Call::Win, 5));
        // Lower is better: the same numbers say b is ahead.
        let p = pooled(&[one(vec![contrast(&two(20.0), &two(10.0), false)])]);
        assert_eq!(p.call(), Call::Loss);
        // A point with fewer than three clean repeats is left out; none left, no ratio.
        let p = pooled(&[one(vec![contrast(&[2.0, 2.0], &[1.0, 1.0, 1.0], true)])]);
        assert_eq!((p.repeats, p.known(), p.ratio.is_nan()), (0, false, true));
        assert_eq!(pooled(&[]).repeats, 0);
        // Identical repeats: an exact interval.
        let p = pooled(&[one(vec![contrast(&[1.0; 3], &[1.0; 3], true)])]);
        assert!(p.known() && p.within(0.05) && p.call() == Call::Level, "{p:?}");
    }

    /// A missing value takes out its own point at its own repeat: the repeat's other points
    /// still count, each point's level keeps its weight, and the repeat's drift is read from
    /// the points it has.
    #[test]
    fn a_missing_value_drops_its_point_not_the_repeat() {
        let nan = f64::NAN;
        // Point 1 is 2× ahead, point 2 4×; every repeat drifts by the same factor at both.
        let drift = [1.0, 1.1, 0.9, 1.2, 0.8];
        let at = |level: f64, gone: Option<usize>| -> Vec<f64> {
            drift.iter().enumerate().map(|(r, d)| if Some(r) == gone { nan } else { (level * d).ln() }).collect()
        };
        let full = pooled(&[one(vec![at(2.0, None), at(4.0, None)])]);
        let holed = pooled(&[one(vec![at(2.0, Some(1)), at(4.0, Some(3))])]);
        assert_eq!((full.repeats, holed.repeats), (5, 5), "no repeat dropped");
        assert!((holed.ratio - full.ratio).abs() < 1e-9, "{holed:?} against {full:?}");
        assert!((holed.lo / full.lo - 1.0).abs() < 0.02 && (holed.hi / full.hi - 1.0).abs() < 0.02, "{holed:?}");
        // A ratio of ratios: each group keeps its repeats; a point left with two clean
        // repeats is left out, the others still decide.
        let gain = one(vec![at(4.0, None), at(4.0, Some(0))]);
        let base = Group { points: vec![at(2.0, None), vec![nan, nan, nan, 0.0, 0.0]], sign: -1.0 };
        let p = pooled(&[gain, base]);
        assert!((p.ratio - 2.0).abs() < 1e-3 && p.repeats == 5, "{p:?}");
        // A repeat where one whole group is missing does not count.
        let gain = one(vec![at(4.0, Some(2))]);
        let base = Group { points: vec![at(2.0, None)], sign: -1.0 };
        assert_eq!(pooled(&[gain, base]).repeats, 4);
    }

    /// Noise as the lab sees it: each value log-normal around its point's level (σ = 5%),
    /// each server run (one side, one repeat) shifted by its own drift (σ = 3%, shared by
    /// its points), and one value in ten an outlier 1.5× slower.
    fn measure(rng: &mut fastrand::Rng, level: f64, run_drift: f64) -> f64 {
        let outlier = if rng.f64() < 0.1 { 1.5f64.ln() } else { 0.0 };
        (level.ln() + run_drift + 0.05 * normal(rng) + outlier).exp()
    }

    fn normal(rng: &mut fastrand::Rng) -> f64 {
        // Box–Muller.
        let (u, v) = (rng.f64().max(1e-300), rng.f64());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// How often a claim "a beats b" over `points` points and `repeats` repeats is called in
    /// its direction by the rule, when a's true advantage is `effect` (1 = none).
    fn rate_called(points: usize, repeats: usize, effect: f64, trials: usize, seed: u64) -> f64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut called = 0;
        for _ in 0..trials {
            let (mut a, mut b) = (vec![Vec::new(); points], vec![Vec::new(); points]);
            for _ in 0..repeats {
                let (da, db) = (0.03 * normal(&mut rng), 0.03 * normal(&mut rng));
                for i in 0..points {
                    let level = 100.0 * (1.0 + i as f64);
                    a[i].push(measure(&mut rng, level * effect, da));
                    b[i].push(measure(&mut rng, level, db));
                }
            }
            let points = a.iter().zip(&b).map(|(x, y)| contrast(x, y, true)).collect();
            called += usize::from(pooled(&[one(points)]).call() == Call::Win);
        }
        called as f64 / trials as f64
    }

    /// The stated error rate: under no difference, with the lab's repeats (5 in a full run,
    /// 3 in a quick one) and its claims' point counts (1 to 39), a claim is called in its
    /// direction at most 2.5% of the time (with 4000 simulated claims each, a 3.2% bound
    /// leaves three standard errors for the simulation's own noise).
    #[test]
    fn false_reproduced_rate_under_no_difference_is_at_most_the_stated_one() {
        for repeats in [3, 5] {
            for (k, points) in [1, 2, 4, 6, 13, 26, 39].into_iter().enumerate() {
                let rate = rate_called(points, repeats, 1.0, 4000, 31 + k as u64);
                eprintln!("no difference, {points} points × {repeats} repeats: called {:.2}%", rate * 100.0);
                assert!(
                    rate <= 0.032,
                    "{points} points × {repeats} repeats: called {:.1}% under the null",
                    rate * 100.0
                );
            }
        }
    }

    /// Power: a real 10% advantage is called more often as points are added (the old rule's
    /// one-loss veto made it less likely), and in most claims over 39 points.
    #[test]
    fn a_real_difference_is_called_and_more_points_do_not_hurt() {
        let mut last = 0.0;
        for (k, points) in [1, 4, 13, 39].into_iter().enumerate() {
            let rate = rate_called(points, 5, 1.10, 1000, 77 + k as u64);
            eprintln!("10% advantage, {points} points × 5 repeats: called {:.1}%", rate * 100.0);
            assert!(
                rate >= last - 0.03,
                "{points} points: called {:.1}% of the time, less than fewer points",
                rate * 100.0
            );
            last = rate;
        }
        // Each server run's own drift (3%) is what more points cannot average away.
        assert!(last >= 0.8, "39 points × 5 repeats: called {:.1}%", last * 100.0);
    }

    /// The computed quantiles agree with the table and with published values.
    #[test]
    fn t_quantiles_computed_match_the_table() {
        for df in 1..=30 {
            let got = t_quantile(0.975, df);
            assert!((got - t975(df)).abs() < 0.0015, "df {df}: {got} against {}", t975(df));
        }
        // Published: t(0.99, 4) = 3.747, t(0.995, 4) = 4.604, t(0.9995, 4) = 8.610.
        assert!((t_quantile(0.99, 4) - 3.747).abs() < 0.001);
        assert!((t_quantile(0.995, 4) - 4.604).abs() < 0.001);
        assert!((t_quantile(0.9995, 4) - 8.610).abs() < 0.001);
        // Bonferroni over 3: a tail of 0.025 / 3, between the two.
        let b = t_quantile(1.0 - 0.025 / 3.0, 4);
        assert!(b > 3.747 && b < 4.604, "{b}");
        assert!(t_quantile(0.975, 0).is_infinite());
    }

    #[test]
    fn t_quantiles_err_wide() {
        assert_eq!(t975(4), 2.776);
        assert!(t975(0).is_infinite());
        assert!(t975(45) >= 2.014 && t975(100) >= 1.984 && t975(1000) >= 1.962);
    }
}
