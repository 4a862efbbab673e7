//! The experiment file format (`experiments/*.toml`), read with serde.
//!
//! An experiment has workloads (what to request), external peers (other servers that may
//! join), and sweeps. A sweep is one table of a seed study: servers × workloads × clients,
//! each combination a *point*, with the table's shape, the seed's own numbers, the plots
//! and the findings to compute. `quick` replaces parts of a sweep for `spidey lab --quick`.
//!
//! This folder is the schema, the first of the crate's stages: the file's types, the
//! claims ([`claim`]), the metrics named in it ([`metric`]), its expansion into points
//! ([`plan`]) and where the files come from ([`sources`]). It imports nothing of the
//! later stages: where a later stage gives a schema type behaviour, it does so in its own
//! file (`run/cold.rs` makes a [`Cold`] point cold, `run/measurement.rs` reads a metric's
//! value from a measurement, `judge/sample.rs` picks the points a claim's selection names).

pub(crate) mod claim;
pub(crate) mod metric;
pub(crate) mod plan;
pub(crate) mod robustness_spec;
pub(crate) mod sources;

use anyhow::Context;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Experiment {
    /// Stable identifier, e.g. `000-fork`; the first part of every point id.
    pub id: String,
    pub title: String,
    /// Where the seed numbers come from.
    pub seed: String,
    /// What the study asked, in one sentence.
    pub question: String,
    #[serde(default)]
    pub workloads: Vec<Workload>,
    #[serde(default)]
    pub peers: Vec<Peer>,
    #[serde(default)]
    pub sweeps: Vec<Sweep>,
    /// The robustness experiment's table (`006-robustness`), run by [`crate::run::robustness`].
    pub robustness: Option<crate::experiment::robustness_spec::Spec>,
    /// The seed's claims, each checked against one sweep ([`crate::judge::verdict`]).
    #[serde(default)]
    pub claims: Vec<crate::experiment::claim::Claim>,
}

/// What the clients request: resolved to URL paths over the generated document root.
/// (No `deny_unknown_fields` here: serde cannot combine it with `flatten`; the kind denies.)
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Workload {
    pub name: String,
    #[serde(flatten)]
    pub kind: WorkloadKind,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum WorkloadKind {
    /// One static file of `size` bytes (`quick_size` under --quick).
    File { size: ByteSize, quick_size: Option<ByteSize> },
    /// A directory listing of `entries` files.
    Listing { entries: usize },
    /// A CGI script in ROOT/cgi-bin that prints `size` bytes.
    Cgi { size: ByteSize },
    /// A path the server configuration provides (a handler prefix, a built CGI program).
    Path { path: String },
    /// `files` files of random sizes up to `max_size`, requested uniformly, plus a missing one.
    Mix { files: usize, max_size: ByteSize, with_404: bool },
}

/// Another server that can join a sweep, started from a command template.
/// Placeholders: `{port}`, `{root}`, `{dir}` (a scratch directory), `{config}` (the written config).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Peer {
    pub name: String,
    pub program: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// A configuration file template, written to `{dir}/peer.conf`.
    pub config: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Sweep {
    pub name: String,
    pub title: String,
    pub servers: Vec<ServerSpec>,
    pub workloads: Vec<String>,
    pub clients: Vec<ClientSpec>,
    /// Times each point is measured in a full run (at least 5); tables show the median and
    /// its order-statistic interval.
    #[serde(default = "five")]
    pub repeats: u32,
    /// Requests sent before the first point of each server, to warm it up.
    #[serde(default = "ten")]
    pub warmup: u64,
    /// Run this sweep only in the full run.
    #[serde(default)]
    pub full_only: bool,
    /// The round trip between the load and the server (`"1.5ms"`, `"0ms"`): the sweep runs
    /// across the lab's delay line (`delay_line.rs`) set to it, the server and the load in
    /// network namespaces of their own; without a delay line (not root, no TUN) its points
    /// are skipped with a note. Without `rtt`, a sweep runs on loopback (or where the
    /// host flags say).
    pub rtt: Option<String>,
    /// Measure each point as one batch from cold caches (`cold.rs`): `"machine"`
    /// drops the kernel's caches (root; else the sweep is skipped with a note), `"files"`
    /// evicts the document root's files from the page cache.
    pub cold: Option<Cold>,
    /// Each point's load comes from fresh `spidey bench` processes, one per connection,
    /// started for it and gone after it, as seed 002's client processes were (plain HTTP).
    #[serde(default)]
    pub fresh_clients: bool,
    /// Each point gets a server of its own, started for it and stopped after it (after its
    /// warm-up and, for shares of capacity, its capacity probe), so no point inherits what
    /// an earlier one left queued: for servers whose queue has no bound.
    #[serde(default)]
    pub server_per_point: bool,
    /// Each point is one batch of its requests, not batches repeated until the lab's
    /// minimum point duration (as `cold` and `fresh_clients` points always are).
    #[serde(default)]
    pub one_batch: bool,
    #[serde(default)]
    pub quick: QuickOverride,
    pub table: TableSpec,
    #[serde(default)]
    pub plots: Vec<PlotSpec>,
    #[serde(default)]
    pub findings: Vec<FindingSpec>,
    /// The seed's published numbers, one entry per row it reported.
    #[serde(default)]
    pub seed_rows: Vec<SeedRow>,
    /// What the seed measured that this sweep cannot match exactly.
    pub seed_note: Option<String>,
}

impl Sweep {
    /// The sweep's round trip, parsed (`rtt`).
    pub fn rtt(&self) -> Result<Option<std::time::Duration>, String> {
        self.rtt.as_deref().map(spidey_config::duration).transpose()
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct QuickOverride {
    pub servers: Option<Vec<String>>,
    pub workloads: Option<Vec<String>>,
    pub clients: Option<Vec<ClientSpec>>,
    pub repeats: Option<u32>,
}

/// One server configuration: a spidey mode with its flags, or a peer.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerSpec {
    pub label: String,
    /// How many CPUs the server runs on: the top `cpus` of the lab's, which overlap the
    /// load generator's when there are not enough (the report says so). Without it, the
    /// lab's `--server-cpus`, else the upper half of the CPUs.
    pub cpus: Option<usize>,
    pub mode: Option<String>,
    pub peer: Option<String>,
    /// `--workers`: `N`, `MIN-MAX`, or `{cores_plus_2}` (seed 004's fixed pool).
    pub workers: Option<String>,
    pub delay: Option<String>,
    pub cpu_work: Option<String>,
    /// Extra `spidey serve` arguments; `{root}`, `{repo}`, `{dir}` and `{cores_plus_2}` (the
    /// server's CPUs + 2) are replaced.
    #[serde(default)]
    pub args: Vec<String>,
    /// Files (relative to `{repo}`, the built-in sources) that must exist, else the server is skipped.
    #[serde(default)]
    pub requires: Vec<String>,
    /// A command run before the server starts (e.g. building a handler); `{repo}`, `{root}`
    /// and `{dir}` are replaced. If it fails the server is skipped with a note.
    #[serde(default)]
    pub prepare: Vec<String>,
    /// The workloads this server runs (all of the sweep's when absent).
    pub only: Option<Vec<String>>,
    /// `https`: the lab makes a certificate at run time and starts spidey with
    /// `--tls-cert`/`--tls-key`; its load is `https://` ([`crate::run::tls`]).
    #[serde(default)]
    pub scheme: Scheme,
}

/// What a server speaks on its port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Scheme {
    #[default]
    Http,
    Https,
}

impl ServerSpec {
    pub fn runs(&self, workload: &str) -> bool {
        self.only.as_ref().map_or(true, |o| o.iter().any(|w| w == workload))
    }
}

/// One client setting: `c` connections, `n` requests in all or `duration`, an optional
/// fixed total `rate` (requests per second), keep-alive or a connection per request.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClientSpec {
    pub c: u32,
    pub n: Option<u64>,
    pub duration: Option<String>,
    pub rate: Option<f64>,
    /// A fixed rate given as a share of the server's capacity (`1.5`: one and a half
    /// times it), measured when the server starts (`runner.rs`), so a grid can straddle
    /// the capacity of whatever machine runs it. With `duration`, in place of `rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<f64>,
    #[serde(default = "yes")]
    pub keepalive: bool,
    /// With a rate: wrk2's pool of `c` connections, or httperf's connection per request.
    #[serde(default, skip_serializing_if = "Model::is_pool")]
    pub model: Model,
    /// Over TLS: whether a new connection may resume an earlier session (`false`: a full
    /// handshake every connection, `spidey bench --no-resume`). Plain HTTP ignores it.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub resume: bool,
    /// HTTP/2 with at most this many requests in flight on each connection, as streams
    /// (`spidey bench --h2 --streams N`: prior knowledge on plain TCP, ALPN `h2` over TLS);
    /// absent: HTTP/1.1, one request at a time per connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
}

/// How an open-loop client gets a connection for each request ([`spidey_bench::OpenModel`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Model {
    #[default]
    Pool,
    PerRequest,
}

impl Model {
    fn is_pool(&self) -> bool {
        *self == Model::Pool
    }
}

impl ClientSpec {
    /// A closed loop of `c` keep-alive connections sending `n` requests in all.
    pub fn closed(c: u32, n: u64) -> ClientSpec {
        ClientSpec {
            c,
            n: Some(n),
            duration: None,
            rate: None,
            capacity: None,
            keepalive: true,
            model: Model::default(),
            resume: true,
            streams: None,
        }
    }

    /// A short stable label: `c4-n100`, `c10-d2s-r500`, `c1-n100-close`, `c1-d1s-r500-close-per-request`,
    /// `c1-d3s-x1.5-close-per-request` (1.5 times the server's capacity), `c4-d2s-h2x32`.
    pub fn label(&self) -> String {
        let mut s = format!("c{}", self.c);
        if let Some(n) = self.n {
            s += &format!("-n{n}");
        }
        if let Some(d) = &self.duration {
            s += &format!("-d{d}");
        }
        if let Some(r) = self.rate {
            s += &format!("-r{r}");
        }
        if let Some(x) = self.capacity {
            s += &format!("-x{x}");
        }
        if !self.keepalive {
            s += "-close";
        }
        if self.model == Model::PerRequest {
            s += "-per-request";
        }
        if !self.resume {
            s += "-no-resume";
        }
        if let Some(m) = self.streams {
            s += &format!("-h2x{m}");
        }
        s
    }

    /// Requests in flight at once on all connections: `c`, times the streams over HTTP/2.
    #[cfg(test)]
    pub fn in_flight(&self) -> u64 {
        u64::from(self.c) * u64::from(self.streams.unwrap_or(1))
    }
}

/// A table: the dimensions shown per row, then metric columns (each with the seed's beside it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TableSpec {
    pub dims: Vec<Dim>,
    pub columns: Vec<Column>,
    /// Normalise one column by a baseline point, for the seed and for us (shapes, not
    /// absolute numbers).
    pub baseline: Option<Baseline>,
    /// A second table: each server `X{suffix}` against server `X` ([`crate::report::versus`]).
    pub versus: Option<Versus>,
}

/// Pairs of servers told apart by a label suffix (`event tls` against `event`): the ratio
/// of each metric, the suffixed one over the other, with its per-round interval.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Versus {
    pub suffix: String,
    /// What the ratio is called in the table: `TLS ÷ plain`.
    pub name: String,
    pub metrics: Vec<crate::experiment::metric::Metric>,
}

/// The point each row is divided by: the row's coordinates with those `at` names
/// replaced (`{ server = "single", c = 1 }`: single at one client, same workload).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Baseline {
    /// Index of the column to normalise.
    #[serde(default)]
    pub column: usize,
    pub at: crate::experiment::claim::Select,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Column {
    pub header: String,
    pub metric: crate::experiment::metric::Metric,
}

/// A dimension of a point, usable as a table column, plot axis or series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Dim {
    Server,
    Workload,
    Connections,
    Requests,
    Rate,
    /// The offered rate as a share of the server's capacity (`ClientSpec::capacity`).
    Share,
    Clients,
    /// How the client uses connections: keep-alive, or a new one per request (over TLS
    /// with or without session resumption).
    Connection,
    /// The protocol and the requests in flight per connection: HTTP/1.1's one, or HTTP/2's
    /// streams (`ClientSpec::streams`).
    Streams,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlotSpec {
    pub title: String,
    pub x: Dim,
    pub y: Vec<crate::experiment::metric::Metric>,
    /// Only points of this workload.
    pub workload: Option<String>,
    #[serde(default)]
    pub log_x: bool,
}

/// A one-line finding computed from the numbers.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum FindingSpec {
    /// Where server `a` beats server `b` on `metric` along `over`.
    Compare { metric: crate::experiment::metric::Metric, a: String, b: String, over: Dim, workload: Option<String> },
    /// Which server is best on `metric`, and at how many points.
    Best { metric: crate::experiment::metric::Metric, workload: Option<String> },
    /// How `metric` changes along `over`, per server.
    Trend { metric: crate::experiment::metric::Metric, over: Dim, workload: Option<String> },
}

/// A row of the seed's table: the point it matches (absent fields match anything) and
/// its values in the order of the table's columns (`nan` where the seed has none).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SeedRow {
    pub server: Option<String>,
    pub workload: Option<String>,
    pub c: Option<u32>,
    pub n: Option<u64>,
    pub rate: Option<f64>,
    pub values: Vec<f64>,
}

/// A byte count written `1KB`, `102KB`, `1MB`, `1GB` (powers of 1024) or a bare number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct ByteSize(pub u64);

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_size(&s).map(ByteSize).map_err(serde::de::Error::custom)
    }
}

pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|ch: char| !ch.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("invalid size '{s}'"))?;
    let mult = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "KB" | "K" | "KIB" => 1 << 10,
        "MB" | "M" | "MIB" => 1 << 20,
        "GB" | "G" | "GIB" => 1 << 30,
        _ => return Err(format!("invalid size unit in '{s}'")),
    };
    Ok(n * mult)
}

fn five() -> u32 {
    5
}
fn ten() -> u64 {
    10
}
fn yes() -> bool {
    true
}
fn is_true(v: &bool) -> bool {
    *v
}

impl Experiment {
    pub fn parse(source: &crate::experiment::sources::Source) -> anyhow::Result<Experiment> {
        let exp: Experiment =
            toml::from_str(&source.text).with_context(|| format!("invalid experiment {}", source.name))?;
        exp.check().with_context(|| format!("invalid experiment {}", source.name))?;
        Ok(exp)
    }

    pub fn workload(&self, name: &str) -> Option<&Workload> {
        self.workloads.iter().find(|w| w.name == name)
    }

    /// Every name a sweep uses must be defined, and every seed row must fit its table.
    fn check(&self) -> anyhow::Result<()> {
        for sweep in &self.sweeps {
            sweep.rtt().map_err(|e| anyhow::anyhow!("sweep {}: rtt: {e}", sweep.name))?;
            anyhow::ensure!(sweep.repeats >= 5, "sweep {}: a full run needs at least 5 repeats", sweep.name);
            let quick = sweep.quick.repeats.unwrap_or(QUICK_REPEATS);
            anyhow::ensure!(quick >= 3, "sweep {}: a quick run needs at least 3 repeats", sweep.name);
            let names = sweep.workloads.iter().chain(sweep.quick.workloads.iter().flatten());
            for w in names {
                anyhow::ensure!(self.workload(w).is_some(), "sweep {}: unknown workload '{w}'", sweep.name);
            }
            for s in &sweep.servers {
                anyhow::ensure!(s.mode.is_some() != s.peer.is_some(), "server {}: give mode or peer", s.label);
                if let Some(p) = &s.peer {
                    anyhow::ensure!(self.peers.iter().any(|x| &x.name == p), "server {}: unknown peer '{p}'", s.label);
                }
            }
            if let Some(b) = &sweep.table.baseline {
                anyhow::ensure!(b.column < sweep.table.columns.len(), "sweep {}: baseline column", sweep.name);
            }
            let https = sweep.servers.iter().any(|s| s.scheme == Scheme::Https);
            anyhow::ensure!(
                !(sweep.fresh_clients && https),
                "sweep {}: fresh client processes speak plain HTTP only",
                sweep.name
            );
            for c in sweep.clients.iter().chain(sweep.quick.clients.iter().flatten()) {
                if let Some(x) = c.capacity {
                    let ok = x > 0.0 && c.rate.is_none() && c.n.is_none() && c.duration.is_some();
                    anyhow::ensure!(
                        ok,
                        "sweep {}: a capacity share ({x}) is above 0, with a duration, without rate or n",
                        sweep.name
                    );
                }
            }
            for row in &sweep.seed_rows {
                anyhow::ensure!(row.values.len() == sweep.table.columns.len(), "sweep {}: seed row width", sweep.name);
            }
        }
        if let Some(r) = &self.robustness {
            let mut names = vec![&r.small, &r.large];
            names.extend(r.mixed.iter().map(|m| &m.burn));
            for w in names {
                anyhow::ensure!(self.workload(w).is_some(), "robustness: unknown workload '{w}'");
            }
            for s in &r.servers {
                anyhow::ensure!(s.mode.is_some() != s.peer.is_some(), "server {}: give mode or peer", s.label);
            }
        }
        for claim in &self.claims {
            claim.check().with_context(|| format!("claim '{}'", claim.text()))?;
            if claim.sweep().is_empty() {
                continue;
            }
            let sweep = self.sweeps.iter().find(|s| s.name == claim.sweep());
            let sweep =
                sweep.with_context(|| format!("claim '{}': unknown sweep '{}'", claim.text(), claim.sweep()))?;
            for server in claim.servers() {
                anyhow::ensure!(
                    sweep.servers.iter().any(|s| s.label == server),
                    "claim '{}': sweep {} has no server '{server}'",
                    claim.text(),
                    sweep.name
                );
            }
        }
        Ok(())
    }
}

/// Repeats of each point in a quick run (a sweep's `quick.repeats` may ask for more).
pub(crate) const QUICK_REPEATS: u32 = 3;

/// How a sweep's points are made cold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Cold {
    /// The whole machine's clean caches dropped (root).
    Machine,
    /// The document root's files evicted from the page cache.
    Files,
}

#[cfg(test)]
mod tests {
    use super::{parse_size, ClientSpec, Experiment};

    /// 014's design: every shape of every form (HTTP/1.1's connections, HTTP/2's
    /// connections x streams) keeps the same requests in flight, and every HTTP/2 shape
    /// stays within the 100 streams a connection of every mode allows.
    #[test]
    fn experiment_014_keeps_the_requests_in_flight() {
        let sources = crate::experiment::sources::find(None, &["014".to_string()]).unwrap();
        let exp = Experiment::parse(&sources[0]).unwrap();
        let sweep = &exp.sweeps[0];
        let shapes: Vec<&ClientSpec> = sweep.clients.iter().chain(sweep.quick.clients.iter().flatten()).collect();
        assert!(shapes.len() >= 8, "{}", shapes.len());
        for c in &shapes {
            assert_eq!(c.in_flight(), 96, "{}", c.label());
            assert!(c.streams.is_none_or(|m| m <= 100), "{}", c.label());
        }
        assert!(shapes.iter().any(|c| c.streams.is_none()), "no HTTP/1.1 shape to compare with");
        assert!(sweep.servers.iter().all(|s| s.args.iter().any(|a| a == "--http2")), "a server without --http2");
    }

    /// (client, label): HTTP/2's streams are part of a point's identity.
    #[test]
    fn labels_name_the_streams() {
        let h2 =
            |c, m| ClientSpec { streams: Some(m), duration: Some("2s".into()), n: None, ..ClientSpec::closed(c, 1) };
        let cases =
            [(ClientSpec::closed(96, 100), "c96-n100"), (h2(12, 8), "c12-d2s-h2x8"), (h2(1, 96), "c1-d2s-h2x96")];
        for (client, want) in cases {
            assert_eq!(client.label(), want);
        }
    }

    #[test]
    fn sizes_table() {
        let cases = [("1KB", Ok(1024)), ("102KB", Ok(104_448)), ("1MB", Ok(1 << 20)), ("7", Ok(7)), ("1XB", Err(()))];
        for (input, want) in cases {
            assert_eq!(parse_size(input).map_err(|_| ()), want, "{input}");
        }
    }
}
