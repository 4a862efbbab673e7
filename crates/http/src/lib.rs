//! Spidey's HTTP/1.1 protocol core.
//!
//! Everything here is pure: bytes in, decisions out. No sockets, no files, no clocks
//! except the ones passed in, so every function can be unit-tested and fuzzed.
//!
//! - [`request`]: the request head parser (httparse underneath) with Spidey's limits and
//!   the framing rules of RFC 9112 that httparse leaves to its caller.
//! - [`error`]: the small error enum, named by where parsing failed, and its one mapping
//!   to a status code.
//! - [`field`]: the grammar of a header field (`tchar`, token, field value), written once.
//! - [`response`]: status codes and the response head writer.
//! - [`range`]: the `Range` header (RFC 9110 §14), single ranges only.
//! - [`conditional`]: ETags, `If-None-Match`, `If-Modified-Since`, `If-Range`.
//! - [`date`]: IMF-fixdate formatting with a once-per-second cache.
//! - [`cgi`]: the header block of a CGI script's output (RFC 3875 §6).
//! - [`chunked`]: an incremental decoder for `Transfer-Encoding: chunked` bodies.
//! - [`encoder`]: the framing of a response body as it is written (length, chunked,
//!   close-delimited).
//! - [`choice`]: which protocol a connection speaks, from ALPN and its first bytes
//!   (HTTP/1.1 here; HTTP/2's preface gets HTTP/2's own refusal).
//! - [`negotiate`]: `Accept-Encoding` and `Accept` with q-values.
//! - [`hpack`]: HTTP/2's header compression (RFC 7541), encoder and decoder.
//! - [`h2`]: HTTP/2 (RFC 9113): one frame decoded with every rule it can break alone, the
//!   frames a server sends encoded, and [`h2::Conn`], the server side of a connection as a
//!   state machine without I/O.

pub mod cgi;
pub mod choice;
pub mod chunked;
pub mod conditional;
pub mod date;
pub mod encoder;
pub mod error;
pub mod field;
pub mod h2;
pub mod hpack;
pub mod negotiate;
pub mod range;
pub mod request;
pub mod response;

pub use encoder::{EncodeError, Encoder};
pub use error::ParseError;
pub use request::{parse, BodyFraming, Field, Fields, HeaderSlots, Limits, Method, Parsed, Request, Target, Version};
pub use response::{write_head, HeadOptions, StatusCode};
