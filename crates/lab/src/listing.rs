//! How long experiments take: `spidey lab --list`, and the plan plain `spidey lab` prints
//! instead of starting a full run. A run's time is the last run's, when OUT/results.jsonl
//! holds every point of it; otherwise an estimate from the plan: each point's load (its
//! duration, or its requests at a nominal rate, and at least the lab's minimum point
//! duration) plus a fixed cost per point and per server start, and for the robustness table
//! its crowd's settling time per point. On a busy machine, disturbed points measured again
//! take longer.

use crate::experiment::{ClientSpec, Experiment, ServerSpec};
use crate::plan;
use crate::results::Record;
use crate::robustness;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Starting a server, warming it up and stopping it, in seconds.
const SERVER_START: f64 = 0.5;
/// Each point's own cost beyond its load: the client's setup, the journal's fsync.
const POINT_COST: f64 = 0.05;
/// Nominal rates of a closed loop of `n` requests: a new connection per request, and
/// kept-alive connections.
const CLOSE_RPS: f64 = 3_000.0;
const KEEPALIVE_RPS: f64 = 10_000.0;
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
    let floor = if quick { crate::runner::MIN_QUICK_POINT } else { crate::runner::MIN_POINT };
    let mut points = runs.iter().map(|r| r.points.len()).sum::<usize>();
    let mut seconds: f64 = runs
        .iter()
        .map(|r| {
            let load = |p: &plan::Point| load_seconds(&r.server, &p.client).max(floor.as_secs_f64());
            SERVER_START + r.points.iter().map(|p| POINT_COST + load(p)).sum::<f64>()
        })
        .sum();
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

/// One point's load in seconds: its duration, or its requests at the rate it asks, or
/// the nominal rate, held back by the server's `delay` (served one at a time by `single`).
fn load_seconds(server: &ServerSpec, c: &ClientSpec) -> f64 {
    if let Some(d) = c.duration.as_deref().and_then(|d| spidey_config::duration(d).ok()) {
        return d.as_secs_f64();
    }
    let n = c.n.unwrap_or(0) as f64;
    let delay = server.delay.as_deref().and_then(|d| spidey_config::duration(d).ok()).unwrap_or_default();
    let at_once = if server.mode.as_deref() == Some("single") { 1.0 } else { f64::from(c.c.max(1)) };
    let delayed = n * delay.as_secs_f64() / at_once;
    match c.rate {
        Some(rate) => n / rate,
        None => delayed + n / if c.keepalive { KEEPALIVE_RPS } else { CLOSE_RPS },
    }
}

/// The robustness table's points and seconds: a server start per point, the crowd's
/// settling time under an attack, the legitimate client's (or the mixed load's) duration.
fn robustness_estimate(spec: &robustness::Spec, quick: bool) -> (usize, f64) {
    let spec = spec.for_run(quick);
    let secs = |d: &str| spidey_config::duration(d).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let crowds = spec.crowd_sizes(quick).len();
    let attack = SERVER_START + spec.settle(quick).as_secs_f64() + secs(&spec.legit.duration);
    let baseline = SERVER_START + secs(&spec.legit.duration);
    let mixed = spec.mixed.as_ref().map_or(0.0, |m| SERVER_START + secs(&m.duration));
    let per_server = baseline + attack * (spec.attacks.len() * crowds) as f64 + mixed;
    let points = 1 + spec.attacks.len() * crowds + usize::from(spec.mixed.is_some());
    (points * spec.servers.len(), per_server * spec.servers.len() as f64)
}

/// The seconds the last run spent on these points, if `records` hold every one: the time
/// between each point's end and the previous point's (pauses between runs left out).
fn last_run(ids: &[&str], records: &HashMap<String, Record>) -> Option<f64> {
    if ids.is_empty() || !ids.iter().all(|id| records.contains_key(*id)) {
        return None;
    }
    let mut ends: Vec<u64> = records.values().map(|r| r.finished_at).collect();
    ends.sort_unstable();
    let mut mine: Vec<u64> = ids.iter().map(|id| records[*id].finished_at).collect();
    mine.sort_unstable();
    let gap = |end: u64| {
        let before = ends.partition_point(|&e| e < end);
        before.checked_sub(1).map_or(0, |i| end - ends[i]).min(MAX_GAP)
    };
    Some(mine.iter().map(|&e| gap(e)).sum::<u64>() as f64)
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
    let (mut quick, mut full) = (0.0, 0.0);
    let mut rows = vec![["experiment".to_string(), "--quick".into(), "full".into(), "what it asks".into()]];
    for exp in exps {
        let (q, f) = (time(exp, true, records), time(exp, false, records));
        quick += q.seconds;
        full += f.seconds;
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
         with a connection each, {KEEPALIVE_RPS} kept alive, plus the server's --delay; at least {full_floor}s, \
         {quick_floor}s in a quick run), plus {POINT_COST}s a point and {SERVER_START}s a server start, on a quiet \
         machine (a disturbed point is measured again); \"last run\" is the time OUT/results.jsonl shows for \
         every point of it (the robustness table keeps its own file: always an estimate).",
        full_floor = crate::runner::MIN_POINT.as_secs_f64(),
        quick_floor = crate::runner::MIN_QUICK_POINT.as_secs_f64(),
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
        let exps: Vec<Experiment> =
            crate::sources::find(None, &[]).unwrap().iter().map(|s| Experiment::parse(s).unwrap()).collect();
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
        let exps: Vec<Experiment> =
            crate::sources::find(None, &[]).unwrap().iter().map(|s| Experiment::parse(s).unwrap()).collect();
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
