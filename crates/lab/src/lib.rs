//! `spidey lab`: reproduces the seed studies on this machine and reports them.
//!
//! The crate is four stages, one folder each, every one importing only from the stages
//! above it (`layout_tests.rs` checks that no two modules import each other):
//!
//! - [`experiment`]: the schema. An experiment file (`experiments/*.toml`, built into the
//!   binary) with its claims, expanded into points ([`experiment::plan`]).
//! - [`run`]: measuring. For each server configuration the [`run::runner`] generates a
//!   document root ([`run::docroot`]), starts the server as a child ([`run::server`]),
//!   measures each point through the load seam ([`run::load`]) and appends it to
//!   `results.jsonl` ([`run::results`]) at once, so `--resume` continues an interrupted run.
//! - [`judge`]: the numbers gathered per point ([`judge::sample`]), their intervals
//!   ([`judge::stats`]), computed findings and a verdict per claim ([`judge::verdict`]).
//! - [`report`]: the journal turned into tables in the seeds' shapes, plots, the findings
//!   and verdicts, and the machine's description, as Markdown and HTML.

mod experiment;
mod judge;
mod report;
mod run;

#[cfg(test)]
mod layout_tests;

use anyhow::Context;
use experiment::{plan, sources, Experiment};
use indicatif::{ProgressBar, ProgressStyle};
use judge::verdict;
use report::{machine, robustness_report, summary, unmeasured, why};
use run::out_dir::OutDir;
use run::{cpu, docroot, hosts, listing, results, robustness, runner};
use spidey_config::ConfigError;
use std::collections::HashMap;
use std::path::PathBuf;

pub use run::delay_line::{run as delay_line, DelayLineArgs};
pub use run::hosts::HostArgs;

/// `spidey lab --help`'s examples; a test runs the ones that measure nothing and parses
/// the rest.
pub(crate) const EXAMPLES: &str = "\
Examples:
  spidey lab --list
      the experiments, with their quick and full times
  spidey lab --quick --out lab-quick
      every experiment, reduced: a smoke test of a few minutes
  spidey lab 000 004 --out lab-out
      two experiments in full
  spidey lab --all --resume --out lab-out
      every experiment in full, going on from an interrupted run
  spidey lab --verdicts lab-out/results.jsonl
      the verdict table of a run, measuring nothing
  spidey lab --verdicts lab-out/results.jsonl --replicate old-run/results.jsonl
      whether each verdict replicated in another run
  spidey lab --report lab-out/results.jsonl --out lab-report
      the report of a run, measuring nothing";

/// `spidey lab`'s flags.
#[derive(Debug, clap::Args)]
#[command(after_help = "Details and examples: spidey lab --help", after_long_help = EXAMPLES)]
pub struct LabArgs {
    /// Experiments to run: id prefixes such as `000`, or files as paths with a `/`
    /// (`./mine.toml`); all of them with --all or --quick.
    pub experiments: Vec<String>,
    /// A reduced version of every experiment, a smoke test (2 to 7 minutes).
    ///
    /// About 2 minutes for all of them on a quiet 2-core machine, 7 on a busy one, which
    /// measures each point up to 3 times (`--list` shows each one's time).
    #[arg(help_heading = "What to run", long)]
    pub quick: bool,
    /// Run every experiment in full (hours).
    ///
    /// Without --all, --quick or experiment ids, the plan is printed instead.
    #[arg(help_heading = "What to run", long)]
    pub all: bool,
    /// List the experiments with their quick and full times, and run nothing.
    ///
    /// The times are the last run's in OUT, or an estimate from the plan.
    #[arg(help_heading = "What to run", long)]
    pub list: bool,
    /// Where results.jsonl, report.md, report.html and plots/ go.
    #[arg(help_heading = "Results and reports", long, default_value = "lab-out")]
    pub out: PathBuf,
    /// Keep OUT/results.jsonl and measure only the points missing from it.
    #[arg(help_heading = "Results and reports", long)]
    pub resume: bool,
    /// Start afresh even though OUT/results.jsonl exists (it is emptied).
    ///
    /// Without --force or --resume an existing one is refused.
    #[arg(help_heading = "Results and reports", long, conflicts_with = "resume")]
    pub force: bool,
    /// Read the experiment files from this directory, not the built-in ones.
    #[arg(help_heading = "What to run", long)]
    pub experiments_dir: Option<PathBuf>,
    /// Use each point's first measurement even when the machine was disturbed.
    ///
    /// Disturbed: others busy or steal above the limits. By default a disturbed point is measured again up
    /// to twice, and one still disturbed is left out of intervals and verdicts.
    #[arg(help_heading = "Measurement", long)]
    pub keep_disturbed: bool,
    /// Run each server on this many CPUs [default: the upper half].
    ///
    /// The top ones; past the server's half they are shared with the load generator, which
    /// the report says. An experiment arm that sets `cpus` keeps its own.
    #[arg(help_heading = "Measurement", long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub server_cpus: Option<u16>,
    /// Measure nothing: print the verdict table (Markdown) of a results file.
    ///
    /// RESULTS is a `results.jsonl` or `results.jsonl.gz`; the table goes to stdout.
    #[arg(help_heading = "Results and reports", long, value_name = "RESULTS")]
    pub verdicts: Option<PathBuf>,
    /// With --verdicts: print instead each claim's verdict beside OTHER's (another run's
    /// results, judged by the same rules) and whether it replicated there.
    #[arg(help_heading = "Results and reports", long, value_name = "OTHER", requires = "verdicts")]
    pub replicate: Option<PathBuf>,
    /// Measure nothing: print why the seeds' results differ (Markdown), from a results file.
    ///
    /// Each seed claim an explain experiment put to the test, with every suspected cause
    /// and what the run says of it, then the claims that differ with no cause tested yet.
    #[arg(help_heading = "Results and reports", long, value_name = "RESULTS", conflicts_with = "verdicts")]
    pub why: Option<PathBuf>,
    /// With --why: one paragraph, the claims counted by what the run concludes of them.
    #[arg(help_heading = "Results and reports", long, requires = "why")]
    pub brief: bool,
    /// Measure nothing: write the report of a results file into --out.
    ///
    /// The report is report.md, report.html and plots/, of a `results.jsonl` or
    /// `results.jsonl.gz`, with the robustness section from
    /// the `robustness.jsonl` and the machine from the `machine.json` (or `report.md`)
    /// beside it.
    #[arg(help_heading = "Results and reports", long, value_name = "RESULTS", conflicts_with = "verdicts")]
    pub report: Option<PathBuf>,
    /// Where the server and the load run (default: here, on loopback).
    #[command(flatten)]
    pub hosts: HostArgs,
}

pub fn run(args: LabArgs) -> anyhow::Result<()> {
    let sources = sources::find(args.experiments_dir.as_deref(), &args.experiments)?;
    anyhow::ensure!(!sources.is_empty(), "no experiments found");
    let exps: Vec<Experiment> = sources.iter().map(Experiment::parse).collect::<anyhow::Result<_>>()?;
    if args.experiments.is_empty() {
        why::check_links(&exps)?;
    }
    if let Some(results) = &args.verdicts {
        let (quick, records) = read_results(results)?;
        let cores = cores_of(results);
        match &args.replicate {
            Some(other) => {
                let (other_quick, other_records) = read_results(other)?;
                let name = other.parent().unwrap_or(other).display().to_string();
                let (run, there) = ((quick, &records, cores), (other_quick, &other_records, cores_of(other)));
                print!("{}", report::replication_markdown(&exps, run, there, &name));
            }
            None => print!("{}", report::verdicts_markdown(&exps, quick, &records, cores)),
        }
        return Ok(());
    }
    if let Some(results) = &args.why {
        let (quick, records) = read_results(results)?;
        let cores = cores_of(results);
        let rows = report::verdict_rows(&exps, quick, &records, cores);
        let text = if args.brief { why::brief(&exps, &rows, cores) } else { why::markdown(&exps, &rows, cores) };
        print!("{text}");
        return Ok(());
    }
    if let Some(results) = &args.report {
        return rerender(&exps, results, &args.out);
    }
    let results_path = args.out.join(results::FILE);
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
    let sweeps_rtt = exps.iter().any(|e| plan::active(e, args.quick).iter().any(|a| a.sweep.rtt.is_some()));
    let link = args.hosts.delay_line(sweeps_rtt)?;
    let hosts = hosts::Hosts::from_args(&match (&link, args.hosts.rtt) {
        (Some(l), Some(_)) => args.hosts.across(l),
        _ => args.hosts.clone(),
    })?;
    let across = link.as_ref().map(|l| hosts::Hosts::from_args(&args.hosts.across(l))).transpose()?;
    let out = OutDir::open(&args.out)?;
    docroot::remove_stale(&std::env::temp_dir());
    let pinning = cpu::pin();
    let mut journal = results::Journal::open(&out, args.resume)?;
    // The robustness table's points too: its progress shows on the same bar.
    let robust =
        |e: &Experiment| e.robustness.as_ref().filter(|_| hosts.is_local()).map_or(0, |s| s.points(args.quick));
    let total: usize = exps
        .iter()
        .map(|e| plan::server_runs(e, args.quick).iter().map(|r| r.points.len()).sum::<usize>() + robust(e))
        .sum();
    let bar = progress(total as u64);
    let mut run = runner::Run {
        quick: args.quick,
        keep_disturbed: args.keep_disturbed,
        journal: &mut journal,
        bar: &bar,
        hosts: &hosts,
        link: link.as_ref().zip(across.as_ref()),
        server_cpus: args.server_cpus.map(usize::from),
        base_rtt: args.hosts.rtt,
    };
    for exp in &exps {
        runner::run_experiment(exp, &mut run).with_context(|| format!("experiment {}", exp.id))?;
    }
    // A resumed run keeps the machine it started on (its points were measured there).
    let started_on = args.resume.then(|| out.path().join(machine::FILE)).filter(|f| f.is_file());
    let machine = match started_on {
        Some(_) => machine::Machine::of_results(out.path()),
        None => {
            let mut machine = machine::Machine::describe(pinning);
            machine.network = hosts::describe_network(&args.hosts, link.as_ref());
            if let Some(n) = args.server_cpus {
                let set = pinning.server_set(Some(usize::from(n)));
                machine.pinning = format!("{}; --server-cpus {n}: servers on CPUs {set:?}", machine.pinning);
            }
            machine.save(&out)?;
            machine
        }
    };
    report::write(&out, &exps, args.quick, &journal.records, &machine, args.keep_disturbed, None)?;
    for exp in &exps {
        if let Some(spec) = &exp.robustness {
            if !hosts.is_local() {
                eprintln!("spidey lab: {} skipped: its crowds and clients run on this host's loopback only", exp.id);
                continue;
            }
            let points = robustness::run(exp, spec, (args.quick, args.resume), &out, &hosts, &bar)
                .with_context(|| format!("experiment {}", exp.id))?;
            let section = robustness_report::write(&out, &spec.attacks, &points)?;
            report::write(&out, &exps, args.quick, &journal.records, &machine, args.keep_disturbed, Some(section))?;
        }
    }
    bar.finish_with_message("done");
    let rows = report::verdict_rows(&exps, args.quick, &journal.records, machine.cores);
    // A quick run says what it did not measure and why, as its report does (the repeats
    // left out as disturbed among the reasons); a full run says how many repeats were.
    let folded = if args.quick { unmeasured::fold(&exps, &rows, true, &journal.records) } else { Vec::new() };
    match unmeasured::summary(&folded, &journal.records) {
        Some(note) => eprintln!("spidey lab: {note}"),
        None => {
            if let Some(note) = report::excluded_note(&journal.records) {
                eprintln!("spidey lab: {note}");
            }
        }
    }
    let bound = rows.iter().filter(|(_, v)| v.outcome == verdict::Outcome::ClientBound).count();
    if let Some(note) = summary::cannot_drive(bound) {
        eprintln!("spidey lab: {note}");
    }
    println!("spidey lab: {} points; report in {}", total, out.path().join("report.html").display());
    Ok(())
}

/// The records of a results file (plain or gzipped), and whether it is a quick run's (every
/// point in it a quick one).
fn read_results(results: &std::path::Path) -> anyhow::Result<(bool, HashMap<String, results::Record>)> {
    if !results.is_file() {
        return Err(ConfigError(format!("no results file {}", results.display())).into());
    }
    let records = results::read(results)?;
    let quick = !records.is_empty() && records.keys().all(|id| id.starts_with("quick/"));
    Ok((quick, records))
}

/// The CPUs of the machine a results file was measured on (its `machine.json` or
/// `report.md`, beside it).
fn cores_of(results: &std::path::Path) -> usize {
    machine::Machine::of_results(results.parent().unwrap_or(std::path::Path::new("."))).cores
}

/// `--report`: the report of a results file, measuring nothing. The experiments are those
/// with points in it (and the robustness experiment when a `robustness.jsonl` is beside it).
fn rerender(exps: &[Experiment], results: &std::path::Path, out: &std::path::Path) -> anyhow::Result<()> {
    let (quick, records) = read_results(results)?;
    let dir = results.parent().unwrap_or(std::path::Path::new("."));
    let journal = dir.join(robustness::JOURNAL);
    let ran: Vec<Experiment> = exps
        .iter()
        .filter(|e| records.values().any(|r| r.experiment == e.id) || (e.robustness.is_some() && journal.is_file()))
        .cloned()
        .collect();
    let out = OutDir::open(out)?;
    let mut extra = None;
    for exp in &ran {
        if let Some(spec) = &exp.robustness {
            if journal.is_file() {
                extra = Some(robustness_report::write(&out, &spec.attacks, &robustness::read(&journal)?)?);
            }
        }
    }
    let machine = machine::Machine::of_results(dir);
    // A repeat kept though disturbed is what --keep-disturbed leaves (without it, one still
    // disturbed after its tries is marked excluded).
    let keep_disturbed =
        records.values().filter_map(|r| r.measurement.as_ref()).any(|m| m.cpu.disturbed && !m.excluded);
    report::write(&out, &ran, quick, &records, &machine, keep_disturbed, extra)?;
    println!("spidey lab: the report of {} in {}", results.display(), out.path().join("report.html").display());
    Ok(())
}

fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    // A bar of fixed width and a message cut to the line: a long point name never squeezes
    // the bar to nothing.
    let style = ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} ETA {eta} {wide_msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar
}
