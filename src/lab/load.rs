//! The one seam between the lab and the load generator: [`measure`] runs a [`Load`] against
//! the server through `crate::bench` (in-process, or from the client hosts: [`Hosts`]) and
//! returns the lab's [`Measurement`] plus bench's full result, kept in `results.jsonl` as it
//! reported it.

use crate::bench::LATE_AFTER;
use crate::bench::{
    run_bench, run_bench_with, BenchConfig, BenchResult, OpenModel, Resume, Stop, Target, TlsOptions, Verify,
};
use crate::lab::experiment::{ClientSpec, Model};
use crate::lab::hosts::Hosts;
use crate::lab::metric::Measurement;
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

/// Runs the load and measures it.
pub(crate) fn measure(load: &Load<'_>) -> anyhow::Result<(Measurement, Option<serde_json::Value>)> {
    let cfg = config(load)?;
    let result = match (load.tls, load.hosts.measure(&cfg)) {
        (Some(ca), _) => {
            let resume = if load.client.resume { Resume::On } else { Resume::Off };
            let tls = TlsOptions { verify: Verify::CaFile(ca.to_path_buf()), resume, ciphers: Vec::new() };
            run_bench_with(&cfg, &tls, &mut |_| {})?
        }
        (None, Some(merged)) => merged?,
        (None, None) => run_bench(&cfg)?,
    };
    let raw = serde_json::to_value(&result).ok();
    Ok((measurement(&result), raw))
}

fn config(load: &Load<'_>) -> anyhow::Result<BenchConfig> {
    let c = load.client;
    let stop = match (c.n, &c.duration) {
        (Some(n), _) => Stop::Requests(n),
        (None, Some(d)) => Stop::Duration(crate::config::duration(d).map_err(anyhow::Error::msg)?),
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
/// against `paths` on `addr` until `stop`, from one client thread, timing out after
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
        // One client loop: on a small machine the client shares the cores with the server,
        // and one event loop drives hundreds of connections (REFERENCE: wrk -t1).
        threads: 1,
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

fn measurement(r: &BenchResult) -> Measurement {
    // JSON has no NaN (serde_json writes null, which would not read back): zero instead.
    let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
    Measurement {
        responses: r.responses,
        non_success: r.status.iter().filter(|(code, _)| **code >= 400).map(|(_, n)| n).sum(),
        // Every class, the open loop's own included: `unsent` (scheduled, never sent: the
        // result's `backlog`) and `late` (sent after --late-after), so a server that cannot
        // keep up with the rate shows as errors, not as a quietly lighter load.
        errors: r.errors.total(),
        late_or_unsent: r.errors.late + r.errors.unsent,
        duration_s: r.duration_s,
        rps: finite(r.requests_per_sec),
        bytes_per_s: finite(r.wire_bytes_per_sec),
        mean_us: finite(r.latency.mean_us),
        p50_us: r.latency.p50_us as f64,
        p90_us: r.latency.p90_us as f64,
        p99_us: r.latency.p99_us as f64,
        max_us: r.latency.max_us as f64,
        // Filled in by the runner, which sees the server process.
        cpu: Default::default(),
        server: None,
        repeat: None,
    }
}
