//! The robustness experiment (`experiments/006-robustness.toml`): for every mode, a
//! legitimate client's availability and p99 latency while a hostile crowd of N
//! connections ([`adversary`](crate::run::adversary)) holds partial heads, idle keep-alive
//! connections or slow reads; and a mixed load where a tenth of the requests burn CPU in a
//! handler, measuring the static requests' p99 beside them.
//!
//! Each (mode, attack, N) gets a fresh server, so one point's wreckage (a full accept
//! queue, workers pinned until their timeouts) never leaks into the next. The legitimate
//! client is httperf's model (a new connection per request at a fixed rate), because what
//! a crowd takes away is the server's ability to take on a *new* client; its requests
//! time out after `legit.timeout`, counted from their intended send time.
//!
//! Verdicts: a mode *keeps serving* under an attack if, at every N measured, at least
//! [`AVAILABLE`] of the legitimate requests got a 2xx and their p99 stayed under
//! [`P99_LIMIT`]; otherwise it *breaks at N* for the first N where either fails.

use crate::experiment::robustness_spec::{AttackName, Mixed, Spec};
use crate::experiment::{Experiment, ServerSpec};
use crate::run::adversary::{Attack, Crowd, Targets};
use crate::run::docroot::DocRoot;
use crate::run::hosts::Hosts;
use crate::run::out_dir::OutDir;
use crate::run::server::{self, Started};
use anyhow::Context;
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};
use spidey_bench::{run_bench, BenchConfig, BenchResult, ErrorCounts, OpenModel, Stop};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// The share of legitimate requests that must succeed for a point to count as served.
pub(crate) const AVAILABLE: f64 = 0.99;
/// The legitimate client's p99 above which a point counts as broken, in microseconds.
pub(crate) const P99_LIMIT: f64 = 1_000_000.0;
/// How long the crowd may take to open its N connections before the point is measured
/// anyway (a server that refuses to hold them is allowed to).
const CROWD_LIMIT: Duration = Duration::from_secs(5);
/// Time the crowd holds on before the legitimate client starts (a quarter of it under
/// `--quick`).
const SETTLE: Duration = Duration::from_secs(1);

/// The crowd an attack of the experiment file is.
impl AttackName {
    pub(crate) fn attack(self) -> Attack {
        match self {
            AttackName::Slowloris => Attack::Slowloris,
            AttackName::Idle => Attack::Idle,
            AttackName::SlowReader => Attack::SlowReader,
        }
    }
}

/// One measured point, as written to `robustness.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Point {
    pub server: String,
    /// `None` for the mixed load.
    pub attack: Option<AttackName>,
    pub crowd: usize,
    /// Crowd connections open when the legitimate client started, and how many the server
    /// closed while the point ran.
    pub crowd_open: usize,
    pub crowd_cut: usize,
    /// Legitimate (or, for the mixed load, static) requests: scheduled, answered 2xx.
    pub requests: u64,
    pub ok: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Mixed load only: the CPU-burning requests' p99 and both streams' answered rate.
    pub burn_p99_us: Option<f64>,
    pub rps: f64,
    /// The legitimate (or static) client's requests with no answer, by class, as `spidey
    /// bench` counts them (an answer to a request the generator sent late, on a busy
    /// machine, is a response, and counts in `ok` if it is a 2xx).
    pub errors: ErrorCounts,
}

impl Point {
    pub(crate) fn availability(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.ok as f64 / self.requests as f64
        }
    }

    pub(crate) fn served(&self) -> bool {
        self.availability() >= AVAILABLE && self.p99_us <= P99_LIMIT
    }
}

impl Spec {
    /// This table as a run uses it: under `--quick`, `quick_duration` for the legitimate
    /// client and the mixed load.
    pub(crate) fn for_run(&self, quick: bool) -> Spec {
        let mut spec = self.clone();
        if let (true, Some(d)) = (quick, &self.quick_duration) {
            spec.legit.duration.clone_from(d);
            if let Some(m) = &mut spec.mixed {
                m.duration.clone_from(d);
            }
        }
        spec
    }

    /// The crowd sizes measured besides the baseline.
    pub(crate) fn crowd_sizes(&self, quick: bool) -> Vec<usize> {
        match (quick, &self.quick_crowd) {
            (true, Some(sizes)) => sizes.clone(),
            _ => self.crowd.clone(),
        }
    }

    /// The (attack, N) points each server is measured at: the baseline (no crowd) once,
    /// under the first attack, then every attack at every crowd size.
    pub(crate) fn attack_points(&self, quick: bool) -> Vec<(AttackName, usize)> {
        let sizes: Vec<usize> = std::iter::once(0).chain(self.crowd_sizes(quick)).collect();
        self.attacks
            .iter()
            .flat_map(|&a| sizes.iter().map(move |&n| (a, n)))
            .filter(|&(a, n)| n > 0 || a == self.attacks[0])
            .collect()
    }

    /// How many points a run measures: each server's attack points and its mixed load.
    pub(crate) fn points(&self, quick: bool) -> usize {
        (self.attack_points(quick).len() + usize::from(self.mixed.is_some())) * self.servers.len()
    }

    /// How long a crowd holds on before the legitimate client starts.
    pub(crate) fn settle(&self, quick: bool) -> Duration {
        if quick {
            SETTLE / 4
        } else {
            SETTLE
        }
    }
}

/// The robustness experiment's journal in the output directory, beside `results.jsonl`.
pub(crate) const JOURNAL: &str = "robustness.jsonl";

/// Runs the experiment's robustness table; every point is also appended to [`JOURNAL`] in
/// `out` as it is measured. A fresh run starts the journal afresh; a resumed one (`resume`)
/// keeps the points already in it, measures only the others, and appends them. `bar`
/// shows the progress as the other experiments' points do: a step a point, the point's
/// name as its message, each point's result printed above it.
pub(crate) fn run(
    exp: &Experiment,
    spec: &Spec,
    (quick, resume): (bool, bool),
    out: &OutDir,
    hosts: &Hosts,
    bar: &ProgressBar,
) -> anyhow::Result<Vec<Point>> {
    let spec = &spec.for_run(quick);
    let settle = spec.settle(quick);
    let mut names = vec![spec.small.clone(), spec.large.clone()];
    names.extend(spec.mixed.iter().map(|m| m.burn.clone()));
    bar.set_message(format!("{}: generating the document root", exp.id));
    let root = DocRoot::generate(exp, &names, quick)?;
    let kept = match resume {
        true => read(&out.path().join(JOURNAL)).unwrap_or_default(),
        false => Vec::new(),
    };
    let mut journal = if resume { out.append(JOURNAL)? } else { out.create(JOURNAL)? };
    let done = |server: &str, attack: Option<AttackName>, n: usize| {
        kept.iter().any(|p| p.server == server && p.attack == attack && p.crowd == n)
    };
    if !kept.is_empty() {
        bar.println(format!("robustness: resuming, {} points already measured are kept", kept.len()));
    }
    let mut points = kept.clone();
    let plan = spec.attack_points(quick);
    let per_server = spec.points(quick) / spec.servers.len().max(1);
    'servers: for server in &spec.servers {
        // The server's points not yet counted on the bar: whatever is left when it stops
        // (kept from before, or a server unavailable here) is counted at once.
        let mut left = per_server as u64;
        let step = |left: &mut u64| {
            bar.inc(1);
            *left -= 1;
        };
        for &(attack, n) in &plan {
            if done(&server.label, Some(attack), n) {
                step(&mut left);
                continue;
            }
            bar.set_message(format!("{}: {} {} N={n}", exp.id, server.label, attack_label(Some(attack))));
            let Some(p) = with_server(exp, server, &root, hosts, bar, |port| {
                attack_point(spec, &root, server, (attack, n, settle), port)
            })?
            else {
                bar.inc(left);
                continue 'servers;
            };
            append(&mut journal, &p)?;
            bar.println(format!(
                "robustness: {} {} N={n}: {:.1}% answered, p99 {:.1} ms",
                server.label,
                attack_label(p.attack),
                p.availability() * 100.0,
                p.p99_us / 1000.0
            ));
            step(&mut left);
            points.push(p);
        }
        if let Some(mixed) = spec.mixed.as_ref().filter(|_| !done(&server.label, None, 0)) {
            bar.set_message(format!("{}: {} {}", exp.id, server.label, attack_label(None)));
            if let Some(p) =
                with_server(exp, server, &root, hosts, bar, |port| mixed_point(spec, mixed, &root, server, port))?
            {
                append(&mut journal, &p)?;
                points.push(p);
            }
        }
        bar.inc(left);
    }
    Ok(points)
}

pub(crate) fn attack_label(a: Option<AttackName>) -> &'static str {
    a.map_or("mixed load", |a| a.attack().name())
}

/// Starts `server`, runs `f` against its port, stops it. `None` if the server is not
/// available in this build or on this machine (noted above `bar`).
fn with_server<T>(
    exp: &Experiment,
    server: &ServerSpec,
    root: &DocRoot,
    hosts: &Hosts,
    bar: &ProgressBar,
    f: impl FnOnce(u16) -> anyhow::Result<T>,
) -> anyhow::Result<Option<T>> {
    let running = match server::start(server, &exp.peers, root, hosts)? {
        Started::Running(r) => r,
        Started::Unavailable(why) => {
            bar.println(format!("robustness: skipped: {why}"));
            return Ok(None);
        }
    };
    let result = f(running.port);
    running.stop().with_context(|| format!("stopping {}", server.label))?;
    result.map(Some)
}

fn attack_point(
    spec: &Spec,
    root: &DocRoot,
    server: &ServerSpec,
    (attack, n, settle): (AttackName, usize, Duration),
    port: u16,
) -> anyhow::Result<Point> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let small = first_url(root, &spec.small)?;
    let targets = Targets { addr, small: small.clone(), large: first_url(root, &spec.large)? };
    let crowd = if n > 0 { Some(Crowd::start(attack.attack(), n, targets)?) } else { None };
    let crowd_open = crowd.as_ref().map_or(0, |c| c.wait_open(n, CROWD_LIMIT));
    if crowd.is_some() {
        std::thread::sleep(settle);
    }
    let legit = &spec.legit;
    let config = BenchConfig {
        open_model: OpenModel::PerRequest,
        keepalive: false,
        timeout: spidey_config::duration(&legit.timeout).map_err(anyhow::Error::msg)?,
        ..load(addr, &small, 1, legit.rate, &legit.duration)?
    };
    let result = run_bench(&config)?;
    let stats = crowd.map(Crowd::stop);
    Ok(Point {
        server: server.label.clone(),
        attack: Some(attack),
        crowd: n,
        crowd_open,
        crowd_cut: stats.map_or(0, |s| s.cut),
        requests: result.requests,
        ok: ok(&result),
        p50_us: result.latency.p50_us as f64,
        p99_us: result.latency.p99_us as f64,
        burn_p99_us: None,
        rps: result.requests_per_sec,
        errors: result.errors,
    })
}

fn mixed_point(spec: &Spec, mixed: &Mixed, root: &DocRoot, server: &ServerSpec, port: u16) -> anyhow::Result<Point> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let burn_rate = mixed.rate * mixed.burn_share;
    let burn_conns = ((mixed.connections as f64 * mixed.burn_share).ceil() as usize).max(1);
    let static_cfg =
        load(addr, &first_url(root, &spec.small)?, mixed.connections, mixed.rate - burn_rate, &mixed.duration)?;
    let burn_cfg = load(addr, &first_url(root, &mixed.burn)?, burn_conns, burn_rate, &mixed.duration)?;
    // Both streams at once, each with its own histograms: the static requests' p99 is the
    // question, the burning ones' the cost.
    let burn = std::thread::spawn(move || run_bench(&burn_cfg));
    let fixed = run_bench(&static_cfg)?;
    let burn = burn.join().map_err(|_| anyhow::anyhow!("the burn client panicked"))??;
    Ok(Point {
        server: server.label.clone(),
        attack: None,
        crowd: 0,
        crowd_open: 0,
        crowd_cut: 0,
        requests: fixed.requests,
        ok: ok(&fixed),
        p50_us: fixed.latency.p50_us as f64,
        p99_us: fixed.latency.p99_us as f64,
        burn_p99_us: Some(burn.latency.p99_us as f64),
        rps: fixed.requests_per_sec + burn.requests_per_sec,
        errors: fixed.errors,
    })
}

/// An open-loop, keep-alive load of `rate` requests per second on `path`.
fn load(addr: SocketAddr, path: &str, connections: usize, rate: f64, duration: &str) -> anyhow::Result<BenchConfig> {
    let stop = Stop::Duration(spidey_config::duration(duration).map_err(anyhow::Error::msg)?);
    let base = crate::run::load::bench_config(addr, &[path.to_string()], connections, stop);
    Ok(BenchConfig {
        rate: Some(rate),
        late_after: Duration::from_millis(100),
        timeout: Duration::from_secs(5),
        ..base
    })
}

/// Requests answered with a 2xx, those sent late by the generator included.
fn ok(r: &BenchResult) -> u64 {
    r.status.iter().filter(|(code, _)| (200..300).contains(*code)).map(|(_, n)| n).sum::<u64>()
}

fn first_url(root: &DocRoot, workload: &str) -> anyhow::Result<String> {
    root.urls
        .get(workload)
        .and_then(|u| u.first())
        .cloned()
        .with_context(|| format!("no URL for workload '{workload}'"))
}

fn append(journal: &mut std::fs::File, p: &Point) -> anyhow::Result<()> {
    use std::io::Write;
    writeln!(journal, "{}", serde_json::to_string(p)?)?;
    Ok(())
}

/// The points of a `robustness.jsonl` (unreadable lines, from an interrupted write, left out).
pub(crate) fn read(journal: &Path) -> anyhow::Result<Vec<Point>> {
    let text = std::fs::read_to_string(journal).with_context(|| format!("cannot read {}", journal.display()))?;
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}
