use super::*;

/// Repeats keyed by round, in order.
fn keyed(xs: &[f64]) -> Vec<(u32, f64)> {
    xs.iter().enumerate().map(|(r, x)| (r as u32, *x)).collect()
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut fastrand::Rng) -> f64 {
    let (u, v) = (1.0 - rng.f64(), rng.f64());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

#[test]
fn coverage_table() {
    // (n, j, coverage of [x(j), x(n+1-j)]) from the binomial sums by hand.
    let cases: [(usize, usize, f64); 6] = [
        (3, 1, 0.75),
        (5, 1, 0.9375),
        (6, 1, 0.96875),
        (8, 2, 1.0 - 2.0 * 9.0 / 256.0),
        (9, 2, 1.0 - 2.0 * 10.0 / 512.0),
        (5, 3, 0.0),
    ];
    for (n, j, want) in cases {
        assert!((coverage(n, j) - want).abs() < 1e-12, "n {n} j {j}: {} ≠ {want}", coverage(n, j));
    }
}

#[test]
fn the_narrowest_pair_that_reaches_the_target_else_min_and_max() {
    // (n, j): n < 6 cannot reach 95% ([min, max] it is); 8 cannot with j = 2 (92.97%).
    let cases = [(3, 1), (5, 1), (6, 1), (8, 1), (9, 2), (12, 3), (20, 6)];
    for (n, want) in cases {
        let (j, c) = order_pair(n, TARGET);
        assert_eq!(j, want, "n {n}");
        assert!(n < 6 || c >= TARGET, "n {n}: {c}");
        assert!(coverage(n, j + 1) < TARGET, "n {n}: a narrower pair reaches the target");
    }
}

#[test]
fn labels_say_the_real_coverage() {
    let cases: [(&[f64], &str, &str); 3] = [
        (&[10.0, 12.0, 11.0, 30.0, 9.0], "93.8%", "[9–30, 93.8%]"),
        (&[3.0, 1.0, 2.0], "75%", "[1–3, 75%]"),
        (&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], "96.1%", "[2–8, 96.1%]"),
    ];
    for (xs, label, brackets) in cases {
        let i = median_interval(xs);
        assert_eq!(i.coverage_label(), label, "{xs:?}");
        assert_eq!(i.brackets(|v| format!("{v}")), brackets, "{xs:?}");
    }
}

#[test]
fn too_few_runs_have_no_interval_and_call_level() {
    let i = median_interval(&[1.0, 2.0]);
    assert_eq!(i.median, 1.5);
    assert!(!i.known());
    assert_eq!(i.coverage, 0.0);
    assert_eq!(i.brackets(|v| format!("{v}")), "");
    assert_eq!(ratio_interval(&keyed(&[2.0]), &keyed(&[1.0]), |a, b| a / b).call(), Call::Level);
}

/// Many trials of samples from distributions with a known median: the share of intervals
/// that contain it must be the coverage each interval states (within 1.2 points, about six
/// standard errors of 20 000 trials), for medians and for per-round ratios alike.
#[test]
fn stated_coverage_is_the_empirical_coverage() {
    const TRIALS: usize = 20_000;
    let mut rng = fastrand::Rng::with_seed(7);
    for n in [3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20] {
        // A skewed distribution (lognormal, median e^2) and a heavy-tailed one.
        let lognormal = |rng: &mut fastrand::Rng| (2.0 + 0.5 * normal(rng)).exp();
        let cauchy_ish = |rng: &mut fastrand::Rng| 5.0 + normal(rng) / normal(rng).abs().max(1e-3);
        for (name, draw, truth) in [
            ("lognormal", &lognormal as &dyn Fn(&mut fastrand::Rng) -> f64, 2f64.exp()),
            ("ratio of normals", &cauchy_ish, 5.0),
        ] {
            let (mut hits, mut stated) = (0usize, f64::NAN);
            for _ in 0..TRIALS {
                let xs: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                let i = median_interval(&xs);
                stated = i.coverage;
                hits += usize::from(i.lo <= truth && truth <= i.hi);
            }
            let empirical = hits as f64 / TRIALS as f64;
            assert!((empirical - stated).abs() < 0.012, "{name}, n {n}: states {stated}, covers {empirical}");
        }
        // Paired rounds: a drift shared by both sides of a round (σ 1, far larger than the
        // noise) cancels in the per-round ratio, whose median is 1.3.
        let mut hits = 0usize;
        let mut stated = f64::NAN;
        for _ in 0..TRIALS {
            let rounds: Vec<(f64, f64)> = (0..n)
                .map(|_| {
                    let drift = normal(&mut rng);
                    ((drift + 0.1 * normal(&mut rng)).exp() * 1.3, (drift + 0.1 * normal(&mut rng)).exp())
                })
                .collect();
            let a: Vec<f64> = rounds.iter().map(|r| r.0).collect();
            let b: Vec<f64> = rounds.iter().map(|r| r.1).collect();
            let i = ratio_interval(&keyed(&a), &keyed(&b), |x, y| x / y);
            stated = i.coverage;
            hits += usize::from(i.lo <= 1.3 && 1.3 <= i.hi);
        }
        let empirical = hits as f64 / TRIALS as f64;
        assert!((empirical - stated).abs() < 0.012, "paired ratio, n {n}: states {stated}, covers {empirical}");
    }
}

#[test]
fn ratios_pair_rounds_by_repeat() {
    // Repeat 1 of `a` and repeat 2 of `b` are missing: three rounds pair up (0, 3, 4).
    let a = [(0, 20.0), (2, 99.0), (3, 22.0), (4, 24.0)];
    let b = [(0, 10.0), (1, 1.0), (3, 11.0), (4, 12.0)];
    let i = ratio_interval(&a, &b, |x, y| x / y);
    assert_eq!((i.median, i.lo, i.hi, i.coverage), (2.0, 2.0, 2.0, 0.75));
}

#[test]
fn calls_table() {
    let div = |a: f64, b: f64| a / b;
    let cases: [(&[f64], &[f64], Call); 5] = [
        (&[20.0, 21.0, 19.0, 20.5, 19.5], &[10.0, 10.5, 9.5, 10.2, 9.8], Call::Win),
        (&[10.0, 10.5, 9.5], &[20.0, 21.0, 19.0], Call::Loss),
        // Overlapping repeats: the per-round ratios fall on both sides of 1.
        (&[10.0, 14.0, 9.0, 13.0, 11.0], &[11.0, 9.5, 13.5, 10.0, 12.0], Call::Level),
        (&[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0], Call::Level),
        // A drift shared by each round: every round's ratio is above 1.
        (&[11.0, 22.0, 33.0, 44.0, 55.0], &[10.0, 20.0, 30.0, 40.0, 50.0], Call::Win),
    ];
    for (a, b, want) in cases {
        assert_eq!(ratio_interval(&keyed(a), &keyed(b), div).call(), want, "{a:?} vs {b:?}");
    }
}

#[test]
fn median_table() {
    assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(vec![]).is_nan());
}
