//! The client side of one HTTP/2 connection for `spidey bench --h2`, sans-IO: octets in
//! ([`ClientConn::receive`]), octets out ([`ClientConn::out`]), requests opened as streams
//! ([`ClientConn::open`]) and ended streams handed back as [`Ended`].
//!
//! Built on `spidey_http`'s frame codec and HPACK, as the server's `h2::Conn` is, but much
//! smaller: a load generator sends only HEADERS (END_STREAM on it: no request bodies), never
//! pushes, and needs from the server's frames only each stream's `:status`, its DATA octets
//! and its end. The connection opens with the client preface, a SETTINGS frame (push off,
//! SETTINGS_INITIAL_WINDOW_SIZE at its largest, 2^31 - 1) and a connection WINDOW_UPDATE to
//! the same size, and sends WINDOW_UPDATEs when half of a window is used, so flow control
//! never holds a response back. No stream is opened before the server's SETTINGS arrive,
//! so SETTINGS_MAX_CONCURRENT_STREAMS is known (and obeyed) from the first request.
//!
//! Anything the server does wrong that RFC 9113 calls a connection error (a frame longer
//! than 16384 octets, HEADERS or DATA for a stream never opened, a bad HPACK block, DATA
//! past a window, PUSH_PROMISE, CONTINUATION out of place, ...) is a [`Failure`]: a GOAWAY
//! is queued and the caller fails the connection's streams and reconnects. Unknown frame
//! types, PRIORITY and unknown SETTINGS are ignored (§4.1, §5.5). A GOAWAY from the server
//! ends the streams above its last stream as [`Ended::Retry`] (the server never acted on
//! them, §6.8): the caller sends them again on a new connection, their latency still from
//! their first send. RST_STREAM ends a stream as [`Ended::Reset`], REFUSED_STREAM as a
//! retry (§8.7).

use spidey_http::h2::{
    encode_goaway, encode_headers, encode_ping_ack, encode_rst_stream, encode_settings, encode_settings_ack,
    encode_window_update, ErrorCode, Frame, FrameError, Setting, DEFAULT_INITIAL_WINDOW_SIZE, DEFAULT_MAX_FRAME_SIZE,
    MAX_WINDOW_SIZE,
};
use spidey_http::hpack::{Decoder, Encoder, Field};
use std::time::Instant;

/// The client connection preface (RFC 9113 §3.4), before the first SETTINGS.
pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The largest response header list decoded.
const MAX_HEADER_LIST: usize = 64 * 1024;
/// The largest header block (HEADERS and its CONTINUATIONs) buffered.
const MAX_HEADER_BLOCK: usize = 256 * 1024;

/// What a request needs to be recorded when its stream ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Req {
    /// Open loop: the slot's time; closed loop: when it was issued.
    pub intended: Instant,
    /// When it was first sent (a retry keeps it).
    pub issued: Instant,
    pub late: bool,
    pub counted: bool,
    /// Which URL (path) it asked for.
    pub target: usize,
}

/// One open stream: our request, the response so far.
#[derive(Debug)]
pub(crate) struct Stream {
    pub id: u32,
    pub req: Req,
    /// 0 until the final (non-1xx) response head.
    pub status: u16,
    pub body: u64,
    /// What is left of our receive window for it.
    window: i64,
}

/// How a stream ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// The response is complete.
    Response(Stream),
    /// The server reset it (RST_STREAM with this code).
    Reset(Stream, ErrorCode),
    /// The server never acted on it (above a GOAWAY's last stream, or REFUSED_STREAM):
    /// safe to send again.
    Retry(Stream),
}

/// A connection error: what to report. A GOAWAY with the code is already queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub code: ErrorCode,
    pub reason: &'static str,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP/2 connection error {}: {}", self.code, self.reason)
    }
}

/// A target's last request header block, and whether it is copied instead of encoded.
#[derive(Default)]
struct CachedBlock {
    bytes: Vec<u8>,
    steady: bool,
}

/// A header block being assembled from HEADERS and CONTINUATION frames.
struct Block {
    stream: u32,
    bytes: Vec<u8>,
    end_stream: bool,
}

pub(crate) struct ClientConn {
    /// Octets to send, in order; the caller writes them and drains what it wrote.
    pub out: Vec<u8>,
    /// Octets received and not yet a whole frame.
    input: Vec<u8>,
    encoder: Encoder,
    decoder: Decoder,
    scratch: Vec<u8>,
    /// Each target's last header block (see [`ClientConn::open`]).
    blocks: Vec<CachedBlock>,
    /// The server's SETTINGS arrived: streams may be opened.
    pub ready: bool,
    pub peer_max_streams: u32,
    peer_max_frame: u32,
    next_id: u32,
    pub streams: Vec<Stream>,
    /// What is left of the connection's receive window.
    window: i64,
    /// The connection's and each stream's receive window as advertised; topped up once
    /// half is used.
    conn_window: i64,
    stream_window: i64,
    block: Option<Block>,
    /// The server's GOAWAY: its last stream.
    pub goaway: Option<u32>,
    /// The connection failed; nothing more is read.
    failed: bool,
}

impl Default for ClientConn {
    fn default() -> Self {
        ClientConn::new()
    }
}

impl ClientConn {
    /// A new connection, its preface, SETTINGS and connection WINDOW_UPDATE queued: both
    /// windows 2^31 - 1.
    pub fn new() -> ClientConn {
        ClientConn::with_window(MAX_WINDOW_SIZE)
    }

    /// A new connection advertising stream windows of `window` (the connection's is at
    /// least the protocol's initial 65535).
    pub fn with_window(window: u32) -> ClientConn {
        let mut out = PREFACE.to_vec();
        encode_settings(&mut out, &[Setting::EnablePush(false), Setting::InitialWindowSize(window)]);
        if window > DEFAULT_INITIAL_WINDOW_SIZE {
            encode_window_update(&mut out, 0, window - DEFAULT_INITIAL_WINDOW_SIZE);
        }
        let conn_window = i64::from(window.max(DEFAULT_INITIAL_WINDOW_SIZE));
        ClientConn {
            out,
            input: Vec::with_capacity(32 * 1024),
            encoder: Encoder::new(),
            decoder: Decoder::new(MAX_HEADER_LIST),
            scratch: Vec::with_capacity(256),
            blocks: Vec::new(),
            ready: false,
            peer_max_streams: u32::MAX,
            peer_max_frame: DEFAULT_MAX_FRAME_SIZE,
            next_id: 1,
            streams: Vec::new(),
            window: conn_window,
            conn_window,
            stream_window: i64::from(window),
            block: None,
            goaway: None,
            failed: false,
        }
    }

    /// Whether another stream may be opened, with at most `most` at once.
    pub fn can_open(&self, most: usize) -> bool {
        self.ready
            && !self.failed
            && self.goaway.is_none()
            && self.next_id < (1 << 31)
            && self.streams.len() < most.min(self.peer_max_streams as usize)
    }

    /// Opens a stream for `req`: one HEADERS frame with END_STREAM (CONTINUATION if longer
    /// than the server's SETTINGS_MAX_FRAME_SIZE). The header block is HPACK-encoded until
    /// encoding the target's fields gives the same block twice running; from then on that
    /// block is copied (about 28 ns against 1.1 µs to encode, see `encode_cost`): it only
    /// names table entries and literals that are not indexed, so sending it again leaves
    /// both tables as they are. Any encoding that changes a block, and any change of the
    /// server's SETTINGS_HEADER_TABLE_SIZE, sends every target back to encoding.
    pub fn open<'f>(&mut self, fields: impl IntoIterator<Item = Field<'f>>, req: Req) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        if self.blocks.len() <= req.target {
            self.blocks.resize_with(req.target + 1, CachedBlock::default);
        }
        if self.blocks[req.target].steady {
            encode_headers(&mut self.out, id, &self.blocks[req.target].bytes, true, self.peer_max_frame);
        } else {
            self.scratch.clear();
            self.encoder.encode(fields, &mut self.scratch);
            if self.scratch == self.blocks[req.target].bytes {
                self.blocks[req.target].steady = true;
            } else {
                // The table may have changed: every cached block may name other entries now.
                self.blocks.iter_mut().for_each(|b| b.steady = false);
                self.blocks[req.target].bytes.clone_from(&self.scratch);
            }
            encode_headers(&mut self.out, id, &self.scratch, true, self.peer_max_frame);
        }
        self.streams.push(Stream { id, req, status: 0, body: 0, window: self.stream_window });
        id
    }

    /// Ends stream `id` from our side (a timeout): RST_STREAM(CANCEL); its frames still
    /// arriving are read and dropped.
    pub fn cancel(&mut self, id: u32) -> Option<Stream> {
        let i = self.streams.iter().position(|s| s.id == id)?;
        encode_rst_stream(&mut self.out, id, ErrorCode::CANCEL);
        Some(self.streams.swap_remove(i))
    }

    /// Takes octets read from the server: every whole frame in them is acted on, ended
    /// streams pushed to `ended`. A connection error queues GOAWAY and is returned; the
    /// connection takes nothing after it.
    pub fn receive(&mut self, data: &[u8], ended: &mut Vec<Ended>) -> Result<(), Failure> {
        if self.failed {
            return Ok(());
        }
        self.input.extend_from_slice(data);
        let input = std::mem::take(&mut self.input);
        let mut at = 0;
        let result = loop {
            match Frame::decode(&input[at..], DEFAULT_MAX_FRAME_SIZE) {
                Ok(None) => break Ok(()),
                Ok(Some((frame, len))) => {
                    at += len;
                    if let Err(f) = self.on_frame(frame, len - 9, ended) {
                        break Err(f);
                    }
                }
                Err(FrameError::Stream { stream, code, frame_len, .. }) => {
                    at += frame_len;
                    if let Some(i) = self.streams.iter().position(|s| s.id == stream) {
                        encode_rst_stream(&mut self.out, stream, code);
                        ended.push(Ended::Reset(self.streams.swap_remove(i), code));
                    }
                }
                Err(FrameError::Connection { code, reason }) => break Err(Failure { code, reason }),
            }
        };
        self.input = input;
        self.input.drain(..at);
        if let Err(f) = &result {
            self.failed = true;
            encode_goaway(&mut self.out, self.next_id.saturating_sub(2), f.code, f.reason.as_bytes());
        }
        result
    }

    fn on_frame(&mut self, frame: Frame<'_>, payload_len: usize, ended: &mut Vec<Ended>) -> Result<(), Failure> {
        let fail = |code, reason| Err(Failure { code, reason });
        if let Some(block) = &mut self.block {
            let Frame::Continuation { stream, fragment, end_headers } = frame else {
                return fail(ErrorCode::PROTOCOL_ERROR, "a frame other than CONTINUATION inside a header block");
            };
            if stream != block.stream {
                return fail(ErrorCode::PROTOCOL_ERROR, "CONTINUATION on another stream");
            }
            if block.bytes.len() + fragment.len() > MAX_HEADER_BLOCK {
                return fail(ErrorCode::ENHANCE_YOUR_CALM, "header block too large");
            }
            block.bytes.extend_from_slice(fragment);
            if end_headers {
                let block = self.block.take().expect("a block");
                return self.on_block(block.stream, &block.bytes, block.end_stream, ended);
            }
            return Ok(());
        }
        match frame {
            Frame::Data { stream, data, end_stream, .. } => {
                let len = payload_len as i64;
                self.window -= len;
                if self.window < 0 {
                    return fail(ErrorCode::FLOW_CONTROL_ERROR, "DATA past the connection window");
                }
                if self.conn_window - self.window >= self.conn_window / 2 {
                    encode_window_update(&mut self.out, 0, (self.conn_window - self.window) as u32);
                    self.window = self.conn_window;
                }
                let Some(i) = self.streams.iter().position(|s| s.id == stream) else {
                    return self.unknown_stream(stream);
                };
                let s = &mut self.streams[i];
                s.window -= len;
                if s.window < 0 {
                    return fail(ErrorCode::FLOW_CONTROL_ERROR, "DATA past the stream window");
                }
                if s.status == 0 {
                    return fail(ErrorCode::PROTOCOL_ERROR, "DATA before the response head");
                }
                s.body += data.len() as u64;
                if end_stream {
                    ended.push(Ended::Response(self.streams.swap_remove(i)));
                } else if self.stream_window - s.window >= (self.stream_window / 2).max(1) {
                    encode_window_update(&mut self.out, stream, (self.stream_window - s.window) as u32);
                    s.window = self.stream_window;
                }
                Ok(())
            }
            Frame::Headers { stream, fragment, end_stream, end_headers, .. } => {
                if stream % 2 == 0 || stream >= self.next_id {
                    return fail(ErrorCode::PROTOCOL_ERROR, "HEADERS for a stream never opened");
                }
                if end_headers {
                    self.on_block(stream, fragment, end_stream, ended)
                } else {
                    self.block = Some(Block { stream, bytes: fragment.to_vec(), end_stream });
                    Ok(())
                }
            }
            Frame::Continuation { .. } => fail(ErrorCode::PROTOCOL_ERROR, "CONTINUATION without HEADERS"),
            Frame::RstStream { stream, code } => {
                match self.streams.iter().position(|s| s.id == stream) {
                    Some(i) => {
                        let s = self.streams.swap_remove(i);
                        ended.push(if code == ErrorCode::REFUSED_STREAM {
                            Ended::Retry(s)
                        } else {
                            Ended::Reset(s, code)
                        });
                    }
                    None if stream >= self.next_id => {
                        return fail(ErrorCode::PROTOCOL_ERROR, "RST_STREAM for a stream never opened")
                    }
                    None => {}
                }
                Ok(())
            }
            Frame::Settings(settings) => {
                for s in settings.iter() {
                    match s {
                        Setting::HeaderTableSize(n) => {
                            self.encoder.set_max_table_size(n as usize);
                            self.blocks.clear();
                        }
                        Setting::EnablePush(true) => {
                            return fail(ErrorCode::PROTOCOL_ERROR, "a server sent SETTINGS_ENABLE_PUSH 1")
                        }
                        Setting::MaxConcurrentStreams(n) => self.peer_max_streams = n,
                        Setting::MaxFrameSize(n) => self.peer_max_frame = n,
                        // No request bodies: the send windows never matter.
                        Setting::EnablePush(false) | Setting::InitialWindowSize(_) | Setting::MaxHeaderListSize(_) => {}
                    }
                }
                encode_settings_ack(&mut self.out);
                self.ready = true;
                Ok(())
            }
            Frame::PushPromise { .. } => fail(ErrorCode::PROTOCOL_ERROR, "PUSH_PROMISE with push disabled"),
            Frame::Ping { ack: false, data } => {
                encode_ping_ack(&mut self.out, data);
                Ok(())
            }
            Frame::GoAway { last_stream, .. } => {
                let last = self.goaway.map_or(last_stream, |l| l.min(last_stream));
                self.goaway = Some(last);
                let mut i = 0;
                while i < self.streams.len() {
                    if self.streams[i].id > last {
                        ended.push(Ended::Retry(self.streams.swap_remove(i)));
                    } else {
                        i += 1;
                    }
                }
                Ok(())
            }
            Frame::SettingsAck
            | Frame::Ping { ack: true, .. }
            | Frame::WindowUpdate { .. }
            | Frame::Priority { .. }
            | Frame::Unknown { .. } => Ok(()),
        }
    }

    /// A frame for a stream that is not open: one we ended (reset, timed out) is dropped;
    /// one never opened is a connection error (§5.1).
    fn unknown_stream(&self, stream: u32) -> Result<(), Failure> {
        if stream % 2 == 1 && stream < self.next_id {
            return Ok(());
        }
        Err(Failure { code: ErrorCode::PROTOCOL_ERROR, reason: "DATA for a stream never opened" })
    }

    /// A whole header block for `stream`: decoded always (the HPACK tables must stay in
    /// step), applied if the stream is still ours.
    fn on_block(&mut self, stream: u32, block: &[u8], end_stream: bool, ended: &mut Vec<Ended>) -> Result<(), Failure> {
        let mut status: Option<u16> = None;
        let mut bad_status = false;
        let decoded = self.decoder.decode(block, |f| {
            if f.name == b":status" {
                match std::str::from_utf8(f.value).ok().filter(|v| v.len() == 3).and_then(|v| v.parse::<u16>().ok()) {
                    Some(code) if code >= 100 => status = Some(code),
                    _ => bad_status = true,
                }
            }
        });
        if decoded.is_err() {
            return Err(Failure { code: ErrorCode::COMPRESSION_ERROR, reason: "a bad HPACK block" });
        }
        let Some(i) = self.streams.iter().position(|s| s.id == stream) else { return Ok(()) };
        let s = &mut self.streams[i];
        let protocol = |reason| Err(Failure { code: ErrorCode::PROTOCOL_ERROR, reason });
        match (s.status, status) {
            _ if bad_status => return protocol("a malformed :status"),
            // The response head; 1xx heads are informational, and more follow.
            (0, Some(code)) if code < 200 => {
                if end_stream {
                    return protocol("END_STREAM on an informational response");
                }
            }
            (0, Some(code)) => s.status = code,
            (0, None) => return protocol("a response head without :status"),
            // Trailers: they end the stream.
            (_, None) if end_stream => {}
            _ => return protocol("a second response head"),
        }
        if end_stream && s.status != 0 {
            ended.push(Ended::Response(self.streams.swap_remove(i)));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "h2_tests.rs"]
mod tests;
