//! The one seam between the lab and the load generator: [`measure`] runs a [`Load`] against
//! the server through `spidey_bench` (in-process, or from the client hosts: [`Hosts`]) and
//! returns the lab's [`Measurement`] plus bench's full result, kept in `results.jsonl` as it
//! reported it.

use crate::experiment::{ClientSpec, Model};
use crate::run::hosts::Hosts;
use crate::run::measurement::Measurement;
use spidey_bench::LATE_AFTER;
use spidey_bench::{
    merge, run_bench, run_bench_protocol, run_bench_with, BenchConfig, BenchResult, OpenModel, Protocol, Resume, Stop,
    Target, TlsOptions, Verify,
};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// One load to apply: `client` settings against `paths` (picked at random per request).
pub(crate) struct Load<'a> {
    pub port: u16,
    pub paths: &'a [String],
    pub client: &'a ClientSpec,
    /// Where the server listens and where the load comes from.
    pub hosts: &'a Hosts,
    /// Over HTTPS: the CA file that verifies the server (the load runs on this host).
    pub tls: Option<&'a Path>,
}

/// How long a request may take before it counts as a timeout error.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The most batches a point runs to reach its minimum duration (a batch that takes no
/// time at all, every request failing at once, must not loop for ever).
const MAX_BATCHES: usize = 2000;

/// Runs the load once and measures it.
pub(crate) fn measure(load: &Load<'_>) -> anyhow::Result<(Measurement, Option<serde_json::Value>)> {
    measure_for(load, Duration::ZERO)
}

/// Runs the load's batch (its request count, or its duration) back to back until the
/// batches together last at least `floor` (at most [`MAX_BATCHES`]), and measures them as
/// one run: counts, bytes and times add, latencies come from the summed histograms, and the
/// rates are the totals over the batches' summed time. `batches` says how many ran.
pub(crate) fn measure_for(
    load: &Load<'_>,
    floor: Duration,
) -> anyhow::Result<(Measurement, Option<serde_json::Value>)> {
    measure_for_with(load, floor, &mut || Ok(()))
}

/// [`measure_for`], calling `before` ahead of each batch (outside its time: `cold.rs`).
pub(crate) fn measure_for_with(
    load: &Load<'_>,
    floor: Duration,
    before: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<(Measurement, Option<serde_json::Value>)> {
    let cfg = config(load)?;
    let parts = repeat_until(
        floor,
        |p: &BenchResult| p.duration_s,
        || {
            before()?;
            once(load, &cfg)
        },
    )?;
    let result = back_to_back(parts)?;
    let raw = serde_json::to_value(&result.0).ok();
    Ok((Measurement { batches: result.1, ..measurement(&result.0) }, raw))
}

/// Runs batches until together they last `floor` (at least one, at most `MAX_BATCHES`):
/// the batch that crosses the floor is the last.
fn repeat_until<T>(
    floor: Duration,
    secs: impl Fn(&T) -> f64,
    mut batch: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let (mut parts, mut lasted) = (Vec::new(), 0.0);
    while parts.is_empty() || (lasted < floor.as_secs_f64() && parts.len() < MAX_BATCHES) {
        let part = batch()?;
        lasted += secs(&part);
        parts.push(part);
    }
    Ok(parts)
}

fn once(load: &Load<'_>, cfg: &BenchConfig) -> anyhow::Result<BenchResult> {
    let protocol = match load.client.streams {
        Some(streams) => Protocol::H2 { streams: streams as usize },
        None => Protocol::Http1,
    };
    let tls = |ca: &Path| {
        let resume = if load.client.resume { Resume::On } else { Resume::Off };
        TlsOptions { verify: Verify::CaFile(ca.to_path_buf()), resume, ciphers: Vec::new() }
    };
    if protocol != Protocol::Http1 {
        anyhow::ensure!(
            load.hosts.load_runs_here(),
            "client {}: HTTP/2 load runs from this host only, not from --client-hosts",
            load.client.label()
        );
        let tls = load.tls.map(tls).unwrap_or_default();
        return run_bench_protocol(cfg, protocol, &tls, &mut |_| {});
    }
    Ok(match (load.tls, load.hosts.measure(cfg)) {
        (Some(ca), _) => run_bench_with(cfg, &tls(ca), &mut |_| {})?,
        (None, Some(merged)) => merged?,
        (None, None) => run_bench(cfg)?,
    })
}

/// Runs made one after another, as one: `merge` adds them up (it is made for runs side by
/// side), then the duration is the sum of theirs (not the window from the first start to
/// the last end, which would count the gaps between batches) with the rates over it, and
/// the connections, threads and rate are one batch's. With the number of runs.
fn back_to_back(mut parts: Vec<BenchResult>) -> anyhow::Result<(BenchResult, u32)> {
    let n = parts.len() as u32;
    if parts.len() == 1 {
        return Ok((parts.remove(0), 1));
    }
    let mut all = merge(&parts)?;
    let secs: f64 = parts.iter().map(|p| p.duration_s).sum();
    let per = |x: u64| if secs > 0.0 { x as f64 / secs } else { 0.0 };
    all.duration_s = secs;
    all.requests_per_sec = per(all.responses);
    all.body_bytes_per_sec = per(all.body_bytes);
    all.wire_bytes_per_sec = per(all.wire_bytes);
    (all.connections, all.threads, all.rate) = (parts[0].connections, parts[0].threads, parts[0].rate);
    Ok((all, n))
}

fn config(load: &Load<'_>) -> anyhow::Result<BenchConfig> {
    let c = load.client;
    anyhow::ensure!(c.capacity.is_none(), "client {}: a share of capacity not turned into a rate", c.label());
    let stop = match (c.n, &c.duration) {
        (Some(n), _) => Stop::Requests(n),
        (None, Some(d)) => Stop::Duration(spidey_config::duration(d).map_err(anyhow::Error::msg)?),
        (None, None) => anyhow::bail!("client {} sets neither n nor duration", c.label()),
    };
    let addr = SocketAddr::from((load.hosts.server_ip(), load.port));
    let open_model = match c.model {
        Model::Pool => OpenModel::Pool,
        Model::PerRequest => OpenModel::PerRequest,
    };
    let mut base = bench_config(addr, load.paths, c.c as usize, stop);
    if load.tls.is_some() {
        for t in &mut base.targets {
            t.url = format!("https://{addr}{}", t.path);
        }
    }
    Ok(BenchConfig { rate: c.rate, open_model, keepalive: c.keepalive, ..base })
}

/// The lab's load, the one builder of every `BenchConfig` it runs (seed studies and the
/// robustness experiment alike): `connections` keep-alive connections of a closed loop
/// against `paths` on `addr` until `stop`, from one client event loop per CPU of the load
/// generator's own ([`crate::run::cpu::client_threads`]: one on a 2-CPU machine, where it has
/// one CPU; each loop drives hundreds of connections, REFERENCE: wrk), timing out after
/// [`TIMEOUT`]. Callers change the fields their load differs in (`rate`, `open_model`, ...).
pub(crate) fn bench_config(addr: SocketAddr, paths: &[String], connections: usize, stop: Stop) -> BenchConfig {
    let targets = paths
        .iter()
        .map(|path| Target {
            url: format!("http://{addr}{path}"),
            addr,
            host_header: addr.to_string(),
            path: path.clone(),
        })
        .collect();
    BenchConfig {
        targets,
        connections,
        threads: crate::run::cpu::client_threads(),
        stop,
        rate: None,
        open_model: OpenModel::Pool,
        late_after: LATE_AFTER,
        keepalive: true,
        warmup: Duration::ZERO,
        timeout: TIMEOUT,
        method: "GET".into(),
        headers: Vec::new(),
        body: None,
    }
}

/// Over the error classes (4xx and above), or the others: the sum of a by-class map.
fn class_sum(by_class: &std::collections::BTreeMap<String, u64>, errors: bool) -> u64 {
    let is_error = |class: &str| class.as_bytes().first().is_some_and(|d| *d >= b'4');
    by_class.iter().filter(|(class, _)| is_error(class) == errors).map(|(_, n)| *n).sum()
}

fn measurement(r: &BenchResult) -> Measurement {
    // JSON has no NaN (serde_json writes null, which would not read back): zero instead.
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    // The lab counts an answer to a request sent late (after --late-after) as a failure of
    // the load, not a response: the bench counts it a response and keeps it apart by status
    // class, so it is taken out of the responses, the refusals and the latency sums here.
    let on_time = r.responses.saturating_sub(r.late);
    let (late_sums, late) = (&r.late_latency_sum_by_class_us, &r.late_by_class);
    let latency_sum =
        |errors| class_sum(&r.latency_sum_by_class_us, errors).saturating_sub(class_sum(late_sums, errors));
    let refused: u64 = r.status.iter().filter(|(code, _)| **code >= 400).map(|(_, n)| n).sum();
    Measurement {
        responses: on_time,
        non_success: refused.saturating_sub(class_sum(late, true)),
        // Every class, the open loop's own included: `unsent` (scheduled, never sent: the
        // result's `backlog`) and `late` (sent after --late-after), so a server that cannot
        // keep up with the rate shows as errors, not as a quietly lighter load.
        errors: r.errors.total() + r.late,
        late_or_unsent: r.late + r.errors.unsent,
        duration_s: r.duration_s,
        batches: 1,
        tries: 1,
        excluded: false,
        // The rate of the answers sent on time, as the lab counts responses.
        rps: finite(on_time as f64 / r.duration_s),
        bytes_per_s: finite(r.wire_bytes_per_sec),
        mean_us: finite(r.latency.mean_us),
        p50_us: r.latency.p50_us as f64,
        p90_us: r.latency.p90_us as f64,
        p99_us: r.latency.p99_us as f64,
        max_us: r.latency.max_us as f64,
        // Filled in by the runner, which sees the server process.
        cpu: Default::default(),
        server: None,
        ok_latency_sum_us: Some(latency_sum(false)),
        error_answer_latency_sum_us: Some(latency_sum(true)),
        capacity_rps: None,
        repeat: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::metric::Metric;
    use crate::run::hosts::{HostArgs, Hosts};
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;

    /// A keep-alive HTTP server on loopback that answers every request `ok` after `delay`.
    fn slow_server(delay: Duration) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut conn = conn;
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                        if line == "\r\n" {
                            std::thread::sleep(delay);
                            let ok = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                            if ok.is_err() {
                                return;
                            }
                        }
                        line.clear();
                    }
                });
            }
        });
        port
    }

    /// A point's batch (20 requests of about 2 ms) runs back to back until the batches last
    /// the minimum duration; the counts add up, and the time of one batch is their mean.
    #[test]
    fn a_short_batch_repeats_until_the_point_lasts_the_minimum() {
        let port = slow_server(Duration::from_millis(2));
        let hosts = Hosts::from_args(&HostArgs::default()).unwrap();
        let paths = ["/".to_string()];
        let client = ClientSpec::closed(1, 20);
        let load = Load { port, paths: &paths, client: &client, hosts: &hosts, tls: None };
        let (once, _) = measure(&load).unwrap();
        assert_eq!((once.batches, once.responses), (1, 20), "no floor: one batch");
        let floor = Duration::from_millis(300);
        let (m, raw) = measure_for(&load, floor).unwrap();
        let raw = raw.unwrap();
        assert!(m.batches >= 3, "20 requests of 2 ms repeated to last 300 ms: {} batches", m.batches);
        assert!(m.duration_s >= floor.as_secs_f64(), "{m:?}");
        assert_eq!(m.responses, 20 * u64::from(m.batches));
        assert_eq!((m.errors, m.non_success), (0, 0));
        assert_eq!(raw["responses"], m.responses, "the raw result is the batches' sum");
        assert_eq!(raw["connections"], 1, "one batch's connections");
        assert!((m.rps - m.responses as f64 / m.duration_s).abs() < 1e-6, "{m:?}");
        let per_batch = Metric::TotalS.value(&m);
        assert!((per_batch * f64::from(m.batches) - m.duration_s).abs() < 1e-9, "time (s) is one batch's");
    }

    /// The batch that crosses the floor is the last, however uneven the batches (a busy
    /// machine makes them so): (floor ms, batch durations ms) -> batches run.
    #[test]
    fn repeat_until_stops_at_the_batch_that_crosses_the_floor() {
        let cases: &[(u64, &[u64], usize)] = &[
            (0, &[50, 50], 1),
            (300, &[50; 10], 6),
            (300, &[250, 10, 200, 5], 3),
            (300, &[400, 1], 1),
            (300, &[100, 100, 99, 1, 500], 4),
        ];
        for &(floor, durations, want) in cases {
            let mut next = durations.iter();
            let parts = repeat_until(
                Duration::from_millis(floor),
                |d: &u64| *d as f64 / 1000.0,
                || Ok(*next.next().expect("asked for more batches than the case has")),
            )
            .unwrap();
            assert_eq!(parts.len(), want, "floor {floor} ms over {durations:?}");
        }
    }
}
