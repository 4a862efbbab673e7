//! One stream as the server sees it (RFC 9113 §5.1): its state, its two flow-control
//! windows (§6.9), and the memory of streams recently closed.

use std::collections::VecDeque;

/// A stream identifier: 31 bits, odd for the streams a client opens (§5.1.1).
pub type StreamId = u32;

/// What this side sends next on a stream whose sending half is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The response head (after any number of 1xx heads).
    Head,
    /// DATA, or trailers; the head is sent.
    Body,
}

/// The states of §5.1 a stream the server holds can be in. "idle" is every identifier
/// above the highest the client used; "closed" is a stream no longer held (see
/// [`Closed`]); "reserved" needs PUSH_PROMISE, which this server never sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Request HEADERS received without END_STREAM: the client's body may follow, and this
    /// side is answering.
    Open(Reply),
    /// The client sent END_STREAM; this side is answering.
    HalfClosedRemote(Reply),
    /// This side sent END_STREAM; the client's body is still coming.
    HalfClosedLocal,
}

impl State {
    /// Whether the client may still send DATA or trailers.
    pub(crate) fn receiving(self) -> bool {
        matches!(self, State::Open(_) | State::HalfClosedLocal)
    }

    /// What this side may send next, if its half is open.
    pub(crate) fn reply(self) -> Option<Reply> {
        match self {
            State::Open(r) | State::HalfClosedRemote(r) => Some(r),
            State::HalfClosedLocal => None,
        }
    }
}

/// One open or half-closed stream.
///
/// INVARIANT: `recv_window + held + unacked` never exceeds the receive window this side
/// advertised for the stream: the peer's DATA moves octets from `recv_window` to `held`
/// (padding straight to `unacked`), [`super::Conn::release`] from `held` to `unacked`, and
/// a WINDOW_UPDATE from `unacked` back to `recv_window`.
#[derive(Debug)]
pub(crate) struct Stream {
    pub(crate) state: State,
    /// What the peer may still send on this stream; negative after a SETTINGS lowered it.
    pub(crate) recv_window: i64,
    /// Octets handed to the caller in `Data` events and not yet released.
    pub(crate) held: u32,
    /// Octets released and not yet given back in a WINDOW_UPDATE.
    pub(crate) unacked: u32,
    /// What this side may still send (the peer's window); negative after a SETTINGS.
    pub(crate) send_window: i64,
    /// `send_data` took less than it was given: a `WindowOpened` event is owed.
    pub(crate) blocked: bool,
    /// The content-length the request declared, and the DATA octets received so far.
    pub(crate) content_length: Option<u64>,
    pub(crate) received: u64,
}

/// How a stream no longer held was closed, which decides what a late frame on it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closed {
    /// This side sent RST_STREAM (or refused or ignored the stream): the peer's frames
    /// already in flight are ignored (§5.1, "closed").
    ResetByUs,
    /// The peer sent RST_STREAM: any frame but PRIORITY after it is a stream error of type
    /// STREAM_CLOSED (§5.1).
    ResetByPeer,
    /// Both sides sent END_STREAM.
    Ended,
}

/// The last streams closed, newest last, with how each was closed: a bounded memory, so
/// a stream closed long ago is treated as one never opened.
///
/// INVARIANT: at most `cap` entries.
#[derive(Debug)]
pub(crate) struct ClosedStreams {
    recent: VecDeque<(StreamId, Closed)>,
    cap: usize,
}

impl ClosedStreams {
    pub(crate) fn new(cap: usize) -> ClosedStreams {
        // Grown as streams close, not made whole up front: a connection that serves one
        // request holds one entry, not `cap`.
        ClosedStreams { recent: VecDeque::new(), cap: cap.max(1) }
    }

    pub(crate) fn push(&mut self, id: StreamId, how: Closed) {
        if self.recent.len() == self.cap {
            self.recent.pop_front();
        }
        self.recent.push_back((id, how));
    }

    pub(crate) fn get(&self, id: StreamId) -> Option<Closed> {
        self.recent.iter().rev().find(|(i, _)| *i == id).map(|&(_, how)| how)
    }
}
