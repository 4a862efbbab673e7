//! The human report of a run (or of merged runs): what a wrk or ab user reads at a glance.

use super::{BenchResult, LatencySummary};
use std::fmt::Write as _;

/// The most common failure and its count, `connection refused (10 of 10)`; None when
/// every request was answered.
pub(super) fn headline(r: &BenchResult) -> Option<String> {
    let (class, n) = r.errors.most_common()?;
    let what = match class {
        "connect" => r.connect_error.clone().unwrap_or_else(|| "connect failed".into()),
        "tls" => r.tls_error.clone().unwrap_or_else(|| "TLS handshake failed".into()),
        "timeout" => {
            let timeout = std::time::Duration::from_millis((r.timeout_s * 1e3).round() as u64);
            format!("no complete response within {}", humantime::format_duration(timeout))
        }
        "reset" => "connection reset by the server".into(),
        "closed" => "connection closed before the response was complete".into(),
        "malformed" => match r.h2.as_ref().and_then(|h| h.first_error.clone()) {
            Some(why) => why,
            None => "malformed response".into(),
        },
        "unsent" => "scheduled but never sent".into(),
        other => other.into(),
    };
    Some(format!("{what} ({n} of {})", r.requests))
}

/// The report a wrk or ab user reads at a glance. When no request was answered it opens
/// with the most common failure and has no latency table.
pub fn human_report(r: &BenchResult) -> String {
    let mut out = String::new();
    let w = &mut out;
    let nothing = r.responses == 0;
    if nothing {
        let _ = writeln!(w, "spidey bench: {}", headline(r).unwrap_or_else(|| "no request was sent".into()));
    }
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let per_request = r.open_model.as_deref() == Some("per-request");
    let loop_mode = match r.rate {
        Some(rate) if per_request => format!("open loop at {rate} requests/s (per-request model)"),
        Some(rate) => format!("open loop at {rate} requests/s (pool model)"),
        None => "closed loop".to_string(),
    };
    let _ = writeln!(
        w,
        "spidey bench: {}{}, {}, {}, {loop_mode}, {}{}",
        r.protocol,
        r.streams.map(|m| format!(" ({} per connection)", plural(m, "stream"))).unwrap_or_default(),
        plural(r.threads, "thread"),
        if per_request { "no connection cap".to_string() } else { plural(r.connections, "connection") },
        if r.keepalive { "keep-alive" } else { "a new connection per request" },
        if r.warmup_s > 0.0 { format!(", after {:.1}s warmup", r.warmup_s) } else { String::new() },
    );
    for url in &r.urls {
        let _ = writeln!(w, "  {} {url}", r.method);
    }
    let _ = writeln!(w);
    if !nothing {
        let _ = writeln!(
            w,
            "  {:<14}{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "Latency", "min", "mean", "stdev", "p50", "p90", "p99", "p99.9", "max"
        );
        let label = if r.rate.is_some() { "corrected" } else { "" };
        let rows = [(label, Some(&r.latency)), ("uncorrected", r.latency_uncorrected.as_ref())];
        let rows = rows.into_iter().chain([("send lateness", r.send_lateness.as_ref())]);
        for (label, summary) in rows.chain([("TLS handshake", r.handshake.as_ref())]) {
            match summary {
                Some(l) if l.count > 0 => latency_row(w, label, l),
                Some(_) => drop(writeln!(w, "  {label:<14}{:>10}", "none")),
                None => {}
            }
        }
        let _ = writeln!(w);
    }
    let late = if r.rate.is_some() { format!(" ({} to requests sent late)", r.late) } else { String::new() };
    // Answers that are not 2xx or 3xx count in `error-rate` as errors do: said here, so
    // "0 errors" never reads as a clean run.
    let failing = if r.non_2xx_3xx > 0 { format!(" ({} not 2xx or 3xx)", r.non_2xx_3xx) } else { String::new() };
    let _ = writeln!(
        w,
        "  {} requests in {:.2}s: {} responses{late}{failing}, {} errors",
        r.requests,
        r.duration_s,
        r.responses,
        r.errors.total()
    );
    let _ = writeln!(w, "  Requests/sec: {:.2}", r.requests_per_sec);
    let _ = writeln!(
        w,
        "  Transfer/sec: {} body, {} on the wire",
        bytes(r.body_bytes_per_sec),
        bytes(r.wire_bytes_per_sec)
    );
    let status: Vec<String> = r.status.iter().map(|(code, n)| format!("{code}: {n}")).collect();
    let _ = writeln!(w, "  Status:       {}", if status.is_empty() { "none".into() } else { status.join(", ") });
    if r.non_2xx_3xx > 0 {
        let _ = writeln!(w, "  Non-2xx or 3xx responses: {}", r.non_2xx_3xx);
    }
    let errors: Vec<String> =
        r.errors.named().iter().filter(|(_, n)| *n > 0).map(|(name, n)| format!("{name}: {n}")).collect();
    if let Some(h) = &r.handshakes {
        let with = r.tls_negotiated.as_deref().map(|n| format!(", {n}")).unwrap_or_default();
        let _ = writeln!(w, "  Handshakes:   {} ({} full, {} resumed){with}", h.total(), h.full, h.resumed);
    }
    let _ = writeln!(w, "  Errors:       {}", if errors.is_empty() { "none".into() } else { errors.join(", ") });
    if let Some(e) = &r.tls_error {
        let e = e.strip_prefix("TLS: ").unwrap_or(e);
        let _ = writeln!(w, "  TLS error:    {e} (the first of {})", r.errors.tls);
    }
    if let Some(h) = &r.h2 {
        let _ = writeln!(
            w,
            "  HTTP/2:       {} connections opened, {} GOAWAYs, {} connection errors, {} streams reset, {} retried",
            h.connections, h.goaways, h.connection_errors, h.resets, h.retried
        );
        if let Some(e) = &h.first_error {
            let _ = writeln!(w, "  HTTP/2 error: {e} (the first)");
        }
    }
    if let Some(e) = r.connect_error.as_ref().filter(|_| r.errors.connect > 0) {
        let _ = writeln!(w, "  Connect error: {e} (the first of {})", r.errors.connect);
    }
    if let (Some(rate), Some(bound)) = (r.rate, r.late_after_us) {
        let _ = writeln!(
            w,
            "  Schedule:     {} unsent (scheduled, never sent), {} late (sent over {} after their time)",
            r.errors.unsent,
            r.late,
            time(bound as f64)
        );
        if let Some(behind) = behind(r, rate, bound) {
            let _ = writeln!(w, "  Behind:       {behind}");
        }
    }
    out
}

/// Open loop: when the schedule was not kept (requests sent late or never sent), what that
/// was and the rate achieved instead; None when every request went out on time.
fn behind(r: &BenchResult, rate: f64, bound_us: u64) -> Option<String> {
    let unsent = r.errors.unsent;
    if r.late == 0 && unsent == 0 {
        return None;
    }
    let sent = r.requests - unsent;
    let most =
        r.send_lateness.as_ref().filter(|l| l.count > 0).map(|l| format!(", by up to {}", time(l.max_us as f64)));
    let never = if unsent > 0 { format!(" and {unsent} were never sent") } else { String::new() };
    Some(format!(
        "{} of {sent} requests were sent late (over {} after their time{}){never}: the server (or this client) \
         could not keep up with --rate {rate}; achieved {:.2}/s",
        r.late,
        time(bound_us as f64),
        most.unwrap_or_default(),
        r.requests_per_sec
    ))
}

fn latency_row(w: &mut String, label: &str, l: &LatencySummary) {
    let f = |us: f64| time(us);
    let _ = writeln!(
        w,
        "  {label:<14}{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        f(l.min_us as f64),
        f(l.mean_us),
        f(l.stdev_us),
        f(l.p50_us as f64),
        f(l.p90_us as f64),
        f(l.p99_us as f64),
        f(l.p99_9_us as f64),
        f(l.max_us as f64),
    );
}

/// `us` microseconds, in the unit that reads best.
pub(super) fn time(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0}us")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

fn bytes(per_sec: f64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let (mut v, mut unit) = (per_sec, 0);
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}/s", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_table() {
        let times = [(0.0, "0us"), (999.0, "999us"), (1_500.0, "1.50ms"), (2_500_000.0, "2.50s")];
        for (us, want) in times {
            assert_eq!(time(us), want, "{us}");
        }
        let rates = [(100.0, "100.00 B/s"), (2048.0, "2.00 KiB/s"), (3.0 * 1024.0 * 1024.0, "3.00 MiB/s")];
        for (b, want) in rates {
            assert_eq!(bytes(b), want, "{b}");
        }
    }
}
