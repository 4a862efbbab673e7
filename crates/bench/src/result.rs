//! [`BenchResult`], everything a run measured, as the JSON file and the lab keep it, and
//! its assembly from the threads' merged [`stats::Recorder`]s.

use super::histo_codec::Histograms;
use super::stats::{self, H2Counts, HandshakeCounts, LatencySummary, SecondStats};
use super::{BenchConfig, ErrorCounts, Protocol, Stop};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

/// Everything measured. Latencies in microseconds, rates per second of `duration_s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    pub urls: Vec<String>,
    pub method: String,
    /// What the connections spoke: `http/1.1` or `h2` (`--h2`).
    #[serde(default = "http1")]
    pub protocol: String,
    /// `--h2`: the most streams at once per connection (`-m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<usize>,
    /// `--h2`: connections opened, GOAWAYs, connection errors, resets and retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2: Option<H2Counts>,
    pub connections: usize,
    pub threads: usize,
    /// "closed" or "open".
    pub loop_mode: String,
    pub rate: Option<f64>,
    /// Open loop: "pool" or "per-request" (see [`OpenModel`]).
    #[serde(default)]
    pub open_model: Option<String>,
    /// Open loop: the lateness bound beyond which a sent request counts as `late`.
    #[serde(default)]
    pub late_after_us: Option<u64>,
    pub keepalive: bool,
    pub warmup_s: f64,
    pub timeout_s: f64,
    /// Counted requests: responses plus errors.
    pub requests: u64,
    /// Complete responses, whatever their status (the sum of `status`), answers to
    /// requests sent late included.
    pub responses: u64,
    /// Of `responses`, those whose status is not 2xx or 3xx (wrk's "Non-2xx or 3xx
    /// responses"); `--fail-on error-rate` counts them as failed.
    #[serde(default)]
    pub non_2xx_3xx: u64,
    /// Open loop: of `responses` (and `status`), the answers to requests sent more than
    /// `late_after_us` after their intended time: the schedule was not kept.
    #[serde(default)]
    pub late: u64,
    /// Open loop: `late` by status class (`"2xx"`), and their latencies summed likewise (µs),
    /// so that a reader can take them out of `status` and `latency_sum_by_class_us`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub late_by_class: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub late_latency_sum_by_class_us: BTreeMap<String, u64>,
    /// From the end of the warmup to the last response or error (at least the set duration).
    pub duration_s: f64,
    /// The achieved rate: complete responses (`responses`, late ones included) per second
    /// of `duration_s`; errors excluded.
    pub requests_per_sec: f64,
    /// Bytes after the response heads.
    pub body_bytes: u64,
    /// All bytes read, heads included.
    pub wire_bytes: u64,
    pub body_bytes_per_sec: f64,
    pub wire_bytes_per_sec: f64,
    /// Closed loop: from issue to response. Open loop: from the intended send time
    /// (coordinated omission corrected).
    pub latency: LatencySummary,
    /// Open loop only: from the actual send time, as a closed-loop tool would measure.
    pub latency_uncorrected: Option<LatencySummary>,
    /// Open loop only: the generator's own lateness, actual send time minus intended, for
    /// every counted request sent (late ones included).
    #[serde(default)]
    pub send_lateness: Option<LatencySummary>,
    /// https only: from the start of each new connection's TCP connect to its TLS handshake
    /// complete, for the handshakes counted requests waited for.
    #[serde(default)]
    pub handshake: Option<LatencySummary>,
    /// https only: those handshakes, full and resumed.
    #[serde(default)]
    pub handshakes: Option<HandshakeCounts>,
    /// https: the protocol version and cipher suite of the first completed handshake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_negotiated: Option<String>,
    /// https: what the first TLS error (`errors.tls`) was, as rustls describes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_error: Option<String>,
    /// What the first connect error was, e.g. `connection refused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_error: Option<String>,
    /// Responses by status code; they add up to `responses`.
    pub status: BTreeMap<u16, u64>,
    /// The latencies of the responses (as `latency` counts them) summed by status class
    /// (`"2xx"`, `"5xx"`), in microseconds: a class's mean latency is its sum over its
    /// count in `status` (a 503 answered at once and a 200 after a queue tell apart).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub latency_sum_by_class_us: BTreeMap<String, u64>,
    pub errors: ErrorCounts,
    /// Open loop: scheduled requests never sent before the end; the same as `errors.unsent`
    /// (kept for older readers).
    pub backlog: u64,
    pub series: Vec<SecondStats>,
    /// When the measurement began (the end of the warmup), wall clock, milliseconds since
    /// the Unix epoch: where this run's window lies, for `spidey bench merge`.
    #[serde(default)]
    pub started_at_unix_ms: Option<u64>,
    /// The histograms behind `latency`, `latency_uncorrected` and `send_lateness`, in
    /// HdrHistogram's standard compressed form, so runs merge exactly.
    #[serde(default)]
    pub histograms: Option<Histograms>,
}

fn http1() -> String {
    Protocol::Http1.name().to_string()
}

pub(crate) fn result(
    cfg: &BenchConfig,
    protocol: Protocol,
    threads: usize,
    measure_start: Instant,
    started_at: SystemTime,
    recorders: Vec<stats::Recorder>,
    series: Vec<SecondStats>,
) -> BenchResult {
    let open = cfg.rate.is_some();
    let mut all = stats::Recorder::new(open, measure_start);
    for r in &recorders {
        all.merge(r);
    }
    let last = all.last_event.map(|t| t.saturating_duration_since(measure_start)).unwrap_or_default();
    let duration = match cfg.stop {
        Stop::Duration(d) => last.max(d),
        Stop::Requests(_) => last,
    };
    let secs = duration.as_secs_f64().max(1e-9);
    let tls = cfg.targets.iter().any(|t| t.tls_host().is_some());
    let handshake = tls.then(|| all.handshake.take().unwrap_or_else(|| stats::histogram(3)));
    let status: BTreeMap<u16, u64> =
        all.status.iter().enumerate().filter(|(_, &n)| n > 0).map(|(code, &n)| (code as u16, n)).collect();
    let latency_sum_by_class_us = class_sums(&all.status, &all.class_latency_us);
    let late_by_class = (0..10).filter(|&c| all.late[c] > 0).map(|c| (format!("{c}xx"), all.late[c])).collect();
    let late_latency_sum_by_class_us =
        (0..10).filter(|&c| all.late[c] > 0).map(|c| (format!("{c}xx"), all.late_latency_us[c])).collect();
    BenchResult {
        urls: cfg.targets.iter().map(|t| t.url.clone()).collect(),
        method: cfg.method.clone(),
        protocol: protocol.name().to_string(),
        streams: match protocol {
            Protocol::H2 { streams } => Some(streams),
            Protocol::Http1 => None,
        },
        h2: matches!(protocol, Protocol::H2 { .. }).then(|| all.h2.clone()),
        connections: cfg.connections,
        threads,
        loop_mode: if open { "open" } else { "closed" }.to_string(),
        rate: cfg.rate,
        open_model: open.then(|| cfg.open_model.name().to_string()),
        late_after_us: open.then(|| stats::micros(cfg.late_after)),
        keepalive: cfg.keepalive,
        warmup_s: cfg.warmup.as_secs_f64(),
        timeout_s: cfg.timeout.as_secs_f64(),
        requests: all.responses + all.errors.total(),
        responses: all.responses,
        non_2xx_3xx: non_2xx_3xx(&status),
        late: all.late.iter().sum(),
        late_by_class,
        late_latency_sum_by_class_us,
        duration_s: duration.as_secs_f64(),
        requests_per_sec: all.responses as f64 / secs,
        body_bytes: all.body_bytes,
        wire_bytes: all.wire_bytes,
        body_bytes_per_sec: all.body_bytes as f64 / secs,
        wire_bytes_per_sec: all.wire_bytes as f64 / secs,
        latency: LatencySummary::of(&all.latency),
        latency_uncorrected: all.uncorrected.as_ref().map(LatencySummary::of),
        send_lateness: all.lateness.as_ref().map(LatencySummary::of),
        handshake: handshake.as_ref().map(LatencySummary::of),
        handshakes: tls.then_some(all.handshakes),
        tls_error: all.tls_error,
        connect_error: all.connect_error,
        tls_negotiated: all.tls_negotiated,
        status,
        latency_sum_by_class_us,
        errors: all.errors,
        backlog: all.backlog,
        series,
        started_at_unix_ms: started_at.duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| d.as_millis() as u64),
        histograms: Some(
            Histograms::of(&all.latency, all.uncorrected.as_ref(), all.lateness.as_ref())
                .with_handshake(handshake.as_ref()),
        ),
    }
}

/// The responses whose status is not 2xx or 3xx: answers the client did not want, though
/// the server answered (wrk counts them as "Non-2xx or 3xx responses", k6 as failed).
pub(crate) fn non_2xx_3xx(status: &BTreeMap<u16, u64>) -> u64 {
    status.iter().filter(|(code, _)| !(200..400).contains(*code)).map(|(_, n)| n).sum()
}

/// The classes that had responses, `"2xx"` → their summed latency (µs).
fn class_sums(status: &[u64], sums: &[u64; 10]) -> BTreeMap<String, u64> {
    (0..10)
        .filter(|&c| status.iter().skip(c * 100).take(100).any(|&n| n > 0))
        .map(|c| (format!("{c}xx"), sums[c]))
        .collect()
}
