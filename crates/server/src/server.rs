//! The server's shared, read-only state: the site, the limits, the timeouts.

use crate::content::Site;
use spidey_http::Limits;
use std::time::Duration;

/// How long a connection may take at each stage.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// From the first byte of a request head to its end (a whole-head deadline, not a
    /// per-read one, so a client trickling bytes cannot hold a connection forever).
    pub head: Duration,
    /// Between requests on a kept-alive connection.
    pub idle: Duration,
    /// For one write or sendfile to make progress.
    pub send: Duration,
}

/// Everything a mode needs to answer requests; shared by all workers, never mutated.
#[derive(Debug)]
pub struct Server {
    pub site: Site,
    pub limits: Limits,
    pub timeouts: Timeouts,
    /// The largest request body accepted, in bytes (beyond: 413).
    pub max_body: u64,
    /// The most requests served on one connection before it is closed.
    pub max_requests: u32,
    /// No access log.
    pub quiet: bool,
    /// HTTPS (`--tls-cert`, `--tls-key`): every connection speaks TLS (`modes/tls.rs`).
    pub tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    /// HTTP/2 is served (`--http2`): chosen by ALPN or the preface (`h2.rs`).
    pub http2: bool,
}

#[cfg(any(test, feature = "fuzzing"))]
impl Server {
    /// A server over `root` with default site options, small head limits (512-byte request
    /// line, 2 KiB head, 16 fields), 5 s timeouts, no access log and no TLS: for unit tests
    /// and the fuzz targets, which drive modes and sessions without `serve`'s flags.
    pub fn for_tests(root: &std::path::Path) -> std::io::Result<Server> {
        let d = Duration::from_secs(5);
        Ok(Server {
            site: Site::open(root, crate::content::SiteOptions::default())?,
            limits: Limits { max_request_line: 512, max_head: 2048, max_headers: 16 },
            timeouts: Timeouts { head: d, idle: d, send: d },
            max_body: 1 << 20,
            max_requests: 1000,
            quiet: true,
            tls: None,
            http2: false,
        })
    }
}
