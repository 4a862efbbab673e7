//! What every command's configuration shares: [`ConfigError`], the one-line mistake that
//! exits with code 2, and the [`duration`] syntax of time flags, so the command line,
//! `serve`, the modes, `bench` and `lab` all use it without importing each other. Also the
//! checks of `serve`'s file-server flags ([`serve_features`]), which run before binding.

use std::time::Duration;

/// A mistake in the command line or the environment it names: one line, exit code 2.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Parses `1.5s`, `500ms`, `2m` (humantime), or a bare number of seconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    if let Ok(secs) = s.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(s).map_err(|e| format!("invalid duration '{s}': {e}"))
}

/// The file-server flags of `serve`, checked: `--index`, `--fallback`, `--error-page`,
/// `--security-headers`, `--basic-auth-file`, `--redirect-http`.
#[derive(Debug, Default)]
pub struct ServeFeatures {
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
pub fn serve_features(args: &crate::cli::ServeArgs) -> Result<ServeFeatures, ConfigError> {
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
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read --basic-auth-file {}: {e}", path.display())))?;
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
