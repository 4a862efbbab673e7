//! The server's own count of a point, beside the client's: the lab starts `spidey serve`
//! with `--metrics` at [`PATH`] and scrapes it (Prometheus text, `metrics.rs`) just before
//! and just after each point's load; the difference is what the server answered during
//! the point, by status class, and the body bytes it sent. Peers have no such endpoint,
//! so their points carry none.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Where the lab asks spidey for its counters (`--metrics`).
pub(crate) const PATH: &str = "/-/metrics";

/// What the server counted during one point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ServerCounts {
    /// Responses by status class (`2xx`, `5xx`, ...), classes with none left out.
    pub responses: BTreeMap<String, u64>,
    /// Response body bytes, as the access log counts them.
    pub body_bytes: u64,
}

/// One scrape: the counters, and the size of the scrape's own body, which the server
/// counts as a 2xx response after rendering it (so the next scrape sees it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scrape {
    counts: ServerCounts,
    own_body: u64,
}

/// Scrapes the server at `addr`; None if it does not answer 200 with the counters.
pub(crate) fn scrape(addr: SocketAddr) -> Option<Scrape> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(format!("GET {PATH} HTTP/1.0\r\nHost: lab\r\n\r\n").as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    if raw.get(9..12) != Some(b"200") {
        return None;
    }
    let body = &raw[head_end + 4..];
    Some(Scrape { counts: parse(std::str::from_utf8(body).ok()?), own_body: body.len() as u64 })
}

/// What the server counted between two scrapes, the first scrape's own response taken out.
pub(crate) fn between(before: &Scrape, after: &Scrape) -> ServerCounts {
    let mut responses = BTreeMap::new();
    for (class, n) in &after.counts.responses {
        let was = before.counts.responses.get(class).copied().unwrap_or(0);
        let own = u64::from(class == "2xx");
        let n = n.saturating_sub(was).saturating_sub(own);
        if n > 0 {
            responses.insert(class.clone(), n);
        }
    }
    let body_bytes = after.counts.body_bytes.saturating_sub(before.counts.body_bytes).saturating_sub(before.own_body);
    ServerCounts { responses, body_bytes }
}

/// The response counters of a metrics page.
fn parse(text: &str) -> ServerCounts {
    let mut counts = ServerCounts::default();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, value)) = line.rsplit_once(' ') else { continue };
        let Ok(value) = value.parse::<u64>() else { continue };
        if let Some(class) = name.strip_prefix("spidey_responses_total{class=\"").and_then(|c| c.strip_suffix("\"}")) {
            counts.responses.insert(class.to_string(), value);
        } else if name == "spidey_response_body_bytes_total" {
            counts.body_bytes = value;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(ok: u64, errors: u64, bytes: u64) -> String {
        format!(
            "# HELP spidey_responses_total Responses sent, by status class.\n\
             # TYPE spidey_responses_total counter\n\
             spidey_responses_total{{class=\"1xx\"}} 0\n\
             spidey_responses_total{{class=\"2xx\"}} {ok}\n\
             spidey_responses_total{{class=\"5xx\"}} {errors}\n\
             # TYPE spidey_response_body_bytes_total counter\n\
             spidey_response_body_bytes_total {bytes}\n\
             spidey_errors_total{{kind=\"timeout\"}} 7\n"
        )
    }

    #[test]
    fn a_point_is_the_difference_less_the_first_scrape() {
        let before = Scrape { counts: parse(&page(10, 1, 5000)), own_body: 600 };
        // The point: 100 answers of 1000 bytes, 3 of them 503 with 200-byte pages.
        let after = Scrape { counts: parse(&page(10 + 1 + 97, 1 + 3, 5000 + 600 + 97_000 + 600)), own_body: 600 };
        let got = between(&before, &after);
        assert_eq!(got.responses, BTreeMap::from([("2xx".to_string(), 97), ("5xx".to_string(), 3)]));
        assert_eq!((got.responses.values().sum::<u64>(), got.body_bytes), (100, 97_600));
    }

    #[test]
    fn the_real_metrics_page_parses() {
        let counts = parse(&spidey_server::metrics::render());
        assert_eq!(counts.responses.len(), 5, "one row per status class: {counts:?}");
    }
}
