//! The human report of a run (or of merged runs): what a wrk or ab user reads at a glance.

use super::{BenchResult, LatencySummary};
use std::fmt::Write as _;

/// The report a wrk or ab user reads at a glance.
pub fn human_report(r: &BenchResult) -> String {
    let mut out = String::new();
    let w = &mut out;
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let per_request = r.open_model.as_deref() == Some("per-request");
    let loop_mode = match r.rate {
        Some(rate) if per_request => format!("open loop at {rate} requests/s (per-request model)"),
        Some(rate) => format!("open loop at {rate} requests/s (pool model)"),
        None => "closed loop".to_string(),
    };
    let _ = writeln!(
        w,
        "spidey bench: {}, {}, {loop_mode}, {}{}",
        plural(r.threads, "thread"),
        if per_request { "no connection cap".to_string() } else { plural(r.connections, "connection") },
        if r.keepalive { "keep-alive" } else { "a new connection per request" },
        if r.warmup_s > 0.0 { format!(", after {:.1}s warmup", r.warmup_s) } else { String::new() },
    );
    for url in &r.urls {
        let _ = writeln!(w, "  {} {url}", r.method);
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "  {:<14}{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "Latency", "min", "mean", "stdev", "p50", "p90", "p99", "p99.9", "max"
    );
    let label = if r.rate.is_some() { "corrected" } else { "" };
    latency_row(w, label, &r.latency);
    if let Some(u) = &r.latency_uncorrected {
        latency_row(w, "uncorrected", u);
    }
    if let Some(l) = &r.send_lateness {
        latency_row(w, "send lateness", l);
    }
    if let Some(h) = &r.handshake {
        latency_row(w, "TLS handshake", h);
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "  {} requests in {:.2}s: {} responses, {} errors",
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
    let errors: Vec<String> =
        r.errors.named().iter().filter(|(_, n)| *n > 0).map(|(name, n)| format!("{name}: {n}")).collect();
    if let Some(h) = &r.handshakes {
        let with = r.tls_negotiated.as_deref().map(|n| format!(", {n}")).unwrap_or_default();
        let _ = writeln!(w, "  Handshakes:   {} ({} full, {} resumed){with}", h.total(), h.full, h.resumed);
    }
    let _ = writeln!(w, "  Errors:       {}", if errors.is_empty() { "none".into() } else { errors.join(", ") });
    if let Some(e) = &r.tls_error {
        let _ = writeln!(w, "  TLS error:    {e} (the first of {})", r.errors.tls);
    }
    if let (Some(_), Some(bound)) = (r.rate, r.late_after_us) {
        let _ = writeln!(
            w,
            "  Schedule:     {} unsent (scheduled, never sent), {} late (sent over {} after their time)",
            r.errors.unsent,
            r.errors.late,
            time(bound as f64)
        );
    }
    out
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
fn time(us: f64) -> String {
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
