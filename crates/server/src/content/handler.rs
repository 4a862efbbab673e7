//! In-process handlers: `--handler /prefix=lib.so` loads a shared library once at start
//! and calls its C entry point for every request under the prefix (the ABI is
//! `include/spidey_handler.h`; the loading and the call are in `spidey_sys::handler`).
//!
//! A mount is chosen on the decoded, normalised path ([`super::resolve::decode_path`]), the
//! same one static files and CGI scripts are found by, so no spelling of a path under the
//! prefix (`/%61pp/x`, `//app/x`, `/app%2fx`, `/./app/x`) reaches the files beneath it; the
//! handler itself is still given the path as sent.
//!
//! The handler runs on the thread that parsed the request and its whole body is built in
//! memory, then sent like any in-memory body. A non-zero return, an out-of-range status or
//! an invalid header field (a name that is not a token, a value with a control byte other
//! than HTAB: `spidey_http::field::is_field`) → 500, and a line on stderr. A Rust handler
//! must catch its own panics at the `extern "C"` boundary (examples/handlers/rust-page does, and returns an error code);
//! an unwind across it would abort the process.
//!
//! A crash in C code (SIGSEGV, abort) is not caught: it kills the process that ran it.
//! What that costs depends on the mode:
//! - `single`, `thread`, `pool`, `event`, `uring`: the whole server dies, every
//!   connection with it (one process holds them all).
//! - `fork`: only the child serving that connection dies; the parent reaps it and goes on.
//! - `prefork`: only that worker dies, with the connections it held; the parent reaps it
//!   and starts another.
//!
//! The request body is passed when it arrived whole with the head (bounded by the
//! receive buffer); a larger or chunked body is refused with 413, since the handler
//! call is synchronous and never waits on the client.

use super::{Body, Response, StatusCode};
use spidey_http::Request;
use spidey_sys::handler::{HandlerLib, HandlerRequest, LoadError};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

/// A handler library mounted at a URL prefix.
#[derive(Debug, Clone)]
pub struct Mount {
    /// `/app` (no trailing slash): serves `/app` and `/app/...`.
    pub prefix: String,
    lib: Arc<HandlerLib>,
}

/// Parses `/prefix=path/to/lib.so` for `--handler`. The prefix is normalised as request
/// paths are (decoded once, empty and `.` segments dropped, no trailing slash), so it is
/// compared with them like for like.
pub fn parse_flag(s: &str) -> Result<(String, std::path::PathBuf), String> {
    let invalid = || format!("invalid handler '{s}': expected /PREFIX=LIBRARY");
    let (prefix, path) = s.split_once('=').ok_or_else(invalid)?;
    if !prefix.starts_with('/') || path.is_empty() {
        return Err(invalid());
    }
    let decoded = super::resolve::decode_path(prefix).map_err(|_| invalid())?;
    let decoded = String::from_utf8(decoded.into_owned()).map_err(|_| invalid())?;
    let prefix = match decoded.trim_end_matches('/') {
        "." => String::new(),
        rest => format!("/{rest}"),
    };
    Ok((prefix, path.into()))
}

impl Mount {
    /// Loads the library (once per process) and checks its ABI version.
    pub fn load(prefix: &str, path: &Path) -> Result<Mount, LoadError> {
        Ok(Mount { prefix: prefix.to_string(), lib: Arc::new(HandlerLib::load(path)?) })
    }

    fn covers(&self, relative: &[u8]) -> bool {
        covers(&self.prefix, relative)
    }

    /// Calls the handler for `req`; `body` is the request body if it is whole.
    pub fn respond(&self, req: &Request<'_, '_>, peer: SocketAddr, body: &[u8]) -> Response {
        let whole = match req.body {
            spidey_http::BodyFraming::None => true,
            spidey_http::BodyFraming::Length(n) => n == body.len() as u64,
            spidey_http::BodyFraming::Chunked => false,
        };
        if !whole {
            let detail = "Request bodies for handlers must arrive whole with the head.";
            return Response::error(StatusCode::PAYLOAD_TOO_LARGE, detail);
        }
        let headers: Vec<(&[u8], &[u8])> = req.fields.iter().map(|h| (h.name.as_bytes(), h.value)).collect();
        let peer = peer.to_string();
        let call = HandlerRequest {
            method: req.method.as_str().as_bytes(),
            target: req.raw_target.as_bytes(),
            path: req.target.path.as_bytes(),
            query: req.target.query.unwrap_or("").as_bytes(),
            headers: &headers,
            body,
            peer: peer.as_bytes(),
        };
        crate::metrics::add(crate::metrics::Counter::HandlerCalls, 1);
        let (rc, out) = self.lib.call(&call, spidey_http::field::is_field);
        let status = u16::try_from(out.status).ok().filter(|s| (200..=599).contains(s));
        let Some(status) = status.filter(|_| rc == 0 && !out.invalid) else {
            let invalid = if out.invalid { ", an invalid header field or an oversized body" } else { "" };
            eprintln!("spidey: handler {} failed (return code {rc}, status {}{invalid})", self.prefix, out.status);
            return Response::error(StatusCode::INTERNAL_SERVER_ERROR, "The handler failed.");
        };
        let mut response = Response::new(StatusCode(status), Vec::new(), Body::Bytes(out.body));
        response.extra_fields = out
            .headers
            .into_iter()
            .map(|(n, v)| (String::from_utf8_lossy(&n).into_owned(), String::from_utf8_lossy(&v).into_owned()))
            .filter(|(n, _)| !is_framing(n))
            .collect();
        response
    }
}

/// Fields the server sets itself; a handler's copies are dropped.
fn is_framing(name: &str) -> bool {
    ["content-length", "transfer-encoding", "connection", "date", "server", "x-content-type-options"]
        .iter()
        .any(|f| name.eq_ignore_ascii_case(f))
}

/// Whether the mount at `prefix` serves `relative`, a decoded path relative to ROOT as
/// [`super::resolve::decode_path`] returns it (`.` for ROOT itself, `app/x`, `app/`).
fn covers(prefix: &str, relative: &[u8]) -> bool {
    let prefix = prefix.trim_start_matches('/').as_bytes();
    if prefix.is_empty() {
        return true;
    }
    match relative.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with(b"/"),
        None => false,
    }
}

/// The mount serving `relative` (a decoded path, see [`covers`]), the longest
/// prefix first.
pub fn find<'m>(mounts: &'m [Mount], relative: &[u8]) -> Option<&'m Mount> {
    mounts.iter().filter(|m| m.covers(relative)).max_by_key(|m| m.prefix.len())
}

#[cfg(test)]
mod tests {
    use super::{covers, parse_flag};

    #[test]
    fn covers_table() {
        let cases: &[(&str, &[u8], bool)] = &[
            ("/app", b"app", true),
            ("/app", b"app/", true),
            ("/app", b"app/x", true),
            ("/app", b"apple", false),
            ("/app", b".", false),
            ("", b".", true),
            ("", b"x/y", true),
            ("/a/b", b"a/b/c", true),
            ("/a/b", b"a/bc", false),
        ];
        for (prefix, relative, want) in cases {
            assert_eq!(covers(prefix, relative), *want, "{prefix} {relative:?}");
        }
    }

    #[test]
    fn handler_flag_table() {
        let cases = [
            ("/app=lib.so", Ok(("/app".to_string(), "lib.so".into()))),
            ("/app/=x/lib.so", Ok(("/app".to_string(), "x/lib.so".into()))),
            ("/=lib.so", Ok((String::new(), "lib.so".into()))),
            ("//=lib.so", Ok((String::new(), "lib.so".into()))),
            ("//a//b/=lib.so", Ok(("/a/b".to_string(), "lib.so".into()))),
            ("/%61pp=lib.so", Ok(("/app".to_string(), "lib.so".into()))),
            ("/a/../b=lib.so", Err(())),
            ("app=lib.so", Err(())),
            ("/app", Err(())),
            ("/app=", Err(())),
        ];
        for (input, want) in cases {
            assert_eq!(parse_flag(input).map_err(|_| ()), want, "{input}");
        }
    }
}
