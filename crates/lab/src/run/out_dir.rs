//! The output directory, `--out`: every file the lab writes there (results, report, plots,
//! the machine's description) goes through one open handle on it, never through a path in
//! which someone could have planted a symbolic link.
//!
//! The directory is made if missing. An existing one must be a directory of the user running
//! the lab that others cannot write to, and not a symbolic link; anything else is refused
//! (exit 2), since a shared directory (`/tmp/lab-out`, made by someone else) may hold links
//! to files elsewhere. Within it, a file is written afresh: whatever had its name (an earlier
//! report, a link) is removed, never followed, and a new file is created with `O_CREAT |
//! O_EXCL | O_NOFOLLOW`. A file kept and appended to (`results.jsonl` with `--resume`) is
//! opened with `O_NOFOLLOW` and must be a regular file of this user's.

use anyhow::Context;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use spidey_config::ConfigError;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// An output directory, open: its files are named relative to the handle, not the path.
pub(crate) struct OutDir {
    path: PathBuf,
    dir: OwnedFd,
}

impl OutDir {
    /// `path`, made (with its parents) if missing; refused when it is a symbolic link, or
    /// not a directory of this user's, or writable by others.
    pub fn open(path: &Path) -> anyhow::Result<OutDir> {
        // Without a trailing slash, which would make the open follow a link.
        let path: PathBuf = path.components().collect();
        if path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(refused(&path, "is a symbolic link").into());
        }
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let dir = rustix::fs::open(&path, dir_flags(), Mode::empty())
            .with_context(|| format!("cannot open {}", path.display()))?;
        check_owned(&rustix::fs::fstat(&dir)?, &path)?;
        Ok(OutDir { path, dir })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `name` in this one, made if missing; a link in its place is removed
    /// and a directory made instead. Refused as [`OutDir::open`] refuses.
    pub fn subdir(&self, name: &str) -> anyhow::Result<OutDir> {
        let path = self.name(name)?;
        let planted = rustix::fs::statat(&self.dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
        if planted {
            rustix::fs::unlinkat(&self.dir, name, AtFlags::empty())
                .with_context(|| format!("cannot remove the link {}", path.display()))?;
        }
        match rustix::fs::mkdirat(&self.dir, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
        }
        let dir = rustix::fs::openat(&self.dir, name, dir_flags(), Mode::empty())
            .with_context(|| format!("cannot open {}", path.display()))?;
        check_owned(&rustix::fs::fstat(&dir)?, &path)?;
        Ok(OutDir { path, dir })
    }

    /// A new, empty file `name`, open for writing: whatever had the name before (an earlier
    /// run's file, a planted link) is removed, never followed or written through.
    pub fn create(&self, name: &str) -> anyhow::Result<File> {
        let path = self.name(name)?;
        match rustix::fs::unlinkat(&self.dir, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(e).with_context(|| format!("cannot replace {}", path.display())),
        }
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let file = rustix::fs::openat(&self.dir, name, flags, Mode::from_raw_mode(0o644))
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(File::from(file))
    }

    /// Writes `bytes` as the file `name`, created afresh by [`OutDir::create`].
    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
        self.create(name)?
            .write_all(bytes.as_ref())
            .with_context(|| format!("cannot write {}", self.path.join(name).display()))
    }

    /// The file `name` open for appending, made if missing; refused when it is a link, or
    /// not a regular file of this user's.
    pub fn append(&self, name: &str) -> anyhow::Result<File> {
        let path = self.name(name)?;
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let file = match rustix::fs::openat(&self.dir, name, flags, Mode::from_raw_mode(0o644)) {
            Err(Errno::LOOP) => return Err(refused(&path, "is a symbolic link").into()),
            opened => opened.with_context(|| format!("cannot open {}", path.display()))?,
        };
        let st = rustix::fs::fstat(&file)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(refused(&path, "is not a regular file").into());
        }
        check_owned(&st, &path)?;
        Ok(File::from(file))
    }

    /// Removes every file of the directory whose name ends in `.{extension}`.
    pub fn remove_by_extension(&self, extension: &str) -> anyhow::Result<()> {
        let suffix = format!(".{extension}");
        for entry in rustix::fs::Dir::read_from(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            if name.to_bytes().ends_with(suffix.as_bytes()) && entry.file_type() != FileType::Directory {
                rustix::fs::unlinkat(&self.dir, name, AtFlags::empty()).with_context(|| {
                    format!("cannot remove {}", self.path.join(name.to_string_lossy().as_ref()).display())
                })?;
            }
        }
        Ok(())
    }

    /// The path of `name` in the directory, for messages; an error unless `name` is one
    /// file name (no `/`, not `.` or `..`), which keeps every file inside the directory.
    fn name(&self, name: &str) -> anyhow::Result<PathBuf> {
        anyhow::ensure!(
            !name.is_empty() && !name.contains('/') && name != "." && name != "..",
            "'{name}' is not a file name in {}",
            self.path.display()
        );
        Ok(self.path.join(name))
    }
}

/// How a directory is opened: never through a link.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Refuses what another user owns or may write to: they could plant links in it.
fn check_owned(st: &Stat, path: &Path) -> Result<(), ConfigError> {
    let me = rustix::process::geteuid().as_raw();
    if st.st_uid != me {
        return Err(refused(path, &format!("belongs to uid {}, not to this user (uid {me})", st.st_uid)));
    }
    if st.st_mode & 0o002 != 0 {
        return Err(refused(path, "is writable by every user"));
    }
    Ok(())
}

fn refused(path: &Path, why: &str) -> ConfigError {
    ConfigError(format!(
        "{} {why}: refused, as someone else could have planted links in it; give --out a new directory or one of your own",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::OutDir;

    /// Only a file name is written: one that would leave the directory is an error, and
    /// nothing is made outside it.
    #[test]
    fn names_that_leave_the_directory_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let out = OutDir::open(&tmp.path().join("out")).unwrap();
        for name in ["../escape", "sub/escape", "..", ".", ""] {
            let err = out.create(name).map(|_| ()).unwrap_err();
            assert!(err.to_string().contains("is not a file name in"), "{name:?}: {err}");
        }
        assert!(!tmp.path().join("escape").exists());
    }
}
