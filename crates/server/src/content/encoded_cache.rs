//! The encodings `--compress` made of files, kept so a file is encoded once per version
//! and coding, not once per request (nginx's `gzip_static` and Caddy's precompressed
//! encoders serve stored encodings for the same reason: a 60-byte request must not buy
//! a megabyte of brotli every time).
//!
//! - One cache per process, shared by all its threads (a mutex around an LRU list): the
//!   event loops, `pool` and `thread` mode's threads and `hybrid`'s workers all find what
//!   any of them encoded. `fork`'s children each start from the parent's empty cache, so
//!   there it lasts one connection; each `prefork` worker has its own.
//! - Keyed by the root's identity, the decoded path and the coding; an entry belongs to
//!   the version of the file its [`Stamp`] describes (device, inode, size, mtime, ctime),
//!   the one the open-file cache checks every hit against. A request for another version
//!   misses and its encoding replaces the entry, so an edited file is never answered with
//!   its previous version's bytes. An encoding is kept only if the file still has that
//!   stamp once it has been read (a file written meanwhile is encoded again next time).
//! - Bounded: at most [`BUDGET`] bytes in all (the encoded bytes and the path, plus a
//!   fixed overhead per entry), the least recently used entries dropped first.
//! - One encoding at a time per key: a request that finds its key being encoded by another
//!   thread waits for that result instead of encoding the same bytes again, so a burst of
//!   requests for one new file costs one encoding.
//! - The bytes are shared (`Arc<[u8]>`): every response and every slow reader of one
//!   encoding holds the same copy, never one per connection.

use super::file_cache::Stamp;
use lru::LruCache;
use spidey_http::negotiate::Coding;
use std::collections::hash_map::RandomState;
use std::collections::HashSet;
use std::fs::{File, Metadata};
use std::hash::BuildHasher;
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard};

/// The most bytes the cache holds, entries' overheads included.
pub(crate) const BUDGET: usize = 32 << 20;
/// What an entry costs besides its encoded bytes and its path (the list node, the key).
const ENTRY_OVERHEAD: usize = 128;

struct Entry {
    root: u64,
    path: Box<[u8]>,
    coding: Coding,
    stamp: Stamp,
    bytes: Arc<[u8]>,
}

impl Entry {
    fn cost(&self) -> usize {
        self.bytes.len() + self.path.len() + ENTRY_OVERHEAD
    }

    fn is(&self, root: u64, path: &[u8], coding: Coding) -> bool {
        self.root == root && *self.path == *path && self.coding == coding
    }
}

struct Cache {
    /// Keyed by [`key`]; the entry itself says which file and coding it holds.
    entries: LruCache<u64, Entry>,
    /// INVARIANT: the sum of the entries' [`Entry::cost`], at most [`BUDGET`].
    held: usize,
    /// The keys some thread is encoding now.
    encoding: HashSet<u64>,
}

struct Shared {
    cache: Mutex<Cache>,
    /// Signalled whenever a key leaves `encoding`.
    done: Condvar,
    /// Keys are hashed with per-process random keys, so paths cannot be chosen to collide.
    hasher: RandomState,
}

static SHARED: LazyLock<Shared> = LazyLock::new(|| Shared {
    cache: Mutex::new(Cache { entries: LruCache::unbounded(), held: 0, encoding: HashSet::new() }),
    done: Condvar::new(),
    hasher: RandomState::new(),
});

fn lock() -> MutexGuard<'static, Cache> {
    // The cache is consistent between statements: a panic elsewhere leaves it usable.
    SHARED.cache.lock().unwrap_or_else(|e| e.into_inner())
}

fn key(root: u64, path: &[u8], coding: Coding) -> u64 {
    SHARED.hasher.hash_one((root, path, coding))
}

/// The kept encoding of the file at `path` under root `root` with `coding`, if it is of
/// the version `meta` describes.
pub(crate) fn get(root: u64, path: &[u8], coding: Coding, meta: &Metadata) -> Option<Arc<[u8]>> {
    let k = key(root, path, coding);
    lookup(&mut lock(), k, root, path, coding, &Stamp::of(meta))
}

/// Whether an encoding of the file at `path` with `coding` is kept, of any version: cheap
/// (no system call, no allocation), for `hybrid`'s choice of where to answer.
pub(crate) fn holds(root: u64, path: &[u8], coding: Coding) -> bool {
    let k = key(root, path, coding);
    lock().entries.peek(&k).is_some_and(|e| e.is(root, path, coding))
}

fn lookup(cache: &mut Cache, k: u64, root: u64, path: &[u8], coding: Coding, stamp: &Stamp) -> Option<Arc<[u8]>> {
    let entry = cache.entries.get(&k)?;
    (entry.is(root, path, coding) && entry.stamp == *stamp).then(|| Arc::clone(&entry.bytes))
}

/// The file `file` (at `path` under root `root`, of the version `meta` describes)
/// encoded with `coding`: the kept encoding, or one made now ([`super::compress::encode_file`])
/// and kept for the next request.
pub(crate) fn get_or_encode(
    root: u64,
    path: &[u8],
    coding: Coding,
    file: &File,
    meta: &Metadata,
) -> std::io::Result<Arc<[u8]>> {
    let (k, stamp) = (key(root, path, coding), Stamp::of(meta));
    let mut cache = lock();
    loop {
        if let Some(bytes) = lookup(&mut cache, k, root, path, coding, &stamp) {
            return Ok(bytes);
        }
        if cache.encoding.insert(k) {
            break; // this thread encodes it
        }
        cache = SHARED.done.wait(cache).unwrap_or_else(|e| e.into_inner());
    }
    drop(cache);
    let _encoding = Encoding(k);
    // The bytes the open-file cache holds for this version, when it does: a hit its trust
    // window answered unchecked is encoded as the version it answered, whatever is on disk.
    let bytes: Arc<[u8]> = match super::file_cache::kept_contents(root, path, meta) {
        Some(kept) => super::compress::encode(coding, &kept)?,
        None => super::compress::encode_file(coding, file)?,
    }
    .into();
    // Kept only if the file is still the version that was read.
    if file.metadata().is_ok_and(|now| Stamp::of(&now) == stamp) {
        let entry = Entry { root, path: path.into(), coding, stamp, bytes: Arc::clone(&bytes) };
        insert(&mut lock(), k, entry);
    }
    Ok(bytes)
}

/// A key being encoded: taken out of `encoding` (and the waiters woken) when the encoding
/// ends, whether it succeeded, failed or panicked.
struct Encoding(u64);

impl Drop for Encoding {
    fn drop(&mut self) {
        lock().encoding.remove(&self.0);
        SHARED.done.notify_all();
    }
}

fn insert(cache: &mut Cache, k: u64, entry: Entry) {
    let cost = entry.cost();
    if let Some(old) = cache.entries.pop(&k) {
        cache.held -= old.cost();
    }
    if cost > BUDGET {
        return;
    }
    while cache.held + cost > BUDGET {
        match cache.entries.pop_lru() {
            Some((_, old)) => cache.held -= old.cost(),
            None => break,
        }
    }
    cache.held += cost;
    cache.entries.push(k, entry);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn text_file(dir: &std::path::Path, name: &str, lines: usize) -> (File, Metadata) {
        let path = dir.join(name);
        let body: String = (0..lines).map(|i| format!("line {i} of {name}\n")).collect();
        std::fs::write(&path, body).unwrap();
        let f = File::open(&path).unwrap();
        let meta = f.metadata().unwrap();
        (f, meta)
    }

    #[test]
    fn a_version_is_encoded_once_and_shared() {
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = text_file(dir.path(), "a.txt", 500);
        let root = 1_000_001;
        assert!(get(root, b"a.txt", Coding::Gzip, &meta).is_none() && !holds(root, b"a.txt", Coding::Gzip));
        let first = get_or_encode(root, b"a.txt", Coding::Gzip, &f, &meta).unwrap();
        let again = get_or_encode(root, b"a.txt", Coding::Gzip, &f, &meta).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the kept bytes, not a second encoding");
        assert!(Arc::ptr_eq(&first, &get(root, b"a.txt", Coding::Gzip, &meta).unwrap()));
        assert!(holds(root, b"a.txt", Coding::Gzip));
        // path → (root, coding): another root, path or coding is another entry
        for (root, path, coding) in
            [(root + 1, &b"a.txt"[..], Coding::Gzip), (root, b"b.txt", Coding::Gzip), (root, b"a.txt", Coding::Br)]
        {
            assert!(get(root, path, coding, &meta).is_none(), "{root} {path:?} {coding:?}");
        }
    }

    #[test]
    fn another_version_misses_and_replaces_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = text_file(dir.path(), "v.txt", 300);
        let root = 1_000_002;
        let old = get_or_encode(root, b"v.txt", Coding::Zstd, &f, &meta).unwrap();
        std::fs::OpenOptions::new().append(true).open(dir.path().join("v.txt")).unwrap().write_all(b"more\n").unwrap();
        let new_meta = f.metadata().unwrap();
        assert!(get(root, b"v.txt", Coding::Zstd, &new_meta).is_none(), "the edited file misses");
        let new = get_or_encode(root, b"v.txt", Coding::Zstd, &f, &new_meta).unwrap();
        assert!(!Arc::ptr_eq(&old, &new));
        assert!(get(root, b"v.txt", Coding::Zstd, &meta).is_none(), "the old version is gone");
        assert!(zstd::bulk::decompress(&new, 1 << 20).unwrap().ends_with(b"more\n"));
    }

    /// A hit the open-file cache's trust window answered unchecked is encoded as the
    /// version it answered (the bytes that cache holds), not as the file on disk now.
    #[test]
    fn a_held_version_is_encoded_from_its_held_bytes() {
        use crate::content::file_cache;
        let _one = file_cache::tests::budget_tests();
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = text_file(dir.path(), "h.txt", 100);
        let (f, root) = (Arc::new(f), 1_000_004);
        file_cache::put(root, b"h.txt", &f, &meta);
        let held = file_cache::small_contents(root, b"h.txt", &meta).expect("held");
        std::fs::write(dir.path().join("h.txt"), "changed on disk\n").unwrap();
        let bytes = get_or_encode(root, b"h.txt", Coding::Zstd, &f, &meta).unwrap();
        assert_eq!(zstd::bulk::decompress(&bytes, 1 << 20).unwrap(), &*held);
    }

    #[test]
    fn the_budget_bounds_the_cache() {
        let mut cache = Cache { entries: LruCache::unbounded(), held: 0, encoding: HashSet::new() };
        let dir = tempfile::tempdir().unwrap();
        let meta = std::fs::metadata(dir.path()).unwrap();
        let entry = |i: usize, len: usize| Entry {
            root: 7,
            path: format!("f{i}").into_bytes().into(),
            coding: Coding::Br,
            stamp: Stamp::of(&meta),
            bytes: vec![0; len].into(),
        };
        let big = BUDGET / 4;
        for i in 0..10 {
            insert(&mut cache, i as u64, entry(i, big));
            assert!(cache.held <= BUDGET, "{} over the budget after {i}", cache.held);
        }
        assert_eq!(cache.entries.len(), 3, "the most recent entries that fit");
        assert!(cache.entries.contains(&9) && !cache.entries.contains(&6));
        insert(&mut cache, 99, entry(99, BUDGET + 1));
        assert!(!cache.entries.contains(&99) && cache.held <= BUDGET, "an entry over the budget is not kept");
        let sum: usize = cache.entries.iter().map(|(_, e)| e.cost()).sum();
        assert_eq!(sum, cache.held);
    }

    /// Threads asking at once for one new encoding: one encodes, the others get its bytes.
    #[test]
    fn concurrent_requests_share_one_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = text_file(dir.path(), "c.txt", 20_000);
        let (f, root) = (Arc::new(f), 1_000_003);
        let all = Arc::new(std::sync::Barrier::new(8));
        let got: Vec<Arc<[u8]>> = (0..8)
            .map(|_| {
                let (f, meta, all) = (Arc::clone(&f), meta.clone(), Arc::clone(&all));
                std::thread::spawn(move || {
                    all.wait();
                    get_or_encode(root, b"c.txt", Coding::Br, &f, &meta).unwrap()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert!(got.iter().all(|b| Arc::ptr_eq(b, &got[0])), "one encoding, shared");
    }
}
