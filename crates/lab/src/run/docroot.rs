//! The generated document root an experiment's servers serve: files of the needed sizes,
//! a directory to list, CGI scripts, and a file mix with a missing name for 404s.
//!
//! It lives in a temporary directory named `spidey-lab-<pid>-<random>` after the lab's pid,
//! so a lab killed with SIGKILL (its `TempDir` never dropped) can be recognised later:
//! [`remove_stale`] removes such directories once their lab is gone.

use crate::experiment::{Experiment, Workload, WorkloadKind};
use crate::run::root_copy::Placed;
use anyhow::Context;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The start of a scratch directory's name; the lab's pid and `-` follow.
const PREFIX: &str = "spidey-lab-";

/// A scratch directory with `root/` (served), `data/` (read by CGI scripts) and `src/` (the
/// built-in sources); removed on drop.
pub(crate) struct DocRoot {
    dir: tempfile::TempDir,
    /// This directory on the server host ([`crate::run::hosts::Hosts::place`]).
    pub placed: RefCell<Option<Placed>>,
    /// The URL paths each workload requests (one picked at random per request).
    pub urls: BTreeMap<String, Vec<String>>,
    /// The body length the first URL of each workload must have, when known.
    pub expect: BTreeMap<String, Option<u64>>,
}

impl DocRoot {
    /// The scratch directory holding the others.
    pub fn base(&self) -> &Path {
        self.dir.path()
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// A scratch directory for peers' configuration and logs.
    pub fn scratch(&self) -> PathBuf {
        self.dir.path().join("scratch")
    }

    /// The built-in source files (`{repo}` in a server's commands), written at generation.
    pub fn sources(&self) -> PathBuf {
        self.dir.path().join("src")
    }

    /// Generates what the named workloads need.
    pub fn generate(exp: &Experiment, names: &[String], quick: bool) -> anyhow::Result<DocRoot> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .tempdir()
            .context("cannot create a scratch directory")?;
        for sub in ["root", "root/cgi-bin", "data", "scratch"] {
            std::fs::create_dir_all(dir.path().join(sub))?;
        }
        for (name, text) in crate::experiment::sources::SOURCES {
            let path = dir.path().join("src").join(name);
            std::fs::create_dir_all(path.parent().unwrap_or(dir.path()))?;
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        }
        let (mut urls, mut expect) = (BTreeMap::new(), BTreeMap::new());
        for name in names {
            let w = exp.workload(name).with_context(|| format!("unknown workload '{name}'"))?;
            let paths = make(dir.path(), w, quick).with_context(|| format!("cannot generate workload '{name}'"))?;
            expect.insert(name.clone(), first_len(dir.path(), w, quick));
            urls.insert(name.clone(), paths);
        }
        Ok(DocRoot { dir, placed: RefCell::new(None), urls, expect })
    }
}

/// Removes the scratch directories in `parent` (the temporary directory) whose lab is gone,
/// one line on stderr each. Only `spidey-lab-<pid>-*` entries that are real directories
/// (not symlinks) owned by this user qualify; a failed removal is a warning line.
pub(crate) fn remove_stale(parent: &Path) {
    // Without /proc every lab would look gone, the running ones too.
    let (Ok(entries), true) = (std::fs::read_dir(parent), Path::new("/proc/self/stat").exists()) else { return };
    let uid = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(owner_pid) else { continue };
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if !meta.file_type().is_dir() || meta.uid() != uid || lab_may_run(pid, &meta) {
            continue;
        }
        // remove_dir_all does not follow symlinks inside the directory.
        match std::fs::remove_dir_all(&path) {
            Ok(()) => eprintln!(
                "spidey lab: removed stale scratch directory {} (its lab, pid {pid}, is gone)",
                path.display()
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {} // another lab was quicker
            Err(e) => {
                eprintln!("spidey lab: warning: cannot remove stale scratch directory {}: {e}", path.display())
            }
        }
    }
}

/// The pid in a scratch directory's name, `spidey-lab-<pid>-<random>`.
fn owner_pid(name: &str) -> Option<u32> {
    let (pid, random) = name.strip_prefix(PREFIX)?.split_once('-')?;
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && !pid.starts_with('0');
    (digits && !random.is_empty()).then(|| pid.parse().ok()).flatten()
}

/// How much later than its directory's time a process may seem to have started and still
/// be the lab that made it (the boot time is whole seconds; the clock may have been stepped).
const CLOCK_SLACK: Duration = Duration::from_secs(60);

/// Whether the lab that made a directory with `meta` may still be running: process `pid`
/// exists and started before the directory was made (one started later reuses the pid).
/// When in doubt (unreadable /proc files), yes.
fn lab_may_run(pid: u32, meta: &std::fs::Metadata) -> bool {
    let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat,
        Err(e) => return e.kind() != std::io::ErrorKind::NotFound,
    };
    let made = [meta.created(), meta.modified()].into_iter().flatten().min();
    match (start_time(&stat), made) {
        (Some(started), Some(made)) => started <= made + CLOCK_SLACK,
        _ => true,
    }
}

/// When a process started, from its `/proc/<pid>/stat` (field 22, clock ticks after boot)
/// and the boot time in `/proc/stat`.
fn start_time(stat: &str) -> Option<SystemTime> {
    // The command name (field 2, in parentheses) may hold spaces and parentheses.
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = after_comm.split_whitespace().nth(22 - 3)?.parse().ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: u64 = boot.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(btime) + Duration::from_millis(ticks * 1000 / hz))
}

fn make(base: &Path, w: &Workload, quick: bool) -> anyhow::Result<Vec<String>> {
    let root = base.join("root");
    match &w.kind {
        WorkloadKind::File { size, quick_size } => {
            let size = if quick { quick_size.unwrap_or(*size).0 } else { size.0 };
            let name = format!("file-{size}.bin");
            write_file(&root.join(&name), size)?;
            Ok(vec![format!("/{name}")])
        }
        WorkloadKind::Listing { entries } => {
            let dir = root.join("dir");
            std::fs::create_dir_all(&dir)?;
            for i in 0..*entries {
                write_file(&dir.join(format!("entry-{i:04}.txt")), 100 + i as u64)?;
            }
            Ok(vec!["/dir/".into()])
        }
        WorkloadKind::Cgi { size } => {
            let data = base.join("data").join(format!("page-{}.html", size.0));
            write_file(&data, size.0)?;
            let script = root.join("cgi-bin").join(format!("page-{}.sh", size.0));
            write_script(&script, &data)?;
            Ok(vec![format!("/cgi-bin/page-{}.sh", size.0)])
        }
        WorkloadKind::Path { path } => Ok(vec![path.clone()]),
        WorkloadKind::Mix { files, max_size, with_404 } => mix(&root, *files, max_size.0, *with_404),
    }
}

/// The body length of a workload's first URL, when the lab made it.
fn first_len(base: &Path, w: &Workload, quick: bool) -> Option<u64> {
    match &w.kind {
        WorkloadKind::File { size, quick_size } => Some(if quick { quick_size.unwrap_or(*size).0 } else { size.0 }),
        WorkloadKind::Cgi { size } => Some(size.0),
        WorkloadKind::Mix { .. } => std::fs::metadata(base.join("root/mix/f000.html")).ok().map(|m| m.len()),
        WorkloadKind::Listing { .. } | WorkloadKind::Path { .. } => None,
    }
}

/// Writes `size` bytes of printable text (so listings and CGI output stay valid HTML text).
fn write_file(path: &Path, size: u64) -> anyhow::Result<()> {
    let chunk: Vec<u8> = (0..1 << 20).map(|i| b"spidey lab\n"[i % 11]).collect();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.flush()?;
    Ok(())
}

/// A CGI script that prints a header block and then the data file, named relative to the
/// script's directory (its working directory), so that a copy of the scratch directory
/// elsewhere works too.
fn write_script(path: &Path, data: &Path) -> anyhow::Result<()> {
    let name = data.file_name().context("a data file name")?.to_string_lossy();
    let text = format!("#!/bin/sh\nprintf 'Content-Type: text/html\\r\\n\\r\\n'\nexec cat '../../data/{name}'\n");
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// `files` files of pseudo-random sizes (fixed seed, so every run serves the same mix).
fn mix(root: &Path, files: usize, max_size: u64, with_404: bool) -> anyhow::Result<Vec<String>> {
    let dir = root.join("mix");
    std::fs::create_dir_all(&dir)?;
    let mut state: u64 = 0x5eed;
    let mut urls = Vec::new();
    for i in 0..files {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let size = 1 + (state >> 33) % max_size.max(1);
        write_file(&dir.join(format!("f{i:03}.html")), size)?;
        urls.push(format!("/mix/f{i:03}.html"));
    }
    if with_404 {
        urls.push("/mix/missing.html".into());
    }
    Ok(urls)
}

#[cfg(test)]
mod tests {
    use super::{owner_pid, remove_stale};
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    #[test]
    fn owner_pid_table() {
        let cases = [
            ("spidey-lab-1234-AbC123", Some(1234)),
            ("spidey-lab-1234-x-y", Some(1234)),
            ("spidey-lab-notapid-x", None),
            ("spidey-lab-1234-", None),
            ("spidey-lab-1234", None),
            ("spidey-lab-AbC123", None), // the name before the pid was in it
            ("spidey-lab--x", None),
            ("spidey-lab-+12-x", None),
            ("spidey-lab-0-x", None),
            ("spidey-lab-012-x", None),
            ("spidey-lab-99999999999-x", None),
            ("other-1234-x", None),
        ];
        for (name, want) in cases {
            assert_eq!(owner_pid(name), want, "{name}");
        }
    }

    /// What a test puts under a name in the parent directory.
    enum Kind {
        /// A directory holding a file, a subdirectory and a symlink to the outside directory.
        Dir,
        /// The same, its time an hour back (before this process started: a reused pid).
        OldDir,
        /// A symlink to the outside directory.
        Symlink,
        File,
    }

    #[test]
    fn remove_stale_removes_only_real_directories_of_labs_that_are_gone() {
        let parent = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("precious"), "keep me").unwrap();
        // Pids are below pid_max, so no process has this one.
        let dead: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
        let me = std::process::id();
        let cases = [
            (format!("spidey-lab-{dead}-a1B2c3"), Kind::Dir, false),
            (format!("spidey-lab-{me}-a1B2c3"), Kind::Dir, true),
            (format!("spidey-lab-{me}-reused"), Kind::OldDir, false),
            ("spidey-lab-notapid-x".to_string(), Kind::Dir, true),
            ("spidey-lab-a1B2c3".to_string(), Kind::Dir, true),
            (format!("spidey-lab-{dead}"), Kind::Dir, true),
            (format!("other-{dead}-x"), Kind::Dir, true),
            (format!("spidey-lab-{dead}-link"), Kind::Symlink, true),
            (format!("spidey-lab-{dead}-file"), Kind::File, true),
        ];
        for (name, kind, _) in &cases {
            let path = parent.path().join(name);
            match kind {
                Kind::Dir | Kind::OldDir => make_dir(&path, outside.path(), matches!(kind, Kind::OldDir)),
                Kind::Symlink => std::os::unix::fs::symlink(outside.path(), &path).unwrap(),
                Kind::File => std::fs::write(&path, "a file").unwrap(),
            }
        }

        remove_stale(parent.path());

        for (name, _, kept) in &cases {
            let there = std::fs::symlink_metadata(parent.path().join(name)).is_ok();
            assert_eq!(there, *kept, "{name} kept");
        }
        assert_eq!(std::fs::read_to_string(outside.path().join("precious")).unwrap(), "keep me", "outside untouched");
        assert!(std::fs::symlink_metadata(parent.path().join(format!("spidey-lab-{me}-a1B2c3/link"))).is_ok());
    }

    fn make_dir(path: &Path, outside: &Path, old: bool) {
        std::fs::create_dir_all(path.join("root/cgi-bin")).unwrap();
        std::fs::write(path.join("root/file.bin"), "data").unwrap();
        std::os::unix::fs::symlink(outside, path.join("link")).unwrap();
        if old {
            let hour_ago = SystemTime::now() - Duration::from_secs(3600);
            std::fs::File::open(path).unwrap().set_modified(hour_ago).unwrap();
        }
    }
}
