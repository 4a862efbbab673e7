//! `spidey lab`: reproduces the seed studies on this machine and reports them.
//!
//! An experiment file (`experiments/*.toml`, built into the binary, [`experiment`]) is expanded into points
//! ([`plan`]); for each server configuration the [`runner`] generates a document root
//! ([`docroot`]), starts the server as a child ([`server`]), measures each point through
//! the load seam ([`load`]) and appends it to `results.jsonl` ([`results`]) at once, so
//! `--resume` continues an interrupted run. The [`report`] turns the journal into tables
//! in the seeds' shapes ([`table`]), plots ([`plot`]), computed findings ([`finding`]) and
//! the machine's description ([`machine`]).

mod adversary;
mod cdf;
mod chart;
mod claim;
mod cpu;
mod delay_line;
mod docroot;
mod experiment;
mod finding;
mod hosts;
mod listing;
mod load;
mod machine;
mod metric;
mod plan;
mod plot;
mod render;
mod report;
mod results;
mod robustness;
mod robustness_report;
mod rule;
mod runner;
mod server;
mod server_counts;
mod shape;
mod sizes;
mod sources;
mod stats;
mod summary;
mod table;
mod tls;
mod verdict;
mod versus;

use crate::cli::LabArgs;
use crate::config::ConfigError;
use anyhow::Context;
use experiment::Experiment;
use indicatif::{ProgressBar, ProgressStyle};

pub use delay_line::{run as delay_line, DelayLineArgs};
pub use hosts::HostArgs;

pub fn run(args: LabArgs) -> anyhow::Result<()> {
    let sources = sources::find(args.experiments_dir.as_deref(), &args.experiments)?;
    anyhow::ensure!(!sources.is_empty(), "no experiments found");
    let exps: Vec<Experiment> = sources.iter().map(Experiment::parse).collect::<anyhow::Result<_>>()?;
    if let Some(results) = &args.verdicts {
        print!("{}", verdicts(&exps, results)?);
        return Ok(());
    }
    if let Some(results) = &args.report {
        return rerender(&exps, results, &args.out);
    }
    let results_path = args.out.join("results.jsonl");
    if args.list {
        print!("{}", listing::table(&exps, &results::read(&results_path).unwrap_or_default()));
        return Ok(());
    }
    if args.experiments.is_empty() && !args.quick && !args.all {
        print!("{}", listing::table(&exps, &results::read(&results_path).unwrap_or_default()));
        return Err(ConfigError(
            "the full run of every experiment takes the time above: pass --all to start it, --quick for the smoke \
             test, or name experiments"
                .into(),
        )
        .into());
    }
    results::check_fresh(&results_path, args.resume, args.force)?;
    hosts::Hosts::from_args(&args.hosts)?;
    let link = args.hosts.delay_line()?;
    let hosts = hosts::Hosts::from_args(&link.as_ref().map_or_else(|| args.hosts.clone(), |l| args.hosts.across(l)))?;
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    docroot::remove_stale(&std::env::temp_dir());
    let pinning = cpu::pin();
    let mut journal = results::Journal::open(&results_path, args.resume)?;
    let total: usize =
        exps.iter().map(|e| plan::server_runs(e, args.quick).iter().map(|r| r.points.len()).sum::<usize>()).sum();
    let bar = progress(total as u64);
    let mut run = runner::Run { quick: args.quick, journal: &mut journal, bar: &bar, hosts: &hosts };
    for exp in &exps {
        runner::run_experiment(exp, &mut run).with_context(|| format!("experiment {}", exp.id))?;
    }
    bar.finish_with_message("done");
    let mut machine = machine::Machine::describe(pinning);
    machine.network = hosts::describe_network(&args.hosts, link.as_ref());
    machine.save(&args.out)?;
    report::write(&args.out, &exps, args.quick, &journal.records, &machine, None)?;
    for exp in &exps {
        if let Some(spec) = &exp.robustness {
            if !hosts.is_local() {
                eprintln!("spidey lab: {} skipped: its crowds and clients run on this host's loopback only", exp.id);
                continue;
            }
            let points = robustness::run(exp, spec, args.quick, &args.out, &hosts)
                .with_context(|| format!("experiment {}", exp.id))?;
            let section = robustness_section(&args.out, &spec.attacks, &points)?;
            report::write(&args.out, &exps, args.quick, &journal.records, &machine, Some(section))?;
        }
    }
    println!("spidey lab: {} points; report in {}", total, args.out.join("report.md").display());
    Ok(())
}

/// The verdict table of a results file (plain or gzipped), as Markdown: a quick run's when
/// every point in it is a quick one.
fn verdicts(exps: &[Experiment], results: &std::path::Path) -> anyhow::Result<String> {
    anyhow::ensure!(results.is_file(), "no results file {}", results.display());
    let records = results::read(results)?;
    let quick = !records.is_empty() && records.keys().all(|id| id.starts_with("quick/"));
    Ok(report::verdicts_markdown(exps, quick, &records))
}

/// The robustness experiment's report section (it also writes `robustness.md` and its SVGs
/// into `out`).
fn robustness_section(
    out: &std::path::Path,
    attacks: &[robustness::AttackName],
    points: &[robustness::Point],
) -> anyhow::Result<report::Section> {
    let markdown = robustness_report::write(out, attacks, points)?;
    let mut svgs = Vec::new();
    for entry in std::fs::read_dir(out)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.starts_with("robustness-") && name.ends_with(".svg") && markdown.contains(&name) {
            svgs.push((name.clone(), std::fs::read_to_string(out.join(&name))?));
        }
    }
    Ok(report::Section { markdown, svgs })
}

/// `--report`: the report of a results file, measuring nothing. The experiments are those
/// with points in it (and the robustness experiment when a `robustness.jsonl` is beside it).
fn rerender(exps: &[Experiment], results: &std::path::Path, out: &std::path::Path) -> anyhow::Result<()> {
    anyhow::ensure!(results.is_file(), "no results file {}", results.display());
    let records = results::read(results)?;
    let quick = !records.is_empty() && records.keys().all(|id| id.starts_with("quick/"));
    let dir = results.parent().unwrap_or(std::path::Path::new("."));
    let journal = dir.join("robustness.jsonl");
    let ran: Vec<Experiment> = exps
        .iter()
        .filter(|e| records.values().any(|r| r.experiment == e.id) || (e.robustness.is_some() && journal.is_file()))
        .cloned()
        .collect();
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut extra = None;
    for exp in &ran {
        if let Some(spec) = &exp.robustness {
            if journal.is_file() {
                extra = Some(robustness_section(out, &spec.attacks, &robustness::read(&journal)?)?);
            }
        }
    }
    let machine = machine::Machine::of_results(dir);
    report::write(out, &ran, quick, &records, &machine, extra)?;
    println!("spidey lab: the report of {} in {}", results.display(), out.join("report.html").display());
    Ok(())
}

fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} ETA {eta} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar
}
