//! What a quick run did not measure, and why, folded into a line per experiment: a quick
//! report lists the claims it measured and says of the rest only how many there are and
//! what to do about them (issue 45: on a busy machine most of a quick run's claims were
//! "not measured", row after row, with no word of why).

use crate::experiment::plan;
use crate::experiment::Experiment;
use crate::judge::verdict::{self, Verdict};
use crate::run::results::{Outcome, Record};
use std::collections::HashMap;

/// Why a claim has no verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Why {
    /// Its sweep runs in full runs only.
    FullOnly,
    /// Its sweep's repeats were left out as disturbed, too many for a verdict (or too few
    /// of its own points' repeats were clean).
    Disturbed,
    /// Its sweep's servers were skipped or failed here.
    Skipped,
    /// The results hold no point of it (an interrupted run, results older than the claim).
    Missing,
}

impl Why {
    /// How a count of claims is said: `3 in sweeps only a full run measures`.
    fn words(self, n: usize) -> String {
        let s = if n == 1 { "" } else { "s" };
        match self {
            Why::FullOnly => format!("{n} in sweep{s} only a full run measures"),
            Why::Disturbed => format!("{n} with too few clean repeats, the others left out as disturbed"),
            Why::Skipped => format!("{n} whose servers did not run here (the experiment's notes say why)"),
            Why::Missing => format!("{n} with no points in the results"),
        }
    }
}

/// One experiment's claims without a verdict, by why, and its repeats left out as disturbed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Folded {
    /// The experiment's id (`003-cgi`).
    pub experiment: String,
    pub claims: Vec<(Why, usize)>,
    /// Of its measured repeats, how many were left out as disturbed, of how many.
    pub excluded: (usize, usize),
}

impl Folded {
    fn count(&self) -> usize {
        self.claims.iter().map(|c| c.1).sum()
    }

    /// The experiment's line: `003-cgi: 4 claims not measured: 2 in sweeps only a full run
    /// measures, 2 whose points were left out as disturbed (31 of 36 repeats).`
    pub fn line(&self) -> String {
        format!("{}: {} not measured: {}.", self.experiment, claims(self.count()), parts(&self.claims, self.excluded))
    }
}

/// What a claim not measured came to lack, from the records of its sweep.
fn why(exp: &Experiment, sweep: &str, quick: bool, records: &HashMap<String, Record>) -> Why {
    if !plan::active(exp, quick).iter().any(|a| a.sweep.name == sweep) {
        return Why::FullOnly;
    }
    let mine: Vec<&Record> = records
        .values()
        .filter(|r| r.experiment == exp.id && r.sweep == sweep && r.id.starts_with("quick/") == quick)
        .collect();
    if mine.iter().any(|r| r.measurement.as_ref().is_some_and(|m| m.excluded)) {
        Why::Disturbed
    } else if mine.iter().any(|r| r.outcome != Outcome::Measured) {
        Why::Skipped
    } else {
        Why::Missing
    }
}

/// `(excluded, measured)` repeats in `records` of experiment `exp`, or of all with None.
fn excluded(exp: Option<&str>, records: &HashMap<String, Record>) -> (usize, usize) {
    let measured: Vec<bool> = records
        .values()
        .filter(|r| exp.map_or(true, |e| r.experiment == e))
        .filter_map(|r| r.measurement.as_ref().map(|m| m.excluded))
        .collect();
    (measured.iter().filter(|e| **e).count(), measured.len())
}

/// Whether a claim has no verdict for want of measurements: "not measured", or its points
/// ran with too few clean repeats.
pub(crate) fn unmeasured(v: &Verdict) -> bool {
    v.outcome == verdict::Outcome::NotMeasured || v.few_clean
}

/// Per experiment with any, its claims that got no verdict for want of measurements
/// ([`unmeasured`]), by why; `rows`
/// are [`crate::report::verdict_rows`]' of `exps`, in that order.
pub(crate) fn fold(
    exps: &[Experiment],
    rows: &[(String, Verdict)],
    quick: bool,
    records: &HashMap<String, Record>,
) -> Vec<Folded> {
    let mut rows = rows.iter();
    let mut out = Vec::new();
    for exp in exps {
        let mut claims: Vec<(Why, usize)> = Vec::new();
        for claim in &exp.claims {
            let Some((_, v)) = rows.next() else { break };
            if !unmeasured(v) {
                continue;
            }
            tally(&mut claims, why(exp, claim.sweep(), quick, records), 1);
        }
        if !claims.is_empty() {
            out.push(Folded { experiment: exp.id.clone(), claims, excluded: excluded(Some(&exp.id), records) });
        }
    }
    out
}

/// Adds `n` claims for `why` to `list`, kept in the order of [`Why`].
fn tally(list: &mut Vec<(Why, usize)>, why: Why, n: usize) {
    match list.iter_mut().find(|c| c.0 == why) {
        Some(c) => c.1 += n,
        None => list.push((why, n)),
    }
    list.sort();
}

/// `2 in sweeps only a full run measures, 2 whose points were left out as disturbed (31 of
/// 36 repeats)`.
fn parts(claims: &[(Why, usize)], (excluded, measured): (usize, usize)) -> String {
    let parts: Vec<String> = claims
        .iter()
        .map(|&(why, k)| match why {
            Why::Disturbed => format!("{} ({excluded} of {measured} repeats)", why.words(k)),
            _ => why.words(k),
        })
        .collect();
    parts.join(", ")
}

/// `4 claims`.
fn claims(n: usize) -> String {
    format!("{n} claim{}", if n == 1 { "" } else { "s" })
}

/// What to do about the claims not measured, once for all of them.
fn remedy(folded: &[Folded]) -> String {
    let has = |w: Why| folded.iter().any(|f| f.claims.iter().any(|c| c.0 == w));
    let mut todo = Vec::new();
    if has(Why::Disturbed) {
        todo.push(format!(
            "a repeat is left out as disturbed when {} through every try: run on a quieter machine, or pass \
             --keep-disturbed to keep every repeat (marked in the report)",
            crate::run::cpu::disturbance_rule()
        ));
    }
    if has(Why::FullOnly) {
        todo.push(
            "the sweeps a quick run skips are measured by a full run (`spidey lab --all`, or name the experiments)"
                .into(),
        );
    }
    todo.join("; ")
}

/// The quick run's claims not measured, in one paragraph: their count by why, overall (the
/// repeats left out as disturbed counted over the whole run, `records`), and what to do;
/// None when every claim was measured.
pub(crate) fn summary(folded: &[Folded], records: &HashMap<String, Record>) -> Option<String> {
    if folded.is_empty() {
        return None;
    }
    let mut by_why: Vec<(Why, usize)> = Vec::new();
    for (why, n) in folded.iter().flat_map(|f| f.claims.iter().copied()) {
        tally(&mut by_why, why, n);
    }
    let excluded = excluded(None, records);
    let n: usize = folded.iter().map(Folded::count).sum();
    let k = folded.len();
    Some(format!(
        "This quick run did not measure {} of {k} experiment{}: {}; the report lists the claims it measured and, \
         experiment by experiment, how many it did not and why. {}.",
        claims(n),
        if k == 1 { "" } else { "s" },
        parts(&by_why, excluded),
        capitalise(&remedy(folded)),
    ))
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}
