//! HTTP/2 framing (RFC 9113 §4 and §6): what one frame is, read and written sans-IO.
//!
//! What it does:
//! - [`Frame::decode`] reads the frame at the start of a buffer, once the buffer holds all
//!   of it (`Ok(None)` until then), into a typed [`Frame`] whose payloads borrow the buffer.
//!   It refuses a frame longer than this side's SETTINGS_MAX_FRAME_SIZE as soon as the
//!   header shows it (§4.2), and every frame that breaks a rule of §6 checkable on that
//!   frame alone: the stream identifier its type needs, fixed and minimum lengths, padding
//!   as long as what is left, a WINDOW_UPDATE increment of 0, SETTINGS values out of range,
//!   a PRIORITY frame on which its stream depends on itself. Unknown frame types, flags and
//!   SETTINGS parameters are ignored, as §4.1 and §6.5.2 require, and the reserved bits.
//!   It never panics on any input.
//! - Each refusal is a [`FrameError`]: the [`ErrorCode`] to send, and whether it is a
//!   connection error (GOAWAY, then close) or a stream error (RST_STREAM on that stream;
//!   the connection reads on past the frame), as the RFC says for each rule (§5.4).
//! - The `encode_*` functions append the frames a server sends to the connection's output
//!   buffer: SETTINGS and its ACK, HEADERS split into CONTINUATION at the peer's
//!   SETTINGS_MAX_FRAME_SIZE, DATA, WINDOW_UPDATE, RST_STREAM, the PING ACK, GOAWAY.
//!   [`Frame::encode`] writes any decoded frame back as the decoder will read it.
//!
//! What it does not do: anything that needs more than one frame or the connection's
//! state. Stream states (§5.1), flow-control windows (§6.9), the order of a field block's
//! HEADERS and CONTINUATION frames (§6.10), which side may send what (a server receiving
//! PUSH_PROMISE, a client receiving ENABLE_PUSH 1), SETTINGS acknowledgement and its
//! timeout: all of that is the connection state machine's, not written yet, and so is the
//! reassembly of a field block for [`crate::hpack::Decoder`].
//!
//! The parts: `frame` (the header of §4.1, [`Frame`], the decoder and the encoder),
//! `settings` (the parameters of §6.5.2 and their ranges), `error` (§7's codes, §5.4's two
//! kinds of error).

mod error;
mod frame;
mod settings;

#[cfg(test)]
mod tests;

pub use error::{ErrorCode, FrameError};
pub use frame::{
    encode_data, encode_goaway, encode_headers, encode_ping_ack, encode_rst_stream, encode_settings,
    encode_settings_ack, encode_window_update, Frame, Priority,
};
pub use settings::{
    Setting, Settings, DEFAULT_INITIAL_WINDOW_SIZE, DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE, MAX_WINDOW_SIZE,
};
