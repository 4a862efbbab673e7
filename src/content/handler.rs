//! In-process handlers: `--handler /prefix=lib.so` loads a shared library once at start
//! and calls its C entry point for every request under the prefix (the ABI is
//! `include/spidey_handler.h`; the loading and the call are in `spidey_sys::handler`).
//!
//! The handler runs on the thread that parsed the request and its whole body is built in
//! memory, then sent like any in-memory body. A non-zero return, an invalid header field
//! or an out-of-range status → 500. A Rust handler must catch its own panics at the
//! `extern "C"` boundary (examples/handlers/rust-page does, and returns an error code);
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

/// Parses `/prefix=path/to/lib.so` for `--handler`.
pub fn parse_flag(s: &str) -> Result<(String, std::path::PathBuf), String> {
    let (prefix, path) = s.split_once('=').ok_or_else(|| format!("invalid handler '{s}': expected /PREFIX=LIBRARY"))?;
    if !prefix.starts_with('/') || path.is_empty() {
        return Err(format!("invalid handler '{s}': expected /PREFIX=LIBRARY"));
    }
    let prefix = prefix.trim_end_matches('/');
    Ok((prefix.to_string(), path.into()))
}

impl Mount {
    /// Loads the library (once per process) and checks its ABI version.
    pub fn load(prefix: &str, path: &Path) -> Result<Mount, LoadError> {
        Ok(Mount { prefix: prefix.to_string(), lib: Arc::new(HandlerLib::load(path)?) })
    }

    fn covers(&self, path: &str) -> bool {
        match path.strip_prefix(self.prefix.as_str()) {
            Some(rest) => rest.is_empty() || rest.starts_with('/') || self.prefix.is_empty(),
            None => false,
        }
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
        let headers: Vec<(&[u8], &[u8])> = req.headers.iter().map(|h| (h.name.as_bytes(), h.value)).collect();
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
        let (rc, out) = self.lib.call(&call);
        let status = u16::try_from(out.status).ok().filter(|s| (200..=599).contains(s));
        let Some(status) = status.filter(|_| rc == 0 && !out.invalid) else {
            eprintln!("spidey: handler {} failed (return code {rc}, status {})", self.prefix, out.status);
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
    ["content-length", "transfer-encoding", "connection", "date", "server"].iter().any(|f| name.eq_ignore_ascii_case(f))
}

/// The mount serving `path`, the longest prefix first.
pub fn find<'m>(mounts: &'m [Mount], path: &str) -> Option<&'m Mount> {
    mounts.iter().filter(|m| m.covers(path)).max_by_key(|m| m.prefix.len())
}

#[cfg(test)]
mod tests {
    use super::parse_flag;

    #[test]
    fn handler_flag_table() {
        let cases = [
            ("/app=lib.so", Ok(("/app".to_string(), "lib.so".into()))),
            ("/app/=x/lib.so", Ok(("/app".to_string(), "x/lib.so".into()))),
            ("/=lib.so", Ok((String::new(), "lib.so".into()))),
            ("app=lib.so", Err(())),
            ("/app", Err(())),
            ("/app=", Err(())),
        ];
        for (input, want) in cases {
            assert_eq!(parse_flag(input).map_err(|_| ()), want, "{input}");
        }
    }
}
