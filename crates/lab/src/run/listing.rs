//! How long experiments take: `spidey lab --list`, and the plan plain `spidey lab` prints
//! instead of starting a full run. A run's time is the last run's, when OUT/results.jsonl
//! holds every point of it; otherwise an estimate from the plan: each point's load (its
//! duration, or its requests at a nominal rate, and at least the lab's minimum point
//! duration) plus a fixed cost per point, measured on the committed quick runs, and for the
//! robustness table its server and crowd's cost and settling time per point. On a busy
//! machine, disturbed points measured again take longer.

use crate::experiment::plan;
use crate::experiment::{ClientSpec, Experiment, ServerSpec, WorkloadKind};
use crate::run::results::Record;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Each point's own cost beyond its load, in seconds (the load generator's setup, the CPU
/// clocks and the server's counters read around it, the journal's write, and its share of
/// its server's start): measured, not guessed. It is the least-squares fit of `wall clock −
/// Σ load × tries = POINT_COST × points` over every experiment of the committed quick runs
/// (docs/runs/lab-quick-f0759cf, lab-quick-6b992ad and tls-quick-5e56f4d; their records'
/// `finished_at`, `measurement.duration_s` and `tries`): 0.019 s. A second term for server
/// starts fitted to about 0 (-0.004 s) at the records' one-second resolution, so it is left
/// out. The test `the_overheads_are_what_the_committed_quick_runs_measured` fits it again.
const POINT_COST: f64 = 0.02;
/// A robustness point's own cost beyond its settling and load time: a server started and
/// stopped, the crowd opened and closed. Measured: lab-quick-f0759cf's 40 robustness points
/// took 58.8 s (robustness.jsonl's last write after results.jsonl's last point), 18.0 s of
/// which their settling and load: (58.8 - 18.0) / 40 = 1.02 s.
const ROBUSTNESS_START: f64 = 1.0;
/// Nominal rates of a closed loop of `n` requests over one connection at a time, read
/// off the committed full runs (docs/runs/lab-full-4119505 and lab-full-c69ce8d, the
/// median requests/s of their closed-loop points, 2-CPU VM): a new connection per request
/// (single's 1 KB file 10,500 and 12,100, thread's 4 KB 6,500, pool's 10,000, a listing
/// 5,000), and kept-alive connections.
const CLOSE_RPS: f64 = 8_000.0;
const KEEPALIVE_RPS: f64 = 25_000.0;
/// Up to this many connections at once, a closed loop's nominal rate grows with them
/// (those runs' machine had 2 CPUs: single's 1 KB file 12,100/s at 1, 18,100 at 2, 18,400
/// at 4).
const PARALLEL: u32 = 2;
/// `fork`'s rate, whatever the connections: a process per connection (those runs: 1,650
/// to 1,850 at 1 to 60 connections).
const FORK_RPS: f64 = 1_700.0;
/// A CGI script's rate, whatever the connections (those runs: 450 to 610).
const CGI_RPS: f64 = 500.0;
/// Bytes a second of response bodies (those runs: 1 MB files 2.3 GB/s with single, 256 KB
/// with pool 2.2 GB/s).
const BYTES_PER_S: f64 = 2e9;
/// A server run across a delay line: the line set up for it (008's sweeps in
/// docs/runs/explain-000-rtt-8c23e60: about 10 s a server run).
const DELAY_LINE_SETUP: f64 = 10.0;
/// The longest pause between two points of one run; a longer one is a pause between runs.
const MAX_GAP: u64 = 300;

/// How long one experiment's quick or full run takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Time {
    pub points: usize,
    pub seconds: f64,
    /// From the last run's results, not the plan.
    pub measured: bool,
}

/// The time of `exp`'s quick or full run: the last run's, if `records` hold all its
/// points, else the plan's estimate.
pub(crate) fn time(exp: &Experiment, quick: bool, records: &HashMap<String, Record>) -> Time {
    let runs = plan::server_runs(exp, quick);
    let mut points = runs.iter().map(|r| r.points.len()).sum::<usize>();
    let mut seconds = estimate(exp, &runs, quick, 1.0);
    if let Some(spec) = &exp.robustness {
        let (n, s) = robustness_estimate(spec, quick);
        points += n;
        seconds += s;
    }
    let ids: Vec<&str> = runs.iter().flat_map(|r| r.points.iter().map(|p| p.id.as_str())).collect();
    match last_run(&ids, records) {
        Some(s) if exp.robustness.is_none() => Time { points, seconds: s, measured: true },
        _ => Time { points, seconds, measured: false },
    }
}

/// The plan's seconds for `exp`'s `runs` when each point's load runs `tries` times (1 on
/// a quiet machine; a disturbed point is measured again, up to 3 times in all).
fn estimate(exp: &Experiment, runs: &[plan::ServerRun], quick: bool, tries: f64) -> f64 {
    let floor = if quick { crate::run::runner::MIN_QUICK_POINT } else { crate::run::runner::MIN_POINT };
    runs.iter()
        .map(|r| {
            let load = |p: &plan::Point| {
                let workload = exp.workloads.iter().find(|w| w.name == p.workload).map(|w| &w.kind);
                let one = load_seconds(&r.server, workload, quick, &p.client);
                // Across a delay line each request waits a round trip, and a new
                // connection another.
                let trips = if p.client.keepalive { 1.0 } else { 2.0 };
                let waited = r.rtt.map_or(0.0, |rtt| {
                    p.client.n.unwrap_or(0) as f64 * trips * rtt.as_secs_f64() / f64::from(p.client.c.max(1))
                });
                one.max(waited).max(floor.as_secs_f64())
            };
            let setup = if r.rtt.is_some() { DELAY_LINE_SETUP } else { 0.0 };
            setup + r.points.iter().map(|p| POINT_COST + tries * load(p)).sum::<f64>()
        })
        .sum()
}

/// One point's load in seconds: its duration, or its requests at the rate it asks, or at
/// the nominal rate of its server and workload (with the time its bodies take), held back
/// by the server's `delay` (served one at a time by `single`).
fn load_seconds(server: &ServerSpec, workload: Option<&WorkloadKind>, quick: bool, c: &ClientSpec) -> f64 {
    if let Some(d) = c.duration.as_deref().and_then(|d| spidey_config::duration(d).ok()) {
        return d.as_secs_f64();
    }
    let n = c.n.unwrap_or(0) as f64;
    let delay = server.delay.as_deref().and_then(|d| spidey_config::duration(d).ok()).unwrap_or_default();
    let at_once = if server.mode.as_deref() == Some("single") { 1.0 } else { f64::from(c.c.max(1)) };
    let delayed = n * delay.as_secs_f64() / at_once;
    if let Some(rate) = c.rate {
        return n / rate;
    }
    let parallel = f64::from(c.c.clamp(1, PARALLEL));
    let rate = match (workload, server.mode.as_deref()) {
        (Some(WorkloadKind::Cgi { .. }), _) => CGI_RPS,
        (_, Some("fork")) => FORK_RPS,
        _ => parallel * if c.keepalive { KEEPALIVE_RPS } else { CLOSE_RPS },
    };
    let bytes = match workload {
        Some(WorkloadKind::File { size, quick_size }) => quick_size.as_ref().filter(|_| quick).unwrap_or(size).0,
        Some(WorkloadKind::Cgi { size }) => size.0,
        Some(WorkloadKind::Mix { max_size, .. }) => max_size.0 / 2,
        _ => 0,
    };
    delayed + n / rate + n * bytes as f64 / BYTES_PER_S
}

/// The robustness table's points and seconds: a server start per point, the crowd's
/// settling time under an attack, the legitimate client's (or the mixed load's) duration.
fn robustness_estimate(spec: &crate::experiment::robustness_spec::Spec, quick: bool) -> (usize, f64) {
    let spec = spec.for_run(quick);
    let secs = |d: &str| spidey_config::duration(d).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let crowds = spec.crowd_sizes(quick).len();
    let attack = ROBUSTNESS_START + spec.settle(quick).as_secs_f64() + secs(&spec.legit.duration);
    let baseline = ROBUSTNESS_START + secs(&spec.legit.duration);
    let mixed = spec.mixed.as_ref().map_or(0.0, |m| ROBUSTNESS_START + secs(&m.duration));
    let per_server = baseline + attack * (spec.attacks.len() * crowds) as f64 + mixed;
    (spec.points(quick), per_server * spec.servers.len() as f64)
}

/// The seconds the last run spent on these points, if `records` hold every one: the time
/// between each point's end and the end before it (pauses between runs left out). The
/// ends are whole seconds: of points ending in the same second, one takes the gap and the
/// others none (each taking it counted a second many times over in a quick run).
fn last_run(ids: &[&str], records: &HashMap<String, Record>) -> Option<f64> {
    if ids.is_empty() || !ids.iter().all(|id| records.contains_key(*id)) {
        return None;
    }
    let mut ends: Vec<(u64, &str)> = records.values().map(|r| (r.finished_at, r.id.as_str())).collect();
    ends.sort_unstable();
    let gaps: HashMap<&str, u64> = ends
        .iter()
        .enumerate()
        .map(|(i, &(end, id))| (id, i.checked_sub(1).map_or(0, |j| end - ends[j].0).min(MAX_GAP)))
        .collect();
    Some(ids.iter().map(|id| gaps[id]).sum::<u64>() as f64)
}

/// `2m 05s`, `45s`, `1h 12m`.
pub(crate) fn human(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The table `--list` prints: each experiment's id, quick and full times, and title,
/// in columns as wide as their longest cell. An experiment whose sweeps all run in full
/// runs only says so in the quick column.
pub(crate) fn table(exps: &[Experiment], records: &HashMap<String, Record>) -> String {
    let mut out = String::new();
    let cell = |t: Time| {
        if t.points == 0 {
            "full runs only".to_string()
        } else {
            format!("{} {}", human(t.seconds), if t.measured { "(last run)" } else { "(estimate)" })
        }
    };
    let (mut quick, mut full, mut busy) = (0.0, 0.0, 0.0);
    let mut rows = vec![["experiment".to_string(), "--quick".into(), "full".into(), "what it asks".into()]];
    for exp in exps {
        let (q, f) = (time(exp, true, records), time(exp, false, records));
        quick += q.seconds;
        full += f.seconds;
        // The quick run on a busy machine: every point measured 3 times.
        busy += estimate(exp, &plan::server_runs(exp, true), true, f64::from(1 + crate::run::runner::EXTRA_TRIES))
            + exp.robustness.as_ref().map_or(0.0, |r| robustness_estimate(r, true).1);
        rows.push([exp.id.clone(), cell(q), cell(f), exp.title.clone()]);
    }
    rows.push(["all".into(), human(quick), human(full), String::new()]);
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (width(0), width(1), width(2));
    for [id, q, f, title] in &rows {
        let line = format!("{id:<w0$}  {q:<w1$}  {f:<w2$}  {title}");
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(
        out,
        "An estimate is the plan's: each point's load (its duration, or its requests at {CLOSE_RPS} a second \
         per connection up to {PARALLEL} with a connection each, {KEEPALIVE_RPS} kept alive, {FORK_RPS} for fork, \
         {CGI_RPS} for CGI, plus its bodies at {gbps} GB/s, the server's --delay and a delay line's round trips \
         ({DELAY_LINE_SETUP}s to set one up); rates a 2-CPU machine measured in the committed full runs; at least \
         {full_floor}s, {quick_floor}s in a quick run), plus {POINT_COST}s a point ({ROBUSTNESS_START}s a robustness point, for \
         its server and crowd), as the committed quick runs measured, on a quiet machine (a disturbed point is \
         measured again, up to 3 times: the quick run's loads thrice take {busy}, and on a machine at load 12 on 2 \
         CPUs, lab-quick-f0759cf, it took 7m 02s); \"last run\" is the time OUT/results.jsonl shows for \
         every point of it (the robustness table keeps its own file: always an estimate).",
        busy = human(busy),
        gbps = BYTES_PER_S / 1e9,
        full_floor = crate::run::runner::MIN_POINT.as_secs_f64(),
        quick_floor = crate::run::runner::MIN_QUICK_POINT.as_secs_f64(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_times_table() {
        for (s, want) in [(0.4, "0s"), (45.0, "45s"), (125.0, "2m 05s"), (4320.0, "1h 12m")] {
            assert_eq!(human(s), want, "{s}");
        }
    }

    /// The columns line up however long an id is, and a full-runs-only experiment says so.
    #[test]
    fn the_table_aligns_its_columns() {
        let exps: Vec<Experiment> = crate::experiment::sources::find(None, &[])
            .unwrap()
            .iter()
            .map(|s| Experiment::parse(s).unwrap())
            .collect();
        let text = table(&exps, &HashMap::new());
        let rows: Vec<&str> = text.lines().take(exps.len() + 2).collect();
        let quick_at = rows[0].find("--quick").unwrap();
        for row in &rows {
            let chars: Vec<char> = row.chars().collect();
            // The second column starts at the header's `--quick` in every row: two spaces
            // before it, a character of the cell at it.
            let starts = chars.get(quick_at - 2..=quick_at).is_some_and(|c| c[0] == ' ' && c[1] == ' ' && c[2] != ' ');
            assert!(starts, "misaligned at column {quick_at}: {row:?}");
        }
        assert!(text.contains("full runs only"), "{text}");
        assert!(!text.contains(" 0s (estimate)"), "{text}");
    }

    #[test]
    fn the_quick_plan_takes_at_most_three_minutes() {
        let exps: Vec<Experiment> = crate::experiment::sources::find(None, &[])
            .unwrap()
            .iter()
            .map(|s| Experiment::parse(s).unwrap())
            .collect();
        let none = HashMap::new();
        let per: Vec<(String, Time)> = exps.iter().map(|e| (e.id.clone(), time(e, true, &none))).collect();
        let total: f64 = per.iter().map(|(_, t)| t.seconds).sum();
        assert!(total <= 180.0, "the quick run's estimate is {}: {per:?}", human(total));
        // Every experiment is in the smoke test, but one whose sweeps all run in full runs
        // only (008: it needs root for its delay line).
        for (e, (id, t)) in exps.iter().zip(&per) {
            let full_only = e.sweeps.iter().all(|s| s.full_only);
            assert!(!t.measured && (full_only || (t.points > 0 && t.seconds > 0.0)), "{id}: {t:?}");
        }
    }
}

/// The estimates against the times the committed runs recorded (docs/runs/*/results.jsonl*).
#[cfg(test)]
mod committed_runs {
    use super::*;

    /// Each committed run's name, whether it is a quick run, and its records.
    fn runs() -> Vec<(String, bool, HashMap<String, Record>)> {
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/runs"));
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            for file in ["results.jsonl", "results.jsonl.gz"] {
                if let Ok(records) = crate::run::results::read(&entry.path().join(file)) {
                    let quick = !records.is_empty() && records.keys().all(|id| id.starts_with("quick/"));
                    out.push((entry.file_name().to_string_lossy().into_owned(), quick, records));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn experiments() -> Vec<Experiment> {
        crate::experiment::sources::find(None, &[]).unwrap().iter().map(|s| Experiment::parse(s).unwrap()).collect()
    }

    /// Per experiment of a run: (wall clock − Σ load, points, server runs), from its records
    /// (a disturbed point is measured again: each try costs its load).
    fn overheads(records: &HashMap<String, Record>) -> Vec<(f64, f64, f64)> {
        let mut by: HashMap<&str, Vec<&Record>> = HashMap::new();
        for r in records.values() {
            by.entry(r.experiment.as_str()).or_default().push(r);
        }
        by.values()
            .map(|rs| {
                let ids: Vec<&str> = rs.iter().map(|r| r.id.as_str()).collect();
                let wall = last_run(&ids, records).unwrap_or(0.0);
                let load: f64 = rs
                    .iter()
                    .filter_map(|r| r.measurement.as_ref())
                    .map(|m| m.duration_s * f64::from(m.tries.max(1)))
                    .sum();
                let runs: std::collections::BTreeSet<(&str, &str, u32)> =
                    rs.iter().map(|r| (r.sweep.as_str(), r.server.as_str(), r.repeat)).collect();
                (wall - load, rs.len() as f64, runs.len() as f64)
            })
            .collect()
    }

    /// [`POINT_COST`] is the least-squares fit of each experiment's overhead (its wall
    /// clock less its load) to its points, over the committed quick runs.
    #[test]
    fn the_overheads_are_what_the_committed_quick_runs_measured() {
        let rows: Vec<(f64, f64, f64)> =
            runs().into_iter().filter(|r| r.1).flat_map(|(_, _, records)| overheads(&records)).collect();
        assert!(rows.len() >= 14, "the committed quick runs' experiments: {rows:?}");
        let point = rows.iter().map(|r| r.0 * r.1).sum::<f64>() / rows.iter().map(|r| r.1 * r.1).sum::<f64>();
        eprintln!("fit: {point:.3} s a point over {} experiments", rows.len());
        assert!((point - POINT_COST).abs() < 0.01, "a point's overhead measured {point:.3} s, POINT_COST {POINT_COST}");
    }

    /// Whether the plan of `exp` has sweeps whose points need setup of their own that the
    /// estimate does not model: caches made cold, client processes or servers started per
    /// point, CPUs set per arm (a delay line's setup and round trips it does model).
    fn special(exp: &Experiment) -> bool {
        exp.sweeps.iter().any(|s| {
            s.cold.is_some() || s.fresh_clients || s.server_per_point || s.servers.iter().any(|x| x.cpus.is_some())
        })
    }

    /// The plan's estimate of each experiment whose points a committed run holds in full
    /// (today's plan, unchanged since) against the time that run recorded, each point's
    /// load counted as many times as the run tried it on average:
    /// - a quick run tried about once a point: the total within 20%, each experiment within
    ///   a factor of 2;
    /// - a quick run on a machine so busy that it tried every point about 3 times (load 12
    ///   on 2 CPUs: lab-quick-f0759cf): there the loads themselves ran slower than planned
    ///   (a 200 ms point of 005 took 1.4 s), so the estimate is a lower bound, and at least
    ///   40% of the time;
    /// - a full run's total, over its experiments without setup of their own the estimate
    ///   leaves out ([`special`]), within 30%, and each such experiment within a factor of 2
    ///   (the nominal request rates are the rough part: 010's cold points once came out at
    ///   2 h 35 min against 26 min measured, at a flat 3,000 connections a second).
    #[test]
    fn the_estimates_follow_the_committed_runs() {
        let exps = experiments();
        let mut compared = 0;
        for (name, quick, records) in runs() {
            let (mut estimated, mut measured) = (0.0, 0.0);
            let tried = |r: &&Record| r.measurement.as_ref().map_or(1, |m| m.tries.max(1));
            let busy = records.values().map(|r| tried(&r)).sum::<u32>() as f64 > 1.5 * records.len() as f64;
            for exp in exps.iter().filter(|e| e.robustness.is_none()) {
                let last = time(exp, quick, &records);
                if !last.measured {
                    continue;
                }
                let mine: Vec<&Record> = records.values().filter(|r| r.experiment == exp.id).collect();
                let tries = f64::from(mine.iter().map(tried).sum::<u32>()) / mine.len() as f64;
                let estimate = estimate(exp, &plan::server_runs(exp, quick), quick, tries);
                eprintln!("{name} {}: estimate {} measured {}", exp.id, human(estimate), human(last.seconds));
                // Each experiment within a factor of 2: a quick run's on a quiet machine, a
                // full run's where the estimate models its setup.
                if (quick && !busy) || (!quick && !special(exp)) {
                    let ratio = estimate / last.seconds;
                    assert!(
                        (0.5..=2.0).contains(&ratio),
                        "{name} {}: {estimate:.0} s against {:.0} s",
                        exp.id,
                        last.seconds
                    );
                }
                if quick || !special(exp) {
                    estimated += estimate;
                    measured += last.seconds;
                }
            }
            if measured == 0.0 {
                continue;
            }
            compared += 1;
            let share = estimated / measured;
            eprintln!(
                "{name}: estimate {} measured {} ({:+.0}%)",
                human(estimated),
                human(measured),
                (share - 1.0) * 100.0
            );
            let bounds = match (quick, busy) {
                (true, false) => 0.8..=1.2,
                (true, true) => 0.4..=1.0,
                (false, _) => 0.7..=1.3,
            };
            assert!(bounds.contains(&share), "{name}: estimated {estimated:.0} s, measured {measured:.0} s");
        }
        assert!(compared >= 3, "runs with today's plan: {compared}");
    }
}
