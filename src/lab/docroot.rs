//! The generated document root an experiment's servers serve: files of the needed sizes,
//! a directory to list, CGI scripts, and a file mix with a missing name for 404s.

use crate::lab::experiment::{Experiment, Workload, WorkloadKind};
use anyhow::Context;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A scratch directory with `root/` (served) and `data/` (read by CGI scripts); removed on drop.
pub(crate) struct DocRoot {
    dir: tempfile::TempDir,
    /// The URL paths each workload requests (one picked at random per request).
    pub urls: BTreeMap<String, Vec<String>>,
    /// The body length the first URL of each workload must have, when known.
    pub expect: BTreeMap<String, Option<u64>>,
}

impl DocRoot {
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// A scratch directory for peers' configuration and logs.
    pub fn scratch(&self) -> PathBuf {
        self.dir.path().join("scratch")
    }

    /// Generates what the named workloads need.
    pub fn generate(exp: &Experiment, names: &[String], quick: bool) -> anyhow::Result<DocRoot> {
        let dir =
            tempfile::Builder::new().prefix("spidey-lab-").tempdir().context("cannot create a scratch directory")?;
        for sub in ["root", "root/cgi-bin", "data", "scratch"] {
            std::fs::create_dir_all(dir.path().join(sub))?;
        }
        let (mut urls, mut expect) = (BTreeMap::new(), BTreeMap::new());
        for name in names {
            let w = exp.workload(name).with_context(|| format!("unknown workload '{name}'"))?;
            let paths = make(dir.path(), w, quick).with_context(|| format!("cannot generate workload '{name}'"))?;
            expect.insert(name.clone(), first_len(dir.path(), w, quick));
            urls.insert(name.clone(), paths);
        }
        Ok(DocRoot { dir, urls, expect })
    }
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

/// A CGI script that prints a header block and then the data file.
fn write_script(path: &Path, data: &Path) -> anyhow::Result<()> {
    let text = format!("#!/bin/sh\nprintf 'Content-Type: text/html\\r\\n\\r\\n'\nexec cat '{}'\n", data.display());
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
