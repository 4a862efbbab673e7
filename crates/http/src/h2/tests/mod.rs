//! Framing's tests: frames refused by each rule of §6 (`errors`), every type written and
//! read back, every truncation, and random frames and bytes (`roundtrip`), the encoder's
//! splitting of a field block (`encode`), and the RFC's examples (`rfc`).

mod conn;
mod encode;
mod errors;
mod rfc;
mod roundtrip;

use super::{ErrorCode, Frame, FrameError, DEFAULT_MAX_FRAME_SIZE};

/// Octets from hex, spaces allowed.
pub(super) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A frame as raw octets: the header of §4.1 (length from the payload, `stream` written
/// whole, reserved bit and all) and the payload.
pub(super) fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// What a refusal ends, as the tables write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Conn,
    Stream(u32),
}

/// A refusal as the tables write it: the code and the kind.
pub(super) fn kind_of(e: &FrameError) -> (ErrorCode, Kind) {
    (e.code(), e.stream().map_or(Kind::Conn, Kind::Stream))
}

/// Decodes `buf` at the default maximum frame size.
pub(super) fn decode(buf: &[u8]) -> Result<Option<(Frame<'_>, usize)>, FrameError> {
    Frame::decode(buf, DEFAULT_MAX_FRAME_SIZE)
}

/// `frame` written by [`Frame::encode`].
pub(super) fn encoded(frame: &Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    frame.encode(&mut out);
    out
}
