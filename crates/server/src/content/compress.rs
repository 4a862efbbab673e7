//! Compression: precompressed siblings and on-the-fly encoding, chosen by `Accept-Encoding`.
//!
//! **Siblings** (`--precompressed`): for `app.js`, the files `app.js.br`, `app.js.zst` and
//! `app.js.gz` are looked up beneath ROOT with the very resolution the file had
//! ([`Root::resolve_decoded`]: `RESOLVE_BENEATH`, hidden-segment rule, regular files only),
//! so a sibling that is a symlink out of ROOT, a directory or a FIFO is ignored. A sibling
//! older than its file is stale and ignored too: `gzip -k`, `brotli` and `zstd` all give
//! their output the input's modification time, so a fresh sibling is never older, and an
//! edited file is never shadowed by the compressed copy of its previous version. A sibling
//! is a file like any other: its own validators (with the coding appended to the ETag) and
//! single ranges over its encoded bytes.
//!
//! **On the fly** (`--compress`): a file of a compressible type (text, JSON, JavaScript,
//! XML, SVG, WebAssembly) from [`MIN_SIZE`] to [`MAX_SIZE`] bytes is read whole and encoded
//! in memory, once per version and coding: the encoding is kept in the process's
//! [`encoded_cache`](super::encoded_cache) and shared by every response that sends it
//! (`Body::Shared`, one copy however many clients read it slowly). A larger file is sent
//! as it is, unless a precompressed sibling serves it. Listings from [`MIN_SIZE`] to
//! [`MAX_LISTING`] bytes are encoded per request (they are not kept: they change); larger
//! ones go as they are. Never for a range request (its 206 is the identity bytes), never
//! for types already compressed (images, audio, video, archives, fonts in WOFF).
//!
//! **A HEAD never encodes.** It takes its `Content-Length` from the kept encoding when
//! there is one; otherwise it says the same fields as the GET (`Content-Encoding`, `ETag`,
//! `Vary`) but no `Content-Length`, which RFC 9110 §9.3.2 allows for fields known only
//! while generating the content. So a request's cost is bounded: at most one encoding of at
//! most [`MAX_SIZE`] bytes (brotli 5 takes about 0.1 s a MiB, gzip 6 about half that),
//! made once per file version and coding while the cache holds it. `hybrid` answers a GET
//! whose encoding is not kept on its worker pool, off the event loop
//! ([`Site::is_heavy`](super::Site::is_heavy)); `event` and `uring` encode on the loop,
//! within that bound. Levels: gzip 6 (flate2 on zlib-rs), zstd 3, brotli 5 (fast enough per
//! request; precompressed siblings are where the slow, high levels belong).
//!
//! Either way every response for a file that has a sibling or could be encoded on the fly
//! says `Vary: Accept-Encoding`, identity ones included, so a cache never hands gzip to a
//! client that did not ask for it.

use super::resolve::{Resolved, Root};
use super::FieldValue;
use spidey_http::negotiate::{choose_coding, Coding};
use spidey_http::{Method, Request};
use std::fs::{File, Metadata};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// Smaller bodies are sent as they are: encoding them saves less than its own overhead.
pub const MIN_SIZE: u64 = 1024;
/// On-the-fly encoding reads the whole file into memory and encodes it once per version:
/// larger files are sent as they are (or from a precompressed sibling).
pub const MAX_SIZE: u64 = 1 << 20;
/// Listings are encoded per request: larger ones are sent as they are.
pub const MAX_LISTING: usize = 256 << 10;

/// What the command line enabled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompressOptions {
    /// `--precompressed`: serve `.br`/`.zst`/`.gz` siblings.
    pub precompressed: bool,
    /// `--compress`: encode compressible files and listings on the fly.
    pub on_the_fly: bool,
}

/// The representation a file response sends.
#[derive(Debug)]
pub enum Encoding {
    /// The file's own bytes.
    Identity,
    /// A precompressed sibling's bytes.
    Sibling { coding: Coding, file: Arc<File>, meta: Metadata },
    /// The file's bytes, encoded on the fly (or kept from an earlier encoding).
    OnTheFly(Coding),
}

/// The negotiated representation and whether the response must say `Vary: Accept-Encoding`.
#[derive(Debug)]
pub struct Choice {
    pub encoding: Encoding,
    pub vary: bool,
}

/// Chooses what to send for the file at `relative` (decoded, beneath ROOT) of type
/// `content_type`, whose metadata is `meta`.
pub fn choose(
    root: &Root,
    opts: CompressOptions,
    req: &Request<'_, '_>,
    relative: &[u8],
    meta: &Metadata,
    content_type: &str,
) -> Choice {
    let fly = opts.on_the_fly && compressible(content_type, relative) && (MIN_SIZE..=MAX_SIZE).contains(&meta.len());
    if !opts.precompressed && !fly {
        return Choice { encoding: Encoding::Identity, vary: false };
    }
    let mut siblings: [Option<(Arc<File>, Metadata)>; 3] = [None, None, None];
    if opts.precompressed {
        for (slot, coding) in siblings.iter_mut().zip(Coding::PREFERENCE) {
            *slot = sibling(root, relative, coding, meta);
        }
    }
    let vary = fly || siblings.iter().any(Option::is_some);
    // A sibling's encoded bytes can be ranged; an on-the-fly encoding is never a 206.
    let ranged = req.method == Method::Get && req.header("range").is_some();
    let coding = choose_coding(req.header("accept-encoding"), |c| siblings[index(c)].is_some() || (fly && !ranged));
    let encoding = match coding {
        None => Encoding::Identity,
        Some(coding) => match siblings[index(coding)].take() {
            Some((file, meta)) => Encoding::Sibling { coding, file, meta },
            None => Encoding::OnTheFly(coding),
        },
    };
    Choice { encoding, vary }
}

fn index(coding: Coding) -> usize {
    Coding::PREFERENCE.iter().position(|&c| c == coding).unwrap_or(0)
}

/// `relative` + the coding's extension, if that is a regular file beneath ROOT, reachable
/// as the file itself is, and not older than the file.
fn sibling(root: &Root, relative: &[u8], coding: Coding, meta: &Metadata) -> Option<(Arc<File>, Metadata)> {
    let mut path = relative.to_vec();
    path.extend_from_slice(coding.extension().as_bytes());
    match root.resolve_decoded(&path) {
        // A sibling goes out from disk, so its metadata must be checked, not trusted.
        Ok(Resolved::File(file, sib)) => {
            let sib = root.checked_for_disk(&path, &file, sib)?;
            (sib.modified().ok()? >= meta.modified().ok()?).then_some((file, sib))
        }
        _ => None,
    }
}

/// Whether a type is worth encoding: text and the structured text formats. Everything else
/// (images, audio, video, archives, PDF, WOFF fonts, unknown binaries) is either compressed
/// already or unknown.
pub fn compressible(content_type: &str, name: &[u8]) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    if name.ends_with(b".svgz") {
        return false;
    }
    mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/javascript"
                | "application/xml"
                | "application/wasm"
                | "application/x-ndjson"
                | "image/svg+xml"
                | "image/x-icon"
                | "image/vnd.microsoft.icon"
                | "font/ttf"
                | "font/otf"
        )
}

/// Encodes `data` with `coding`, in memory.
pub fn encode(coding: Coding, data: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(data.len() / 3 + 64);
    match coding {
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::new(6));
            e.write_all(data)?;
            out = e.finish()?;
        }
        Coding::Zstd => out = zstd::bulk::compress(data, 3)?,
        Coding::Br => {
            let mut e = brotli::CompressorWriter::new(out, 16 * 1024, 5, 22);
            e.write_all(data)?;
            e.flush()?;
            out = e.into_inner();
        }
    }
    Ok(out)
}

/// Reads a whole file (at most [`MAX_SIZE`] bytes) and encodes it. The reads are
/// positional (pread): the descriptor is shared with the open-file cache
/// (`file_cache.rs`), so reading would move the offset every later user starts from.
pub fn encode_file(coding: Coding, file: &File) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let mut at = 0u64;
    while at < MAX_SIZE {
        let want = chunk.len().min((MAX_SIZE - at) as usize);
        match file.read_at(&mut chunk[..want], at) {
            Ok(0) => break,
            Ok(n) => {
                data.extend_from_slice(&chunk[..n]);
                at += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    encode(coding, &data)
}

/// Encodes an in-memory body (a listing) when `--compress` is on, the client accepts a
/// coding and the body is from [`MIN_SIZE`] to [`MAX_LISTING`] bytes. Returns the body to
/// send and the coding.
pub fn encode_body(opts: CompressOptions, req: &Request<'_, '_>, body: Vec<u8>) -> (Vec<u8>, Option<Coding>) {
    if !opts.on_the_fly || (body.len() as u64) < MIN_SIZE || body.len() > MAX_LISTING {
        return (body, None);
    }
    match choose_coding(req.header("accept-encoding"), |_| true) {
        Some(coding) => match encode(coding, &body) {
            Ok(encoded) => (encoded, Some(coding)),
            Err(_) => (body, None),
        },
        None => (body, None),
    }
}

/// A representation's ETag: the file's tag with `-CODING` inside the quotes, so each
/// encoding of one file has its own strong validator.
pub fn tag_with(etag: String, coding: Option<Coding>) -> String {
    match coding {
        Some(c) => format!("{}-{}\"", etag.trim_end_matches('"'), c.token()),
        None => etag,
    }
}

/// Adds `token` to the response's `Vary` field, creating it if needed.
pub fn add_vary(fields: &mut Vec<(&'static str, FieldValue)>, token: &str) {
    match fields.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("vary")) {
        Some((_, v)) if v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)) => {}
        Some((_, v)) => *v = format!("{}, {token}", &**v).into(),
        None => fields.push(("Vary", token.to_string().into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn compressible_table() {
        let cases: &[(&str, &[u8], bool)] = &[
            ("text/html; charset=utf-8", b"a.html", true),
            ("text/css; charset=utf-8", b"a.css", true),
            ("application/json", b"a.json", true),
            ("application/ld+json", b"a.jsonld", true),
            ("image/svg+xml", b"a.svg", true),
            ("image/svg+xml", b"a.svgz", false),
            ("application/wasm", b"a.wasm", true),
            ("image/png", b"a.png", false),
            ("image/jpeg", b"a.jpg", false),
            ("application/gzip", b"a.gz", false),
            ("application/zip", b"a.zip", false),
            ("video/mp4", b"a.mp4", false),
            ("font/woff2", b"a.woff2", false),
            ("application/octet-stream", b"a", false),
        ];
        for (ct, name, want) in cases {
            assert_eq!(compressible(ct, name), *want, "{ct}");
        }
    }

    #[test]
    fn every_coding_round_trips() {
        let data: Vec<u8> = (0..20_000u32).flat_map(|i| format!("line {i} of text\n").into_bytes()).collect();
        for coding in Coding::PREFERENCE {
            let enc = encode(coding, &data).unwrap();
            assert!(enc.len() < data.len() / 4, "{coding:?} compressed to {}", enc.len());
            let mut back = Vec::new();
            match coding {
                Coding::Gzip => flate2::read::GzDecoder::new(&enc[..]).read_to_end(&mut back).unwrap(),
                Coding::Zstd => zstd::stream::read::Decoder::new(&enc[..]).unwrap().read_to_end(&mut back).unwrap(),
                Coding::Br => brotli::Decompressor::new(&enc[..], 4096).read_to_end(&mut back).unwrap(),
            };
            assert_eq!(back, data, "{coding:?}");
            assert_eq!(encode(coding, &data).unwrap(), enc, "{coding:?} is deterministic, so its ETag may be strong");
        }
    }

    /// Blocking modes answer on threads with small stacks (`modes::thread::STACK_SIZE`):
    /// every encoder must fit in half of one (the driver's frames take the rest), in a
    /// debug build too. flate2's default backend, miniz_oxide, did not (a stack overflow in
    /// `thread` and `pool`); its zlib-rs backend keeps its state on the heap.
    #[test]
    fn encoders_fit_in_a_connection_threads_stack() {
        let data: Vec<u8> = (0..100_000u32).flat_map(|i| format!("{i} ").into_bytes()).collect();
        for coding in Coding::PREFERENCE {
            let data = data.clone();
            let t = std::thread::Builder::new()
                .stack_size(crate::modes::thread::STACK_SIZE / 2)
                .spawn(move || encode(coding, &data).map(|v| v.len()))
                .unwrap();
            assert!(t.join().unwrap().unwrap() > 0, "{coding:?}");
        }
    }

    #[test]
    fn tags_and_vary_table() {
        assert_eq!(tag_with("\"1.0-5\"".into(), Some(Coding::Br)), "\"1.0-5-br\"");
        assert_eq!(tag_with("\"1.0-5\"".into(), None), "\"1.0-5\"");
        let mut fields = vec![("Content-Type", "text/html".into())];
        add_vary(&mut fields, "Accept");
        add_vary(&mut fields, "Accept-Encoding");
        add_vary(&mut fields, "accept");
        assert_eq!(fields[1], ("Vary", "Accept, Accept-Encoding".into()));
    }
}
