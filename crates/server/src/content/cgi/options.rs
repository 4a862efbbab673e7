//! What CGI is configured with ([`CgiOptions`], from the command line): a leaf the rest of
//! CGI (`mod.rs`, `env.rs`, `intake.rs`, `run.rs`) reads.

use super::process::CgiSlots;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The CGI settings, from the command line.
#[derive(Debug, Clone)]
pub struct CgiOptions {
    /// `--cgi` (or a `--cgi-interpreter`) turns this on.
    pub enabled: bool,
    /// `--cgi-interpreter .php=/usr/bin/php-cgi`: extension (without its dot) → program.
    pub interpreters: Vec<(String, PathBuf)>,
    /// `--cgi-timeout`: how long a script may run before it is killed (504).
    pub timeout: Duration,
    /// The largest request body passed to a script (beyond: 413).
    pub max_body: u64,
    /// `--body-timeout`: the time a request body may take to arrive, plus one second per
    /// `body_min_rate` bytes received (beyond: 408, close).
    pub body_timeout: Duration,
    /// `--body-min-rate`, in bytes per second (0: the body must arrive within `body_timeout`).
    pub body_min_rate: u64,
    /// The port the server listens on (`SERVER_PORT`).
    pub port: u16,
    /// `--max-cgi`: the scripts that may run at once (beyond: 503); `None`: no cap.
    pub slots: Option<Arc<CgiSlots>>,
}

impl Default for CgiOptions {
    fn default() -> Self {
        CgiOptions {
            enabled: false,
            interpreters: Vec::new(),
            timeout: Duration::from_secs(30),
            max_body: 1 << 20,
            body_timeout: Duration::from_secs(10),
            body_min_rate: 500,
            port: 0,
            slots: None,
        }
    }
}

/// Parses `.EXT=PROGRAM` for `--cgi-interpreter`.
pub fn parse_interpreter(s: &str) -> Result<(String, PathBuf), String> {
    let (ext, program) =
        s.split_once('=').ok_or_else(|| format!("invalid interpreter '{s}': expected .EXT=PROGRAM"))?;
    let ext = ext.strip_prefix('.').unwrap_or(ext);
    if ext.is_empty() || ext.contains('/') || program.is_empty() {
        return Err(format!("invalid interpreter '{s}': expected .EXT=PROGRAM"));
    }
    Ok((ext.to_string(), PathBuf::from(program)))
}
