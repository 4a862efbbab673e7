//! Directory listings: an HTML page people like to read, or the same as JSON.
//!
//! JSON is chosen by `?format=json`, or by an `Accept` that weighs `application/json`
//! above `text/html` (so `Accept: application/json` gets JSON and a browser's `Accept`
//! HTML); every listing says `Vary: Accept`. The JSON is nginx autoindex's
//! (`autoindex_format json`, `ngx_http_autoindex_json`), so tools written for nginx read
//! it: an array of `{"name", "type": "directory"|"file"|"other", "mtime": IMF-fixdate,
//! "size" (files only)}`. Symlinks are `other` (they are never followed here). With
//! `--compress` a listing of at least 1 KiB is encoded as the client allows.
//!
//! Directories first, then files; `?sort=name|size|time&order=asc|desc`; dotfiles hidden
//! unless `--show-hidden`. Every name is HTML-escaped where it is text and percent-encoded
//! where it is a link, byte by byte, so `<script>`, quotes, newlines and non-UTF-8 names
//! are shown faithfully and link to themselves. Symlinks are listed by their own metadata
//! (lstat), so a listing never reveals anything about a target outside ROOT.
//!
//! A name's Unicode bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE and its kin,
//! [`BIDI_CONTROLS`]) are not shown raw in HTML, where they would reorder the text around
//! them and let `invoice\u{202E}fdp.exe` pass for `invoiceexe.pdf`: each is written as the
//! visible escape `\u{202E}`, and the entry's link says why in its `title`. The link
//! itself still leads to the exact name, and JSON keeps the exact name (it is data).

use super::compress::{self, add_vary};
use super::page::escape_html;
use super::resolve::OpenDir;
use super::{Body, Response, SiteOptions};
use rustix::fs::{AtFlags, FileType};
use serde::Serialize;
use spidey_http::negotiate::media_weight;
use spidey_http::{Request, StatusCode};
use std::fmt::Write;

/// What an entry is, by its own metadata (lstat).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Directory,
    File,
    /// Symlinks, FIFOs, sockets, devices.
    Other,
}

/// One listed entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name, with invalid UTF-8 replaced by U+FFFD (the exact bytes are in `href`).
    pub name: String,
    /// The percent-encoded link, relative to the directory (with a trailing `/` for dirs).
    pub href: String,
    pub kind: Kind,
    pub size: u64,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortKey {
    Name,
    Size,
    Time,
}

/// The listing's query parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct View {
    key: SortKey,
    descending: bool,
    json: bool,
}

fn view(query: Option<&str>) -> View {
    let mut v = View { key: SortKey::Name, descending: false, json: false };
    for pair in query.unwrap_or("").split('&') {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("sort", "size") => v.key = SortKey::Size,
            ("sort", "time") => v.key = SortKey::Time,
            ("sort", "name") => v.key = SortKey::Name,
            ("order", "desc") => v.descending = true,
            ("order", "asc") => v.descending = false,
            ("format", "json") => v.json = true,
            _ => {}
        }
    }
    v
}

/// Answers GET or HEAD for a directory without an index.
pub fn respond(req: &Request<'_, '_>, dir: &OpenDir, options: &SiteOptions) -> Response {
    let Ok(mut entries) = read_entries(dir, options.show_hidden) else {
        return Response::error(StatusCode::FORBIDDEN, "This directory cannot be listed.");
    };
    let mut v = view(req.target.query);
    v.json |= wants_json(req.header("accept"));
    sort(&mut entries, v);
    let (content_type, body) = if v.json {
        ("application/json", json(&entries))
    } else {
        ("text/html; charset=utf-8", html(req.target.path, &entries, v).into_bytes())
    };
    let mut fields = vec![("Content-Type", content_type.into()), ("Cache-Control", "no-cache".into())];
    add_vary(&mut fields, "Accept");
    if options.compress.on_the_fly {
        add_vary(&mut fields, "Accept-Encoding");
    }
    let (body, coding) = compress::encode_body(options.compress, req, body);
    if let Some(coding) = coding {
        fields.push(("Content-Encoding", coding.token().into()));
    }
    Response::new(StatusCode::OK, fields, Body::Bytes(body))
}

/// Whether `Accept` weighs JSON above HTML (no `Accept`, or `*/*`: HTML).
fn wants_json(accept: Option<&[u8]>) -> bool {
    accept.is_some() && media_weight(accept, "application", "json") > media_weight(accept, "text", "html")
}

fn read_entries(dir: &OpenDir, show_hidden: bool) -> rustix::io::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for entry in rustix::fs::Dir::read_from(&dir.fd)? {
        let entry = entry?;
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." || (!show_hidden && raw.starts_with(b".")) {
            continue;
        }
        let Ok(st) = rustix::fs::statat(&dir.fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let kind = match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => Kind::Directory,
            FileType::RegularFile => Kind::File,
            _ => Kind::Other,
        };
        let mut href = percent_encode(raw);
        if kind == Kind::Directory {
            href.push('/');
        }
        let name = String::from_utf8_lossy(raw).into_owned();
        entries.push(Entry { name, href, kind, size: st.st_size as u64, mtime: st.st_mtime });
    }
    Ok(entries)
}

fn sort(entries: &mut [Entry], v: View) {
    entries.sort_by(|a, b| {
        let dirs_first = (b.kind == Kind::Directory).cmp(&(a.kind == Kind::Directory));
        let by_key = match v.key {
            SortKey::Name => a.name.cmp(&b.name),
            SortKey::Size => a.size.cmp(&b.size),
            SortKey::Time => a.mtime.cmp(&b.mtime),
        };
        let by_key = if v.descending { by_key.reverse() } else { by_key };
        dirs_first.then(by_key).then_with(|| a.href.cmp(&b.href))
    });
}

/// Percent-encodes every byte outside RFC 3986's unreserved set.
pub fn percent_encode(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    for &b in raw {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// nginx autoindex's JSON: `[{"name", "type", "mtime", "size" (files only)}]`.
fn json(entries: &[Entry]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Item<'a> {
        name: &'a str,
        #[serde(rename = "type")]
        kind: Kind,
        mtime: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    }
    let items: Vec<Item<'_>> = entries
        .iter()
        .map(|e| Item {
            name: &e.name,
            kind: e.kind,
            mtime: spidey_http::date::format(system_time(e.mtime)),
            size: (e.kind == Kind::File).then_some(e.size),
        })
        .collect();
    let mut out = serde_json::to_vec_pretty(&items).unwrap_or_default();
    out.push(b'\n');
    out
}

fn system_time(unix_seconds: i64) -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix_seconds.max(0) as u64)
}

fn html(path: &str, entries: &[Entry], v: View) -> String {
    let shown = show_name(&String::from_utf8_lossy(&super::resolve::decode_path(path).unwrap_or_default())).0;
    let title = if shown == "." { "/".to_string() } else { format!("/{}/", shown.trim_end_matches('/')) };
    let mut out = String::with_capacity(1024 + entries.len() * 200);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Index of {title}</title><style>{}{STYLE}</style></head>\n<body><h1>Index of {title}</h1>\n\
         <table><thead><tr>{}{}{}</tr></thead><tbody>\n",
        super::page::STYLE,
        header_cell("Name", SortKey::Name, v),
        header_cell("Size", SortKey::Size, v),
        header_cell("Modified", SortKey::Time, v),
    );
    if title != "/" {
        out.push_str("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    for e in entries {
        let slash = if e.kind == Kind::Directory { "/" } else { "" };
        let size = if e.kind == Kind::Directory { "-".to_string() } else { human_size(e.size) };
        let time = spidey_http::date::format(system_time(e.mtime));
        let (name, marked) = show_name(&e.name);
        let title = if marked { BIDI_TITLE } else { "" };
        let _ = writeln!(
            out,
            "<tr><td><a href=\"{}\"{title}>{name}{slash}</a></td><td title=\"{} bytes\">{size}</td><td>{time}</td></tr>",
            e.href, e.size
        );
    }
    let count = match entries.len() {
        1 => "1 entry".to_string(),
        n => format!("{n} entries"),
    };
    let _ =
        writeln!(out, "</tbody></table><p class=\"n\">{count} · <a href=\"?format=json\">JSON</a></p></body></html>");
    out
}

/// The Unicode bidirectional formatting characters (Unicode Standard Annex #9, §2): the
/// marks, embeddings, overrides and isolates, which reorder the text displayed around them.
pub(crate) const BIDI_CONTROLS: [char; 12] = [
    '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}',
    '\u{2067}', '\u{2068}', '\u{2069}',
];

/// The `title` of a link whose name had bidirectional controls escaped.
const BIDI_TITLE: &str = " title=\"This name contains Unicode bidirectional control characters, shown as \\u{...}\"";

/// A name as HTML text: escaped ([`escape_html`]), with each bidirectional control written
/// as the visible `\u{XXXX}`; also whether there was one.
fn show_name(name: &str) -> (String, bool) {
    let escaped = escape_html(name);
    if !escaped.contains(BIDI_CONTROLS) {
        return (escaped, false);
    }
    let mut out = String::with_capacity(escaped.len() + 16);
    for c in escaped.chars() {
        if BIDI_CONTROLS.contains(&c) {
            let _ = write!(out, "\\u{{{:04X}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    (out, true)
}

/// The listing's own rules, after the pages' shared ones ([`super::page::STYLE`]): names may
/// break anywhere (a long one must not widen the page), dates only between words, headings
/// and sizes never (at 400 px "Size" stays one word).
const STYLE: &str = concat!(
    "table{border-collapse:collapse;width:100%}\
th,td{text-align:left;padding:.25em .75em;border-bottom:1px solid #eee;white-space:pre-wrap;word-break:break-all}\
th,td:nth-child(2){white-space:nowrap;word-break:normal}td:nth-child(3){white-space:normal;word-break:normal}\
td:nth-child(2),th:nth-child(2){text-align:right}th a{color:inherit}",
    "h1{word-break:break-all}"
);

/// A column heading that sorts by its key, toggling the order when already sorted by it.
fn header_cell(label: &str, key: SortKey, v: View) -> String {
    let name = match key {
        SortKey::Name => "name",
        SortKey::Size => "size",
        SortKey::Time => "time",
    };
    let (order, arrow) = match (v.key == key, v.descending) {
        (true, false) => ("desc", " ↑"),
        (true, true) => ("asc", " ↓"),
        (false, _) => ("asc", ""),
    };
    format!("<th><a href=\"?sort={name}&amp;order={order}\">{label}{arrow}</a></th>")
}

fn human_size(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{n} B"),
        _ => format!("{value:.1} {}", UNITS[unit]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_encode_table() {
        let cases: &[(&[u8], &str)] = &[
            (b"plain.txt", "plain.txt"),
            (b"a b", "a%20b"),
            (b"%20", "%2520"),
            (b"<script>", "%3Cscript%3E"),
            (b"q\"uote's", "q%22uote%27s"),
            (b"new\nline", "new%0Aline"),
            (b"\xff\xfe", "%FF%FE"),
            ("café".as_bytes(), "caf%C3%A9"),
            (b"a/b?c#d", "a%2Fb%3Fc%23d"),
        ];
        for (raw, want) in cases {
            assert_eq!(percent_encode(raw), *want);
        }
    }

    #[test]
    fn bidi_controls_are_shown_escaped() {
        let cases: &[(&str, &str, bool)] = &[
            ("plain.txt", "plain.txt", false),
            ("<b>&", "&lt;b&gt;&amp;", false),
            ("invoice\u{202E}fdp.exe", "invoice\\u{202E}fdp.exe", true),
            ("\u{2067}a\u{2069}\u{200F}<", "\\u{2067}a\\u{2069}\\u{200F}&lt;", true),
            ("\u{061C}é", "\\u{061C}é", true),
        ];
        for (name, shown, marked) in cases {
            assert_eq!(show_name(name), (shown.to_string(), *marked), "{name:?}");
        }
    }

    #[test]
    fn view_table() {
        let cases = [
            (None, (SortKey::Name, false, false)),
            (Some("sort=size&order=desc"), (SortKey::Size, true, false)),
            (Some("sort=time"), (SortKey::Time, false, false)),
            (Some("format=json&sort=bogus"), (SortKey::Name, false, true)),
            (Some("order=sideways"), (SortKey::Name, false, false)),
        ];
        for (query, (key, descending, json)) in cases {
            assert_eq!(view(query), View { key, descending, json }, "{query:?}");
        }
    }

    #[test]
    fn json_is_nginx_autoindex_schema() {
        let e =
            |name: &str, kind, size| Entry { name: name.into(), href: String::new(), kind, size, mtime: 784_111_777 };
        let entries = [e("d", Kind::Directory, 4096), e("<f\"'>", Kind::File, 3), e("l", Kind::Other, 9)];
        let v: serde_json::Value = serde_json::from_slice(&json(&entries)).unwrap();
        let want = serde_json::json!([
            {"name": "d", "type": "directory", "mtime": "Sun, 06 Nov 1994 08:49:37 GMT"},
            {"name": "<f\"'>", "type": "file", "mtime": "Sun, 06 Nov 1994 08:49:37 GMT", "size": 3},
            {"name": "l", "type": "other", "mtime": "Sun, 06 Nov 1994 08:49:37 GMT"},
        ]);
        assert_eq!(v, want);
    }

    #[test]
    fn wants_json_table() {
        let cases: &[(Option<&str>, bool)] = &[
            (None, false),
            (Some("*/*"), false),
            (Some("application/json"), true),
            (Some("application/json, text/html;q=0.9"), true),
            (Some("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"), false),
            (Some("application/json;q=0.5, text/html"), false),
            (Some("application/*"), true),
        ];
        for (accept, want) in cases {
            assert_eq!(wants_json(accept.map(str::as_bytes)), *want, "{accept:?}");
        }
    }

    #[test]
    fn sizes_table() {
        for (n, want) in [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (1 << 30, "1.0 GiB")] {
            assert_eq!(human_size(n), want);
        }
    }

    #[test]
    fn directories_sort_first_in_either_order() {
        let e = |name: &str, kind, size| Entry { name: name.into(), href: name.into(), kind, size, mtime: 0 };
        let mut entries = vec![e("b", Kind::File, 1), e("z", Kind::Directory, 0), e("a", Kind::File, 9)];
        sort(&mut entries, View { key: SortKey::Size, descending: true, json: false });
        let names: Vec<_> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["z", "a", "b"]);
    }
}
