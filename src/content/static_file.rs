//! A regular file's response: validators, conditional GET, single ranges.

use super::{Body, Response};
use spidey_http::conditional::{etag, if_range_holds, not_modified};
use spidey_http::range::{self, RangeOutcome};
use spidey_http::{Method, Request, StatusCode};
use std::fs::{File, Metadata};
use std::time::SystemTime;

/// Answers GET or HEAD for an open regular file.
pub fn respond(req: &Request<'_, '_>, file: File, meta: &Metadata) -> Response {
    let len = meta.len();
    let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let tag = etag(mtime, len);
    let last_modified = spidey_http::date::format(mtime);
    if not_modified(req.header("if-none-match"), req.header("if-modified-since"), &tag, mtime) {
        let fields = vec![("ETag", tag), ("Last-Modified", last_modified)];
        return Response::new(StatusCode::NOT_MODIFIED, fields, Body::Empty);
    }
    let mut fields = vec![
        ("Content-Type", content_type(req.target.path).to_string()),
        ("Last-Modified", last_modified),
        ("Accept-Ranges", "bytes".to_string()),
    ];
    let wanted = match req.header("range") {
        Some(value) if req.method == Method::Get && if_range_holds(req.header("if-range"), &tag, mtime) => {
            range::resolve(value, len)
        }
        _ => RangeOutcome::Full,
    };
    fields.push(("ETag", tag));
    match wanted {
        RangeOutcome::Full => Response::new(StatusCode::OK, fields, Body::File { file, offset: 0, len }),
        RangeOutcome::Partial { start, end } => {
            fields.push(("Content-Range", format!("bytes {start}-{end}/{len}")));
            Response::new(StatusCode::PARTIAL_CONTENT, fields, Body::File { file, offset: start, len: end - start + 1 })
        }
        RangeOutcome::Unsatisfiable => {
            let mut r = Response::error(StatusCode::RANGE_NOT_SATISFIABLE, "The requested range lies beyond the file.");
            r.fields.push(("Content-Range", format!("bytes */{len}")));
            r
        }
    }
}

/// The media type for a path, by its extension; UTF-8 is declared for text.
pub fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit('/').next().and_then(|name| name.rsplit_once('.')).map(|(_, e)| e);
    let Some(ext) = ext else {
        return "application/octet-stream";
    };
    let known = [
        ("html", "text/html; charset=utf-8"),
        ("htm", "text/html; charset=utf-8"),
        ("txt", "text/plain; charset=utf-8"),
        ("css", "text/css; charset=utf-8"),
        ("js", "text/javascript; charset=utf-8"),
        ("json", "application/json"),
        ("md", "text/markdown; charset=utf-8"),
        ("csv", "text/csv; charset=utf-8"),
        ("xml", "application/xml"),
        ("svg", "image/svg+xml"),
    ];
    if let Some((_, t)) = known.iter().find(|(e, _)| e.eq_ignore_ascii_case(ext)) {
        return t;
    }
    mime_guess::from_ext(ext).first_raw().unwrap_or("application/octet-stream")
}

#[cfg(test)]
mod tests {
    use super::content_type;

    #[test]
    fn content_types_table() {
        let cases = [
            ("/index.html", "text/html; charset=utf-8"),
            ("/a/B.HTML", "text/html; charset=utf-8"),
            ("/x.png", "image/png"),
            ("/x.jpg", "image/jpeg"),
            ("/x.pdf", "application/pdf"),
            ("/x.wasm", "application/wasm"),
            ("/noext", "application/octet-stream"),
            ("/dir.d/noext", "application/octet-stream"),
            ("/x.unknownext", "application/octet-stream"),
        ];
        for (path, want) in cases {
            assert_eq!(content_type(path), want, "{path}");
        }
    }
}
