//! The report: one document model ([`crate::report::render`]) rendered twice, as `report.md`
//! (plots as SVG files beside it) and as a self-contained `report.html`. It opens with a
//! summary of the verdicts and the verdict table, then each experiment's tables, findings
//! and plots, then the robustness experiment, and ends with the method and the machine.
//!
//! This folder is the last of the crate's stages: it reads the experiment, run and judge
//! stages, and none of them reads it.

pub(crate) mod cdf;
pub(crate) mod chart;
pub(crate) mod machine;
pub(crate) mod plot;
pub(crate) mod prose;
pub(crate) mod render;
pub(crate) mod replication;
pub(crate) mod robustness_report;
pub(crate) mod sizes;
pub(crate) mod summary;
pub(crate) mod table;
pub(crate) mod unmeasured;
pub(crate) mod versus;
pub(crate) mod why;

use crate::experiment::plan;
use crate::experiment::Experiment;
use crate::judge::finding;
use crate::judge::sample;
use crate::judge::verdict;
use crate::run::out_dir::OutDir;
use crate::run::results::{Outcome, Record};
use crate::run::runner;
use machine::Machine;
use render::{slug, Block, Table};
use sizes::fill;
use std::collections::{BTreeSet, HashMap};
use summary::Category;

/// A section written elsewhere (the robustness experiment's), as Markdown with its SVGs.
pub(crate) struct Section {
    pub markdown: String,
    /// (file name in the output directory, SVG document).
    pub svgs: Vec<(String, String)>,
}

/// Writes `report.md`, `report.html` and `plots/*.svg` into `out`.
pub(crate) fn write(
    out: &OutDir,
    exps: &[Experiment],
    quick: bool,
    records: &HashMap<String, Record>,
    machine: &Machine,
    keep_disturbed: bool,
    extra: Option<Section>,
) -> anyhow::Result<()> {
    let plots = out.subdir(render::PLOTS)?;
    // The SVGs of an earlier report go, so none outlives its data.
    plots.remove_by_extension("svg")?;
    let doc = document(exps, quick, records, machine, keep_disturbed, extra);
    for block in &doc {
        if let Block::Plot { name, svg, .. } = block {
            plots.write(name, svg)?;
        }
    }
    out.write("report.md", render::markdown(&doc))?;
    out.write("report.html", render::html(&doc))
}

fn document(
    exps: &[Experiment],
    quick: bool,
    records: &HashMap<String, Record>,
    machine: &Machine,
    keep_disturbed: bool,
    extra: Option<Section>,
) -> Vec<Block> {
    let mut doc = vec![Block::Heading(1, "Spidey lab report".into())];
    doc.extend(opening(exps, quick, records, machine.cores));
    let mut extra = extra.map(|s| Block::Markdown { text: demote(&s.markdown), svgs: s.svgs });
    for exp in exps {
        doc.extend(experiment(exp, quick, records));
        // The robustness experiment's own section goes under its heading.
        if exp.robustness.is_some() {
            doc.extend(extra.take());
        }
    }
    doc.extend(extra);
    doc.extend(appendix(exps, quick, records, machine, keep_disturbed));
    doc
}

/// Markdown with each heading one level down, to sit under an experiment's heading.
fn demote(md: &str) -> String {
    md.lines().map(|l| if l.starts_with('#') { format!("#{l}\n") } else { format!("{l}\n") }).collect()
}

/// The heading of an experiment's section (the verdict table links to it).
fn experiment_heading(exp: &Experiment) -> String {
    format!("{}: {}", exp.id, exp.title)
}

/// The summary paragraph and the verdict table, each claim linked to its experiment.
fn opening(exps: &[Experiment], quick: bool, records: &HashMap<String, Record>, cores: usize) -> Vec<Block> {
    let rows = verdict_rows(exps, quick, records, cores);
    if rows.is_empty() {
        return vec![Block::Para(format!(
            "A {}: no seed claims are checked in it.",
            if quick { "quick run" } else { "run" }
        ))];
    }
    // The summary counts the claims the tables list (a quick run's folded ones apart).
    let verdicts: Vec<&verdict::Verdict> = rows.iter().map(|(_, v)| v).filter(|v| listed(v, quick)).collect();
    let anchor =
        |id: &str| exps.iter().find(|e| e.id.split('-').next() == Some(id)).map(|e| slug(&experiment_heading(e)));
    let link = |id: &str| anchor(id).map_or_else(|| id.to_string(), |a| format!("[{id}](#{a})"));
    let by_seed: Vec<(String, &verdict::Verdict)> =
        rows.iter().filter(|(_, v)| listed(v, quick)).map(|(id, v)| (id.clone(), v)).collect();
    // A quick run lists the claims it measured; the rest are folded into a line per
    // experiment (a full run lists every claim).
    let folded = if quick { unmeasured::fold(exps, &rows, quick, records) } else { Vec::new() };
    let mut doc = vec![
        Block::Para(format!(
            "{} {} {}{}",
            summary::text(&verdicts, quick),
            summary::per_seed(&by_seed, link),
            summary::READ_ON,
            unmeasured::summary(&folded, records).map_or_else(String::new, |s| format!(" {s}"))
        )),
        Block::Heading(2, "Verdicts on the seeds' claims".into()),
    ];
    let sections = claim_sections(exps, quick, records);
    let shown: Vec<(&(String, verdict::Verdict), Option<String>)> =
        rows.iter().zip(sections).filter(|((_, v), _)| listed(v, quick)).collect();
    let cells: Vec<Vec<String>> = shown
        .iter()
        .map(|((id, v), section)| {
            let seed = link(id);
            let line = v.source.split(' ').next().unwrap_or_default();
            // The claim's words link to the sweep it is measured in.
            let words = match section {
                Some(anchor) => format!("[{}](#{anchor})", v.claim),
                None => v.claim.clone(),
            };
            let claim = format!("{} ({line})", claim_cell(v).replacen(&v.claim, &words, 1));
            vec![seed, claim, v.seed_brief.clone(), v.here_brief.clone(), v.label()]
        })
        .collect();
    doc.push(Block::Table(Table {
        headers: [
            "Seed",
            "Claim (the seed's file:line)",
            "Seed's number",
            "Here (pooled ratio [95% interval])",
            "Verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows: cells,
        classes: Some((4, classes(shown.iter().map(|((_, v), _)| v)))),
    }));
    if !folded.is_empty() {
        doc.push(Block::Para("Not measured in this quick run, experiment by experiment:".into()));
        doc.push(Block::Bullets(folded.iter().map(unmeasured::Folded::line).collect()));
    }
    doc.push(Block::Para(
        "The seed's words, each point's numbers and the stated sizes are in the appendix's full table; how a verdict is reached is in the appendix too.".into(),
    ));
    doc.extend(contradictions(&rows));
    let why = crate::report::why::blocks(exps, &rows, cores);
    if !why.is_empty() {
        doc.push(Block::Heading(2, "Why the results differ from the seeds".into()));
        doc.extend(why);
    }
    doc
}

/// Whether the report's tables list a claim: a quick run's claims without the measurements
/// for a verdict are folded
/// into a line per experiment ([`unmeasured`]) instead.
fn listed(v: &verdict::Verdict, quick: bool) -> bool {
    !(quick && unmeasured::unmeasured(v))
}

/// The claim as the verdict table states it.
fn claim_cell(v: &verdict::Verdict) -> String {
    let mut claim = v.claim.clone();
    if let Some(why) = &v.by_construction {
        claim += &format!(" (true by construction: {why})");
    }
    if let Some(u) = &v.untestable {
        claim += &format!(" (not testable by this method: {})", u.reason);
    }
    if v.contradicts.is_some() {
        claim += " (the seed contradicts itself here: see below)";
    }
    claim
}

/// Each verdict's CSS class, for the verdict column.
fn classes<'a>(verdicts: impl Iterator<Item = &'a verdict::Verdict>) -> Vec<&'static str> {
    verdicts.map(|v| Category::of(v).class()).collect()
}

fn contradictions(rows: &[(String, verdict::Verdict)]) -> Vec<Block> {
    let items: Vec<String> = rows
        .iter()
        .filter_map(|(id, v)| v.contradicts.as_ref().map(|c| format!("{id}: “{}” ({}): {c}", v.claim, v.source)))
        .collect();
    if items.is_empty() {
        return Vec::new();
    }
    vec![
        Block::Para("The seeds' internal contradictions (both statements are checked above):".into()),
        Block::Bullets(items),
    ]
}

/// How the numbers were made and how verdicts are reached, and the machine.
fn appendix(
    exps: &[Experiment],
    quick: bool,
    records: &HashMap<String, Record>,
    machine: &Machine,
    keep_disturbed: bool,
) -> Vec<Block> {
    let mut doc = vec![
        Block::Heading(2, "Appendix: method".into()),
        Block::Para(method(quick, keep_disturbed)),
        Block::Para(rule()),
    ];
    let rows: Vec<(String, verdict::Verdict)> =
        verdict_rows(exps, quick, records, machine.cores).into_iter().filter(|(_, v)| listed(v, quick)).collect();
    if !rows.is_empty() {
        doc.push(Block::Heading(2, "Appendix: the verdicts in full".into()));
        let mut table = full_table(&rows);
        table.classes = Some((6, classes(rows.iter().map(|(_, v)| v))));
        doc.push(Block::Table(table));
    }
    doc.push(Block::Heading(2, "Appendix: machine".into()));
    doc.push(Block::Table(machine.table()));
    doc
}

/// How the numbers were made: `docs/lab-method/method.md`, filled for a quick or a full
/// run, made with --keep-disturbed or not.
fn method(quick: bool, keep_disturbed: bool) -> String {
    prose::fill(
        prose::METHOD,
        &[
            (
                "kind",
                &if quick {
                    "quick run (reduced sweeps: a smoke test, not a measurement to quote)"
                } else {
                    "full run"
                },
            ),
            ("other", &crate::run::cpu::OTHER_BUSY_LIMIT_PCT),
            ("floor", &if quick { runner::MIN_QUICK_POINT } else { runner::MIN_POINT }.as_secs_f64()),
            ("extra", &runner::EXTRA_TRIES),
            ("clean", &sample::MIN_CLEAN_REPEATS),
            (
                "keep",
                &if keep_disturbed {
                    " (this run was made with --keep-disturbed: every repeat was measured once and kept, disturbed or not)"
                } else {
                    ""
                },
            ),
            ("steal", &crate::run::cpu::STEAL_LIMIT_PCT),
            ("tick_min", &crate::run::cpu::TICK_MIN_S),
            ("steal_min", &crate::run::cpu::STEAL_MIN_S),
            ("repeats", &if quick { "3" } else { "5 (or more)" }),
        ],
    )
}

/// How a verdict is reached, and when a claim is client-bound: `docs/lab-method/rule.md`.
fn rule() -> String {
    prose::fill(
        prose::RULE,
        &[("busy", &crate::run::cpu::CLIENT_BUSY_PCT), ("idle", &crate::run::cpu::SERVER_IDLE_PCT)],
    )
}

/// An experiment's seed as the report names it: `seeds/000 (…)`, a path the reader does
/// not have, as "Seed 000 (…)", the study in docs/lab.md's table of seeds.
fn seed_line(seed: &str) -> String {
    match seed.strip_prefix("seeds/") {
        Some(rest) => format!("Seed {rest}"),
        None => format!("Seed: {seed}"),
    }
}

fn experiment(exp: &Experiment, quick: bool, records: &HashMap<String, Record>) -> Vec<Block> {
    let mut doc = vec![
        Block::Heading(2, experiment_heading(exp)),
        Block::Para(format!("{}. Question: {}", seed_line(&exp.seed), exp.question)),
    ];
    for a in plan::active(exp, quick) {
        let samples = sample::samples(&exp.id, &a, quick, records);
        let ran = sizes::measured(&a, &samples);
        doc.push(Block::Heading(3, fill(&a.sweep.title, &ran)));
        doc.extend(table::build(&a, &samples).into_iter().map(Block::Table));
        if let Some(v) = &a.sweep.table.versus {
            doc.push(Block::Para(format!(
                "Each server `X{suffix}` beside `X`, at the same workload and client: medians with their intervals, and {name}: the ratio per round (repeat r of one against repeat r of the other), the median of those ratios and its order-statistic interval, labelled with its coverage.",
                suffix = v.suffix,
                name = v.name
            )));
            let (headers, rows) = versus::build(v, &samples);
            let groups: Vec<usize> = v.metrics.iter().map(|_| 3).chain([1]).collect();
            doc.extend(table::fit(Table::new(headers, rows), 3, &groups).into_iter().map(Block::Table));
        }
        if let Some(note) = &a.sweep.seed_note {
            doc.push(Block::Para(format!("About the seed's numbers: {}", fill(note, &ran))));
        }
        let findings: Vec<String> =
            a.sweep.findings.iter().map(|f| format!("Finding: {}", finding::compute(f, &samples))).collect();
        if !findings.is_empty() {
            doc.push(Block::Bullets(findings));
        }
        for (i, spec) in a.sweep.plots.iter().enumerate() {
            let title = fill(&spec.title, &ran);
            if let Some(svg) = plot::svg(spec, &title, &samples, a.sweep) {
                let name = format!("{}-{}-{}.svg", exp.id, a.sweep.name, i + 1);
                doc.push(Block::Plot { name, title, svg });
            }
        }
        for (i, c) in cdf::plots(exp, &a, quick, records).into_iter().enumerate() {
            let name = format!("{}-{}-cdf-{}.svg", exp.id, a.sweep.name, i + 1);
            doc.push(Block::Plot { name, title: c.title, svg: c.svg });
        }
        let notes = notes(&exp.id, &a.sweep.name, quick, records);
        if !notes.is_empty() {
            doc.push(Block::Bullets(notes));
        }
    }
    doc
}

/// The verdict table: every claim of every experiment, checked against its sweep; `cores`
/// is the CPU count of the machine the records were measured on ([`verdict::check`]).
pub(crate) fn verdict_rows(
    exps: &[Experiment],
    quick: bool,
    records: &HashMap<String, Record>,
    cores: usize,
) -> Vec<(String, verdict::Verdict)> {
    let mut rows = Vec::new();
    for exp in exps {
        let active = plan::active(exp, quick);
        let sweeps: Vec<(&plan::Active<'_>, Vec<sample::Sample>)> =
            active.iter().map(|a| (a, sample::samples(&exp.id, a, quick, records))).collect();
        for claim in &exp.claims {
            let sweep = sweeps.iter().find(|(a, _)| a.sweep.name == claim.sweep()).map(|(a, s)| (*a, s.as_slice()));
            let id = exp.id.split('-').next().unwrap_or(&exp.id).to_string();
            let mut v = verdict::check(claim, sweep, cores);
            if let Some((a, s)) = sweep {
                v.claim = fill(&v.claim, &sizes::measured(a, s));
            }
            rows.push((id, v));
        }
    }
    rows
}

/// Whether each claim, in [`verdict_rows`]' order, is a seed study's: one of an experiment
/// none of whose claims explains another (an explain experiment's are its predictions and
/// controls).
fn seed_claims(exps: &[Experiment]) -> Vec<bool> {
    exps.iter()
        .flat_map(|exp| {
            let seed = exp.claims.iter().all(|c| c.explains.is_none());
            exp.claims.iter().map(move |_| seed)
        })
        .collect()
}

/// The replication section (`spidey lab --verdicts RUN --replicate OTHER`): every claim
/// judged on `run`'s records and on `other`'s, each given as its quick flag, records and
/// machine's CPUs ([`verdict_rows`]); `other_name` says which run the other is.
pub(crate) fn replication_markdown(
    exps: &[Experiment],
    run: (bool, &HashMap<String, Record>, usize),
    other: (bool, &HashMap<String, Record>, usize),
    other_name: &str,
) -> String {
    let rows = verdict_rows(exps, run.0, run.1, run.2);
    let other_rows = verdict_rows(exps, other.0, other.1, other.2);
    replication::markdown(&rows, &other_rows, &seed_claims(exps), other_name)
}

/// The anchor of the sweep each claim is measured in, in [`verdict_rows`]' order (None where
/// the sweep does not run in this kind of run).
fn claim_sections(exps: &[Experiment], quick: bool, records: &HashMap<String, Record>) -> Vec<Option<String>> {
    let mut out = Vec::new();
    for exp in exps {
        let active = plan::active(exp, quick);
        for claim in &exp.claims {
            out.push(active.iter().find(|a| a.sweep.name == claim.sweep()).map(|a| {
                let samples = sample::samples(&exp.id, a, quick, records);
                slug(&fill(&a.sweep.title, &sizes::measured(a, &samples)))
            }));
        }
    }
    out
}

/// What a user must be told when repeats were left out as disturbed: how many of how many,
/// why, and what to do; `None` when none was. (A point whose repeats are left out gets no
/// verdict: on a busy machine most of a quick run can end "inconclusive (insufficient clean
/// repeats …)" for this reason.)
pub(crate) fn excluded_note(records: &HashMap<String, Record>) -> Option<String> {
    let measured: Vec<&crate::run::measurement::Measurement> =
        records.values().filter_map(|r| r.measurement.as_ref()).collect();
    let excluded = measured.iter().filter(|m| m.excluded).count();
    (excluded > 0).then(|| {
        format!(
            "{excluded} of {} measured repeats were left out as disturbed: {} through every try, and a point left \
             with too few clean repeats is left out of its claims, and a claim left with none gets no verdict \
             (\"inconclusive (insufficient clean repeats …)\"). Run again on a quieter machine, or with \
             --keep-disturbed to keep every repeat (marked in the report).",
            measured.len(),
            crate::run::cpu::disturbance_rule()
        )
    })
}

/// The verdict section as Markdown, the method first: what `spidey lab --verdicts` prints;
/// `cores` as in [`verdict_rows`].
pub(crate) fn verdicts_markdown(
    exps: &[Experiment],
    quick: bool,
    records: &HashMap<String, Record>,
    cores: usize,
) -> String {
    render::markdown(&verdicts(exps, quick, records, cores))
}

fn verdicts(exps: &[Experiment], quick: bool, records: &HashMap<String, Record>, cores: usize) -> Vec<Block> {
    let rows = verdict_rows(exps, quick, records, cores);
    if rows.is_empty() {
        return Vec::new();
    }
    let mut counts: Vec<(String, usize)> = Vec::new();
    for (_, v) in rows.iter().filter(|(_, v)| v.is_evidence()) {
        match counts.iter_mut().find(|(l, _)| *l == v.label()) {
            Some(c) => c.1 += 1,
            None => counts.push((v.label(), 1)),
        }
    }
    let evidence: usize = counts.iter().map(|c| c.1).sum();
    let constructed = rows.iter().filter(|(_, v)| v.by_construction.is_some()).count();
    let untestable = rows.iter().filter(|(_, v)| v.outcome == verdict::Outcome::NotTestable).count();
    let by_method = rows.iter().filter(|(_, v)| v.outcome == verdict::Outcome::Untestable).count();
    let unmeasured = rows.iter().filter(|(_, v)| v.outcome == verdict::Outcome::NotMeasured).count();
    let bound = rows.iter().filter(|(_, v)| v.outcome == verdict::Outcome::ClientBound).count();
    let summary = format!(
        "{} claims. As evidence, {evidence}: {}. Not counted: {bound} client-bound, {constructed} true by construction, {untestable} not testable here, {by_method} not testable by this method, {unmeasured} not measured.",
        rows.len(),
        counts.iter().map(|(l, n)| format!("{n} {l}")).collect::<Vec<_>>().join(", ")
    );
    let summary = match summary::cannot_drive(bound) {
        Some(note) => format!("{summary} {note}"),
        None => summary,
    };
    let summary = match excluded_note(records) {
        Some(note) => format!("{summary} {note}"),
        None => summary,
    };
    let mut doc = vec![
        Block::Heading(2, "Verdicts on the seeds' claims".into()),
        Block::Para(rule()),
        Block::Table(full_table(&rows)),
        Block::Para(summary),
    ];
    doc.extend(contradictions(&rows));
    doc
}

/// The verdict table with every column: the seed's words, and each point's numbers.
fn full_table(rows: &[(String, verdict::Verdict)]) -> Table {
    let headers = [
        "Seed",
        "Claim",
        "Where the seed says it",
        "Seed's number",
        "Here (pooled ratio [95% interval]; per point, ratio of medians)",
        "Stated size",
        "Verdict",
    ];
    let cells = rows
        .iter()
        .map(|(id, v)| {
            vec![
                id.clone(),
                claim_cell(v),
                v.source.clone(),
                v.seed.clone(),
                v.here.clone(),
                v.size_text.clone(),
                v.label(),
            ]
        })
        .collect();
    Table::new(headers.map(String::from).to_vec(), cells)
}

/// Why points are missing: skipped servers and failures, each reason once (the notes of
/// the results file, as data).
fn notes(exp: &str, sweep: &str, quick: bool, records: &HashMap<String, Record>) -> Vec<String> {
    let reasons: BTreeSet<String> = records
        .values()
        .filter(|r| r.experiment == exp && r.sweep == sweep && r.outcome != Outcome::Measured)
        .filter(|r| r.id.starts_with("quick/") == quick)
        .filter_map(|r| {
            let kind = if r.outcome == Outcome::Skipped { "Skipped" } else { "Failed" };
            r.note.as_ref().map(|n| format!("{kind}: {}", render::literal(n)))
        })
        .collect();
    reasons.into_iter().collect()
}

#[cfg(test)]
mod tests {
    /// The method paragraph from its Markdown file, with the run's values in their places.
    #[test]
    fn the_method_paragraph_is_filled_for_the_run() {
        let full = super::method(false, false);
        for part in [
            "A full run. Each table",
            "Each point is measured 5 (or more) times",
            "Each point lasts at least 0.5 s",
            "more than 10% of the machine's CPU time busy",
            "a point shorter than 0.2 s is too short to judge",
            "or more than 2% stolen",
            "judged in points of at least 0.5 s",
            "measured again up to 2 times",
            "fewer than 3 clean repeats gets no verdict (load average",
        ] {
            assert!(full.contains(part), "{part:?} not in: {full}");
        }
        assert!(!full.contains('{') && !full.contains('\n') && !full.contains("  "), "{full}");
        let quick = super::method(true, true);
        assert!(quick.starts_with("A quick run (reduced sweeps"), "{quick}");
        assert!(quick.contains("measured 3 times") && quick.contains("lasts at least 0.1 s"), "{quick}");
        assert!(quick.contains("gets no verdict (this run was made with --keep-disturbed"), "{quick}");
    }

    use crate::experiment::Experiment;
    use std::path::Path;

    #[test]
    fn seeds_are_named_as_the_docs_name_them() {
        let cases = [
            ("seeds/000 (Spidey in C, thor.py)", "Seed 000 (Spidey in C, thor.py)"),
            ("none (Spidey's own question)", "Seed: none (Spidey's own question)"),
            ("seed 000, explained", "Seed: seed 000, explained"),
        ];
        for (seed, want) in cases {
            assert_eq!(super::seed_line(seed), want);
        }
    }

    /// The committed full run (docs/runs/lab-full-4119505): the built-in experiments, its
    /// records and its machine's CPUs, as the verdict tests below judge it.
    fn committed_full_run() -> (Vec<Experiment>, std::collections::HashMap<String, crate::run::results::Record>, usize)
    {
        let run = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/runs/lab-full-4119505"));
        let records = crate::run::results::read(&run.join("results.jsonl.gz")).unwrap();
        let sources = crate::experiment::sources::find(None, &[]).unwrap();
        let exps = sources.iter().map(|s| Experiment::parse(s).unwrap()).collect();
        (exps, records, crate::report::machine::Machine::of_results(run).cores)
    }

    /// Regression (issue 43): in the committed full run, 002's "two and three processes beat
    /// one" read "level" while its one-thread load generator ran 95-99% busy and the server
    /// idled a quarter of its CPU; it is client-bound, with the figures, and not evidence.
    #[test]
    fn the_committed_runs_saturated_client_claims_are_client_bound() {
        let (exps, records, cores) = committed_full_run();
        let rows = super::verdict_rows(&exps, false, &records, cores);
        let (_, v) =
            rows.iter().find(|(id, v)| id == "002" && v.claim.starts_with("two and three processes beat one")).unwrap();
        let b = v.client_bound.as_ref().expect("client-bound");
        assert_eq!(
            (v.outcome, v.is_evidence(), b.numbers),
            (crate::judge::verdict::Outcome::ClientBound, false, crate::judge::verdict::Outcome::Level)
        );
        assert!((95.0..=99.5).contains(&b.saturation.client_busy_pct), "{b:?}");
        assert!((20.0..=30.0).contains(&b.saturation.server_idle_pct), "{b:?}");
        assert_eq!((b.points, b.of), (10, 10));
        // With the machine unknown, the older records have no figure: the numbers stand.
        let rows = super::verdict_rows(&exps, false, &records, 0);
        assert!(rows.iter().all(|(_, v)| v.outcome != crate::judge::verdict::Outcome::ClientBound));
    }

    /// Regression (issue 43, item 4): verdicts decided by the lab's design or by seed figures
    /// that cannot be what they say were counted as evidence, a ratio of two losses read as a
    /// larger gain, 003's CGI response time was a mean with the admission limit's instant 503s
    /// in it, and a reason said no VM was involved. On the committed full run: each claim's
    /// verdict, what its text must say, and the summary's counts.
    #[test]
    fn the_committed_runs_untestable_claims_are_not_evidence() {
        let (exps, records, cores) = committed_full_run();
        let rows = super::verdict_rows(&exps, false, &records, cores);
        let untestable = "not testable by this method (numbers: not reproduced)";
        // (experiment, the claim's first words, its verdict, what its row says)
        let cases: [(&str, &str, &str, &str); 8] = [
            ("000", "fork has the higher throughput", untestable, "a request of 28 µs"),
            ("000", "fork's throughput for the 1 GB file", untestable, "24 and 11 ms"),
            ("002", "N = 10 is slower than N = 100", untestable, "N = 10: 318 to 903 batches a repeat"),
            (
                "010",
                "N per client: N = 10 (100 in all)",
                "not testable by this method (numbers: inconclusive)",
                "N = 100: 47 to 142 batches a repeat",
            ),
            ("000", "fork's largest gain is on CGI", "not reproduced", "no gain to compare: fork loses at both, 0.66×"),
            (
                "003",
                "CGI's response time rises",
                "direction reproduced, size not",
                "113.8 500 req/s → 182.5 5000 req/s",
            ),
            ("003", "at small rates", "not reproduced", "pooled 0.0015×"),
            (
                "004",
                "in the VM the threaded server",
                "not testable here",
                "a shared 2-vCPU VM under another hypervisor",
            ),
        ];
        for (exp, claim, label, says) in cases {
            let (_, v) = rows.iter().find(|(id, v)| id == exp && v.claim.starts_with(claim)).expect(claim);
            assert_eq!(v.label(), label, "{claim}: {}", v.here);
            let row = format!("{} {}", super::claim_cell(v), v.here);
            assert!(row.contains(says), "{claim}: {row}");
            assert_eq!(v.is_evidence(), !label.starts_with("not testable"), "{claim}");
        }
        let text = super::verdicts_markdown(&exps, false, &records, cores);
        assert!(!text.contains("no VM is involved"), "the lab's runs are in a VM");
        for part in [
            "71 claims. As evidence, 49: 23 not reproduced,",
            "Not counted: 11 client-bound, 5 true by construction, 2 not testable here, 4 not testable by this method, 0 not measured.",
        ] {
            assert!(text.contains(part), "the summary lacks {part:?}");
        }
    }

    /// The committed replication table is the generator's output on the two committed full
    /// runs: regenerate it with `spidey lab --verdicts
    /// docs/runs/lab-full-4119505/results.jsonl.gz --replicate
    /// docs/runs/lab-full-c69ce8d/results.jsonl.gz > docs/lab-replication.md`.
    #[test]
    fn committed_replication_table_is_generated_from_the_committed_full_runs() {
        let repo = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let (exps, records, cores) = committed_full_run();
        let older = repo.join("docs/runs/lab-full-c69ce8d");
        let old_records = crate::run::results::read(&older.join("results.jsonl.gz")).unwrap();
        let old_cores = crate::report::machine::Machine::of_results(&older).cores;
        let run = (false, &records, cores);
        let got =
            super::replication_markdown(&exps, run, (false, &old_records, old_cores), "docs/runs/lab-full-c69ce8d");
        let want = std::fs::read_to_string(repo.join("docs/lab-replication.md")).unwrap();
        assert!(
            got == want,
            "docs/lab-replication.md is stale: regenerate it with `spidey lab --verdicts docs/runs/lab-full-4119505/results.jsonl.gz --replicate docs/runs/lab-full-c69ce8d/results.jsonl.gz > docs/lab-replication.md`"
        );
    }

    /// The committed verdict table is the generator's output on the committed full run, not
    /// typed: regenerate it with
    /// `spidey lab --verdicts docs/runs/lab-full-4119505/results.jsonl.gz > docs/lab-verdicts.md`.
    #[test]
    fn committed_verdict_table_is_generated_from_the_committed_full_run() {
        let repo = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let (exps, records, cores) = committed_full_run();
        assert!(records.len() >= 2600, "the full run's points: {}", records.len());
        assert_eq!(cores, 2, "the full run's machine.json");
        let got = super::verdicts_markdown(&exps, false, &records, cores);
        let want = std::fs::read_to_string(repo.join("docs/lab-verdicts.md")).unwrap();
        assert!(
            got == want,
            "docs/lab-verdicts.md is stale: regenerate it with `spidey lab --verdicts docs/runs/lab-full-4119505/results.jsonl.gz > docs/lab-verdicts.md`"
        );
    }
}
