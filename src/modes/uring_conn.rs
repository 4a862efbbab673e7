//! One `uring` connection: the operations it has in flight, and how its response goes out
//! (ring send for the head, sendfile for file bodies). The loop that
//! owns these lives in `uring.rs`.

use super::session::{Sent, Session};
use super::timer::Kind;
use spidey_sys::uring::Ring;
use std::net::TcpStream;
use std::os::fd::AsFd;

/// Per-connection operations, in the low byte of the user data.
pub(super) const RECV: u64 = 1;
pub(super) const SEND: u64 = 2;
pub(super) const POLL_OUT: u64 = 5;
/// Polls of a CGI script's stdout (readable) and stdin (writable).
pub(super) const SCRIPT_OUT: u64 = 6;
pub(super) const SCRIPT_IN: u64 = 7;

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
    /// Waiting for room in the socket after sendfile found none (EAGAIN).
    pub(super) poll_armed: bool,
    /// Polls of a CGI script's pipes in flight.
    pub(super) script_polls: u8,
    /// What the last read said about the socket: input was left in it (a full read, or a
    /// receive flagged IORING_CQE_F_SOCK_NONEMPTY), and whether that is still current
    /// (the connection has not waited since). See [`Conn::has_unread_input`].
    pub(super) input_left: bool,
    pub(super) input_known: bool,
}

impl Conn {
    /// Whether an operation that changes the response's progress is in flight.
    pub(super) fn busy(&self) -> bool {
        self.send_armed || self.poll_armed || self.script_polls > 0
    }

    /// Polls a running script's pipes through the ring; any completion cancels the other,
    /// and the connection pumps again once both are resolved.
    pub(super) fn watch_script(&mut self, slot: usize, ring: &mut Ring) -> bool {
        self.parked();
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

    /// Records what a read said about the socket's input.
    pub(super) fn note_input(&mut self, left: bool) {
        (self.input_left, self.input_known) = (left, true);
    }

    /// The connection waits (for socket room, a script, a delay): input may arrive
    /// meanwhile, unseen, since no receive is armed while a response goes out.
    pub(super) fn parked(&mut self) {
        self.input_known = false;
    }

    /// Whether client input is left unread in the socket, for the lingering close. The last
    /// read tells, as `event` knows from its edges, unless the connection waited since:
    /// then the socket is asked (recv MSG_PEEK). Input that arrives between that knowledge
    /// and the close is missed by every server (nginx's `rev->ready` likewise); a client
    /// that pipelines after `Connection: close` sends it with the request, in practice.
    pub(super) fn has_unread_input(&self) -> bool {
        self.input_left || (!self.input_known && crate::net::has_unread_input(&self.stream))
    }

    pub(super) fn ud(&self, slot: usize, op: u64) -> u64 {
        user_data(slot, self.generation, op)
    }

    /// Submits the next part of the response. Returns false when nothing is left to send.
    ///
    /// The head (and any in-memory body) goes out as a ring send; a file body follows with
    /// sendfile(2) from the loop thread once the head's send has completed, waiting for
    /// POLLOUT through the ring whenever the socket is full. File bytes never pass through
    /// user space. (Linked file → pipe → socket splices were tried and measured slower at
    /// every size, 1 KiB to 1 MiB: io_uring runs splices on its worker threads, and that
    /// hand-off costs more than the copy-free syscall; see the README's benchmark.)
    pub(super) fn submit_send(&mut self, slot: usize, ring: &mut Ring) -> std::io::Result<bool> {
        let head_left = !self.session.out().is_empty();
        let body_follows = self.session.file_body().is_some_and(|(_, offset, end)| *offset < end);
        if !body_follows {
            self.session.end_body();
            if !head_left {
                return Ok(false);
            }
        }
        if head_left {
            self.session.cork_last_response(&self.stream);
            let (buf, from) = self.session.lend_out();
            self.send_armed = true;
            ring.send(self.stream.as_fd(), buf, from, body_follows, self.ud(slot, SEND))?;
            return Ok(true); // the body follows once this completes
        }
        match self.session.send_body(&self.stream) {
            Sent::Done => Ok(false),
            Sent::Blocked => {
                self.poll_armed = true;
                self.parked();
                let pollout = rustix::event::PollFlags::OUT.bits().into();
                ring.poll(self.stream.as_fd(), pollout, self.ud(slot, POLL_OUT)).map(|()| true)
            }
            _ => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// Records the completion of one of this connection's operations (`op`); returns
    /// false if the connection must close.
    pub(super) fn complete(&mut self, slot: usize, op: u64, event: Event, ring: &mut Ring) -> bool {
        match event {
            Event::Received { len, starved, input_left } => {
                self.recv_armed = false;
                self.note_input(input_left || starved);
                len > 0 || starved // else end of stream or error
            }
            Event::Sent(r, buf) => {
                self.send_armed = false;
                self.session.return_out(buf, *r.as_ref().unwrap_or(&0));
                r.is_ok()
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
        }
    }
}

/// A completion, detached from the ring's buffers.
pub(super) enum Event {
    /// `starved`: no ring buffer was free (ENOBUFS), the input is still there.
    Received {
        len: usize,
        starved: bool,
        input_left: bool,
    },
    Sent(std::io::Result<usize>, Vec<u8>),
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
