//! One `uring` connection: the operations it has in flight, and how its response goes out
//! (ring send for the head, sendfile or linked splices for file bodies). The loop that
//! owns these lives in `uring.rs`.

use super::session::{Sent, Session};
use super::timer::Kind;
use spidey_sys::uring::Ring;
use std::net::TcpStream;
use std::os::fd::{AsFd, OwnedFd};

/// Per-connection operations, in the low byte of the user data.
pub(super) const RECV: u64 = 1;
pub(super) const SEND: u64 = 2;
pub(super) const SPLICE_IN: u64 = 3;
pub(super) const SPLICE_OUT: u64 = 4;
pub(super) const POLL_OUT: u64 = 5;
/// Polls of a CGI script's stdout (readable) and stdin (writable).
pub(super) const SCRIPT_OUT: u64 = 6;
pub(super) const SCRIPT_IN: u64 = 7;

/// The pipe size asked for file bodies: the most one splice pair moves.
const PIPE_SIZE: usize = 256 * 1024;
/// File bodies up to this size go out with sendfile(2) from the loop thread rather than
/// splices on io_uring's worker threads.
const SMALL_FILE: u64 = 64 * 1024;
/// Idle pipes kept per loop for reuse.
const PIPES_KEPT: usize = 256;

/// One connection. `generation` tells its operations from those of an earlier
/// connection in the same slot; `*_armed` say which operations are in flight.
pub(super) struct Conn {
    pub(super) stream: TcpStream,
    pub(super) session: Session,
    pub(super) generation: u64,
    pub(super) stamp: u64,
    /// The kind of the deadline `stamp` belongs to.
    pub(super) deadline: Kind,
    pub(super) recv_armed: bool,
    pub(super) send_armed: bool,
    pub(super) splice_in_armed: bool,
    pub(super) splice_out_armed: bool,
    /// Waiting for room in the socket after a splice into it found none (EAGAIN).
    pub(super) poll_armed: bool,
    /// Polls of a CGI script's pipes in flight.
    pub(super) script_polls: u8,
    /// The pipe a file body goes through, while one is being sent, and the bytes in it.
    pub(super) pipe: Option<Pipe>,
    pub(super) in_pipe: usize,
}

/// A pipe for splicing file bodies, reused across responses once empty.
pub(super) struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    size: usize,
}

impl Pipe {
    pub(super) fn new() -> std::io::Result<Pipe> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let size = rustix::pipe::fcntl_setpipe_size(&write, PIPE_SIZE)
            .or_else(|_| rustix::pipe::fcntl_getpipe_size(&write))?;
        Ok(Pipe { read, write, size })
    }
}

impl Conn {
    /// Whether an operation that changes the response's progress is in flight.
    pub(super) fn busy(&self) -> bool {
        self.send_armed || self.splice_in_armed || self.splice_out_armed || self.poll_armed || self.script_polls > 0
    }

    /// Polls a running script's pipes through the ring; any completion cancels the other,
    /// and the connection pumps again once both are resolved.
    pub(super) fn watch_script(&mut self, slot: usize, ring: &mut Ring) -> bool {
        let Some((stdout, stdin, _)) = self.session.script_fds() else { return false };
        let (pollin, pollout) =
            (rustix::event::PollFlags::IN.bits().into(), rustix::event::PollFlags::OUT.bits().into());
        let (ud_out, ud_in) = (self.ud(slot, SCRIPT_OUT), self.ud(slot, SCRIPT_IN));
        let mut armed = 0;
        for (fd, events, ud) in [(stdout, pollin, ud_out), (stdin, pollout, ud_in)] {
            if let Some(fd) = fd {
                if ring.poll(fd, events, ud).is_err() {
                    return false;
                }
                armed += 1;
            }
        }
        self.script_polls = armed;
        armed > 0
    }

    pub(super) fn ud(&self, slot: usize, op: u64) -> u64 {
        user_data(slot, self.generation, op)
    }

    /// Submits the next part of the response. Returns false when nothing is left to send.
    ///
    /// The head (and any in-memory body) goes out as a ring send. A large file body is
    /// linked to it as file → pipe → socket splices, which io_uring runs on its worker
    /// threads; a small one (most requests) is not worth that hand-off and goes out with
    /// one sendfile(2) once the head's send has completed, waiting for POLLOUT through the
    /// ring if the socket is full. Both move file bytes without a copy through user space.
    pub(super) fn submit_send(&mut self, slot: usize, ring: &mut Ring, pipes: &mut Vec<Pipe>) -> std::io::Result<bool> {
        let head_left = !self.session.out().is_empty();
        let file_left = self.session.file_body().map_or(0, |(_, offset, end)| end - *offset);
        let body_follows = file_left > 0 || self.in_pipe > 0;
        if !body_follows {
            self.session.end_body();
            if !head_left {
                return Ok(false);
            }
        }
        let spliced = body_follows && (self.pipe.is_some() || file_left > SMALL_FILE);
        if spliced && self.pipe.is_none() {
            self.pipe = Some(match pipes.pop() {
                Some(p) => p,
                None => Pipe::new()?,
            });
        }
        if head_left {
            let (buf, from) = self.session.lend_out();
            self.send_armed = true;
            ring.send(self.stream.as_fd(), buf, from, body_follows, spliced, self.ud(slot, SEND))?;
            if !spliced {
                return Ok(true); // a small body follows once this completes
            }
        }
        let Some(pipe) = &self.pipe else {
            return match self.session.send_body(&self.stream) {
                Sent::Done => Ok(false),
                Sent::Blocked => {
                    self.poll_armed = true;
                    let pollout = rustix::event::PollFlags::OUT.bits().into();
                    ring.poll(self.stream.as_fd(), pollout, self.ud(slot, POLL_OUT)).map(|()| true)
                }
                _ => Err(std::io::ErrorKind::BrokenPipe.into()),
            };
        };
        if self.in_pipe > 0 {
            let len = u32::try_from(self.in_pipe).unwrap_or(u32::MAX);
            self.splice_out_armed = true;
            let ud = self.ud(slot, SPLICE_OUT);
            ring.splice(pipe.read.as_fd(), None, self.stream.as_fd(), len, file_left > 0, false, ud)?;
            return Ok(true);
        }
        let chunk = file_left.min(pipe.size as u64);
        let len = chunk as u32;
        let (ud_in, ud_out) = (self.ud(slot, SPLICE_IN), self.ud(slot, SPLICE_OUT));
        let Some((file, offset, _)) = self.session.file_body() else { return Ok(true) };
        // Linked: the socket splice starts only once the pipe holds the whole chunk.
        ring.splice(file.as_fd(), Some(*offset), pipe.write.as_fd(), len, false, true, ud_in)?;
        ring.splice(pipe.read.as_fd(), None, self.stream.as_fd(), len, file_left > chunk, false, ud_out)?;
        self.splice_in_armed = true;
        self.splice_out_armed = true;
        Ok(true)
    }

    /// Gives the pipe back to the loop once a body is done (only if it is empty).
    pub(super) fn release_pipe(&mut self, pipes: &mut Vec<Pipe>) {
        if let Some(pipe) = self.pipe.take() {
            if self.in_pipe == 0 && !self.splice_in_armed && !self.splice_out_armed && pipes.len() < PIPES_KEPT {
                pipes.push(pipe);
            }
        }
        self.in_pipe = 0;
    }

    /// Records the completion of one of this connection's operations (`op`); returns
    /// false if the connection must close.
    pub(super) fn complete(&mut self, slot: usize, op: u64, event: Event, ring: &mut Ring) -> bool {
        let cancelled = |e: &std::io::Error| e.raw_os_error() == Some(rustix::io::Errno::CANCELED.raw_os_error());
        match event {
            Event::Received(0, starved) => {
                self.recv_armed = false;
                starved // else end of stream or error
            }
            Event::Received(_, _) => {
                self.recv_armed = false;
                true
            }
            Event::Sent(r, buf) => {
                self.send_armed = false;
                self.session.return_out(buf, *r.as_ref().unwrap_or(&0));
                r.is_ok()
            }
            Event::Spliced(r) if op == SPLICE_IN => {
                self.splice_in_armed = false;
                match r {
                    Ok(0) => false, // the file shrank under us
                    Ok(n) => {
                        self.in_pipe += n;
                        if let Some((_, offset, _)) = self.session.file_body() {
                            *offset += n as u64;
                        }
                        true
                    }
                    Err(e) => cancelled(&e),
                }
            }
            Event::Spliced(r) => {
                self.splice_out_armed = false;
                match r {
                    Ok(0) => false,
                    Ok(n) => {
                        self.in_pipe = self.in_pipe.saturating_sub(n);
                        true
                    }
                    // The socket is non-blocking and splice does not wait for room
                    // in it: wait for POLLOUT through the ring, then splice again.
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        self.poll_armed = true;
                        let pollout = rustix::event::PollFlags::OUT.bits().into();
                        ring.poll(self.stream.as_fd(), pollout, self.ud(slot, POLL_OUT)).is_ok()
                    }
                    Err(e) => cancelled(&e),
                }
            }
            Event::Polled if op == SCRIPT_OUT || op == SCRIPT_IN => {
                self.script_polls = self.script_polls.saturating_sub(1);
                if self.script_polls > 0 {
                    let other = if op == SCRIPT_OUT { SCRIPT_IN } else { SCRIPT_OUT };
                    let _ = ring.cancel(self.ud(slot, other));
                }
                true
            }
            Event::Polled => {
                self.poll_armed = false;
                true
            }
            Event::Accepted(..) => true,
        }
    }
}

/// A completion, detached from the ring's buffers.
pub(super) enum Event {
    Accepted(std::io::Result<std::os::fd::OwnedFd>, bool),
    Received(usize, bool),
    Sent(std::io::Result<usize>, Vec<u8>),
    Spliced(std::io::Result<usize>),
    Polled,
}

pub(super) fn user_data(slot: usize, generation: u64, op: u64) -> u64 {
    (generation << 40) | ((slot as u64) << 8) | op
}

/// The connection a per-connection user data names, if it is still the same one.
pub(super) fn live_conn(conns: &mut [Option<Conn>], ud: u64) -> Option<&mut Conn> {
    let slot = ((ud >> 8) & 0xffff_ffff) as usize;
    conns.get_mut(slot)?.as_mut().filter(|c| c.generation == ud >> 40)
}
