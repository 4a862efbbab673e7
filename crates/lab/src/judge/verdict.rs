//! A verdict per seed claim, with the seed's number beside ours.
//!
//! - `beats`, `larger_gain`: one pooled test per claim ([`crate::judge::rule`]): the claimed
//!   side's advantage over all its points, paired by repeat, with its 95% interval.
//!   Reproduced when the interval lies above 1, not reproduced when below; *level* when it
//!   contains 1 and lies within `1 ± within` (evidence against a difference); inconclusive
//!   when it is too wide to say either.
//!   A larger gain presumes a gain: where the claimed side loses at both places it is
//!   compared, the ratio of its two losses is not reproduced, and where its advantage at
//!   the points claimed contains 1 a ratio above 1 is inconclusive ([`gain_premise`]).
//! - `best`: the same test against each other server, each interval widened for the family
//!   (Bonferroni over the others): reproduced when all lie above 1, not reproduced when one
//!   lies below ([`best`]).
//! - `level`: the same pooled ratio: reproduced when its interval lies within `1 ± within`,
//!   not reproduced when wholly outside, inconclusive otherwise (and when the points' own
//!   ratios fall outside the band on both sides, which a pooled ratio would average away).
//! - `trend`: the series' shape (`shape.rs`: steps up or down only where neighbouring
//!   intervals do not overlap, first against last the same way, an interior peak when its
//!   interval lies above both ends', linearity from the rate per client) judged against the
//!   expected one; with `onset_above`, the first coordinate past it must be within 1.5× of
//!   the seed's (and where every interval here stays at or below it, nothing started: not
//!   reproduced).
//! - `at_most`: every point's interval at or below the limit; not when one lies above it.
//! - A claim with a size: reproduced in direction but with an interval wholly outside the
//!   size's band reads "direction reproduced, size not".
//! - `by_construction`: checked and shown, never counted as evidence; `not_testable`: the
//!   reason instead of numbers; `untestable`: the lab's method cannot test the claim (its
//!   design decides it, or the seed's figures are impossible), its numbers shown with the
//!   reason and not counted ([`Untestable`]).
//! - Client-bound: a claim most of whose points (a pair, a point with its rivals, a point
//!   of a series) had a side whose load generator was saturated while its server idled
//!   ([`crate::run::cpu::Saturation::client_bound`]) measured the load generator: its numbers
//!   are shown, with the figures, and not counted as evidence ([`client_bound`]). Claims
//!   on the server's CPU per request or the load generator's own use are exempt.

use crate::experiment::claim::{Claim, Kind, Select, Shape, Size};
use crate::experiment::metric::{self, Better, Metric};
use crate::experiment::plan::Active;
use crate::experiment::Dim;
use crate::judge::finding::advantage;
use crate::judge::rule::{self, number, times, Group, Pooled};
use crate::judge::sample::{seed_matches, twin, Sample, MIN_CLEAN_REPEATS};
use crate::judge::shape::{seed_series, series, shape, ShapeReport};
use crate::judge::stats::{Call, Interval};
use crate::run::cpu::{Saturation, Shares};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Reproduced,
    NotReproduced,
    /// A tight interval around 1: evidence that the claimed difference is not there.
    Level,
    /// Too noisy to tell.
    Inconclusive,
    /// The claim's sweep or points did not run (a quick run, a server unavailable here,
    /// results from a run older than the claim).
    NotMeasured,
    /// The lab's setup removes what the claim is about.
    NotTestable,
    /// The lab's method cannot test the claim though its points ran: its design decides
    /// the outcome, or the seed's figures cannot be what they say ([`Verdict::untestable`]
    /// says why, and what the numbers gave).
    Untestable,
    /// Most of the claim's points measured a saturated load generator, not the server
    /// ([`Verdict::client_bound`] says what the numbers gave and why).
    ClientBound,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Reproduced => "reproduced",
            Outcome::NotReproduced => "not reproduced",
            Outcome::Level => "level (no difference)",
            Outcome::Inconclusive => "inconclusive",
            Outcome::NotMeasured => "not measured",
            Outcome::NotTestable => "not testable here",
            Outcome::Untestable => "not testable by this method",
            Outcome::ClientBound => "client-bound",
        }
    }
}

/// How the stated size fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SizeCall {
    /// The claim states no size.
    NotStated,
    /// The interval meets the size's band.
    Consistent,
    /// The interval lies wholly outside it.
    Outside,
    /// No interval to compare.
    Unknown,
}

/// One row of the verdict table.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    pub claim: String,
    /// `004:107 “…”`.
    pub source: String,
    pub seed: String,
    pub here: String,
    /// The seed's number in a few words: its ratios' range over the points, not each one.
    pub seed_brief: String,
    /// Ours in a few words: the pooled ratio, without each point's median.
    pub here_brief: String,
    pub outcome: Outcome,
    pub size: SizeCall,
    /// The stated size and ours: `2.00–2.24× ±25%: here 1.50× [1.46–1.61], outside`.
    pub size_text: String,
    pub by_construction: Option<String>,
    pub contradicts: Option<String>,
    /// Set with [`Outcome::ClientBound`]: what the numbers alone gave, and how saturated
    /// the load generator was.
    pub client_bound: Option<ClientBound>,
    /// Set with [`Outcome::Untestable`]: why, and what the numbers alone gave.
    pub untestable: Option<Untestable>,
    /// Its points ran, but too few of their repeats were clean (the rest stayed disturbed,
    /// or failed) for a verdict: inconclusive, and why in `here`.
    pub few_clean: bool,
}

/// Why a claim is client-bound: its points whose load generator was saturated while the
/// server idled, and the outcome its numbers would have had.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClientBound {
    /// The outcome the numbers gave.
    pub numbers: Outcome,
    /// How many of the claim's points had a client-bound side, of how many.
    pub points: usize,
    pub of: usize,
    /// The medians, over those points' client-bound sides, of the load generator's busy
    /// share and the server's idle share.
    pub saturation: Saturation,
}

/// Why the lab's method cannot test a claim whose points it measured (the experiment
/// file's `untestable`, its `{batches}` filled), and the outcome its numbers would have had.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Untestable {
    pub reason: String,
    /// The outcome the numbers gave (client-bound or not).
    pub numbers: Outcome,
}

impl ClientBound {
    /// `the load generator was 97% busy while the server idled 28% (medians at 6 of 8
    /// points)`.
    pub fn reason(&self) -> String {
        format!(
            "the load generator was {:.0}% busy while the server idled {:.0}% (medians at {} of {} points)",
            self.saturation.client_busy_pct, self.saturation.server_idle_pct, self.points, self.of
        )
    }
}

impl Verdict {
    /// The label of outcome `o` with this verdict's size call.
    fn outcome_label(&self, o: Outcome) -> String {
        match (o, self.size) {
            (Outcome::Reproduced, SizeCall::Outside) => "direction reproduced, size not".to_string(),
            (o, _) => o.label().to_string(),
        }
    }

    /// What the numbers alone say, under the wrappers a row may carry (client-bound, true
    /// by construction, not testable by this method); `None` where no numbers were judged
    /// (not measured, not testable here).
    pub fn numbers_label(&self) -> Option<String> {
        match (self.outcome, &self.client_bound, &self.untestable) {
            (Outcome::NotMeasured | Outcome::NotTestable, ..) => None,
            (Outcome::Untestable, _, Some(u)) => Some(self.outcome_label(u.numbers)),
            (Outcome::ClientBound, Some(b), _) => Some(self.outcome_label(b.numbers)),
            (o, ..) => Some(self.outcome_label(o)),
        }
    }

    /// The verdict as the table says it.
    pub fn label(&self) -> String {
        let numbers = |o: Outcome| self.outcome_label(o);
        let base = match (self.outcome, &self.client_bound, &self.untestable) {
            (Outcome::Untestable, _, Some(u)) => {
                format!("not testable by this method (numbers: {})", numbers(u.numbers))
            }
            (Outcome::ClientBound, Some(b), _) => format!("client-bound (numbers: {})", numbers(b.numbers)),
            (o, ..) => numbers(o),
        };
        match (&self.by_construction, self.outcome) {
            (_, Outcome::NotTestable | Outcome::NotMeasured) => base,
            (Some(_), _) => format!("by construction (numbers: {base})"),
            (None, _) => base,
        }
    }

    /// Whether the row counts as evidence for or against the seed.
    pub fn is_evidence(&self) -> bool {
        self.by_construction.is_none()
            && !matches!(
                self.outcome,
                Outcome::NotTestable | Outcome::Untestable | Outcome::NotMeasured | Outcome::ClientBound
            )
    }
}

/// A verdict with `outcome` and `size` and nothing else said: the tests' fixture, which each
/// fills further with struct update syntax.
#[cfg(test)]
impl Verdict {
    pub(crate) fn bare(outcome: Outcome, size: SizeCall) -> Verdict {
        Verdict {
            claim: String::new(),
            source: String::new(),
            seed: String::new(),
            here: String::new(),
            seed_brief: String::new(),
            here_brief: String::new(),
            outcome,
            size,
            size_text: String::new(),
            by_construction: None,
            contradicts: None,
            client_bound: None,
            untestable: None,
            few_clean: false,
        }
    }
}

/// Checks `claim` against its sweep (`None` when the sweep did not run); `cores` is the
/// CPU count of the run's machine, for records that did not store who had which CPUs
/// ([`Shares::on`]; 0 when unknown: such records have no saturation figure).
///
/// Each kind of claim is judged by its own function ([`beats`], [`level`],
/// [`larger_gain`], [`trend`], [`at_most`], [`best`]); what every kind shares follows: the
/// size call, the points left out, too few clean repeats, and the client-bound rule.
pub(crate) fn check(claim: &Claim, sweep: Option<(&Active<'_>, &[Sample])>, cores: usize) -> Verdict {
    let mut v = Verdict {
        claim: claim.text.clone(),
        source: format!("{} “{}”", claim.source, claim.quote),
        seed: "–".into(),
        here: String::new(),
        seed_brief: String::new(),
        here_brief: String::new(),
        outcome: Outcome::NotMeasured,
        size: SizeCall::NotStated,
        size_text: claim.size.as_ref().map(|s| s.text()).unwrap_or_else(|| "–".into()),
        by_construction: claim.by_construction.clone(),
        contradicts: claim.contradicts.clone(),
        client_bound: None,
        untestable: None,
        few_clean: false,
    };
    if let Kind::NotTestable { reason } = &claim.kind {
        v.here = reason.clone();
        v.here_brief = reason.clone();
        v.seed_brief = v.seed.clone();
        v.outcome = Outcome::NotTestable;
        return v;
    }
    let Some((a, samples)) = sweep else {
        v.here = "sweep not run".into();
        v.here_brief = v.here.clone();
        v.seed_brief = v.seed.clone();
        return v;
    };
    let seed = |s: &Sample, m: Metric| seed_value(a, s, m);
    let sw = Sweep { active: a, samples, seed: &seed };
    let j = match &claim.kind {
        Kind::Beats { metric, a: sa, b, at, seed_ratio, within } => {
            beats(*metric, [sa, b, at], *seed_ratio, *within, &sw)
        }
        Kind::Level { metric, a: sa, b, at, within, .. } => level(*metric, [sa, b, at], *within, &sw),
        Kind::LargerGain { metric, a: sa, b, at, than } => larger_gain(*metric, [sa, b, at, than], &sw),
        Kind::Trend { metric, over, at, expect, linear_min, onset_above } => {
            if let Some(size) = &claim.size {
                (v.size, v.size_text) = trend_size(size, samples, at, *metric, *over);
            }
            trend(*metric, *over, at, *expect, *linear_min, *onset_above, &sw)
        }
        Kind::AtMost { metric, at, limit, .. } => at_most(*metric, at, *limit, &sw),
        Kind::Best { metric, server, among, at, .. } => best(*metric, server, among, at, samples, &seed),
        Kind::NotTestable { .. } => unreachable!("returned above"),
    };
    let Judged { seed_text, seed_brief, here, outcome, pooled, thin, points } = j;
    if let (Some(size), Some(p)) = (&claim.size, pooled) {
        (v.size, v.size_text) = size_call(size, p.lo, p.hi, &p.text());
    }
    v.seed_brief = seed_brief.unwrap_or_else(|| seed_text.clone());
    v.here_brief = brief(&here);
    v.seed = seed_text;
    v.here = here;
    v.outcome = outcome;
    left_out(&mut v, pooled, &thin);
    too_few_clean(&mut v, claim, pooled, &thin, samples);
    if_client_bound(&mut v, claim, a, &points, cores);
    if_untestable(&mut v, claim, &points);
    v
}

/// A claim's sweep, as the functions of each kind read it: the plan that ran, its samples,
/// and the seed's value at a sample.
struct Sweep<'a, 's> {
    active: &'a Active<'a>,
    samples: &'s [Sample],
    seed: &'a dyn Fn(&Sample, Metric) -> Option<f64>,
}

/// What one kind of claim made of its points, before the checks every kind shares.
struct Judged<'s> {
    seed_text: String,
    /// The seed's side in the brief table, when it is not `seed_text`.
    seed_brief: Option<String>,
    here: String,
    outcome: Outcome,
    /// The pooled test of a comparison claim.
    pooled: Option<Pooled>,
    /// The points of a pooled claim with too few clean repeats to enter it.
    thin: Vec<(String, usize)>,
    /// The claim's points, each the samples compared together, for the client-bound rule.
    points: Vec<Vec<&'s Sample>>,
}

/// `beats`: `a` better than its twin `b`, pooled over the points `at` selects.
fn beats<'s>(
    metric: Metric,
    [sa, b, at]: [&Select; 3],
    seed_ratio: Option<f64>,
    within: f64,
    sw: &Sweep<'_, 's>,
) -> Judged<'s> {
    let pairs = pairs(metric, sa, b, at, sw.samples, sw.seed);
    let seed_text = seed_ratio.map(times).unwrap_or_else(|| seed_ratios(&pairs));
    let seed_brief = seed_ratio.is_none().then(|| seed_range(&pairs));
    let p = pool(metric, &pairs, 1.0);
    let outcome = pooled_outcome(&p, within);
    let here = pooled_text(&p, &pairs, Some(within));
    Judged { seed_text, seed_brief, here, outcome, pooled: Some(p), thin: thin_points(&pairs), points: sides(&pairs) }
}

/// `level`: `a` and its twin `b` within a band of each other.
fn level<'s>(metric: Metric, [sa, b, at]: [&Select; 3], within: f64, sw: &Sweep<'_, 's>) -> Judged<'s> {
    let pairs = pairs(metric, sa, b, at, sw.samples, sw.seed);
    let p = pool(metric, &pairs, 1.0);
    let (hi, lo) = (1.0 + within, 1.0 / (1.0 + within));
    let both_sides = pairs.iter().any(|x| x.median > hi) && pairs.iter().any(|x| x.median < lo);
    let outcome = match () {
        _ if p.repeats == 0 => Outcome::NotMeasured,
        _ if p.within(within) && !both_sides => Outcome::Reproduced,
        _ if p.beyond(within) => Outcome::NotReproduced,
        _ => Outcome::Inconclusive,
    };
    Judged {
        seed_text: seed_ratios(&pairs),
        seed_brief: Some(seed_range(&pairs)),
        here: pooled_text(&p, &pairs, Some(within)),
        outcome,
        pooled: Some(p),
        thin: thin_points(&pairs),
        points: sides(&pairs),
    }
}

/// `larger_gain`: `a`'s gain over `b` larger at `at` than at `than`.
fn larger_gain<'s>(metric: Metric, [sa, b, at, than]: [&Select; 4], sw: &Sweep<'_, 's>) -> Judged<'s> {
    let gain = pairs(metric, sa, b, at, sw.samples, sw.seed);
    let base = pairs(metric, sa, b, than, sw.samples, sw.seed);
    let (pg, pb) = (pool(metric, &gain, 1.0), pool(metric, &base, 1.0));
    let groups = [group(metric, &gain, 1.0), group(metric, &base, -1.0)];
    let p = if gain.is_empty() || base.is_empty() { rule::pooled(&[]) } else { rule::pooled(&groups) };
    let (outcome, premise) = gain_premise(pooled_outcome(&p, 0.05), &pg, &pb, &p, [gain.len(), base.len()], sa);
    let geo = |ps: &[Pair]| {
        let v: Vec<f64> = ps.iter().filter_map(|p| p.seed).collect();
        (v.len() == ps.len() && !v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
    };
    let seed_text = match (geo(&gain), geo(&base)) {
        (Some(g), Some(b)) => format!("{} (gain {} against {})", times(g / b), times(g), times(b)),
        _ => "–".into(),
    };
    let here = premise.unwrap_or_else(|| {
        format!(
            "{} (gain {} over {} points against {} over {})",
            p.text(),
            pg.text(),
            gain.len(),
            pb.text(),
            base.len()
        )
    });
    Judged {
        seed_text,
        seed_brief: None,
        here,
        outcome,
        pooled: Some(p),
        thin: [thin_points(&gain), thin_points(&base)].concat(),
        points: [sides(&gain), sides(&base)].concat(),
    }
}

/// A larger gain presumes a gain where it is claimed larger: the ratio of two advantages
/// says nothing of the kind when the claimed side loses at both (a smaller loss, not a
/// larger gain: not reproduced), and cannot be reproduced when its own advantage there is
/// not above 1 (inconclusive). `outcome` is the ratio's, `pg` and `pb` the claimed side's
/// advantage at `at` and at `than`, `p` their ratio, `n` their points; with the text that
/// says why when the premise decides the verdict.
fn gain_premise(
    outcome: Outcome,
    pg: &Pooled,
    pb: &Pooled,
    p: &Pooled,
    [n_gain, n_base]: [usize; 2],
    side: &Select,
) -> (Outcome, Option<String>) {
    if !(pg.known() && pb.known() && p.known()) {
        return (outcome, None);
    }
    let who = side.server.clone().unwrap_or_else(|| "the claimed side".into());
    let points = |n: usize| format!("{n} point{}", if n == 1 { "" } else { "s" });
    match (pg.call(), pb.call()) {
        (Call::Loss, Call::Loss) => (
            Outcome::NotReproduced,
            Some(format!(
                "no gain to compare: {who} loses at both, {} over {} and {} over {} (each interval below 1); \
                 their ratio, {}, {}",
                pg.text(),
                points(n_gain),
                pb.text(),
                points(n_base),
                p.text(),
                if p.call() == Call::Win { "is a smaller loss, not a larger gain" } else { "compares two losses" }
            )),
        ),
        (Call::Level, _) if outcome == Outcome::Reproduced => (
            Outcome::Inconclusive,
            Some(format!(
                "no gain shown: {who}'s advantage where the gain is claimed, {} over {}, contains 1; \
                 against {} over {}, their ratio is {}",
                pg.text(),
                points(n_gain),
                pb.text(),
                points(n_base),
                p.text()
            )),
        ),
        _ => (outcome, None),
    }
}

/// `trend`: what the series along `over` does (`shape.rs`), and where it passes an onset.
fn trend<'s>(
    metric: Metric,
    over: Dim,
    at: &Select,
    expect: Shape,
    linear_min: Option<f64>,
    onset_above: Option<f64>,
    sw: &Sweep<'_, 's>,
) -> Judged<'s> {
    let here_series = series(sw.samples, at, metric, over);
    let points = sw
        .samples
        .iter()
        .filter(|s| !s.runs.is_empty() && at.matches(s) && s.coord(over).is_finite())
        .map(|s| vec![s])
        .collect();
    let seed_series = seed_series(sw.active, at, metric, over);
    let here = shape(&here_series, over, linear_min, onset_above);
    let seed = shape(&seed_series, over, linear_min, onset_above);
    let mut outcome = if here_series.len() < 2 { Outcome::NotMeasured } else { judge(&here, expect, linear_min) };
    // The onset is part of the claim ("errors rise from 2000 req/s"): ours must lie
    // within a factor of 1.5 of the seed's.
    // Where the seed's series passes the onset and every interval here stays at or
    // below it, nothing started: not reproduced, however flat the series.
    let first = |s: &[(f64, Interval)]| onset_above.and_then(|l| s.iter().find(|p| p.1.median > l)).map(|p| p.0);
    let never = onset_above.is_some_and(|l| here_series.iter().all(|p| p.1.known() && p.1.hi <= l));
    if let Some(seed_x) = first(&seed_series) {
        let late = |x: f64| x / seed_x > 1.5 || seed_x / x > 1.5;
        let off = outcome == Outcome::Reproduced && first(&here_series).map_or(true, late);
        if off || (never && !here_series.is_empty()) {
            outcome = Outcome::NotReproduced;
        }
    }
    Judged { seed_text: seed.text, seed_brief: None, here: here.text, outcome, pooled: None, thin: Vec::new(), points }
}

/// `at_most`: every selected point's interval at or below `limit`.
fn at_most<'s>(metric: Metric, at: &Select, limit: f64, sw: &Sweep<'_, 's>) -> Judged<'s> {
    let chosen: Vec<&Sample> = sw.samples.iter().filter(|s| !s.runs.is_empty() && at.matches(s)).collect();
    let ints: Vec<Interval> = chosen.iter().map(|s| s.interval(metric)).collect();
    let above = ints.iter().filter(|i| i.known() && i.lo > limit).count();
    let below = ints.iter().filter(|i| i.known() && i.hi <= limit).count();
    let outcome = match (ints.len(), above, below) {
        (0, ..) => Outcome::NotMeasured,
        (_, a, _) if a > 0 => Outcome::NotReproduced,
        (n, _, b) if b == n => Outcome::Reproduced,
        _ => Outcome::Inconclusive,
    };
    let worst = |vals: Vec<f64>| vals.into_iter().filter(|v| v.is_finite()).fold(f64::NAN, f64::max);
    let seed_max = worst(chosen.iter().filter_map(|s| (sw.seed)(s, metric)).collect());
    let here_max = ints.iter().copied().max_by(|x, y| x.median.total_cmp(&y.median));
    let here = here_max.map(|i| format!("max {}", crate::judge::stats::with_interval(i))).unwrap_or_default();
    Judged {
        seed_text: format!("max {}", metric::format(seed_max)),
        seed_brief: None,
        here,
        outcome,
        pooled: None,
        thin: Vec::new(),
        points: chosen.iter().map(|s| vec![*s]).collect(),
    }
}

/// Points of a decided pooled claim left out for too few clean repeats: named.
fn left_out(v: &mut Verdict, pooled: Option<Pooled>, thin: &[(String, usize)]) {
    if pooled.is_some_and(|p| p.repeats >= MIN_CLEAN_REPEATS) && !thin.is_empty() {
        let list = thin.iter().map(|(place, n)| format!("{place}: {n}")).collect::<Vec<_>>().join("; ");
        let note = format!(" (left out, fewer than {MIN_CLEAN_REPEATS} clean repeats in common: {list})");
        v.here += &note;
        v.here_brief += &note;
    }
}

/// Too few clean repeats (the rest stayed disturbed, or failed): no verdict, and why.
fn too_few_clean(v: &mut Verdict, claim: &Claim, pooled: Option<Pooled>, thin: &[(String, usize)], samples: &[Sample]) {
    let most = thin.iter().map(|t| t.1).chain(pooled.map(|p| p.repeats)).max().unwrap_or(0);
    // A pooled claim whose points were measured is never "not measured", even with no
    // clean repeat in common.
    let few = match (&claim.kind, pooled) {
        (_, Some(p)) if p.repeats < MIN_CLEAN_REPEATS && (most > 0 || !thin.is_empty()) => {
            Some(format!("insufficient clean repeats: {most} in common at most, {MIN_CLEAN_REPEATS} needed"))
        }
        (Kind::Trend { at, .. } | Kind::AtMost { at, .. }, _) if v.outcome != Outcome::NotMeasured => samples
            .iter()
            .filter(|s| at.matches(s))
            .find_map(|s| s.no_verdict().map(|why| format!("{}: {why}", s.place()))),
        _ => None,
    };
    if let Some(why) = few {
        v.few_clean = true;
        v.here = format!("{} ({why})", v.here);
        v.here_brief = format!("{} ({why})", v.here_brief);
        v.outcome = Outcome::Inconclusive;
        if claim.size.is_some() {
            v.size = SizeCall::Unknown;
        }
    }
}

/// A claim decided on the load generator's saturation: its numbers shown, not counted.
fn if_client_bound(v: &mut Verdict, claim: &Claim, a: &Active<'_>, points: &[Vec<&Sample>], cores: usize) {
    let exempt = matches!(claim.metric(), Some(Metric::CpuUs | Metric::ClientBusyPct));
    let decided = !matches!(v.outcome, Outcome::NotMeasured | Outcome::NotTestable);
    if !exempt && decided && v.by_construction.is_none() {
        let fallback = |s: &Sample| {
            let cpus = a.servers.iter().find(|x| x.label == s.server).and_then(|x| x.cpus);
            Shares::on(cores, cpus)
        };
        let sat: Vec<Vec<Option<Saturation>>> =
            points.iter().map(|g| g.iter().map(|s| s.saturation(fallback(s))).collect()).collect();
        if let Some((n, of, saturation)) = client_bound(&sat) {
            let bound = ClientBound { numbers: v.outcome, points: n, of, saturation };
            v.here = format!("{} (client-bound: {})", v.here, bound.reason());
            v.here_brief = format!("{} (client-bound: {})", v.here_brief, bound.reason());
            v.outcome = Outcome::ClientBound;
            v.client_bound = Some(bound);
        }
    }
}

/// A claim the lab's method cannot test (`untestable` in its experiment file): its numbers
/// shown, with the reason, and not counted; a claim whose points did not run stays "not
/// measured".
fn if_untestable(v: &mut Verdict, claim: &Claim, points: &[Vec<&Sample>]) {
    let Some(reason) = &claim.untestable else { return };
    if matches!(v.outcome, Outcome::NotMeasured | Outcome::NotTestable) {
        return;
    }
    let numbers = v.client_bound.as_ref().map_or(v.outcome, |b| b.numbers);
    let reason = reason.replace("{batches}", &batches(points));
    v.untestable = Some(Untestable { reason, numbers });
    v.outcome = Outcome::Untestable;
}

/// The batches each of a claim's points ran per repeat, by client setting, fewest clients
/// and requests first: `10 connections, N = 10: 318 to 903 batches a repeat; 10 connections,
/// N = 100: 27 to 92`.
fn batches(points: &[Vec<&Sample>]) -> String {
    let mut by_place: Vec<(&Sample, u32, u32)> = Vec::new();
    for s in points.iter().flatten() {
        for m in s.runs.iter().filter(|m| !m.excluded) {
            match by_place.iter_mut().find(|(x, ..)| x.client == s.client) {
                Some((_, lo, hi)) => (*lo, *hi) = ((*lo).min(m.batches), (*hi).max(m.batches)),
                None => by_place.push((s, m.batches, m.batches)),
            }
        }
    }
    by_place.sort_by_key(|(s, ..)| (s.client.c, s.client.n));
    let each: Vec<String> = by_place
        .iter()
        .enumerate()
        .map(|(i, (s, lo, hi))| {
            let span = if lo == hi { lo.to_string() } else { format!("{lo} to {hi}") };
            let unit = match (i, hi) {
                (0, 1) => " batch a repeat",
                (0, _) => " batches a repeat",
                _ => "",
            };
            format!("{}: {span}{unit}", s.place())
        })
        .collect();
    if each.is_empty() {
        "no batches".into()
    } else {
        each.join("; ")
    }
}

/// Whether a claim measured its load generator: more than half of its `points` (each the
/// saturations of the samples compared there) have a side that was client-bound
/// ([`Saturation::client_bound`]). Then how many of how many, and the medians of the busy
/// and idle shares over those sides. A point with no figure counts as not client-bound.
pub(crate) fn client_bound(points: &[Vec<Option<Saturation>>]) -> Option<(usize, usize, Saturation)> {
    let bound: Vec<Saturation> =
        points.iter().flat_map(|g| g.iter().flatten().filter(|s| s.client_bound()).copied()).collect();
    let n = points.iter().filter(|g| g.iter().flatten().any(Saturation::client_bound)).count();
    if points.is_empty() || 2 * n <= points.len() {
        return None;
    }
    let median = |f: fn(&Saturation) -> f64| crate::judge::stats::median(bound.iter().map(f).collect());
    let saturation =
        Saturation { client_busy_pct: median(|s| s.client_busy_pct), server_idle_pct: median(|s| s.server_idle_pct) };
    Some((n, points.len(), saturation))
}

/// The samples of each pair, as the client-bound rule's points.
fn sides<'s>(pairs: &[Pair<'s>]) -> Vec<Vec<&'s Sample>> {
    pairs.iter().map(|p| p.sides.to_vec()).collect()
}

/// A verdict's "here" without each point's median and the level band.
/// The verdict of a pooled ratio for a claim that one side is ahead: reproduced if its
/// interval lies above 1, not reproduced below, level if it lies within `within` of 1.
fn pooled_outcome(p: &Pooled, within: f64) -> Outcome {
    match p.call() {
        _ if p.repeats == 0 => Outcome::NotMeasured,
        Call::Win => Outcome::Reproduced,
        Call::Loss => Outcome::NotReproduced,
        Call::Level if p.within(within) => Outcome::Level,
        Call::Level => Outcome::Inconclusive,
    }
}

fn brief(here: &str) -> String {
    let cut = here.find(" (medians: ").map_or(here, |i| &here[..i]);
    match (cut.find(" (level band "), cut.find(") over ")) {
        (Some(i), Some(j)) if j > i => format!("{}{}", &cut[..i], &cut[j + 1..]),
        _ => cut.to_string(),
    }
}

/// The seed's ratios over a claim's points as a range: `1.08–1.12× (4 points)`.
fn seed_range(pairs: &[Pair]) -> String {
    let known: Vec<f64> = pairs.iter().filter_map(|p| p.seed).collect();
    let (lo, hi) = known.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
    match known.len() {
        0 => "–".into(),
        1 => times(lo),
        n if (hi - lo) < 0.005 => format!("{} ({n} points)", times(lo)),
        n => format!("{}–{} ({n} points)", number(lo), times(hi)),
    }
}

/// Whether an interval `[lo, hi]` meets the stated size's band.
fn size_call(size: &Size, lo: f64, hi: f64, here: &str) -> (SizeCall, String) {
    let (blo, bhi) = size.band();
    let call = match () {
        _ if !(lo.is_finite() && hi.is_finite()) => SizeCall::Unknown,
        _ if hi < blo || lo > bhi => SizeCall::Outside,
        _ => SizeCall::Consistent,
    };
    let word = match call {
        SizeCall::Consistent => "within",
        SizeCall::Outside => "outside",
        _ => "unknown",
    };
    (call, format!("{}: here {here}, {word}", size.text()))
}

/// A trend's size: its last point over its first (pooled by repeat), or its last value.
fn trend_size(
    size: &Size,
    samples: &[Sample],
    at: &Select,
    m: Metric,
    over: crate::experiment::Dim,
) -> (SizeCall, String) {
    let mut chosen: Vec<&Sample> =
        samples.iter().filter(|s| !s.runs.is_empty() && at.matches(s) && s.coord(over).is_finite()).collect();
    chosen.sort_by(|x, y| x.coord(over).total_cmp(&y.coord(over)));
    let (Some(first), Some(last)) = (chosen.first(), chosen.last()) else {
        return (SizeCall::Unknown, format!("{}: not measured", size.text()));
    };
    if size.last.is_some() {
        let i = last.interval(m);
        return size_call(size, i.lo, i.hi, &crate::judge::stats::with_interval(i));
    }
    let p = rule::pooled(&[rule::one(vec![rule::contrast(&last.by_repeat(m), &first.by_repeat(m), true)])]);
    size_call(size, p.lo, p.hi, &p.text())
}

/// The seed's value for a sample's point, when its table gives one for this metric.
fn seed_value(a: &Active<'_>, s: &Sample, m: Metric) -> Option<f64> {
    let col = a.sweep.table.columns.iter().position(|c| c.metric == m)?;
    let row = a.sweep.seed_rows.iter().find(|r| seed_matches(r, s))?;
    Some(row.values[col]).filter(|v| v.is_finite())
}

/// One point of a comparison: `a`'s sample against its twin's.
struct Pair<'s> {
    /// The two samples.
    sides: [&'s Sample; 2],
    place: String,
    a: Vec<f64>,
    b: Vec<f64>,
    /// `a`'s advantage, from the medians.
    median: f64,
    seed: Option<f64>,
}

fn pairs<'s>(
    m: Metric,
    a: &Select,
    b: &Select,
    at: &Select,
    samples: &'s [Sample],
    seed: &dyn Fn(&Sample, Metric) -> Option<f64>,
) -> Vec<Pair<'s>> {
    let several = samples.iter().any(|s| s.workload != samples[0].workload);
    // A point whose records do not hold the metric (made before it was kept) was not
    // measured for it, whatever else its runs measured.
    let kept = |s: &Sample| s.runs.iter().any(|r| !m.value(r).is_nan());
    samples
        .iter()
        .filter(|s| !s.runs.is_empty() && kept(s) && a.matches(s) && at.matches(s))
        .filter_map(|sa| {
            let sb = twin(sa, b, samples).filter(|sb| kept(sb))?;
            let mut place = sa.place();
            if several && sa.workload == sb.workload {
                place = format!("{}, {place}", sa.workload);
            }
            if a.server.is_none() {
                place = format!("{}, {place}", sa.server);
            }
            let seed = seed(sa, m).zip(seed(sb, m)).map(|(x, y)| advantage(m, x, y));
            let median = advantage(m, sa.value(m), sb.value(m));
            Some(Pair { sides: [sa, sb], place, a: sa.by_repeat(m), b: sb.by_repeat(m), median, seed })
        })
        .collect()
}

impl Pair<'_> {
    /// The repeats in which both sides have a value.
    fn clean(&self) -> usize {
        rule::clean(&rule::contrast(&self.a, &self.b, true))
    }
}

/// The points of `pairs` as a group of the pooled contrast, counted with `sign`.
fn group(m: Metric, pairs: &[Pair], sign: f64) -> Group {
    let points = pairs.iter().map(|p| rule::contrast(&p.a, &p.b, m.better() == Better::Higher)).collect();
    Group { points, sign }
}

fn pool(m: Metric, pairs: &[Pair], sign: f64) -> Pooled {
    if pairs.is_empty() {
        return rule::pooled(&[]);
    }
    rule::pooled(&[group(m, pairs, sign)])
}

/// The points too thin to enter a pooled contrast, with their clean repeats.
fn thin_points(pairs: &[Pair]) -> Vec<(String, usize)> {
    pairs.iter().filter(|p| p.clean() < rule::MIN_POINT_REPEATS).map(|p| (p.place.clone(), p.clean())).collect()
}

/// `pooled 1.50× [1.46–1.61] over 6 points × 5 repeats; ahead at 6 of 6: …`.
fn pooled_text(p: &Pooled, pairs: &[Pair], band: Option<f64>) -> String {
    if pairs.is_empty() {
        return "not measured".into();
    }
    let ahead = pairs.iter().filter(|x| x.median > 1.0).count();
    let list = pairs.iter().map(|x| format!("{}: {}", x.place, times(x.median))).collect::<Vec<_>>().join("; ");
    let band = band.map(|w| format!(" (level band {:.2}–{:.2})", 1.0 / (1.0 + w), 1.0 + w)).unwrap_or_default();
    let used = pairs.iter().filter(|x| x.clean() >= rule::MIN_POINT_REPEATS).count();
    format!(
        "pooled {}{band} over {used} point{} × {} repeats; ahead at {ahead} of {} (medians: {list})",
        p.text(),
        if used == 1 { "" } else { "s" },
        p.repeats,
        pairs.len()
    )
}

fn seed_ratios(pairs: &[Pair]) -> String {
    let known: Vec<String> =
        pairs.iter().filter_map(|p| p.seed.map(|r| format!("{}: {}", p.place, times(r)))).collect();
    if known.is_empty() {
        "–".into()
    } else {
        known.join("; ")
    }
}

/// The claimed server against each other server, pooled over the points where both ran,
/// each comparison's interval widened for the family (Bonferroni over the `k` others: each
/// misses on a side with probability 0.025 / k). Reproduced when every other's interval
/// lies above 1, not reproduced when one lies below 1, level when the closest other's (the
/// lowest pooled ratio) lies within 5% of 1. So under no difference a call either way is
/// made at most 2.5% of the time, whatever the number of others (the best other at each
/// point, picked from the same numbers, would bias the test against the claimed server).
/// The per-point medians name the best other at each point.
fn best<'s>(
    m: Metric,
    server: &str,
    among: &[String],
    at: &Select,
    samples: &'s [Sample],
    seed: &dyn Fn(&Sample, Metric) -> Option<f64>,
) -> Judged<'s> {
    let in_race = |s: &&Sample| !s.runs.is_empty() && at.matches(s) && (among.is_empty() || among.contains(&s.server));
    let mine: Vec<&Sample> = samples.iter().filter(in_race).filter(|s| s.server == server).collect();
    let mut others: Vec<&str> = Vec::new();
    for s in samples.iter().filter(in_race).filter(|s| s.server != server) {
        if !others.contains(&s.server.as_str()) {
            others.push(&s.server);
        }
    }
    let twin = |mine: &Sample, other: &str| {
        samples
            .iter()
            .filter(in_race)
            .find(|s| s.server == other && s.workload == mine.workload && s.client == mine.client)
    };
    let (mut medians, mut seed_wins, mut seed_points, mut points) = (Vec::new(), 0, 0, 0);
    let mut groups: Vec<Vec<&'s Sample>> = Vec::new();
    for s in &mine {
        let rivals: Vec<&Sample> = others.iter().filter_map(|o| twin(s, o)).collect();
        let Some(rival) =
            rivals.iter().copied().reduce(|x, y| if advantage(m, y.value(m), x.value(m)) > 1.0 { y } else { x })
        else {
            continue;
        };
        points += 1;
        groups.push([*s].into_iter().chain(rivals.iter().copied()).collect());
        let median = advantage(m, s.value(m), rival.value(m));
        medians.push((
            median,
            format!("{}: {} vs {} {}", s.place(), times(median), rival.server, metric::format(rival.value(m))),
        ));
        if let Some(v) = seed(s, m) {
            let theirs: Vec<f64> = rivals.iter().filter_map(|r| seed(r, m)).collect();
            if !theirs.is_empty() {
                seed_points += 1;
                seed_wins += usize::from(theirs.iter().all(|o| advantage(m, v, *o) > 1.0));
            }
        }
    }
    let seed_text = if seed_points > 0 { format!("best at {seed_wins} of {seed_points} points") } else { "–".into() };
    // One pooled comparison per other server, over the points both ran.
    let k = others.len().max(1);
    let tail = 0.025 / k as f64;
    let higher = m.better() == Better::Higher;
    let mut thin = Vec::new();
    let per_other: Vec<(&str, Pooled, usize)> = others
        .iter()
        .map(|o| {
            let pairs: Vec<Pair> = mine
                .iter()
                .filter_map(|s| {
                    let t = twin(s, o)?;
                    let median = advantage(m, s.value(m), t.value(m));
                    let place = format!("{}, against {o}", s.place());
                    Some(Pair { sides: [s, t], place, a: s.by_repeat(m), b: t.by_repeat(m), median, seed: None })
                })
                .collect();
            thin.extend(thin_points(&pairs));
            let contrasts = pairs.iter().map(|p| rule::contrast(&p.a, &p.b, higher)).collect();
            let p = if pairs.is_empty() { rule::pooled(&[]) } else { rule::pooled_at(&[rule::one(contrasts)], tail) };
            let used = pairs.iter().filter(|x| x.clean() >= rule::MIN_POINT_REPEATS).count();
            (*o, p, used)
        })
        .collect();
    // The comparison the claim is decided by: one that could not be made, else the closest.
    let decisive = per_other
        .iter()
        .find(|(_, p, _)| p.repeats < MIN_CLEAN_REPEATS)
        .or_else(|| per_other.iter().min_by(|x, y| x.1.ratio.total_cmp(&y.1.ratio)))
        .copied();
    let Some((closest, pooled, used)) = decisive.filter(|_| points > 0) else {
        let none = rule::pooled(&[]);
        return Judged {
            seed_text,
            seed_brief: None,
            here: "not measured".into(),
            pooled: Some(none),
            outcome: Outcome::NotMeasured,
            thin,
            points: groups,
        };
    };
    let outcome = match () {
        _ if per_other.iter().any(|(_, p, _)| p.call() == Call::Loss) => Outcome::NotReproduced,
        _ if per_other.iter().all(|(_, p, _)| p.call() == Call::Win) => Outcome::Reproduced,
        _ if pooled.within(0.05) => Outcome::Level,
        _ if pooled.repeats == 0 => Outcome::NotMeasured,
        _ => Outcome::Inconclusive,
    };
    let ahead = medians.iter().filter(|x| x.0 > 1.0).count();
    let each = per_other.iter().map(|(o, p, _)| format!("{o}: {}", p.text())).collect::<Vec<_>>().join("; ");
    let here = format!(
        "pooled {} against {closest}, the closest of {} other{} ({:.1}% intervals, Bonferroni over them) over \
         {used} point{} × {} repeats; best at {ahead} of {points} (medians: {}) (against each: {each})",
        pooled.text(),
        others.len(),
        if others.len() == 1 { "" } else { "s" },
        100.0 * (1.0 - 2.0 * tail),
        if used == 1 { "" } else { "s" },
        pooled.repeats,
        medians.into_iter().map(|x| x.1).collect::<Vec<_>>().join("; ")
    );
    Judged { seed_text, seed_brief: None, here, pooled: Some(pooled), outcome, thin, points: groups }
}

/// The outcome of a `trend` claim from what its series does (`shape.rs`).
pub(crate) fn judge(r: &ShapeReport, expect: Shape, linear_min: Option<f64>) -> Outcome {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::ClientSpec;
    use crate::run::measurement::Measurement;

    fn sample(server: &str, c: u32, rps: &[f64]) -> Sample {
        let runs = rps.iter().map(|r| Measurement { rps: *r, responses: 100, ..Default::default() }).collect();
        Sample { server: server.into(), workload: "w".into(), client: ClientSpec::closed(c, 100), runs }
    }

    fn claim(toml_text: &str) -> Claim {
        let c: Claim = toml::from_str(toml_text).unwrap_or_else(|e| panic!("{e}"));
        c.check().unwrap();
        c
    }

    const BEATS: &str = r#"
        kind = "beats"
        text = "a beats b"
        sweep = "s"
        source = "000:1"
        quote = "a is faster"
        metric = "rps"
        a = { server = "a" }
        b = { server = "b" }
    "#;

    /// The outcomes of a two-sided comparison: ahead, behind, level (tight around 1),
    /// inconclusive (too wide to tell), and a size the interval misses.
    #[test]
    fn beats_outcomes_table() {
        let tight = [100.0, 101.0, 99.0, 100.5, 99.5];
        let wide = [60.0, 140.0, 100.0, 80.0, 120.0];
        let times = |xs: &[f64], f: f64| xs.iter().map(|x| x * f).collect::<Vec<_>>();
        let cases: [(&[f64], Vec<f64>, &str, &str); 5] = [
            (&tight, times(&tight, 0.5), "", "reproduced"),
            (&tight, times(&tight, 2.0), "", "not reproduced"),
            (&tight, tight.to_vec(), "", "level (no difference)"),
            (&wide, times(&tight, 0.98), "", "inconclusive"),
            (&tight, times(&tight, 0.5), "size = { ratio = 4.0 }", "direction reproduced, size not"),
        ];
        for (a, b, size, want) in cases {
            let v = [sample("a", 1, a), sample("b", 1, &b), sample("a", 2, a), sample("b", 2, &b)];
            let c = claim(&format!("{BEATS}\n{size}"));
            let got = check_samples(&c, &v);
            assert_eq!(got.label(), want, "{a:?} vs {b:?} {size}: {}", got.here);
        }
    }

    /// A `best` claim: ahead of every other, behind one, level with the closest, and too
    /// noisy to tell.
    #[test]
    fn best_outcomes_table() {
        let tight = [100.0, 101.0, 99.0, 100.5, 99.5];
        let wide = [60.0, 140.0, 100.0, 80.0, 120.0];
        let times = |xs: &[f64], f: f64| xs.iter().map(|x| x * f).collect::<Vec<_>>();
        let claim_text = "kind = \"best\"\ntext = \"a is best\"\nsweep = \"s\"\nsource = \"000:1\"\nquote = \"q\"\nmetric = \"rps\"\nserver = \"a\"";
        type Case = (Vec<f64>, Vec<f64>, Vec<f64>, &'static str);
        let cases: [Case; 4] = [
            (times(&tight, 2.0), tight.to_vec(), times(&tight, 1.5), "reproduced"),
            (times(&tight, 2.0), tight.to_vec(), times(&tight, 3.0), "not reproduced"),
            (tight.to_vec(), times(&tight, 0.5), tight.to_vec(), "level (no difference)"),
            (wide.to_vec(), times(&tight, 0.5), tight.to_vec(), "inconclusive"),
        ];
        for (a, b, c, want) in cases {
            let v: Vec<Sample> =
                (1..=2).flat_map(|n| [sample("a", n, &a), sample("b", n, &b), sample("c", n, &c)]).collect();
            let got = check_samples(&claim(claim_text), &v);
            assert_eq!(got.label(), want, "{}", got.here);
            assert!(got.here.contains("the closest of 2 others (97.5% intervals"), "{}", got.here);
        }
    }

    /// A larger gain needs a gain. Regression (000's "fork's largest gain is on CGI" in the
    /// committed full run): fork lost at both, 0.66× on CGI and 0.12× on files, and the
    /// ratio of the two losses, 5.32×, read "reproduced" (direction). Losing at both is "not
    /// reproduced", saying so from the numbers; no gain shown where it is claimed (an
    /// interval containing 1) is inconclusive; a real gain is judged by the ratio as before.
    #[test]
    fn a_larger_gain_needs_a_gain_table() {
        let gain = "kind = \"larger_gain\"\ntext = \"a gains most at c = 1\"\nsweep = \"s\"\nsource = \"000:81\"\nquote = \"q\"\nmetric = \"rps\"\na = { server = \"a\" }\nb = { server = \"b\" }\nat = { c = 1 }\nthan = { c = 2 }";
        let (a_noise, b_noise) = ([100.0, 101.0, 99.0, 100.5, 99.5], [100.5, 99.0, 101.0, 99.5, 100.0]);
        let scaled = |xs: &[f64], f: f64| xs.iter().map(|x| x * f).collect::<Vec<_>>();
        // (a's advantage at c = 1, at c = 2; the label; how `here` begins)
        let cases: [(f64, f64, &str, &str); 5] = [
            (2.0, 1.2, "reproduced", "1.67× ["),
            (0.66, 0.12, "not reproduced", "no gain to compare: a loses at both, 0.66× ["),
            (0.5, 0.8, "not reproduced", "no gain to compare: a loses at both, 0.50× ["),
            (1.0, 0.5, "inconclusive", "no gain shown: a's advantage where the gain is claimed, 1.00× ["),
            (1.2, 2.0, "not reproduced", "0.60× ["),
        ];
        for (at_1, at_2, want, here) in cases {
            let v = [
                sample("a", 1, &scaled(&a_noise, at_1)),
                sample("b", 1, &b_noise),
                sample("a", 2, &scaled(&a_noise, at_2)),
                sample("b", 2, &b_noise),
            ];
            let got = check_samples(&claim(gain), &v);
            assert_eq!(got.label(), want, "{at_1} against {at_2}: {}", got.here);
            assert!(got.here.starts_with(here), "{at_1} against {at_2}: {}", got.here);
        }
        let v = [
            sample("a", 1, &scaled(&a_noise, 0.66)),
            sample("b", 1, &b_noise),
            sample("a", 2, &scaled(&a_noise, 0.12)),
            sample("b", 2, &b_noise),
        ];
        let got = check_samples(&claim(gain), &v);
        assert!(got.here.ends_with("is a smaller loss, not a larger gain"), "{}", got.here);
        assert!(got.is_evidence(), "a claim whose premise fails is evidence against it");
    }

    /// Regression: one point lost by chance among many vetoed "reproduced"; pooled, a
    /// claim ahead at 38 of 39 points is reproduced.
    #[test]
    fn one_loss_among_many_points_does_not_veto() {
        let mut v = Vec::new();
        for c in 1..=39 {
            let f = if c == 7 { 0.95 } else { 1.2 };
            v.push(sample("a", c, &[100.0 * f, 101.0 * f, 99.0 * f, 100.5 * f, 99.5 * f]));
            v.push(sample("b", c, &[100.0, 100.5, 99.5, 100.2, 99.8]));
        }
        let got = check_samples(&claim(BEATS), &v);
        assert_eq!(got.outcome, Outcome::Reproduced, "{}", got.here);
        assert!(got.here.contains("ahead at 38 of 39"), "{}", got.here);
    }

    #[test]
    fn by_construction_and_not_testable_are_not_evidence() {
        let tight = [100.0, 101.0, 99.0, 100.5, 99.5];
        let v = [sample("a", 1, &tight.map(|x| x * 2.0)), sample("b", 1, &tight)];
        let c = claim(&format!("{BEATS}\nby_construction = \"a sleeps less\""));
        let got = check_samples(&c, &v);
        assert_eq!((got.label().as_str(), got.is_evidence()), ("by construction (numbers: reproduced)", false));
        let c = claim(
            "kind = \"not_testable\"\ntext = \"t\"\nsource = \"004:107\"\nquote = \"q\"\nreason = \"no hypervisor here\"",
        );
        let got = check(&c, None, 0);
        assert_eq!(
            (got.label().as_str(), got.here.as_str(), got.is_evidence()),
            ("not testable here", "no hypervisor here", false)
        );
    }

    /// A claim the lab's method cannot test (`untestable`) keeps its numbers, says why with
    /// the batches its points ran, and is not evidence, whatever its numbers gave; client-bound
    /// ones too. Not measured stays not measured.
    #[test]
    fn a_claim_the_method_cannot_test_is_shown_not_counted_table() {
        let tight = [100.0, 101.0, 99.0, 100.5, 99.5];
        let times = |xs: &[f64], f: f64| xs.iter().map(|x| x * f).collect::<Vec<_>>();
        let batched = |mut s: Sample, batches: &[u32]| {
            s.runs.iter_mut().zip(batches).for_each(|(r, b)| r.batches = *b);
            s
        };
        let why = "untestable = \"a cost paid once is spread over its batches ({batches})\"";
        let cases: [(f64, &str); 3] = [
            (2.0, "not testable by this method (numbers: reproduced)"),
            (0.5, "not testable by this method (numbers: not reproduced)"),
            (1.0, "not testable by this method (numbers: level (no difference))"),
        ];
        for (f, want) in cases {
            let v = [
                batched(sample("a", 1, &times(&tight, f)), &[860, 903, 318, 700, 650]),
                batched(sample("b", 1, &tight), &[90, 27, 88, 91, 80]),
            ];
            let got = check_samples(&claim(&format!("{BEATS}\n{why}")), &v);
            assert_eq!((got.label().as_str(), got.is_evidence()), (want, false), "{}", got.here);
            assert_eq!(got.outcome, Outcome::Untestable);
            assert_eq!(crate::report::summary::Category::of(&got), crate::report::summary::Category::Untestable);
            let reason = &got.untestable.as_ref().unwrap().reason;
            assert_eq!(
                reason,
                "a cost paid once is spread over its batches (1 connection, N = 100: 27 to 903 batches a repeat)"
            );
        }
        // Two client settings, each with its own batches, fewest requests first.
        let at = |server: &str, n: u64, batches: &[u32]| {
            let mut s = batched(sample(server, 10, &tight), batches);
            s.client = ClientSpec::closed(10, n);
            s
        };
        let v = [
            at("a", 100, &[27, 91, 80, 88, 90]),
            at("a", 10, &[318, 903, 500, 860, 700]),
            at("b", 100, &[30, 40, 50, 60, 70]),
        ];
        let by_n = BEATS
            .replace("a = { server = \"a\" }", "a = { n = 100 }")
            .replace("b = { server = \"b\" }", "b = { n = 10 }");
        let c = claim(&format!("{by_n}\n{why}"));
        let got = check_samples(&c, &v);
        assert_eq!(
            got.untestable.as_ref().map(|u| u.reason.as_str()),
            Some("a cost paid once is spread over its batches (10 connections, N = 10: 318 to 903 batches a repeat; 10 connections, N = 100: 27 to 91)"),
            "{}",
            got.here
        );
        // Nothing measured: not measured, as any claim.
        let got = check(&claim(&format!("{BEATS}\n{why}")), None, 0);
        assert_eq!((got.outcome, got.untestable.is_none()), (Outcome::NotMeasured, true));
    }

    #[test]
    fn claims_refuse_what_they_cannot_check() {
        let bad = [
            (format!("{BEATS}\nsize = {{ last = 3.0 }}"), "no size of that form"),
            (format!("{BEATS}\nsize = {{ ratio = 2.0, at_least = 2.0 }}"), "one of ratio"),
            (BEATS.replace("000:1", "seed 0 line 1"), "is not SEED:LINE"),
            (BEATS.replace("sweep = \"s\"", ""), "exactly when"),
            (format!("{BEATS}\nuntestable = \"u\"\nby_construction = \"b\""), "not both"),
            (
                "kind = \"not_testable\"\ntext = \"t\"\nsource = \"004:107\"\nquote = \"q\"\nreason = \"r\"\nuntestable = \"u\"".into(),
                "no untestable",
            ),
        ];
        for (text, want) in bad {
            let c: Claim = toml::from_str(&text).unwrap();
            let err = format!("{:#}", c.check().unwrap_err());
            assert!(err.contains(want), "{err}");
        }
        assert!(toml::from_str::<Claim>(&format!("{BEATS}\nnot_a_field = 1")).is_err(), "unknown fields refused");
    }

    /// A repeat excluded as disturbed leaves a hole at its own round: the other side's
    /// repeats still pair by round (not shifted by one). With fewer than three clean rounds
    /// in common the claim gets no verdict, and says why.
    #[test]
    fn excluded_repeats_pair_by_round_and_too_few_clean_ones_give_no_verdict() {
        let excluded = |mut s: Sample, repeats: &[usize]| {
            repeats.iter().for_each(|&r| s.runs[r].excluded = true);
            s
        };
        // Round 1 of `a` stayed disturbed. Each round a is 2× b, though the rounds drift a
        // lot: pairing by round, the pooled ratio is exactly 2.
        let a = excluded(sample("a", 1, &[200.0, 1.0, 800.0, 1600.0, 3200.0]), &[1]);
        let b = sample("b", 1, &[100.0, 200.0, 400.0, 800.0, 1600.0]);
        let got = check_samples(&claim(BEATS), &[a.clone(), b.clone()]);
        assert_eq!(got.outcome, Outcome::Reproduced, "{}", got.here);
        assert!(got.here.contains("pooled 2.00× [2.00–2.00]") && got.here.contains("× 4 repeats"), "{}", got.here);
        let a = excluded(a, &[2, 3]);
        let got = check_samples(&claim(BEATS), &[a, b]);
        assert_eq!(got.outcome, Outcome::Inconclusive, "{}", got.here);
        assert!(got.here.ends_with("(insufficient clean repeats: 2 in common at most, 3 needed)"), "{}", got.here);
    }

    /// Regression (010's control in the committed full run): every round had one of the
    /// claim's six runs excluded as disturbed, and one point had no clean repeat in common;
    /// the claim read "not measured" though every point ran. Each excluded run now takes out
    /// its own point in its round, and a claim with no clean repeat in common at any point
    /// is inconclusive, saying why.
    #[test]
    fn a_claim_whose_points_ran_is_never_not_measured() {
        let level = "kind = \"level\"\ntext = \"n = 10 level with n = 100\"\nsweep = \"s\"\nsource = \"002:67\"\nquote = \"q\"\nmetric = \"rps\"\na = { n = 10 }\nb = { n = 100 }";
        let at = |server: &str, n: u64, excluded: &[usize]| {
            let mut s = sample(server, 10, &[100.0, 101.0, 99.0, 100.5, 99.5]);
            s.client = ClientSpec::closed(10, n);
            excluded.iter().for_each(|&r| s.runs[r].excluded = true);
            s
        };
        // The committed run's exclusions (results.jsonl.gz, 010 "one batch").
        let v = [
            at("thread", 10, &[]),
            at("thread", 100, &[]),
            at("event 1", 10, &[0]),
            at("event 1", 100, &[2]),
            at("event 2", 10, &[0, 1]),
            at("event 2", 100, &[1, 2, 3, 4]),
        ];
        let got = check_samples(&claim(level), &v);
        assert_eq!(got.outcome, Outcome::Reproduced, "{}", got.here);
        assert!(got.here.contains("over 2 points × 5 repeats"), "{}", got.here);
        assert!(got.here.ends_with("clean repeats in common: event 2, 10 connections, N = 10: 0)"), "{}", got.here);
        // Nothing in common at the only point: inconclusive, and why.
        let v = [at("thread", 10, &[0, 1]), at("thread", 100, &[2, 3, 4])];
        let got = check_samples(&claim(level), &v);
        assert_eq!(got.label(), "inconclusive", "{}", got.here);
        assert!(got.here.ends_with("(insufficient clean repeats: 0 in common at most, 3 needed)"), "{}", got.here);
    }

    /// Regression: a comparison on the successful answers' latency (`ok_ms`) against records
    /// made before its sums were kept (lab-full-c69ce8d's) read "inconclusive (insufficient
    /// clean repeats …)" though no repeat was disturbed: such records did not measure the
    /// metric, and the claim is "not measured", as a trend on it is.
    #[test]
    fn a_metric_the_records_do_not_hold_is_not_measured() {
        let tight = [100.0, 101.0, 99.0, 100.5, 99.5];
        let on_ok = BEATS.replace("metric = \"rps\"", "metric = \"ok_ms\"");
        let old = [sample("a", 1, &tight), sample("b", 1, &tight)];
        let got = check_samples(&claim(&on_ok), &old);
        assert_eq!((got.label().as_str(), got.here.as_str()), ("not measured", "not measured"));
        let kept = |mut s: Sample, ms: f64| {
            s.runs.iter_mut().zip(tight).for_each(|(r, x)| r.ok_latency_sum_us = Some((x * ms * 100.0) as u64));
            s
        };
        let new = [kept(sample("a", 1, &tight), 1.0), kept(sample("b", 1, &tight), 2.0)];
        assert_eq!(check_samples(&claim(&on_ok), &new).label(), "reproduced");
    }

    /// A claim is client-bound when more than half of its points have a saturated side; its
    /// figures are the medians over those sides; points without figures count as not.
    #[test]
    fn client_bound_claims_table() {
        let sat = |busy: f64, idle: f64| Some(Saturation { client_busy_pct: busy, server_idle_pct: idle });
        let (bound, free) = (sat(97.0, 28.0), sat(60.0, 5.0));
        type Points = Vec<Vec<Option<Saturation>>>;
        type Want = Option<(usize, usize, f64, f64)>;
        let cases: [(Points, Want); 7] = [
            (vec![], None),
            (vec![vec![bound, free]], Some((1, 1, 97.0, 28.0))),
            (vec![vec![bound, free], vec![free, free]], None),
            (vec![vec![bound, sat(95.0, 40.0)], vec![free, sat(99.0, 30.0)], vec![free]], Some((2, 3, 97.0, 30.0))),
            (vec![vec![None, None], vec![bound]], None),
            (vec![vec![sat(f64::NAN, 50.0)], vec![sat(95.0, f64::NAN)]], None),
            (vec![vec![sat(90.0, 20.0)]], Some((1, 1, 90.0, 20.0))),
        ];
        for (points, want) in cases {
            let got = client_bound(&points).map(|(n, of, s)| (n, of, s.client_busy_pct, s.server_idle_pct));
            assert_eq!(got, want, "{points:?}");
        }
    }

    /// A level claim whose sides' load generator was saturated while the server idled: its
    /// numbers shown, labelled client-bound, not evidence; with one of two points so, as
    /// before. Records without their CPU counts take them from the machine's cores, and with
    /// the cores unknown nothing is called client-bound.
    #[test]
    fn a_claim_measuring_its_load_generator_is_client_bound() {
        let level = "kind = \"level\"\ntext = \"a level with b\"\nsweep = \"s\"\nsource = \"002:67\"\nquote = \"q\"\nmetric = \"rps\"\na = { server = \"a\" }\nb = { server = \"b\" }";
        let tight = [100.0, 101.0, 99.0, 100.5, 99.5];
        let busy = |mut s: Sample, client_ms: f64, server_ms: f64, shares: Option<Shares>| {
            for r in &mut s.runs {
                r.cpu.client_cpu_us = Some(client_ms * 1e3);
                r.cpu.server_cpu_us = server_ms * 1e3;
                r.cpu.elapsed_s = 0.5;
                r.cpu.shares = shares;
            }
            s
        };
        let one = Some(Shares { server: 1, client: 1, shared: 0 });
        let at = |c: u32, client_ms: f64, shares| {
            [
                busy(sample("a", c, &tight), client_ms, 360.0, shares),
                busy(sample("b", c, &tight), client_ms, 360.0, shares),
            ]
        };
        let v = [at(1, 485.0, one), at(2, 485.0, one)].concat();
        let got = check_samples(&claim(level), &v);
        assert_eq!((got.outcome, got.is_evidence()), (Outcome::ClientBound, false), "{}", got.here);
        assert_eq!(got.label(), "client-bound (numbers: reproduced)");
        assert!(
            got.here_brief.ends_with(
                "(client-bound: the load generator was 97% busy while the server idled 28% (medians at 2 of 2 points))"
            ),
            "{}",
            got.here_brief
        );
        assert_eq!(crate::report::summary::Category::of(&got).class(), "v-client");
        let v = [at(1, 485.0, one), at(2, 300.0, one)].concat();
        assert_eq!(check_samples(&claim(level), &v).outcome, Outcome::Reproduced);
        // Older records: the shares from the machine's cores (2: a CPU each), or none.
        let v = [at(1, 485.0, None), at(2, 485.0, None)].concat();
        assert_eq!(check_samples(&claim(level), &v).outcome, Outcome::Reproduced, "cores unknown");
        let exp = experiment();
        let active = crate::experiment::plan::active(&exp, false);
        assert_eq!(check(&claim(level), Some((&active[0], &v)), 2).outcome, Outcome::ClientBound);
        // The server's CPU per request is the server's whatever the client did.
        let cpu = level.replace("metric = \"rps\"", "metric = \"cpu_us\"");
        assert_ne!(check(&claim(&cpu), Some((&active[0], &v)), 2).outcome, Outcome::ClientBound);
    }

    fn experiment() -> crate::experiment::Experiment {
        toml::from_str(
            r#"
            id = "x"
            title = "t"
            seed = "s"
            question = "q"
            [[sweeps]]
            name = "s"
            title = "t"
            servers = [{ label = "a", mode = "single" }, { label = "b", mode = "single" }]
            workloads = []
            clients = []
            table.dims = ["server"]
            table.columns = [{ header = "rps", metric = "rps" }]
            "#,
        )
        .unwrap()
    }

    /// Checks a claim against samples without an experiment (no seed numbers).
    fn check_samples(c: &Claim, samples: &[Sample]) -> Verdict {
        let exp = experiment();
        let active = crate::experiment::plan::active(&exp, false);
        check(c, Some((&active[0], samples)), 0)
    }
}

#[cfg(test)]
#[path = "verdict_sim_tests.rs"]
mod sim_tests;
