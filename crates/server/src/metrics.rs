//! The server's counters, served in Prometheus text format at `--metrics PATH` and printed
//! to stderr on SIGUSR1.
//!
//! Every counter is a relaxed atomic add, with no lock. They live in one anonymous
//! `MAP_SHARED` mapping made at startup before any fork ([`init`]), so the processes of
//! `fork` and `prefork` count into the same numbers as their parent, and a scrape answered
//! by any worker sees the whole server. To keep cores from fighting over one cache line,
//! the counters are sharded by CPU (`sched_getcpu`, a vDSO call): each add touches its own
//! CPU's shard, and a scrape adds the shards up. Gauges are not sharded: a gauge is +1s
//! and -1s, and a scrape that read a -1 in one shard but missed its +1 in another (the
//! thread moved CPUs in between) would show a worker fewer than are busy, or a negative
//! count wrapped to 2^64-1. In one atomic every +1 comes before its -1, so a scrape sees a
//! count that was true at some instant. (Seen: `spidey_workers_busy 0` in the scrape's own
//! answer, uring and hybrid, 1 run in about 5 of tests/ops metrics at load 5-11.)
//!
//! What is counted where (one place each):
//! - responses by status class, body bytes, errors by kind: where the access log line is
//!   written (`exchange.rs`, and the CGI output for scripts), whether or not `--quiet`;
//! - open connections: the blocking driver (`blocking::serve_from`) and the loops' shared
//!   `--max-conns` count (`modes/limit.rs`);
//! - busy workers: a thread or process inside `blocking::serve_from`, or an event/uring loop
//!   handling what it woke up for; `pool`'s queue: connections accepted, not yet taken;
//! - CGI scripts running (spawned, not yet reaped or handed to the reaper); handler calls;
//!   accept failures and failures to start a worker (fork, thread).
//!
//! Without [`init`] (tests, the fuzzing driver) the counters are this process's alone.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;

/// What is counted. `Gauge`s go up and down; the others only up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum Counter {
    Status1xx,
    Status2xx,
    Status3xx,
    Status4xx,
    Status5xx,
    BodyBytes,
    OpenConnections,
    BusyWorkers,
    Queued,
    CgiRunning,
    HandlerCalls,
    ErrorBadRequest,
    ErrorTooLarge,
    ErrorTimeout,
    ErrorInternal,
    ErrorUnavailable,
    ErrorGateway,
    ErrorAccept,
    ErrorAcceptExhausted,
    ErrorWorkerStart,
    /// Connections that chose HTTP/2 (ALPN `h2` or the preface).
    Http2Connections,
    /// Requests answered over HTTP/2 (each a stream).
    Http2Streams,
}

impl Counter {
    /// Goes up and down; kept in one place, not sharded.
    fn is_gauge(self) -> bool {
        matches!(self, Counter::OpenConnections | Counter::BusyWorkers | Counter::Queued | Counter::CgiRunning)
    }
}

/// The error kinds and their labels.
const ERRORS: [(Counter, &str); 9] = [
    (Counter::ErrorBadRequest, "bad_request"),
    (Counter::ErrorTooLarge, "too_large"),
    (Counter::ErrorTimeout, "timeout"),
    (Counter::ErrorInternal, "internal"),
    (Counter::ErrorUnavailable, "unavailable"),
    (Counter::ErrorGateway, "gateway"),
    (Counter::ErrorAccept, "accept"),
    (Counter::ErrorAcceptExhausted, "accept_exhausted"),
    (Counter::ErrorWorkerStart, "worker_start"),
];

/// Counters per shard, padded to a multiple of 8 (64-byte cache lines).
const STRIDE: usize = 24;
/// Shards: CPU number modulo this.
const SHARDS: usize = 64;
/// After the shards: values that are not sharded (see [`Control`]).
const CONTROL: usize = SHARDS * STRIDE;
const LEN: usize = CONTROL + 8;

/// The unsharded values, written rarely.
#[derive(Debug, Clone, Copy)]
#[repr(usize)]
enum Control {
    /// Bumped on SIGHUP: every process reopens its access log file when it sees it change.
    LogGeneration,
}

// INVARIANT: every `Counter` fits in a shard.
const _: () = assert!((Counter::Http2Streams as usize) < STRIDE);

static STORE: OnceLock<&'static [AtomicU64]> = OnceLock::new();
static MODE: OnceLock<&'static str> = OnceLock::new();
/// The `--metrics` path as requests' paths are matched: decoded and normalised, relative
/// to ROOT (the caller decodes it as content decodes a request's path).
static ENDPOINT: OnceLock<Vec<u8>> = OnceLock::new();

/// Maps the shared counters (before any fork) and records the mode's name and the
/// `--metrics` path, if any, in the form [`is_endpoint`] compares.
pub(crate) fn init(mode: &'static str, endpoint: Option<Vec<u8>>) -> std::io::Result<()> {
    let shared = spidey_sys::shared::shared_counters(LEN)?;
    let _ = STORE.set(shared);
    let _ = MODE.set(mode);
    if let Some(path) = endpoint {
        let _ = ENDPOINT.set(path);
    }
    Ok(())
}

fn store() -> &'static [AtomicU64] {
    STORE.get_or_init(|| Box::leak((0..LEN).map(|_| AtomicU64::new(0)).collect::<Vec<_>>().into_boxed_slice()))
}

/// Adds `n` to `counter` in this CPU's shard (a gauge: in shard 0, see the module comment).
#[inline]
pub(crate) fn add(counter: Counter, n: u64) {
    let shard = if counter.is_gauge() { 0 } else { rustix::thread::sched_getcpu() % SHARDS };
    store()[shard * STRIDE + counter as usize].fetch_add(n, Relaxed);
}

/// The sum of `counter` over all shards (wrapping: a gauge's shards may each wrap).
pub(crate) fn total(counter: Counter) -> u64 {
    let s = store();
    (0..SHARDS).fold(0u64, |sum, shard| sum.wrapping_add(s[shard * STRIDE + counter as usize].load(Relaxed)))
}

/// One unit of a gauge, given back on drop (a connection open, a worker busy).
#[derive(Debug)]
pub(crate) struct Held(Counter);

/// Raises the gauge `counter` until the returned guard drops.
pub(crate) fn hold(counter: Counter) -> Held {
    add(counter, 1);
    Held(counter)
}

impl Drop for Held {
    fn drop(&mut self) {
        sub(self.0);
    }
}

/// Takes 1 from the gauge `counter` (a wrapping add of -1).
#[inline]
pub(crate) fn sub(counter: Counter) {
    add(counter, u64::MAX);
}

/// A connection open and a worker busy with it, for a blocking driver's whole `serve`.
pub(crate) fn serving() -> (Held, Held) {
    (hold(Counter::OpenConnections), hold(Counter::BusyWorkers))
}

/// Counts an accept(2) that failed (not EAGAIN): `exhausted` when out of descriptors or memory.
pub(crate) fn accept_failed(exhausted: bool) {
    add(if exhausted { Counter::ErrorAcceptExhausted } else { Counter::ErrorAccept }, 1);
}

/// Counts one response: its status class, its body bytes, and an error kind if it is one.
pub(crate) fn answered(status: u16, body_bytes: u64) {
    let class = [Counter::Status1xx, Counter::Status2xx, Counter::Status3xx, Counter::Status4xx, Counter::Status5xx];
    add(class[usize::from(status / 100).clamp(1, 5) - 1], 1);
    if body_bytes > 0 {
        add(Counter::BodyBytes, body_bytes);
    }
    if let Some(kind) = error_kind(status) {
        add(kind, 1);
    }
}

/// The error kind a status stands for, if any. 403 and 404 are answers, not errors.
fn error_kind(status: u16) -> Option<Counter> {
    Some(match status {
        400 | 411 | 417 | 501 | 505 => Counter::ErrorBadRequest,
        413 | 414 | 431 => Counter::ErrorTooLarge,
        408 => Counter::ErrorTimeout,
        500 => Counter::ErrorInternal,
        503 => Counter::ErrorUnavailable,
        502 | 504 => Counter::ErrorGateway,
        _ => return None,
    })
}

/// The access log's reopen generation (see [`Control::LogGeneration`]).
pub(crate) fn log_generation() -> u64 {
    store()[CONTROL + Control::LogGeneration as usize].load(Relaxed)
}

/// Asks every process to reopen its access log file.
pub(crate) fn bump_log_generation() {
    store()[CONTROL + Control::LogGeneration as usize].fetch_add(1, Relaxed);
}

/// Whether a request's path, decoded (`relative`, as `content::resolve::decode_path`
/// makes it), is the `--metrics` path (never, without `--metrics`): `/%6detrics` names
/// `/metrics` here as everywhere. Content answers it with [`render`]'s text, of type
/// [`CONTENT_TYPE`].
pub(crate) fn is_endpoint(relative: &[u8]) -> bool {
    ENDPOINT.get().is_some_and(|path| path == relative)
}

/// The media type of [`render`]'s text.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// All counters in Prometheus text exposition format 0.0.4.
pub fn render() -> String {
    let mut out = String::with_capacity(2048);
    let mut family = |name: &str, kind: &str, help: &str, rows: &[(&str, u64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in rows {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    // A scrape racing a +1 on one shard and a -1 on another may see -1 for an instant.
    let gauge = |c| (total(c) as i64).max(0) as u64;
    let mode = MODE.get().copied().unwrap_or("none");
    let info = format!("{{mode=\"{mode}\",version=\"{}\"}}", env!("CARGO_PKG_VERSION"));
    family("spidey_info", "gauge", "The server's mode and version.", &[(&info, 1)]);
    let classes = [
        ("{class=\"1xx\"}", total(Counter::Status1xx)),
        ("{class=\"2xx\"}", total(Counter::Status2xx)),
        ("{class=\"3xx\"}", total(Counter::Status3xx)),
        ("{class=\"4xx\"}", total(Counter::Status4xx)),
        ("{class=\"5xx\"}", total(Counter::Status5xx)),
    ];
    family("spidey_responses_total", "counter", "Responses sent, by status class.", &classes);
    let bytes = [("", total(Counter::BodyBytes))];
    family(
        "spidey_response_body_bytes_total",
        "counter",
        "Response body bytes, as the access log counts them.",
        &bytes,
    );
    let open = [("", gauge(Counter::OpenConnections))];
    family(
        "spidey_connections_open",
        "gauge",
        "Client connections open (accepted, not yet closed; pool: taken by a worker).",
        &open,
    );
    let busy = [("", gauge(Counter::BusyWorkers))];
    family(
        "spidey_workers_busy",
        "gauge",
        "Workers serving a connection (event, uring: loops handling events).",
        &busy,
    );
    let queued = [("", gauge(Counter::Queued))];
    family("spidey_queue_depth", "gauge", "Connections accepted and waiting for a worker (pool).", &queued);
    let cgi = [("", gauge(Counter::CgiRunning))];
    family("spidey_cgi_processes", "gauge", "CGI scripts running.", &cgi);
    let calls = [("", total(Counter::HandlerCalls))];
    family("spidey_handler_calls_total", "counter", "Calls into --handler libraries.", &calls);
    let h2 = [("{protocol=\"HTTP/2\"}", total(Counter::Http2Connections))];
    family("spidey_connections_total", "counter", "Connections that chose a protocol other than HTTP/1.1.", &h2);
    let h2 = [("{protocol=\"HTTP/2\"}", total(Counter::Http2Streams))];
    family("spidey_requests_total", "counter", "Requests answered over a protocol other than HTTP/1.1.", &h2);
    let labels: Vec<(String, u64)> =
        ERRORS.iter().map(|(c, kind)| (format!("{{kind=\"{kind}\"}}"), total(*c))).collect();
    let rows: Vec<(&str, u64)> = labels.iter().map(|(l, v)| (l.as_str(), *v)).collect();
    family("spidey_errors_total", "counter", "Errors, by kind.", &rows);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_table() {
        let cases = [
            (200, None),
            (304, None),
            (404, None),
            (400, Some(Counter::ErrorBadRequest)),
            (431, Some(Counter::ErrorTooLarge)),
            (408, Some(Counter::ErrorTimeout)),
            (503, Some(Counter::ErrorUnavailable)),
            (504, Some(Counter::ErrorGateway)),
        ];
        for (status, want) in cases {
            assert_eq!(error_kind(status), want, "{status}");
        }
    }

    #[test]
    fn gauges_live_in_one_place_whatever_the_cpu() {
        // A gauge's +1 and -1 from threads on every CPU land in shard 0 alone, so no scrape
        // can add one shard's -1 without the +1 that came before it in another.
        let s = store();
        let others =
            || (1..SHARDS).map(|shard| s[shard * STRIDE + Counter::Queued as usize].load(Relaxed)).sum::<u64>();
        let cpus = rustix::thread::sched_getaffinity(None).map(|set| set.count()).unwrap_or(1) as usize;
        std::thread::scope(|scope| {
            for cpu in 0..cpus.max(2) {
                scope.spawn(move || {
                    let mut set = rustix::thread::CpuSet::new();
                    set.set(cpu % cpus.max(1));
                    let _ = rustix::thread::sched_setaffinity(None, &set);
                    for _ in 0..1000 {
                        let held = hold(Counter::Queued);
                        assert!(total(Counter::Queued) >= 1 && total(Counter::Queued) < 1 << 32);
                        drop(held);
                    }
                });
            }
        });
        assert_eq!((total(Counter::Queued), others()), (0, 0));
    }

    #[test]
    fn renders_every_family_once() {
        let text = render();
        for family in [
            "spidey_responses_total",
            "spidey_connections_open",
            "spidey_errors_total",
            "spidey_cgi_processes",
            "spidey_requests_total",
        ] {
            assert_eq!(text.matches(&format!("# TYPE {family} ")).count(), 1, "{family}");
        }
        assert!(text.contains("spidey_errors_total{kind=\"timeout\"} "));
    }
}
