//! Compression in every mode: precompressed siblings (`--precompressed`) chosen by
//! `Accept-Encoding`, ranges over their encoded bytes, and on-the-fly br/zstd/gzip
//! (`--compress`), checked by decoding what came over the socket (the crates, curl
//! `--compressed`, Python's gzip) against the file on disk.

mod common;

use common::*;
use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, SystemTime};

for_each_mode!(
    precompressed_siblings_follow_accept_encoding,
    precompressed_range_and_validators_cover_encoded_bytes,
    unsafe_or_stale_siblings_are_ignored,
    on_the_fly_compression_decodes_to_the_file,
    on_the_fly_never_for_ranges_small_or_compressed_types,
    compression_is_off_by_default,
    a_head_never_encodes_and_a_version_is_encoded_once,
);

/// A file worth compressing (about 9 KiB of text).
fn text() -> Vec<u8> {
    (0..300).flat_map(|i| format!("line {i}: the quick brown fox <jumps> & \"quotes\"\n").into_bytes()).collect()
}

/// A hostile name: markup, quotes, an ampersand, a space and UTF-8.
const HOSTILE: &str = "<q\"'> & café.css";

fn encode(ext: &str, data: &[u8]) -> Vec<u8> {
    match ext {
        ".gz" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        ".zst" => zstd::bulk::compress(data, 19).unwrap(),
        ".br" => {
            let mut e = brotli::CompressorWriter::new(Vec::new(), 4096, 11, 22);
            e.write_all(data).unwrap();
            e.flush().unwrap();
            e.into_inner()
        }
        other => panic!("no coding for {other}"),
    }
}

fn decode(coding: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match coding {
        "gzip" => flate2::read::GzDecoder::new(data).read_to_end(&mut out).unwrap(),
        "zstd" => zstd::stream::read::Decoder::new(data).unwrap().read_to_end(&mut out).unwrap(),
        "br" => brotli::Decompressor::new(data, 4096).read_to_end(&mut out).unwrap(),
        other => panic!("unknown coding {other}"),
    };
    out
}

/// The common fixture plus `z/`: text files with siblings, a hostile name, an image, and
/// siblings that must never be served (stale, escaping ROOT, a directory).
fn fixture() -> Fixture {
    let fx = Fixture::new();
    let z = fx.root().join("z");
    std::fs::create_dir(&z).unwrap();
    for name in ["app.js", HOSTILE] {
        std::fs::write(z.join(name), text()).unwrap();
        for ext in [".gz", ".br", ".zst"] {
            std::fs::write(z.join(format!("{name}{ext}")), encode(ext, &text())).unwrap();
        }
    }
    std::fs::write(z.join("only-gz.txt"), text()).unwrap();
    std::fs::write(z.join("only-gz.txt.gz"), encode(".gz", &text())).unwrap();
    // Stale: the sibling is older than the file.
    std::fs::write(z.join("stale.txt"), text()).unwrap();
    let mut stale = std::fs::File::create(z.join("stale.txt.gz")).unwrap();
    stale.write_all(&encode(".gz", b"old version\n")).unwrap();
    stale.set_modified(SystemTime::now() - Duration::from_secs(3600)).unwrap();
    // A sibling that is a symlink out of ROOT, and one that is a directory.
    std::fs::write(z.join("escape.txt"), text()).unwrap();
    std::fs::write(fx.outside.path().join("secret.gz"), encode(".gz", b"TOP SECRET")).unwrap();
    std::os::unix::fs::symlink(fx.outside.path().join("secret.gz"), z.join("escape.txt.gz")).unwrap();
    std::fs::write(z.join("dir.txt"), text()).unwrap();
    std::fs::create_dir(z.join("dir.txt.gz")).unwrap();
    // Not worth compressing: an image, a tiny file.
    std::fs::write(z.join("photo.png"), text()).unwrap();
    std::fs::write(z.join("small.txt"), b"tiny\n").unwrap();
    fx
}

fn start(mode: &str, fx: &Fixture, args: &[&str]) -> Spidey {
    Spidey::start(mode, &fx.root(), &[&["--quiet"], args].concat())
}

/// One request on its own connection: the head as text and the body as bytes.
fn fetch(s: &Spidey, method: &str, path: &str, fields: &[(&str, &str)]) -> (String, Vec<u8>) {
    let mut c = s.connect();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n");
    for (n, v) in fields {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    c.write_all(req.as_bytes()).unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).unwrap();
    let end = out.windows(4).position(|w| w == b"\r\n\r\n").expect("a whole head") + 4;
    (String::from_utf8_lossy(&out[..end]).into_owned(), out[end..].to_vec())
}

fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head_field(head, name)
}

fn url_path(name: &str) -> String {
    let mut out = String::from("/z/");
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn precompressed_siblings_follow_accept_encoding(mode: &str) {
    let fx = fixture();
    let s = start(mode, &fx, &["--precompressed"]);
    let z = fx.root().join("z");
    // Accept-Encoding → the coding served.
    let cases: &[(Option<&str>, Option<&str>)] = &[
        (None, None),
        (Some("gzip"), Some("gzip")),
        (Some("gzip, deflate, br, zstd"), Some("br")),
        (Some("gzip;q=1, br;q=0.5"), Some("gzip")),
        (Some("br;q=0, zstd"), Some("zstd")),
        (Some("gzip;q=0"), None),
        (Some("identity"), None),
        (Some("*"), Some("br")),
        (Some("x-gzip"), Some("gzip")),
        (Some("gzip;q=0.4, identity;q=0.5"), None),
        (Some("identity;q=0, deflate"), None),
    ];
    for name in ["app.js", HOSTILE] {
        let mut tags = std::collections::HashSet::new();
        for (accept, want) in cases {
            let fields: Vec<(&str, &str)> = accept.iter().map(|a| ("Accept-Encoding", *a)).collect();
            let (head, body) = fetch(&s, "GET", &url_path(name), &fields);
            let ctx = format!("{name} {accept:?}: {head}");
            assert_eq!(status_of(&head), 200, "{ctx}");
            assert_eq!(field(&head, "content-encoding"), *want, "{ctx}");
            assert_eq!(field(&head, "vary"), Some("Accept-Encoding"), "{ctx}");
            assert_eq!(
                field(&head, "content-type"),
                Some(if name == HOSTILE { "text/css; charset=utf-8" } else { "text/javascript; charset=utf-8" }),
                "{ctx}"
            );
            match want {
                None => assert_eq!(body, text(), "{ctx}"),
                Some(coding) => {
                    let ext = match *coding {
                        "gzip" => ".gz",
                        "zstd" => ".zst",
                        _ => ".br",
                    };
                    assert_eq!(
                        body,
                        std::fs::read(z.join(format!("{name}{ext}"))).unwrap(),
                        "{ctx}: the sibling's bytes"
                    );
                    assert_eq!(decode(coding, &body), text(), "{ctx}");
                }
            }
            tags.insert((field(&head, "etag").unwrap().to_string(), *want));
        }
        let distinct: std::collections::HashSet<_> = tags.iter().map(|(t, _)| t).collect();
        assert_eq!(distinct.len(), 4, "one ETag per encoding: {tags:?}");
    }
    // Only the codings that exist are offered.
    let (head, _) = fetch(&s, "GET", "/z/only-gz.txt", &[("Accept-Encoding", "br, zstd, gzip;q=0.1")]);
    assert_eq!(field(&head, "content-encoding"), Some("gzip"), "{head}");
    let (head, body) = fetch(&s, "GET", "/z/only-gz.txt", &[("Accept-Encoding", "br")]);
    assert_eq!((field(&head, "content-encoding"), field(&head, "vary")), (None, Some("Accept-Encoding")), "{head}");
    assert_eq!(body, text());
    // HEAD shows what GET would.
    let (get, _) = fetch(&s, "GET", "/z/app.js", &[("Accept-Encoding", "zstd")]);
    let (head, body) = fetch(&s, "HEAD", "/z/app.js", &[("Accept-Encoding", "zstd")]);
    assert!(body.is_empty());
    for f in ["content-length", "content-encoding", "etag", "vary", "content-type"] {
        assert_eq!(field(&head, f), field(&get, f), "{f}");
    }
}

fn precompressed_range_and_validators_cover_encoded_bytes(mode: &str) {
    let fx = fixture();
    let s = start(mode, &fx, &["--precompressed"]);
    let gz = std::fs::read(fx.root().join("z/app.js.gz")).unwrap();
    let ae = ("Accept-Encoding", "gzip");
    let (head, body) = fetch(&s, "GET", "/z/app.js", &[ae, ("Range", "bytes=10-29")]);
    assert_eq!(status_of(&head), 206, "{head}");
    assert_eq!(field(&head, "content-encoding"), Some("gzip"));
    assert_eq!(field(&head, "content-range"), Some(format!("bytes 10-29/{}", gz.len()).as_str()));
    assert_eq!(body, gz[10..30]);
    let tag = field(&head, "etag").unwrap().to_string();
    assert!(tag.ends_with("-gzip\""), "{tag}");
    // If-Range with the gzip tag holds for gzip; the identity representation ignores it.
    let (head, body) = fetch(&s, "GET", "/z/app.js", &[ae, ("Range", "bytes=0-3"), ("If-Range", &tag)]);
    assert_eq!((status_of(&head), body), (206, gz[..4].to_vec()));
    let (head, body) = fetch(&s, "GET", "/z/app.js", &[("Range", "bytes=0-3"), ("If-Range", &tag)]);
    assert_eq!((status_of(&head), body), (200, text()));
    // 304 by the gzip tag, only for a gzip request; it still says Vary.
    let (head, _) = fetch(&s, "GET", "/z/app.js", &[ae, ("If-None-Match", &tag)]);
    assert_eq!((status_of(&head), field(&head, "vary")), (304, Some("Accept-Encoding")), "{head}");
    let (head, _) = fetch(&s, "GET", "/z/app.js", &[("Accept-Encoding", "br"), ("If-None-Match", &tag)]);
    assert_eq!(status_of(&head), 200, "{head}");
    let (head, _) = fetch(&s, "GET", "/z/app.js", &[ae, ("Range", &format!("bytes={}-", gz.len()))]);
    assert_eq!(status_of(&head), 416, "{head}");
}

fn unsafe_or_stale_siblings_are_ignored(mode: &str) {
    let fx = fixture();
    let s = start(mode, &fx, &["--precompressed"]);
    for path in ["/z/stale.txt", "/z/escape.txt", "/z/dir.txt", "/z/small.txt"] {
        let (head, body) = fetch(&s, "GET", path, &[("Accept-Encoding", "gzip, br, zstd")]);
        assert_eq!(
            (status_of(&head), field(&head, "content-encoding"), field(&head, "vary")),
            (200, None, None),
            "{path}: {head}"
        );
        assert!(!String::from_utf8_lossy(&body).contains("SECRET"));
    }
    // The siblings themselves are ordinary files: one escaping ROOT stays forbidden.
    let (head, _) = fetch(&s, "GET", "/z/escape.txt.gz", &[]);
    assert_eq!(status_of(&head), 403, "{head}");
}

fn on_the_fly_compression_decodes_to_the_file(mode: &str) {
    let fx = fixture();
    let s = start(mode, &fx, &["--compress"]);
    for coding in ["gzip", "zstd", "br"] {
        let (head, body) = fetch(&s, "GET", "/z/only-gz.txt", &[("Accept-Encoding", coding)]);
        assert_eq!(
            (field(&head, "content-encoding"), field(&head, "vary")),
            (Some(coding), Some("Accept-Encoding")),
            "{head}"
        );
        assert!(body.len() < text().len() / 3, "{coding}: {} bytes", body.len());
        assert_eq!(decode(coding, &body), text(), "{coding}");
        assert_eq!(field(&head, "content-length"), Some(body.len().to_string().as_str()));
        assert!(field(&head, "etag").unwrap().ends_with(&format!("-{coding}\"")), "{head}");
        // HEAD: the same fields and no body; the encoded length when the process that
        // answers keeps the encoding (not so in fork's next child, or another prefork
        // worker: then no Content-Length at all, never another one).
        let (h, b) = fetch(&s, "HEAD", "/z/only-gz.txt", &[("Accept-Encoding", coding)]);
        assert!(b.is_empty());
        for f in ["content-encoding", "etag", "vary", "content-type"] {
            assert_eq!(field(&h, f), field(&head, f), "HEAD {coding} {f}");
        }
        let length = field(&h, "content-length");
        assert!(length.is_none() || length == field(&head, "content-length"), "HEAD {coding}: {h}");
        if !["fork", "prefork"].contains(&mode) {
            assert_eq!(length, field(&head, "content-length"), "HEAD {coding}: {h}");
        }
    }
    // Identity for a client that asks for none, still with Vary.
    let (head, body) = fetch(&s, "GET", "/z/only-gz.txt", &[]);
    assert_eq!((field(&head, "content-encoding"), field(&head, "vary"), body), (None, Some("Accept-Encoding"), text()));
    // A listing is compressed too; it varies on Accept as well.
    let (head, body) = fetch(&s, "GET", "/list/", &[("Accept-Encoding", "gzip")]);
    assert_eq!(
        (field(&head, "content-encoding"), field(&head, "vary")),
        (Some("gzip"), Some("Accept, Accept-Encoding"))
    );
    assert!(String::from_utf8(decode("gzip", &body)).unwrap().contains("&lt;img src=x onerror=alert(1)&gt;"));
    // curl --compressed decodes to the file's bytes; Python's gzip module decodes the raw body.
    let name = fx.root().join("z").join(HOSTILE);
    let out = s
        .curl()
        .args(["-s", "--compressed", "-o", "-", "-D", "/dev/stderr", &s.url(&url_path(HOSTILE))])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, std::fs::read(&name).unwrap(), "curl --compressed");
    let curl_head = String::from_utf8_lossy(&out.stderr).to_ascii_lowercase();
    assert!(curl_head.contains("content-encoding: "), "curl got no encoding: {curl_head}");
    let (_, gz) = fetch(&s, "GET", &url_path(HOSTILE), &[("Accept-Encoding", "gzip")]);
    assert_eq!(python_gunzip(&gz), text(), "python3 gzip.decompress");
}

fn python_gunzip(data: &[u8]) -> Vec<u8> {
    let mut child = Command::new("python3")
        .args(["-c", "import gzip, sys; sys.stdout.buffer.write(gzip.decompress(sys.stdin.buffer.read()))"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

fn on_the_fly_never_for_ranges_small_or_compressed_types(mode: &str) {
    let fx = fixture();
    let big = fx.root().join("z/big.txt");
    std::fs::write(&big, vec![b'a'; 4 * 1024 * 1024 + 1]).unwrap();
    let s = start(mode, &fx, &["--compress"]);
    let ae = ("Accept-Encoding", "gzip, br, zstd");
    let (head, body) = fetch(&s, "GET", "/z/only-gz.txt", &[ae, ("Range", "bytes=0-9")]);
    assert_eq!((status_of(&head), field(&head, "content-encoding")), (206, None), "{head}");
    assert_eq!(body, text()[..10]);
    // path → (Content-Encoding, Vary)
    let cases: &[(&str, Option<&str>)] = &[
        ("/z/photo.png", None),
        ("/z/small.txt", None),
        ("/z/big.txt", None),
        ("/big.bin", None),
        ("/z/app.js", Some("Accept-Encoding")),
    ];
    for (path, vary) in cases {
        let (head, _) = fetch(&s, "GET", path, &[ae]);
        assert_eq!(field(&head, "vary"), *vary, "{path}: {head}");
        assert_eq!(field(&head, "content-encoding").is_some(), vary.is_some(), "{path}: {head}");
    }
    // Without --precompressed, a sibling is only a file: /z/app.js was encoded now.
    let (head, body) = fetch(&s, "GET", "/z/app.js", &[("Accept-Encoding", "gzip")]);
    assert_ne!(body, std::fs::read(fx.root().join("z/app.js.gz")).unwrap(), "{head}");
    assert_eq!(decode("gzip", &body), text());
}

fn compression_is_off_by_default(mode: &str) {
    let fx = fixture();
    let s = start(mode, &fx, &[]);
    for path in ["/z/app.js", "/z/only-gz.txt", "/list/"] {
        let (head, _) = fetch(&s, "GET", path, &[("Accept-Encoding", "gzip, br, zstd")]);
        assert_eq!(field(&head, "content-encoding"), None, "{path}: {head}");
        assert!(!field(&head, "vary").unwrap_or("").contains("Accept-Encoding"), "{path}: {head}");
    }
}

/// CPU time (clock ticks) of the server and every process under it (fork's children,
/// prefork's workers), from /proc/PID/stat: utime, stime and the reaped children's.
fn server_cpu(pid: u32) -> u64 {
    let stat = |pid: &str| -> Option<(u32, u64)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
        let ppid = fields[1].parse().ok()?;
        let ticks: u64 = fields[11..15].iter().map(|f| f.parse::<u64>().unwrap_or(0)).sum();
        Some((ppid, ticks))
    };
    let procs: Vec<(u32, u32, u64)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| stat(&p.to_string()).map(|(ppid, ticks)| (p, ppid, ticks)))
        .collect();
    let mut tree = vec![pid];
    let mut total = 0;
    while let Some(p) = tree.pop() {
        total += procs.iter().find(|(q, ..)| *q == p).map_or(0, |(.., t)| *t);
        tree.extend(procs.iter().filter(|(_, parent, _)| *parent == p).map(|(q, ..)| *q));
    }
    total
}

/// One request on the keep-alive connection `c`: the head, and the body a GET's
/// `Content-Length` frames (a HEAD has none, whatever its fields say).
fn exchange(c: &mut Conn, method: &str, path: &str, accept: &str) -> (String, Vec<u8>) {
    let req = format!("{method} {path} HTTP/1.1\r\nHost: t\r\nAccept-Encoding: {accept}\r\n\r\n");
    c.write_all(req.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(c.read_retry(&mut byte).unwrap(), 1, "closed inside a head: {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let len = match method {
        "HEAD" => 0,
        _ => field(&head, "content-length").expect("a GET's length").parse().unwrap(),
    };
    let mut body = vec![0; len];
    c.read_exact(&mut body).unwrap();
    (head, body)
}

/// `--compress` must not turn a small request into a large encoding every time (issue:
/// brotli of a 4 MiB file took 0.3-0.6 s per GET and per HEAD). A HEAD never encodes:
/// ten HEADs of a 512 KiB text file cost far less than one encoding (and say no
/// `Content-Length` while the encoding is not kept). The first GET encodes; the next 19
/// use the kept encoding, on connections of their own (the cache is one per process; in
/// `fork` a child's lasts one connection, so there they share one), and cost well under
/// a few encodings (prefork's other worker may encode once more). The bytes decode to
/// the file each time. Measured as the server's CPU time, with wide margins; the client
/// waits up to two minutes for an answer, since on a machine whose cores are kept busy by
/// other processes one debug-build encoding took over 10 s (in `hybrid`, whose pool runs
/// at a lower priority than everything else).
fn a_head_never_encodes_and_a_version_is_encoded_once(mode: &str) {
    let fx = fixture();
    let large: Vec<u8> = (0..(1u64 << 19) / 64)
        .flat_map(|i| {
            format!("{i:09} {:016x} the quick brown fox jumps over\n", i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .into_bytes()
        })
        .take((1 << 19) - 10)
        .collect();
    std::fs::write(fx.root().join("z/large.txt"), &large).unwrap();
    let s = start(mode, &fx, &[&["--compress"], &common::workers(mode, "2")[..]].concat());
    let pid = s.child.id();
    let path = "/z/large.txt";
    let patient = |c: Conn| {
        c.set_read_timeout(Some(std::time::Duration::from_secs(120))).unwrap();
        c
    };
    let mut keep = patient(s.connect());

    let before_heads = server_cpu(pid);
    for _ in 0..10 {
        let (head, _) = exchange(&mut keep, "HEAD", path, "br");
        assert_eq!((status_of(&head), field(&head, "content-encoding")), (200, Some("br")), "{head}");
        assert_eq!(field(&head, "content-length"), None, "nothing encoded yet: {head}");
    }
    let heads = server_cpu(pid) - before_heads;

    let mut get = |c: &mut Option<Conn>| {
        let conn = match (mode, c) {
            ("fork", _) => &mut keep,
            (_, c) => c.insert(patient(s.connect())),
        };
        let (head, body) = exchange(conn, "GET", path, "br");
        assert_eq!((status_of(&head), field(&head, "content-encoding")), (200, Some("br")), "{head}");
        assert!(body.len() < large.len() / 2, "{} bytes", body.len());
        assert!(decode("br", &body) == large, "the encoding decodes to the file");
    };
    let before_cold = server_cpu(pid);
    get(&mut None);
    let cold = server_cpu(pid) - before_cold;
    let before_warm = server_cpu(pid);
    for _ in 0..19 {
        get(&mut None);
    }
    let warm = server_cpu(pid) - before_warm;
    eprintln!("{mode}: 10 HEADs {heads} ticks, first GET {cold}, 19 more GETs {warm}");
    assert!(cold >= 5, "one encoding of 512 KiB took {cold} ticks: too little to compare against");
    assert!(heads * 2 < cold, "10 HEADs took {heads} ticks, one encoding {cold}: a HEAD encoded");
    assert!(warm < 4 * cold, "19 GETs took {warm} ticks, one encoding {cold}: the encoding was not kept");
}
