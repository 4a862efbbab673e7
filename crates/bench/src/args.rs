//! `spidey bench` flags, and their translation into a [`BenchConfig`].

use super::tls::{Resume, TlsOptions, Verify};
use super::{BenchConfig, OpenModel, Protocol, Stop, Target, LATE_AFTER};
use clap::{Args, Subcommand};
use spidey_config::{duration, ConfigError};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub action: Option<BenchAction>,
    /// The URLs to load, all http:// or all https://; with several, each request picks one
    /// at random.
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<String>,
    /// Speak HTTP/2: over https:// offer ALPN `h2` alone (a server that does not select it
    /// fails every connection, counted as `tls` errors with the reason); over http://
    /// prior knowledge (h2c: the client preface, no Upgrade). -c stays the number of
    /// connections; --streams sets the streams on each. Latency runs from a request's HEADERS (its
    /// intended time in the open loop) to its stream's end. A GOAWAY ends its connection
    /// and the next request reconnects; requests the server never acted on are sent again.
    /// Not with --body, --no-keepalive or --open-model per-request, and the URLs must
    /// share one scheme, host and port.
    #[arg(long)]
    pub h2: bool,
    /// With --h2: the most requests in flight at once on each connection, as streams
    /// (h2load's -m, --max-concurrent-streams; here -m is --method, so the long name only),
    /// never more than the server's SETTINGS_MAX_CONCURRENT_STREAMS. Requests in flight at
    /// most: -c x --streams.
    #[arg(long = "streams", visible_alias = "max-concurrent-streams", default_value_t = 1, requires = "h2",
          value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub streams: u32,
    /// Connections held open at once, shared among the threads.
    #[arg(short, long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub connections: u32,
    /// Send exactly this many requests (after the warmup), then stop.
    #[arg(short = 'n', long, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,
    /// Run for this long (after the warmup) [default: 10s].
    #[arg(short, long, value_parser = duration)]
    pub duration: Option<Duration>,
    /// Open loop: send R requests per second in total, on a fixed schedule; latency is
    /// measured from each request's intended send time (coordinated omission corrected), and
    /// so is --timeout. Requests/sec is the rate achieved (every response, late ones
    /// included). The generator's own send lateness is reported; requests scheduled but
    /// never sent are `unsent` errors; answers to requests sent more than --late-after after
    /// their time are responses, also counted `late`, and a line says the rate was not kept.
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// With --rate: `pool` (wrk2's model) keeps at most -c connections alive and a request
    /// whose time comes while all are busy waits for one; `per-request` (httperf's model)
    /// opens a new connection for every scheduled request at its time (Connection: close),
    /// with no cap but the descriptor limit (the soft limit is raised to the hard one), and
    /// ignores -c.
    #[arg(long, value_enum, default_value_t = OpenModel::Pool, requires = "rate", value_name = "MODEL")]
    pub open_model: OpenModel,
    /// With --rate: a request sent more than this after its intended time counts as `late`
    /// (its answer is still a response, its latency recorded from the intended time).
    #[arg(long, default_value = "1ms", value_parser = duration, requires = "rate", value_name = "DURATION")]
    pub late_after: Duration,
    /// A new connection for every request (sends Connection: close).
    #[arg(long)]
    pub no_keepalive: bool,
    /// https: accept any server certificate, for any name (self-signed test servers); the
    /// handshake signatures are still checked.
    #[arg(long, conflicts_with = "cacert")]
    pub insecure: bool,
    /// https: trust the certificates in this PEM file instead of the system's CA bundle.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https: no session resumption; every new connection does a full handshake (by
    /// default a new connection resumes with a ticket or session ID when the server allows).
    #[arg(long)]
    pub no_resume: bool,
    /// https: offer only this cipher suite (repeatable; rustls' names, e.g.
    /// TLS13_AES_128_GCM_SHA256 or TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256), so that servers
    /// compared use the same one. TLS 1.2 suites alone: only TLS 1.2 is offered.
    #[arg(long = "tls-cipher", value_name = "SUITE")]
    pub tls_ciphers: Vec<String>,
    /// Threads, each with its own event loop [default: the number of cores].
    #[arg(short, long, value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
    /// Load the server this long before measuring; warmup requests are not counted.
    #[arg(long, default_value = "0s", value_parser = duration)]
    pub warmup: Duration,
    /// A request with no complete response after this long is an error (timeout).
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub timeout: Duration,
    /// An extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// The request method.
    #[arg(short, long, default_value = "GET")]
    pub method: String,
    /// Send this file as the request body.
    #[arg(long, value_name = "FILE")]
    pub body: Option<PathBuf>,
    /// Write the full results (summary, per-second series, and the latency histograms in
    /// HdrHistogram's compressed V2 form, base64) as JSON to FILE; `-` writes the JSON to
    /// stdout and the report to stderr.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Exit with status 1 if this condition holds after the run (repeatable), for CI:
    /// `error-rate>1%` (failed requests over all counted: those with no answer, transport
    /// errors and `unsent`, plus answers whose status is not 2xx or 3xx, as k6 counts them),
    /// `unanswered-rate>1%` (requests with no answer only, whatever the answers' statuses),
    /// a latency `p50`, `p90`, `p99`, `p99.9`, `max` or `mean` above a duration with its unit
    /// (`p99>50ms`, `us`, `ms` or `s`), or `rps<1000`. A rate needs its `%`. A latency with
    /// no response to measure counts as crossed. The run also exits 1 when no request at all
    /// was answered.
    #[arg(long = "fail-on", value_name = "METRIC>VALUE")]
    pub fail_on: Vec<String>,
    /// Begin the load (the warmup first) at this wall-clock time, in milliseconds since the
    /// Unix epoch, so runs on several hosts start together; a time already past starts at once.
    #[arg(long, value_name = "UNIX_MS")]
    pub start_at: Option<u64>,
}

/// What `spidey bench` does instead of loading a server.
#[derive(Debug, Subcommand)]
pub enum BenchAction {
    /// Combine runs' JSON results (one per client host, say) into the result of one run:
    /// counts, bytes and errors add, percentiles come from the summed histograms (never
    /// averaged), the duration is the union of the runs' windows.
    Merge {
        /// The results written by `spidey bench --json`.
        #[arg(required = true, value_name = "RESULT.json")]
        files: Vec<PathBuf>,
        /// Write the merged result as JSON to FILE.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
}

impl BenchArgs {
    /// The configuration these flags describe; every mistake is a [`ConfigError`].
    pub fn config(&self) -> Result<BenchConfig, ConfigError> {
        let targets = self.urls.iter().map(|u| parse_url(u)).collect::<Result<Vec<_>, _>>()?;
        let headers = self.headers.iter().map(|h| parse_header(h)).collect::<Result<Vec<_>, _>>()?;
        if !spidey_http::field::is_token(self.method.as_bytes()) {
            return Err(ConfigError(format!("invalid method '{}'", self.method)));
        }
        let body = match &self.body {
            Some(p) => {
                Some(std::fs::read(p).map_err(|e| ConfigError(format!("cannot read --body {}: {e}", p.display())))?)
            }
            None => None,
        };
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(ConfigError(format!("--rate must be a positive number, not {r}")));
            }
        }
        if self.timeout.is_zero() {
            return Err(ConfigError("--timeout must be more than 0".into()));
        }
        let stop = match (self.requests, self.duration) {
            (Some(n), _) => Stop::Requests(n),
            (None, Some(d)) if d.is_zero() => return Err(ConfigError("--duration must be more than 0".into())),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) => Stop::Duration(Duration::from_secs(10)),
        };
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        Ok(BenchConfig {
            targets,
            connections: self.connections as usize,
            threads: self.threads.map(|t| t as usize).unwrap_or(cores),
            stop,
            rate: self.rate,
            open_model: self.open_model,
            late_after: if self.rate.is_some() { self.late_after } else { LATE_AFTER },
            keepalive: !self.no_keepalive,
            warmup: self.warmup,
            timeout: self.timeout,
            method: self.method.clone(),
            headers,
            body,
        })
    }
}

impl BenchArgs {
    /// The protocol the flags ask for: `--h2` with `-m`, or HTTP/1.1.
    pub fn protocol(&self) -> Protocol {
        if self.h2 {
            Protocol::H2 { streams: self.streams as usize }
        } else {
            Protocol::Http1
        }
    }
}

/// A URL's scheme: what the connections speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// A URL taken apart: scheme, `host[:port]` as written, and path with query (no fragment).
pub(crate) fn split_url(url: &str) -> Option<(Scheme, &str, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = if scheme.eq_ignore_ascii_case("http") {
        Scheme::Http
    } else if scheme.eq_ignore_ascii_case("https") {
        Scheme::Https
    } else {
        return None;
    };
    let rest = rest.split('#').next().unwrap_or("");
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'?' => (&rest[..i], format!("/{}", &rest[i..])),
        Some(i) => (&rest[..i], rest[i..].to_string()),
        None => (rest, "/".to_string()),
    };
    Some((scheme, authority, path))
}

impl BenchArgs {
    /// How https:// URLs are loaded: `--insecure`, `--cacert`, `--no-resume`.
    pub fn tls_options(&self) -> TlsOptions {
        let verify = match (&self.cacert, self.insecure) {
            (_, true) => Verify::Insecure,
            (Some(path), false) => Verify::CaFile(path.clone()),
            (None, false) => Verify::System,
        };
        let resume = if self.no_resume { Resume::Off } else { Resume::On };
        TlsOptions { verify, resume, ciphers: self.tls_ciphers.clone() }
    }
}

/// Parses `http[s]://host[:port][/path][?query]` and resolves the host.
pub fn parse_url(url: &str) -> Result<Target, ConfigError> {
    let bad = |why: &str| ConfigError(format!("invalid URL '{url}': {why}"));
    let (scheme, authority, path) =
        split_url(url).ok_or_else(|| bad("expected http://HOST[:PORT]/PATH or https://HOST[:PORT]/PATH"))?;
    if authority.is_empty() || authority.contains('@') {
        return Err(bad("expected a host (and no user info)"));
    }
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad("the path has spaces or control characters; percent-encode them"));
    }
    let (host, port) = split_host_port(authority, scheme.default_port()).ok_or_else(|| bad("bad port"))?;
    let addr = resolve(host, port).map_err(|e| bad(&e))?;
    Ok(Target { url: url.to_string(), addr, host_header: authority.to_string(), path })
}

/// `host[:port]` split, the brackets of an IPv6 host removed; `default` when no port is given.
pub(crate) fn split_host_port(authority: &str, default: u16) -> Option<(&str, u16)> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default,
    };
    Some((host, port))
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> =
        (host, port).to_socket_addrs().map_err(|e| format!("cannot resolve '{host}': {e}"))?.collect();
    addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()).copied().ok_or_else(|| format!("'{host}' has no address"))
}

fn parse_header(h: &str) -> Result<(String, String), ConfigError> {
    let bad = || ConfigError(format!("invalid header '{h}': expected 'Name: value'"));
    let (name, value) = h.split_once(':').ok_or_else(bad)?;
    let (name, value) = (name.trim_matches([' ', '\t']), value.trim_matches([' ', '\t']));
    if !spidey_http::field::is_field(name.as_bytes(), value.as_bytes()) {
        return Err(bad());
    }
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_table() {
        type Case<'a> = (&'a str, Option<(&'a str, u16, &'a str)>);
        let cases: &[Case] = &[
            ("http://127.0.0.1:8080/a/b?x=1", Some(("127.0.0.1:8080", 8080, "/a/b?x=1"))),
            ("http://127.0.0.1", Some(("127.0.0.1", 80, "/"))),
            ("http://127.0.0.1:81?q", Some(("127.0.0.1:81", 81, "/?q"))),
            ("HTTP://127.0.0.1:81/#frag", Some(("127.0.0.1:81", 81, "/"))),
            ("http://[::1]:9/x", Some(("[::1]:9", 9, "/x"))),
            ("https://127.0.0.1/", Some(("127.0.0.1", 443, "/"))),
            ("HTTPS://127.0.0.1:8443/a?b", Some(("127.0.0.1:8443", 8443, "/a?b"))),
            ("https://[::1]/x", Some(("[::1]", 443, "/x"))),
            ("ftp://127.0.0.1/", None),
            ("127.0.0.1:80/", None),
            ("http://user@127.0.0.1/", None),
            ("http://127.0.0.1:99999/", None),
            ("http:///path", None),
            ("http://127.0.0.1/a b", None),
        ];
        for (url, want) in cases {
            let got = parse_url(url).ok().map(|t| (t.host_header.clone(), t.addr.port(), t.path.clone()));
            let want = want.map(|(h, p, path)| (h.to_string(), p, path.to_string()));
            assert_eq!(got, want, "{url}");
        }
    }

    #[test]
    fn tls_hosts_table() {
        let cases = [
            ("http://127.0.0.1:8080/", None),
            ("https://127.0.0.1:8443/", Some("127.0.0.1")),
            ("https://localhost/a", Some("localhost")),
            ("https://[::1]:9/", Some("::1")),
        ];
        for (url, want) in cases {
            assert_eq!(parse_url(url).unwrap().tls_host(), want, "{url}");
        }
    }

    /// `spidey bench` with `flags` and one https URL, parsed as the CLI does.
    fn bench_args(flags: &[&str]) -> Result<BenchArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let argv = ["bench"].iter().chain(flags).chain(&["https://127.0.0.1:1/"]);
        <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.bench)
    }

    #[test]
    fn tls_flags_table() {
        let ca = PathBuf::from("ca.pem");
        let cases: &[(&[&str], Option<TlsOptions>)] = &[
            (&[], Some(TlsOptions { verify: Verify::System, resume: Resume::On, ciphers: vec![] })),
            (&["--insecure"], Some(TlsOptions { verify: Verify::Insecure, resume: Resume::On, ciphers: vec![] })),
            (
                &["--cacert", "ca.pem"],
                Some(TlsOptions { verify: Verify::CaFile(ca.clone()), resume: Resume::On, ciphers: vec![] }),
            ),
            (&["--no-resume"], Some(TlsOptions { verify: Verify::System, resume: Resume::Off, ciphers: vec![] })),
            (
                &["--insecure", "--no-resume"],
                Some(TlsOptions { verify: Verify::Insecure, resume: Resume::Off, ciphers: vec![] }),
            ),
            (&["--insecure", "--cacert", "ca.pem"], None),
            (&["--cacert"], None),
            (
                &["--tls-cipher", "A", "--tls-cipher", "B"],
                Some(TlsOptions { verify: Verify::System, resume: Resume::On, ciphers: vec!["A".into(), "B".into()] }),
            ),
        ];
        for (flags, want) in cases {
            let got = bench_args(flags).ok().map(|a| a.tls_options());
            assert_eq!(got, *want, "{flags:?}");
        }
    }

    #[test]
    fn headers_table() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            ("Accept: text/html", Some(("Accept", "text/html"))),
            ("X-A:b", Some(("X-A", "b"))),
            ("X-Empty:", Some(("X-Empty", ""))),
            ("no colon", None),
            (": value", None),
            ("Bad Name: v", None),
            (" X-Pad \t:  v  ", Some(("X-Pad", "v"))),
            ("X(A): v", None),
            ("X-A: a\rInjected: 1", None),
            ("X-A: a\0b", None),
            ("X-A: \u{1b}[31m", None),
        ];
        for (h, want) in cases {
            let got = parse_header(h).ok();
            let want = want.map(|(n, v)| (n.to_string(), v.to_string()));
            assert_eq!(got, want, "{h}");
        }
    }
}
