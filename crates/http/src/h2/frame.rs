//! One HTTP/2 frame: the 9-octet header (RFC 9113 §4.1), the ten frame types of §6 as
//! [`Frame`], the decoder with every rule that one frame alone can break, and the encoder.

use super::error::{ErrorCode, FrameError};
use super::settings::{Setting, Settings, MAX_MAX_FRAME_SIZE, MAX_WINDOW_SIZE};

/// The frame header's length: 24-bit length, type, flags, 1 reserved bit and a 31-bit
/// stream identifier (§4.1).
pub(crate) const HEADER_LEN: usize = 9;

/// The frame types of §6 (and §11.2's registry).
pub(crate) mod kind {
    pub(crate) const DATA: u8 = 0x0;
    pub(crate) const HEADERS: u8 = 0x1;
    pub(crate) const PRIORITY: u8 = 0x2;
    pub(crate) const RST_STREAM: u8 = 0x3;
    pub(crate) const SETTINGS: u8 = 0x4;
    pub(crate) const PUSH_PROMISE: u8 = 0x5;
    pub(crate) const PING: u8 = 0x6;
    pub(crate) const GOAWAY: u8 = 0x7;
    pub(crate) const WINDOW_UPDATE: u8 = 0x8;
    pub(crate) const CONTINUATION: u8 = 0x9;
}

/// The flags of §6, by the types that define them. A flag a type does not define is
/// ignored on receipt (§4.1) and never sent.
pub(crate) mod flag {
    /// DATA, HEADERS.
    pub(crate) const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING.
    pub(crate) const ACK: u8 = 0x1;
    /// HEADERS, PUSH_PROMISE, CONTINUATION.
    pub(crate) const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS, PUSH_PROMISE.
    pub(crate) const PADDED: u8 = 0x8;
    /// HEADERS.
    pub(crate) const PRIORITY: u8 = 0x20;
}

/// The stream identifier's 31 bits; the reserved bit above them "MUST remain unset (0x0)
/// when sending and MUST be ignored when receiving" (§4.1), as must the same bit in
/// WINDOW_UPDATE's increment, GOAWAY's last stream and PUSH_PROMISE's promised stream.
const STREAM_MASK: u32 = 0x7fff_ffff;

/// A frame header as read (§4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHeader {
    /// The payload's length, 24 bits: at most [`MAX_MAX_FRAME_SIZE`].
    pub(crate) len: u32,
    pub(crate) kind: u8,
    pub(crate) flags: u8,
    /// The stream identifier, the reserved bit dropped.
    pub(crate) stream: u32,
}

impl FrameHeader {
    pub(crate) fn parse(b: &[u8; HEADER_LEN]) -> FrameHeader {
        FrameHeader {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & STREAM_MASK,
        }
    }

    /// Whether `f` is set.
    fn has(self, f: u8) -> bool {
        self.flags & f != 0
    }
}

/// The priority fields of HEADERS (with the PRIORITY flag) and of PRIORITY frames (§6.2,
/// §6.3), as RFC 7540 defined them. RFC 9113 deprecates the scheme (§5.3.2) and a server
/// may ignore them, but they are parsed to check the one rule about them a frame can break
/// alone, "a stream cannot depend on itself" (§5.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    /// The stream depended on, 31 bits.
    pub depends_on: u32,
    /// The E flag.
    pub exclusive: bool,
    /// The weight as sent: the weight minus one (0..=255 for 1..=256).
    pub weight: u8,
}

impl Priority {
    const LEN: usize = 5;

    fn parse(b: &[u8]) -> Priority {
        let word = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Priority { depends_on: word & STREAM_MASK, exclusive: word & !STREAM_MASK != 0, weight: b[4] }
    }

    fn write(self, out: &mut Vec<u8>) {
        let word = (self.depends_on & STREAM_MASK) | if self.exclusive { !STREAM_MASK } else { 0 };
        out.extend_from_slice(&word.to_be_bytes());
        out.push(self.weight);
    }
}

/// One decoded frame, its payloads borrowed from the input (§6).
///
/// What a frame carries that the protocol gives no meaning to is not kept: flags its type
/// does not define (§4.1), the reserved bits, and padding's contents (§6.1: "a receiver is
/// not obligated to verify padding"). Its length is kept where flow control counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// DATA (§6.1). Flow control counts the whole payload, padding included: see
    /// [`Frame::flow_controlled_len`].
    Data {
        stream: u32,
        data: &'a [u8],
        end_stream: bool,
        /// The Pad Length, if the PADDED flag was set.
        padding: Option<u8>,
    },
    /// HEADERS (§6.2): the first fragment of a field block, which continues in
    /// CONTINUATION frames on the same stream until END_HEADERS.
    ///
    /// A `priority` that names `stream` itself is a stream error of type PROTOCOL_ERROR
    /// (§5.3.1) that the decoder does not return: the fragment must still reach the HPACK
    /// decoder, or the two sides' tables fall out of step (§4.3), so the connection
    /// decodes the block and then resets the stream.
    Headers {
        stream: u32,
        fragment: &'a [u8],
        end_stream: bool,
        end_headers: bool,
        padding: Option<u8>,
        priority: Option<Priority>,
    },
    /// PRIORITY (§6.3): which a server may ignore once it is valid (§5.3.2).
    Priority { stream: u32, priority: Priority },
    /// RST_STREAM (§6.4).
    RstStream { stream: u32, code: ErrorCode },
    /// SETTINGS with parameters, or none (§6.5), every value in range.
    Settings(Settings<'a>),
    /// SETTINGS with the ACK flag (§6.5), its payload empty.
    SettingsAck,
    /// PUSH_PROMISE (§6.6). A client cannot push, so a server that receives one MUST treat
    /// it as a connection error of type PROTOCOL_ERROR (§8.4). The decoder returns it
    /// typed and leaves that to the caller, which knows its role.
    PushPromise {
        stream: u32,
        /// The reserved bit dropped.
        promised: u32,
        fragment: &'a [u8],
        end_headers: bool,
        padding: Option<u8>,
    },
    /// PING (§6.7).
    Ping { ack: bool, data: [u8; 8] },
    /// GOAWAY (§6.8); `last_stream` without the reserved bit.
    GoAway { last_stream: u32, code: ErrorCode, debug: &'a [u8] },
    /// WINDOW_UPDATE (§6.9): `stream` 0 for the connection's window, `increment` from 1
    /// to 2^31 - 1.
    WindowUpdate { stream: u32, increment: u32 },
    /// CONTINUATION (§6.10).
    Continuation { stream: u32, fragment: &'a [u8], end_headers: bool },
    /// A frame of a type RFC 9113 does not define, which "MUST be ignored and discarded"
    /// (§4.1, §5.5), unless it sits inside a field block: any frame but CONTINUATION
    /// between HEADERS and its END_HEADERS is a connection error of type PROTOCOL_ERROR
    /// (§4.3, §6.10), an unknown one too, which is the connection's check. Kept whole, so a
    /// proxy or a test can see it.
    Unknown { kind: u8, flags: u8, stream: u32, payload: &'a [u8] },
}

/// A connection error of `code`.
fn conn(code: ErrorCode, reason: &'static str) -> FrameError {
    FrameError::connection(code, reason)
}

impl<'a> Frame<'a> {
    /// Decodes the frame at the start of `buf`, if `buf` holds all of it: `Ok(None)` until
    /// it does, then the frame and the octets it took (header included). Nothing is copied
    /// but PING's 8 octets.
    ///
    /// `max_frame_size` is the SETTINGS_MAX_FRAME_SIZE this side advertised (16384 until
    /// the peer acknowledges a larger one, §4.2). A frame longer is a connection error of
    /// type FRAME_SIZE_ERROR, refused as soon as its header is in `buf`, so a peer cannot
    /// make the caller buffer more than one frame of that size.
    ///
    /// Every rule of §6 that one frame can break alone is checked, as a connection or a
    /// stream error as the RFC says (see [`FrameError`]): the stream identifier each type
    /// needs (0 for SETTINGS, PING and GOAWAY; not 0 for DATA, HEADERS, PRIORITY,
    /// RST_STREAM, PUSH_PROMISE and CONTINUATION), the fixed lengths (PRIORITY 5,
    /// RST_STREAM 4, PING 8, WINDOW_UPDATE 4, GOAWAY at least 8, SETTINGS a multiple of 6
    /// and 0 with ACK), payloads too short for their padding or priority fields, padding
    /// as long as what is left, a WINDOW_UPDATE increment of 0, SETTINGS values out of
    /// range, and a PRIORITY frame that makes its stream depend on itself. The stream
    /// identifier is checked first, then the length, then the contents. What depends on
    /// the connection (stream states, windows, CONTINUATION's order, which side may send
    /// what) is the caller's: a server receiving PUSH_PROMISE, for one, gets it typed.
    ///
    /// It never panics, whatever `buf` holds.
    pub fn decode(buf: &'a [u8], max_frame_size: u32) -> Result<Option<(Frame<'a>, usize)>, FrameError> {
        let Some(head) = buf.first_chunk::<HEADER_LEN>() else { return Ok(None) };
        let head = FrameHeader::parse(head);
        if head.len > max_frame_size {
            return Err(conn(ErrorCode::FRAME_SIZE_ERROR, "frame longer than SETTINGS_MAX_FRAME_SIZE"));
        }
        let frame_len = HEADER_LEN + head.len as usize;
        let Some(payload) = buf.get(HEADER_LEN..frame_len) else { return Ok(None) };
        Ok(Some((Frame::decode_payload(head, payload, frame_len)?, frame_len)))
    }

    fn decode_payload(head: FrameHeader, p: &'a [u8], frame_len: usize) -> Result<Frame<'a>, FrameError> {
        use ErrorCode as E;
        let stream = head.stream;
        let stream_error = |code, reason| FrameError::Stream { stream, code, frame_len, reason };
        let frame = match head.kind {
            kind::DATA => {
                if stream == 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "DATA on stream 0"));
                }
                let (padding, rest) = pad_length(head, p)?;
                let data = unpad(padding, rest)?;
                Frame::Data { stream, data, end_stream: head.has(flag::END_STREAM), padding }
            }
            kind::HEADERS => {
                if stream == 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "HEADERS on stream 0"));
                }
                let (padding, mut rest) = pad_length(head, p)?;
                let mut priority = None;
                if head.has(flag::PRIORITY) {
                    let Some((fields, after)) = rest.split_at_checked(Priority::LEN) else {
                        return Err(conn(E::FRAME_SIZE_ERROR, "HEADERS too short for its priority fields"));
                    };
                    priority = Some(Priority::parse(fields));
                    rest = after;
                }
                Frame::Headers {
                    stream,
                    fragment: unpad(padding, rest)?,
                    end_stream: head.has(flag::END_STREAM),
                    end_headers: head.has(flag::END_HEADERS),
                    padding,
                    priority,
                }
            }
            kind::PRIORITY => {
                if stream == 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "PRIORITY on stream 0"));
                }
                if p.len() != Priority::LEN {
                    return Err(stream_error(E::FRAME_SIZE_ERROR, "PRIORITY not 5 octets"));
                }
                let priority = Priority::parse(p);
                if priority.depends_on == stream {
                    return Err(stream_error(E::PROTOCOL_ERROR, "PRIORITY makes a stream depend on itself"));
                }
                Frame::Priority { stream, priority }
            }
            kind::RST_STREAM => {
                if stream == 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "RST_STREAM on stream 0"));
                }
                let Ok(code) = <[u8; 4]>::try_from(p) else {
                    return Err(conn(E::FRAME_SIZE_ERROR, "RST_STREAM not 4 octets"));
                };
                Frame::RstStream { stream, code: ErrorCode(u32::from_be_bytes(code)) }
            }
            kind::SETTINGS => {
                if stream != 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "SETTINGS on a stream"));
                }
                if head.has(flag::ACK) {
                    if !p.is_empty() {
                        return Err(conn(E::FRAME_SIZE_ERROR, "SETTINGS ACK with a payload"));
                    }
                    Frame::SettingsAck
                } else {
                    Frame::Settings(Settings::parse(p)?)
                }
            }
            kind::PUSH_PROMISE => {
                if stream == 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "PUSH_PROMISE on stream 0"));
                }
                let (padding, rest) = pad_length(head, p)?;
                let Some((promised, rest)) = rest.split_first_chunk::<4>() else {
                    return Err(conn(E::FRAME_SIZE_ERROR, "PUSH_PROMISE too short for its promised stream"));
                };
                Frame::PushPromise {
                    stream,
                    promised: u32::from_be_bytes(*promised) & STREAM_MASK,
                    fragment: unpad(padding, rest)?,
                    end_headers: head.has(flag::END_HEADERS),
                    padding,
                }
            }
            kind::PING => {
                if stream != 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "PING on a stream"));
                }
                let Ok(data) = <[u8; 8]>::try_from(p) else {
                    return Err(conn(E::FRAME_SIZE_ERROR, "PING not 8 octets"));
                };
                Frame::Ping { ack: head.has(flag::ACK), data }
            }
            kind::GOAWAY => {
                if stream != 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "GOAWAY on a stream"));
                }
                let Some((fixed, debug)) = p.split_first_chunk::<8>() else {
                    return Err(conn(E::FRAME_SIZE_ERROR, "GOAWAY shorter than 8 octets"));
                };
                let last_stream = u32::from_be_bytes([fixed[0], fixed[1], fixed[2], fixed[3]]) & STREAM_MASK;
                let code = ErrorCode(u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]));
                Frame::GoAway { last_stream, code, debug }
            }
            kind::WINDOW_UPDATE => {
                let Ok(word) = <[u8; 4]>::try_from(p) else {
                    return Err(conn(E::FRAME_SIZE_ERROR, "WINDOW_UPDATE not 4 octets"));
                };
                let increment = u32::from_be_bytes(word) & STREAM_MASK;
                if increment == 0 {
                    // §6.9: a stream error, but "errors on the connection flow-control
                    // window MUST be treated as a connection error".
                    let reason = "WINDOW_UPDATE increment of 0";
                    return Err(if stream == 0 {
                        conn(E::PROTOCOL_ERROR, reason)
                    } else {
                        stream_error(E::PROTOCOL_ERROR, reason)
                    });
                }
                Frame::WindowUpdate { stream, increment }
            }
            kind::CONTINUATION => {
                if stream == 0 {
                    return Err(conn(E::PROTOCOL_ERROR, "CONTINUATION on stream 0"));
                }
                Frame::Continuation { stream, fragment: p, end_headers: head.has(flag::END_HEADERS) }
            }
            kind => Frame::Unknown { kind, flags: head.flags, stream, payload: p },
        };
        Ok(frame)
    }

    /// What flow control counts of this frame (§6.9.1): a DATA frame's whole payload,
    /// Pad Length and padding included (§6.1); 0 for every other type.
    pub fn flow_controlled_len(&self) -> u32 {
        match *self {
            Frame::Data { data, padding, .. } => data.len() as u32 + padding.map_or(0, |p| u32::from(p) + 1),
            _ => 0,
        }
    }

    /// Appends this frame to `out` as one frame, as the decoder would read it back: the
    /// same fields, padding of zeros (§6.1), priority fields where there were some. What
    /// the decoder does not keep (undefined flags, reserved bits) is written as 0. The
    /// server's own frames go through the `encode_*` functions; this is for tests, the
    /// fuzz target and anything that passes frames on.
    ///
    /// Panics if the payload would be longer than a frame can say (2^24 - 1 octets).
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Frame::Data { stream, data, end_stream, padding } => {
                let flags = if end_stream { flag::END_STREAM } else { 0 };
                write_padded(out, kind::DATA, flags, stream, padding, &[], data);
            }
            Frame::Headers { stream, fragment, end_stream, end_headers, padding, priority } => {
                let mut flags = if end_stream { flag::END_STREAM } else { 0 };
                flags |= if end_headers { flag::END_HEADERS } else { 0 };
                let mut prefix = Vec::new();
                if let Some(priority) = priority {
                    flags |= flag::PRIORITY;
                    priority.write(&mut prefix);
                }
                write_padded(out, kind::HEADERS, flags, stream, padding, &prefix, fragment);
            }
            Frame::Priority { stream, priority } => {
                write_head(out, Priority::LEN, kind::PRIORITY, 0, stream);
                priority.write(out);
            }
            Frame::RstStream { stream, code } => encode_rst_stream(out, stream, code),
            Frame::Settings(settings) => {
                write_head(out, settings.payload().len(), kind::SETTINGS, 0, 0);
                out.extend_from_slice(settings.payload());
            }
            Frame::SettingsAck => encode_settings_ack(out),
            Frame::PushPromise { stream, promised, fragment, end_headers, padding } => {
                let flags = if end_headers { flag::END_HEADERS } else { 0 };
                let prefix = (promised & STREAM_MASK).to_be_bytes();
                write_padded(out, kind::PUSH_PROMISE, flags, stream, padding, &prefix, fragment);
            }
            Frame::Ping { ack, data } => {
                write_head(out, 8, kind::PING, if ack { flag::ACK } else { 0 }, 0);
                out.extend_from_slice(&data);
            }
            Frame::GoAway { last_stream, code, debug } => encode_goaway(out, last_stream, code, debug),
            Frame::WindowUpdate { stream, increment } => encode_window_update(out, stream, increment),
            Frame::Continuation { stream, fragment, end_headers } => {
                let flags = if end_headers { flag::END_HEADERS } else { 0 };
                write_head(out, fragment.len(), kind::CONTINUATION, flags, stream);
                out.extend_from_slice(fragment);
            }
            Frame::Unknown { kind, flags, stream, payload } => {
                write_head(out, payload.len(), kind, flags, stream);
                out.extend_from_slice(payload);
            }
        }
    }
}

/// The Pad Length of a frame whose type may be padded, and the payload after it.
/// A PADDED frame with no payload at all is too small "to contain mandatory frame data"
/// (§4.2): a FRAME_SIZE_ERROR, as a connection error since every padded type but DATA
/// carries a field block, and DATA counts against the connection's window.
fn pad_length(head: FrameHeader, p: &[u8]) -> Result<(Option<u8>, &[u8]), FrameError> {
    if !head.has(flag::PADDED) {
        return Ok((None, p));
    }
    match p.split_first() {
        Some((&pad, rest)) => Ok((Some(pad), rest)),
        None => Err(conn(ErrorCode::FRAME_SIZE_ERROR, "PADDED frame without a Pad Length")),
    }
}

/// What is left of `rest` once the padding is off its end. Padding as long as the payload
/// or longer (the Pad Length octet and any fields before the data counted) is a connection
/// error of type PROTOCOL_ERROR (§6.1, §6.2, §6.6).
fn unpad(padding: Option<u8>, rest: &[u8]) -> Result<&[u8], FrameError> {
    let pad = padding.map_or(0, usize::from);
    match rest.len().checked_sub(pad) {
        Some(end) => Ok(&rest[..end]),
        None => Err(conn(ErrorCode::PROTOCOL_ERROR, "padding longer than the payload")),
    }
}

/// Appends a frame header (§4.1). Panics if `len` is more than 24 bits can say: a frame
/// with a wrong length would garble every frame after it.
fn write_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    assert!(len <= MAX_MAX_FRAME_SIZE as usize, "an HTTP/2 frame payload of {len} octets");
    debug_assert!(stream <= STREAM_MASK, "stream identifier {stream:#x} uses the reserved bit");
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&[len[1], len[2], len[3], kind, flags]);
    out.extend_from_slice(&(stream & STREAM_MASK).to_be_bytes());
}

/// Appends a frame that may be padded: [Pad Length] `prefix` `body` [zeros].
fn write_padded(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, padding: Option<u8>, prefix: &[u8], body: &[u8]) {
    let pad = padding.map_or(0, |p| 1 + usize::from(p));
    let flags = if padding.is_some() { flags | flag::PADDED } else { flags };
    write_head(out, pad + prefix.len() + body.len(), kind, flags, stream);
    if let Some(p) = padding {
        out.push(p);
    }
    out.extend_from_slice(prefix);
    out.extend_from_slice(body);
    out.resize(out.len() + pad.saturating_sub(1), 0);
}

/// Appends a SETTINGS frame with `settings` in order (§6.5): the server's connection
/// preface when it is the first frame sent (§3.4), empty if the defaults will do.
/// Every value must be in its range (debug builds check).
pub fn encode_settings(out: &mut Vec<u8>, settings: &[Setting]) {
    debug_assert!(settings.iter().all(|s| s.is_valid()), "a SETTINGS value out of range: {settings:?}");
    write_head(out, settings.len() * super::settings::PARAMETER_LEN, kind::SETTINGS, 0, 0);
    for s in settings {
        out.extend_from_slice(&s.id().to_be_bytes());
        out.extend_from_slice(&s.value().to_be_bytes());
    }
}

/// Appends a SETTINGS frame with the ACK flag and no payload (§6.5), which "MUST" answer
/// each SETTINGS frame received once its values are applied (§6.5.3).
pub fn encode_settings_ack(out: &mut Vec<u8>) {
    write_head(out, 0, kind::SETTINGS, flag::ACK, 0);
}

/// Appends a field block (RFC 7541's encoder's output) as one HEADERS frame and as many
/// CONTINUATION frames as it takes, each at most `max_frame_size` octets (the peer's
/// SETTINGS_MAX_FRAME_SIZE; 0 is taken as 1, and more than 2^24 - 1 as 2^24 - 1), the
/// last with END_HEADERS (§4.3, §6.2, §6.10). END_STREAM, if asked for, goes on the
/// HEADERS frame, where §6.2 puts it even when CONTINUATION follows. An empty block is one
/// empty HEADERS frame. Nothing may be written between these frames on the connection
/// (§4.3).
pub fn encode_headers(out: &mut Vec<u8>, stream: u32, block: &[u8], end_stream: bool, max_frame_size: u32) {
    debug_assert!(stream != 0, "HEADERS on stream 0");
    let max = max_frame_size.clamp(1, MAX_MAX_FRAME_SIZE) as usize;
    let mut chunks = block.chunks(max);
    let first = chunks.next().unwrap_or(&[]);
    let last_flag = |rest: &std::slice::Chunks<'_, u8>| if rest.len() == 0 { flag::END_HEADERS } else { 0 };
    let end_stream = if end_stream { flag::END_STREAM } else { 0 };
    write_head(out, first.len(), kind::HEADERS, end_stream | last_flag(&chunks), stream);
    out.extend_from_slice(first);
    while let Some(chunk) = chunks.next() {
        write_head(out, chunk.len(), kind::CONTINUATION, last_flag(&chunks), stream);
        out.extend_from_slice(chunk);
    }
}

/// Appends one DATA frame, unpadded (§6.1). The caller keeps `data` within the peer's
/// SETTINGS_MAX_FRAME_SIZE and both flow-control windows.
pub fn encode_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    debug_assert!(stream != 0, "DATA on stream 0");
    write_head(out, data.len(), kind::DATA, if end_stream { flag::END_STREAM } else { 0 }, stream);
    out.extend_from_slice(data);
}

/// Appends the header of a DATA frame of `len` octets, whose payload the caller appends.
pub(crate) fn encode_data_head(out: &mut Vec<u8>, stream: u32, len: usize, end_stream: bool) {
    debug_assert!(stream != 0, "DATA on stream 0");
    write_head(out, len, kind::DATA, if end_stream { flag::END_STREAM } else { 0 }, stream);
}

/// Appends a WINDOW_UPDATE (§6.9) for `stream`, or for the connection if `stream` is 0.
/// `increment` must be from 1 to 2^31 - 1 (debug builds check).
pub fn encode_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    debug_assert!((1..=MAX_WINDOW_SIZE).contains(&increment), "WINDOW_UPDATE increment {increment}");
    write_head(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & STREAM_MASK).to_be_bytes());
}

/// Appends a RST_STREAM (§6.4) ending `stream` with `code`.
pub fn encode_rst_stream(out: &mut Vec<u8>, stream: u32, code: ErrorCode) {
    debug_assert!(stream != 0, "RST_STREAM on stream 0");
    write_head(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.0.to_be_bytes());
}

/// Appends the answer to a PING: the same 8 octets, with the ACK flag (§6.7).
pub fn encode_ping_ack(out: &mut Vec<u8>, data: [u8; 8]) {
    write_head(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(&data);
}

/// Appends a GOAWAY (§6.8): `last_stream` is the highest stream the sender may have acted
/// on, `debug` any octets for whoever reads a capture (not for decisions).
pub fn encode_goaway(out: &mut Vec<u8>, last_stream: u32, code: ErrorCode, debug: &[u8]) {
    write_head(out, 8 + debug.len(), kind::GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & STREAM_MASK).to_be_bytes());
    out.extend_from_slice(&code.0.to_be_bytes());
    out.extend_from_slice(debug);
}
