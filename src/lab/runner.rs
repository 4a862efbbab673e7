//! Runs an experiment's points: per server configuration, start the server over the
//! generated root, warm it up, measure each point still missing from the journal, stop it.

use crate::lab::cpu;
use crate::lab::docroot::DocRoot;
use crate::lab::experiment::{ClientSpec, Experiment};
use crate::lab::hosts::Hosts;
use crate::lab::load::{measure, Load};
use crate::lab::plan::{self, Point, ServerRun};
use crate::lab::results::{Journal, Outcome, Record};
use crate::lab::server::{self, Started};
use crate::lab::server_counts;
use indicatif::ProgressBar;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

/// Everything a run needs beside the experiment.
pub(crate) struct Run<'a> {
    pub quick: bool,
    pub journal: &'a mut Journal,
    pub bar: &'a ProgressBar,
    /// Where the server and the load run.
    pub hosts: &'a Hosts,
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

/// One server configuration: start, warm up, measure its points, stop.
fn run_server(exp: &Experiment, sr: &ServerRun, root: &DocRoot, run: &mut Run<'_>) -> anyhow::Result<()> {
    run.bar.set_message(format!("{}: starting {}", exp.id, sr.server.label));
    let server = match server::start(&sr.server, &exp.peers, root, run.hosts) {
        Ok(Started::Running(s)) => s,
        Ok(Started::Unavailable(note)) => return record_all(exp, sr, Outcome::Skipped, &note, run),
        Err(e) => return record_all(exp, sr, Outcome::Failed, &format!("{e:#}"), run),
    };
    warm_up(&server, sr, root, run.hosts);
    let mut checked: BTreeMap<&str, Result<(), String>> = BTreeMap::new();
    for point in &sr.points {
        run.bar.set_message(point.id.clone());
        let check = checked.entry(&point.workload).or_insert_with(|| probe(&server, root, &point.workload, run.hosts));
        let record = match check {
            Ok(()) => measure_point(exp, point, &server, root, run.hosts),
            Err(why) => {
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

/// One point, with the server tree's CPU time and the machine's state around it.
fn measure_point(exp: &Experiment, point: &Point, server: &server::Running, root: &DocRoot, hosts: &Hosts) -> Record {
    let paths = root.urls.get(&point.workload).cloned().unwrap_or_default();
    let load1 = cpu::load1();
    let counts_before = server.counts.then(|| server_counts::scrape(server.addr())).flatten();
    let before = cpu::Snapshot::take(server.pid());
    let load = Load { port: server.port, paths: &paths, client: &point.client, hosts, tls: server.tls.as_deref() };
    let measured = measure(&load);
    let after = cpu::Snapshot::take(server.pid());
    let counts_after = counts_before.as_ref().and_then(|_| server_counts::scrape(server.addr()));
    match measured {
        Ok((mut m, raw)) => {
            m.cpu = before.until(&after, load1);
            m.server = counts_before.zip(counts_after).map(|(b, a)| server_counts::between(&b, &a));
            let mut r = Record::new(&exp.id, point, Outcome::Measured);
            r.measurement = Some(m);
            r.raw = raw;
            r
        }
        Err(e) => {
            let mut r = Record::new(&exp.id, point, Outcome::Failed);
            r.note = Some(format!("{e:#}"));
            r
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
