//! What every command's configuration shares: [`ConfigError`], the one-line mistake that
//! exits with code 2, and the [`duration`] syntax of time flags. A leaf: the command line,
//! `serve`, the modes, `bench` and `lab` all use it, and it imports none of them.

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

/// Reads the configuration file `path` named by `flag`, refusing one larger than `limit`
/// bytes (a device such as `/dev/zero` included: at most `limit` + 1 bytes are read).
pub fn read_bounded(flag: &str, path: &std::path::Path, limit: u64) -> Result<String, ConfigError> {
    use std::io::Read;
    let cannot = |e: std::io::Error| ConfigError(format!("cannot read {flag} {}: {e}", path.display()));
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(cannot)?.take(limit + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(ConfigError(format!("{flag} {}: larger than {limit} bytes", path.display())));
    }
    String::from_utf8(bytes).map_err(|_| ConfigError(format!("{flag} {}: not UTF-8 text", path.display())))
}
