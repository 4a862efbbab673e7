//! `spidey lab` across hosts. A host is a command prefix: how to run a program there
//! (`ssh user@host`, `ip netns exec NAME`). The server starts through `--server-via` and
//! listens on `--server-addr`, the address the client hosts reach it at; each point's load
//! is split among the `--client-via` hosts (connections, requests and rate shared out as
//! evenly as they go), each runs `spidey bench --json -` through its prefix with the same
//! `--start-at` a moment ahead, and their JSON results, read from their stdout, are merged
//! exactly (`spidey bench merge`'s [`spidey_bench::merge`]) into the point's one result.
//!
//! Without these flags everything runs here, on loopback, in-process.
//! The document root is generated here and put on the server host by [`Hosts::place`]
//! (used in place where that host sees it, copied there otherwise: [`crate::run::root_copy`]).
//! Peers (nginx) run only locally.

use crate::run::delay_line::{DelayLine, LinkSpec};
use crate::run::docroot::DocRoot;
use crate::run::remote_server;
use crate::run::root_copy;
use crate::run::via::Via;
use anyhow::Context;
use spidey_bench::{merge, share, BenchConfig, BenchResult, Stop};
use spidey_config::ConfigError;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// The lab's flags for running the server and the clients elsewhere.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HostArgs {
    /// Start the server through this command prefix, e.g. `ssh user@host`.
    ///
    /// Or `ip netns exec NAME`; needs --server-addr. The document root is copied there unless that host sees
    /// it at the same path; the server is stopped there with `kill`.
    #[arg(help_heading = "Across hosts and links", long, value_name = "CMD")]
    pub server_via: Option<String>,
    /// Run the load from this host, a command prefix like --server-via's (repeatable).
    ///
    /// The load is split among the hosts, which start together and whose results are merged).
    #[arg(help_heading = "Across hosts and links", long, value_name = "CMD")]
    pub client_via: Vec<String>,
    /// The address the server listens on and the clients load [default: 127.0.0.1].
    ///
    /// The server host's address as the client hosts reach it.
    #[arg(help_heading = "Across hosts and links", long, value_name = "IP")]
    pub server_addr: Option<IpAddr>,
    /// The spidey binary on the other hosts [default: this binary's path].
    #[arg(help_heading = "Across hosts and links", long, value_name = "PATH")]
    pub remote_spidey: Option<String>,
    /// Put a delay line of this round trip between server and load (e.g. `1.5ms`).
    ///
    /// Two network namespaces joined by the line; needs root and TUN; not with the flags
    /// above.
    #[arg(help_heading = "Across hosts and links", long, value_name = "DURATION", value_parser = spidey_config::duration)]
    pub rtt: Option<Duration>,
    /// With --rtt: limit each direction of the link to this rate (tc's syntax: `100mbit`).
    #[arg(help_heading = "Across hosts and links", long, value_name = "RATE", requires = "rtt")]
    pub link_rate: Option<String>,
}

impl HostArgs {
    /// The delay line --rtt asks for, or that sweeps with a round trip of their own need
    /// (`for_sweeps`), started; None when neither asks for one. A line the sweeps alone want
    /// that cannot start (not root, no TUN) is None with a note: those sweeps are skipped.
    pub(crate) fn delay_line(&self, for_sweeps: bool) -> anyhow::Result<Option<DelayLine>> {
        let elsewhere = self.server_via.is_some() || !self.client_via.is_empty() || self.server_addr.is_some();
        let name = format!("spl{}", std::process::id() % 100_000);
        match self.rtt {
            Some(_) if elsewhere => Err(ConfigError(
                "--rtt makes its own namespaces: not with --server-via, --client-via or --server-addr".into(),
            )
            .into()),
            Some(rtt) => Ok(Some(DelayLine::start(LinkSpec { rtt, rate: self.link_rate.clone(), name })?)),
            None if for_sweeps && !elsewhere => {
                match DelayLine::start(LinkSpec { rtt: Duration::ZERO, rate: self.link_rate.clone(), name }) {
                    Ok(line) => Ok(Some(line)),
                    Err(e) => {
                        eprintln!("spidey lab: no delay line ({e:#}): the sweeps with a round trip are skipped");
                        Ok(None)
                    }
                }
            }
            None => Ok(None),
        }
    }

    /// These flags with the server and the clients in `link`'s namespaces.
    pub(crate) fn across(&self, link: &DelayLine) -> HostArgs {
        HostArgs {
            server_via: Some(format!("ip netns exec {}", link.server_ns())),
            client_via: vec![format!("ip netns exec {}", link.client_ns())],
            server_addr: Some(IpAddr::V4(crate::run::delay_line::SERVER_IP)),
            ..self.clone()
        }
    }
}

/// The network a run used, for the report's machine table.
pub(crate) fn describe_network(a: &HostArgs, link: Option<&DelayLine>) -> String {
    match (link, &a.server_via, a.client_via.len()) {
        (Some(l), ..) => format!(
            "{}; sweeps with a round trip of their own: two network namespaces joined by a TUN delay line set to it \
             (the line's own round trip, calibrated away above 0: {:?}); rate {}",
            match a.rtt {
                Some(rtt) => format!(
                    "every sweep across the delay line at {rtt:?} ({:?} measured by a TCP connect)",
                    l.measured_at(rtt)
                ),
                None => "loopback".into(),
            },
            l.own_rtt(),
            a.link_rate.as_deref().unwrap_or("unlimited")
        ),
        (None, None, 0) => "loopback".into(),
        (None, s, c) => format!(
            "server via {}, {c} client host(s), server address {}",
            s.as_deref().unwrap_or("this host"),
            a.server_addr.map(|a| a.to_string()).unwrap_or_default()
        ),
    }
}

/// Where the lab's server and load run.
#[derive(Debug, Clone)]
pub(crate) struct Hosts {
    server: Option<Via>,
    server_ip: IpAddr,
    clients: Vec<Via>,
    spidey: Option<String>,
}

/// How far ahead of now the client hosts are told to start, so all have begun waiting.
const START_LEAD: Duration = Duration::from_millis(1000);

impl Hosts {
    /// The hosts the flags name; without any, everything here: the server on loopback, the
    /// load in-process.
    pub fn from_args(a: &HostArgs) -> Result<Hosts, ConfigError> {
        let server = a.server_via.as_deref().map(|s| Via::parse("--server-via", s)).transpose()?;
        let clients = a.client_via.iter().map(|s| Via::parse("--client-via", s)).collect::<Result<Vec<_>, _>>()?;
        if (server.is_some() || !clients.is_empty()) && a.server_addr.is_none() {
            return Err(ConfigError(
                "--server-via and --client-via need --server-addr: the address the client hosts reach the server at"
                    .into(),
            ));
        }
        let server_ip = a.server_addr.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
        Ok(Hosts { server, server_ip, clients, spidey: a.remote_spidey.clone() })
    }

    /// The address the server listens on and is loaded at.
    pub fn server_ip(&self) -> IpAddr {
        self.server_ip
    }

    /// True when everything runs here on loopback.
    pub fn is_local(&self) -> bool {
        self.server.is_none() && self.clients.is_empty() && self.server_ip.is_loopback()
    }

    /// The command that runs `spidey ARGS` for the server: this binary, or through the
    /// server's prefix as [`remote_server::command`] makes it (printing its pid first).
    pub fn server_command(&self, args: &[String]) -> anyhow::Result<Command> {
        let exe = self.spidey_path(self.server.is_some())?;
        Ok(match &self.server {
            Some(via) => remote_server::command(via, &exe, args),
            None => {
                let mut c = Command::new(exe);
                c.args(args);
                c
            }
        })
    }

    /// The server's prefix, when it runs elsewhere.
    pub fn server_via(&self) -> Option<&Via> {
        self.server.as_ref()
    }

    /// Where the server host sees `root`'s scratch directory: here without --server-via;
    /// otherwise in place if that host sees it at the same path, else a copy there, made
    /// at the first call and refreshed when `refresh` (after a `prepare` command wrote to it).
    pub fn place(&self, root: &DocRoot, refresh: bool) -> anyhow::Result<PathBuf> {
        match &self.server {
            None => Ok(root.base().to_path_buf()),
            Some(via) => root_copy::place(via, root.base(), &mut root.placed.borrow_mut(), refresh),
        }
    }

    /// `spidey serve` flags that make it listen on the server address.
    pub fn listen_args(&self) -> Vec<String> {
        vec!["--addr".into(), self.server_ip.to_string()]
    }

    fn spidey_path(&self, remote: bool) -> anyhow::Result<String> {
        match (&self.spidey, remote) {
            (Some(p), true) => Ok(p.clone()),
            _ => Ok(std::env::current_exe().context("cannot find the spidey binary")?.display().to_string()),
        }
    }

    /// These hosts with the load from `n` fresh `spidey bench` processes, started for each
    /// batch and gone after it (seed 002's "10 client processes were spawned to send N
    /// requests then exit"): through the first client host's prefix, or here (`env`).
    pub fn with_fresh_clients(&self, n: usize) -> Hosts {
        let via = self.clients.first().cloned().unwrap_or_else(Via::local);
        Hosts { clients: vec![via; n.max(1)], ..self.clone() }
    }

    /// Whether the server runs on this host (its CPU time measured here).
    pub fn server_runs_here(&self) -> bool {
        self.server.is_none()
    }

    /// Whether plain-HTTP load runs in this process (no client hosts).
    pub fn load_runs_here(&self) -> bool {
        self.clients.is_empty()
    }

    /// The load `cfg` describes, run from the client hosts and merged; None when the load
    /// runs in-process here.
    pub fn measure(&self, cfg: &BenchConfig) -> Option<anyhow::Result<BenchResult>> {
        (!self.clients.is_empty()).then(|| self.measure_remote(cfg))
    }

    fn measure_remote(&self, cfg: &BenchConfig) -> anyhow::Result<BenchResult> {
        anyhow::ensure!(cfg.body.is_none(), "a request body cannot be sent from client hosts");
        let exe = self.spidey_path(true)?;
        let start = SystemTime::now() + START_LEAD;
        let start_ms = start.duration_since(SystemTime::UNIX_EPOCH)?.as_millis() as u64;
        let runs: Vec<_> = split(cfg, self.clients.len())
            .into_iter()
            .zip(&self.clients)
            .map(|(part, via)| {
                let mut command = via.command(&exe);
                command.args(bench_args(&part, start_ms)).stdin(Stdio::null());
                let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
                (via.name(), child.with_context(|| format!("cannot run spidey bench via {}", via.name())))
            })
            .collect();
        let mut parts = Vec::new();
        for (via, child) in runs {
            let out = child?.wait_with_output().with_context(|| format!("spidey bench via {via}"))?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            anyhow::ensure!(
                out.status.success(),
                "spidey bench via {via} failed ({}): {}",
                out.status,
                stderr.lines().find(|l| l.starts_with("spidey")).unwrap_or(stderr.trim())
            );
            let part: BenchResult = serde_json::from_slice(&out.stdout)
                .with_context(|| format!("spidey bench via {via} printed no JSON result"))?;
            parts.push(part);
        }
        Ok(merge(&parts)?)
    }
}

/// `cfg`'s load shared among up to `hosts` client hosts (fewer when there are fewer
/// connections or requests than hosts): connections and requests as evenly as they go,
/// the rate in proportion to the connections.
fn split(cfg: &BenchConfig, hosts: usize) -> Vec<BenchConfig> {
    let mut k = hosts.min(cfg.connections).max(1);
    if let Stop::Requests(n) = cfg.stop {
        k = k.min(usize::try_from(n).unwrap_or(usize::MAX)).max(1);
    }
    (0..k)
        .map(|i| {
            let connections = share(cfg.connections, k, i);
            let stop = match cfg.stop {
                Stop::Requests(n) => Stop::Requests(share(n as usize, k, i) as u64),
                d => d,
            };
            let rate = cfg.rate.map(|r| r * connections as f64 / cfg.connections as f64);
            BenchConfig { connections, threads: cfg.threads.min(connections), stop, rate, ..cfg.clone() }
        })
        .collect()
}

/// The `spidey bench` command line for one host's part, its JSON on stdout.
fn bench_args(cfg: &BenchConfig, start_ms: u64) -> Vec<String> {
    let us = |d: Duration| format!("{}us", d.as_micros());
    let mut a: Vec<String> = vec!["bench".into()];
    a.extend(cfg.targets.iter().map(|t| t.url.clone()));
    a.extend(["-c".into(), cfg.connections.to_string(), "-t".into(), cfg.threads.to_string()]);
    match cfg.stop {
        Stop::Requests(n) => a.extend(["-n".into(), n.to_string()]),
        Stop::Duration(d) => a.extend(["-d".into(), us(d)]),
    }
    if let Some(r) = cfg.rate {
        a.extend(["--rate".into(), r.to_string(), "--open-model".into(), cfg.open_model.name().into()]);
        a.extend(["--late-after".into(), us(cfg.late_after)]);
    }
    if !cfg.keepalive {
        a.push("--no-keepalive".into());
    }
    a.extend(["--warmup".into(), us(cfg.warmup), "--timeout".into(), us(cfg.timeout)]);
    a.extend(["-m".into(), cfg.method.clone()]);
    for (n, v) in &cfg.headers {
        a.extend(["-H".into(), format!("{n}: {v}")]);
    }
    a.extend(["--json".into(), "-".into(), "--start-at".into(), start_ms.to_string()]);
    a
}

#[cfg(test)]
#[path = "hosts_tests.rs"]
mod tests;
