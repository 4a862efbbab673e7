//! Runs an experiment's points: per server configuration, start the server over the
//! generated root, warm it up, measure each point still missing from the journal, stop it.
//!
//! A point lasts at least [`MIN_POINT`] ([`MIN_QUICK_POINT`] in a quick run): its batch
//! (the seed's request count, or its duration) runs back to back until the batches do
//! (`load::measure_for`), so the CPU clocks and the machine's counters measure something.
//! A point measured on a disturbed machine (`cpu.rs`) is measured again, up to
//! [`EXTRA_TRIES`] more times; one still disturbed is kept in the journal marked
//! `excluded`, and left out of intervals and verdicts (`table::Sample`).

use crate::experiment::plan::{self, Point, ServerRun};
use crate::experiment::{ClientSpec, Experiment, ServerSpec};
use crate::run::capacity;
use crate::run::cpu;
use crate::run::delay_line::DelayLine;
use crate::run::docroot::DocRoot;
use crate::run::hosts::Hosts;
use crate::run::load::{measure, measure_for_with, Load};
use crate::run::measurement::Measurement;
use crate::run::results::{Journal, Outcome, Record};
use crate::run::server::{self, Started};
use crate::run::server_counts;
use indicatif::ProgressBar;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

/// Everything a run needs beside the experiment.
pub(crate) struct Run<'a> {
    pub quick: bool,
    /// Measure each point once and keep it even when disturbed (`--keep-disturbed`).
    pub keep_disturbed: bool,
    pub journal: &'a mut Journal,
    pub bar: &'a ProgressBar,
    /// Where the server and the load run.
    pub hosts: &'a Hosts,
    /// The delay line and the hosts across it, for sweeps with a round trip.
    pub link: Option<(&'a DelayLine, &'a Hosts)>,
    /// The round trip of the whole run (`--rtt`), which sweeps without one of their own use.
    pub base_rtt: Option<Duration>,
    /// How many CPUs a server runs on when its arm does not say (`--server-cpus`).
    pub server_cpus: Option<usize>,
}

/// Runs every point of `exp` not yet in the journal.
pub(crate) fn run_experiment(exp: &Experiment, run: &mut Run<'_>) -> anyhow::Result<()> {
    let runs = plan::server_runs(exp, run.quick);
    let pending: Vec<ServerRun> = runs
        .into_iter()
        .filter_map(|mut r| {
            let before = r.points.len();
            r.points.retain(|p| !run.journal.has(&p.id));
            run.bar.inc((before - r.points.len()) as u64);
            (!r.points.is_empty()).then_some(r)
        })
        .collect();
    if pending.is_empty() {
        return Ok(());
    }
    let names: BTreeSet<String> = pending.iter().flat_map(|r| r.points.iter().map(|p| p.workload.clone())).collect();
    run.bar.set_message(format!("{}: generating the document root", exp.id));
    let root = DocRoot::generate(exp, &names.into_iter().collect::<Vec<_>>(), run.quick)?;
    for server_run in &pending {
        run_server(exp, server_run, &root, run)?;
    }
    Ok(())
}

/// One server configuration across the network its sweep asks for: a sweep with a round
/// trip runs across the delay line set to it, others where the run's hosts say.
fn run_server(exp: &Experiment, sr: &ServerRun, root: &DocRoot, run: &mut Run<'_>) -> anyhow::Result<()> {
    let default = run.hosts;
    match (sr.rtt.or(run.base_rtt), run.link) {
        (Some(rtt), Some((line, across))) => {
            anyhow::Context::context(line.retarget(rtt), "setting the delay line's round trip")?;
            if sr.rtt.is_some() {
                run.hosts = across;
            }
        }
        (Some(_), None) if sr.rtt.is_some() => {
            let note = "this sweep runs across a delay line, which needs root and /dev/net/tun";
            return record_all(exp, sr, Outcome::Skipped, note, run);
        }
        _ => {}
    }
    if let Some(why) = sr.cold.and_then(|c| c.unavailable(run.hosts)) {
        run.hosts = default;
        return record_all(exp, sr, Outcome::Skipped, why, run);
    }
    let result = run_server_here(exp, sr, root, run);
    run.hosts = default;
    result
}

/// One server configuration: start, warm up, measure its points, stop.
fn run_server_here(exp: &Experiment, sr: &ServerRun, root: &DocRoot, run: &mut Run<'_>) -> anyhow::Result<()> {
    run.bar.set_message(format!("{}: starting {}", exp.id, sr.server.label));
    let spec = ServerSpec { cpus: sr.server.cpus.or(run.server_cpus), ..sr.server.clone() };
    let server = match server::start(&spec, &exp.peers, root, run.hosts) {
        Ok(Started::Running(s)) => s,
        Ok(Started::Unavailable(note)) => return record_all(exp, sr, Outcome::Skipped, &note, run),
        Err(e) => return record_all(exp, sr, Outcome::Failed, &format!("{e:#}"), run),
    };
    warm_up(&server, sr, root, run.hosts);
    let mut checked: BTreeMap<&str, Result<(), String>> = BTreeMap::new();
    let mut capacities: BTreeMap<&str, Result<f64, String>> = BTreeMap::new();
    for point in &sr.points {
        run.bar.set_message(point.id.clone());
        let check = checked.entry(&point.workload).or_insert_with(|| probe(&server, root, &point.workload, run.hosts));
        let measured = match (&check, point.client.capacity) {
            (Ok(()), Some(_)) => Some(capacities.entry(&point.workload).or_insert_with(|| {
                capacity::measure_capacity(&server, root, &point.workload, &point.client, run.hosts, run.quick)
            })),
            _ => None,
        };
        let record = match (check, measured) {
            (Ok(()), Some(Err(why))) => {
                let mut r = Record::new(&exp.id, point, Outcome::Failed);
                r.note = Some(why.clone());
                r
            }
            (Ok(()), cap) => {
                let cap = cap.and_then(|c| c.as_ref().ok().copied());
                measure_point(exp, point, &server, root, run, sr, cap)
            }
            (Err(why), _) => {
                let mut r = Record::new(&exp.id, point, Outcome::Skipped);
                r.note = Some(format!("{}: does not serve {} here ({why})", sr.server.label, point.workload));
                r
            }
        };
        run.journal.append(record)?;
        run.bar.inc(1);
    }
    run.bar.set_message(format!("{}: stopping {}", exp.id, sr.server.label));
    if let Err(e) = server.stop() {
        run.bar.println(format!("warning: {}: {e:#}", sr.server.label));
    }
    Ok(())
}

/// A few requests of the first workload before measuring; a failure shows up in the points.
fn warm_up(server: &server::Running, sr: &ServerRun, root: &DocRoot, hosts: &Hosts) {
    let Some(first) = sr.points.first() else { return };
    if sr.warmup == 0 {
        return;
    }
    let paths = root.urls.get(&first.workload).cloned().unwrap_or_default();
    let _ = measure(&Load {
        port: server.port,
        paths: &paths,
        client: &one_client(sr.warmup),
        hosts,
        tls: server.tls.as_deref(),
    });
}

/// One keep-alive connection sending `n` requests.
fn one_client(n: u64) -> ClientSpec {
    ClientSpec::closed(1, n)
}

/// One request for a workload's first URL: it must be 2xx with the expected body length,
/// so a build without CGI (which would send the script itself) is not measured as CGI.
/// It speaks HTTP/1.0, so a body of unknown length (CGI) comes close-delimited rather
/// than chunked and its bytes on the wire are the body's.
fn probe(server: &server::Running, root: &DocRoot, workload: &str, hosts: &Hosts) -> Result<(), String> {
    let path = root.urls.get(workload).and_then(|u| u.first()).ok_or("no URL")?;
    if let Some(ca) = &server.tls {
        return probe_tls(server.port, ca, root, workload, path, hosts);
    }
    let mut s = TcpStream::connect(server.addr()).map_err(|e| e.to_string())?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: lab\r\n\r\n").as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("no response")?;
    let status = std::str::from_utf8(&raw[..head_end]).ok().and_then(|h| h.get(9..12)).unwrap_or("?").to_string();
    let body = (raw.len() - head_end - 4) as u64;
    if !status.starts_with('2') {
        return Err(format!("GET {path} answered {status}"));
    }
    match root.expect.get(workload).copied().flatten() {
        Some(want) if want != body => Err(format!("GET {path} sent {body} bytes, not {want}")),
        _ => Ok(()),
    }
}

/// [`probe`] over HTTPS: one request through the lab's own load (`spidey bench`'s TLS
/// client, verifying the certificate against `ca`), which counts the status and body bytes.
fn probe_tls(port: u16, ca: &Path, root: &DocRoot, workload: &str, path: &str, hosts: &Hosts) -> Result<(), String> {
    let paths = [path.to_string()];
    let load = Load { port, paths: &paths, client: &one_client(1), hosts, tls: Some(ca) };
    let (m, raw) = measure(&load).map_err(|e| format!("{e:#}"))?;
    if m.responses != 1 || m.non_success != 0 || m.errors != 0 {
        return Err(format!(
            "GET {path} over TLS: {} answers, {} of status 400 or above, {} errors",
            m.responses, m.non_success, m.errors
        ));
    }
    let body = raw.as_ref().and_then(|r| r["body_bytes"].as_u64());
    match (root.expect.get(workload).copied().flatten(), body) {
        (Some(want), Some(got)) if want != got => Err(format!("GET {path} sent {got} bytes, not {want}")),
        _ => Ok(()),
    }
}

/// The shortest a point may last in a full run...
pub(crate) const MIN_POINT: Duration = Duration::from_millis(500);
/// ...and in a quick run.
pub(crate) const MIN_QUICK_POINT: Duration = Duration::from_millis(100);
/// How many more times a disturbed point is measured.
pub(crate) const EXTRA_TRIES: u32 = 2;

/// One point, with the server tree's CPU time and the machine's state around it, measured
/// again while disturbed ([`until_clean`]); one batch when its sweep asks (from cold
/// caches with `cold`, `cold.rs`; from fresh client processes with `fresh_clients`); with
/// a share of capacity, at that share of `measured_capacity`.
fn measure_point(
    exp: &Experiment,
    point: &Point,
    server: &server::Running,
    root: &DocRoot,
    run: &Run<'_>,
    sr: &ServerRun,
    measured_capacity: Option<f64>,
) -> Record {
    let paths = root.urls.get(&point.workload).cloned().unwrap_or_default();
    let client = capacity::offered(&point.client, measured_capacity);
    // A cold point is one batch, the seed's N from cold caches: stretching it to the
    // minimum duration would need the caches made cold again for every batch.
    let floor = match (sr.one_batch, run.quick) {
        (true, _) => Duration::ZERO,
        (false, true) => MIN_QUICK_POINT,
        (false, false) => MIN_POINT,
    };
    let cold = sr.cold;
    let fresh = sr.fresh_clients.then(|| run.hosts.with_fresh_clients(point.client.c as usize));
    let hosts = fresh.as_ref().unwrap_or(run.hosts);
    let client_here = server.tls.is_some() || hosts.load_runs_here();
    let mut make_cold = || cold.map_or(Ok(()), |c| c.apply(&root.root(), hosts));
    let attempt = || {
        let load1 = cpu::load1();
        let counts_before = server.counts.then(|| server_counts::scrape(server.addr())).flatten();
        let before = cpu::Snapshot::take(server.pid(), cpu::Edge::Start);
        let load = Load { port: server.port, paths: &paths, client: &client, hosts, tls: server.tls.as_deref() };
        let measured = measure_for_with(&load, floor, &mut make_cold);
        let after = cpu::Snapshot::take(server.pid(), cpu::Edge::End);
        let counts_after = counts_before.as_ref().and_then(|_| server_counts::scrape(server.addr()));
        let (mut m, raw) = measured?;
        m.cpu = before.until(&after, load1, client_here);
        // A server on another host has no CPU here: none counted (no saturation figure).
        let here = hosts.server_runs_here();
        m.cpu.shares =
            Some(if here { cpu::point_shares(sr.server.cpus.or(run.server_cpus)) } else { Default::default() });
        m.server = counts_before.zip(counts_after).map(|(b, a)| server_counts::between(&b, &a));
        m.capacity_rps = measured_capacity;
        Ok((m, raw))
    };
    match until_clean(run.keep_disturbed, attempt) {
        Ok((m, raw)) => {
            let mut r = Record::new(&exp.id, point, Outcome::Measured);
            r.measurement = Some(m);
            r.raw = raw;
            let share = point.client.capacity.zip(measured_capacity).map(|(x, cap)| capacity::note(x, cap));
            let fresh = sr
                .fresh_clients
                .then(|| format!("fresh clients: {} spidey bench processes started for the point", point.client.c));
            let notes: Vec<String> = share.into_iter().chain(cold.map(|c| c.note().to_string())).chain(fresh).collect();
            r.note = (!notes.is_empty()).then(|| notes.join("; "));
            r
        }
        Err(e) => {
            let mut r = Record::new(&exp.id, point, Outcome::Failed);
            r.note = Some(format!("{e:#}"));
            r
        }
    }
}

/// Measures with `attempt` until a try is not disturbed, at most 1 + [`EXTRA_TRIES`]
/// times, and returns the last try with their count; a last try still disturbed comes
/// back `excluded`. With `keep_disturbed` the first try is kept, disturbed or not.
pub(crate) fn until_clean<R>(
    keep_disturbed: bool,
    mut attempt: impl FnMut() -> anyhow::Result<(Measurement, R)>,
) -> anyhow::Result<(Measurement, R)> {
    let mut tries = 0;
    loop {
        tries += 1;
        let (mut m, raw) = attempt()?;
        m.tries = tries;
        if !m.cpu.disturbed || keep_disturbed {
            return Ok((m, raw));
        }
        if tries > EXTRA_TRIES {
            m.excluded = true;
            return Ok((m, raw));
        }
    }
}

fn record_all(exp: &Experiment, sr: &ServerRun, outcome: Outcome, note: &str, run: &mut Run<'_>) -> anyhow::Result<()> {
    run.bar.println(format!("{}: {note}", exp.id));
    for point in &sr.points {
        let mut r = Record::new(&exp.id, point, outcome);
        r.note = Some(note.to_string());
        run.journal.append(r)?;
        run.bar.inc(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::metric::Metric;
    use crate::experiment::ClientSpec;
    use crate::judge::sample::Sample;
    use crate::run::cpu::PointCpu;

    /// A fake measurement: `rps`, on a machine disturbed or not.
    fn run(rps: f64, disturbed: bool) -> Measurement {
        let cpu = PointCpu { disturbed, other_busy_pct: if disturbed { 40.0 } else { 1.0 }, ..Default::default() };
        Measurement { rps, responses: 100, cpu, ..Default::default() }
    }

    /// Plays the given tries in order, counting the calls.
    fn tries(script: &[(f64, bool)], keep: bool) -> (Measurement, usize) {
        let mut calls = 0;
        let (m, ()) = until_clean(keep, || {
            calls += 1;
            let (rps, disturbed) = script[calls - 1];
            Ok((run(rps, disturbed), ()))
        })
        .unwrap();
        (m, calls)
    }

    /// A disturbed repeat is measured again until a try is clean, at most twice more; one
    /// still disturbed is kept but excluded, and a point left with too few clean repeats
    /// has no interval and says why it gets no verdict.
    #[test]
    fn a_disturbed_repeat_is_measured_again_and_excluded_if_it_stays_so() {
        // (tries played, keep disturbed) → (rps kept, calls, excluded)
        type Case<'a> = (&'a [(f64, bool)], bool, (f64, usize, bool));
        let cases: [Case<'_>; 5] = [
            (&[(10.0, false)], false, (10.0, 1, false)),
            (&[(1.0, true), (10.0, false)], false, (10.0, 2, false)),
            (&[(1.0, true), (2.0, true), (10.0, false)], false, (10.0, 3, false)),
            (&[(1.0, true), (2.0, true), (3.0, true), (99.0, false)], false, (3.0, 3, true)),
            (&[(1.0, true)], true, (1.0, 1, false)),
        ];
        for (script, keep, (rps, calls, excluded)) in cases {
            let (m, n) = tries(script, keep);
            assert_eq!((m.rps, n, m.tries as usize, m.excluded), (rps, calls, calls, excluded), "{script:?}");
        }
        let failing = until_clean::<()>(false, || anyhow::bail!("connection refused"));
        assert!(failing.is_err(), "a failed try fails the point");

        // Three repeats, the second stayed disturbed: its 1000 req/s is in no statistic, and
        // two clean repeats are too few for a verdict.
        let clean = |rps| tries(&[(rps, false)], false).0;
        let stayed = tries(&[(1000.0, true), (1000.0, true), (1000.0, true)], false).0;
        let mut s = Sample {
            server: "s".into(),
            workload: "w".into(),
            client: ClientSpec::closed(1, 10),
            runs: vec![clean(10.0), stayed, clean(12.0)],
        };
        assert_eq!(s.values(Metric::Rps), [10.0, 12.0]);
        assert_eq!(s.keyed(Metric::Rps), [(0, 10.0), (2, 12.0)], "rounds keep their repeat");
        assert!(!s.interval(Metric::Rps).known());
        assert_eq!(
            s.no_verdict().as_deref(),
            Some("insufficient clean repeats: 2 of 3 measured (1 stayed disturbed), 3 needed")
        );
        assert_eq!(s.disturbance(), "1/3; 2 re-measured; 1 excluded; too few clean: no verdict");
        s.runs.push(clean(11.0));
        assert_eq!(s.no_verdict(), None, "three clean repeats");
        assert_eq!(s.interval(Metric::Rps).median, 11.0);
        assert_eq!(s.disturbance(), "1/4; 2 re-measured; 1 excluded");
    }
}
