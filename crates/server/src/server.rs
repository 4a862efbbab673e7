//! The server's shared, read-only state: the site, the limits, the timeouts; and the
//! newest of them, which SIGHUP replaces (`reload.rs`).
//!
//! A [`Server`] is never mutated. A reload builds a whole new one and publishes it
//! ([`publish`]); the modes pick it up where a connection starts ([`newest`]: the
//! blocking modes per connection, `fork` and `prefork`'s master before they fork) or at
//! the top of a loop turn ([`refresh`]: the event loops, whose connections move to it at
//! their next step). What the running loops are built from (limits and timeouts size
//! their buffers and deadline wheels) is never changed by a reload.

use crate::content::Site;
use spidey_http::Limits;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
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
    /// Which configuration of this process this is: 0 at startup, then one more per
    /// reload ([`publish`]).
    pub generation: u64,
}

/// The generation of the newest configuration ([`NEWEST`]'s).
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// The newest configuration, once a reload has published one.
static NEWEST: Mutex<Option<Arc<Server>>> = Mutex::new(None);

/// Makes `server` the configuration new connections get, in this process and in the
/// processes it forks from now on.
pub(crate) fn publish(mut server: Server) {
    let mut newest = NEWEST.lock().unwrap_or_else(PoisonError::into_inner);
    server.generation = GENERATION.load(Ordering::Relaxed) + 1;
    let generation = server.generation;
    *newest = Some(Arc::new(server));
    GENERATION.store(generation, Ordering::Release);
}

/// `held`, or the configuration published since it was made: what a new connection is
/// served with. One atomic load when nothing was reloaded.
pub(crate) fn newest(held: &Arc<Server>) -> Arc<Server> {
    if GENERATION.load(Ordering::Acquire) == held.generation {
        return Arc::clone(held);
    }
    NEWEST.lock().unwrap_or_else(PoisonError::into_inner).clone().unwrap_or_else(|| Arc::clone(held))
}

/// Replaces `held` with the configuration published since it was made, if any.
pub(crate) fn refresh(held: &mut Arc<Server>) {
    if GENERATION.load(Ordering::Acquire) != held.generation {
        *held = newest(held);
    }
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
            generation: 0,
        })
    }
}
