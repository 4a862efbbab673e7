//! The numbers of a sweep gathered per point: a [`Sample`] is one server × workload ×
//! client with every repeat measured so far, what the verdicts, findings, tables and plots
//! all read; and which samples a claim's [`Select`] picks and pairs ([`twin`]).
//!
//! `Select` is the experiment file's (`claim.rs`); how it picks among numbers is here, in
//! the stage that has numbers, so the schema imports nothing of the judging.

use crate::experiment::claim::Select;
use crate::experiment::metric::Metric;
use crate::experiment::plan::{point_id, Active};
use crate::experiment::{ClientSpec, Dim, SeedRow};
use crate::judge::stats::{self, Interval};
use crate::run::measurement::Measurement;
use crate::run::results::{Outcome, Record};
use std::collections::HashMap;

/// The fewest clean repeats a point needs for a verdict.
pub(crate) const MIN_CLEAN_REPEATS: usize = stats::MIN_RUNS;

/// One server × workload × client of a sweep, with every repeat measured so far.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub server: String,
    pub workload: String,
    pub client: ClientSpec,
    pub runs: Vec<Measurement>,
}

impl Sample {
    /// The median over repeats; NaN when nothing was measured.
    pub fn value(&self, m: Metric) -> f64 {
        stats::median(self.values(m))
    }

    /// The metric in each clean repeat (those not `excluded` as disturbed).
    pub fn values(&self, m: Metric) -> Vec<f64> {
        self.keyed(m).into_iter().map(|(_, v)| v).collect()
    }

    /// The metric in each clean repeat, keyed by repeat (runs without one by their
    /// position), so two samples' repeats pair up by round.
    pub fn keyed(&self, m: Metric) -> Vec<(u32, f64)> {
        self.runs
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.excluded)
            .map(|(i, r)| (r.repeat.unwrap_or(i as u32), m.value(r)))
            .filter(|(_, v)| !v.is_nan())
            .collect()
    }

    /// The metric per repeat number, `NaN` where the repeat is missing, excluded or has
    /// no value: index `r` is repeat `r`, so two samples line up by round.
    pub fn by_repeat(&self, m: Metric) -> Vec<f64> {
        let keyed = self.keyed(m);
        let len = self.runs.iter().enumerate().map(|(i, r)| r.repeat.unwrap_or(i as u32) as usize + 1).max();
        let mut out = vec![f64::NAN; len.unwrap_or(0)];
        for (r, v) in keyed {
            out[r as usize] = v;
        }
        out
    }

    /// How busy the load generator and how idle the server were over the clean repeats:
    /// the median of each share over the repeats that have both (records without their
    /// CPU counts use `fallback`); None when no repeat has.
    pub fn saturation(&self, fallback: crate::run::cpu::Shares) -> Option<crate::run::cpu::Saturation> {
        let each: Vec<crate::run::cpu::Saturation> =
            self.runs.iter().filter(|r| !r.excluded).filter_map(|r| r.cpu.saturation(fallback)).collect();
        (!each.is_empty()).then(|| crate::run::cpu::Saturation {
            client_busy_pct: stats::median(each.iter().map(|x| x.client_busy_pct).collect()),
            server_idle_pct: stats::median(each.iter().map(|x| x.server_idle_pct).collect()),
        })
    }

    /// Why this point gets no verdict though it was measured: fewer than
    /// [`MIN_CLEAN_REPEATS`] clean repeats (the others stayed disturbed through their tries,
    /// or failed). None when it has enough, or when nothing was measured at all.
    pub fn no_verdict(&self) -> Option<String> {
        let clean = self.runs.iter().filter(|r| !r.excluded).count();
        if self.runs.is_empty() || clean >= MIN_CLEAN_REPEATS {
            return None;
        }
        let excluded = self.runs.len() - clean;
        Some(format!(
            "insufficient clean repeats: {clean} of {} measured ({excluded} stayed disturbed), {MIN_CLEAN_REPEATS} needed",
            self.runs.len()
        ))
    }

    /// The "Disturbed repeats" cell: `1/5; 2 re-measured; 1 excluded`, and `no verdict`
    /// when too few clean repeats remain.
    pub fn disturbance(&self) -> String {
        if self.runs.is_empty() {
            return "–".into();
        }
        let disturbed = self.runs.iter().filter(|r| r.cpu.disturbed).count();
        let retried: u32 = self.runs.iter().map(|r| r.tries.saturating_sub(1)).sum();
        let excluded = self.runs.iter().filter(|r| r.excluded).count();
        let mut cell = format!("{disturbed}/{}", self.runs.len());
        if retried > 0 {
            cell += &format!("; {retried} re-measured");
        }
        if excluded > 0 {
            cell += &format!("; {excluded} excluded");
        }
        if self.no_verdict().is_some() {
            cell += "; too few clean: no verdict";
        }
        cell
    }

    /// The median over repeats with its order-statistic interval ([`stats`]).
    pub fn interval(&self, m: Metric) -> Interval {
        stats::median_interval(&self.values(m))
    }

    /// The point's coordinate along a dimension, as a number (NaN for names).
    pub fn coord(&self, dim: Dim) -> f64 {
        let c = &self.client;
        match dim {
            Dim::Connections | Dim::Clients => f64::from(self.client.c),
            Dim::Requests => self.client.n.map(|n| n as f64).unwrap_or(f64::NAN),
            Dim::Rate => self.client.rate.unwrap_or(f64::NAN),
            Dim::Share => self.client.capacity.unwrap_or(f64::NAN),
            Dim::Connection => CONNECTION_USES.iter().position(|u| u.0 == (c.keepalive, c.resume)).unwrap_or(0) as f64,
            // HTTP/1.1 reads 0, so it sorts before HTTP/2 with one stream.
            Dim::Streams => c.streams.map_or(0.0, f64::from),
            Dim::Server | Dim::Workload => f64::NAN,
        }
    }

    /// Where the point is, in words: its client settings.
    pub fn place(&self) -> String {
        let c = &self.client;
        let mut parts = vec![phrase(Dim::Connections, f64::from(c.c))];
        if let Some(m) = c.streams {
            parts.push(phrase(Dim::Streams, f64::from(m)));
        }
        if let Some(n) = c.n {
            parts.push(phrase(Dim::Requests, n as f64));
        }
        if let Some(r) = c.rate {
            parts.push(phrase(Dim::Rate, r));
        }
        if let Some(x) = c.capacity {
            parts.push(phrase(Dim::Share, x));
        }
        parts.join(", ")
    }

    /// The point's coordinate along a dimension, as the table shows it.
    pub fn label(&self, dim: Dim) -> String {
        match dim {
            Dim::Server => self.server.clone(),
            Dim::Workload => self.workload.clone(),
            Dim::Connections => self.client.c.to_string(),
            Dim::Requests => self.client.n.map(|n| n.to_string()).unwrap_or_else(|| "–".into()),
            Dim::Rate => self.client.rate.map(|r| format!("{r}")).unwrap_or_else(|| "–".into()),
            Dim::Share => self.client.capacity.map(|x| format!("{x}×")).unwrap_or_else(|| "–".into()),
            Dim::Clients => match self.client.n {
                Some(n) => format!("{} × {}", self.client.c, n / u64::from(self.client.c.max(1))),
                None => self.client.c.to_string(),
            },
            Dim::Connection => phrase(Dim::Connection, self.coord(Dim::Connection)),
            Dim::Streams => phrase(Dim::Streams, self.coord(Dim::Streams)),
        }
    }
}

/// The samples of a sweep in table order (workload, client, server), measured or not.
pub(crate) fn samples(exp_id: &str, a: &Active<'_>, quick: bool, records: &HashMap<String, Record>) -> Vec<Sample> {
    let mut out = Vec::new();
    for workload in &a.workloads {
        for client in &a.clients {
            for server in a.servers.iter().filter(|s| s.runs(workload)) {
                let runs = (0..a.repeats)
                    .filter_map(|r| {
                        let id = point_id(quick, exp_id, &a.sweep.name, &server.label, workload, client, r);
                        let record = records.get(&id).filter(|x| x.outcome == Outcome::Measured)?;
                        let m = record.measurement.clone()?;
                        Some(Measurement { repeat: Some(r), ..m })
                    })
                    .collect();
                out.push(Sample {
                    server: server.label.clone(),
                    workload: workload.clone(),
                    client: client.clone(),
                    runs,
                });
            }
        }
    }
    out
}

impl Select {
    pub fn matches(&self, s: &Sample) -> bool {
        let c = s.client.c;
        let rate = s.client.rate;
        self.server.as_ref().map_or(true, |x| *x == s.server)
            && self.server_in.as_ref().map_or(true, |x| x.contains(&s.server))
            && self.workload.as_ref().map_or(true, |x| *x == s.workload)
            && self.workload_in.as_ref().map_or(true, |x| x.contains(&s.workload))
            && self.c.map_or(true, |x| x == c)
            && self.c_min.map_or(true, |x| c >= x)
            && self.c_max.map_or(true, |x| c <= x)
            && self.n.map_or(true, |x| Some(x) == s.client.n)
            && self.rate.map_or(true, |x| Some(x) == rate)
            && self.rate_min.map_or(true, |x| rate.is_some_and(|r| r >= x))
            && self.rate_max.map_or(true, |x| rate.is_some_and(|r| r <= x))
    }
}

/// The twin of `s` on the `b` side: the sample whose coordinates are `s`'s, except those
/// `b` names. Naming a client count frees the request count too (seeds scale requests
/// with clients); naming a server but no workload falls back to the server's only
/// workload when it has its own (CGI's script against the handler's path). What `b`
/// cannot name always matches: the share of capacity a rate is (each server's own), the
/// open-loop model, keep-alive and TLS resumption.
pub(crate) fn twin<'a, T: AsRef<Sample>>(s: &Sample, b: &Select, samples: &'a [T]) -> Option<&'a Sample> {
    let fits = |t: &Sample, strict_workload: bool| {
        b.matches(t)
            && (b.server.is_some() || t.server == s.server)
            && (b.workload.is_some() || !strict_workload || t.workload == s.workload)
            && (b.c.is_some() || t.client.c == s.client.c)
            && (b.c.is_some() || b.n.is_some() || t.client.n == s.client.n)
            && (b.rate.is_some() || t.client.rate == s.client.rate)
            && t.client.capacity == s.client.capacity
            && t.client.model == s.client.model
            && t.client.keepalive == s.client.keepalive
            && t.client.resume == s.client.resume
    };
    let all = || samples.iter().map(AsRef::as_ref).filter(|t| !t.runs.is_empty());
    all().find(|t| fits(t, true)).or_else(|| all().find(|t| fits(t, false)))
}

impl AsRef<Sample> for Sample {
    fn as_ref(&self) -> &Sample {
        self
    }
}

pub(crate) fn seed_matches(r: &SeedRow, s: &Sample) -> bool {
    r.server.as_ref().map_or(true, |x| *x == s.server)
        && r.workload.as_ref().map_or(true, |x| *x == s.workload)
        && r.c.map_or(true, |x| x == s.client.c)
        && r.n.map_or(true, |x| Some(x) == s.client.n)
        && r.rate.map_or(true, |x| Some(x) == s.client.rate)
}

/// The connection uses along [`Dim::Connection`], in order: (keep-alive, resume), words.
/// Plain HTTP ignores resumption: its two `new per request` rows are the same load.
const CONNECTION_USES: [((bool, bool), &str); 4] = [
    ((true, true), "keep-alive"),
    ((false, true), "new per request (TLS: resumed)"),
    ((false, false), "new per request (TLS: full handshake)"),
    ((true, false), "keep-alive (TLS: no resumption)"),
];

/// How a coordinate reads in a sentence: "4 connections", "N = 1000", "500 req/s".
pub(crate) fn phrase(d: Dim, x: f64) -> String {
    match d {
        Dim::Connections | Dim::Clients => format!("{x} connection{}", if x == 1.0 { "" } else { "s" }),
        Dim::Requests => format!("N = {x}"),
        Dim::Rate => format!("{x} req/s"),
        Dim::Share => format!("{x}× capacity"),
        Dim::Connection => CONNECTION_USES.get(x as usize).map_or("?", |u| u.1).to_string(),
        Dim::Streams if x == 0.0 => "HTTP/1.1".to_string(),
        Dim::Streams => format!("h2, {x} stream{} each", if x == 1.0 { "" } else { "s" }),
        Dim::Server | Dim::Workload => format!("{x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (streams coordinate, words): HTTP/1.1 is 0, before HTTP/2 with one stream.
    #[test]
    fn streams_read_as_protocol_and_count() {
        let cases = [(0.0, "HTTP/1.1"), (1.0, "h2, 1 stream each"), (32.0, "h2, 32 streams each")];
        for (x, want) in cases {
            assert_eq!(phrase(Dim::Streams, x), want);
        }
    }

    /// A twin has the sample's share of capacity: "2 CPUs" at 2× its capacity pairs with
    /// "1 CPU" at 2× its own, never with the first share the other server has (regression:
    /// 011's "two server CPUs" paired every share with the 1-CPU 0.5× point).
    #[test]
    fn twins_pair_at_the_same_share_of_capacity() {
        let at = |server: &str, share: f64| {
            let client =
                ClientSpec { n: None, duration: Some("3s".into()), capacity: Some(share), ..ClientSpec::closed(1, 0) };
            let runs = vec![crate::run::measurement::Measurement::default()];
            Sample { server: server.into(), workload: "cgi page".into(), client, runs }
        };
        let shares = [0.5, 1.0, 2.0, 3.0];
        let samples: Vec<Sample> =
            ["cgi on 1 CPU", "cgi on 2 CPUs"].iter().flat_map(|s| shares.map(|x| at(s, x))).collect();
        let b = Select { server: Some("cgi on 1 CPU".into()), ..Select::default() };
        for share in shares {
            let got = twin(&at("cgi on 2 CPUs", share), &b, &samples).map(|t| (t.server.as_str(), t.client.capacity));
            assert_eq!(got, Some(("cgi on 1 CPU", Some(share))), "the twin of the 2-CPU point at {share}×");
        }
        // No point at that share on the other side: no twin, not another share's.
        let b_only: Vec<Sample> = vec![at("cgi on 1 CPU", 0.5)];
        assert!(twin(&at("cgi on 2 CPUs", 2.0), &b, &b_only).is_none());
    }
}
