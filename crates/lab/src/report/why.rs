//! Why the seeds' results differ here, generated from a run's verdicts: each seed claim
//! whose difference an explain experiment put to the test, with every suspected cause (a
//! sweep that changes only it, its prediction written in the experiment file before the
//! run) and what the run says of it; then the claims that differ with no cause tested yet.
//!
//! A prediction names its seed claim with `explains = { claim = "<id>", cause = "…" }`;
//! `if_held = "rules_out"` marks a prediction that the cause changes nothing.

use crate::experiment::claim::{Claim, IfHeld};
use crate::experiment::Experiment;
use crate::judge::verdict::{Outcome, SizeCall, Verdict};
use crate::report::render::{self, Block};
use crate::report::summary::Category;

/// What a run says of one suspected cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finding {
    /// Its prediction held: the cause accounts for the seed's result.
    Explains,
    /// Held in direction, but wholly outside the seed's size.
    ExplainsDirection,
    /// Its prediction failed: the cause does not account for it.
    DoesNotExplain,
    /// Its prediction that the cause changes nothing held.
    RuledOut,
    /// Its prediction that the cause changes nothing failed.
    NotRuledOut,
    /// Too noisy to tell, or too few clean repeats.
    Undecided,
    /// Its sweep did not run here.
    NotRun,
    /// The lab's method cannot test the prediction (its design decides it).
    Untestable,
    /// Its load generator, not the server, was the limit: the sweep measured the client.
    ClientBound,
    /// The run's machine has fewer CPUs than the sweep needs to change only its cause.
    TooFewCpus,
}

impl Finding {
    /// What `v`, the verdict on a prediction, says of its cause; `fits` is false when the
    /// run's machine is too small for the sweep to change only that cause.
    pub fn of(if_held: IfHeld, v: &Verdict, fits: bool) -> Finding {
        match (if_held, v.outcome) {
            (_, Outcome::NotMeasured | Outcome::NotTestable) => Finding::NotRun,
            (_, Outcome::Untestable) => Finding::Untestable,
            _ if !fits => Finding::TooFewCpus,
            (_, Outcome::ClientBound) => Finding::ClientBound,
            (_, Outcome::Inconclusive) => Finding::Undecided,
            (IfHeld::Explains, Outcome::Reproduced) if v.size == SizeCall::Outside => Finding::ExplainsDirection,
            (IfHeld::Explains, Outcome::Reproduced) => Finding::Explains,
            (IfHeld::Explains, Outcome::NotReproduced | Outcome::Level) => Finding::DoesNotExplain,
            (IfHeld::RulesOut, Outcome::Reproduced) => Finding::RuledOut,
            (IfHeld::RulesOut, Outcome::NotReproduced | Outcome::Level) => Finding::NotRuledOut,
        }
    }

    /// The finding for a seed claim that fared `here` as it did: where its direction already
    /// reproduced, the difference is the size, and a cause that gives only the direction
    /// does not explain it.
    fn given(self, here: Category) -> Finding {
        match self {
            Finding::ExplainsDirection if here == Category::DirectionOnly => Finding::DoesNotExplain,
            f => f,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Finding::Explains => "explains it",
            Finding::ExplainsDirection => "explains its direction, not the seed's size",
            Finding::DoesNotExplain => "does not explain it",
            Finding::RuledOut => "ruled out (it changes nothing)",
            Finding::NotRuledOut => "not ruled out (it changes the result)",
            Finding::Undecided => "undecided",
            Finding::NotRun => "not run",
            Finding::Untestable => "not testable by this method",
            Finding::ClientBound => "undecided (client-bound: its load generator was the limit)",
            Finding::TooFewCpus => "not testable on this run's machine",
        }
    }
}

/// What the causes tested for one claim add up to, given how the claim fared here (`seed`).
fn conclusion(seed: Category, findings: &[Finding]) -> &'static str {
    let any = |f: Finding| findings.contains(&f);
    if seed == Category::ClientBound {
        "Client-bound here; this run's load generator, not the server, was the limit at most of its points"
    } else if seed == Category::Untestable {
        "Not testable by this method here; the sweeps that each change one cause found"
    } else if !differs(seed) {
        "Nothing to explain (reproduced here); the sweeps check it under the seed's conditions"
    } else if any(Finding::Explains) {
        "Explained here"
    } else if any(Finding::ExplainsDirection) {
        "Explained in direction, not in size"
    } else if findings.iter().all(|f| matches!(f, Finding::DoesNotExplain | Finding::RuledOut)) {
        "No cause tested explains it"
    } else if any(Finding::NotRuledOut) {
        "Not explained yet; a cause not ruled out remains"
    } else {
        "Not decided by this run"
    }
}

/// One claim with its verdict, and its experiment's short id (`000`, as the verdict row
/// names it) and seed.
struct Row<'a> {
    exp: &'a str,
    seed: &'a str,
    claim: &'a Claim,
    verdict: &'a Verdict,
}

/// The section as Markdown: what `spidey lab --why RESULTS` prints. `verdicts` are the
/// verdicts on every claim of `exps`, in order (`report::verdict_rows`); `cores` is the CPU
/// count of the machine the run was measured on (0 when not recorded).
pub(crate) fn markdown(exps: &[Experiment], verdicts: &[(String, Verdict)], cores: usize) -> String {
    render::markdown(&blocks(exps, verdicts, cores))
}

/// The short form (`spidey lab --why RESULTS --brief`), for the README: how many seed
/// claims an explain experiment put to the test and what the run concluded of each, by
/// conclusion, counted from the same rows as [`markdown`]; then how many differ with no
/// cause tested. Empty when no claim has a tested cause or a difference.
pub(crate) fn brief(exps: &[Experiment], verdicts: &[(String, Verdict)], cores: usize) -> String {
    let claims = exps.iter().flat_map(|e| e.claims.iter().map(move |c| (e, c)));
    let rows: Vec<Row<'_>> = claims
        .zip(verdicts)
        .map(|((e, claim), (id, verdict))| Row { exp: id, seed: &e.seed, claim, verdict })
        .collect();
    let mut tested = 0;
    let mut by_conclusion: Vec<(&'static str, usize)> = Vec::new();
    let mut untested = 0;
    for seed in rows.iter().filter(|r| r.seed.starts_with("seeds/")) {
        let tests: Vec<&Row<'_>> = rows
            .iter()
            .filter(|r| r.claim.explains.as_ref().is_some_and(|x| Some(&x.claim) == seed.claim.id.as_ref()))
            .collect();
        let here = Category::of(seed.verdict);
        if tests.is_empty() {
            untested += usize::from(differs(here));
            continue;
        }
        tested += 1;
        let findings: Vec<Finding> = tests
            .iter()
            .filter_map(|t| {
                let x = t.claim.explains.as_ref()?;
                let fits = cores == 0 || x.needs_cpus.map_or(true, |n| cores >= n);
                Some(Finding::of(x.if_held, t.verdict, fits).given(here))
            })
            .collect();
        let said = conclusion(here, &findings);
        match by_conclusion.iter_mut().find(|(c, _)| *c == said) {
            Some((_, n)) => *n += 1,
            None => by_conclusion.push((said, 1)),
        }
    }
    if tested == 0 && untested == 0 {
        return String::new();
    }
    let counts: Vec<String> =
        by_conclusion.iter().map(|(c, n)| format!("{} {n}", c.split(';').next().unwrap_or(c).to_lowercase())).collect();
    format!(
        "The explain experiments put {tested} of the seeds' claims to the test, each suspected cause in a sweep that \
         changes only that cause, its prediction written before the run. What this run concludes, claims by \
         conclusion: {}. {untested} more claims differ from their seed with no cause tested yet. Each claim with its \
         causes and their numbers: [docs/lab.md](docs/lab.md#explanations-put-to-the-test) (generated by \
         `spidey lab --why RESULTS --brief`).\n",
        counts.join("; ")
    )
}

/// The section's paragraph and its list, one item per seed claim (none when no claim of
/// the experiments given has a tested cause or a difference).
pub(crate) fn blocks(exps: &[Experiment], verdicts: &[(String, Verdict)], cores: usize) -> Vec<Block> {
    let claims = exps.iter().flat_map(|e| e.claims.iter().map(move |c| (e, c)));
    let rows: Vec<Row<'_>> = claims
        .zip(verdicts)
        .map(|((e, claim), (id, verdict))| Row { exp: id, seed: &e.seed, claim, verdict })
        .collect();
    let seed_claims: Vec<&Row<'_>> = rows.iter().filter(|r| r.seed.starts_with("seeds/")).collect();
    let mut items = Vec::new();
    let mut untested = Vec::new();
    for seed in &seed_claims {
        let tests: Vec<&Row<'_>> = rows
            .iter()
            .filter(|r| r.claim.explains.as_ref().is_some_and(|x| Some(&x.claim) == seed.claim.id.as_ref()))
            .collect();
        if tests.is_empty() {
            if differs(Category::of(seed.verdict)) {
                untested.push(format!("{} “{}” ({})", seed.exp, seed.claim.text, seed.verdict.label()));
            }
            continue;
        }
        let here = Category::of(seed.verdict);
        let findings: Vec<Finding> = tests
            .iter()
            .filter_map(|t| Some((t.claim.explains.as_ref()?, t)))
            .map(|(x, t)| {
                let fits = cores == 0 || x.needs_cpus.map_or(true, |n| cores >= n);
                Finding::of(x.if_held, t.verdict, fits).given(here)
            })
            .collect();
        let causes: Vec<String> = tests.iter().zip(&findings).map(|(t, f)| cause(t, *f, cores)).collect();
        items.push(format!(
            "**{} “{}”** (here: {}, {}). {}: {}.",
            seed.exp,
            seed.claim.text,
            seed.verdict.label(),
            seed.verdict.here_brief,
            conclusion(here, &findings),
            causes.join("; ")
        ));
    }
    if !untested.is_empty() {
        items.push(format!("Differing from the seed, with no cause put to the test yet: {}.", untested.join("; ")));
    }
    if items.is_empty() {
        return Vec::new();
    }
    vec![Block::Para(INTRO.into()), Block::Bullets(items)]
}

const INTRO: &str = "Each seed claim an explain experiment put to the test, with its verdict here, then each \
suspected cause: a sweep that changes only that cause, its prediction written in the experiment file before the \
run, and what the run says of the cause (generated by `spidey lab --why RESULTS`).";

/// `a 1.5 ms round trip does not explain it (008: pooled 0.82× [0.75–0.88] …)`.
fn cause(t: &Row<'_>, f: Finding, cores: usize) -> String {
    let Some(x) = &t.claim.explains else { return String::new() };
    let mut s = format!("{}: {} ({}: {}", x.cause, f.words(), t.exp, t.verdict.here_brief);
    if f == Finding::TooFewCpus {
        s += &format!("; {cores} CPUs here, {} needed", x.needs_cpus.unwrap_or_default());
    }
    s += ")";
    if let (Finding::Undecided | Finding::NotRun | Finding::TooFewCpus | Finding::ClientBound, Some(needs)) =
        (f, &x.needs)
    {
        s += &format!("; to decide it: {needs}");
    }
    s
}

/// Whether a seed claim's verdict here is a difference from the seed worth explaining.
fn differs(here: Category) -> bool {
    matches!(here, Category::NotReproduced | Category::DirectionOnly | Category::Inconclusive | Category::Level)
}

/// Every `explains` names a claim `id` of another experiment, and no two claims share an id.
pub(crate) fn check_links(exps: &[Experiment]) -> anyhow::Result<()> {
    let ids: Vec<&String> = exps.iter().flat_map(|e| e.claims.iter().filter_map(|c| c.id.as_ref())).collect();
    for (i, id) in ids.iter().enumerate() {
        anyhow::ensure!(!ids[..i].contains(id), "claim id '{id}' is given twice");
    }
    for e in exps {
        for c in &e.claims {
            if let Some(x) = &c.explains {
                anyhow::ensure!(
                    ids.contains(&&x.claim),
                    "{}: claim '{}' explains '{}', which no claim is named",
                    e.id,
                    c.text,
                    x.claim
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::verdict::Outcome;

    fn verdict(outcome: Outcome, size: SizeCall) -> Verdict {
        Verdict::bare(outcome, size)
    }

    #[test]
    fn a_prediction_verdict_says_what_it_says_of_its_cause() {
        use Finding::*;
        use IfHeld::{Explains as E, RulesOut as R};
        let cases = [
            (E, Outcome::Reproduced, SizeCall::Consistent, Explains),
            (E, Outcome::Reproduced, SizeCall::NotStated, Explains),
            (E, Outcome::Reproduced, SizeCall::Outside, ExplainsDirection),
            (E, Outcome::NotReproduced, SizeCall::NotStated, DoesNotExplain),
            (E, Outcome::Level, SizeCall::Consistent, DoesNotExplain),
            (E, Outcome::Inconclusive, SizeCall::Unknown, Undecided),
            (E, Outcome::NotMeasured, SizeCall::Unknown, NotRun),
            (R, Outcome::Reproduced, SizeCall::NotStated, RuledOut),
            (R, Outcome::NotReproduced, SizeCall::NotStated, NotRuledOut),
            (R, Outcome::Inconclusive, SizeCall::NotStated, Undecided),
            (R, Outcome::NotTestable, SizeCall::NotStated, NotRun),
            (E, Outcome::ClientBound, SizeCall::NotStated, ClientBound),
            (R, Outcome::ClientBound, SizeCall::NotStated, ClientBound),
            (E, Outcome::Untestable, SizeCall::NotStated, Untestable),
            (R, Outcome::Untestable, SizeCall::Outside, Untestable),
        ];
        for (if_held, outcome, size, want) in cases {
            assert_eq!(Finding::of(if_held, &verdict(outcome, size), true), want, "{if_held:?} {outcome:?} {size:?}");
        }
        // On a machine too small for the sweep, whatever its verdict says: not testable there.
        for outcome in [Outcome::Reproduced, Outcome::NotReproduced, Outcome::Level, Outcome::Inconclusive] {
            let v = verdict(outcome, SizeCall::NotStated);
            assert_eq!(Finding::of(E, &v, false), TooFewCpus, "{outcome:?}");
        }
        assert_eq!(Finding::of(E, &verdict(Outcome::NotMeasured, SizeCall::Unknown), false), NotRun);
        // Where the seed claim's direction already reproduced here, only its size differs.
        assert_eq!(ExplainsDirection.given(Category::DirectionOnly), DoesNotExplain);
        assert_eq!(ExplainsDirection.given(Category::NotReproduced), ExplainsDirection);
        assert_eq!(Explains.given(Category::DirectionOnly), Explains);
    }

    #[test]
    fn the_causes_add_up_to_one_conclusion() {
        use Category::{DirectionOnly as Dir, NotReproduced as Not, Reproduced as Rep};
        use Finding::*;
        let cases: [(Category, &[Finding], &str); 11] = [
            (Not, &[DoesNotExplain, Explains, Undecided], "Explained here"),
            (Not, &[DoesNotExplain, ExplainsDirection], "Explained in direction, not in size"),
            (Not, &[DoesNotExplain, RuledOut, DoesNotExplain], "No cause tested explains it"),
            (Dir, &[DoesNotExplain, RuledOut], "No cause tested explains it"),
            (Not, &[DoesNotExplain, NotRuledOut], "Not explained yet; a cause not ruled out remains"),
            (Not, &[DoesNotExplain, Undecided], "Not decided by this run"),
            (Not, &[NotRun], "Not decided by this run"),
            (Not, &[DoesNotExplain, TooFewCpus], "Not decided by this run"),
            // A claim reproduced here has no difference to explain, whatever its sweeps say.
            (Rep, &[Explains], "Nothing to explain (reproduced here); the sweeps check it under the seed's conditions"),
            // A seed claim whose points measured the load generator is decided by nothing.
            (
                Category::ClientBound,
                &[Explains],
                "Client-bound here; this run's load generator, not the server, was the limit at most of its points",
            ),
            // Nor one the lab's method cannot test: what its causes' sweeps found follows.
            (
                Category::Untestable,
                &[Explains],
                "Not testable by this method here; the sweeps that each change one cause found",
            ),
        ];
        for (here, findings, want) in cases {
            assert_eq!(conclusion(here, findings), want, "{here:?} {findings:?}");
        }
    }

    #[test]
    fn the_built_in_explanations_name_existing_claims() {
        let sources = crate::experiment::sources::find(None, &[]).unwrap();
        let exps: Vec<Experiment> = sources.iter().map(|s| Experiment::parse(s).unwrap()).collect();
        check_links(&exps).unwrap();
        let linked = exps.iter().flat_map(|e| &e.claims).filter(|c| c.explains.is_some()).count();
        assert!(linked >= 15, "only {linked} predictions name the seed claim they explain");
    }

    #[test]
    fn a_dangling_or_doubled_id_is_refused() {
        let exp = |id: &str, claims: &str| {
            let text = format!("id = \"{id}\"\ntitle = \"t\"\nseed = \"seeds/{id}\"\nquestion = \"q\"\n{claims}");
            Experiment::parse(&crate::experiment::sources::Source { name: format!("{id}.toml"), text }).unwrap()
        };
        let named = "[[claims]]\nkind = \"not_testable\"\nreason = \"r\"\ntext = \"a\"\nsource = \"000:1\"\nquote = \"q\"\nid = \"x\"\n";
        let explains = "[[claims]]\nkind = \"not_testable\"\nreason = \"r\"\ntext = \"b\"\nsource = \"000:1\"\nquote = \"q\"\nexplains = { claim = \"y\", cause = \"c\" }\n";
        assert!(check_links(&[exp("000", named)]).is_ok());
        assert!(check_links(&[exp("000", named), exp("001", named)]).is_err(), "an id given twice");
        assert!(check_links(&[exp("000", named), exp("008", explains)]).is_err(), "explains a missing id");
    }
}
