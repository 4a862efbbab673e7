//! The server side of one HTTP/2 connection (RFC 9113), as a state machine without I/O:
//! octets in, events and octets out.

use std::collections::{BTreeMap, VecDeque};
use std::io;

use super::error::{ErrorCode, FrameError};
use super::frame::{self, Frame};
use super::head::{self, RequestHead};
use super::settings::{
    Setting, Settings, DEFAULT_INITIAL_WINDOW_SIZE, DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE, MAX_WINDOW_SIZE,
};
use crate::hpack::FieldList;
mod recv;
mod send;

use super::stream::{Closed, ClosedStreams, Reply, State, Stream, StreamId};
use crate::choice::HTTP2_PREFACE as PREFACE;
use crate::hpack::{self, Field};

/// What this side advertises and the bounds it keeps. The defaults suit a file server.
#[derive(Debug, Clone)]
pub struct Config {
    /// SETTINGS_MAX_CONCURRENT_STREAMS: a stream over it is refused (REFUSED_STREAM).
    pub max_concurrent_streams: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window, at most 2^31 - 1.
    pub initial_window_size: u32,
    /// The connection's receive window, raised by a WINDOW_UPDATE at the start when above
    /// 65535; at most 2^31 - 1.
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE, from 16384 to 2^24 - 1: the caller's read buffer holds
    /// [`Conn::read_buffer_len`] octets.
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE, enforced by the HPACK decoder; also the most octets
    /// of one field block (HEADERS and its CONTINUATION frames) buffered before decoding.
    /// A list over it ends the connection with COMPRESSION_ERROR, not one stream with a
    /// 431: the decoder stops inside the block, so the two sides' tables no longer agree;
    /// a block over it, with ENHANCE_YOUR_CALM.
    pub max_header_list_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK decoder's dynamic table.
    pub header_table_size: u32,
    /// The most octets of output queued before the connection stops reading input and
    /// `send_data` stops taking body octets.
    pub max_output: usize,
    /// The most CONTINUATION frames in one field block (CVE-2024-27316).
    pub max_continuations: u32,
    /// The most SETTINGS and PING acknowledgements queued and not yet written.
    pub max_queued_acks: u32,
    /// The most DATA frames in a row with neither octets nor END_STREAM.
    pub max_empty_frames: u32,
    /// Rapid reset (CVE-2023-44487): out of every `reset_window` streams the client opens,
    /// at most `max_resets` may end early (reset by the client, refused, or reset by this
    /// side for a stream error) before the connection ends with ENHANCE_YOUR_CALM.
    pub reset_window: u32,
    pub max_resets: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_concurrent_streams: 100,
            initial_window_size: 256 * 1024,
            connection_window: 1024 * 1024,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_header_list_size: 16 * 1024,
            header_table_size: 4096,
            max_output: 256 * 1024,
            max_continuations: 32,
            max_queued_acks: 64,
            max_empty_frames: 64,
            reset_window: 200,
            max_resets: 100,
        }
    }
}

/// What the client did, for the caller to act on, in order.
///
/// Events are queued as [`Conn::receive`] reads, so a stream may be gone by the time the
/// caller reads its `Request` or `Data`: a `Reset` event for it follows in the queue, and
/// the `send_*` calls on it return [`SendError::StreamGone`], which the caller ignores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A new request. `end_stream`: it has no body.
    Request { stream: StreamId, head: RequestHead, end_stream: bool },
    /// Request body octets; the caller [`Conn::release`]s them once consumed, which is
    /// what lets the client send more.
    Data { stream: StreamId, bytes: Vec<u8>, end_stream: bool },
    /// The request's trailer section, which ends its body.
    Trailers { stream: StreamId, fields: Vec<(Vec<u8>, Vec<u8>)> },
    /// The stream ended early: the client reset it, or this side did for a stream error
    /// (malformed body, flow control). Drop what is pending on it.
    Reset { stream: StreamId, code: ErrorCode },
    /// The client is going away; the connection closes once the open streams are done.
    GoAway { last_stream: StreamId, code: ErrorCode },
    /// A stream on which `send_data` took less than it was given may take more now.
    WindowOpened { stream: StreamId },
}

/// This side ended the connection with a GOAWAY of `code` (§5.4.1): write what is
/// pending, then close. Every stream is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnError {
    pub code: ErrorCode,
    pub reason: &'static str,
}

/// Why a `send_*` call was refused: a caller's mistake or a stream that ended meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The stream is not open on this side (reset, finished, never opened, or the
    /// connection closed).
    StreamGone,
    /// The head was sent already (for `send_head`), or not yet (for `send_data` and
    /// `send_trailers`).
    WrongOrder,
    /// (`send_data_with`) The caller's source failed to fill a frame.
    Source,
}

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the client's 24-octet preface.
    Preface,
    /// The preface in; the next frame must be SETTINGS (§3.4).
    FirstSettings,
    Open,
    /// This side sent GOAWAY with NO_ERROR: streams above it are ignored, the rest finish.
    Draining,
    /// This side sent GOAWAY with an error: nothing more is read or sent but the output.
    Closed,
}

/// A field block being assembled from HEADERS and CONTINUATION frames (§4.3).
#[derive(Debug)]
struct Block {
    stream: StreamId,
    /// The fragments so far (empty when the whole block came in its HEADERS frame, which is
    /// then decoded where it lies).
    octets: Vec<u8>,
    end_stream: bool,
    /// The HEADERS frame's priority made the stream depend on itself (§5.3.1).
    self_dependent: bool,
    continuations: u32,
}

/// The most events queued before the connection stops reading input.
const MAX_EVENTS: usize = 256;

/// One HTTP/2 server connection. See the module documentation of [`crate::h2`].
///
/// INVARIANT: every stream in `streams` has had its `Request` event queued, and only odd
/// identifiers from 1 to `highest` are in it or in `closed`.
#[derive(Debug)]
pub struct Conn {
    config: Config,
    phase: Phase,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    streams: BTreeMap<StreamId, Stream>,
    closed: ClosedStreams,
    /// The highest stream identifier the client used.
    highest: StreamId,
    block: Option<Block>,
    events: VecDeque<Event>,
    /// `send_head`'s buffers, kept: the names that had an upper-case letter, lower-cased,
    /// and per name where its lower-cased copy ends (`None`: the name is used as given).
    lowered: (Vec<u8>, Vec<Option<u32>>),
    /// The HPACK block of the head being sent, before it is framed; its memory kept.
    encoded: Vec<u8>,
    /// The field list of the block being received, decoded; its memory kept.
    decoded: FieldList,
    out: Vec<u8>,
    /// Octets of `out` already written.
    written: usize,
    /// This side's SETTINGS await the client's ACK; until then the defaults hold.
    settings_unacked: bool,
    /// The receive limits in effect: the defaults until the ACK, then `config`'s.
    local_max_frame: u32,
    local_window: u32,
    /// The client's settings.
    peer_window: u32,
    peer_max_frame: u32,
    /// The connection's windows, and credit released but not yet sent back.
    send_window: i64,
    recv_window: i64,
    unacked: u32,
    peer_goaway: bool,
    /// The flood counters (see [`Config`]).
    acks_queued: u32,
    empty_frames: u32,
    opened_in_window: u32,
    ended_early: u32,
}

impl Conn {
    /// A connection that has sent nothing and read nothing; its SETTINGS (and the
    /// WINDOW_UPDATE that opens the connection's window) are already in the output, which
    /// may be written before the client's preface arrives (§3.4).
    pub fn new(config: Config) -> Conn {
        let mut conn = Conn {
            decoder: hpack::Decoder::new(config.max_header_list_size as usize),
            encoder: hpack::Encoder::new(),
            closed: ClosedStreams::new(2 * config.max_concurrent_streams.max(64) as usize),
            phase: Phase::Preface,
            streams: BTreeMap::new(),
            highest: 0,
            block: None,
            events: VecDeque::new(),
            lowered: (Vec::new(), Vec::new()),
            encoded: Vec::new(),
            decoded: FieldList::default(),
            out: Vec::new(),
            written: 0,
            settings_unacked: true,
            local_max_frame: DEFAULT_MAX_FRAME_SIZE,
            local_window: DEFAULT_INITIAL_WINDOW_SIZE,
            peer_window: DEFAULT_INITIAL_WINDOW_SIZE,
            peer_max_frame: DEFAULT_MAX_FRAME_SIZE,
            send_window: i64::from(DEFAULT_INITIAL_WINDOW_SIZE),
            recv_window: i64::from(DEFAULT_INITIAL_WINDOW_SIZE),
            unacked: 0,
            peer_goaway: false,
            acks_queued: 0,
            empty_frames: 0,
            opened_in_window: 0,
            ended_early: 0,
            config,
        };
        let c = &conn.config;
        let settings = [
            Setting::EnablePush(false),
            Setting::MaxConcurrentStreams(c.max_concurrent_streams),
            Setting::InitialWindowSize(c.initial_window_size.min(MAX_WINDOW_SIZE)),
            Setting::MaxFrameSize(c.max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE)),
            Setting::MaxHeaderListSize(c.max_header_list_size),
            Setting::HeaderTableSize(c.header_table_size),
        ];
        frame::encode_settings(&mut conn.out, &settings);
        let target = conn.config.connection_window.min(MAX_WINDOW_SIZE);
        if target > DEFAULT_INITIAL_WINDOW_SIZE {
            frame::encode_window_update(&mut conn.out, 0, target - DEFAULT_INITIAL_WINDOW_SIZE);
            conn.recv_window = i64::from(target);
        }
        conn
    }

    /// How large the caller's read buffer must be: one whole frame at this side's
    /// SETTINGS_MAX_FRAME_SIZE.
    pub fn read_buffer_len(&self) -> usize {
        frame::HEADER_LEN + self.config.max_frame_size.max(DEFAULT_MAX_FRAME_SIZE) as usize
    }

    /// Reads the client's preface and then whole frames from `input`, acting on each and
    /// queueing events and output; returns how many octets it took. The caller keeps the
    /// rest (a partial frame, or what is left when it stopped) and passes it again with
    /// what arrives next. It stops early once [`Conn::wants_read`] is false: the output or
    /// the events are full, or the connection ended.
    ///
    /// An `Err` is a connection error: the GOAWAY is queued; write it and close.
    pub fn receive(&mut self, input: &[u8]) -> Result<usize, ConnError> {
        let mut used = 0;
        while self.wants_read() {
            let buf = &input[used..];
            if self.phase == Phase::Preface {
                let n = buf.len().min(PREFACE.len());
                if buf[..n] != PREFACE[..n] {
                    return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "not the HTTP/2 client preface"));
                }
                if n < PREFACE.len() {
                    break;
                }
                used += n;
                self.phase = Phase::FirstSettings;
                continue;
            }
            match Frame::decode(buf, self.local_max_frame) {
                Ok(None) => break,
                Ok(Some((frame, n))) => {
                    used += n;
                    self.frame(frame)?;
                }
                Err(FrameError::Connection { code, reason }) => return Err(self.fail(code, reason)),
                Err(FrameError::Stream { stream, code, frame_len, reason }) => {
                    used += frame_len;
                    if self.block.is_some() || self.phase == Phase::FirstSettings {
                        return Err(self.fail(ErrorCode::PROTOCOL_ERROR, reason));
                    }
                    // §5.1: on an idle stream only HEADERS and PRIORITY may come; a
                    // WINDOW_UPDATE of 0 there is a connection error, not a stream error.
                    if stream > self.highest && buf[3] != frame::kind::PRIORITY {
                        return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream"));
                    }
                    self.stream_error(stream, code)?;
                }
            }
        }
        Ok(used)
    }

    /// Whether [`Conn::receive`] would take input: the connection is open, its output is
    /// under [`Config::max_output`] and fewer than 256 events wait.
    pub fn wants_read(&self) -> bool {
        self.phase != Phase::Closed
            && self.pending_output().len() < self.config.max_output
            && self.events.len() < MAX_EVENTS
    }

    /// The next event, in the order the frames came.
    pub fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Ends the connection with GOAWAY naming the highest stream the client opened. With
    /// NO_ERROR, a graceful end: streams above are ignored, the open ones finish, then the
    /// connection is closed. With any other code, or before the client's preface and
    /// SETTINGS are in, every stream is dropped and nothing more is read.
    pub fn go_away(&mut self, code: ErrorCode) {
        match self.phase {
            Phase::Closed => {}
            Phase::Draining if code == ErrorCode::NO_ERROR => {}
            Phase::Open if code == ErrorCode::NO_ERROR => {
                frame::encode_goaway(&mut self.out, self.highest, code, &[]);
                self.phase = Phase::Draining;
            }
            _ => {
                self.fail(code, "");
            }
        }
    }

    /// The octets to write, in order: every frame this side queued, one buffer per
    /// connection.
    pub fn pending_output(&self) -> &[u8] {
        &self.out[self.written..]
    }

    /// Whether there is output to write.
    pub fn wants_write(&self) -> bool {
        self.written < self.out.len()
    }

    /// Marks the first `n` octets of [`Conn::pending_output`] written. Once the output
    /// has drained below half of [`Config::max_output`], blocked streams get their
    /// `WindowOpened` event.
    pub fn consumed(&mut self, n: usize) {
        self.written = (self.written + n).min(self.out.len());
        if self.written == self.out.len() {
            self.out.clear();
            self.written = 0;
            self.acks_queued = 0;
        } else if self.written > self.out.len() / 2 {
            self.out.drain(..self.written);
            self.written = 0;
        }
        if self.pending_output().len() <= self.config.max_output / 2 {
            self.wake_blocked();
        }
    }

    /// Moves the pending output to the end of `into` and counts it written, as
    /// [`Conn::consumed`] does: for a caller that writes through a buffer of its own. When
    /// `into` is empty the two buffers are swapped, so nothing is copied.
    pub fn take_output(&mut self, into: &mut Vec<u8>) {
        if into.is_empty() && self.written == 0 {
            std::mem::swap(&mut self.out, into);
            self.out.clear();
            self.consumed(0);
        } else {
            let n = self.pending_output().len();
            into.extend_from_slice(self.pending_output());
            self.consumed(n);
        }
    }

    /// Gives back the memory an idle connection need not hold: returns the output buffer
    /// (empty, its capacity kept, for the caller to reuse elsewhere) once it is all
    /// written, and shrinks a grown event queue. The next frame takes a buffer again.
    pub fn trim(&mut self) -> Option<Vec<u8>> {
        if self.events.capacity() > 8 {
            self.events = VecDeque::new();
        }
        if self.wants_write() {
            return None;
        }
        self.written = 0;
        let mut spare = std::mem::take(&mut self.out);
        spare.clear();
        Some(spare)
    }

    /// Writes pending output to `w` until it is all written or `w` would block; returns
    /// how many octets went.
    pub fn write_to(&mut self, w: &mut impl io::Write) -> io::Result<usize> {
        let mut total = 0;
        while self.wants_write() {
            match w.write(self.pending_output()) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.consumed(n);
                    total += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && total > 0 => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(total)
    }

    /// Whether the connection is over and its output written: the socket may be closed.
    /// After this side's GOAWAY with an error, at once; after its graceful one, once no
    /// stream is open. The client's GOAWAY closes nothing: the client closes.
    pub fn is_closed(&self) -> bool {
        let ended = match self.phase {
            Phase::Closed => true,
            Phase::Draining => self.streams.is_empty(),
            // The client's GOAWAY says it opens no more streams, not that it has stopped
            // talking: it closes the connection when it is done (a PING is still
            // answered, RFC 9113 §6.8), and the caller's idle timeout bounds the wait.
            _ => false,
        };
        ended && !self.wants_write()
    }

    /// The number of open and half-closed streams.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Forgets stream `id`, giving its unreleased credit back to the connection.
    fn close(&mut self, id: StreamId, how: Closed) {
        if let Some(s) = self.streams.remove(&id) {
            self.unacked += s.held + s.unacked;
            self.closed.push(id, how);
            self.send_window_updates(0);
        }
    }

    /// A stream error (§5.4.2): RST_STREAM, a `Reset` event if the caller knows the
    /// stream, and one more stream ended early.
    fn stream_error(&mut self, id: StreamId, code: ErrorCode) -> Result<(), ConnError> {
        frame::encode_rst_stream(&mut self.out, id, code);
        if self.streams.contains_key(&id) {
            self.close(id, Closed::ResetByUs);
            self.events.push_back(Event::Reset { stream: id, code });
        } else if self.closed.get(id).is_none() {
            self.closed.push(id, Closed::ResetByUs);
        }
        self.ended_early()
    }

    /// Counts a stream that ended before its response did (rapid reset, CVE-2023-44487).
    fn ended_early(&mut self) -> Result<(), ConnError> {
        self.ended_early += 1;
        if self.ended_early > self.config.max_resets {
            return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "too many streams reset"));
        }
        Ok(())
    }

    /// Counts an acknowledgement queued (SETTINGS and PING floods).
    fn ack_queued(&mut self) -> Result<(), ConnError> {
        self.acks_queued += 1;
        if self.acks_queued > self.config.max_queued_acks {
            return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "too many acknowledgements unwritten"));
        }
        Ok(())
    }

    /// A connection error (§5.4.1): GOAWAY with the last stream the client opened, the
    /// reason as debug data, and every stream dropped.
    fn fail(&mut self, code: ErrorCode, reason: &'static str) -> ConnError {
        if self.phase != Phase::Closed {
            frame::encode_goaway(&mut self.out, self.highest, code, reason.as_bytes());
            self.phase = Phase::Closed;
            self.streams.clear();
            self.block = None;
        }
        ConnError { code, reason }
    }
}
