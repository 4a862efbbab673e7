//! The lab's scratch directory (the document root, the CGI scripts' data, the built-in
//! sources, what `prepare` commands build) on a server host reached through a command
//! prefix (`--server-via`).
//!
//! First the lab writes a marker file with a fresh token into the directory and has the
//! server host read it back at the same path (`PREFIX cat PATH`). If the host reads the
//! token (a network namespace, a shared filesystem), the server uses the directory in
//! place. Otherwise the lab copies the whole directory there, through the same prefix and
//! with no shell on the far side, so that any prefix works and no quoting is involved:
//! `PREFIX mktemp -d /tmp/spidey-lab-copy-XXXXXXXX` names a fresh directory there, and
//! `tar -C DIR -cf - .` here is piped into `PREFIX tar -C COPY -xf -`. It is copied again
//! (into the same directory) when a `prepare` command may have added files, and removed
//! with `PREFIX rm -rf COPY` when the experiment ends. The copy runs without a terminal
//! ([`Via::untty`]). The server host needs `cat`, `mktemp`, `tar` and `rm`, as any Unix has.

use crate::run::via::Via;
use anyhow::Context;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

/// Where the copies go on the server host: a fresh directory named by `mktemp`.
const TEMPLATE: &str = "/tmp/spidey-lab-copy-XXXXXXXX";

/// The marker file the server host is asked to read, in the scratch directory.
const MARKER: &str = ".spidey-lab-host-check";

/// The scratch directory on the server host.
pub(crate) struct Placed {
    /// Its path there.
    pub at: PathBuf,
    /// The copy, when the host does not see the directory here; removed on drop.
    copy: Option<Copy>,
}

/// A directory made on the server host; removed through the prefix on drop.
struct Copy {
    via: Via,
    dir: PathBuf,
}

impl Drop for Copy {
    fn drop(&mut self) {
        let out = self.via.command("rm").arg("-rf").arg(&self.dir).stdin(Stdio::null()).output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => warn_not_removed(self, &first_line(&o.stderr, &o.status.to_string())),
            Err(e) => warn_not_removed(self, &e.to_string()),
        }
    }
}

fn warn_not_removed(copy: &Copy, why: &str) {
    eprintln!(
        "spidey lab: warning: cannot remove the document root's copy {} via {}: {why}",
        copy.dir.display(),
        copy.via.name()
    );
}

/// The path at which the host behind `via` sees `base`, placing it there on the first call
/// (`slot` empty) and copying it again when `refresh`.
pub(crate) fn place(via: &Via, base: &Path, slot: &mut Option<Placed>, refresh: bool) -> anyhow::Result<PathBuf> {
    let via = via.untty();
    match slot {
        Some(Placed { at, copy: None }) => return Ok(at.clone()),
        Some(Placed { at, copy: Some(copy) }) => {
            if refresh {
                send(&copy.via, base, &copy.dir)?;
            }
            return Ok(at.clone());
        }
        None => {}
    }
    if sees_same(&via, base)? {
        eprintln!("spidey lab: the server host sees the document root at {}; not copied", base.display());
        return Ok(slot.insert(Placed { at: base.to_path_buf(), copy: None }).at.clone());
    }
    let copy = Copy { dir: make_dir(&via)?, via };
    // From here on, dropping `copy` removes the directory.
    send(&copy.via, base, &copy.dir)?;
    eprintln!(
        "spidey lab: copied the document root to {} on the server host (via {})",
        copy.dir.display(),
        copy.via.name()
    );
    Ok(slot.insert(Placed { at: copy.dir.clone(), copy: Some(copy) }).at.clone())
}

/// Whether the host behind `via` reads the token just written into `base` at the same path.
fn sees_same(via: &Via, base: &Path) -> anyhow::Result<bool> {
    let marker = base.join(MARKER);
    let token = format!("{} {:?} {}", std::process::id(), SystemTime::now(), base.display());
    std::fs::write(&marker, &token).with_context(|| format!("cannot write {}", marker.display()))?;
    let out = via
        .command("cat")
        .arg(&marker)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("cannot run cat via {}", via.name()))?;
    Ok(out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == token)
}

/// A fresh directory on the host behind `via`, named by its `mktemp`.
fn make_dir(via: &Via) -> anyhow::Result<PathBuf> {
    let out = via
        .command("mktemp")
        .args(["-d", TEMPLATE])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run mktemp via {}", via.name()))?;
    anyhow::ensure!(
        out.status.success(),
        "cannot make a directory for the document root via {}: {}",
        via.name(),
        first_line(&out.stderr, &out.status.to_string())
    );
    made_dir(&String::from_utf8_lossy(&out.stdout))
        .with_context(|| format!("mktemp via {} printed no directory from {TEMPLATE}", via.name()))
}

/// The directory `mktemp -d TEMPLATE` printed: one line, the template with its X's filled
/// by letters and digits (so that `rm -rf` can never be given anything else).
fn made_dir(stdout: &str) -> Option<PathBuf> {
    let line = stdout.trim_end_matches(['\r', '\n']);
    let stem = TEMPLATE.trim_end_matches('X');
    let random = line.strip_prefix(stem)?;
    let ok = random.len() == TEMPLATE.len() - stem.len() && random.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then(|| PathBuf::from(line))
}

/// Copies everything in `base` into `dir` on the host behind `via`: `tar -cf -` here piped
/// into `tar -xf -` there.
fn send(via: &Via, base: &Path, dir: &Path) -> anyhow::Result<()> {
    let mut pack = Command::new("tar")
        .arg("-C")
        .arg(base)
        .args(["-cf", "-", "."])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // Not piped: unread until the far side is done, a full pipe would stall both.
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot run tar")?;
    let stream = pack.stdout.take().context("no stdout from tar")?;
    let unpack = via
        .command("tar")
        .arg("-C")
        .arg(dir)
        .args(["-xf", "-"])
        .stdin(stream)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run tar via {}", via.name()));
    let unpacked = unpack.and_then(|c| Ok(c.wait_with_output()?));
    let packed = pack.wait().context("tar")?;
    let unpacked = unpacked?;
    anyhow::ensure!(
        unpacked.status.success(),
        "cannot copy the document root to {} via {}: {}",
        dir.display(),
        via.name(),
        first_line(&unpacked.stderr, &unpacked.status.to_string())
    );
    anyhow::ensure!(packed.success(), "tar -C {} failed ({packed})", base.display());
    Ok(())
}

fn first_line(stderr: &[u8], otherwise: &str) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or(otherwise).trim().to_string()
}

#[cfg(test)]
#[path = "root_copy_tests.rs"]
mod tests;
