//! Request path → an open file or directory beneath ROOT.
//!
//! The path is percent-decoded exactly once; a NUL or a `..` segment (raw or encoded) is
//! refused outright. A segment starting with `.` (`.git`, `.env`, `.htpasswd`) is not
//! found (404) unless `--show-hidden` allows dotfiles; `.well-known` (RFC 8615) as the
//! first segment is the one exception. Then the kernel, not string checks, keeps the
//! lookup inside ROOT: every open is `openat2(root, path, RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS)`, so a symlink whose target lies outside ROOT fails with EXDEV
//! however it was swapped in (aiohttp CVE-2024-23334).
//!
//! That open is `O_PATH`: it names the inode without opening it, so a device's driver or a
//! FIFO never sees an open. Only once `fstat` says it is a regular file or a directory is
//! it opened for reading, through `/proc/self/fd/N`, which reopens that very inode (not the
//! path again, which could have been swapped meanwhile); anything else is 403. ROOT's own
//! `/proc` reopen is probed at start, so a missing `/proc` fails there, not per request.
//!
//! A directory's index (`index.html`, or the `--index` names) is looked up from ROOT (as
//! `dir/index.html`), so an index that is a symlink elsewhere inside ROOT is served; one
//! that leads outside is not.

use super::{file_cache, Response, StatusCode};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Why a path has no answer, mapped to a status by [`ResolveError::response`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolveError {
    /// Invalid percent-encoding, a NUL, or a `..` segment → 400.
    BadPath,
    /// Nothing there → 404.
    NotFound,
    /// Outside ROOT, unreadable, or not a regular file or directory → 403.
    Forbidden,
    /// An unexpected system error → 500.
    Internal,
}

impl ResolveError {
    pub fn response(self) -> Response {
        match self {
            ResolveError::BadPath => Response::error(StatusCode::BAD_REQUEST, "The request path is malformed."),
            ResolveError::NotFound => Response::error(StatusCode::NOT_FOUND, "Nothing is served at this address."),
            ResolveError::Forbidden => Response::error(StatusCode::FORBIDDEN, "This resource may not be served."),
            ResolveError::Internal => {
                Response::error(StatusCode::INTERNAL_SERVER_ERROR, "The server failed to open this resource.")
            }
        }
    }

    fn from_errno(e: Errno) -> Self {
        match e {
            Errno::NOENT | Errno::NOTDIR | Errno::NAMETOOLONG => ResolveError::NotFound,
            Errno::ACCESS | Errno::PERM | Errno::XDEV | Errno::LOOP | Errno::NXIO | Errno::NODEV => {
                ResolveError::Forbidden
            }
            _ => ResolveError::Internal,
        }
    }
}

/// What a path resolved to.
#[derive(Debug)]
pub enum Resolved {
    /// A regular file, shared with this thread's [`file_cache`](super::file_cache).
    File(Arc<File>, Metadata),
    Dir(OpenDir),
}

/// A handle on ROOT that every lookup starts from.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    /// This root's identity in the per-thread file cache (never reused in a process).
    id: u64,
    /// `--show-hidden`: serve dot-segments too.
    allow_hidden: bool,
}

/// The lookup: a path handle only, nothing is opened for I/O yet.
const PATH_FLAGS: OFlags = OFlags::PATH.union(OFlags::CLOEXEC);
/// The reopen of a checked regular file or directory.
const OPEN_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::CLOEXEC).union(OFlags::NONBLOCK).union(OFlags::NOCTTY);
const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

impl Root {
    /// Opens ROOT; `allow_hidden` serves dot-segments too (`--show-hidden`).
    pub fn open(path: &Path, allow_hidden: bool) -> std::io::Result<Root> {
        let fd = rustix::fs::open(path, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        // Probe openat2 and the /proc reopen once, so a kernel without openat2 or a system
        // without /proc fails at start, not per request.
        rustix::fs::openat2(&fd, ".", PATH_FLAGS, Mode::empty(), BENEATH)
            .map_err(|e| std::io::Error::other(format!("openat2 (Linux 5.6+) is required: {e}")))?;
        reopen(fd.as_fd())
            .map_err(|e| std::io::Error::other(format!("reopening through /proc/self/fd failed: {e}")))?;
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Ok(Root { fd, id: NEXT_ID.fetch_add(1, Ordering::Relaxed), allow_hidden })
    }

    /// This root's identity in the process (never reused), which the caches key by.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Resolves a raw (still percent-encoded) request path.
    pub fn resolve(&self, raw_path: &str) -> Result<Resolved, ResolveError> {
        self.resolve_decoded(&decode_path(raw_path)?)
    }

    /// Resolves a path [`decode_path`] returned.
    pub fn resolve_decoded(&self, relative: &[u8]) -> Result<Resolved, ResolveError> {
        if !self.allow_hidden && hidden(relative) {
            return Err(ResolveError::NotFound);
        }
        if let Some((file, meta)) = file_cache::get(self.id, relative) {
            return Ok(Resolved::File(file, meta));
        }
        let fd = open_beneath(&self.fd, relative)?;
        let resolved = classify(fd, relative)?;
        if let Resolved::File(file, meta) = &resolved {
            file_cache::put(self.id, relative, file, meta);
        }
        Ok(resolved)
    }

    /// The bytes of a small regular file this thread resolved at `relative`, as of `meta`
    /// (see [`file_cache::small_contents`]).
    pub(crate) fn small_contents(&self, relative: &[u8], meta: &Metadata) -> Option<Arc<[u8]>> {
        file_cache::small_contents(self.id, relative, meta)
    }

    /// `meta` as the file at `relative` has it now, for a caller that sends the file from
    /// disk (see [`file_cache::checked_for_disk`]); `None` if it changed.
    pub(crate) fn checked_for_disk(&self, relative: &[u8], file: &File, meta: Metadata) -> Option<Metadata> {
        file_cache::checked_for_disk(self.id, relative, file, meta)
    }

    /// The first of `names` in `dir` that is a regular file, looked up from ROOT: an index
    /// that is a symlink to elsewhere inside ROOT is followed, one leading outside is not.
    /// Also returns the index's path relative to ROOT (its precompressed siblings are found by it).
    pub fn index(&self, dir: &OpenDir, names: &[Vec<u8>]) -> Option<(Arc<File>, Metadata, Vec<u8>)> {
        let mut base = dir.relative.clone();
        if base == b"." {
            base.clear();
        } else if !base.ends_with(b"/") {
            base.push(b'/');
        }
        names.iter().find_map(|name| {
            let path = [base.as_slice(), name].concat();
            match self.resolve_decoded(&path) {
                Ok(Resolved::File(file, meta)) => Some((file, meta, path)),
                _ => None,
            }
        })
    }
}

/// Whether a decoded path has a dot-segment other than a leading `.well-known`.
pub(crate) fn hidden(relative: &[u8]) -> bool {
    relative
        .split(|&b| b == b'/')
        .enumerate()
        .any(|(i, segment)| segment.starts_with(b".") && segment != b"." && !(i == 0 && segment == b".well-known"))
}

/// Whether a raw request path has a segment starting with `.` once percent-decoded (`.`,
/// `..`, `.git`, `%2e`, `.well-known`): what [`decode_path`] drops or refuses, and dotfiles.
pub(crate) fn has_dot_segment(raw: &str) -> bool {
    let decoded = percent_decode(raw.as_bytes()).unwrap_or_default();
    raw.split('/').any(|s| s.starts_with('.')) || decoded.split(|&b| b == b'/').any(|s| s.starts_with(b"."))
}

fn open_beneath(dir: &OwnedFd, relative: &[u8]) -> Result<OwnedFd, ResolveError> {
    let path = OsStr::from_bytes(relative);
    loop {
        match rustix::fs::openat2(dir, path, PATH_FLAGS, Mode::empty(), BENEATH) {
            Err(Errno::AGAIN | Errno::INTR) => continue,
            other => return other.map_err(ResolveError::from_errno),
        }
    }
}

/// Opens for reading the very inode an `O_PATH` descriptor names (proc(5): opening
/// `/proc/self/fd/N` reopens the file the descriptor refers to, not a path looked up again).
fn reopen(fd: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    // Written on the stack: a cache miss allocates nothing for the path.
    let mut path = [0u8; 32];
    let room = path.len();
    let len = {
        let mut rest = &mut path[..];
        std::io::Write::write_fmt(&mut rest, format_args!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map_err(|_| Errno::NAMETOOLONG)?;
        room - rest.len()
    };
    let proc_path = std::str::from_utf8(&path[..len]).map_err(|_| Errno::INVAL)?;
    loop {
        match rustix::fs::open(proc_path, OPEN_FLAGS, Mode::empty()) {
            Err(Errno::AGAIN | Errno::INTR) => continue,
            other => return other,
        }
    }
}

/// Checks the type on the `O_PATH` handle, then reopens only regular files and directories.
/// The metadata is read once, from the handle (statx with AT_EMPTY_PATH works on `O_PATH`
/// descriptors): the reopened descriptor names the same inode, so asking again would only
/// repeat the system call on every request.
fn classify(fd: OwnedFd, relative: &[u8]) -> Result<Resolved, ResolveError> {
    let handle = File::from(fd);
    let meta = handle.metadata().map_err(|_| ResolveError::Internal)?;
    if !(meta.is_file() || meta.is_dir()) {
        return Err(ResolveError::Forbidden);
    }
    let file = File::from(reopen(handle.as_fd()).map_err(ResolveError::from_errno)?);
    Ok(if meta.is_file() {
        Resolved::File(Arc::new(file), meta)
    } else {
        Resolved::Dir(OpenDir { fd: file.into(), relative: relative.to_vec() })
    })
}

/// An open directory beneath ROOT.
#[derive(Debug)]
pub struct OpenDir {
    pub(crate) fd: OwnedFd,
    /// Its path relative to ROOT, as [`decode_path`] returned it.
    relative: Vec<u8>,
}

/// Percent-decodes `raw` once and returns the path relative to ROOT (`.` for ROOT itself).
///
/// Refuses invalid escapes, NUL, and `..` segments; drops empty and `.` segments. A path
/// ending in `/` (or `/.`) keeps one trailing slash, so it only ever names a directory: a
/// file asked for as `/x.txt/` is not found rather than served under a name it does not have.
///
/// A path that is already what decoding makes of it (no escape, one leading slash, no empty,
/// `.` or `..` segment: most paths) is returned borrowed, without its leading slash, so
/// decoding it costs no allocation.
pub fn decode_path(raw: &str) -> Result<Cow<'_, [u8]>, ResolveError> {
    let decoded = percent_decode(raw.as_bytes())?;
    if decoded.contains(&0) {
        return Err(ResolveError::BadPath);
    }
    if let Cow::Borrowed(bytes) = decoded {
        if let Some(relative) = canonical(bytes) {
            return Ok(Cow::Borrowed(relative));
        }
    }
    let mut out = Vec::with_capacity(decoded.len());
    let mut trailing_slash = false;
    for segment in decoded.split(|&b| b == b'/') {
        trailing_slash = matches!(segment, b"" | b".");
        match segment {
            b"" | b"." => {}
            b".." => return Err(ResolveError::BadPath),
            s => {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(s);
            }
        }
    }
    if out.is_empty() {
        out.push(b'.');
    } else if trailing_slash {
        out.push(b'/');
    }
    Ok(Cow::Owned(out))
}

/// `path` without its leading slash, when that is what [`decode_path`] would make of it:
/// one leading `/`, then segments none of which is empty, `.` or `..`, and at most one `/`
/// after the last.
fn canonical(path: &[u8]) -> Option<&[u8]> {
    let relative = path.strip_prefix(b"/")?;
    let segments = relative.strip_suffix(b"/").unwrap_or(relative);
    let plain = !segments.is_empty() && segments.split(|&b| b == b'/').all(|s| !matches!(s, b"" | b"." | b".."));
    plain.then_some(relative)
}

/// `raw` with its `%XX` escapes decoded: itself, borrowed, when it has none (most paths),
/// so decoding costs no allocation then.
fn percent_decode(raw: &[u8]) -> Result<Cow<'_, [u8]>, ResolveError> {
    if !raw.contains(&b'%') {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'%' {
            let hex = raw.get(i + 1..i + 3).ok_or(ResolveError::BadPath)?;
            let hi = (hex[0] as char).to_digit(16).ok_or(ResolveError::BadPath)?;
            let lo = (hex[1] as char).to_digit(16).ok_or(ResolveError::BadPath)?;
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_table() {
        let cases: &[(&str, Result<&[u8], ResolveError>)] = &[
            ("/", Ok(b".")),
            ("/a/b.txt", Ok(b"a/b.txt")),
            ("//a///b", Ok(b"a/b")),
            ("/./a", Ok(b"a")),
            ("/a%20b", Ok(b"a b")),
            ("/%3Cscript%3E", Ok(b"<script>")),
            ("/%ff", Ok(b"\xff")),
            ("/%252e%252e/x", Ok(b"%2e%2e/x")),
            ("/a/..%5cb", Ok(b"a/..\\b")),
            ("/..", Err(ResolveError::BadPath)),
            ("/a/../b", Err(ResolveError::BadPath)),
            ("/%2e%2e/etc/passwd", Err(ResolveError::BadPath)),
            ("/%2E%2E/etc/passwd", Err(ResolveError::BadPath)),
            ("/.%2e/x", Err(ResolveError::BadPath)),
            ("/a/%2e%2e%2f%2e%2e%2fetc", Err(ResolveError::BadPath)),
            ("/a%00b", Err(ResolveError::BadPath)),
            ("/a%2", Err(ResolveError::BadPath)),
            ("/a%zz", Err(ResolveError::BadPath)),
        ];
        for (raw, want) in cases {
            assert_eq!(decode_path(raw).as_deref().map_err(|e| *e), *want, "{raw}");
        }
    }

    /// Which paths decode without a copy: those already in the decoded form.
    #[test]
    fn plain_paths_are_decoded_without_a_copy() {
        let cases = [
            ("/1k.bin", true),
            ("/a/b.txt", true),
            ("/dir/", true),
            ("/.well-known/x", true),
            ("/", false),
            ("//a", false),
            ("/a//b", false),
            ("/a/./b", false),
            ("/a/.", false),
            ("/dir//", false),
            ("/a%20b", false),
            ("/a/..", false),
            ("*", false),
        ];
        for (raw, borrowed) in cases {
            let got = decode_path(raw);
            assert_eq!(matches!(got, Ok(Cow::Borrowed(_))), borrowed, "{raw}: {got:?}");
        }
    }

    #[test]
    fn dot_segment_table() {
        let cases = [
            ("/", false),
            ("/app/route", false),
            ("/a.b/c.d", false),
            ("/./x", true),
            ("/a/.", true),
            ("/../x", true),
            ("/%2e/x", true),
            ("/%2E%2e/x", true),
            ("/.git/config", true),
            ("/a/%2egit", true),
            ("/.well-known/x", true),
            ("/a%2f.b", true),
        ];
        for (raw, want) in cases {
            assert_eq!(has_dot_segment(raw), want, "{raw}");
        }
    }

    #[test]
    fn hidden_table() {
        let cases: &[(&[u8], bool)] = &[
            (b".", false),
            (b"a/b.txt", false),
            (b"a.b/c.d", false),
            (b".git/config", true),
            (b".git/", true),
            (b".env", true),
            (b"list/.hidden", true),
            (b"a/.b/c", true),
            (b"..x", true),
            (b".well-known/security.txt", false),
            (b".well-known/", false),
            (b".well-known/.x", true),
            (b"a/.well-known/x", true),
            (b".well-knownx/y", true),
        ];
        for (path, want) in cases {
            assert_eq!(hidden(path), *want, "{:?}", String::from_utf8_lossy(path));
        }
    }

    #[test]
    fn a_trailing_slash_survives_decoding_so_files_are_not_served_as_directories() {
        let cases: &[(&str, &[u8])] = &[
            ("/hello.txt/", b"hello.txt/"),
            ("/hello.txt/.", b"hello.txt/"),
            ("/hello.txt%2f", b"hello.txt/"),
            ("//a///b/", b"a/b/"),
            ("/./a/.", b"a/"),
            ("/", b"."),
            ("//", b"."),
            ("/./", b"."),
        ];
        for (raw, want) in cases {
            assert_eq!(decode_path(raw).as_deref(), Ok(*want), "{raw}");
        }
    }
}
