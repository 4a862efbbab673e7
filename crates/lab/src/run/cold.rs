//! Cold caches before a point (`cold` on a sweep), for a seed that measured a cold start
//! (002's N = 10 row), which a server answering from a warm page cache cannot show. A cold
//! point is one batch of the seed's requests (`runner.rs`), not batches repeated until
//! the lab's minimum point duration: each would need the caches made cold again, and the
//! cold cost would be spread over the minimum duration instead of the seed's N. (A try
//! measured again because the machine was disturbed is made cold again first.)
//!
//! `cold = "machine"` drops the kernel's clean caches, the page cache and the dentries and
//! inodes (sync(2), then `3` written to /proc/sys/vm/drop_caches, proc(5)), on the server's
//! host when it runs elsewhere: the server's binary and libraries go cold too. It needs
//! root; without it the sweep is skipped with a note. `cold = "files"` evicts the files
//! of the document root from the page cache with posix_fadvise(POSIX_FADV_DONTNEED)
//! (posix_fadvise(2)), which any user may ask for a file it can open (on the server host
//! when it is this one).

use crate::experiment::Cold;
use crate::run::hosts::Hosts;
use std::path::Path;
use std::process::Stdio;

/// The kernel's switch for dropping clean caches (proc(5)).
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// What a cold point does before its batch ([`Cold`] is the experiment file's `cold`).
impl Cold {
    /// Why this run cannot make its caches cold this way, if it cannot.
    pub fn unavailable(self, hosts: &Hosts) -> Option<&'static str> {
        let root = rustix::process::geteuid().is_root() && Path::new(DROP_CACHES).exists();
        match (self, hosts.server_via()) {
            (Cold::Machine, None) if !root => {
                Some("this sweep drops the machine's caches (cold = \"machine\"), which needs root")
            }
            (Cold::Files, Some(_)) => {
                Some("this sweep evicts the served files (cold = \"files\"), which needs the server on this host")
            }
            _ => None,
        }
    }

    /// The record's note.
    pub fn note(self) -> &'static str {
        match self {
            Cold::Machine => "cold: one batch after the page cache, dentries and inodes were dropped (drop_caches)",
            Cold::Files => {
                "cold: one batch after the document root's files were evicted from the page cache (posix_fadvise DONTNEED)"
            }
        }
    }

    /// Makes the caches cold for the server that serves `root` (the directory as this
    /// host sees it) on `hosts`.
    pub fn apply(self, root: &Path, hosts: &Hosts) -> anyhow::Result<()> {
        match (self, hosts.server_via()) {
            (Cold::Machine, None) => {
                rustix::fs::sync();
                std::fs::write(DROP_CACHES, "3").map_err(|e| anyhow::anyhow!("cannot write {DROP_CACHES}: {e}"))
            }
            (Cold::Machine, Some(via)) => {
                let status = via
                    .command("sh")
                    .args(["-c", &format!("sync && echo 3 > {DROP_CACHES}")])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .status()?;
                anyhow::ensure!(status.success(), "dropping the caches via {} failed ({status})", via.name());
                Ok(())
            }
            (Cold::Files, None) => evict(root).map(|_| ()),
            (Cold::Files, Some(via)) => anyhow::bail!("cannot evict files on the server host {}", via.name()),
        }
    }
}

/// Evicts every regular file under `dir` from the page cache; returns how many.
pub(crate) fn evict(dir: &Path) -> anyhow::Result<usize> {
    let mut n = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            n += evict(&entry.path())?;
        } else if kind.is_file() {
            let file = std::fs::File::open(entry.path())?;
            rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::evict;
    use std::process::Command;

    /// The resident pages of `path`, as fincore(1) counts them.
    fn resident(path: &std::path::Path) -> Option<u64> {
        let out =
            Command::new("fincore").args(["--bytes", "--noheadings", "--output", "RES"]).arg(path).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    }

    /// Files read into the page cache (nested, too) are no longer resident after `evict`:
    /// without it, they stay (the check can fail). On disk, not tmpfs, whose pages are the
    /// files themselves.
    #[test]
    fn evict_empties_the_page_cache_of_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        const TMPFS_MAGIC: u64 = 0x0102_1994;
        if rustix::fs::statfs(dir.path()).is_ok_and(|s| s.f_type as u64 == TMPFS_MAGIC) {
            eprintln!("skipped: the temporary directory is tmpfs");
            return;
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let files = [dir.path().join("a.bin"), dir.path().join("sub/b.bin")];
        for f in &files {
            std::fs::write(f, vec![7u8; 1 << 20]).unwrap();
        }
        let Some(_) = resident(&files[0]) else {
            eprintln!("skipped: no fincore(1)");
            return;
        };
        rustix::fs::sync(); // dirty pages are not dropped
        for f in &files {
            assert!(std::fs::read(f).unwrap().len() == 1 << 20);
            assert!(resident(f).unwrap() > 0, "{f:?} read but not resident: the test cannot tell");
        }
        assert_eq!(evict(dir.path()).unwrap(), 2);
        for f in &files {
            assert_eq!(resident(f), Some(0), "{f:?} still resident");
        }
    }
}
