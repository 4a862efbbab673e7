//! The meta-variables a CGI script receives (RFC 3875 §4.1), built from scratch.
//!
//! Nothing of the server's own environment is passed on; `PATH` is a fixed safe value.
//! Request header fields become `HTTP_*` variables, except:
//! - `Proxy`, which would become `HTTP_PROXY` and redirect the script's own outgoing
//!   requests (httpoxy, CVE-2016-5385);
//! - names containing `_`, which would collide with the `-`→`_` spelling of another field
//!   and let a client forge one that a proxy in front had stripped;
//! - `Content-Type` and `Content-Length` (they have their own variables), and
//!   `Authorization` and `Proxy-Authorization` (credentials are the server's, or a
//!   proxy's, business, as in Apache: a script never sees them).
//!
//! `HTTP_HOST` is the host the request is for, as `SERVER_NAME` is: the authority of an
//! absolute-form target (`GET http://a.example/ HTTP/1.1`), whose `Host` field the server
//! ignores (RFC 9112 §3.2.2), else the `Host` field.

use super::options::CgiOptions;
use crate::software::SOFTWARE;
use spidey_http::{Request, Version};
use std::ffi::OsString;
use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::path::PathBuf;

/// A script found for a request path.
#[derive(Debug)]
pub(crate) struct Script {
    /// The script's real path (what `/proc/self/fd` says the opened file is).
    pub filename: PathBuf,
    pub interpreter: Option<PathBuf>,
    /// The file that was checked beneath ROOT: what runs.
    pub file: File,
    /// The URL path of the script, as sent (`/cgi-bin/env.sh`).
    pub script_name: String,
    /// The decoded rest of the path (`/a/b`), or empty.
    pub path_info: String,
}

/// The `PATH` every script gets.
pub const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The environment of `script` answering `req`; `CONTENT_LENGTH` is added when the body
/// has been read (see [`super::run`]).
pub(crate) fn build(
    req: &Request<'_, '_>,
    script: &Script,
    peer: SocketAddr,
    opts: &CgiOptions,
    document_root: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::with_capacity(24 + req.fields.len());
    let mut set = |name: &str, value: OsString| env.push((name.into(), value));
    let server_name = req.host.map(host_name).filter(|h| !h.is_empty()).unwrap_or("localhost");
    let protocol = match req.version {
        Version::Http10 => "HTTP/1.0",
        Version::Http11 => "HTTP/1.1",
        Version::Http2 => "HTTP/2.0",
    };
    set("GATEWAY_INTERFACE", "CGI/1.1".into());
    set("SERVER_PROTOCOL", protocol.into());
    set("SERVER_SOFTWARE", SOFTWARE.into());
    set("SERVER_NAME", server_name.into());
    set("SERVER_PORT", opts.port.to_string().into());
    set("REQUEST_METHOD", req.method.as_str().into());
    set("REQUEST_URI", req.raw_target.into());
    set("SCRIPT_NAME", script.script_name.clone().into());
    set("SCRIPT_FILENAME", script.filename.clone().into());
    set("DOCUMENT_ROOT", document_root.into());
    set("QUERY_STRING", req.target.query.unwrap_or("").into());
    set("REMOTE_ADDR", peer.ip().to_canonical().to_string().into()); // `::1`, no brackets
    set("REMOTE_PORT", peer.port().to_string().into());
    set("REDIRECT_STATUS", "200".into());
    set("PATH", SAFE_PATH.into());
    if !script.path_info.is_empty() {
        set("PATH_INFO", script.path_info.clone().into());
        let translated = document_root.join(script.path_info.trim_start_matches('/'));
        set("PATH_TRANSLATED", translated.into());
    }
    if let Some(ct) = req.header("content-type") {
        set("CONTENT_TYPE", OsString::from_vec(ct.to_vec()));
    }
    for (name, value) in http_variables(req) {
        env.push((name.into(), OsString::from_vec(value)));
    }
    env
}

/// `Host: example.com:8080` → `example.com`; `[::1]:80` → `[::1]`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.split(':').next().unwrap_or(host)
}

/// The request's header fields as `HTTP_*` variables; repeated fields are joined with `, `.
/// `HTTP_HOST` is the request's host ([`Request::host`]: an absolute-form target's
/// authority wins over the `Host` field), so it always agrees with `SERVER_NAME`.
pub(crate) fn http_variables(req: &Request<'_, '_>) -> Vec<(String, Vec<u8>)> {
    let mut vars: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(host) = req.host {
        vars.push(("HTTP_HOST".to_string(), host.as_bytes().to_vec()));
    }
    for h in req.fields.iter() {
        if h.name.eq_ignore_ascii_case("host") {
            continue;
        }
        let Some(name) = variable_name(h.name) else { continue };
        match vars.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => {
                v.extend_from_slice(b", ");
                v.extend_from_slice(h.value);
            }
            None => vars.push((name, h.value.to_vec())),
        }
    }
    vars
}

/// Fields that never become variables (lowercase); see the module documentation.
const NEVER_PASSED: [&str; 5] = ["proxy", "content-type", "content-length", "authorization", "proxy-authorization"];

/// `User-Agent` → `HTTP_USER_AGENT`, or `None` for fields that are never passed.
fn variable_name(field: &str) -> Option<String> {
    let lower = field.to_ascii_lowercase();
    if field.contains('_') || NEVER_PASSED.contains(&lower.as_str()) {
        return None;
    }
    Some(format!("HTTP_{}", field.to_ascii_uppercase().replace('-', "_")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names_table() {
        let cases = [
            ("User-Agent", Some("HTTP_USER_AGENT")),
            ("accept", Some("HTTP_ACCEPT")),
            ("X-Custom-Thing", Some("HTTP_X_CUSTOM_THING")),
            ("Proxy", None),
            ("proxy", None),
            ("X_Forwarded_For", None),
            ("Content-Type", None),
            ("Content-Length", None),
            ("Authorization", None),
            ("Proxy-Authorization", None),
            ("proxy-authorization", None),
        ];
        for (field, want) in cases {
            assert_eq!(variable_name(field).as_deref(), want, "{field}");
        }
    }

    #[test]
    fn host_names_table() {
        let cases = [
            ("example.com", "example.com"),
            ("example.com:8080", "example.com"),
            ("[::1]:80", "[::1]"),
            ("[::1]", "[::1]"),
        ];
        for (host, want) in cases {
            assert_eq!(host_name(host), want, "{host}");
        }
    }
}
