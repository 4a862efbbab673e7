//! Directories: the index, the slash redirect, listings (HTML and JSON, sorted, escaped,
//! dotfiles hidden).

use super::{get_raw, start};
use crate::common::*;

crate::for_each_mode!(
    directory_index_and_slash_redirect,
    redirect_location_never_starts_with_two_slashes,
    listing_escapes_hostile_names,
    listing_sorts_and_hides_dotfiles,
    listing_as_json,
    show_hidden_lists_dotfiles,
    listing_shows_bidi_controls_escaped,
    listing_counts_its_entries_in_words,
);

/// The count under a listing reads as English: "0 entries", "1 entry", "2 entries".
fn listing_counts_its_entries_in_words(mode: &str) {
    let (fx, s) = start(mode, &[]);
    let dir = fx.root().join("list/sub dir");
    for (n, says) in [(0, "0 entries"), (1, "1 entry"), (2, "2 entries")] {
        if n > 0 {
            std::fs::write(dir.join(format!("<{n}>.txt")), "x").unwrap();
        }
        let text = s.get("/list/sub%20dir/", &[]).text();
        assert!(text.contains(&format!("<p class=\"n\">{says} · ")), "{n}: {text}");
    }
}

fn directory_index_and_slash_redirect(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let index = s.get("/site/", &[]);
    assert_eq!((index.status, index.text().as_str()), (200, "<h1>index</h1>\n"));
    let cases = [("/site", "/site/"), ("/site?x=1", "/site/?x=1"), ("/list/sub%20dir", "/list/sub%20dir/")];
    for (path, location) in cases {
        let r = s.get(path, &[]);
        assert_eq!((r.status, r.header("location")), (301, Some(location)), "{path}");
    }
}

fn redirect_location_never_starts_with_two_slashes(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    for path in ["//evil.com", "///evil.com", "//evil.com?q", "/./evil.com"] {
        let r = s.raw(&get_raw(path));
        let location = head_field(&r, "location").unwrap_or("");
        assert_eq!(status_of(&r), 301, "{path}: {r}");
        assert!(location.starts_with('/') && !location.starts_with("//"), "{path} → {location}");
    }
}

fn listing_escapes_hostile_names(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let r = s.get("/list/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    let html = r.text();
    let cases = [
        // what must appear in the page
        ("<a href=\"%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E\">&lt;img src=x onerror=alert(1)&gt;</a>", true),
        ("<a href=\"q%22uote%27s\">q&quot;uote&#39;s</a>", true),
        ("<a href=\"a%20b\">a b</a>", true),
        ("<a href=\"%2520\">%20</a>", true),
        ("<a href=\"caf%C3%A9\">café</a>", true),
        ("<a href=\"new%0Aline\">new\nline</a>", true),
        ("<a href=\"bad%FFutf8\">bad\u{fffd}utf8</a>", true),
        ("<a href=\"sub%20dir/\">sub dir/</a>", true),
        ("<img src", false),
    ];
    for (needle, present) in cases {
        assert_eq!(html.contains(needle), present, "{needle:?} in listing");
    }
    // Every link in the listing leads to the entry it names.
    for (href, status) in [("/list/%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E", 200), ("/list/bad%FFutf8", 200)] {
        assert_eq!(s.get(href, &[]).status, status, "{href}");
    }
}

fn names_in_order(html: &str) -> Vec<String> {
    html.split("<tr><td><a href=\"")
        .skip(1)
        .map(|row| row.split('"').next().unwrap().to_string())
        .filter(|href| href != "../")
        .collect()
}

fn listing_sorts_and_hides_dotfiles(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let by_name = names_in_order(&s.get("/list/", &[]).text());
    assert_eq!(by_name.first().map(String::as_str), Some("sub%20dir/"), "directories first: {by_name:?}");
    assert!(!by_name.iter().any(|n| n.contains("hidden")), "dotfiles hidden: {by_name:?}");
    let by_size = names_in_order(&s.get("/list/?sort=size&order=desc", &[]).text());
    assert_eq!(&by_size[..3], ["sub%20dir/", "plain.txt", "q%22uote%27s"], "{by_size:?}");
    let desc = names_in_order(&s.get("/list/?sort=name&order=desc", &[]).text());
    let mut files = by_name[1..].to_vec();
    files.reverse();
    assert_eq!(desc[1..], files[..]);
}

fn listing_as_json(mode: &str) {
    let (_fx, s) = start(mode, &[]);
    let r = s.get("/list/?format=json", &[]);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v: serde_json::Value = serde_json::from_slice(&r.body).expect("valid JSON");
    // nginx autoindex's schema: a bare array (tests/features.rs checks it field by field).
    let entries = v.as_array().unwrap();
    let plain = entries.iter().find(|e| e["name"] == "plain.txt").unwrap();
    assert_eq!((plain["size"].as_u64(), plain["type"].as_str()), (Some(3), Some("file")));
    assert!(entries.iter().any(|e| e["name"] == "<img src=x onerror=alert(1)>"));
    assert_eq!(entries[0]["type"], "directory");
}

/// `--show-hidden` both lists dotfiles and serves them (by default they are neither).
fn show_hidden_lists_dotfiles(mode: &str) {
    let (_fx, s) = start(mode, &["--show-hidden"]);
    assert!(s.get("/list/", &[]).text().contains(".hidden"));
    let r = s.get("/list/.hidden", &[]);
    assert_eq!((r.status, r.text().as_str()), (200, "secret"));
}

/// A name with Unicode bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE would show
/// `invoice\u{202E}fdp.exe` as `invoiceexe.pdf`) is listed with each control written as a
/// visible `\u{XXXX}` and a `title` saying so, in the page and its heading; the link and
/// the JSON keep the exact name.
fn listing_shows_bidi_controls_escaped(mode: &str) {
    let (fx, s) = start(mode, &[]);
    let dir = fx.root().join("bidi\u{2067}dir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("invoice\u{202E}fdp.exe"), b"MZ").unwrap();
    std::fs::write(dir.join("\u{200F}\u{2066}<i>.txt"), b"").unwrap();
    let r = s.get("/bidi%E2%81%A7dir/", &[]);
    assert_eq!(r.status, 200);
    let html = r.text();
    let title = "title=\"This name contains Unicode bidirectional control characters, shown as \\u{...}\"";
    let cases: &[(String, bool)] = &[
        // what must (not) appear in the page
        (format!("<a href=\"invoice%E2%80%AEfdp.exe\" {title}>invoice\\u{{202E}}fdp.exe</a>"), true),
        (format!("<a href=\"%E2%80%8F%E2%81%A6%3Ci%3E.txt\" {title}>\\u{{200F}}\\u{{2066}}&lt;i&gt;.txt</a>"), true),
        ("Index of /bidi\\u{2067}dir/".to_string(), true),
        ("\u{202E}".to_string(), false),
        ("\u{200F}".to_string(), false),
        ("\u{2066}".to_string(), false),
        ("\u{2067}".to_string(), false),
    ];
    for (needle, present) in cases {
        assert_eq!(html.contains(needle.as_str()), *present, "{needle:?} in {html}");
    }
    assert_eq!(s.get("/bidi%E2%81%A7dir/invoice%E2%80%AEfdp.exe", &[]).text(), "MZ", "the link leads to the file");
    let json: serde_json::Value = serde_json::from_slice(&s.get("/bidi%E2%81%A7dir/?format=json", &[]).body).unwrap();
    assert!(json.as_array().unwrap().iter().any(|e| e["name"] == "invoice\u{202E}fdp.exe"), "{json}");
}
