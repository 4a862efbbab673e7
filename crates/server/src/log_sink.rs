//! Where access-log lines go: stdout (the default), or the `--access-log FILE`, reopened by
//! path after SIGHUP so that logrotate can rename the file and have new lines start a new
//! one.
//!
//! SIGHUP reaches one process (the master of `fork` and `prefork`), but every process and
//! thread writes lines. So the signal only bumps a generation number kept in the shared
//! counters ([`crate::metrics`]), and a writer compares it with the generation of the file
//! it holds before each write (one relaxed load per batch of lines): a stale file is
//! reopened there and then, in whichever process. The process that took the signal also
//! reopens at once ([`reopen_if_stale`]), so the new file appears without waiting for a
//! request. A file that cannot be reopened is kept, with one line on stderr.
//!
//! Lines are appended (O_APPEND), so processes sharing the file never overwrite each
//! other's lines, and each batch is one write(2).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The open `--access-log` file; unset means stdout.
static FILE: OnceLock<LogFile> = OnceLock::new();

struct LogFile {
    path: PathBuf,
    /// The file, and the generation it was opened in.
    open: Mutex<(File, u64)>,
}

/// Opens `path` for appending (creating it, mode 0644) and sends every line there from now on.
pub(crate) fn open(path: &Path) -> std::io::Result<()> {
    let file = append(path)?;
    let log = LogFile { path: path.to_path_buf(), open: Mutex::new((file, crate::metrics::log_generation())) };
    FILE.set(log).map_err(|_| std::io::Error::other("the access log is already open"))
}

fn append(path: &Path) -> std::io::Result<File> {
    // std opens with O_CLOEXEC: CGI scripts never inherit the log.
    OpenOptions::new().append(true).create(true).open(path)
}

/// Writes `text`, whole, to the access log.
pub(crate) fn write(text: &[u8]) {
    match FILE.get() {
        // A closed stdout must not take the server down; the lines are dropped.
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text).and_then(|()| out.flush());
        }
        Some(log) => {
            let mut open = log.lock_current();
            let _ = open.0.write_all(text);
        }
    }
}

/// Reopens the file now if a SIGHUP has asked for it since it was opened.
pub(crate) fn reopen_if_stale() {
    if let Some(log) = FILE.get() {
        drop(log.lock_current());
    }
}

impl LogFile {
    /// The file, reopened first if the generation moved on.
    fn lock_current(&self) -> std::sync::MutexGuard<'_, (File, u64)> {
        // Writers never panic while holding the lock; a poisoned one still holds a file.
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let generation = crate::metrics::log_generation();
        if open.1 != generation {
            open.1 = generation;
            match append(&self.path) {
                Ok(file) => open.0 = file,
                Err(e) => eprintln!(
                    "spidey: cannot reopen the access log {}: {e}; still writing to the old file",
                    self.path.display()
                ),
            }
        }
        open
    }
}
