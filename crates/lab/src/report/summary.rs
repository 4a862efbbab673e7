//! The report's opening paragraph: how the seeds' claims fared, counted from the verdicts.

use crate::judge::verdict::{Outcome, SizeCall, Verdict};

/// Where a verdict falls in the summary: each claim in exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Category {
    Reproduced,
    /// Reproduced in direction, with an interval wholly outside the stated size's band.
    DirectionOnly,
    Level,
    NotReproduced,
    Inconclusive,
    /// The load generator, not the server, was the limit at most of its points.
    ClientBound,
    NotTestable,
    /// The lab's method cannot test it: its design decides it, or the seed's figures
    /// cannot be what they say.
    Untestable,
    ByConstruction,
    NotMeasured,
}

/// The categories in the order the summary names them.
pub(crate) const ORDER: [Category; 10] = [
    Category::Reproduced,
    Category::DirectionOnly,
    Category::Level,
    Category::NotReproduced,
    Category::Inconclusive,
    Category::ClientBound,
    Category::NotTestable,
    Category::Untestable,
    Category::ByConstruction,
    Category::NotMeasured,
];

impl Category {
    pub fn of(v: &Verdict) -> Category {
        match (v.outcome, v.size, v.by_construction.is_some()) {
            (Outcome::NotTestable, ..) => Category::NotTestable,
            (Outcome::Untestable, ..) => Category::Untestable,
            (Outcome::NotMeasured, ..) => Category::NotMeasured,
            (_, _, true) => Category::ByConstruction,
            (Outcome::ClientBound, ..) => Category::ClientBound,
            (Outcome::Reproduced, SizeCall::Outside, _) => Category::DirectionOnly,
            (Outcome::Reproduced, ..) => Category::Reproduced,
            (Outcome::Level, ..) => Category::Level,
            (Outcome::NotReproduced, ..) => Category::NotReproduced,
            (Outcome::Inconclusive, ..) => Category::Inconclusive,
        }
    }

    /// How the summary says it, after a count.
    pub fn words(self) -> &'static str {
        match self {
            Category::Reproduced => "reproduced",
            Category::DirectionOnly => "reproduced in direction but not in size",
            Category::Level => "level (evidence of no difference)",
            Category::NotReproduced => "not reproduced",
            Category::Inconclusive => "inconclusive",
            Category::ClientBound => "client-bound (the load generator was the limit)",
            Category::NotTestable => "not testable here",
            Category::Untestable => "not testable by this method",
            Category::ByConstruction => "true by construction",
            Category::NotMeasured => "not measured",
        }
    }

    /// The verdict cell's CSS class in the HTML report.
    pub fn class(self) -> &'static str {
        match self {
            Category::Reproduced => "v-reproduced",
            Category::DirectionOnly => "v-direction",
            Category::Level => "v-level",
            Category::NotReproduced => "v-not",
            Category::Inconclusive => "v-inconclusive",
            Category::ClientBound => "v-client",
            Category::NotTestable | Category::Untestable | Category::ByConstruction | Category::NotMeasured => {
                "v-muted"
            }
        }
    }

    /// Whether claims of this category count as evidence for or against the seeds.
    pub fn is_evidence(self) -> bool {
        !matches!(
            self,
            Category::ClientBound
                | Category::NotTestable
                | Category::Untestable
                | Category::ByConstruction
                | Category::NotMeasured
        )
    }
}

/// How many verdicts fall in each category, in [`ORDER`].
pub(crate) fn counts(verdicts: &[&Verdict]) -> [(Category, usize); 10] {
    ORDER.map(|c| (c, verdicts.iter().filter(|v| Category::of(v) == c).count()))
}

/// The summary sentence: `31 claims of the seeds checked: 12 reproduced, … Not counted as
/// evidence: …`; categories with no claim are left out.
pub(crate) fn text(verdicts: &[&Verdict], quick: bool) -> String {
    let counts = counts(verdicts);
    let list = |evidence: bool| {
        counts
            .iter()
            .filter(|(c, n)| c.is_evidence() == evidence && *n > 0)
            .map(|(c, n)| format!("{n} {}", c.words()))
            .collect::<Vec<_>>()
    };
    let evidence: usize = counts.iter().filter(|(c, _)| c.is_evidence()).map(|(_, n)| n).sum();
    let mut s = format!(
        "This {} checked {} claims of the seed studies against its own measurements. As evidence, {evidence}: {}.",
        if quick { "quick run (a smoke test, not a measurement to quote)" } else { "run" },
        verdicts.len(),
        or_none(list(true))
    );
    let others = list(false);
    if !others.is_empty() {
        s += &format!(" Not counted as evidence: {}.", or_none(others));
    }
    let bound = counts.iter().find(|(c, _)| *c == Category::ClientBound).map_or(0, |(_, n)| *n);
    if let Some(note) = cannot_drive(bound) {
        s += &format!(" {note}");
    }
    let chance = 0.025 * evidence as f64;
    s += &format!(
        " Under no real difference a claim is called reproduced at most 2.5% of the time, so about {chance:.1} of the {evidence} could be chance."
    );
    s
}

/// What the report says when `bound` claims were client-bound: this machine could not drive
/// the server there. None when none was.
pub(crate) fn cannot_drive(bound: usize) -> Option<String> {
    (bound > 0).then(|| {
        format!(
            "This machine could not drive the server in {bound} claim{s}: the load generator, on the CPUs not \
             given to the server, was saturated while the server idled; {they} need{v} a machine with more CPUs.",
            s = if bound == 1 { "" } else { "s" },
            they = if bound == 1 { "it" } else { "they" },
            v = if bound == 1 { "s" } else { "" },
        )
    })
}

/// The summary's last sentence: where to read on.
pub(crate) const READ_ON: &str = "The table below gives each claim, the seed's number and this run's, and links each claim to the sweep it is measured in; the method is in the appendix.";

/// The claims counted as evidence, seed by seed: `000: 3 of 6 reproduced (2 in direction
/// only), 2 not reproduced`, each seed's id written by `link`; seeds with no such claim left
/// out.
pub(crate) fn per_seed(rows: &[(String, &Verdict)], link: impl Fn(&str) -> String) -> String {
    let mut seeds: Vec<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
    seeds.dedup();
    let parts: Vec<String> = seeds
        .iter()
        .filter_map(|seed| {
            let cats: Vec<Category> = rows
                .iter()
                .filter(|(id, _)| id == seed)
                .map(|(_, v)| Category::of(v))
                .filter(|c| c.is_evidence())
                .collect();
            if cats.is_empty() {
                return None;
            }
            let n = |c: Category| cats.iter().filter(|x| **x == c).count();
            let direction = n(Category::DirectionOnly);
            let mut part =
                format!("{}: {} of {} reproduced", link(seed), n(Category::Reproduced) + direction, cats.len());
            if direction > 0 {
                part += &format!(" ({direction} in direction only)");
            }
            for c in [Category::NotReproduced, Category::Level, Category::Inconclusive] {
                if n(c) > 0 {
                    part += &format!(", {} {}", n(c), c.words());
                }
            }
            Some(part)
        })
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!("Seed by seed: {}.", parts.join("; "))
}

fn or_none(items: Vec<String>) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(outcome: Outcome, size: SizeCall, by_construction: bool) -> Verdict {
        Verdict {
            claim: "c".into(),
            source: "000:1".into(),
            seed: "–".into(),
            here: "–".into(),
            seed_brief: "–".into(),
            here_brief: "–".into(),
            size_text: "–".into(),
            by_construction: by_construction.then(|| "it must".into()),
            ..Verdict::bare(outcome, size)
        }
    }

    /// Each verdict lands in one category, and the summary's numbers are those counts.
    #[test]
    fn summary_counts_are_computed_from_the_verdicts() {
        use Outcome::*;
        use SizeCall::*;
        let set = [
            (verdict(Reproduced, NotStated, false), Category::Reproduced),
            (verdict(Reproduced, Consistent, false), Category::Reproduced),
            (verdict(Reproduced, Outside, false), Category::DirectionOnly),
            (verdict(Level, NotStated, false), Category::Level),
            (verdict(NotReproduced, Outside, false), Category::NotReproduced),
            (verdict(NotReproduced, NotStated, false), Category::NotReproduced),
            (verdict(NotReproduced, NotStated, false), Category::NotReproduced),
            (verdict(Inconclusive, Unknown, false), Category::Inconclusive),
            (verdict(NotTestable, NotStated, false), Category::NotTestable),
            (verdict(Untestable, NotStated, false), Category::Untestable),
            (verdict(ClientBound, NotStated, false), Category::ClientBound),
            (verdict(Reproduced, NotStated, true), Category::ByConstruction),
            (verdict(NotMeasured, NotStated, true), Category::NotMeasured),
        ];
        for (v, want) in &set {
            assert_eq!(Category::of(v), *want, "{:?} {:?} {:?}", v.outcome, v.size, v.by_construction);
        }
        let all: Vec<&Verdict> = set.iter().map(|(v, _)| v).collect();
        let got: Vec<usize> = counts(&all).iter().map(|(_, n)| *n).collect();
        assert_eq!(got, [2, 1, 1, 3, 1, 1, 1, 1, 1, 1]);
        let text = text(&all, false);
        for part in [
            "checked 13 claims",
            "As evidence, 8: 2 reproduced, 1 reproduced in direction but not in size, 1 level (evidence of no difference), 3 not reproduced, 1 inconclusive.",
            "Not counted as evidence: 1 client-bound (the load generator was the limit), 1 not testable here, 1 not testable by this method, 1 true by construction, 1 not measured.",
            "This machine could not drive the server in 1 claim: the load generator, on the CPUs not given to the server, was saturated while the server idled; it needs a machine with more CPUs.",
            "about 0.2 of the 8",
        ] {
            assert!(text.contains(part), "missing {part:?} in {text}");
        }
        // A category with no claim is not named.
        let text = super::text(&all[..2], true);
        assert!(text.contains("As evidence, 2: 2 reproduced.") && !text.contains("Not counted"), "{text}");
        assert!(!text.contains("could not drive"), "{text}");
        assert!(text.contains("quick run"), "{text}");
    }

    /// Each seed's line counts its own claims: moving one verdict from one outcome to
    /// another changes that seed's numbers.
    #[test]
    fn per_seed_counts_each_seeds_claims() {
        use Outcome::*;
        use SizeCall::*;
        let v = [
            verdict(Reproduced, NotStated, false),
            verdict(Reproduced, Outside, false),
            verdict(NotReproduced, NotStated, false),
            verdict(Level, NotStated, false),
            verdict(Reproduced, NotStated, true),
            verdict(NotTestable, NotStated, false),
        ];
        let rows: Vec<(String, &Verdict)> =
            ["000", "000", "000", "002", "001", "003"].iter().map(|s| s.to_string()).zip(v.iter()).collect();
        let link = |s: &str| format!("[{s}](#{s})");
        assert_eq!(
            per_seed(&rows, link),
            "Seed by seed: [000](#000): 2 of 3 reproduced (1 in direction only), 1 not reproduced; [002](#002): 0 of 1 reproduced, 1 level (evidence of no difference)."
        );
        let flipped = [verdict(NotReproduced, NotStated, false)];
        let rows: Vec<(String, &Verdict)> = vec![("000".into(), &flipped[0])];
        assert_eq!(per_seed(&rows, |s: &str| s.to_string()), "Seed by seed: 000: 0 of 1 reproduced, 1 not reproduced.");
    }
}
