//! `spidey bench`: an HTTP/1.1 (and, with `--h2`, HTTP/2) load generator with honest
//! latency.
//!
//! [`run_bench`] is the whole engine, callable in-process (by `spidey lab`); it prints
//! nothing. It starts T threads, each a [`client::Worker`] — a mio event loop owning its
//! share of the connections — and the calling thread coordinates: it merges the per-second
//! samples the workers hand over once a second and calls the optional progress callback.
//! Workers end on their own (budget spent, or the deadline passed and nothing in flight);
//! their [`stats::Recorder`]s are merged at the end into a [`BenchResult`].
//!
//! Closed loop (default) is what ab and wrk do; open loop (`rate`) is what wrk2 does, with
//! latency from each request's intended send time, in one of two [`OpenModel`]s: wrk2's
//! pool of kept-alive connections, or httperf's new connection per scheduled request. The
//! open loop waits for its slots on a timerfd and a short spin ([`timer`]), records its own
//! send lateness, and counts requests it never sent (`unsent`) as errors; the answers to
//! those it sent late are responses, also counted `late`. The CLI front end is [`run`].
//!
//! HTTP/2 ([`Protocol::H2`], [`run_bench_protocol`]) has its own worker, `h2_worker`, on
//! the same schedule and [`stats::Recorder`], each connection a sans-IO `h2::ClientConn`
//! built on `spidey_http`'s frame codec and HPACK.

mod args;
mod client;
mod command;
mod conn;
mod errors;
mod h2;
mod h2_worker;
mod histo_codec;
mod merge;
mod report;
mod response;
mod result;
mod stats;
mod threshold;
mod timer;
mod tls;
mod tls_verify;

pub use args::BenchArgs;
pub use command::run;
pub use errors::ErrorCounts;
pub use histo_codec::{decode as decode_histogram, encode as encode_histogram, CodecError, Histograms};
pub use merge::{merge, MergeError};
pub use report::human_report;
pub use result::BenchResult;
pub use stats::{H2Counts, HandshakeCounts, LatencySummary, SecondStats};
pub use threshold::Threshold;
pub use tls::{Resume, TlsOptions, Verify};

use spidey_config::ConfigError;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

/// One URL to load, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub addr: SocketAddr,
    /// `host[:port]` as written in the URL, for the Host header.
    pub host_header: String,
    /// Path and query.
    pub path: String,
}

impl Target {
    /// The host a TLS connection names (SNI) and verifies the certificate for, if the URL
    /// is https://; None for http://.
    pub(crate) fn tls_host(&self) -> Option<&str> {
        match args::split_url(&self.url)? {
            (args::Scheme::Https, authority, _) => args::split_host_port(authority, 443).map(|(host, _)| host),
            (args::Scheme::Http, ..) => None,
        }
    }
}

/// How the open loop gets a connection for each scheduled request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OpenModel {
    /// wrk2's: at most `connections` connections, kept alive; a request whose slot comes
    /// while all are busy waits for one (and is then late, or unsent by the end).
    #[default]
    Pool,
    /// httperf's: every scheduled request opens a new connection at its slot (and sends
    /// Connection: close), with no cap but the descriptor limit; `connections` is ignored.
    PerRequest,
}

impl OpenModel {
    pub fn name(self) -> &'static str {
        match self {
            OpenModel::Pool => "pool",
            OpenModel::PerRequest => "per-request",
        }
    }
}

/// What the connections speak.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1, one request at a time per connection.
    #[default]
    Http1,
    /// HTTP/2 (`--h2`): ALPN `h2` over TLS, prior knowledge (h2c) over plain TCP, at most
    /// `streams` requests at once per connection (and never more than the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS).
    H2 { streams: usize },
}

impl Protocol {
    /// `http/1.1` or `h2`, as the report and the JSON say it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::H2 { .. } => "h2",
        }
    }
}

/// The default `--late-after`: a request sent later than this after its slot is `late`.
pub const LATE_AFTER: Duration = Duration::from_millis(1);

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After exactly this many counted requests (responses plus errors).
    Requests(u64),
    /// After this long; requests in flight then are still waited for.
    Duration(Duration),
}

/// Everything a run needs; [`BenchArgs::config`] builds one from the command line.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub targets: Vec<Target>,
    pub connections: usize,
    /// At most `connections` are used.
    pub threads: usize,
    pub stop: Stop,
    /// Open loop at this many requests per second in total; None for closed loop.
    pub rate: Option<f64>,
    /// Open loop only: how each scheduled request gets its connection.
    pub open_model: OpenModel,
    /// Open loop only: a request sent later than this after its intended time is `late`.
    pub late_after: Duration,
    /// Ignored (false) in the per-request open model.
    pub keepalive: bool,
    pub warmup: Duration,
    pub timeout: Duration,
    pub method: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

/// How far a run has got, for progress displays.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Since the load (warmup included) began.
    pub elapsed: Duration,
    /// Counted requests finished (responses plus errors).
    pub done: u64,
}

/// One thread's share and schedule.
pub(crate) struct Plan {
    pub connections: usize,
    pub budget: Option<u64>,
    pub measure_start: Instant,
    pub end: Option<Instant>,
    /// Open loop: the time between this thread's slots, and its first slot.
    pub interval: Option<Duration>,
    pub first_slot: Instant,
    /// Open loop: a new connection per scheduled request, as many as it takes.
    pub per_request: bool,
    pub late_after: Duration,
}

/// Runs a benchmark and returns its results; prints nothing. https:// targets are loaded
/// with the default [`TlsOptions`] (system CA bundle, resumption on).
pub fn run_bench(cfg: &BenchConfig) -> anyhow::Result<BenchResult> {
    run_bench_with(cfg, &TlsOptions::default(), &mut |_| {})
}

/// [`run_bench`], calling `progress` about ten times a second from the calling thread.
pub fn run_bench_with_progress(cfg: &BenchConfig, progress: &mut dyn FnMut(Progress)) -> anyhow::Result<BenchResult> {
    run_bench_with(cfg, &TlsOptions::default(), progress)
}

/// [`run_bench_with_progress`], https:// targets loaded as `tls` says.
pub fn run_bench_with(
    cfg: &BenchConfig,
    tls: &TlsOptions,
    progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<BenchResult> {
    run_bench_protocol(cfg, Protocol::Http1, tls, progress)
}

/// [`run_bench_with`], speaking `protocol`.
pub fn run_bench_protocol(
    cfg: &BenchConfig,
    protocol: Protocol,
    tls: &TlsOptions,
    progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<BenchResult> {
    validate(cfg)?;
    if let Protocol::H2 { streams } = protocol {
        validate_h2(cfg, streams)?;
    }
    let endpoints = endpoints(cfg, tls, protocol)?;
    let per_request = per_request(cfg);
    let cfg = &BenchConfig { keepalive: cfg.keepalive && !per_request, ..cfg.clone() };
    // Per request, connections are the load: as many as the descriptor limit allows.
    let threads = if per_request { cfg.threads } else { cfg.threads.min(cfg.connections) };
    if per_request {
        raise_fd_limit();
    }
    let requests = client::Requests {
        bytes: cfg.targets.iter().map(|t| request_bytes(cfg, t)).collect(),
        addrs: cfg.targets.iter().map(|t| t.addr).collect(),
        head_method: cfg.method.eq_ignore_ascii_case("HEAD"),
        keepalive: cfg.keepalive,
        timeout: cfg.timeout,
        tls: endpoints,
    };
    let h2_requests = match protocol {
        Protocol::H2 { streams } => Some(h2_worker::H2Requests {
            fields: cfg.targets.iter().map(|t| h2_fields(cfg, t)).collect(),
            addr: cfg.targets[0].addr,
            tls: requests.tls[0].clone(),
            timeout: cfg.timeout,
            streams,
        }),
        Protocol::Http1 => None,
    };
    let workers = (0..threads)
        .map(|i| {
            let conns = if per_request { 0 } else { share(cfg.connections, threads, i) };
            match &h2_requests {
                Some(r) => h2_worker::Worker::new(r, conns, fastrand::u64(..)).map(AnyWorker::H2),
                None => client::Worker::new(&requests, conns, fastrand::u64(..)).map(AnyWorker::Http1),
            }
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let load_start = Instant::now();
    let measure_start = load_start + cfg.warmup;
    let started_at = SystemTime::now() + cfg.warmup;
    let counters: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();
    let (tx, rx) = mpsc::channel();
    let recorders = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .enumerate()
            .map(|(i, worker)| {
                let plan = plan(cfg, threads, i, load_start, measure_start);
                let (tx, counter) = (tx.clone(), &counters[i]);
                s.spawn(move || worker.run(&plan, counter, &mut |sample| drop(tx.send(sample))))
            })
            .collect();
        drop(tx);
        let mut series = stats::SeriesMerger::new(threads);
        let mut next_report = Instant::now();
        loop {
            match rx.recv_timeout(Duration::from_millis(20)) {
                Ok(sample) => series.add(sample),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if Instant::now() >= next_report {
                let done = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
                progress(Progress { elapsed: load_start.elapsed(), done });
                next_report = Instant::now() + Duration::from_millis(100);
            }
        }
        let recorders: Vec<_> =
            handles.into_iter().map(|h| h.join().expect("bench worker panicked")).collect::<Result<_, _>>()?;
        Ok::<_, anyhow::Error>((recorders, series.finish()))
    });
    let (recorders, series) = recorders?;
    Ok(result::result(cfg, protocol, threads, measure_start, started_at, recorders, series))
}

/// A thread's event loop, for the protocol spoken.
enum AnyWorker<'a> {
    Http1(client::Worker<'a>),
    H2(h2_worker::Worker<'a>),
}

impl AnyWorker<'_> {
    fn run(
        self,
        plan: &Plan,
        progress: &AtomicU64,
        emit: &mut impl FnMut(stats::SecondSample),
    ) -> std::io::Result<stats::Recorder> {
        match self {
            AnyWorker::Http1(w) => w.run(plan, progress, emit),
            AnyWorker::H2(w) => w.run(plan, progress, emit),
        }
    }
}

/// What `--h2` cannot do yet, refused before the load; and one authority for all URLs
/// (a connection carries requests for every path).
fn validate_h2(cfg: &BenchConfig, streams: usize) -> Result<(), ConfigError> {
    let fail = |m: &str| Err(ConfigError(m.to_string()));
    if streams == 0 {
        return fail("--streams must be at least 1");
    }
    if per_request(cfg) {
        return fail("--h2 works with the pool open model only (--open-model per-request is HTTP/1.1's)");
    }
    if !cfg.keepalive {
        return fail("--h2 and --no-keepalive do not go together: an HTTP/2 connection carries many requests");
    }
    if cfg.body.is_some() {
        return fail("--h2 does not send request bodies yet (--body)");
    }
    let authority = |t: &Target| (t.addr, t.host_header.clone(), t.tls_host().is_some());
    if cfg.targets.windows(2).any(|w| authority(&w[0]) != authority(&w[1])) {
        return fail("with --h2 the URLs must share one scheme, host and port");
    }
    Ok(())
}

/// The request's header fields for `target` over HTTP/2: the pseudo-headers (§8.3.1), then
/// the extra headers, names in lower case, without those HTTP/2 forbids (§8.2.2) or that
/// `:authority` replaces (Host).
fn h2_fields(cfg: &BenchConfig, target: &Target) -> Vec<(Vec<u8>, Vec<u8>)> {
    let scheme = if target.tls_host().is_some() { "https" } else { "http" };
    let host = cfg.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("host")).map(|(_, v)| v.as_str());
    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b":method".to_vec(), cfg.method.as_bytes().to_vec()),
        (b":scheme".to_vec(), scheme.as_bytes().to_vec()),
        (b":authority".to_vec(), host.unwrap_or(&target.host_header).as_bytes().to_vec()),
        (b":path".to_vec(), target.path.as_bytes().to_vec()),
    ];
    const DROPPED: [&str; 6] = ["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];
    for (n, v) in &cfg.headers {
        let name = n.to_ascii_lowercase();
        let forbidden = DROPPED.contains(&name.as_str()) || (name == "te" && !v.eq_ignore_ascii_case("trailers"));
        if !forbidden {
            fields.push((name.into_bytes(), v.as_bytes().to_vec()));
        }
    }
    fields
}

fn validate(cfg: &BenchConfig) -> Result<(), ConfigError> {
    let fail = |m: &str| Err(ConfigError(m.to_string()));
    if cfg.targets.is_empty() {
        return fail("at least one URL is needed");
    }
    if cfg.connections == 0 || cfg.threads == 0 {
        return fail("connections and threads must be at least 1");
    }
    if cfg.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
        return fail("--rate must be a positive number");
    }
    if cfg.timeout.is_zero() {
        return fail("--timeout must be more than 0");
    }
    // A kept-alive connection serves whichever target a request picks: one scheme for all.
    if cfg.targets.windows(2).any(|w| w[0].tls_host().is_some() != w[1].tls_host().is_some()) {
        return fail("the URLs must be all http:// or all https://");
    }
    Ok(())
}

/// Each target's TLS endpoint (None for http://), one client configuration shared by all.
fn endpoints(
    cfg: &BenchConfig,
    tls: &TlsOptions,
    protocol: Protocol,
) -> Result<Vec<Option<tls::Endpoint>>, ConfigError> {
    if cfg.targets.iter().all(|t| t.tls_host().is_none()) {
        return Ok(cfg.targets.iter().map(|_| None).collect());
    }
    let config = tls::client_config(tls, protocol)?;
    cfg.targets.iter().map(|t| t.tls_host().map(|host| tls::Endpoint::new(&config, host)).transpose()).collect()
}

fn per_request(cfg: &BenchConfig) -> bool {
    cfg.rate.is_some() && cfg.open_model == OpenModel::PerRequest
}

/// Raises this process's soft descriptor limit to its hard limit (the per-request model's
/// only cap); a failure leaves the limit as it was, and EMFILE then shows as fd_exhausted.
fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// Thread `i`'s part of `total`, spread as evenly as possible.
pub fn share(total: usize, threads: usize, i: usize) -> usize {
    total / threads + usize::from(i < total % threads)
}

fn plan(cfg: &BenchConfig, threads: usize, i: usize, load_start: Instant, measure_start: Instant) -> Plan {
    let (budget, end) = match cfg.stop {
        Stop::Requests(n) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            (Some(share(n, threads, i) as u64), None)
        }
        Stop::Duration(d) => (None, Some(measure_start + d)),
    };
    Plan {
        connections: if per_request(cfg) { 0 } else { share(cfg.connections, threads, i) },
        budget,
        measure_start,
        end,
        // Thread i sends at rate/threads, offset by i/rate, so together they keep the rate.
        interval: cfg.rate.map(|r| Duration::from_secs_f64(threads as f64 / r)),
        first_slot: load_start + cfg.rate.map(|r| Duration::from_secs_f64(i as f64 / r)).unwrap_or_default(),
        per_request: per_request(cfg),
        late_after: cfg.late_after,
    }
}

/// The request for `target`, built once: method, path, Host, the extra headers, the body.
fn request_bytes(cfg: &BenchConfig, target: &Target) -> Vec<u8> {
    let mut head = format!("{} {} HTTP/1.1\r\n", cfg.method, target.path);
    let has = |name: &str| cfg.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    if !has("host") {
        head += &format!("Host: {}\r\n", target.host_header);
    }
    for (n, v) in &cfg.headers {
        head += &format!("{n}: {v}\r\n");
    }
    if let Some(body) = &cfg.body {
        if !has("content-length") {
            head += &format!("Content-Length: {}\r\n", body.len());
        }
    }
    if !cfg.keepalive && !has("connection") {
        head += "Connection: close\r\n";
    }
    head += "\r\n";
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(cfg.body.as_deref().unwrap_or_default());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(keepalive: bool, headers: &[(&str, &str)], body: Option<&[u8]>) -> BenchConfig {
        BenchConfig {
            targets: vec![args::parse_url("http://127.0.0.1:8080/a?b").unwrap()],
            connections: 1,
            threads: 1,
            stop: Stop::Requests(1),
            rate: None,
            open_model: OpenModel::Pool,
            late_after: LATE_AFTER,
            keepalive,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(1),
            method: "POST".into(),
            headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            body: body.map(<[u8]>::to_vec),
        }
    }

    #[test]
    fn request_bytes_table() {
        type Case<'a> = (bool, &'a [(&'a str, &'a str)], Option<&'a [u8]>, &'a str);
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (true, &[], None, "POST /a?b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"),
            (false, &[], None, "POST /a?b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n"),
            (true, &[("X-A", "1")], Some(b"hi"), "POST /a?b HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nhi"),
            (true, &[("host", "example")], None, "POST /a?b HTTP/1.1\r\nhost: example\r\n\r\n"),
        ];
        for (keepalive, headers, body, want) in cases {
            let cfg = config(*keepalive, headers, *body);
            assert_eq!(String::from_utf8(request_bytes(&cfg, &cfg.targets[0])).unwrap(), *want);
        }
    }

    #[test]
    fn http_and_https_urls_do_not_mix() {
        let mut cfg = config(true, &[], None);
        cfg.targets.push(args::parse_url("https://127.0.0.1:8443/").unwrap());
        let err = validate(&cfg).unwrap_err();
        assert!(err.0.contains("all http:// or all https://"), "{err}");
        cfg.targets.remove(0);
        assert!(validate(&cfg).is_ok());
    }

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for (total, threads) in [(10, 3), (1, 4), (32, 1), (1000, 7)] {
            let parts: Vec<usize> = (0..threads).map(|i| share(total, threads, i)).collect();
            assert_eq!(parts.iter().sum::<usize>(), total, "{total}/{threads}");
            assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1, "{parts:?}");
        }
    }

    #[test]
    fn open_loop_threads_interleave_to_the_total_rate() {
        let mut cfg = config(true, &[], None);
        cfg.rate = Some(1000.0);
        let start = Instant::now();
        let plans: Vec<Plan> = (0..4).map(|i| plan(&cfg, 4, i, start, start)).collect();
        let mut slots: Vec<Duration> =
            plans.iter().flat_map(|p| (0..5).map(move |k| p.first_slot - start + p.interval.unwrap() * k)).collect();
        slots.sort();
        let gaps: Vec<Duration> = slots.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|g| g.abs_diff(Duration::from_millis(1)) < Duration::from_micros(1)), "{gaps:?}");
    }
}
