//! The report: one document model rendered twice, as `report.md` (plots as SVG files
//! beside it) and as a self-contained `report.html` (the same SVGs inlined).

use crate::lab::experiment::Experiment;
use crate::lab::machine::Machine;
use crate::lab::plan;
use crate::lab::results::{Outcome, Record};
use crate::lab::{finding, plot, runner, table, verdict, versus};
use anyhow::Context;
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

/// A block of the report.
enum Block {
    Heading(u8, String),
    Para(String),
    Table(Vec<String>, Vec<Vec<String>>),
    /// `file` is relative to the output directory.
    Plot {
        file: String,
        title: String,
        svg: String,
    },
    Bullets(Vec<String>),
}

/// Writes `out/report.md`, `out/report.html` and `out/plots/*.svg`.
pub(crate) fn write(
    out: &Path,
    exps: &[Experiment],
    quick: bool,
    records: &HashMap<String, Record>,
    machine: &Machine,
    keep_disturbed: bool,
) -> anyhow::Result<()> {
    clear_plots(&out.join("plots"))?;
    let mut doc = intro(quick, machine, keep_disturbed);
    doc.extend(verdicts(exps, quick, records));
    for exp in exps {
        doc.extend(experiment(exp, quick, records));
    }
    for block in &doc {
        if let Block::Plot { file, svg, .. } = block {
            std::fs::write(out.join(file), svg).with_context(|| format!("cannot write {file}"))?;
        }
    }
    std::fs::write(out.join("report.md"), markdown(&doc))?;
    std::fs::write(out.join("report.html"), html(&doc))?;
    Ok(())
}

/// Removes the SVGs of an earlier report, so none outlives its data.
fn clear_plots(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "svg") {
            std::fs::remove_file(path)?;
        }
    }
    Ok(())
}

fn intro(quick: bool, machine: &Machine, keep_disturbed: bool) -> Vec<Block> {
    let kind = if quick { "quick run (reduced sweeps: a smoke test, not a measurement to quote)" } else { "full run" };
    vec![
        Block::Heading(1, "Spidey lab report".into()),
        Block::Para(format!(
            "A {kind}. Each table has the seed study's shape, this machine's numbers (\"here\": the median of the repeats and, in brackets, a distribution-free interval for it with that interval's exact coverage, `11 [9–30, 93.8%]`: the narrowest pair of order statistics of the repeats that contains the true median with at least 95% probability, or, with fewer than 6 repeats, the smallest and largest repeat, which contain it with probability 1 - 2/2^n (93.8% for 5 repeats, 75% for 3); plots draw it as error bars) and the seed's published numbers beside them. Each point is measured {repeats} times, the servers of a sweep visited in an order rotated every repeat, and each server's points in an order shuffled afresh every repeat (seeded: each point's seed and position are in results.jsonl), so neither a server nor a point's place along the sweep is tied to when it ran. Findings are computed from the numbers here: a ratio between two points (one server's advantage over another) is taken per round, repeat r of one against repeat r of the other (measured in the same round of the sweep), and shown as the median of those per-round ratios with their order-statistic interval and its coverage, `1.31× [1.20–1.42, 93.8%]`; one server beats another only where that interval excludes 1, and is level with it otherwise. Each point lasts at least {floor} s: its batch (the seed's request count, or its duration) runs back to back until the batches do, and the time in a \"Time (s)\" column is one batch's (results.jsonl records the number of batches). Every table adds the server's CPU time per request (the CPU-time clocks of the server's process tree, in nanoseconds, every thread included; children it has reaped, such as fork's and CGI's, are counted from /proc at the kernel's tick resolution), the load generator's own CPU time as a share of one CPU (its one thread: near 100% it, not the server, was the limit), and how many repeats ran on a disturbed machine: more than {other}% of the machine's CPU time busy with processes other than the server and the load generator (the wall clock times the CPUs, less the idle and stolen time /proc/stat gives, less the two clocks), or more than {steal}% stolen by the hypervisor. A disturbed repeat is measured again up to {extra} times; one still disturbed is kept in results.jsonl marked excluded and left out of every interval, finding and verdict, and a point left with fewer than {clean} clean repeats gets no verdict{keep} (load average, steal and the CPU times are in results.jsonl per point); and the answers the client counted beside those the server counted itself (spidey's `--metrics`, scraped before and after each point: by status class, with the body bytes; `–` for peers), summed over the repeats. The client does not count an answer to a request it sent late, the server does.",
            other = crate::lab::cpu::OTHER_BUSY_LIMIT_PCT,
            floor = if quick { runner::MIN_QUICK_POINT } else { runner::MIN_POINT }.as_secs_f64(),
            extra = runner::EXTRA_TRIES,
            clean = table::MIN_CLEAN_REPEATS,
            keep = if keep_disturbed { " (this run was made with --keep-disturbed: every repeat was measured once and kept, disturbed or not)" } else { "" },
            steal = crate::lab::cpu::STEAL_LIMIT_PCT,
            repeats = if quick { "3" } else { "5 (or more)" }
        )),
        Block::Heading(2, "Machine".into()),
        Block::Table(vec!["".into(), "".into()], machine.rows().into_iter().map(|(k, v)| vec![k.to_string(), v]).collect()),
    ]
}

fn experiment(exp: &Experiment, quick: bool, records: &HashMap<String, Record>) -> Vec<Block> {
    let mut doc = vec![
        Block::Heading(2, format!("{}: {}", exp.id, exp.title)),
        Block::Para(format!("Seed: {}. Question: {}", exp.seed, exp.question)),
    ];
    for a in plan::active(exp, quick) {
        let samples = table::samples(&exp.id, &a, quick, records);
        doc.push(Block::Heading(3, a.sweep.title.clone()));
        let (headers, rows) = table::build(&a, &samples);
        doc.push(Block::Table(headers, rows));
        if let Some(v) = &a.sweep.table.versus {
            doc.push(Block::Para(format!(
                "Each server `X{suffix}` beside `X`, at the same workload and client: medians with their intervals, and {name}: the ratio per round (repeat r of one against repeat r of the other), the median of those ratios and its order-statistic interval, labelled with its coverage.",
                suffix = v.suffix,
                name = v.name
            )));
            let (headers, rows) = versus::build(v, &samples);
            doc.push(Block::Table(headers, rows));
        }
        if let Some(note) = &a.sweep.seed_note {
            doc.push(Block::Para(format!("About the seed's numbers: {note}")));
        }
        let findings: Vec<String> =
            a.sweep.findings.iter().map(|f| format!("Finding: {}", finding::compute(f, &samples))).collect();
        if !findings.is_empty() {
            doc.push(Block::Bullets(findings));
        }
        for (i, spec) in a.sweep.plots.iter().enumerate() {
            if let Some(svg) = plot::svg(spec, &samples, a.sweep) {
                let file = format!("plots/{}-{}-{}.svg", exp.id, a.sweep.name, i + 1);
                doc.push(Block::Plot { file, title: spec.title.clone(), svg });
            }
        }
        let notes = notes(&exp.id, &a.sweep.name, quick, records);
        if !notes.is_empty() {
            doc.push(Block::Bullets(notes));
        }
    }
    doc
}

/// The verdict table: every claim of every experiment, checked against its sweep.
pub(crate) fn verdict_rows(
    exps: &[Experiment],
    quick: bool,
    records: &HashMap<String, Record>,
) -> Vec<(String, verdict::Verdict)> {
    let mut rows = Vec::new();
    for exp in exps {
        let active = plan::active(exp, quick);
        let sweeps: Vec<(&plan::Active<'_>, Vec<table::Sample>)> =
            active.iter().map(|a| (a, table::samples(&exp.id, a, quick, records))).collect();
        for claim in &exp.claims {
            let sweep = sweeps.iter().find(|(a, _)| a.sweep.name == claim.sweep()).map(|(a, s)| (*a, s.as_slice()));
            let id = exp.id.split('-').next().unwrap_or(&exp.id).to_string();
            rows.push((id, verdict::check(claim, sweep)));
        }
    }
    rows
}

/// The verdict section as Markdown (what `spidey lab --verdicts` prints, and the report's).
pub(crate) fn verdicts_markdown(exps: &[Experiment], quick: bool, records: &HashMap<String, Record>) -> String {
    markdown(&verdicts(exps, quick, records))
}

fn verdicts(exps: &[Experiment], quick: bool, records: &HashMap<String, Record>) -> Vec<Block> {
    let rows = verdict_rows(exps, quick, records);
    if rows.is_empty() {
        return Vec::new();
    }
    let headers = [
        "Seed",
        "Claim",
        "Where the seed says it",
        "Seed's number",
        "Here (pooled ratio [95% interval]; per point, ratio of medians)",
        "Stated size",
        "Verdict",
    ];
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|(id, v)| {
            let mut claim = v.claim.clone();
            if let Some(why) = &v.by_construction {
                claim += &format!(" (true by construction: {why})");
            }
            if v.contradicts.is_some() {
                claim += " (the seed contradicts itself here: see below)";
            }
            vec![id.clone(), claim, v.source.clone(), v.seed.clone(), v.here.clone(), v.size_text.clone(), v.label()]
        })
        .collect();
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
    let unmeasured = rows.iter().filter(|(_, v)| v.outcome == verdict::Outcome::NotMeasured).count();
    let summary = format!(
        "{} claims. As evidence, {evidence}: {}. Not counted: {constructed} true by construction, {untestable} not testable here, {unmeasured} not measured.",
        rows.len(),
        counts.iter().map(|(l, n)| format!("{n} {l}")).collect::<Vec<_>>().join(", ")
    );
    let mut doc = vec![
        Block::Heading(2, "Verdicts on the seeds' claims".into()),
        Block::Para("Each claim a seed study made, as its author made it (the seed's file and line, and its words), checked against this run's numbers. A comparison is one test per claim: the claimed side's advantage at each of its points, pooled by repeat (the geometric mean over the points, repeat by repeat) with a t interval over the repeats (`spidey lab`'s `rule.rs`). \"reproduced\": the interval lies above 1; \"not reproduced\": below 1 (or, for a claim of no difference, wholly outside its band); \"level (no difference)\": it contains 1 and lies within the level band, evidence against the claimed difference; \"inconclusive\": too wide to tell. A claim that states a size is held to it within the tolerance its experiment file writes (a factor either way): \"direction reproduced, size not\" where the interval lies above 1 but wholly outside that band. Under no difference, a claim is called reproduced at most 2.5% of the time whatever its number of points (a simulation in the lab's tests checks it); across K claims, at most 0.025·K are expected by chance. Trends and limits are judged from each point's own interval. Claims true by construction are shown but not counted as evidence; \"not testable here\" says what the lab's setup removes; \"not measured\": the sweep or points did not run (a quick run, or results older than the claim).".into()),
        Block::Table(headers.map(String::from).to_vec(), table),
        Block::Para(summary),
    ];
    let contradictions: Vec<String> = rows
        .iter()
        .filter_map(|(id, v)| v.contradicts.as_ref().map(|c| format!("{id}: “{}” ({}): {c}", v.claim, v.source)))
        .collect();
    if !contradictions.is_empty() {
        doc.push(Block::Para("The seeds' internal contradictions (both statements are checked above):".into()));
        doc.push(Block::Bullets(contradictions));
    }
    doc
}

/// Why points are missing: skipped servers and failures, each reason once.
fn notes(exp: &str, sweep: &str, quick: bool, records: &HashMap<String, Record>) -> Vec<String> {
    let reasons: BTreeSet<String> = records
        .values()
        .filter(|r| r.experiment == exp && r.sweep == sweep && r.outcome != Outcome::Measured)
        .filter(|r| r.id.starts_with("quick/") == quick)
        .filter_map(|r| {
            let kind = if r.outcome == Outcome::Skipped { "Skipped" } else { "Failed" };
            r.note.as_ref().map(|n| format!("{kind}: {n}"))
        })
        .collect();
    reasons.into_iter().collect()
}

fn markdown(doc: &[Block]) -> String {
    let mut s = String::new();
    for block in doc {
        match block {
            Block::Heading(level, text) => _ = writeln!(s, "{} {text}\n", "#".repeat(usize::from(*level))),
            Block::Para(text) => _ = writeln!(s, "{text}\n"),
            Block::Table(headers, rows) => {
                let line = |cells: &[String]| {
                    format!("| {} |", cells.iter().map(|c| c.replace('|', "\\|")).collect::<Vec<_>>().join(" | "))
                };
                _ = writeln!(s, "{}", line(headers));
                _ = writeln!(s, "|{}", "---|".repeat(headers.len()));
                for row in rows {
                    _ = writeln!(s, "{}", line(row));
                }
                s.push('\n');
            }
            Block::Plot { file, title, .. } => _ = writeln!(s, "![{title}]({file})\n"),
            Block::Bullets(items) => {
                for item in items {
                    _ = writeln!(s, "- {item}");
                }
                s.push('\n');
            }
        }
    }
    s
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}\
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:right}\
td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}figure{margin:1rem 0}svg{max-width:100%;height:auto}";

fn html(doc: &[Block]) -> String {
    let mut s = format!("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Spidey lab report</title><style>{STYLE}</style></head><body>\n");
    for block in doc {
        match block {
            Block::Heading(level, text) => _ = writeln!(s, "<h{level}>{}</h{level}>", esc(text)),
            Block::Para(text) => _ = writeln!(s, "<p>{}</p>", esc(text)),
            Block::Table(headers, rows) => {
                s.push_str("<table><thead><tr>");
                headers.iter().for_each(|h| _ = write!(s, "<th>{}</th>", esc(h)));
                s.push_str("</tr></thead><tbody>\n");
                for row in rows {
                    s.push_str("<tr>");
                    row.iter().for_each(|c| _ = write!(s, "<td>{}</td>", esc(c)));
                    s.push_str("</tr>\n");
                }
                s.push_str("</tbody></table>\n");
            }
            Block::Plot { title, svg, .. } => {
                let body = svg.find("<svg").map(|i| &svg[i..]).unwrap_or(svg);
                _ = writeln!(s, "<figure>{body}<figcaption>{}</figcaption></figure>", esc(title));
            }
            Block::Bullets(items) => {
                s.push_str("<ul>");
                items.iter().for_each(|i| _ = write!(s, "<li>{}</li>", esc(i)));
                s.push_str("</ul>\n");
            }
        }
    }
    s.push_str("</body></html>\n");
    s
}

fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use crate::lab::experiment::Experiment;
    use std::path::Path;

    /// The committed verdict table is the generator's output on the committed full run, not
    /// typed: regenerate it with
    /// `spidey lab --verdicts docs/runs/lab-full-c69ce8d/results.jsonl.gz > docs/lab-verdicts.md`.
    #[test]
    fn committed_verdict_table_is_generated_from_the_committed_full_run() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let records = crate::lab::results::read(&repo.join("docs/runs/lab-full-c69ce8d/results.jsonl.gz")).unwrap();
        assert!(records.len() >= 1440, "the full run's points: {}", records.len());
        let sources = crate::lab::sources::find(None, &[]).unwrap();
        let exps: Vec<Experiment> = sources.iter().map(|s| Experiment::parse(s).unwrap()).collect();
        let got = super::verdicts_markdown(&exps, false, &records);
        let want = std::fs::read_to_string(repo.join("docs/lab-verdicts.md")).unwrap();
        assert!(
            got == want,
            "docs/lab-verdicts.md is stale: regenerate it with `spidey lab --verdicts docs/runs/lab-full-c69ce8d/results.jsonl.gz > docs/lab-verdicts.md`"
        );
    }
}
