//! The replication table (`spidey lab --verdicts RUN --replicate OTHER`): each claim's
//! verdict in one run beside another run's, from another day (and, where one is committed,
//! another machine), and whether the other run's numbers say the same.
//!
//! What is compared is the label the numbers reach ([`Verdict::numbers_label`]), not the
//! wrappers around it: "client-bound", "true by construction" and "not testable by this
//! method" judge the claim or the load generator, and a run made before such a rule existed
//! recorded no figure for it, so comparing them would count a change of rule as a failure
//! to replicate.

use super::render::{self, Block, Table};
use crate::judge::verdict::Verdict;

/// Whether one claim's verdict replicated in the other run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Replication {
    /// The other run's numbers give the same label.
    Replicated,
    /// They give another label (the other run's).
    NotReplicated(String),
    /// The other run judged no numbers for the claim (its sweep did not run there).
    NotMeasuredThere,
    /// This run judged no numbers for it: nothing to replicate.
    Nothing,
}

impl Replication {
    pub(crate) fn of(here: &Verdict, there: &Verdict) -> Replication {
        match (here.numbers_label(), there.numbers_label()) {
            (None, _) => Replication::Nothing,
            (Some(_), None) => Replication::NotMeasuredThere,
            (Some(a), Some(b)) if a == b => Replication::Replicated,
            (Some(_), Some(b)) => Replication::NotReplicated(b),
        }
    }

    fn cell(&self) -> String {
        match self {
            Replication::Replicated => "replicated".into(),
            Replication::NotReplicated(there) => format!("not replicated (there: {there})"),
            Replication::NotMeasuredThere => "not measured there".into(),
            Replication::Nothing => "–".into(),
        }
    }
}

/// The replication section as Markdown: `rows` are this run's verdicts and `other` the
/// other run's, both [`super::verdict_rows`] of the same experiments (so in the same
/// order); `seed` says, row by row, whether the claim is a seed study's (not an explain
/// experiment's prediction or control: [`super::seed_claims`]); `other_name` says which
/// run the other is.
pub(crate) fn markdown(
    rows: &[(String, Verdict)],
    other: &[(String, Verdict)],
    seed: &[bool],
    other_name: &str,
) -> String {
    assert_eq!((rows.len(), seed.len()), (other.len(), other.len()), "both runs judged by the same experiments");
    let judged: Vec<(&String, &Verdict, &Verdict, Replication)> = rows
        .iter()
        .zip(other)
        .map(|((id, here), (_, there))| (id, here, there, Replication::of(here, there)))
        .collect();
    let tally = |of_seeds: bool| {
        let of = |want: fn(&Replication) -> bool| {
            judged.iter().zip(seed).filter(|((.., r), &s)| s == of_seeds && want(r)).count()
        };
        let (replicated, differ, unmeasured) = (
            of(|r| *r == Replication::Replicated),
            of(|r| matches!(r, Replication::NotReplicated(_))),
            of(|r| *r == Replication::NotMeasuredThere),
        );
        format!(
            "{} judged from numbers here: {replicated} replicated, {differ} not replicated, {unmeasured} not measured there",
            replicated + differ + unmeasured
        )
    };
    let headers = ["Seed", "Claim", "This run", "The other run", "Replication"];
    let cells = judged
        .iter()
        .filter(|(.., r)| *r != Replication::Nothing)
        .map(|(id, here, there, r)| vec![(*id).clone(), here.claim.clone(), here.label(), there.label(), r.cell()])
        .collect();
    let doc = vec![
        Block::Heading(2, "Replication: the verdicts against another run".into()),
        Block::Para(format!(
            "Each claim this run judged from its numbers, beside the verdict of another run of the same experiments ({other_name}), judged by the same rules. \"replicated\": the other run's numbers reach the same label; \"not replicated\": another label (the other run's is shown); \"not measured there\": the claim's sweep did not run there. The wrappers around a label (client-bound, true by construction, not testable by this method) are not compared: they judge the claim or the load generator, not the server, and a run made before such a rule recorded no figure for it."
        )),
        Block::Table(Table::new(headers.map(String::from).to_vec(), cells)),
        Block::Para(format!(
            "The seed studies' claims: {}. The explain experiments' predictions and controls: {}.",
            tally(true),
            tally(false)
        )),
    ];
    render::markdown(&doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::verdict::{ClientBound, Outcome, SizeCall, Untestable};
    use crate::run::cpu::Saturation;

    fn verdict(outcome: Outcome) -> Verdict {
        Verdict { claim: "fork beats single".into(), ..Verdict::bare(outcome, SizeCall::NotStated) }
    }

    fn client_bound(numbers: Outcome) -> Verdict {
        let saturation = Saturation { client_busy_pct: 98.0, server_idle_pct: 25.0 };
        Verdict {
            client_bound: Some(ClientBound { numbers, points: 5, of: 5, saturation }),
            ..verdict(Outcome::ClientBound)
        }
    }

    /// The numbers are compared, not the wrappers; a claim with no numbers on one side is
    /// named, never counted as replicated.
    #[test]
    fn replication_table() {
        let sized = Verdict { size: SizeCall::Outside, ..verdict(Outcome::Reproduced) };
        let untestable = Verdict {
            untestable: Some(Untestable { reason: "its figures".into(), numbers: Outcome::NotReproduced }),
            ..verdict(Outcome::Untestable)
        };
        let constructed = Verdict { by_construction: Some("a sleep".into()), ..verdict(Outcome::Reproduced) };
        let cases: Vec<(&str, Verdict, Verdict, Replication)> = vec![
            ("the same label", verdict(Outcome::Reproduced), verdict(Outcome::Reproduced), Replication::Replicated),
            (
                "another label",
                verdict(Outcome::Reproduced),
                verdict(Outcome::Level),
                Replication::NotReplicated("level (no difference)".into()),
            ),
            (
                "the size differs",
                verdict(Outcome::Reproduced),
                sized.clone(),
                Replication::NotReplicated("direction reproduced, size not".into()),
            ),
            ("client-bound here only", client_bound(Outcome::Level), verdict(Outcome::Level), Replication::Replicated),
            (
                "client-bound there, other numbers",
                verdict(Outcome::Level),
                client_bound(Outcome::Inconclusive),
                Replication::NotReplicated("inconclusive".into()),
            ),
            ("untestable by method", untestable, verdict(Outcome::NotReproduced), Replication::Replicated),
            ("true by construction", constructed, verdict(Outcome::Reproduced), Replication::Replicated),
            (
                "not run there",
                verdict(Outcome::Reproduced),
                verdict(Outcome::NotMeasured),
                Replication::NotMeasuredThere,
            ),
            ("not run here", verdict(Outcome::NotMeasured), verdict(Outcome::Reproduced), Replication::Nothing),
            ("not testable here", verdict(Outcome::NotTestable), verdict(Outcome::NotTestable), Replication::Nothing),
        ];
        for (name, here, there, want) in cases {
            assert_eq!(Replication::of(&here, &there), want, "{name}");
        }
    }

    #[test]
    fn the_section_counts_what_it_shows() {
        let id = || "000".to_string();
        let here = [
            verdict(Outcome::Reproduced),
            verdict(Outcome::Level),
            verdict(Outcome::NotMeasured),
            verdict(Outcome::Inconclusive),
        ];
        let there = [
            verdict(Outcome::Reproduced),
            verdict(Outcome::Reproduced),
            verdict(Outcome::Reproduced),
            verdict(Outcome::NotMeasured),
        ];
        let rows: Vec<_> = here.into_iter().map(|v| (id(), v)).collect();
        let other: Vec<_> = there.into_iter().map(|v| (id(), v)).collect();
        let text = markdown(&rows, &other, &[true, true, true, false], "docs/runs/a-run");
        assert!(text.contains("(docs/runs/a-run)"), "{text}");
        let summary = "The seed studies' claims: 2 judged from numbers here: 1 replicated, 1 not replicated, 0 not \
                       measured there. The explain experiments' predictions and controls: 1 judged from numbers \
                       here: 0 replicated, 0 not replicated, 1 not measured there.";
        assert!(text.contains(summary), "{text}");
        assert_eq!(text.matches("| 000 |").count(), 3, "the claim not run here has no row: {text}");
        assert!(text.contains("| not replicated (there: reproduced) |"), "{text}");
    }
}
