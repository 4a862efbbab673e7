//! Request path → an open file or directory beneath ROOT.
//!
//! The path is percent-decoded exactly once; a NUL or a `..` segment (raw or encoded) is
//! refused outright. Then the kernel, not string checks, keeps the lookup inside ROOT:
//! every open is `openat2(root, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, so a
//! symlink whose target lies outside ROOT fails with EXDEV however it was swapped in
//! (aiohttp CVE-2024-23334). Files are opened `O_NONBLOCK`, so a FIFO never blocks the
//! open, and only regular files and directories are answered; anything else is 403.

use super::{Response, StatusCode};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

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
    File(File, Metadata),
    Dir(OpenDir),
}

/// A handle on ROOT that every lookup starts from.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
}

const OPEN_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::CLOEXEC).union(OFlags::NONBLOCK).union(OFlags::NOCTTY);
const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

impl Root {
    pub fn open(path: &Path) -> std::io::Result<Root> {
        let fd = rustix::fs::open(path, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        // Probe openat2 once, so a kernel without it fails at start, not per request.
        rustix::fs::openat2(&fd, ".", OFlags::PATH | OFlags::CLOEXEC, Mode::empty(), BENEATH)
            .map_err(|e| std::io::Error::other(format!("openat2 (Linux 5.6+) is required: {e}")))?;
        Ok(Root { fd })
    }

    /// Resolves a raw (still percent-encoded) request path.
    pub fn resolve(&self, raw_path: &str) -> Result<Resolved, ResolveError> {
        let relative = decode_path(raw_path)?;
        let fd = open_beneath(&self.fd, &relative)?;
        classify(fd)
    }
}

fn open_beneath(dir: &OwnedFd, relative: &[u8]) -> Result<OwnedFd, ResolveError> {
    let path = OsStr::from_bytes(relative);
    loop {
        match rustix::fs::openat2(dir, path, OPEN_FLAGS, Mode::empty(), BENEATH) {
            Err(Errno::AGAIN | Errno::INTR) => continue,
            other => return other.map_err(ResolveError::from_errno),
        }
    }
}

fn classify(fd: OwnedFd) -> Result<Resolved, ResolveError> {
    let file = File::from(fd);
    let meta = file.metadata().map_err(|_| ResolveError::Internal)?;
    if meta.is_file() {
        Ok(Resolved::File(file, meta))
    } else if meta.is_dir() {
        Ok(Resolved::Dir(OpenDir { fd: file.into() }))
    } else {
        Err(ResolveError::Forbidden)
    }
}

/// An open directory beneath ROOT.
#[derive(Debug)]
pub struct OpenDir {
    pub(crate) fd: OwnedFd,
}

impl OpenDir {
    /// `index.html` in this directory, if it is a regular file.
    pub fn index(&self) -> Option<(File, Metadata)> {
        match classify(open_beneath(&self.fd, b"index.html").ok()?) {
            Ok(Resolved::File(file, meta)) => Some((file, meta)),
            _ => None,
        }
    }
}

/// Percent-decodes `raw` once and returns the path relative to ROOT (`.` for ROOT itself).
///
/// Refuses invalid escapes, NUL, and `..` segments; drops empty and `.` segments. A path
/// ending in `/` (or `/.`) keeps one trailing slash, so it only ever names a directory: a
/// file asked for as `/x.txt/` is not found rather than served under a name it does not have.
pub fn decode_path(raw: &str) -> Result<Vec<u8>, ResolveError> {
    let decoded = percent_decode(raw.as_bytes())?;
    if decoded.contains(&0) {
        return Err(ResolveError::BadPath);
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
    Ok(out)
}

fn percent_decode(raw: &[u8]) -> Result<Vec<u8>, ResolveError> {
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
    Ok(out)
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
