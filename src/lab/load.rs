//! The one seam between the lab and a load generator: [`measure`] runs a [`Load`] against a
//! server on a loopback port and returns the lab's [`Measurement`] plus the generator's raw
//! result. Only this file knows which generator that is.
//!
//! Interim generator (until `crate::bench` lands): one blocking thread per connection,
//! closed loop, or open loop at a fixed total rate with latency counted from each request's
//! intended send time. Its numbers are honest but it costs a thread per connection.

use crate::lab::experiment::ClientSpec;
use crate::lab::metric::Measurement;
use anyhow::Context;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One load to apply: `client` settings against `paths` (picked at random per request).
pub(crate) struct Load<'a> {
    pub port: u16,
    pub paths: &'a [String],
    pub client: &'a ClientSpec,
}

const TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the load and measures it.
pub(crate) fn measure(load: &Load<'_>) -> anyhow::Result<(Measurement, Option<serde_json::Value>)> {
    anyhow::ensure!(!load.paths.is_empty(), "nothing to request");
    anyhow::ensure!(load.client.c > 0, "no connections");
    let stop = match (&load.client.n, &load.client.duration) {
        (Some(n), _) => Stop::Requests(AtomicU64::new(*n)),
        (None, Some(d)) => Stop::At(Instant::now() + crate::cli::duration(d).map_err(anyhow::Error::msg)?),
        (None, None) => anyhow::bail!("client {} sets neither n nor duration", load.client.label()),
    };
    let start = Instant::now();
    let stop = &stop;
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..load.client.c).map(|i| s.spawn(move || connection(load, stop, i, start))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    Ok((summarize(tallies, start.elapsed()), None))
}

enum Stop {
    Requests(AtomicU64),
    At(Instant),
}

impl Stop {
    /// Takes one request from the budget, if any is left.
    fn take(&self) -> bool {
        match self {
            Stop::Requests(left) => {
                left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1)).is_ok()
            }
            Stop::At(t) => Instant::now() < *t,
        }
    }
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<f64>,
    non_success: u64,
    errors: u64,
    bytes: u64,
}

/// One connection's loop; connection `i` of `c` takes every c-th slot of an open-loop schedule.
fn connection(load: &Load<'_>, stop: &Stop, i: u32, start: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut stream: Option<TcpStream> = None;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(i);
    let interval = load.client.rate.map(|r| Duration::from_secs_f64(f64::from(load.client.c) / r));
    let mut slot = start + interval.map(|iv| iv.mul_f64(f64::from(i) / f64::from(load.client.c))).unwrap_or_default();
    while stop.take() {
        let intended = if let Some(iv) = interval {
            std::thread::sleep(slot.saturating_duration_since(Instant::now()));
            let t = slot;
            slot += iv;
            t
        } else {
            Instant::now()
        };
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let path = &load.paths[(rng >> 33) as usize % load.paths.len()];
        match exchange(&mut stream, load, path) {
            Ok((status, bytes)) => {
                tally.latencies_us.push(intended.elapsed().as_secs_f64() * 1e6);
                tally.bytes += bytes;
                tally.non_success += u64::from(status >= 400);
            }
            Err(_) => {
                stream = None;
                tally.errors += 1;
            }
        }
    }
    tally
}

/// Sends one request (connecting if needed) and reads the whole response: (status, bytes).
fn exchange(stream: &mut Option<TcpStream>, load: &Load<'_>, path: &str) -> anyhow::Result<(u16, u64)> {
    if stream.is_none() {
        let s = TcpStream::connect(("127.0.0.1", load.port)).context("connect")?;
        s.set_read_timeout(Some(TIMEOUT))?;
        s.set_nodelay(true)?;
        *stream = Some(s);
    }
    let s = stream.as_mut().context("no stream")?;
    let conn = if load.client.keepalive { "keep-alive" } else { "close" };
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: {conn}\r\n\r\n").as_bytes())?;
    let (status, len, head, close) = read_head(s)?;
    let body = match len {
        Some(n) => std::io::copy(&mut s.take(n), &mut std::io::sink())?,
        None => std::io::copy(s, &mut std::io::sink())?,
    };
    anyhow::ensure!(len.map_or(true, |n| n == body), "short body");
    if close || !load.client.keepalive || len.is_none() {
        *stream = None;
    }
    Ok((status, head + body))
}

/// Reads a response head: (status, content-length, head bytes, server closes).
fn read_head(s: &mut TcpStream) -> anyhow::Result<(u16, Option<u64>, u64, bool)> {
    let mut head = Vec::with_capacity(256);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        anyhow::ensure!(s.read(&mut byte)? == 1, "closed inside a head");
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head);
    let status = text.get(9..12).and_then(|c| c.parse().ok()).context("no status")?;
    let field = |name: &str| {
        text.split("\r\n").find_map(|l| {
            l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string())
        })
    };
    let len = field("content-length").and_then(|v| v.parse().ok());
    let close = field("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    Ok((status, len, head.len() as u64, close))
}

fn summarize(tallies: Vec<Tally>, elapsed: Duration) -> Measurement {
    let mut lat: Vec<f64> = tallies.iter().flat_map(|t| t.latencies_us.iter().copied()).collect();
    lat.sort_by(f64::total_cmp);
    let secs = elapsed.as_secs_f64().max(1e-9);
    // Zero, not NaN, when nothing was answered: JSON has no NaN.
    let pct = |p: f64| lat.get(((lat.len() as f64 * p).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
    Measurement {
        responses: lat.len() as u64,
        non_success: tallies.iter().map(|t| t.non_success).sum(),
        errors: tallies.iter().map(|t| t.errors).sum(),
        duration_s: secs,
        rps: lat.len() as f64 / secs,
        bytes_per_s: tallies.iter().map(|t| t.bytes).sum::<u64>() as f64 / secs,
        mean_us: if lat.is_empty() { 0.0 } else { lat.iter().sum::<f64>() / lat.len() as f64 },
        p50_us: pct(0.50),
        p90_us: pct(0.90),
        p99_us: pct(0.99),
        max_us: lat.last().copied().unwrap_or(0.0),
    }
}
