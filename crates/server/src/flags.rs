//! `spidey serve`'s flags checked before anything binds, each mistake one line (exit code
//! 2): flags that do not apply to the chosen mode or to the other flags given are refused
//! rather than silently ignored ([`check`]), and the file-server flags are parsed, with the
//! files they name read ([`serve_features`]).

use crate::args::ServeArgs;
use crate::modes::Mode;
use spidey_config::ConfigError;

/// The first flag of `args` that does not apply, as a configuration error.
pub fn check(args: &ServeArgs) -> Result<(), ConfigError> {
    let mode = args.mode;
    if let Some(workers) = args.workers {
        if let Some(why) = no_workers(mode) {
            return Err(ConfigError(format!("--workers does not apply to mode {}: {why}", mode.name())));
        }
        let adapts = matches!(mode, Mode::Pool | Mode::Prefork);
        if workers.min != workers.max && !adapts {
            let why = format!(
                "--workers takes a number with mode {}, not a range {}-{} (only pool and prefork adapt)",
                mode.name(),
                workers.min,
                workers.max
            );
            return Err(ConfigError(why));
        }
    }
    if args.pool_threads.is_some() && mode != Mode::Hybrid {
        return Err(ConfigError(format!("--pool-threads applies to mode hybrid only, not {}", mode.name())));
    }
    let cgi = args.cgi || !args.cgi_interpreter.is_empty();
    let cgi_flags = [
        ("--max-cgi", args.max_cgi.is_some()),
        ("--cgi-timeout", args.cgi_timeout.is_some()),
        ("--body-timeout", args.body_timeout.is_some()),
        ("--body-min-rate", args.body_min_rate.is_some()),
    ];
    if let Some((flag, _)) = cgi_flags.iter().find(|(_, given)| *given && !cgi) {
        return Err(ConfigError(format!("{flag} applies to CGI scripts, which run only with --cgi")));
    }
    if args.redirect_http.is_some() && args.tls_cert.is_none() {
        return Err(ConfigError("--redirect-http needs --tls-cert (it redirects to HTTPS)".into()));
    }
    if args.root.is_file() {
        let directory_flags = [
            ("--index", !args.index.is_empty()),
            ("--fallback", args.fallback.is_some()),
            ("--error-page", !args.error_page.is_empty()),
            ("--no-listing", args.no_listing),
        ];
        if let Some((flag, _)) = directory_flags.iter().find(|(_, given)| *given) {
            let root = args.root.display();
            return Err(ConfigError(format!("{flag} needs a directory to serve; {root} is a file")));
        }
    }
    seed_choices(args)
}

/// Refuses a seed-faithful option (`--fork-after-parse`, `--copy-loop`) where it does not
/// apply.
fn seed_choices(args: &ServeArgs) -> Result<(), ConfigError> {
    let tls = args.tls_cert.is_some();
    let why = if args.fork_after_parse && args.mode != Mode::Fork {
        format!("--fork-after-parse applies to --mode fork only, not {}", args.mode.name())
    } else if args.fork_after_parse && tls {
        "--fork-after-parse is plain HTTP only (the parent would have to run each TLS handshake)".into()
    } else if args.copy_loop.is_some() && tls {
        "--copy-loop is plain HTTP only (over TLS file bodies are always read and encrypted a record at a time)".into()
    } else {
        return Ok(());
    };
    Err(ConfigError(why))
}

/// Why `mode` has no workers to count, if it has none.
fn no_workers(mode: Mode) -> Option<&'static str> {
    match mode {
        Mode::Single => Some("it serves one connection at a time"),
        Mode::Fork => Some("it forks one process per connection (bounded by --max-conns)"),
        Mode::Thread => Some("it starts one thread per connection (bounded by --max-conns)"),
        _ => None,
    }
}

/// The file-server flags of `serve`, checked: `--index`, `--fallback`, `--error-page`,
/// `--security-headers`, `--basic-auth-file`, `--redirect-http`.
#[derive(Debug, Default)]
pub(crate) struct ServeFeatures {
    /// Decoded index names, in order (empty: the defaults).
    pub index_names: Vec<Vec<u8>>,
    /// The fallback file, decoded, relative to ROOT.
    pub fallback: Option<Vec<u8>>,
    /// Statuses and their pages, decoded, relative to ROOT.
    pub error_pages: Vec<(u16, Vec<u8>)>,
    /// The fields `--security-headers` adds (those no `--header` names).
    pub security_headers: Vec<(String, String)>,
    /// The `user:HASH` lines of `--basic-auth-file`.
    pub htpasswd: Vec<String>,
    /// `--redirect-http`: the plain-HTTP port that redirects to HTTPS.
    pub redirect_http: Option<u16>,
}

/// Checks the file-server flags of `args`, reading the files they name (ROOT's pages, the
/// htpasswd file) but binding nothing: one line per mistake.
pub(crate) fn serve_features(args: &ServeArgs) -> Result<ServeFeatures, ConfigError> {
    use crate::content::{access, serving};
    use std::os::unix::ffi::OsStrExt;
    // A page must be a regular file in ROOT now (requests look it up again, beneath ROOT).
    let page_exists = |flag: &str, relative: &[u8]| {
        let path = args.root.join(std::ffi::OsStr::from_bytes(relative));
        match path.is_file() {
            true => Ok(()),
            false => Err(ConfigError(format!("{flag}: {} is not a file", path.display()))),
        }
    };
    let mut features = ServeFeatures::default();
    for name in &args.index {
        features.index_names.push(serving::parse_index(name).map_err(ConfigError)?);
    }
    if let Some(value) = &args.fallback {
        let page = serving::parse_page_path("--fallback", value).map_err(ConfigError)?;
        page_exists("--fallback", &page)?;
        features.fallback = Some(page);
    }
    for value in &args.error_page {
        let (status, page) = serving::parse_error_page(value).map_err(ConfigError)?;
        page_exists("--error-page", &page)?;
        if features.error_pages.iter().any(|(s, _)| *s == status) {
            return Err(ConfigError(format!("--error-page: status {status} is given twice")));
        }
        features.error_pages.push((status, page));
    }
    if args.security_headers {
        let tls = args.tls_cert.is_some();
        let fields = [
            (true, "X-Frame-Options", "DENY"),
            (true, "Referrer-Policy", "no-referrer"),
            (tls, "Strict-Transport-Security", "max-age=31536000"),
        ];
        let named = |name: &str| {
            args.header.iter().any(|h| h.split_once(':').is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case(name)))
        };
        features.security_headers = fields
            .iter()
            .filter(|(on, name, _)| *on && !named(name))
            .map(|(_, name, value)| (name.to_string(), value.to_string()))
            .collect();
    }
    if let Some(path) = &args.basic_auth_file {
        // Every user's name is compared on each uncached check (in constant time), so the
        // file's size bounds that work too.
        let text = spidey_config::read_bounded("--basic-auth-file", path, 4 << 20)?;
        features.htpasswd = access::parse_htpasswd(&path.display().to_string(), &text).map_err(ConfigError)?;
    }
    if let Some(port) = args.redirect_http {
        if port != 0 && Some(port) == args.port {
            return Err(ConfigError(format!("--redirect-http {port} is also --port")));
        }
        features.redirect_http = Some(port);
    }
    Ok(features)
}
