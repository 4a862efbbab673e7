//! `spidey serve`: check the configuration, bind, announce, run the chosen mode.
//!
//! Every check of the configuration (flags that do not apply, ROOT, headers, auth, TLS
//! files, handlers) runs before anything binds, so a busy port never hides a mistake; a
//! bind that fails is itself a configuration error naming the address.

use crate::args::ServeArgs;
// Re-exported for `lab`, which names it here.
use crate::content::cgi::process::CgiSlots;
use crate::content::cgi::CgiOptions;
use crate::content::handler::Mount;
use crate::content::{Site, SiteOptions};
use crate::flags::ServeFeatures;
use crate::modes::ModeContext;
use crate::net::Shutdown;
use crate::server::{Server, Timeouts};
use crate::signals::Watcher;
use anyhow::Context;
pub use spidey_config::ConfigError;
use spidey_http::Limits;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    // First, before anything opens a descriptor or starts a thread.
    let activated = crate::activation::take(!args.addr.is_empty() || args.port.is_some())?;
    args.mode.preflight()?;
    crate::flags::check(&args)?;
    let features = crate::flags::serve_features(&args)?;
    let account = account(&args)?;
    let entry = args.mode.entry();
    cloexec_inherited_fds();
    raise_fd_limit();
    let metrics_path = args.metrics.as_deref().map(crate::content::endpoint_path);
    crate::metrics::init(args.mode.name(), metrics_path).context("cannot map the shared counters")?;
    crate::log::set_format(args.log_format);
    if let Some(path) = &args.access_log {
        crate::log_sink::open(path)
            .map_err(|e| ConfigError(format!("cannot open the access log {}: {e}", path.display())))?;
    }
    let redirect_http = features.redirect_http;
    let mut server = server(&args, features)?;
    if matches!(args.mode, crate::modes::Mode::Fork | crate::modes::Mode::Prefork) {
        // fork(2) is sound only while single-threaded; a --handler library's initialisers
        // may have started threads. spidey_sys::fork checks again at every fork.
        match spidey_sys::thread_count() {
            Ok(1) => {}
            Ok(n) => {
                let why = format!("mode {} forks, but this process has {n} threads (started by a --handler library?); fork(2) is only sound with one", args.mode.name());
                return Err(ConfigError(why).into());
            }
            Err(e) => return Err(ConfigError(format!("mode {} forks: {e}", args.mode.name())).into()),
        }
    }
    let mut listeners = match activated {
        Some(listener) => vec![listener],
        None => crate::listen::bind_all(&args.addr, args.port.unwrap_or(8080), args.backlog)?,
    };
    for listener in &mut listeners {
        let addr = listener.addr;
        listener
            .tune(args.notsent_lowat)
            .with_context(|| format!("cannot set the TCP options of the listener on {addr}"))?;
    }
    let port = listeners[0].addr.port();
    // CGI's SERVER_PORT: known only now, with --port 0.
    server.site.set_port(port);
    let mut warnings = Vec::new();
    if account.is_none() && spidey_sys::user::effective_uid() == 0 && runs_programs(&server) {
        warnings.push(
            "running as root, so CGI scripts and handlers run as root: --user NAME drops to NAME after binding"
                .to_string(),
        );
    }
    warnings.extend(server.site.options().auth.as_ref().and_then(crate::content::access::BasicAuth::uneven_costs));
    // `--redirect-http`: bound beside the listeners, and started now, while this process
    // has one thread (a forking mode forks it a process of its own).
    let redirecting = match redirect_http {
        Some(http_port) => {
            let redirect = crate::redirect::bind(&args.addr, http_port, args.backlog)?;
            let addrs = redirect.addrs();
            let forks = matches!(args.mode, crate::modes::Mode::Fork | crate::modes::Mode::Prefork);
            redirect.start(port, forks, &mut listeners)?;
            addrs
        }
        None => Vec::new(),
    };
    let server = Arc::new(server);
    let shutdown = Shutdown::install(args.grace)?;
    let forks = matches!(args.mode, crate::modes::Mode::Fork | crate::modes::Mode::Prefork);
    let watcher = if forks { Watcher::ForkingMaster } else { Watcher::Thread };
    let auth_fixed = matches!(args.mode, crate::modes::Mode::Event | crate::modes::Mode::Uring);
    crate::reload::arm(std::env::args_os().collect(), &server, port, forks, auth_fixed, rebuild);
    crate::signals::install(watcher, on_hup)?;
    let scheme = if server.tls.is_some() { "https" } else { "http" };
    let mut out = std::io::stdout().lock();
    // One line per listener; the first line's format is what scripts and tests parse.
    for listener in &listeners {
        let url = url_of(scheme, listener.addr);
        writeln!(out, "spidey listening on {url} (mode {})", args.mode.name())?;
    }
    // `::` and `0.0.0.0` are not addresses one can open: name the ones that reach them.
    for listener in listeners.iter().filter(|l| l.addr.ip().is_unspecified()) {
        let urls = reachable(listener.addr).iter().map(|a| url_of(scheme, *a)).collect::<Vec<_>>();
        if !urls.is_empty() {
            writeln!(out, "spidey reachable at {}", urls.join(" "))?;
        }
    }
    for addr in redirecting {
        writeln!(out, "spidey redirecting http://{addr} to https port {port}")?;
    }
    out.flush()?;
    drop(out);
    // After the startup lines, which scripts read first (through a terminal, as over
    // `ssh -t`, stderr and stdout are one stream).
    for warning in warnings {
        eprintln!("spidey: warning: {warning}");
    }
    let mut ctx = ModeContext {
        server,
        listeners,
        shutdown,
        workers: args.workers,
        max_conns: args.max_conns,
        pool_threads: args.pool_threads,
        fork_after_parse: args.fork_after_parse,
        account,
    };
    if let Some(bytes) = args.copy_loop {
        crate::modes::use_copy_loop(bytes); // before any worker starts
    }
    // Every file the flags name is open and every port bound but the event loops' own
    // siblings: nothing left needs root (`ModeContext::all_bound`).
    if !ModeContext::binds_more(args.mode) {
        ModeContext::all_bound(&mut ctx.account)?;
    }
    entry(ctx)
}

/// The server `args` describe, every part checked; CGI's port is set once bound.
fn server(args: &ServeArgs, features: ServeFeatures) -> anyhow::Result<Server> {
    if args.max_conns == 0 {
        return Err(ConfigError("--max-conns must be at least 1".into()).into());
    }
    if args.max_conns > crate::modes::MAX_SLOTS {
        return Err(ConfigError(format!("--max-conns must be at most {}", crate::modes::MAX_SLOTS)).into());
    }
    let limits = Limits {
        max_request_line: args.max_request_line,
        max_head: args.max_head,
        max_headers: usize::from(args.max_headers),
    };
    if limits.max_head < limits.max_request_line {
        return Err(ConfigError("--max-head must be at least --max-request-line".into()).into());
    }
    let defaults = CgiOptions::default();
    let enabled = args.cgi || !args.cgi_interpreter.is_empty();
    let max_cgi = args.max_cgi.map_or(DEFAULT_MAX_CGI, usize::from);
    let cgi = CgiOptions {
        enabled,
        interpreters: args.cgi_interpreter.clone(),
        timeout: args.cgi_timeout.unwrap_or(defaults.timeout),
        max_body: args.max_body,
        body_timeout: args.body_timeout.unwrap_or(defaults.body_timeout),
        body_min_rate: args.body_min_rate.unwrap_or(defaults.body_min_rate),
        port: 0,
        slots: match enabled {
            true => Some(CgiSlots::new(max_cgi).map_err(|e| ConfigError(e.to_string()))?),
            false => None,
        },
    };
    let mut handlers = Vec::new();
    for (prefix, path) in &args.handler {
        let mount = Mount::load(prefix, path)
            .map_err(|e| ConfigError(format!("handler {} ({}) {e}", prefix, path.display())))?;
        handlers.push(mount);
    }
    let options = SiteOptions {
        show_hidden: args.show_hidden,
        no_listing: args.no_listing,
        cgi,
        handlers,
        delay: args.delay,
        cpu_work: args.cpu_work,
        ..site_features(args, features)?
    };
    let site = Site::open(&args.root, options)
        .map_err(|e| ConfigError(format!("cannot serve {}: {e}", args.root.display())))?;
    let timeouts = Timeouts { head: args.head_timeout, idle: args.idle_timeout, send: args.send_timeout };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(crate::modes::tls::server_config(cert, key, args.http2)?),
        (None, None) => None,
        (Some(_), None) => return Err(ConfigError("--tls-cert needs --tls-key".into()).into()),
        (None, Some(_)) => return Err(ConfigError("--tls-key needs --tls-cert".into()).into()),
    };
    Ok(Server {
        site,
        limits,
        timeouts,
        max_body: args.max_body,
        max_requests: args.max_requests,
        quiet: args.quiet,
        tls,
        http2: args.http2,
        generation: 0,
    })
}

/// What SIGHUP reloads besides the access log: the certificate, then the configuration.
fn on_hup() {
    crate::modes::tls::reload_certificate();
    crate::reload::configuration();
}

/// The server a reload builds from the arguments read again: the same checks as at
/// startup, before anything is published.
fn rebuild(args: &ServeArgs) -> anyhow::Result<Server> {
    crate::flags::check(args)?;
    let features = crate::flags::serve_features(args)?;
    server(args, features)
}

/// `--max-cgi`'s default.
const DEFAULT_MAX_CGI: usize = 64;

/// The options of `--precompressed`, `--compress`, `--header`, `--cors`, `--basic-auth`
/// and `--cache-control`, checked, with the file-server flags [`serve_features`] checked.
///
/// [`serve_features`]: crate::flags::serve_features
fn site_features(args: &ServeArgs, features: ServeFeatures) -> Result<SiteOptions, ConfigError> {
    use crate::content::{access, compress, headers};
    let mut response_headers: Vec<_> =
        args.header.iter().map(|h| headers::parse_header(h)).collect::<Result<_, _>>().map_err(ConfigError)?;
    response_headers.extend(features.security_headers);
    let users = [args.basic_auth.as_slice(), &features.htpasswd].concat();
    let auth = access::BasicAuth::parse(&users).map_err(ConfigError)?;
    Ok(SiteOptions {
        compress: compress::CompressOptions { precompressed: args.precompressed, on_the_fly: args.compress },
        auth,
        index_names: features.index_names,
        fallback: features.fallback,
        error_pages: features.error_pages,
        health: args.health.as_deref().map(crate::content::endpoint_path),
        cors: args.cors.as_deref().map(access::Cors::parse).transpose().map_err(ConfigError)?,
        response_headers,
        cache_control: args
            .cache_control
            .as_deref()
            .map(headers::parse_cache_control)
            .transpose()
            .map_err(ConfigError)?,
        ..SiteOptions::default()
    })
}

/// Raises the soft RLIMIT_NOFILE to the hard limit: event-driven modes hold one
/// descriptor per connection, and the usual soft limit (1024) is far below `--max-conns`.
fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// Marks every fd this process inherited beyond 0, 1 and 2 close-on-exec, so that CGI
/// scripts see only their stdin, stdout and stderr even when whoever started Spidey leaked
/// descriptors into it (a jobserver pipe, a terminal multiplexer's socket).
fn cloexec_inherited_fds() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return };
    let fds: Vec<i32> =
        entries.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).filter(|&fd| fd > 2).collect();
    for fd in fds {
        // The fd may be the (already closed) one read_dir used: fcntl then fails, harmlessly.
        let _ = spidey_sys::set_cloexec(fd);
    }
}

/// `scheme://ADDR:PORT`, an IPv6 address in brackets.
fn url_of(scheme: &str, addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => format!("{scheme}://{a}"),
        SocketAddr::V6(a) => format!("{scheme}://[{}]:{}", a.ip(), a.port()),
    }
}

/// The addresses of this host's interfaces that a listener on the unspecified `addr`
/// (`0.0.0.0`, or `::`, which takes IPv4 too) answers on, loopback first; link-local IPv6
/// addresses are left out (they need a zone to be opened).
fn reachable(addr: SocketAddr) -> Vec<SocketAddr> {
    let Ok(interfaces) = if_addrs::get_if_addrs() else { return Vec::new() };
    let mut found: Vec<SocketAddr> = interfaces
        .iter()
        .map(|i| i.ip())
        .filter(|ip| addr.is_ipv6() || ip.is_ipv4())
        .filter(|ip| !matches!(ip, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80))
        .map(|ip| SocketAddr::new(ip, addr.port()))
        .collect();
    found.sort_by_key(|a| (!a.ip().is_loopback(), a.is_ipv6(), *a));
    found.dedup();
    found
}

/// `--user`'s account, checked before anything binds: this must be root, and the account
/// must exist.
fn account(args: &ServeArgs) -> Result<Option<spidey_sys::user::Account>, ConfigError> {
    let Some(name) = &args.user else { return Ok(None) };
    if spidey_sys::user::effective_uid() != 0 {
        return Err(ConfigError(format!(
            "--user {name}: only root can change to another user; start as root, or leave --user out"
        )));
    }
    match spidey_sys::user::lookup(name) {
        Ok(Some(account)) => Ok(Some(account)),
        Ok(None) => Err(ConfigError(format!("--user {name}: no such user"))),
        Err(e) => Err(ConfigError(format!("--user {name}: cannot look the user up: {e}"))),
    }
}

/// Whether the server runs programs of the site's: CGI scripts or handler libraries.
fn runs_programs(server: &Server) -> bool {
    let options = server.site.options();
    options.cgi.enabled || !options.handlers.is_empty()
}
