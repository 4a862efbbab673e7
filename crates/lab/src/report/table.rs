//! The numbers of a sweep gathered per point (repeats together), and the sweep's table in
//! the seed's shape: the point's dimensions, then each metric here beside the seed's value
//! (split to fit a laptop screen).

use crate::experiment::metric::{self, Metric};
use crate::experiment::plan::Active;
use crate::experiment::{Dim, SeedRow};
use crate::judge::sample::{seed_matches, twin, Sample};
use crate::judge::stats::with_interval;
use crate::report::render::{Table, MAX_COLUMNS};
use crate::run::measurement::Measurement;
use std::collections::BTreeMap;

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
    // Each column's header and scale: seconds under one shown as milliseconds.
    let units: Vec<(String, f64)> = spec
        .columns
        .iter()
        .enumerate()
        .map(|(i, col)| {
            let here = samples.iter().filter(|s| !s.runs.is_empty()).map(|s| s.value(col.metric));
            let seed = a.sweep.seed_rows.iter().map(|r| r.values[i]);
            unit(&col.header, here.chain(seed))
        })
        .collect();
    for (header, _) in &units {
        headers.push(format!("{header} (here)"));
        if has_seed {
            headers.push(format!("{header} (seed)"));
        }
        groups.push(pair);
    }
    if let Some(b) = &spec.baseline {
        let header = &units[b.column].0;
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
            let scale = units[i].1;
            row.push(if s.runs.is_empty() {
                "–".into()
            } else {
                with_interval(s.interval(col.metric).scaled(scale))
            });
            if has_seed {
                row.push(seed.map(|r| metric::format(r.values[i] * scale)).unwrap_or_else(|| "–".into()));
            }
        }
        if let Some(b) = &spec.baseline {
            let m = spec.columns[b.column].metric;
            let base = twin(s, &b.at, samples);
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
        detail.push(server_cell(&s.runs));
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
fn seed_twin(own: &SeedRow, r: &SeedRow, at: &crate::experiment::claim::Select) -> bool {
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

/// A column's header and the factor its values are shown multiplied by: a time in
/// seconds (`(s)` in its header) whose values are all under a second reads in
/// milliseconds (`Time (ms)`, `0.1886`, not `Time (s)`, `0.0001886`); any other column as
/// it is.
fn unit(header: &str, values: impl Iterator<Item = f64>) -> (String, f64) {
    let largest = values.filter(|v| v.is_finite()).map(f64::abs).fold(0.0, f64::max);
    match header.strip_suffix("(s)") {
        Some(name) if largest < 1.0 => (format!("{name}(ms)"), 1e3),
        _ => (header.to_string(), 1.0),
    }
}

/// A normalised value: `1.23×`.
fn ratio(v: f64) -> String {
    if v.is_finite() {
        crate::judge::rule::times(v)
    } else {
        "–".into()
    }
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
        Dim::Streams => "Protocol",
    }
}

/// A table cell for a point's repeats: the answers the client counted against those the
/// server counted (by class) and its body bytes, summed over the repeats; `–` for the
/// server's side when a repeat has no server count (a peer).
fn server_cell(runs: &[Measurement]) -> String {
    if runs.is_empty() {
        return "–".into();
    }
    let client: u64 = runs.iter().map(|m| m.responses).sum();
    let Some(server) = runs.iter().map(|m| m.server.as_ref()).collect::<Option<Vec<_>>>() else {
        return format!("{client} / –");
    };
    let mut classes: BTreeMap<&str, u64> = BTreeMap::new();
    for counts in &server {
        for (class, n) in &counts.responses {
            *classes.entry(class).or_default() += n;
        }
    }
    let total: u64 = classes.values().sum();
    let bytes: u64 = server.iter().map(|c| c.body_bytes).sum();
    let by_class: Vec<String> = classes.iter().map(|(c, n)| format!("{c} {n}")).collect();
    let (scale, unit) = if bytes >= 1_000_000 { (1e6, "MB") } else { (1e3, "KB") };
    let size = format!("{} {unit}", crate::experiment::metric::format(bytes as f64 / scale));
    format!("{client} / {total} ({}; {size})", by_class.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::server_counts::ServerCounts;

    #[test]
    fn cells_put_the_server_beside_the_client() {
        let counts = |ok, bad| ServerCounts {
            responses: BTreeMap::from([("2xx".to_string(), ok), ("5xx".to_string(), bad)]),
            body_bytes: 1_000_000,
        };
        let run = |responses, server| Measurement { responses, server, ..Default::default() };
        let cases: [(Vec<Measurement>, &str); 3] = [
            (
                vec![run(99, Some(counts(97, 3))), run(100, Some(counts(100, 0)))],
                "199 / 200 (2xx 197, 5xx 3; 2.000 MB)",
            ),
            (vec![run(50, None)], "50 / –"),
            (vec![], "–"),
        ];
        for (runs, want) in cases {
            assert_eq!(server_cell(&runs), want);
        }
    }

    /// A wide table is split, each part repeating the point's columns and keeping a
    /// metric's "here" beside its "seed".
    #[test]
    fn seconds_under_one_read_as_milliseconds() {
        let cases: &[(&str, &[f64], &str, f64)] = &[
            ("Time (s)", &[0.0001886, 0.0059], "Time (ms)", 1e3),
            ("Time (s)", &[0.5, 1.2], "Time (s)", 1.0),
            ("Time (s)", &[f64::NAN, 0.2], "Time (ms)", 1e3),
            ("Throughput (req/s)", &[0.5], "Throughput (req/s)", 1.0),
            ("Requests/s", &[0.5], "Requests/s", 1.0),
        ];
        for (header, values, want, scale) in cases {
            assert_eq!(unit(header, values.iter().copied()), (want.to_string(), *scale), "{header} {values:?}");
        }
    }

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
