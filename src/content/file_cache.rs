//! A per-thread cache of the regular files [`Root`](super::resolve::Root) resolved, so a
//! file asked for again is not looked up, checked and reopened on every request (five
//! system calls: openat2, statx, open, and two closes), as nginx's `open_file_cache` and
//! lighttpd's stat cache spare theirs.
//!
//! The rules that keep it honest:
//! - Only what a full resolution beneath ROOT returned is ever cached, so a hit is a file
//!   that was inside ROOT, not hidden, and regular when it was resolved.
//! - Every hit is revalidated on the open descriptor with one statx: a file changed in
//!   place (size, mtime, ctime: a chmod too), or removed (no links left), is dropped and
//!   resolved again, so no response ever pairs new bytes with an old length.
//! - An entry is trusted for at most [`TTL`] after its resolution: a path that now names
//!   another file (a rename over it, a swapped symlink) is served from the old file for
//!   at most that long, as lighttpd's stat cache does (one second) and nginx's
//!   `open_file_cache_valid` allows (60 s by default). SECURITY.md says so.
//! - Per thread, so no lock is taken: event/uring loops, pool and prefork workers reuse
//!   their entries; `fork` children and `thread` mode's short-lived threads mostly miss,
//!   which costs one extra descriptor per miss and nothing else. At most [`CAPACITY`]
//!   entries per thread (all dropped when full: a crawl of many files must not grow it).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a resolution is trusted before the path is looked up again.
pub(crate) const TTL: Duration = Duration::from_secs(1);
/// The most entries one thread keeps.
pub(crate) const CAPACITY: usize = 1024;

struct Entry {
    file: Arc<File>,
    /// The identity and state the file had when resolved; a hit must still match it.
    stamp: Stamp,
    resolved: Instant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

thread_local! {
    /// Keyed by the root's identity (see [`super::resolve::Root`]) and the decoded path.
    static CACHE: RefCell<HashMap<u64, HashMap<Vec<u8>, Entry>>> = RefCell::new(HashMap::new());
}

/// The cached file for `relative` under root `root`, revalidated, with fresh metadata.
pub(crate) fn get(root: u64, relative: &[u8]) -> Option<(Arc<File>, Metadata)> {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let files = cache.get_mut(&root)?;
        let entry = files.get(relative)?;
        let fresh = entry.resolved.elapsed() < TTL;
        let meta = if fresh { entry.file.metadata().ok() } else { None };
        match meta {
            Some(meta) if meta.nlink() > 0 && Stamp::of(&meta) == entry.stamp => Some((Arc::clone(&entry.file), meta)),
            _ => {
                files.remove(relative);
                None
            }
        }
    })
}

/// Remembers a regular file a full resolution of `relative` returned.
pub(crate) fn put(root: u64, relative: &[u8], file: &Arc<File>, meta: &Metadata) {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let files = cache.entry(root).or_default();
        if files.len() >= CAPACITY {
            files.clear();
        }
        let entry = Entry { file: Arc::clone(file), stamp: Stamp::of(meta), resolved: Instant::now() };
        files.insert(relative.to_vec(), entry);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(dir: &std::path::Path, name: &str, bytes: &[u8]) -> (Arc<File>, Metadata) {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let f = File::open(&path).unwrap();
        let meta = f.metadata().unwrap();
        (Arc::new(f), meta)
    }

    #[test]
    fn a_hit_is_the_same_file_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "a.txt", b"first");
        put(1, b"a.txt", &f, &meta);
        let (hit, hit_meta) = get(1, b"a.txt").expect("a hit");
        assert!(Arc::ptr_eq(&hit, &f) && hit_meta.len() == 5);
        assert!(get(2, b"a.txt").is_none(), "another root's entry");
        assert!(get(1, b"b.txt").is_none(), "another path");

        // Changed in place: the next lookup misses (and forgets the entry).
        std::fs::OpenOptions::new().append(true).open(dir.path().join("a.txt")).unwrap().write_all(b"+more").unwrap();
        assert!(get(1, b"a.txt").is_none(), "a grown file must be resolved again");
        assert!(get(1, b"a.txt").is_none(), "and the stale entry is gone");
    }

    #[test]
    fn removed_files_and_old_entries_miss() {
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "gone.txt", b"x");
        put(3, b"gone.txt", &f, &meta);
        std::fs::remove_file(dir.path().join("gone.txt")).unwrap();
        assert!(get(3, b"gone.txt").is_none(), "no links left");

        let (f, meta) = file_with(dir.path(), "old.txt", b"x");
        CACHE.with(|c| {
            let entry = Entry { file: f, stamp: Stamp::of(&meta), resolved: Instant::now() - TTL };
            c.borrow_mut().entry(4).or_default().insert(b"old.txt".to_vec(), entry);
        });
        assert!(get(4, b"old.txt").is_none(), "older than the TTL");
    }

    #[test]
    fn a_full_cache_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "f", b"x");
        for i in 0..CAPACITY + 1 {
            put(5, format!("f{i}").as_bytes(), &f, &meta);
        }
        let len = CACHE.with(|c| c.borrow().get(&5).map_or(0, HashMap::len));
        assert_eq!(len, 1, "cleared when full, then the new entry");
    }
}
