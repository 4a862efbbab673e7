//! HTTP/2 (RFC 9113): frames read and written sans-IO (§4, §6), and the server side of a
//! connection built on them.
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
//! - [`Conn`] is the server side of a connection (§3 to §8) built on those frames and
//!   on [`crate::hpack`]: a state machine with no I/O, no clock and no thread. The caller
//!   hands it the octets it read ([`Conn::receive`], which says how many it took), takes
//!   [`Event`]s ([`Conn::next_event`]: requests, body octets, trailers, resets, the
//!   client's GOAWAY, and `WindowOpened` when a stream may send again), answers with
//!   [`Conn::send_head`], [`Conn::send_data`] (which takes what flow control and the
//!   output cap allow), [`Conn::send_trailers`] and [`Conn::send_reset`], gives request
//!   body credit back with [`Conn::release`], and writes [`Conn::pending_output`], the
//!   connection's one output buffer, marking it with [`Conn::consumed`]. On its own it
//!   sends SETTINGS and acknowledges the client's, answers PING, keeps both directions'
//!   flow-control windows (§6.9), assembles CONTINUATION, enforces the stream states of
//!   §5.1 and the identifier rules of §5.1.1, MAX_CONCURRENT_STREAMS, and the request
//!   rules of §8 (pseudo-headers, connection-specific fields, content-length against
//!   DATA), each refusal a connection or a stream error as §5.4 says. [`Config`] holds
//!   what it advertises and its bounds: queued output, header block size and
//!   CONTINUATION count, acknowledgements queued, empty DATA frames in a row, and streams
//!   reset early per window of streams opened (rapid reset).
//!
//! What it does not do: send PUSH_PROMISE or PING of its own, time anything out (the
//! SETTINGS ACK timeout and idle connections are the caller's, which owns the clock),
//! prioritise streams (RFC 9113 deprecates the scheme, §5.3.2: PRIORITY is accepted and
//! ignored), extended CONNECT (RFC 8441), or decode a field block before the whole block
//! is in.
//!
//! The parts: `frame` (the header of §4.1, [`Frame`], the decoder and the encoder),
//! `settings` (the parameters of §6.5.2 and their ranges), `error` (§7's codes, §5.4's two
//! kinds of error), `conn` ([`Conn`]: its types and its driving; `conn/recv` acts on each
//! frame received, `conn/send` writes responses and keeps the credit), `stream` (§5.1's
//! states and the windows of one stream), `head` (§8.2 and §8.3's rules for a request's
//! fields, [`RequestHead`]).

mod conn;
mod error;
mod frame;
mod head;
mod settings;
mod stream;

#[cfg(test)]
mod tests;

pub use conn::{Config, Conn, ConnError, Event, SendError};
pub use error::{ErrorCode, FrameError};
pub use frame::{
    encode_data, encode_goaway, encode_headers, encode_ping_ack, encode_rst_stream, encode_settings,
    encode_settings_ack, encode_window_update, Frame, Priority,
};
pub use head::RequestHead;
pub use settings::{
    Setting, Settings, DEFAULT_INITIAL_WINDOW_SIZE, DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE, MAX_WINDOW_SIZE,
};
pub use stream::StreamId;
