//! `spidey serve`'s command line: [`ServeArgs`], every flag and how clap checks its value.

use crate::modes::{Mode, Workers};
use clap::Args;
use spidey_config::duration;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The directory to serve.
    #[arg(default_value = ".")]
    pub root: PathBuf,
    /// The address to listen on [default: 127.0.0.1]: `::1` for IPv6 loopback, `::` for
    /// every address, IPv6 and IPv4 alike (dual-stack: IPV6_V6ONLY off). Repeatable
    /// (`--addr 127.0.0.1 --addr ::1`): a listener on each, all on the same --port (with
    /// --port 0 the first gets a free port and the others bind that one); every mode
    /// accepts on all of them. `::` or `0.0.0.0` with an address it already covers is an
    /// error. Not with socket activation: a socket passed by systemd (LISTEN_FDS/LISTEN_PID,
    /// at fd 3) is served instead of binding, and --addr or --port is then an error.
    /// `localhost` means 127.0.0.1; no other name is resolved.
    #[arg(long, short = 'i', visible_alias = "host", value_parser = listen_addr)]
    pub addr: Vec<IpAddr>,
    /// The port to listen on [default: 8080]; 0 picks a free one (the startup line names it).
    #[arg(long, short = 'p')]
    pub port: Option<u16>,
    /// The listen queue length (listen(2) backlog).
    #[arg(long, default_value_t = 1024)]
    pub backlog: i32,
    /// The concurrency architecture (default `event`: one slow client holds up nobody else).
    #[arg(long, value_enum, default_value_t = Mode::Event)]
    pub mode: Mode,
    /// Workers (threads or processes) for modes that have them: N, or MIN-MAX to adapt
    /// (pool, prefork). Defaults: pool cores+2-256, prefork cores-256, event/uring/hybrid
    /// cores (hybrid: its event loops). Refused with single, fork and thread, which have
    /// no workers, and a MIN-MAX range with event, uring and hybrid.
    #[arg(long)]
    pub workers: Option<Workers>,
    /// hybrid: the threads of the pool that answers requests that may block (handlers,
    /// CGI spawns, --cpu-work, listings); at most 16 jobs per thread wait, beyond that 503.
    /// Default: 4 per core. Refused with any other mode.
    #[arg(long, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=4096), usize::from))]
    pub pool_threads: Option<usize>,
    /// The most connections open at once.
    #[arg(long, default_value_t = 4096)]
    pub max_conns: usize,
    /// List dotfiles in directory listings and serve them (by default any path with a
    /// segment starting with `.` is 404, except `/.well-known/`).
    #[arg(long, visible_aliases = ["allow-hidden", "hidden"])]
    pub show_hidden: bool,
    /// List no directory: a directory without an index file is 404 at `/dir` and `/dir/`,
    /// as if it did not exist (an index file is still served).
    #[arg(long)]
    pub no_listing: bool,
    /// No access log on stdout.
    #[arg(long, short)]
    pub quiet: bool,
    /// Append the access log to FILE instead of stdout. SIGHUP reopens it (for logrotate:
    /// rename the file, send SIGHUP, new lines go to a new FILE), in every worker process.
    #[arg(long, value_name = "FILE", conflicts_with = "quiet")]
    pub access_log: Option<PathBuf>,
    /// How each access-log line is written: `combined` (Combined Log Format, as Apache and
    /// nginx write it) or `json` (one object per line: time, remote_addr, request, status,
    /// bytes, referer, user_agent; a field the request did not send is null).
    #[arg(long, value_enum, default_value_t = crate::log::LogFormat::Combined, conflicts_with = "quiet")]
    pub log_format: crate::log::LogFormat,
    /// Serve the server's counters at PATH (e.g. `/-/metrics`) in Prometheus text format:
    /// responses by status class, body bytes, open connections, busy workers, pool queue,
    /// CGI scripts running, handler calls, errors by kind; across all worker processes.
    /// Answered before any file lookup, behind --basic-auth when it is given, for PATH
    /// however percent-encoded; GET and HEAD only (else 405). SIGUSR1 prints the
    /// same counters to stderr, with or without this flag.
    #[arg(long, value_name = "PATH", value_parser = metrics_path)]
    pub metrics: Option<String>,
    /// Answer GET or HEAD of PATH (e.g. `/-/health`) with 200 and `ok` while the server
    /// runs, and 503 once it is shutting down, so a load balancer stops sending it new
    /// requests during the grace period. Answered before --basic-auth (a health checker has
    /// no password; the answer says nothing but that the server is up) and before any file
    /// lookup, for PATH however percent-encoded.
    #[arg(long, value_name = "PATH", value_parser = metrics_path)]
    pub health: Option<String>,
    /// The longest request line, in bytes (beyond: 414).
    #[arg(long, default_value_t = 8192)]
    pub max_request_line: usize,
    /// The largest request head, in bytes (beyond: 431).
    #[arg(long, default_value_t = 16384)]
    pub max_head: usize,
    /// The most header fields in a request, at most 256 (beyond: 431).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub max_headers: u16,
    /// The largest request body accepted, in bytes (beyond: 413).
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body: u64,
    /// The most requests served on one connection before it is closed.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_requests: u32,
    /// The time a client has to send a whole request head (beyond: 408 and close).
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub head_timeout: Duration,
    /// With --cgi: the time a request body (to a CGI script) may take to arrive, counted
    /// from the end of its head, plus one second per --body-min-rate bytes received
    /// (beyond: 408 and close) [default: 10s]. With the defaults a body must arrive within
    /// 10 s plus 1 s per 500 bytes.
    #[arg(long, value_parser = duration)]
    pub body_timeout: Option<Duration>,
    /// With --cgi: the minimum request body rate in bytes per second that extends
    /// --body-timeout (0: the whole body within --body-timeout) [default: 500].
    #[arg(long)]
    pub body_min_rate: Option<u64>,
    /// How long a kept-alive connection may sit idle between requests.
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub idle_timeout: Duration,
    /// How long one write may wait for a client that does not read.
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub send_timeout: Duration,
    /// TCP_NOTSENT_LOWAT for every connection, in bytes (0: the kernel's default, the
    /// sysctl net.ipv4.tcp_notsent_lowat): how much of a response may wait unsent in the
    /// kernel before a send stops and the connection waits for room. A large file then
    /// leaves in steps of about this size, each moving what the client has room for.
    #[arg(long, value_name = "BYTES", default_value_t = 128 << 10, value_parser = clap::value_parser!(u32).range(0..=i32::MAX as i64))]
    pub notsent_lowat: u32,
    /// Run CGI scripts: executable files under `cgi-bin/` or named `*.cgi` (off by default:
    /// without --cgi every file, scripts included, is served as it is, never executed).
    #[arg(long)]
    pub cgi: bool,
    /// Run files ending in .EXT through PROGRAM as CGI (repeatable; implies --cgi), e.g.
    /// `.php=/usr/bin/php-cgi`, `.py=/usr/bin/python3`. The program gets one argument, the
    /// checked script file as `/proc/self/fd/3` (never anything from the request); stdin
    /// is the request body; SCRIPT_FILENAME names the file.
    #[arg(long, value_name = ".EXT=PROGRAM", value_parser = crate::content::cgi::parse_interpreter)]
    pub cgi_interpreter: Vec<(String, PathBuf)>,
    /// With --cgi: the most CGI scripts running at once, 1 to 4096, across all workers
    /// (beyond: 503, Retry-After) [default: 64].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub max_cgi: Option<u16>,
    /// With --cgi: how long a CGI script may run before it is killed (504) [default: 30s].
    #[arg(long, value_parser = duration)]
    pub cgi_timeout: Option<Duration>,
    /// Serve /PREFIX and everything under it from an in-process handler library
    /// (repeatable); see include/spidey_handler.h.
    #[arg(long, value_name = "/PREFIX=LIBRARY", value_parser = crate::content::handler::parse_flag)]
    pub handler: Vec<(String, PathBuf)>,
    /// Make every request wait this long before it is answered (models waiting on I/O).
    #[arg(long, value_parser = duration)]
    pub delay: Option<Duration>,
    /// Burn this much CPU per request before answering (a busy loop on the thread's CPU clock).
    #[arg(long, value_parser = duration)]
    pub cpu_work: Option<Duration>,
    /// Run as this account once the ports are bound and the certificate, key and files the
    /// flags name are read (as root only): its groups, group and user for the whole
    /// process, so CGI scripts and handlers run as USER too. Needs root; one line and exit
    /// code 2 if USER does not exist or this is not root.
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// How long in-flight responses may run after SIGINT or SIGTERM.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub grace: Duration,
    /// Serve HTTP/2 beside HTTP/1.1 on every connection that asks for it: over TLS by ALPN
    /// (`h2` offered before `http/1.1`), in clear text by prior knowledge (a connection
    /// that opens with HTTP/2's preface, RFC 9113 §3.3; no `Upgrade: h2c`). Without it,
    /// such a client is refused with GOAWAY HTTP_1_1_REQUIRED.
    #[arg(long)]
    pub http2: bool,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first);
    /// needs --tls-key. TLS 1.3 and 1.2, ALPN http/1.1 (and h2 with --http2), session
    /// tickets. SIGHUP reloads
    /// both files (a pair that does not load is refused and the old one kept).
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    // --- Compression, headers and access (crates/server/src/content/compress.rs, headers.rs, access.rs) ---
    /// Serve FILE.br, FILE.zst or FILE.gz beside FILE when the client's Accept-Encoding
    /// allows (a sibling older than FILE is stale and ignored), with Vary: Accept-Encoding.
    #[arg(long)]
    pub precompressed: bool,
    /// Compress text, JSON, JavaScript, XML and SVG files (1 KiB to 1 MiB; each version
    /// encoded once and kept, 32 MiB per process) and listings (1 KiB to 256 KiB) on the
    /// fly with brotli, zstd or gzip as Accept-Encoding allows (never a 206; a HEAD never
    /// encodes and may come without Content-Length).
    #[arg(long)]
    pub compress: bool,
    /// Add the field 'Name: value' to every response (repeatable).
    #[arg(long, value_name = "NAME: VALUE")]
    pub header: Vec<String>,
    /// Allow cross-origin reads: '*' or a comma-separated list of origins
    /// (https://a.example,https://b.example); answers OPTIONS preflights with 204.
    #[arg(long, value_name = "ORIGINS")]
    pub cors: Option<String>,
    /// Require HTTP Basic authentication for everything (repeatable). HASH is a SHA-crypt
    /// hash, e.g. from `mkpasswd -m sha-512` or `openssl passwd -6`, or a bcrypt one (`htpasswd
    /// -nB USER`); quote it for the shell.
    #[arg(long, value_name = "USER:HASH")]
    pub basic_auth: Vec<String>,
    /// The Cache-Control value for static files (e.g. 'max-age=3600').
    #[arg(long, value_name = "VALUE")]
    pub cache_control: Option<String>,
    // --- File-server features (crates/server/src/content/serving.rs; checked by flags.rs) ---
    /// A directory's index file, tried in order (repeatable) [default: index.html, then
    /// index.htm]; a directory with none gets its listing.
    #[arg(long, value_name = "NAME")]
    pub index: Vec<String>,
    /// Answer a GET or HEAD for a path that names nothing with this file (200), for
    /// single-page applications, e.g. `/index.html`. Never for a path with a dot-segment,
    /// a CGI script's path or another method (they keep their 404).
    #[arg(long, visible_alias = "spa", value_name = "/PATH")]
    pub fallback: Option<String>,
    /// Answer an error STATUS (400-599) with this file inside the root instead of the
    /// built-in page; the status stays (repeatable), e.g. `404=/404.html`.
    #[arg(long, value_name = "STATUS=/PATH")]
    pub error_page: Vec<String>,
    /// Add X-Frame-Options: DENY, Referrer-Policy: no-referrer and, over TLS,
    /// Strict-Transport-Security: max-age=31536000 to every response (a --header of the
    /// same name replaces each; X-Content-Type-Options: nosniff is always sent).
    #[arg(long)]
    pub security_headers: bool,
    /// Require HTTP Basic authentication with the users of this htpasswd file (bcrypt
    /// `htpasswd -B` or SHA-crypt `openssl passwd -6` lines), along with any --basic-auth.
    #[arg(long, value_name = "FILE")]
    pub basic_auth_file: Option<PathBuf>,
    /// Also listen on PORT (same --addr) for plain HTTP and answer every request with 308
    /// to https://HOST:TLS-PORT/same-path; needs --tls-cert.
    #[arg(long, value_name = "PORT")]
    pub redirect_http: Option<u16>,
    /// Read flags from a TOML file: each key a long flag's name (`port = 8443`,
    /// `compress = true`, `header = ["A: b"]`); flags given on the command line win.
    /// SIGHUP reads it again (the site's flags; the rest need a restart).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    // --- Lab: the seeds' implementation choices (crates/server/src/modes/fork_parse.rs, send.rs) ---
    /// Reproduces seed 000's forking server: the parent reads and parses each
    /// connection's first request head itself, then forks a child that answers it (and
    /// the rest of the connection). The parent serialises the reading: a client slow to
    /// send its head holds up every connection behind it. `--mode fork` only, plain HTTP.
    #[arg(long)]
    pub fork_after_parse: bool,
    /// Reproduces seed 004's sending (a 5000-byte loop): file bodies are read into a
    /// buffer of BYTES and written with send(2), a pread and a send per BYTES, instead of
    /// moved by sendfile(2). Every mode; plain HTTP only (over TLS file bodies are always
    /// read and encrypted a 16 KiB record at a time).
    #[arg(long, value_name = "BYTES", value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u32).range(1..=16 << 20), |n| n as usize))]
    pub copy_loop: Option<usize>,
}

/// An `--addr`: an IP address, or `localhost` for 127.0.0.1.
fn listen_addr(s: &str) -> Result<IpAddr, String> {
    if s.eq_ignore_ascii_case("localhost") {
        return Ok(IpAddr::from([127, 0, 0, 1]));
    }
    s.parse().map_err(|_| format!("'{s}' is not an IP address: give an IP address, e.g. 127.0.0.1 or ::1"))
}

/// A `--metrics` path: absolute, without query or fragment, as requests name it.
fn metrics_path(s: &str) -> Result<String, String> {
    let ok = s.starts_with('/') && !s.contains(['?', '#']) && s.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("invalid path '{s}': expected /SOMETHING, printable ASCII, no '?' or '#'"))
    }
}
