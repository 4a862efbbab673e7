//! The open-file cache in every mode, seen from a client: a file served from memory or
//! from disk is always the version on disk now (length, bytes and validators agree), and
//! the sizes on either side of the in-memory limit (16 KiB) answer ranges alike.

mod common;

use common::*;
use std::path::Path;

for_each_mode!(
    a_rewritten_small_file_is_served_new_at_once,
    a_same_length_rewrite_is_served_new,
    small_and_large_files_answer_whole_and_ranged_alike,
);

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

fn a_rewritten_small_file_is_served_new_at_once(mode: &str) {
    let f = Fixture::new();
    rewrite(&f.root(), "note.txt", b"first version\n");
    let s = Spidey::start(mode, &f.root(), &common::workers(mode, "1"));
    let old = fetch_twice(&s, "note.txt", b"first version\n");
    rewrite(&f.root(), "note.txt", b"the second, longer version\n");
    let new = fetch_twice(&s, "note.txt", b"the second, longer version\n");
    assert_ne!(old.header("etag"), new.header("etag"), "the ETag follows the version");
}

fn a_same_length_rewrite_is_served_new(mode: &str) {
    let f = Fixture::new();
    rewrite(&f.root(), "same.txt", b"AAAA");
    let s = Spidey::start(mode, &f.root(), &common::workers(mode, "1"));
    fetch_twice(&s, "same.txt", b"AAAA");
    // A new mtime/ctime even within one clock tick: statx on the cached descriptor
    // asks for fine-grained timestamps (Linux 6.13 multigrain), as does this wait.
    std::thread::sleep(std::time::Duration::from_millis(20));
    rewrite(&f.root(), "same.txt", b"BBBB");
    fetch_twice(&s, "same.txt", b"BBBB");
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
