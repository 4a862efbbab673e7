//! A regular file's response: validators, conditional GET, single ranges, and the
//! representation [`compress`] negotiated (its ETag carries the coding).
//!
//! The media type is the opened file's: `name` is the decoded path that was opened (or
//! `index.html` for a directory's index), never the raw request path, so `/dir/` served
//! from its index is HTML and `/a%2Ehtml` is typed by the `.html` it decodes to. A
//! symlink is typed by its own name, as nginx and Apache do.

use super::compress::{self, Choice, Encoding};
use super::{encoded_cache, file_cache, Body, Response};
use spidey_http::conditional::{etag, if_range_holds, not_modified};
use spidey_http::range::{self, RangeOutcome};
use spidey_http::{Method, Request, StatusCode};
use std::fs::{File, Metadata};
use std::sync::Arc;
use std::time::SystemTime;

/// The file to answer with.
pub struct Source<'a> {
    pub file: Arc<File>,
    /// Its bytes, when the open-file cache holds them for the version `meta` describes
    /// (small files, the identity representation): sent from memory, head and body in one
    /// write.
    pub small: Option<Arc<[u8]>>,
    /// Where its on-the-fly encodings are kept ([`encoded_cache`]): the root's identity
    /// and the decoded path.
    pub kept_as: (u64, &'a [u8]),
}

/// Answers GET or HEAD for an open regular file of type `content_type`, sending the
/// representation `choice` negotiated (the file, a precompressed sibling, or the file
/// encoded now). `cache_control` is `--cache-control`.
pub fn respond(
    req: &Request<'_, '_>,
    source: Source<'_>,
    meta: &Metadata,
    content_type: &'static str,
    choice: Choice,
    cache_control: Option<&str>,
) -> Response {
    // `on_the_fly`: the coding to apply now (never for a range request: see `compress::choose`).
    // `small`: the identity representation's bytes in memory, if the cache had them.
    let Source { file, small, kept_as: (root, path) } = source;
    let (file, meta, coding, on_the_fly, small) = match choice.encoding {
        Encoding::Identity => (file, meta.clone(), None, None, small),
        Encoding::Sibling { coding, file, meta } => (file, meta, Some(coding), None, None),
        Encoding::OnTheFly(coding) => (file, meta.clone(), Some(coding), Some(coding), None),
    };
    let body = |offset: u64, len: u64| match &small {
        Some(bytes) => Body::Shared(Arc::clone(bytes), offset as usize..(offset + len) as usize),
        None => Body::File { file: Arc::clone(&file), offset, len },
    };
    let len = meta.len();
    let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let validators = || (compress::tag_with(etag(mtime, len), coding).into(), spidey_http::date::format(mtime).into());
    // The file's own: formatted once per cached version (a sibling's are its own file's).
    let (tag, last_modified) = match coding {
        None => file_cache::validators(root, path, &meta, validators),
        Some(_) => validators(),
    };
    let mut fields = Vec::with_capacity(8);
    if choice.vary {
        fields.push(("Vary", "Accept-Encoding".into()));
    }
    if let Some(value) = cache_control {
        fields.push(("Cache-Control", value.to_string().into()));
    }
    if not_modified(req.header("if-none-match"), req.header("if-modified-since"), &tag, mtime, crate::clock::wall) {
        fields.extend([("ETag", tag.into()), ("Last-Modified", last_modified.into())]);
        return Response::new(StatusCode::NOT_MODIFIED, fields, Body::Empty);
    }
    fields.push(("Content-Type", content_type.into()));
    if let Some(coding) = coding {
        fields.push(("Content-Encoding", coding.token().into()));
    }
    fields.push(("Last-Modified", last_modified.into()));
    if let Some(coding) = on_the_fly {
        fields.push(("ETag", tag.into()));
        if req.method == Method::Head {
            // A HEAD never encodes: the kept encoding's length, or no length at all.
            return match encoded_cache::get(root, path, coding, &meta) {
                Some(bytes) => Response::new(StatusCode::OK, fields, Body::Shared(Arc::clone(&bytes), 0..bytes.len())),
                None => Response { length_unknown: true, ..Response::new(StatusCode::OK, fields, Body::Empty) },
            };
        }
        return match encoded_cache::get_or_encode(root, path, coding, &file, &meta) {
            Ok(bytes) => Response::new(StatusCode::OK, fields, Body::Shared(Arc::clone(&bytes), 0..bytes.len())),
            Err(_) => Response::error(StatusCode::INTERNAL_SERVER_ERROR, "The server failed to read this file."),
        };
    }
    fields.push(("Accept-Ranges", "bytes".into()));
    let wanted = match req.header("range") {
        Some(value)
            if req.method == Method::Get && if_range_holds(req.header("if-range"), &tag, mtime, crate::clock::wall) =>
        {
            range::resolve(value, len)
        }
        _ => RangeOutcome::Full,
    };
    fields.push(("ETag", tag.into()));
    match wanted {
        RangeOutcome::Full => Response::new(StatusCode::OK, fields, body(0, len)),
        RangeOutcome::Partial { start, end } => {
            fields.push(("Content-Range", format!("bytes {start}-{end}/{len}").into()));
            Response::new(StatusCode::PARTIAL_CONTENT, fields, body(start, end - start + 1))
        }
        RangeOutcome::Unsatisfiable => {
            let mut r = Response::error(StatusCode::RANGE_NOT_SATISFIABLE, "The requested range lies beyond the file.");
            r.fields.push(("Content-Range", format!("bytes */{len}").into()));
            r
        }
    }
}

/// The media type for a (decoded) path, by the extension of its last segment; UTF-8 is
/// declared for text.
pub fn content_type(path: &[u8]) -> &'static str {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    let ext = name.iter().rposition(|&b| b == b'.').map(|dot| &name[dot + 1..]);
    let Some(ext) = ext.and_then(|e| std::str::from_utf8(e).ok()) else {
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
    guessed(ext)
}

/// How many extensions' media types a thread keeps ([`guessed`]).
const GUESSES: usize = 8;

/// An extension lower-cased, as [`guessed`] keeps it: its bytes and their length.
type ExtKey = ([u8; 16], usize);

/// What a thread keeps for [`guessed`]: extensions and their media types, and the slot the
/// next one takes.
type Guesses = ([Option<(ExtKey, &'static str)>; GUESSES], usize);

/// `mime_guess`'s media type for `ext`, kept per thread for the last [`GUESSES`]
/// extensions asked about. Its lookup is a binary search of some 1,500 extensions, each
/// comparison without case: about 5% of an HTTP/2 response's CPU at 32 streams per
/// connection, for an answer a site asks again and again of a few extensions.
fn guessed(ext: &str) -> &'static str {
    fn lookup(ext: &str) -> &'static str {
        mime_guess::from_ext(ext).first_raw().unwrap_or("application/octet-stream")
    }
    thread_local! {
        static KEPT: std::cell::RefCell<Guesses> = const { std::cell::RefCell::new(([None; GUESSES], 0)) };
    }
    if ext.len() > 16 {
        return lookup(ext);
    }
    let mut key: ExtKey = ([0; 16], ext.len());
    key.0[..ext.len()].copy_from_slice(ext.as_bytes());
    key.0.make_ascii_lowercase();
    KEPT.with(|kept| {
        let (entries, next) = &mut *kept.borrow_mut();
        if let Some((_, media)) = entries.iter().flatten().find(|(k, _)| *k == key) {
            return *media;
        }
        let media = lookup(ext);
        entries[*next] = Some((key, media));
        *next = (*next + 1) % GUESSES;
        media
    })
}

#[cfg(test)]
mod tests {
    use super::content_type;

    #[test]
    fn content_types_table() {
        let cases: [(&[u8], &str); 11] = [
            (b"index.html", "text/html; charset=utf-8"),
            (b"a/B.HTML", "text/html; charset=utf-8"),
            (b"x.png", "image/png"),
            (b"x.jpg", "image/jpeg"),
            (b"x.pdf", "application/pdf"),
            (b"x.wasm", "application/wasm"),
            (b"noext", "application/octet-stream"),
            (b"dir.d/noext", "application/octet-stream"),
            (b"x.unknownext", "application/octet-stream"),
            (b"x.\xff", "application/octet-stream"),
            (b"caf\xc3\xa9.txt", "text/plain; charset=utf-8"),
        ];
        // Twice, and then after more extensions than a thread keeps: a kept answer is the
        // lookup's own, whatever the case of the extension it was kept for.
        for _ in 0..2 {
            for (path, want) in cases {
                assert_eq!(content_type(path), want, "{:?}", String::from_utf8_lossy(path));
            }
        }
        for (path, want) in [
            (&b"y.PNG"[..], "image/png"),
            (b"y.Png", "image/png"),
            (b"y.averylongextension17", "application/octet-stream"),
        ] {
            assert_eq!(content_type(path), want, "{:?}", String::from_utf8_lossy(path));
        }
    }
}
