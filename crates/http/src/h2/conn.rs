//! The server side of one HTTP/2 connection (RFC 9113), as a state machine without I/O:
//! octets in, events and octets out.

use std::collections::{BTreeMap, VecDeque};
use std::io;

use super::error::{ErrorCode, FrameError};
use super::frame::{self, Frame};
use super::head::{self, FieldList, RequestHead};
use super::settings::{
    Setting, Settings, DEFAULT_INITIAL_WINDOW_SIZE, DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE, MAX_WINDOW_SIZE,
};
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

    /// Gives back `n` octets of `stream`'s request body, handed over in `Data` events and
    /// now consumed. The policy: credit goes back to the client in a WINDOW_UPDATE once
    /// half a window has been released (the stream's and the connection's, each on its
    /// own), so a client is never held up by a caller that keeps up, and never sends more
    /// than one window ahead of one that does not. A stream that closed has given its
    /// credit back already; releasing on it does nothing.
    pub fn release(&mut self, stream: StreamId, n: usize) {
        let Some(s) = self.streams.get_mut(&stream) else { return };
        let n = u32::try_from(n).unwrap_or(u32::MAX).min(s.held);
        s.held -= n;
        s.unacked += n;
        self.unacked += n;
        self.send_window_updates(stream);
    }

    /// Sends a response head on `stream`: `:status`, then `fields` (names lower-cased;
    /// the connection-specific fields HTTP/2 forbids, §8.2.2, are dropped). A status
    /// below 200 is an interim head and may be followed by another. HPACK-encoded and
    /// split at the client's SETTINGS_MAX_FRAME_SIZE. Never refused for lack of room.
    pub fn send_head(
        &mut self,
        stream: StreamId,
        status: u16,
        fields: &[(&[u8], &[u8])],
        end_stream: bool,
    ) -> Result<(), SendError> {
        let s = self.streams.get(&stream).ok_or(SendError::StreamGone)?;
        if s.state.reply() != Some(Reply::Head) {
            return Err(if s.state.reply().is_none() { SendError::StreamGone } else { SendError::WrongOrder });
        }
        let interim = status < 200;
        let status = status.clamp(100, 999).to_string();
        let names: Vec<Vec<u8>> = fields.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
        let regular = names
            .iter()
            .zip(fields)
            .filter(|(n, _)| !head::is_connection_specific(n))
            .map(|(n, (_, v))| Field::new(n, v));
        let list = std::iter::once(Field::new(b":status", status.as_bytes())).chain(regular);
        self.write_block(stream, list, end_stream && !interim);
        if !interim {
            self.sent(stream, end_stream);
        }
        Ok(())
    }

    /// Sends as much of `data` on `stream` as both flow-control windows and the output
    /// room allow, in DATA frames of at most the client's SETTINGS_MAX_FRAME_SIZE, and
    /// returns how much that was. END_STREAM goes on the last frame if `end_stream` and
    /// all of `data` went. When less went, the caller keeps the rest and tries again after
    /// a `WindowOpened` event for the stream.
    pub fn send_data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) -> Result<usize, SendError> {
        let room = self.config.max_output.saturating_sub(self.pending_output().len());
        let s = self.streams.get_mut(&stream).ok_or(SendError::StreamGone)?;
        match s.state.reply() {
            None => return Err(SendError::StreamGone),
            Some(Reply::Head) => return Err(SendError::WrongOrder),
            Some(Reply::Body) => {}
        }
        let allowed = self.send_window.min(s.send_window).clamp(0, room as i64) as usize;
        let n = data.len().min(allowed);
        let all = n == data.len();
        s.blocked = !all;
        s.send_window -= n as i64;
        self.send_window -= n as i64;
        let max = self.peer_max_frame as usize;
        let mut chunks = data[..n].chunks(max).peekable();
        if n == 0 && all && end_stream {
            frame::encode_data(&mut self.out, stream, &[], true);
        }
        while let Some(chunk) = chunks.next() {
            frame::encode_data(&mut self.out, stream, chunk, all && end_stream && chunks.peek().is_none());
        }
        if all && end_stream {
            self.sent(stream, true);
        }
        Ok(n)
    }

    /// Sends a trailer section on `stream`, which ends it. Names are lower-cased.
    pub fn send_trailers(&mut self, stream: StreamId, fields: &[(&[u8], &[u8])]) -> Result<(), SendError> {
        let s = self.streams.get(&stream).ok_or(SendError::StreamGone)?;
        match s.state.reply() {
            None => return Err(SendError::StreamGone),
            Some(Reply::Head) => return Err(SendError::WrongOrder),
            Some(Reply::Body) => {}
        }
        let names: Vec<Vec<u8>> = fields.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
        let list = names.iter().zip(fields).map(|(n, (_, v))| Field::new(n, v));
        self.write_block(stream, list, true);
        self.sent(stream, true);
        Ok(())
    }

    /// Resets `stream` with `code` (CANCEL, INTERNAL_ERROR...). No `Reset` event follows.
    /// A stream not held is left alone.
    pub fn send_reset(&mut self, stream: StreamId, code: ErrorCode) {
        if self.streams.contains_key(&stream) && self.phase != Phase::Closed {
            frame::encode_rst_stream(&mut self.out, stream, code);
            self.close(stream, Closed::ResetByUs);
        }
    }

    /// Ends the connection with GOAWAY naming the highest stream the client opened. With
    /// NO_ERROR, a graceful end: streams above are ignored, the open ones finish, then the
    /// connection is closed. With any other code, every stream is dropped at once.
    pub fn go_away(&mut self, code: ErrorCode) {
        match self.phase {
            Phase::Closed => {}
            Phase::Draining if code == ErrorCode::NO_ERROR => {}
            _ if code == ErrorCode::NO_ERROR => {
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
    /// After a GOAWAY with an error, at once; after a graceful one either way, once no
    /// stream is open.
    pub fn is_closed(&self) -> bool {
        let ended = match self.phase {
            Phase::Closed => true,
            Phase::Draining => self.streams.is_empty(),
            _ => self.peer_goaway && self.streams.is_empty(),
        };
        ended && !self.wants_write()
    }

    /// The number of open and half-closed streams.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    // ---- receiving

    fn frame(&mut self, f: Frame<'_>) -> Result<(), ConnError> {
        if self.phase == Phase::FirstSettings {
            if !matches!(f, Frame::Settings(_)) {
                return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "the client's first frame is not SETTINGS"));
            }
            self.phase = Phase::Open;
        }
        if let Some(block) = &self.block {
            if !matches!(f, Frame::Continuation { stream, .. } if stream == block.stream) {
                return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "a frame inside a field block"));
            }
        }
        match f {
            Frame::Data { stream, data, end_stream, .. } => {
                self.data(stream, data, f.flow_controlled_len(), end_stream)
            }
            Frame::Headers { stream, fragment, end_stream, end_headers, priority, .. } => {
                let self_dependent = priority.is_some_and(|p| p.depends_on == stream);
                self.headers(stream, fragment, end_stream, end_headers, self_dependent)
            }
            Frame::Continuation { fragment, end_headers, .. } => self.continuation(fragment, end_headers),
            Frame::Priority { .. } | Frame::Unknown { .. } => Ok(()),
            Frame::RstStream { stream, code } => self.rst_stream(stream, code),
            Frame::Settings(settings) => self.settings(settings),
            Frame::SettingsAck => {
                self.settings_acked();
                Ok(())
            }
            Frame::PushPromise { .. } => Err(self.fail(ErrorCode::PROTOCOL_ERROR, "PUSH_PROMISE from a client")),
            Frame::Ping { ack: true, .. } => Ok(()),
            Frame::Ping { ack: false, data } => {
                frame::encode_ping_ack(&mut self.out, data);
                self.ack_queued()
            }
            Frame::GoAway { last_stream, code, .. } => {
                self.peer_goaway = true;
                self.events.push_back(Event::GoAway { last_stream, code });
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => self.window_update(stream, increment),
        }
    }

    fn headers(
        &mut self,
        stream: StreamId,
        fragment: &[u8],
        end_stream: bool,
        end_headers: bool,
        self_dependent: bool,
    ) -> Result<(), ConnError> {
        if stream % 2 == 0 {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "HEADERS on an even stream"));
        }
        if fragment.len() > self.config.max_header_list_size as usize {
            return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "a field block over SETTINGS_MAX_HEADER_LIST_SIZE"));
        }
        let block = Block { stream, octets: fragment.to_vec(), end_stream, self_dependent, continuations: 0 };
        if end_headers {
            self.field_block(block)
        } else {
            self.block = Some(block);
            Ok(())
        }
    }

    fn continuation(&mut self, fragment: &[u8], end_headers: bool) -> Result<(), ConnError> {
        let Some(block) = &mut self.block else {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "CONTINUATION without HEADERS"));
        };
        block.continuations += 1;
        block.octets.extend_from_slice(fragment);
        if block.continuations > self.config.max_continuations {
            return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "too many CONTINUATION frames"));
        }
        if block.octets.len() > self.config.max_header_list_size as usize {
            return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "a field block over SETTINGS_MAX_HEADER_LIST_SIZE"));
        }
        if end_headers {
            let block = self.block.take().expect("checked above");
            self.field_block(block)?;
        }
        Ok(())
    }

    /// A whole field block: decoded first, whatever becomes of the stream, so the HPACK
    /// tables stay in step (§4.3); then a new request, trailers, or a refusal.
    fn field_block(&mut self, block: Block) -> Result<(), ConnError> {
        let mut list: FieldList = Vec::new();
        if self.decoder.decode(&block.octets, |f| list.push((f.name.to_vec(), f.value.to_vec()))).is_err() {
            return Err(self.fail(ErrorCode::COMPRESSION_ERROR, "a field block HPACK cannot decode"));
        }
        let id = block.stream;
        if let Some(s) = self.streams.get(&id) {
            if !s.state.receiving() {
                return self.stream_error(id, ErrorCode::STREAM_CLOSED);
            }
            if !block.end_stream || head::trailers(&list).is_err() {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR);
            }
            if s.content_length.is_some_and(|n| n != s.received) {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR);
            }
            self.events.push_back(Event::Trailers { stream: id, fields: list });
            return self.received_end(id);
        }
        if id <= self.highest {
            return match self.closed.get(id) {
                Some(Closed::ResetByUs) => Ok(()),
                Some(_) => Err(self.fail(ErrorCode::STREAM_CLOSED, "HEADERS on a closed stream")),
                None => Err(self.fail(ErrorCode::PROTOCOL_ERROR, "a stream identifier not above the last")),
            };
        }
        self.highest = id;
        if self.phase == Phase::Draining {
            self.closed.push(id, Closed::ResetByUs);
            return Ok(());
        }
        self.opened_in_window += 1;
        if self.opened_in_window > self.config.reset_window {
            self.opened_in_window = 1;
            self.ended_early = 0;
        }
        if block.self_dependent {
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR);
        }
        if self.streams.len() >= self.config.max_concurrent_streams as usize {
            return self.stream_error(id, ErrorCode::REFUSED_STREAM);
        }
        let head = match head::request(list) {
            Ok(head) if !(block.end_stream && head.content_length.is_some_and(|n| n > 0)) => head,
            _ => return self.stream_error(id, ErrorCode::PROTOCOL_ERROR),
        };
        let stream = Stream {
            state: if block.end_stream { State::HalfClosedRemote(Reply::Head) } else { State::Open(Reply::Head) },
            recv_window: i64::from(self.local_window),
            held: 0,
            unacked: 0,
            send_window: i64::from(self.peer_window),
            blocked: false,
            content_length: head.content_length,
            received: 0,
        };
        self.streams.insert(id, stream);
        self.events.push_back(Event::Request { stream: id, head, end_stream: block.end_stream });
        Ok(())
    }

    fn data(&mut self, id: StreamId, data: &[u8], flow_len: u32, end_stream: bool) -> Result<(), ConnError> {
        if id > self.highest {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "DATA on an idle stream"));
        }
        if i64::from(flow_len) > self.recv_window {
            return Err(self.fail(ErrorCode::FLOW_CONTROL_ERROR, "DATA over the connection's window"));
        }
        self.recv_window -= i64::from(flow_len);
        if data.is_empty() && !end_stream {
            self.empty_frames += 1;
            if self.empty_frames > self.config.max_empty_frames {
                return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "a flood of empty DATA frames"));
            }
        } else {
            self.empty_frames = 0;
        }
        let Some(s) = self.streams.get_mut(&id).filter(|s| s.state.receiving()) else {
            self.unacked += flow_len;
            self.send_window_updates(0);
            let late = self.closed.get(id) == Some(Closed::ResetByUs) && !self.streams.contains_key(&id);
            return if late { Ok(()) } else { self.stream_error(id, ErrorCode::STREAM_CLOSED) };
        };
        if i64::from(flow_len) > s.recv_window {
            self.unacked += flow_len;
            return self.stream_error(id, ErrorCode::FLOW_CONTROL_ERROR);
        }
        s.recv_window -= i64::from(flow_len);
        let padding = flow_len - data.len() as u32;
        s.unacked += padding;
        s.held += data.len() as u32;
        self.unacked += padding;
        s.received += data.len() as u64;
        let length_wrong = match s.content_length {
            Some(n) => s.received > n || (end_stream && s.received != n),
            None => false,
        };
        if length_wrong {
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR);
        }
        if !data.is_empty() || end_stream {
            self.events.push_back(Event::Data { stream: id, bytes: data.to_vec(), end_stream });
        }
        if end_stream {
            self.received_end(id)?;
        }
        self.send_window_updates(id);
        Ok(())
    }

    fn rst_stream(&mut self, id: StreamId, code: ErrorCode) -> Result<(), ConnError> {
        if id > self.highest {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "RST_STREAM on an idle stream"));
        }
        if self.streams.contains_key(&id) {
            self.close(id, Closed::ResetByPeer);
            self.events.push_back(Event::Reset { stream: id, code });
            return self.ended_early();
        }
        Ok(())
    }

    fn window_update(&mut self, id: StreamId, increment: u32) -> Result<(), ConnError> {
        if id == 0 {
            if self.send_window + i64::from(increment) > i64::from(MAX_WINDOW_SIZE) {
                return Err(self.fail(ErrorCode::FLOW_CONTROL_ERROR, "the connection's window over 2^31-1"));
            }
            self.send_window += i64::from(increment);
            self.wake_blocked();
            return Ok(());
        }
        if id > self.highest {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream"));
        }
        let Some(s) = self.streams.get_mut(&id) else { return Ok(()) };
        if s.send_window + i64::from(increment) > i64::from(MAX_WINDOW_SIZE) {
            return self.stream_error(id, ErrorCode::FLOW_CONTROL_ERROR);
        }
        s.send_window += i64::from(increment);
        self.wake_blocked();
        Ok(())
    }

    /// Applies the client's SETTINGS in order (§6.5.3) and acknowledges them.
    fn settings(&mut self, settings: Settings<'_>) -> Result<(), ConnError> {
        for setting in settings.iter() {
            match setting {
                Setting::HeaderTableSize(size) => self.encoder.set_max_table_size(size as usize),
                Setting::InitialWindowSize(size) => {
                    // §6.9.2: the change applies to every stream's window, and one over
                    // 2^31-1 is a connection error.
                    let delta = i64::from(size) - i64::from(self.peer_window);
                    if self.streams.values().any(|s| s.send_window + delta > i64::from(MAX_WINDOW_SIZE)) {
                        return Err(self.fail(ErrorCode::FLOW_CONTROL_ERROR, "a stream's window over 2^31-1"));
                    }
                    self.streams.values_mut().for_each(|s| s.send_window += delta);
                    self.peer_window = size;
                }
                Setting::MaxFrameSize(size) => self.peer_max_frame = size,
                Setting::EnablePush(_) | Setting::MaxConcurrentStreams(_) | Setting::MaxHeaderListSize(_) => {}
            }
        }
        frame::encode_settings_ack(&mut self.out);
        self.wake_blocked();
        self.ack_queued()
    }

    /// The client acknowledged this side's SETTINGS: its limits hold from now on.
    fn settings_acked(&mut self) {
        if !std::mem::take(&mut self.settings_unacked) {
            return;
        }
        self.local_max_frame = self.config.max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE);
        let window = self.config.initial_window_size.min(MAX_WINDOW_SIZE);
        let delta = i64::from(window) - i64::from(self.local_window);
        self.streams.values_mut().for_each(|s| s.recv_window += delta);
        self.local_window = window;
        self.decoder.set_max_table_size(self.config.header_table_size as usize);
    }

    // ---- what the connection does on its own

    /// The client ended its side of `id` (END_STREAM on DATA or trailers).
    fn received_end(&mut self, id: StreamId) -> Result<(), ConnError> {
        let Some(s) = self.streams.get_mut(&id) else { return Ok(()) };
        match s.state {
            State::Open(reply) => s.state = State::HalfClosedRemote(reply),
            State::HalfClosedLocal => self.close(id, Closed::Ended),
            State::HalfClosedRemote(_) => {}
        }
        Ok(())
    }

    /// This side sent a final head or body on `id`, ending its half if `end_stream`.
    fn sent(&mut self, id: StreamId, end_stream: bool) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        match (s.state, end_stream) {
            (State::Open(_), false) => s.state = State::Open(Reply::Body),
            (State::HalfClosedRemote(_), false) => s.state = State::HalfClosedRemote(Reply::Body),
            (State::Open(_), true) => s.state = State::HalfClosedLocal,
            (State::HalfClosedRemote(_), true) => self.close(id, Closed::Ended),
            (State::HalfClosedLocal, _) => {}
        }
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

    /// Sends WINDOW_UPDATEs for credit released: the connection's once half its window is
    /// owed, and stream `id`'s (if not 0 and the client may still send on it) likewise.
    fn send_window_updates(&mut self, id: StreamId) {
        if self.phase == Phase::Closed {
            return;
        }
        let half = self.local_window / 2;
        if let Some(s) = self.streams.get_mut(&id).filter(|s| s.state.receiving()) {
            if s.unacked > 0 && s.unacked >= half {
                frame::encode_window_update(&mut self.out, id, s.unacked);
                s.recv_window += i64::from(s.unacked);
                s.unacked = 0;
            }
        }
        if self.unacked > 0 && self.unacked >= self.config.connection_window.min(MAX_WINDOW_SIZE) / 2 {
            frame::encode_window_update(&mut self.out, 0, self.unacked);
            self.recv_window += i64::from(self.unacked);
            self.unacked = 0;
        }
    }

    /// Queues `WindowOpened` for each blocked stream that can send again.
    fn wake_blocked(&mut self) {
        if self.send_window <= 0 || self.pending_output().len() >= self.config.max_output {
            return;
        }
        for (&id, s) in self.streams.iter_mut().filter(|(_, s)| s.blocked && s.send_window > 0) {
            s.blocked = false;
            self.events.push_back(Event::WindowOpened { stream: id });
        }
    }

    /// Writes a field block as HEADERS and CONTINUATION frames.
    fn write_block<'f>(&mut self, id: StreamId, fields: impl IntoIterator<Item = Field<'f>>, end_stream: bool) {
        let mut block = Vec::new();
        self.encoder.encode(fields, &mut block);
        frame::encode_headers(&mut self.out, id, &block, end_stream, self.peer_max_frame);
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
