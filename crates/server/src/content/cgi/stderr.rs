//! A script's stderr, relayed to the server's own, a line at a time, prefixed and escaped,
//! so that nothing a script writes can pass for a line of the server's (or, where stdout
//! and stderr share a file, for an access-log line).
//!
//! ```text
//! spidey: cgi /cgi-bin/env.sh[4242]: cannot open \x1b[31mdb\x1b[0m
//! ```
//! Each script's stderr is a pipe; one relay thread per process (started with the first
//! script, as the reaper is: never in the forking parents of `fork` and `prefork`) polls
//! every such pipe and writes each line it reads as `spidey: cgi SCRIPT_NAME[PID]: `
//! followed by the line with every byte outside printable ASCII, `\` and `"` written as
//! `\xNN` or `\\`, `\"` (the access log's escaping), in one write. A line longer than
//! [`MAX_LINE`] bytes is written in pieces of that size; a last line without a newline is
//! written when the pipe closes. A pipe is relayed until every writer has closed it (the
//! script, and whatever it started with that stderr). Lines still unread when the serving
//! process exits (a `fork` child at its connection's end) are lost. If the thread cannot be
//! started, scripts get `/dev/null` as their stderr.
//!
//! The relay never blocks a driver: reading happens on its own thread, and a script that
//! floods its stderr only waits for that thread, never for the connection.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};

/// The longest piece of a line written at once.
pub(crate) const MAX_LINE: usize = 1024;

/// The relay thread's inbox: pipes to add, and a pipe whose byte wakes it.
struct Relay {
    new: Mutex<Vec<Source>>,
    wake: OwnedFd,
}

/// One script's stderr, as the relay reads it.
struct Source {
    fd: OwnedFd,
    /// `cgi /cgi-bin/env.sh[4242]`, escaped.
    label: String,
    /// The start of a line whose newline has not come yet.
    partial: Vec<u8>,
}

/// The relay of this process, started on first use; `None` if it could not be.
fn relay() -> Option<&'static Relay> {
    static RELAY: OnceLock<Option<Relay>> = OnceLock::new();
    RELAY
        .get_or_init(|| {
            let flags = rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK;
            let (wake_in, wake) = rustix::pipe::pipe_with(flags).ok()?;
            let started =
                std::thread::Builder::new().name("spidey-cgi-stderr".into()).spawn(move || run(wake_in)).is_ok();
            if !started {
                eprintln!("spidey: cannot start the CGI stderr relay: scripts' stderr is discarded");
            }
            started.then(|| Relay { new: Mutex::new(Vec::new()), wake })
        })
        .as_ref()
}

/// A script's stderr about to be spawned: the child's end, and the end the relay reads.
pub(crate) struct Stderr {
    read: Option<OwnedFd>,
}

impl Stderr {
    /// A new pipe for a script's stderr (or `/dev/null` when there is no relay): the
    /// `Stdio` goes to the child, and [`Stderr::relay`] hands the other end on once the
    /// script's pid is known.
    pub(crate) fn pipe() -> (Stderr, Stdio) {
        if relay().is_none() {
            return (Stderr { read: None }, Stdio::null());
        }
        let Ok((read, write)) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) else {
            return (Stderr { read: None }, Stdio::null());
        };
        if rustix::fs::fcntl_setfl(&read, rustix::fs::OFlags::NONBLOCK).is_err() {
            return (Stderr { read: None }, Stdio::null());
        }
        (Stderr { read: Some(read) }, Stdio::from(write))
    }

    /// The script `name` runs as `pid`: its lines are relayed from now on.
    pub(crate) fn relay(self, name: &str, pid: u32) {
        let (Some(fd), Some(relay)) = (self.read, relay()) else { return };
        let mut label = String::from("cgi ");
        crate::log::escape_into(&mut label, name.as_bytes());
        let _ = write!(label, "[{pid}]");
        relay.new.lock().unwrap_or_else(|e| e.into_inner()).push(Source { fd, label, partial: Vec::new() });
        // Full means a wake-up is pending already.
        let _ = rustix::io::write(&relay.wake, b"w");
    }
}

/// The relay thread: polls the wake pipe and every script's stderr, forever.
fn run(wake: OwnedFd) {
    use rustix::event::{poll, PollFd, PollFlags};
    let Some(relay) = relay() else { return };
    let mut sources: Vec<Source> = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        sources.append(&mut relay.new.lock().unwrap_or_else(|e| e.into_inner()));
        let ready: Vec<bool> = {
            let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(sources.len() + 1);
            fds.push(PollFd::new(&wake, PollFlags::IN));
            fds.extend(sources.iter().map(|s| PollFd::new(&s.fd, PollFlags::IN)));
            match poll(&mut fds, None) {
                Ok(_) => fds.iter().map(|f| !f.revents().is_empty()).collect(),
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return,
            }
        };
        if ready[0] {
            while let Ok(1..) = rustix::io::read(&wake, &mut buf[..]) {}
        }
        let mut i = 0;
        sources.retain_mut(|source| {
            i += 1;
            !ready[i] || source.drain(&mut buf)
        });
    }
}

impl Source {
    /// Reads what the pipe holds and writes the whole lines; false once it has closed.
    fn drain(&mut self, buf: &mut [u8]) -> bool {
        loop {
            match rustix::io::read(self.fd.as_fd(), &mut *buf) {
                Ok(0) => break,
                Ok(n) => self.take(&buf[..n]),
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => return true,
                Err(_) => break,
            }
        }
        if !self.partial.is_empty() {
            write_line(&self.label, &self.partial);
        }
        false
    }

    /// Writes the whole lines in `partial` + `bytes`, keeping the rest.
    fn take(&mut self, bytes: &[u8]) {
        for piece in lines(&mut self.partial, bytes) {
            write_line(&self.label, &piece);
        }
    }
}

/// Splits `partial` + `bytes` into lines (without their `\n`, or [`MAX_LINE`] bytes long),
/// leaving in `partial` what is not a line yet.
fn lines(partial: &mut Vec<u8>, bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for &b in bytes {
        if b == b'\n' {
            out.push(std::mem::take(partial));
        } else {
            partial.push(b);
            if partial.len() == MAX_LINE {
                out.push(std::mem::take(partial));
            }
        }
    }
    out
}

/// Writes `spidey: LABEL: LINE` (escaped) to the server's stderr in one write.
fn write_line(label: &str, line: &[u8]) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut text = format!("spidey: {label}: ");
    crate::log::escape_into(&mut text, line);
    text.push('\n');
    let _ = std::io::stderr().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (partial, bytes) → (lines, partial left)
    type Case<'a> = (&'a [u8], &'a [u8], &'a [&'a [u8]], &'a [u8]);

    #[test]
    fn lines_table() {
        let long = vec![b'a'; MAX_LINE + 3];
        #[rustfmt::skip]
        let cases: [Case; 5] = [
            (b"", b"one\ntwo\n", &[b"one", b"two"], b""),
            (b"on", b"e\ntw", &[b"one"], b"tw"),
            (b"", b"\n\n", &[b"", b""], b""),
            (b"", b"no newline", &[], b"no newline"),
            (b"", &long, &[&[b'a'; MAX_LINE]], b"aaa"),
        ];
        for (partial, bytes, want, left) in cases {
            let mut partial = partial.to_vec();
            let got = lines(&mut partial, bytes);
            assert_eq!(
                got,
                want.iter().map(|l| l.to_vec()).collect::<Vec<_>>(),
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
            assert_eq!(partial, left);
        }
    }
}
