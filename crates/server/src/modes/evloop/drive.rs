//! Driving one connection of a loop: the one sequence both backends follow (send what is
//! pending, answer buffered requests, pipelined ones too, receive, until it waits), and
//! the one choice of which deadline to arm afterwards.

use super::offload::Desk;
use super::{Backend, Loop, Received, Shared};
use crate::exchange::Offloading;
use crate::modes::send::Sent;
use crate::modes::session::{Answered, Held, HoldEnd};
use crate::modes::timer::{At, Fixed, Kind};
use std::time::Instant;

impl<B: Backend> Loop<B> {
    /// Advances the connection in `slot` as far as it can go without blocking.
    pub(crate) fn drive(&mut self, slot: usize) {
        let Some(conn) = self.conns.get_mut(slot) else { return };
        let (server, closing) = (&*self.server, self.draining);
        let (was_sending, answered) = (conn.session.is_sending(), conn.session.answered());
        let mut park: Option<(At, Instant)> = None;
        let keep = loop {
            match conn.session.held() {
                Held::No => {}
                Held::Starts(delay) => {
                    // From now, not from the turn's wake-up: a request read late in a
                    // long turn would otherwise be held less than the delay.
                    park = Some((At::Delay, Instant::now() + delay));
                    break true;
                }
                Held::Yes => break true, // its timer, or `hybrid`'s pool, drives it on
            }
            if B::busy(&conn.io) {
                break true; // the operation in flight drives it on
            }
            conn.parked = false;
            if conn.session.is_sending() {
                let shared = Shared { ex: &mut self.ex, server, buffers: &mut self.buffers };
                let (io, c) = conn.parts(slot);
                match self.backend.send_pending(io, c, shared) {
                    Sent::Done if conn.session.finish_response(&mut self.buffers) => continue,
                    // The half-close is a plain system call in every backend (`uring`: the
                    // ring never names a socket by number in an operation it may run late).
                    Sent::Done if conn.session.linger(&conn.io, B::unread_input(&conn.io), &mut self.buffers) => {}
                    Sent::Done | Sent::Failed => break false,
                    Sent::NeedRead => {} // receive the request body below
                    Sent::WaitScript => {
                        let Some(at) = conn.session.script_watch().and_then(|w| w.deadline()) else { break false };
                        park = Some((At::Script, at));
                        let (io, c) = conn.parts(slot);
                        break self.backend.watch_script(io, c);
                    }
                    Sent::Blocked => break true,
                }
            }
            let offloading = self.offload.as_ref().map_or(Offloading::Never, Desk::offloading);
            match conn.session.answer(&mut self.ex, server, &mut self.buffers, closing, offloading) {
                Answered::Ready => continue,
                Answered::Offload { bytes, must_close } => {
                    let (id, peer) = (conn.id(slot), conn.session.peer);
                    if let Some(deadline) =
                        self.offload.as_ref().and_then(|desk| desk.submit(id, bytes, peer, must_close))
                    {
                        // Held until the pool answers (`Loop::answers_rung`), or 504 at this deadline.
                        park = Some((At::Offload, self.now + deadline));
                        break true;
                    }
                    conn.session.end_hold(HoldEnd::Refused, &mut self.ex, server, &mut self.buffers);
                    continue;
                }
                Answered::OffloadStreams(jobs) => {
                    let (id, peer) = (conn.id(slot), conn.session.peer);
                    for job in jobs {
                        let stream = job.stream;
                        // Answered when the pool is done (`Loop::answers_rung`), or 504 at
                        // the session's deadline for it (`Session::wake_at`).
                        if !self.offload.as_ref().is_some_and(|desk| desk.submit_stream(id, job, peer)) {
                            let end = HoldEnd::StreamRefused(stream);
                            conn.session.end_hold(end, &mut self.ex, server, &mut self.buffers);
                        }
                    }
                    continue;
                }
                Answered::No => {}
            }
            if closing && conn.is_idle() {
                if conn.session.farewell(&mut self.ex, server, &mut self.buffers) {
                    continue; // HTTP/2's GOAWAY goes out first
                }
                break false;
            }
            let (io, c) = conn.parts(slot);
            match self.backend.receive(io, c, &mut self.buffers) {
                Received::Bytes => {}
                Received::Wait => break true,
                Received::Closed => break false,
            }
        };
        let (io, c) = conn.parts(slot);
        if !keep || !self.backend.settle(io, c) {
            return self.close(slot);
        }
        match park {
            Some((kind, at)) => self.park(slot, kind, at),
            None => self.rearm(slot, was_sending, answered),
        }
    }

    /// Arms the deadline matching the connection's new state, only when the state changed,
    /// a send made progress or this drive answered a request (`answered`: the session's
    /// count when the drive began), so a busy connection appends O(1) per event: the send
    /// deadline restarts on every drive of a sending connection, the head deadline runs
    /// from the first byte of a request, the idle one (which also bounds a lingering close)
    /// from the end of the last response. A parked connection keeps its own.
    fn rearm(&mut self, slot: usize, was_sending: bool, answered: u32) {
        let Some(conn) = self.conns.get_mut(slot) else { return };
        if conn.parked {
            return;
        }
        let progressed = conn.session.answered() != answered;
        if let Some(at) = conn.session.wake_at() {
            // A CGI request body: one deadline for all of it; its expiry pumps (408). Or
            // HTTP/2 streams on the pool: the first one late gets its 504.
            conn.stamp = self.deadlines.arm_at(At::Script, at, slot);
            conn.deadline = Kind::Script;
            return;
        }
        let s = &conn.session;
        let (kind, rearm) = if s.is_sending() {
            (Fixed::Send, true)
        } else if s.has_partial_request() {
            (Fixed::Head, conn.deadline != Kind::Head || progressed)
        } else {
            (Fixed::Idle, conn.deadline != Kind::Idle || was_sending || progressed)
        };
        if rearm {
            conn.stamp = self.deadlines.arm(kind, self.now, slot);
            conn.deadline = kind.into();
        }
    }
}
