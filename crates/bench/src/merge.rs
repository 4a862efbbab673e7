//! `spidey bench merge`: several runs' results (one per client host, say) combined into the
//! result of one run, exactly. Counts, bytes, statuses and errors by class add; every
//! latency figure comes from the sum of the runs' histograms (carried in each result in
//! HdrHistogram's standard form, [`super::histo_codec`]), never from averaged percentiles;
//! the duration is the union of the runs' windows (from each one's wall-clock start), and
//! the rates are the totals over it. The per-second series is aligned on the earliest
//! start, to the whole second, each second's percentiles again from its summed histogram.
//!
//! Runs that applied a different kind of load (method, loop, model, keep-alive, warmup,
//! timeout, lateness bound) are refused: their sum would describe no run.

use super::histo_codec::{self, CodecError, Histograms};
use super::report::human_report;
use super::stats::{self, HandshakeCounts, LatencySummary, SecondSample, SecondStats};
use super::{BenchResult, ErrorCounts};
use anyhow::Context;
use hdrhistogram::Histogram;
use spidey_config::ConfigError;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Why runs could not be merged. `part` counts from 1, in the order given.
#[derive(Debug)]
pub enum MergeError {
    /// Nothing to merge.
    Empty,
    /// The runs applied different kinds of load; `values` are each run's, in order.
    Mismatch { field: &'static str, values: Vec<String> },
    /// A run without histograms or start time (written before `spidey bench` kept them).
    NoHistograms { part: usize },
    /// A run's histogram could not be read.
    Codec { part: usize, error: CodecError },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Empty => write!(f, "no runs to merge"),
            MergeError::Mismatch { field, values } => {
                write!(f, "cannot merge runs with different {field}: {}", values.join(", "))
            }
            MergeError::NoHistograms { part } => write!(
                f,
                "run {part} has no histograms or start time (written by an older spidey bench); \
                 percentiles cannot be merged without them"
            ),
            MergeError::Codec { part, error } => write!(f, "run {part}: {error}"),
        }
    }
}

impl std::error::Error for MergeError {}

/// `spidey bench merge FILE... [--json OUT]`: prints the merged run's report.
pub(crate) fn run(files: &[PathBuf], json: Option<&PathBuf>) -> anyhow::Result<()> {
    let mut parts = Vec::with_capacity(files.len());
    for path in files {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
        let part: BenchResult = serde_json::from_str(&text)
            .map_err(|e| ConfigError(format!("{} is not a spidey bench JSON result: {e}", path.display())))?;
        parts.push(part);
    }
    let merged = merge(&parts).map_err(|e| match &e {
        MergeError::NoHistograms { part } | MergeError::Codec { part, .. } => {
            ConfigError(format!("{}: {e}", files[part - 1].display()))
        }
        _ => ConfigError(e.to_string()),
    })?;
    println!("spidey bench merge: {} runs ({})", files.len(), names(files));
    print!("{}", human_report(&merged));
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&merged)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn names(files: &[PathBuf]) -> String {
    files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// The decoded histograms of one run.
struct Decoded {
    latency: Histogram<u64>,
    uncorrected: Option<Histogram<u64>>,
    lateness: Option<Histogram<u64>>,
    handshake: Option<Histogram<u64>>,
    start_ms: u64,
}

/// The runs as one.
pub fn merge(parts: &[BenchResult]) -> Result<BenchResult, MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    agree(parts, "methods", |p| p.method.clone())?;
    agree(parts, "loops", |p| p.loop_mode.clone())?;
    agree(parts, "open models", |p| p.open_model.clone())?;
    agree(parts, "lateness bounds", |p| p.late_after_us)?;
    agree(parts, "keep-alive", |p| p.keepalive)?;
    agree(parts, "protocols", |p| (p.protocol.clone(), p.streams))?;
    agree(parts, "warmups", |p| p.warmup_s)?;
    agree(parts, "timeouts", |p| p.timeout_s)?;
    agree(parts, "schemes (http, https)", |p| if p.handshakes.is_some() { "https" } else { "http" })?;
    let decoded = parts.iter().enumerate().map(|(i, p)| decode(i + 1, p)).collect::<Result<Vec<_>, _>>()?;
    let start_ms = decoded.iter().map(|d| d.start_ms).min().unwrap_or_default();
    let offset_s = |d: &Decoded| (d.start_ms - start_ms) as f64 / 1000.0;
    // INVARIANT: the union of the windows [start_i, start_i + duration_i] (gaps included).
    let duration_s = decoded.iter().zip(parts).map(|(d, p)| offset_s(d) + p.duration_s).fold(0.0, f64::max);
    let secs = duration_s.max(1e-9);

    let mut latency = summed();
    let (mut uncorrected, mut lateness) = (None::<Histogram<u64>>, None::<Histogram<u64>>);
    let mut handshake = None::<Histogram<u64>>;
    for d in &decoded {
        add(&mut latency, &d.latency);
        let optional =
            [(&mut uncorrected, &d.uncorrected), (&mut lateness, &d.lateness), (&mut handshake, &d.handshake)];
        for (sum, h) in optional {
            if let Some(h) = h {
                add(sum.get_or_insert_with(summed), h);
            }
        }
    }
    let mut urls: Vec<String> = Vec::new();
    let mut status: BTreeMap<u16, u64> = BTreeMap::new();
    let mut latency_sum_by_class_us: BTreeMap<String, u64> = BTreeMap::new();
    let mut late_by_class: BTreeMap<String, u64> = BTreeMap::new();
    let mut late_latency_sum_by_class_us: BTreeMap<String, u64> = BTreeMap::new();
    let mut errors = ErrorCounts::default();
    let mut handshakes = first.handshakes.map(|_| HandshakeCounts::default());
    for p in parts {
        if let (Some(sum), Some(h)) = (&mut handshakes, &p.handshakes) {
            sum.merge(h);
        }
        urls.extend(p.urls.iter().filter(|u| !urls.contains(u)).cloned().collect::<Vec<_>>());
        for (code, n) in &p.status {
            *status.entry(*code).or_default() += n;
        }
        let sums = [
            (&mut latency_sum_by_class_us, &p.latency_sum_by_class_us),
            (&mut late_by_class, &p.late_by_class),
            (&mut late_latency_sum_by_class_us, &p.late_latency_sum_by_class_us),
        ];
        for (sum, part) in sums {
            for (class, n) in part {
                let total = sum.entry(class.clone()).or_default();
                *total = total.saturating_add(*n);
            }
        }
        errors.merge(&p.errors);
    }
    let sum = |f: fn(&BenchResult) -> u64| parts.iter().map(f).sum::<u64>();
    let (responses, body_bytes, wire_bytes) = (sum(|p| p.responses), sum(|p| p.body_bytes), sum(|p| p.wire_bytes));
    let offsets: Vec<u64> = decoded.iter().map(|d| (d.start_ms - start_ms) / 1000).collect();
    Ok(BenchResult {
        urls,
        method: first.method.clone(),
        protocol: first.protocol.clone(),
        streams: first.streams,
        h2: parts.iter().filter_map(|p| p.h2.as_ref()).fold(None, |acc: Option<crate::H2Counts>, h| {
            let mut acc = acc.unwrap_or_default();
            acc.merge(h);
            Some(acc)
        }),
        connections: parts.iter().map(|p| p.connections).sum(),
        threads: parts.iter().map(|p| p.threads).sum(),
        loop_mode: first.loop_mode.clone(),
        rate: first.rate.map(|_| parts.iter().filter_map(|p| p.rate).sum()),
        open_model: first.open_model.clone(),
        late_after_us: first.late_after_us,
        keepalive: first.keepalive,
        warmup_s: first.warmup_s,
        timeout_s: first.timeout_s,
        requests: sum(|p| p.requests),
        responses,
        non_2xx_3xx: super::result::non_2xx_3xx(&status),
        late: sum(|p| p.late),
        late_by_class,
        late_latency_sum_by_class_us,
        duration_s,
        requests_per_sec: responses as f64 / secs,
        body_bytes,
        wire_bytes,
        body_bytes_per_sec: body_bytes as f64 / secs,
        wire_bytes_per_sec: wire_bytes as f64 / secs,
        latency: LatencySummary::of(&latency),
        latency_uncorrected: uncorrected.as_ref().map(LatencySummary::of),
        send_lateness: lateness.as_ref().map(LatencySummary::of),
        handshake: handshakes.map(|_| LatencySummary::of(handshake.as_ref().unwrap_or(&summed()))),
        handshakes,
        tls_error: parts.iter().find_map(|p| p.tls_error.clone()),
        connect_error: parts.iter().find_map(|p| p.connect_error.clone()),
        tls_negotiated: parts.iter().find_map(|p| p.tls_negotiated.clone()),
        status,
        latency_sum_by_class_us,
        errors,
        backlog: sum(|p| p.backlog),
        series: series(parts, &offsets)?,
        started_at_unix_ms: Some(start_ms),
        histograms: Some(
            Histograms::of(&latency, uncorrected.as_ref(), lateness.as_ref()).with_handshake(handshake.as_ref()),
        ),
    })
}

/// Every run's value of a field that must be the same in all.
fn agree<T: PartialEq + fmt::Debug>(
    parts: &[BenchResult],
    field: &'static str,
    get: impl Fn(&BenchResult) -> T,
) -> Result<(), MergeError> {
    let values: Vec<T> = parts.iter().map(get).collect();
    if values.windows(2).all(|w| w[0] == w[1]) {
        return Ok(());
    }
    Err(MergeError::Mismatch { field, values: values.iter().map(|v| format!("{v:?}")).collect() })
}

fn decode(part: usize, p: &BenchResult) -> Result<Decoded, MergeError> {
    let (Some(h), Some(start_ms)) = (&p.histograms, p.started_at_unix_ms) else {
        return Err(MergeError::NoHistograms { part });
    };
    let (latency, uncorrected, lateness) = h.decode().map_err(|error| MergeError::Codec { part, error })?;
    let handshake = h.decode_handshake().map_err(|error| MergeError::Codec { part, error })?;
    Ok(Decoded { latency, uncorrected, lateness, handshake, start_ms })
}

/// An empty histogram of bench's bounds that grows if a part recorded beyond them.
fn summed() -> Histogram<u64> {
    let mut h = stats::histogram(3);
    h.auto(true);
    h
}

fn add(sum: &mut Histogram<u64>, h: &Histogram<u64>) {
    // INVARIANT: `sum` resizes itself (see `summed`), so adding cannot fail.
    sum.add(h).expect("an auto-resizing histogram takes any values");
}

/// The runs' series summed second by second, run i's seconds shifted by `offsets[i]`.
fn series(parts: &[BenchResult], offsets: &[u64]) -> Result<Vec<SecondStats>, MergeError> {
    let mut seconds: BTreeMap<u64, SecondSample> = BTreeMap::new();
    for (i, (p, offset)) in parts.iter().zip(offsets).enumerate() {
        for s in &p.series {
            let Some(hdr) = &s.latency_hdr else { return Err(MergeError::NoHistograms { part: i + 1 }) };
            let h = histo_codec::decode(hdr).map_err(|error| MergeError::Codec { part: i + 1, error })?;
            let second = s.second + offset;
            let merged = seconds.entry(second).or_insert_with(|| SecondSample::new(second));
            merged.responses += s.responses;
            merged.errors += s.errors;
            merged.body_bytes += s.body_bytes;
            merged.wire_bytes += s.wire_bytes;
            merged.latency.auto(true);
            add(&mut merged.latency, &h);
        }
    }
    Ok(seconds.values().map(SecondSample::stats).collect())
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
