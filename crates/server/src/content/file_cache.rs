//! A per-thread cache of the regular files [`Root`](super::resolve::Root) resolved, so a
//! file asked for again is not looked up, checked and reopened on every request (five
//! system calls: openat2, statx, open, and two closes), as nginx's `open_file_cache` and
//! lighttpd's stat cache spare theirs.
//!
//! The rules that keep it honest:
//! - Only what a full resolution beneath ROOT returned is ever cached, so a hit is a file
//!   that was inside ROOT, not hidden, and regular when it was resolved.
//! - A hit on a file sent from disk is revalidated on the open descriptor with one statx:
//!   a file changed in place (size, mtime, ctime: a chmod too), or removed (no links left),
//!   is dropped and resolved again, so no response ever pairs new bytes with an old length.
//! - An entry is trusted for at most [`TTL`] after its resolution: a path that now names
//!   another file (a rename over it, a swapped symlink) is served from the old file for
//!   at most that long, as lighttpd's stat cache does (one second) and nginx's
//!   `open_file_cache_valid` allows (60 s by default). SECURITY.md says so.
//! - The trust window: a hit on a file whose bytes the entry holds ([`small_contents`]) is
//!   not checked at all until its [`TTL`] ends (nginx's `open_file_cache_valid` again), so
//!   answering it makes no system call but the send. Its response is built from those bytes
//!   and the metadata they were read with, so a file changed, chmod-ed, replaced or removed
//!   within the window is answered as the version it was, whole and consistent (length,
//!   ETag, Last-Modified, ranges), for at most [`TTL`] after its resolution; then the next
//!   hit resolves it again. The bytes are kept only if a statx after the read still shows
//!   the version the entry was resolved as, so they are never another version's.
//! - Per thread, so no lock is taken: event/uring loops, pool and prefork workers reuse
//!   their entries; `fork` children and `thread` mode's short-lived threads mostly miss,
//!   which costs one extra descriptor per miss and nothing else. At most [`CAPACITY`]
//!   entries per thread (all dropped when full: a crawl of many files must not grow it).
//! - A small file's bytes ([`small_contents`]: at most [`SMALL_MAX`] bytes) are kept beside
//!   its entry, read once with pread, so its response is one send of head and body instead
//!   of a send and a sendfile. The bytes belong to the entry's stamp and go with the
//!   entry, so cached bytes are never served with another version's length, ETag or
//!   Last-Modified.
//! - Those bytes count against one budget per process, [`SMALL_BUDGET`], shared by every
//!   thread's cache (an atomic counter, [`SMALL_HELD`]): a thread takes its share when it
//!   reads a file and gives it back when the entry goes, or when the thread ends and its
//!   cache is dropped. So `thread` mode, a thread per connection, holds at most the budget
//!   in all, not the budget per connection; once it is spent, files are sent from disk.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::hash::RandomState;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long a resolution is trusted before the path is looked up again, and how long a
/// file held in memory is served without a check (the trust window).
pub(crate) const TTL: Duration = Duration::from_secs(1);
/// The most entries one thread keeps.
pub(crate) const CAPACITY: usize = 1024;
/// The largest file whose bytes are kept in memory ([`small_contents`]).
pub(crate) const SMALL_MAX: u64 = 16 * 1024;
/// The most bytes of small files all threads' caches keep together; beyond it, files are
/// sent from disk.
pub(crate) const SMALL_BUDGET: usize = 1024 * 1024;

/// The bytes of small files every thread's cache holds.
/// INVARIANT: the sum of every live cache's `small_bytes`, at most [`SMALL_BUDGET`].
static SMALL_HELD: AtomicUsize = AtomicUsize::new(0);

/// Takes `len` bytes of the process's budget, if that many are left.
fn reserve(len: usize) -> bool {
    SMALL_HELD
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| (held + len <= SMALL_BUDGET).then_some(held + len))
        .is_ok()
}

struct Entry {
    file: Arc<File>,
    /// The identity and state the file had when resolved; a checked hit must still match it.
    stamp: Stamp,
    /// The metadata `stamp` was taken from, for the hits the trust window answers unchecked.
    meta: Metadata,
    /// When it was resolved, by the coarse monotonic clock ([`crate::clock::ticks`]): the
    /// trust window is [`TTL`] within a timer tick.
    resolved: Duration,
    /// The file's bytes as of `stamp`, once [`small_contents`] has read them.
    contents: Option<Arc<[u8]>>,
    /// Its ETag and Last-Modified as of `stamp`, once [`validators`] has formatted them,
    /// shared with the responses that carry them.
    validators: Option<(Arc<str>, Arc<str>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub(crate) fn of(meta: &Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// One thread's cache.
struct Cache {
    /// Keyed by the root's identity (see [`super::resolve::Root`]) and the decoded path.
    roots: HashMap<u64, HashMap<Vec<u8>, Entry>>,
    /// Bytes held in entries' `contents`, this thread's share of [`SMALL_HELD`].
    /// INVARIANT: the sum of every entry's `contents` length.
    small_bytes: usize,
}

impl Default for Cache {
    fn default() -> Cache {
        Cache { roots: HashMap::with_hasher(hash_keys()), small_bytes: 0 }
    }
}

/// The hash keys of every thread's maps, drawn once per process: `RandomState::new` draws
/// them from getrandom(2) once per thread, a system call per connection in `thread` mode.
fn hash_keys() -> RandomState {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new).clone()
}

impl Drop for Cache {
    /// The thread is ending: its share of the budget goes back to the process.
    fn drop(&mut self) {
        SMALL_HELD.fetch_sub(self.small_bytes, Ordering::AcqRel);
    }
}

/// Takes a dropped entry's bytes off this thread's share and the process's budget.
fn release(small_bytes: &mut usize, entry: Entry) {
    let len = entry.contents.map_or(0, |c| c.len());
    *small_bytes -= len;
    SMALL_HELD.fetch_sub(len, Ordering::AcqRel);
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The cached file for `relative` under root `root`, with its metadata: checked with a
/// statx on the descriptor, or, for a file whose bytes the entry holds, trusted unchecked
/// within its [`TTL`] (the module's trust window).
pub(crate) fn get(root: u64, relative: &[u8]) -> Option<(Arc<File>, Metadata)> {
    CACHE.with(|cache| {
        let cache = &mut *cache.borrow_mut();
        let files = cache.roots.get_mut(&root)?;
        let entry = files.get(relative)?;
        let fresh = crate::clock::ticks().saturating_sub(entry.resolved) < TTL;
        if fresh && entry.contents.is_some() {
            return Some((Arc::clone(&entry.file), entry.meta.clone()));
        }
        let meta = if fresh { entry.file.metadata().ok() } else { None };
        match meta {
            Some(meta) if meta.nlink() > 0 && Stamp::of(&meta) == entry.stamp => Some((Arc::clone(&entry.file), meta)),
            _ => {
                if let Some(gone) = files.remove(relative) {
                    release(&mut cache.small_bytes, gone);
                }
                None
            }
        }
    })
}

/// Remembers a regular file a full resolution of `relative` returned.
pub(crate) fn put(root: u64, relative: &[u8], file: &Arc<File>, meta: &Metadata) {
    CACHE.with(|cache| {
        let cache = &mut *cache.borrow_mut();
        let files = cache.roots.entry(root).or_insert_with(|| HashMap::with_hasher(hash_keys()));
        if files.len() >= CAPACITY {
            for (_, entry) in files.drain() {
                release(&mut cache.small_bytes, entry);
            }
        }
        let entry = Entry {
            file: Arc::clone(file),
            stamp: Stamp::of(meta),
            meta: meta.clone(),
            resolved: crate::clock::ticks(),
            contents: None,
            validators: None,
        };
        if let Some(old) = files.insert(relative.to_vec(), entry) {
            release(&mut cache.small_bytes, old);
        }
    });
}

/// The bytes of the small file cached for `relative`, if its entry is the version `meta`
/// describes (the metadata [`get`] or the resolution just returned): read once with pread
/// and kept while the entry lives. `None` for a file over [`SMALL_MAX`], an entry of
/// another version, a spent budget (the process's, [`SMALL_BUDGET`]), or a file that
/// changed while it was read (a short read, or a statx after the read that no longer
/// shows the entry's version: it is then sent from disk, which fails the response if it
/// shrank, and the next checked hit drops the entry).
pub(crate) fn small_contents(root: u64, relative: &[u8], meta: &Metadata) -> Option<Arc<[u8]>> {
    if meta.len() > SMALL_MAX {
        return None;
    }
    CACHE.with(|cache| {
        let cache = &mut *cache.borrow_mut();
        let entry = cache.roots.get_mut(&root)?.get_mut(relative)?;
        if entry.stamp != Stamp::of(meta) {
            return None;
        }
        if let Some(bytes) = &entry.contents {
            return Some(Arc::clone(bytes));
        }
        let len = meta.len() as usize;
        if !reserve(len) {
            return None;
        }
        // Made in place (one allocation, not a Vec's and then the Arc's copy of it).
        let mut bytes: Arc<[u8]> = std::iter::repeat(0).take(len).collect();
        let stamp = entry.stamp;
        let unchanged = |file: &File| file.metadata().is_ok_and(|now| Stamp::of(&now) == stamp);
        let into = Arc::get_mut(&mut bytes).expect("a new Arc has no other owner");
        if entry.file.read_exact_at(into, 0).is_err() || !unchanged(&entry.file) {
            SMALL_HELD.fetch_sub(len, Ordering::AcqRel);
            return None;
        }
        entry.contents = Some(Arc::clone(&bytes));
        cache.small_bytes += len;
        Some(bytes)
    })
}

/// The bytes the entry for `relative` already holds, if they are the version `meta`
/// describes; never reads (for `--compress`, which encodes the version a hit answered).
pub(crate) fn kept_contents(root: u64, relative: &[u8], meta: &Metadata) -> Option<Arc<[u8]>> {
    CACHE.with(|cache| {
        let cache = cache.borrow();
        let entry = cache.roots.get(&root)?.get(relative)?;
        (entry.stamp == Stamp::of(meta)).then(|| entry.contents.clone()).flatten()
    })
}

/// The ETag and Last-Modified of the file at `relative`, as of the version `meta`
/// describes: formatted by `make` once per cached entry and kept with it, so a response
/// from the cache copies them instead of formatting them again; `make`'s own for a file
/// not cached at that version.
pub(crate) fn validators(
    root: u64,
    relative: &[u8],
    meta: &Metadata,
    make: impl FnOnce() -> (Arc<str>, Arc<str>),
) -> (Arc<str>, Arc<str>) {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let entry = cache.roots.get_mut(&root).and_then(|files| files.get_mut(relative));
        match entry.filter(|entry| entry.stamp == Stamp::of(meta)) {
            Some(entry) => entry.validators.get_or_insert_with(make).clone(),
            None => make(),
        }
    })
}

/// `meta`, as [`get`] returned it for `relative`, checked for a caller that sends the file
/// from disk rather than the bytes its entry holds (a precompressed sibling): a hit the
/// trust window answered unchecked is checked now with a statx, `None` if the file is no
/// longer that version; a hit that was checked is returned as it is.
pub(crate) fn checked_for_disk(root: u64, relative: &[u8], file: &File, meta: Metadata) -> Option<Metadata> {
    if kept_contents(root, relative, &meta).is_none() {
        return Some(meta);
    }
    let now = file.metadata().ok()?;
    (now.nlink() > 0 && Stamp::of(&now) == Stamp::of(&meta)).then_some(now)
}

#[cfg(test)]
pub(crate) mod tests {
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
            let entry = Entry {
                file: f,
                stamp: Stamp::of(&meta),
                meta,
                resolved: crate::clock::ticks().saturating_sub(TTL),
                contents: None,
                validators: None,
            };
            c.borrow_mut().roots.entry(4).or_default().insert(b"old.txt".to_vec(), entry);
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
        let len = CACHE.with(|c| c.borrow().roots.get(&5).map_or(0, HashMap::len));
        assert_eq!(len, 1, "cleared when full, then the new entry");
    }

    fn small_bytes() -> usize {
        CACHE.with(|c| c.borrow().small_bytes)
    }

    /// The tests that spend the process's small-file budget run one at a time (each expects
    /// to find room in it), and each gives its thread's share back as it ends, before the
    /// next starts (not later, when its thread's cache is dropped).
    pub(crate) struct BudgetTest(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

    impl Drop for BudgetTest {
        fn drop(&mut self) {
            CACHE.with(|c| drop(std::mem::take(&mut *c.borrow_mut())));
        }
    }

    pub(crate) fn budget_tests() -> BudgetTest {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        BudgetTest(LOCK.lock().unwrap_or_else(|e| e.into_inner()))
    }

    #[test]
    fn small_contents_are_the_version_the_metadata_describes() {
        let _one = budget_tests();
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "s.txt", b"small");
        put(6, b"s.txt", &f, &meta);
        let before = small_bytes();
        assert_eq!(&*small_contents(6, b"s.txt", &meta).expect("read once"), b"small");
        assert_eq!(small_bytes(), before + 5, "counted against the budget");
        assert_eq!(&*small_contents(6, b"s.txt", &meta).expect("kept"), b"small");
        assert_eq!(small_bytes(), before + 5, "kept bytes are not counted twice");

        // Rewritten in place: the old bytes are never handed out with the new metadata;
        // within the window a hit is the old version, whole; past it the changed file
        // misses and the entry's bytes leave the budget with it.
        std::fs::write(dir.path().join("s.txt"), b"SMALL, and longer").unwrap();
        let new_meta = std::fs::metadata(dir.path().join("s.txt")).unwrap();
        assert!(small_contents(6, b"s.txt", &new_meta).is_none(), "another version's metadata");
        assert_eq!(get(6, b"s.txt").expect("within the window").1.len(), 5, "the held version");
        CACHE.with(|c| c.borrow_mut().roots.get_mut(&6).unwrap().get_mut(&b"s.txt"[..]).unwrap().resolved -= TTL);
        assert!(get(6, b"s.txt").is_none(), "the changed file misses past the window");
        assert_eq!(small_bytes(), before, "its bytes left the budget");
    }

    #[test]
    fn large_files_and_a_spent_budget_are_sent_from_disk() {
        let _one = budget_tests();
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "big", &vec![b'x'; SMALL_MAX as usize + 1]);
        put(7, b"big", &f, &meta);
        assert!(small_contents(7, b"big", &meta).is_none(), "over SMALL_MAX");

        let (f, meta) = file_with(dir.path(), "max", &vec![b'y'; SMALL_MAX as usize]);
        let fits = SMALL_BUDGET / SMALL_MAX as usize;
        for i in 0..fits + 1 {
            put(8, format!("max{i}").as_bytes(), &f, &meta);
        }
        let held = (0..fits + 1).filter(|i| small_contents(8, format!("max{i}").as_bytes(), &meta).is_some()).count();
        assert!(held < fits + 1 && small_bytes() <= SMALL_BUDGET, "held {held}, {} bytes", small_bytes());
    }

    /// The trust window: a hit on a file whose bytes the entry holds is answered without a
    /// statx, as the version those bytes are, until the entry's TTL ends; a caller that
    /// sends from disk still gets the file checked.
    #[test]
    fn a_held_file_is_trusted_unchecked_within_its_window() {
        let _one = budget_tests();
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "t.txt", b"first");
        put(10, b"t.txt", &f, &meta);
        assert!(small_contents(10, b"t.txt", &meta).is_some(), "held");
        std::fs::write(dir.path().join("t.txt"), b"second, longer").unwrap();

        let (hit, hit_meta) = get(10, b"t.txt").expect("trusted within the window");
        assert_eq!(hit_meta.len(), 5, "the metadata of the version the bytes are");
        assert_eq!(&*small_contents(10, b"t.txt", &hit_meta).expect("the held bytes"), b"first");
        assert_eq!(&*kept_contents(10, b"t.txt", &hit_meta).expect("kept for --compress"), b"first");
        assert!(checked_for_disk(10, b"t.txt", &hit, hit_meta).is_none(), "sent from disk, it is checked");

        CACHE.with(|c| c.borrow_mut().roots.get_mut(&10).unwrap().get_mut(&b"t.txt"[..]).unwrap().resolved -= TTL);
        assert!(get(10, b"t.txt").is_none(), "past the window the path is resolved again");
    }

    /// Bytes read after the file changed (after the resolution's statx) are not kept: the
    /// window never serves them under the resolution's length, ETag or Last-Modified.
    #[test]
    fn bytes_of_another_version_are_not_kept() {
        let _one = budget_tests();
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "r.txt", b"one");
        // A new ctime even within one clock tick (as tests/file_cache.rs waits too).
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(dir.path().join("r.txt"), b"two").unwrap();
        put(11, b"r.txt", &f, &meta);
        let before = small_bytes();
        assert!(small_contents(11, b"r.txt", &meta).is_none(), "read as another version");
        assert_eq!(small_bytes(), before, "nothing held");
        assert!(get(11, b"r.txt").is_none(), "and the checked hit drops the entry");
    }

    #[test]
    fn validators_are_made_once_per_version() {
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "v.txt", b"one");
        put(12, b"v.txt", &f, &meta);
        let mut made = 0;
        let mut make = |tag: &str| {
            made += 1;
            (tag.into(), "date".into())
        };
        assert_eq!(&*validators(12, b"v.txt", &meta, || make("\"a\"")).0, "\"a\"");
        assert_eq!(&*validators(12, b"v.txt", &meta, || make("\"b\"")).0, "\"a\"", "kept");
        assert_eq!(&*validators(13, b"v.txt", &meta, || make("\"c\"")).0, "\"c\"", "not cached");
        let other = std::fs::metadata(dir.path()).unwrap();
        assert_eq!(&*validators(12, b"v.txt", &other, || make("\"d\"")).0, "\"d\"", "another version");
        assert_eq!(made, 3);
    }

    /// `thread` mode's threads, one per connection, each with its own cache: together they
    /// hold at most the one budget, and a thread that ends gives its share back.
    #[test]
    fn the_small_file_budget_is_one_per_process() {
        let _one = budget_tests();
        let dir = tempfile::tempdir().unwrap();
        let (f, meta) = file_with(dir.path(), "max", &vec![b'z'; SMALL_MAX as usize]);
        let threads = 2 * SMALL_BUDGET / SMALL_MAX as usize;
        let all_alive = Arc::new(std::sync::Barrier::new(threads + 1));
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (f, meta, all_alive) = (Arc::clone(&f), meta.clone(), Arc::clone(&all_alive));
                std::thread::spawn(move || {
                    put(9, format!("conn{i}").as_bytes(), &f, &meta);
                    let held = small_contents(9, format!("conn{i}").as_bytes(), &meta).map_or(0, |b| b.len());
                    all_alive.wait(); // every cache lives until all have read
                    all_alive.wait();
                    held
                })
            })
            .collect();
        all_alive.wait();
        let live = SMALL_HELD.load(Ordering::Acquire);
        all_alive.wait();
        let held: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert!(held > 0 && held <= SMALL_BUDGET, "{threads} threads held {held} bytes, over the budget");
        assert!(live <= SMALL_BUDGET, "{live} bytes held while they lived");
        // Their caches are gone with them, and so is their share: another thread has room.
        let after = std::thread::spawn(move || {
            put(9, b"later", &f, &meta);
            small_contents(9, b"later", &meta).is_some()
        });
        assert!(after.join().unwrap(), "the ended threads' share came back");
    }
}
