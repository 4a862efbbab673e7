//! The numbers of a sweep gathered per point (repeats together), and the sweep's table in
//! the seed's shape: the point's dimensions, then each metric here beside the seed's value
//! (split to fit a laptop screen).

use crate::experiment::{ClientSpec, Dim, SeedRow};
use crate::metric::{self, Measurement, Metric};
use crate::plan::{point_id, Active};
use crate::render::{Table, MAX_COLUMNS};
use crate::results::{Outcome, Record};
use crate::stats::{self, Interval};
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
        metric::median(self.values(m))
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
    pub fn saturation(&self, fallback: crate::cpu::Shares) -> Option<crate::cpu::Saturation> {
        let each: Vec<crate::cpu::Saturation> =
            self.runs.iter().filter(|r| !r.excluded).filter_map(|r| r.cpu.saturation(fallback)).collect();
        (!each.is_empty()).then(|| crate::cpu::Saturation {
            client_busy_pct: metric::median(each.iter().map(|x| x.client_busy_pct).collect()),
            server_idle_pct: metric::median(each.iter().map(|x| x.server_idle_pct).collect()),
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
            Dim::Server | Dim::Workload => f64::NAN,
        }
    }

    /// Where the point is, in words: its client settings.
    pub fn place(&self) -> String {
        let c = &self.client;
        let mut parts = vec![phrase(Dim::Connections, f64::from(c.c))];
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

/// The sweep's tables: the main one (the point's dimensions, then each metric here beside
/// the seed's, then the baseline ratios) and the detail one (the dimensions, then the
/// server's CPU per request, the disturbed repeats and the answers counted), each split
/// by [`fit`] to at most [`MAX_COLUMNS`] columns.
pub(crate) fn build(a: &Active<'_>, samples: &[Sample]) -> Vec<Table> {
    let spec = &a.sweep.table;
    let has_seed = !a.sweep.seed_rows.is_empty();
    let pair = if has_seed { 2 } else { 1 };
    let dims: Vec<String> = spec.dims.iter().map(|d| dim_header(*d).to_string()).collect();
    let mut headers = dims.clone();
    let mut groups = Vec::new();
    for col in &spec.columns {
        headers.push(format!("{} (here)", col.header));
        if has_seed {
            headers.push(format!("{} (seed)", col.header));
        }
        groups.push(pair);
    }
    if let Some(b) = &spec.baseline {
        let header = &spec.columns[b.column].header;
        headers.push(format!("{header} ÷ baseline (here)"));
        if has_seed {
            headers.push(format!("{header} ÷ baseline (seed)"));
        }
        groups.push(pair);
    }
    let mut rows = Vec::new();
    let mut details = Vec::new();
    for s in samples {
        let seed = a.sweep.seed_rows.iter().find(|r| seed_matches(r, s));
        let place: Vec<String> = spec.dims.iter().map(|d| s.label(*d)).collect();
        let mut row = place.clone();
        for (i, col) in spec.columns.iter().enumerate() {
            row.push(if s.runs.is_empty() { "–".into() } else { with_interval(s.interval(col.metric)) });
            if has_seed {
                row.push(seed.map(|r| metric::format(r.values[i])).unwrap_or_else(|| "–".into()));
            }
        }
        if let Some(b) = &spec.baseline {
            let m = spec.columns[b.column].metric;
            let base = crate::claim::twin(s, &b.at, samples);
            let here = base.map(|t| s.value(m) / t.value(m)).filter(|_| !s.runs.is_empty());
            row.push(here.map(ratio).unwrap_or_else(|| "–".into()));
            if has_seed {
                let own = a.sweep.seed_rows.iter().find(|r| seed_matches(r, s));
                let base = own.and_then(|o| a.sweep.seed_rows.iter().find(|r| seed_twin(o, r, &b.at)));
                let v = own.zip(base).map(|(o, r)| o.values[b.column] / r.values[b.column]);
                row.push(v.map(ratio).unwrap_or_else(|| "–".into()));
            }
        }
        rows.push(row);
        // The server's CPU per request (steadier than rates on a shared machine), the load
        // generator's own CPU, how many repeats ran on a disturbed machine, and the answers
        // counted on both sides.
        let mut detail = place;
        for m in [Metric::CpuUs, Metric::ClientBusyPct] {
            detail.push(if s.runs.is_empty() { "–".into() } else { with_interval(s.interval(m)) });
        }
        detail.push(s.disturbance());
        detail.push(crate::server_counts::cell(&s.runs));
        details.push(detail);
    }
    let mut detail_headers = dims;
    detail_headers.extend(
        [
            "Server CPU/request (µs)",
            "Load generator busy (% of its CPUs)",
            "Disturbed repeats",
            "Answered: client / server (--metrics), all repeats",
        ]
        .map(String::from),
    );
    let mut tables = fit(Table::new(headers, rows), spec.dims.len(), &groups);
    tables.extend(fit(Table::new(detail_headers, details), spec.dims.len(), &[1, 1, 1, 1]));
    tables
}

/// `t` split into tables of at most [`MAX_COLUMNS`] columns, each repeating the first
/// `dims` columns (the point) and taking whole `groups` of the rest (a metric here beside
/// the seed's stays together), in order.
pub(crate) fn fit(t: Table, dims: usize, groups: &[usize]) -> Vec<Table> {
    let room = MAX_COLUMNS.saturating_sub(dims).max(groups.iter().copied().max().unwrap_or(1));
    let mut chunks: Vec<Vec<usize>> = vec![Vec::new()];
    let mut col = dims;
    for &g in groups {
        if chunks.last().is_some_and(|c| c.len() + g > room) {
            chunks.push(Vec::new());
        }
        chunks.last_mut().into_iter().for_each(|c| c.extend(col..col + g));
        col += g;
    }
    let pick = |cells: &[String], chunk: &[usize]| -> Vec<String> {
        cells[..dims].iter().chain(chunk.iter().map(|&i| &cells[i])).cloned().collect()
    };
    chunks
        .iter()
        .filter(|c| !c.is_empty())
        .map(|chunk| Table::new(pick(&t.headers, chunk), t.rows.iter().map(|r| pick(r, chunk)).collect()))
        .collect()
}

/// Whether seed row `r` is the baseline of seed row `own`: it fits `at`, and has `own`'s
/// coordinates where `at` names none (a client count frees the request count).
fn seed_twin(own: &SeedRow, r: &SeedRow, at: &crate::claim::Select) -> bool {
    fn same<T: PartialEq>(x: &Option<T>, y: &Option<T>) -> bool {
        x.is_none() || y.is_none() || x == y
    }
    at.matches_seed(r)
        && (at.server.is_some() || same(&own.server, &r.server))
        && (at.workload.is_some() || same(&own.workload, &r.workload))
        && (at.c.is_some() || same(&own.c, &r.c))
        && (at.c.is_some() || at.n.is_some() || same(&own.n, &r.n))
        && (at.rate.is_some() || same(&own.rate, &r.rate))
}

/// A normalised value: `1.23×`.
fn ratio(v: f64) -> String {
    if v.is_finite() {
        crate::rule::times(v)
    } else {
        "–".into()
    }
}

/// `median [lo–hi, coverage]`, or the median alone when there is no interval.
pub(crate) fn with_interval(i: Interval) -> String {
    if i.known() {
        format!("{} {}", metric::format(i.median), i.brackets(metric::format))
    } else {
        metric::format(i.median)
    }
}

pub(crate) fn seed_matches(r: &SeedRow, s: &Sample) -> bool {
    r.server.as_ref().map_or(true, |x| *x == s.server)
        && r.workload.as_ref().map_or(true, |x| *x == s.workload)
        && r.c.map_or(true, |x| x == s.client.c)
        && r.n.map_or(true, |x| Some(x) == s.client.n)
        && r.rate.map_or(true, |x| Some(x) == s.client.rate)
}

pub(crate) fn dim_header(d: Dim) -> &'static str {
    match d {
        Dim::Server => "Server",
        Dim::Workload => "Workload",
        Dim::Connections => "Connections",
        Dim::Requests => "Requests",
        Dim::Rate => "Rate (req/s)",
        Dim::Share => "Rate (× capacity)",
        Dim::Clients => "Clients × requests",
        Dim::Connection => "Connection",
    }
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
        Dim::Server | Dim::Workload => format!("{x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wide table is split, each part repeating the point's columns and keeping a
    /// metric's "here" beside its "seed".
    #[test]
    fn fit_splits_wide_tables_keeping_pairs() {
        let headers: Vec<String> =
            ["D1", "D2", "a here", "a seed", "b here", "b seed", "c here", "c seed"].map(String::from).to_vec();
        let row: Vec<String> = (0..8).map(|i| i.to_string()).collect();
        let parts = fit(Table::new(headers, vec![row]), 2, &[2, 2, 2]);
        let got: Vec<Vec<String>> = parts.iter().map(|t| t.headers.clone()).collect();
        assert_eq!(
            got,
            [vec!["D1", "D2", "a here", "a seed", "b here", "b seed"], vec!["D1", "D2", "c here", "c seed"]]
        );
        assert_eq!(parts[1].rows, [vec!["0", "1", "6", "7"]]);
        let narrow = fit(Table::new(vec!["D".into(), "x".into()], vec![]), 1, &[1]);
        assert_eq!(narrow.len(), 1);
    }
}
