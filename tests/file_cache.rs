//! The open-file cache in every mode, seen from a client: a file sent from disk is always
//! the version on disk now; a small file held in memory is, within its trust window
//! (`file_cache::TTL`, 1 s after its resolution), either the version it was or the new
//! one, whole (length, bytes and validators agree), and the new one after it; the sizes
//! on either side of the in-memory limit (16 KiB) answer ranges alike.

mod common;

use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

for_each_mode!(
    a_rewritten_file_from_disk_is_served_new_at_once,
    a_same_length_rewrite_from_disk_is_served_new,
    a_small_file_changed_within_its_window_is_served_whole_then_new,
    small_and_large_files_answer_whole_and_ranged_alike,
);

/// The trust window of a file held in memory (`file_cache::TTL`).
const WINDOW: Duration = Duration::from_secs(1);
/// Over the in-memory limit: sent from disk, checked on every hit.
const LARGE: usize = 16 * 1024 + 1;

/// Whether `mode`, with `--workers 1`, answers every connection from one thread whose
/// cache lives on, so a hit within the window is answered as the version it was;
/// `thread` and `fork` answer each connection from a new thread or process, whose cache
/// starts empty, so they resolve the file again.
fn keeps_its_cache(mode: &str) -> bool {
    !matches!(mode, "thread" | "fork")
}

/// Files of hostile names around the in-memory limit: (name, length).
const SIZES: [(&str, usize); 4] =
    [("tiny <b>&.txt", 1), ("limit 'q\".bin", 16 * 1024), ("over%20limit.bin", 16 * 1024 + 1), ("empty", 0)];

fn bytes_of(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn url_path(name: &str) -> String {
    let escaped: String = name
        .bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b == b'.' { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect();
    format!("/{escaped}")
}

/// GETs `name` twice (the second a cache hit in the loop modes) and checks both.
fn fetch_twice(s: &Spidey, name: &str, want: &[u8]) -> Reply {
    let mut last = None;
    for round in 0..2 {
        let r = s.get(&url_path(name), &[]);
        assert_eq!(r.status, 200, "{name} round {round}");
        assert_eq!(r.header("content-length"), Some(want.len().to_string().as_str()), "{name} round {round}");
        assert!(r.body == want, "{name} round {round}: body differs");
        last = Some(r);
    }
    last.unwrap()
}

fn rewrite(root: &Path, name: &str, body: &[u8]) {
    std::fs::write(root.join(name), body).unwrap();
}

fn a_rewritten_file_from_disk_is_served_new_at_once(mode: &str) {
    let f = Fixture::new();
    let (first, second) = (bytes_of(LARGE, 1), bytes_of(LARGE + 1000, 2));
    rewrite(&f.root(), "large.bin", &first);
    let s = Spidey::start(mode, &f.root(), &common::workers(mode, "1"));
    let old = fetch_twice(&s, "large.bin", &first);
    rewrite(&f.root(), "large.bin", &second);
    let new = fetch_twice(&s, "large.bin", &second);
    assert_ne!(old.header("etag"), new.header("etag"), "the ETag follows the version");
}

fn a_same_length_rewrite_from_disk_is_served_new(mode: &str) {
    let f = Fixture::new();
    rewrite(&f.root(), "same.bin", &bytes_of(LARGE, 3));
    let s = Spidey::start(mode, &f.root(), &common::workers(mode, "1"));
    fetch_twice(&s, "same.bin", &bytes_of(LARGE, 3));
    // A new mtime/ctime even within one clock tick: statx on the cached descriptor
    // asks for fine-grained timestamps (Linux 6.13 multigrain), as does this wait.
    std::thread::sleep(Duration::from_millis(20));
    rewrite(&f.root(), "same.bin", &bytes_of(LARGE, 4));
    fetch_twice(&s, "same.bin", &bytes_of(LARGE, 4));
}

/// A small file rewritten and another removed within the window: each answer is one
/// version whole (the old one from a cache that lives on, see [`keeps_its_cache`]), and
/// after the window every mode answers what is on disk.
fn a_small_file_changed_within_its_window_is_served_whole_then_new(mode: &str) {
    const OLD: &[u8] = b"first version\n";
    const NEW: &[u8] = b"the second, longer version\n";
    let f = Fixture::new();
    rewrite(&f.root(), "note.txt", OLD);
    rewrite(&f.root(), "gone.txt", OLD);
    let s = Spidey::start(mode, &f.root(), &common::workers(mode, "1"));
    let start = Instant::now();
    let old = fetch_twice(&s, "note.txt", OLD);
    fetch_twice(&s, "gone.txt", OLD);
    // Every entry was resolved between `start` and now: its window ends before `resolved`
    // + WINDOW, and none ends before `start` + WINDOW.
    let resolved = Instant::now();
    rewrite(&f.root(), "note.txt", NEW);
    std::fs::remove_file(f.root().join("gone.txt")).unwrap();

    let changed = s.get("/note.txt", &[]);
    let ranged = s.get("/note.txt", &[("Range", "bytes=0-4")]);
    let removed = s.get("/gone.txt", &[]);
    // Only answers that all came within the window say which version it serves (a slow
    // machine may take longer than the window to get here).
    let within = start.elapsed() < WINDOW;

    assert_eq!(changed.status, 200, "{mode}");
    let served_old = changed.body == OLD;
    assert!(served_old || changed.body == NEW, "{mode}: neither version: {:?}", changed.text());
    assert_eq!(changed.header("content-length"), Some(changed.body.len().to_string().as_str()), "{mode}");
    assert_eq!(changed.header("etag") == old.header("etag"), served_old, "{mode}: the ETag is the version's");
    assert_eq!(ranged.status, 206, "{mode}");
    let total = ranged.header("content-range").and_then(|r| r.rsplit('/').next()).unwrap_or("").to_string();
    let version: &[u8] = if total == OLD.len().to_string() { OLD } else { NEW };
    assert!(ranged.body == version[..5], "{mode}: the range is of the version its Content-Range names ({total})");
    assert!(removed.status == 404 || (removed.status == 200 && removed.body == OLD), "{mode}: {}", removed.status);
    if within {
        let want_old = keeps_its_cache(mode);
        assert_eq!(served_old, want_old, "{mode}: within the window, the old version: {want_old}");
        assert_eq!(total == OLD.len().to_string(), want_old, "{mode}: the range too");
        assert_eq!(removed.status == 200, want_old, "{mode}: the removed file too");
    } else {
        eprintln!("{mode}: the answers took longer than the window; which version they were is not checked");
    }

    std::thread::sleep(WINDOW.saturating_sub(resolved.elapsed()) + Duration::from_millis(100));
    let new = fetch_twice(&s, "note.txt", NEW);
    assert_ne!(old.header("etag"), new.header("etag"), "{mode}: the ETag follows the version");
    assert_eq!(s.get("/gone.txt", &[]).status, 404, "{mode}: removed, after the window");
}

fn small_and_large_files_answer_whole_and_ranged_alike(mode: &str) {
    let f = Fixture::new();
    for (i, (name, len)) in SIZES.iter().enumerate() {
        rewrite(&f.root(), name, &bytes_of(*len, i as u8));
    }
    let s = Spidey::start(mode, &f.root(), &common::workers(mode, "1"));
    for (i, (name, len)) in SIZES.iter().enumerate() {
        let want = bytes_of(*len, i as u8);
        fetch_twice(&s, name, &want);
        if *len < 2 {
            continue;
        }
        let (start, end) = (len / 3, len - 2);
        let r = s.get(&url_path(name), &[("Range", &format!("bytes={start}-{end}"))]);
        assert_eq!(r.status, 206, "{name}");
        assert_eq!(r.header("content-range"), Some(format!("bytes {start}-{end}/{len}").as_str()), "{name}");
        assert!(r.body == want[start..=end], "{name}: ranged body differs");
        let head = s.raw(format!("HEAD {} HTTP/1.0\r\n\r\n", url_path(name)).as_bytes());
        assert!(head.contains(&format!("Content-Length: {len}\r\n")), "{name}: {head}");
        assert!(head.ends_with("\r\n\r\n"), "HEAD sends no body: {head:?}");
    }
}
