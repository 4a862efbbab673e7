//! Rates scaled to the server's capacity (`capacity = 1.5` in a client of a sweep): a
//! seed's fixed rates (003's 500 to 5500 req/s) may all lie beyond what this machine's
//! server can answer, so the shape the seed saw (a peak, then a collapse) has no room to
//! show. A grid of shares of the measured capacity straddles it on any machine.
//!
//! The capacity is measured once per server run and workload, after the warm-up: the
//! successful answers per second of a closed loop of [`CONNECTIONS`] connections, each
//! used as the point's client uses them (a new one per request, or kept alive), for
//! [`DURATION`] ([`QUICK_DURATION`] in a quick run). A point then offers its share of it.

use crate::experiment::{ClientSpec, Model};
use crate::run::docroot::DocRoot;
use crate::run::hosts::Hosts;
use crate::run::load::{measure, Load};
use crate::run::server::Running;

/// The closed loop's connections: enough to keep a server's CPUs busy between answers.
pub(crate) const CONNECTIONS: u32 = 8;
/// How long the closed loop runs in a full run...
pub(crate) const DURATION: &str = "2s";
/// ...and in a quick run.
pub(crate) const QUICK_DURATION: &str = "300ms";

/// The closed loop that measures the capacity, for points whose client is `like`.
pub(crate) fn probe_client(like: &ClientSpec, quick: bool) -> ClientSpec {
    ClientSpec {
        c: CONNECTIONS,
        n: None,
        duration: Some(if quick { QUICK_DURATION } else { DURATION }.to_string()),
        rate: None,
        capacity: None,
        model: Model::Pool,
        ..like.clone()
    }
}

/// The server's capacity for `workload`, in successful answers per second.
pub(crate) fn measure_capacity(
    server: &Running,
    root: &DocRoot,
    workload: &str,
    like: &ClientSpec,
    hosts: &Hosts,
    quick: bool,
) -> Result<f64, String> {
    let paths = root.urls.get(workload).cloned().unwrap_or_default();
    let client = probe_client(like, quick);
    let load = Load { port: server.port, paths: &paths, client: &client, hosts, tls: server.tls.as_deref() };
    let (m, _) = measure(&load).map_err(|e| format!("measuring the capacity: {e:#}"))?;
    let ok = m.responses.saturating_sub(m.non_success);
    if ok == 0 || m.duration_s <= 0.0 {
        return Err(format!(
            "measuring the capacity: no successful answer ({} answers, {} errors)",
            m.responses, m.errors
        ));
    }
    Ok(ok as f64 / m.duration_s)
}

/// The client a point runs: its share of `capacity` as a fixed rate, when it has one.
pub(crate) fn offered(client: &ClientSpec, capacity: Option<f64>) -> ClientSpec {
    match (client.capacity, capacity) {
        (Some(share), Some(cap)) => ClientSpec { rate: Some(share * cap), capacity: None, ..client.clone() },
        _ => client.clone(),
    }
}

/// What the record says of its rate: `offered 1.5 × 612 req/s = 918 req/s (capacity: ...)`.
pub(crate) fn note(share: f64, capacity: f64) -> String {
    format!(
        "offered {share} × {capacity:.0} req/s = {:.0} req/s (capacity: successful answers per second of a closed loop of {CONNECTIONS} connections after the warm-up)",
        share * capacity
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A share becomes a fixed rate of that share of the capacity; the probe is a closed
    /// loop (no rate) with the point's connection use; other clients pass unchanged.
    #[test]
    fn shares_become_rates_and_the_probe_is_a_closed_loop() {
        let share = ClientSpec {
            duration: Some("3s".into()),
            n: None,
            capacity: Some(1.5),
            keepalive: false,
            model: Model::PerRequest,
            ..ClientSpec::closed(1, 1)
        };
        let run = offered(&share, Some(600.0));
        assert_eq!((run.rate, run.capacity, run.duration.as_deref(), run.c), (Some(900.0), None, Some("3s"), 1));
        assert_eq!(offered(&share, None), share, "no capacity measured: unchanged");
        let fixed = ClientSpec::closed(4, 100);
        assert_eq!(offered(&fixed, Some(600.0)), fixed, "not a share: unchanged");
        let probe = probe_client(&share, true);
        assert_eq!((probe.c, probe.rate, probe.capacity, probe.n), (CONNECTIONS, None, None, None));
        assert_eq!(
            (probe.keepalive, probe.model, probe.duration.as_deref()),
            (false, Model::Pool, Some(QUICK_DURATION))
        );
        assert!(note(1.5, 600.0).starts_with("offered 1.5 × 600 req/s = 900 req/s"));
    }
}
