//! What a benchmark measures: latency histograms (HDR, microseconds), status counts,
//! classified errors, and a per-second series.
//!
//! Each event-loop thread owns a [`Recorder`] and touches nothing shared per request; the
//! recorders are merged once at the end. The per-second series is the one exception to
//! "only at the end": once a second each thread hands its finished [`SecondSample`] to the
//! coordinator, which merges the threads' samples for the same second.

use super::errors::ErrorCounts;
pub(crate) use super::errors::{classify_connect, classify_io, ErrorClass};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The largest latency a histogram holds (longer ones are clamped to it): one hour.
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds with `sigfig` significant decimal digits.
pub(crate) fn histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, sigfig).expect("valid histogram bounds")
}

/// `d` in whole microseconds, at least 1 (the histogram's lowest value).
pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// One thread's (or, merged, all threads') share of one second of the series.
#[derive(Debug, Clone)]
pub(crate) struct SecondSample {
    pub second: u64,
    pub responses: u64,
    pub errors: u64,
    pub body_bytes: u64,
    pub wire_bytes: u64,
    pub latency: Histogram<u64>,
}

impl SecondSample {
    pub(crate) fn new(second: u64) -> Self {
        SecondSample { second, responses: 0, errors: 0, body_bytes: 0, wire_bytes: 0, latency: histogram(2) }
    }

    fn merge(&mut self, o: &SecondSample) {
        self.responses += o.responses;
        self.errors += o.errors;
        self.body_bytes += o.body_bytes;
        self.wire_bytes += o.wire_bytes;
        self.latency.add(&o.latency).expect("same histogram bounds");
    }

    pub(crate) fn stats(&self) -> SecondStats {
        let h = &self.latency;
        let (mean, p50, p99, max) = if h.is_empty() {
            (0.0, 0, 0, 0)
        } else {
            (h.mean(), h.value_at_quantile(0.5), h.value_at_quantile(0.99), h.max())
        };
        SecondStats {
            second: self.second,
            responses: self.responses,
            errors: self.errors,
            body_bytes: self.body_bytes,
            wire_bytes: self.wire_bytes,
            latency_mean_us: mean,
            latency_p50_us: p50,
            latency_p99_us: p99,
            latency_max_us: max,
            latency_hdr: Some(super::histo_codec::encode(h)),
        }
    }
}

/// One second of the run: what completed in it (seconds count from the end of the warmup).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondStats {
    pub second: u64,
    pub responses: u64,
    pub errors: u64,
    pub body_bytes: u64,
    pub wire_bytes: u64,
    pub latency_mean_us: f64,
    pub latency_p50_us: u64,
    pub latency_p99_us: u64,
    pub latency_max_us: u64,
    /// This second's latency histogram, encoded as `histograms` are (see
    /// `bench::histo_codec`), so merged runs get exact per-second percentiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<String>,
}

/// Merges the threads' samples second by second; a second is condensed to its
/// [`SecondStats`] (and its histogram freed) once every thread has reported it.
pub(crate) struct SeriesMerger {
    threads: usize,
    open: BTreeMap<u64, (SecondSample, usize)>,
    done: Vec<SecondStats>,
}

impl SeriesMerger {
    pub fn new(threads: usize) -> Self {
        SeriesMerger { threads, open: BTreeMap::new(), done: Vec::new() }
    }

    pub fn add(&mut self, s: SecondSample) {
        let entry = self.open.entry(s.second).or_insert_with(|| (SecondSample::new(s.second), 0));
        entry.0.merge(&s);
        entry.1 += 1;
        if entry.1 == self.threads {
            let (merged, _) = self.open.remove(&s.second).expect("entry just updated");
            self.done.push(merged.stats());
        }
    }

    pub fn finish(mut self) -> Vec<SecondStats> {
        self.done.extend(self.open.values().map(|(s, _)| s.stats()));
        self.done.sort_by_key(|s| s.second);
        self.done
    }
}

/// When a request was meant to go out and when it did; `late` if later than allowed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sent {
    pub intended: Instant,
    pub issued: Instant,
    pub late: bool,
}

/// TLS handshakes completed for counted requests, by kind (rustls' `handshake_kind()`; a
/// full handshake after a HelloRetryRequest counts as full).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandshakeCounts {
    pub full: u64,
    pub resumed: u64,
}

impl HandshakeCounts {
    pub fn total(&self) -> u64 {
        self.full + self.resumed
    }

    pub(crate) fn merge(&mut self, o: &HandshakeCounts) {
        self.full += o.full;
        self.resumed += o.resumed;
    }
}

/// `--h2`: what happened to the connections, beside the requests' own counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H2Counts {
    /// Connections opened (the first ones and every reconnect).
    pub connections: u64,
    /// GOAWAYs received (each ends its connection; the next request reconnects).
    pub goaways: u64,
    /// Connection errors this client found in what the server sent (each also fails the
    /// connection's streams, counted `malformed`, and reconnects).
    pub connection_errors: u64,
    /// Streams the server reset (RST_STREAM), counted `reset`; REFUSED_STREAM is a retry.
    pub resets: u64,
    /// Requests sent again because the server never acted on them (above a GOAWAY's last
    /// stream, or REFUSED_STREAM); not errors, their latency from their first send.
    pub retried: u64,
    /// The first connection error or reset, described.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

impl H2Counts {
    pub(crate) fn merge(&mut self, o: &H2Counts) {
        self.connections += o.connections;
        self.goaways += o.goaways;
        self.connection_errors += o.connection_errors;
        self.resets += o.resets;
        self.retried += o.retried;
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
    }
}

/// One thread's measurements. Recording is allocation-free except once per second.
pub(crate) struct Recorder {
    /// Latency from the intended send time (open loop) or the issue time (closed loop).
    pub latency: Histogram<u64>,
    /// Open loop only: latency from the moment the request was actually issued.
    pub uncorrected: Option<Histogram<u64>>,
    /// Open loop only: the generator's own send lateness (issued minus intended).
    pub lateness: Option<Histogram<u64>>,
    /// https: TCP connect to TLS handshake complete, for each handshake a counted request
    /// waited for; made at the first (a plain run, and the start of every run, pay nothing).
    pub handshake: Option<Histogram<u64>>,
    pub handshakes: HandshakeCounts,
    /// The first TLS error's description, for the report.
    pub tls_error: Option<String>,
    /// The first connect error's description (`connection refused`), for the report.
    pub connect_error: Option<String>,
    /// The protocol version and cipher suite of the first completed handshake.
    pub tls_negotiated: Option<String>,
    /// Responses by status code (index = code; 0..=999).
    pub status: Vec<u64>,
    /// The latencies of those responses summed by status class (index = code / 100, 0..=9),
    /// in microseconds: each class's mean is its sum over its count.
    pub class_latency_us: [u64; 10],
    /// Open loop: of those responses, the ones to requests sent late, by status class, and
    /// their latencies summed likewise.
    pub late: [u64; 10],
    pub late_latency_us: [u64; 10],
    pub errors: ErrorCounts,
    /// `--h2` only: connection events.
    pub h2: H2Counts,
    /// Complete responses, whatever their status, late ones included.
    pub responses: u64,
    pub body_bytes: u64,
    pub wire_bytes: u64,
    /// Open loop: scheduled sends that never went out before the end (also `errors.unsent`).
    pub backlog: u64,
    /// When the last counted request completed or failed.
    pub last_event: Option<Instant>,
    measure_start: Instant,
    second: SecondSample,
}

impl Recorder {
    pub fn new(open_loop: bool, measure_start: Instant) -> Self {
        Recorder {
            latency: histogram(3),
            uncorrected: open_loop.then(|| histogram(3)),
            lateness: open_loop.then(|| histogram(3)),
            handshake: None,
            handshakes: HandshakeCounts::default(),
            tls_error: None,
            connect_error: None,
            tls_negotiated: None,
            status: vec![0; 1000],
            class_latency_us: [0; 10],
            late: [0; 10],
            late_latency_us: [0; 10],
            errors: ErrorCounts::default(),
            h2: H2Counts::default(),
            responses: 0,
            body_bytes: 0,
            wire_bytes: 0,
            backlog: 0,
            last_event: None,
            measure_start,
            second: SecondSample::new(0),
        }
    }

    /// Records that a request intended for `intended` went out at `issued` (open loop).
    pub fn sent(&mut self, intended: Instant, issued: Instant) {
        if let Some(h) = &mut self.lateness {
            h.saturating_record(micros(issued.saturating_duration_since(intended)));
        }
    }

    /// Records a complete response, whatever its status; one to a request sent `late` is a
    /// response like any other, and is also tallied apart.
    pub fn response(&mut self, now: Instant, sent: Sent, status: u16, body: u64, wire: u64) {
        let corrected = micros(now - sent.intended);
        self.latency.saturating_record(corrected);
        if let Some(h) = &mut self.uncorrected {
            h.saturating_record(micros(now - sent.issued));
        }
        self.body_bytes += body;
        self.wire_bytes += wire;
        self.second.body_bytes += body;
        self.second.wire_bytes += wire;
        self.second.latency.saturating_record(corrected);
        let code = usize::from(status).min(999);
        let class = code / 100;
        self.status[code] += 1;
        self.class_latency_us[class] = self.class_latency_us[class].saturating_add(corrected);
        if sent.late {
            self.late[class] += 1;
            self.late_latency_us[class] = self.late_latency_us[class].saturating_add(corrected);
        }
        self.responses += 1;
        self.second.responses += 1;
        self.last_event = Some(now);
    }

    /// Records a completed TLS handshake that took `took`.
    pub fn handshake(&mut self, took: Duration, kind: super::tls::Handshake) {
        self.handshake.get_or_insert_with(|| histogram(3)).saturating_record(micros(took));
        match kind {
            super::tls::Handshake::Full => self.handshakes.full += 1,
            super::tls::Handshake::Resumed => self.handshakes.resumed += 1,
        }
    }

    /// Keeps the description of the first TLS error (the error itself is counted by
    /// [`Recorder::error`]).
    pub fn note_tls_error(&mut self, e: &dyn std::fmt::Display) {
        if self.tls_error.is_none() {
            self.tls_error = Some(e.to_string());
        }
    }

    /// The class of a connect(2) (or socket(2)) error, its description kept if it is the
    /// first; the error itself is counted by [`Recorder::error`].
    pub fn connect_failed(&mut self, e: &std::io::Error) -> ErrorClass {
        let class = classify_connect(e);
        if class == ErrorClass::Connect && self.connect_error.is_none() {
            self.connect_error = Some(super::errors::describe_io(e));
        }
        class
    }

    /// Keeps the description of the first HTTP/2 connection error or reset.
    pub fn note_h2(&mut self, e: &dyn std::fmt::Display) {
        if self.h2.first_error.is_none() {
            self.h2.first_error = Some(e.to_string());
        }
    }

    /// Counts `n` scheduled requests that were never sent.
    pub fn unsent(&mut self, n: u64) {
        self.errors.unsent += n;
        self.backlog += n;
    }

    pub fn error(&mut self, now: Instant, class: ErrorClass) {
        self.errors.add(class);
        self.second.errors += 1;
        self.last_event = Some(now);
    }

    /// The second (from the measurement start) that `now` falls in.
    pub fn second_of(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.measure_start).as_secs()
    }

    /// Hands every second that has ended by `now` to `emit`, empty ones included, so the
    /// coordinator hears about each second from each thread.
    pub fn roll(&mut self, now: Instant, emit: &mut impl FnMut(SecondSample)) {
        let current = self.second_of(now);
        while self.second.second < current {
            let next = SecondSample::new(self.second.second + 1);
            emit(std::mem::replace(&mut self.second, next));
        }
    }

    /// Hands the last, partial second to `emit`.
    pub fn flush(&mut self, emit: &mut impl FnMut(SecondSample)) {
        let next = SecondSample::new(self.second.second + 1);
        let last = std::mem::replace(&mut self.second, next);
        if last.responses + last.errors > 0 {
            emit(last);
        }
    }

    pub fn merge(&mut self, o: &Recorder) {
        self.latency.add(&o.latency).expect("same histogram bounds");
        for (a, b) in [(&mut self.uncorrected, &o.uncorrected), (&mut self.lateness, &o.lateness)] {
            if let (Some(a), Some(b)) = (a, b) {
                a.add(b).expect("same histogram bounds");
            }
        }
        if let Some(h) = &o.handshake {
            self.handshake.get_or_insert_with(|| histogram(3)).add(h).expect("same histogram bounds");
        }
        self.handshakes.merge(&o.handshakes);
        if self.tls_error.is_none() {
            self.tls_error.clone_from(&o.tls_error);
        }
        if self.connect_error.is_none() {
            self.connect_error.clone_from(&o.connect_error);
        }
        if self.tls_negotiated.is_none() {
            self.tls_negotiated.clone_from(&o.tls_negotiated);
        }
        for (a, b) in self.status.iter_mut().zip(&o.status) {
            *a += b;
        }
        for (a, b) in self.late.iter_mut().zip(&o.late) {
            *a += b;
        }
        let sums = [(&mut self.class_latency_us, &o.class_latency_us), (&mut self.late_latency_us, &o.late_latency_us)];
        for (ours, theirs) in sums {
            for (a, b) in ours.iter_mut().zip(theirs) {
                *a = a.saturating_add(*b);
            }
        }
        self.errors.merge(&o.errors);
        self.h2.merge(&o.h2);
        self.responses += o.responses;
        self.body_bytes += o.body_bytes;
        self.wire_bytes += o.wire_bytes;
        self.backlog += o.backlog;
        self.last_event = self.last_event.max(o.last_event);
    }
}

/// A latency distribution summarised; all figures in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p99_9_us: u64,
    pub max_us: u64,
    /// (percentile, latency) pairs for plotting: 0, 10, ..., 90, 95, 99, 99.9, 99.99, 100.
    pub percentiles: Vec<(f64, u64)>,
}

/// The percentiles listed in [`LatencySummary::percentiles`].
const PERCENTILES: [f64; 15] =
    [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0];

impl LatencySummary {
    pub(crate) fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary {
                count: 0,
                min_us: 0,
                mean_us: 0.0,
                stdev_us: 0.0,
                p50_us: 0,
                p90_us: 0,
                p99_us: 0,
                p99_9_us: 0,
                max_us: 0,
                percentiles: Vec::new(),
            };
        }
        let q = |p: f64| h.value_at_quantile(p / 100.0);
        LatencySummary {
            count: h.len(),
            min_us: h.min(),
            mean_us: h.mean(),
            stdev_us: h.stdev(),
            p50_us: q(50.0),
            p90_us: q(90.0),
            p99_us: q(99.0),
            p99_9_us: q(99.9),
            max_us: h.max(),
            percentiles: PERCENTILES.iter().map(|&p| (p, q(p))).collect(),
        }
    }
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;
