//! HTTP/2's error codes (RFC 9113 §7) and the two kinds of error a frame can be (§5.4).

use std::fmt;

/// An error code as RST_STREAM and GOAWAY carry it (RFC 9113 §7): 32 bits on the wire.
///
/// A newtype over the number, not an enum: a code this side does not know is still a code
/// a peer may send, and "MUST NOT trigger any special behavior" (§7), so it must survive
/// decoding. The codes §7 defines are the associated constants.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    pub const NO_ERROR: ErrorCode = ErrorCode(0x0);
    pub const PROTOCOL_ERROR: ErrorCode = ErrorCode(0x1);
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(0x2);
    pub const FLOW_CONTROL_ERROR: ErrorCode = ErrorCode(0x3);
    pub const SETTINGS_TIMEOUT: ErrorCode = ErrorCode(0x4);
    pub const STREAM_CLOSED: ErrorCode = ErrorCode(0x5);
    pub const FRAME_SIZE_ERROR: ErrorCode = ErrorCode(0x6);
    pub const REFUSED_STREAM: ErrorCode = ErrorCode(0x7);
    pub const CANCEL: ErrorCode = ErrorCode(0x8);
    pub const COMPRESSION_ERROR: ErrorCode = ErrorCode(0x9);
    pub const CONNECT_ERROR: ErrorCode = ErrorCode(0xa);
    pub const ENHANCE_YOUR_CALM: ErrorCode = ErrorCode(0xb);
    pub const INADEQUATE_SECURITY: ErrorCode = ErrorCode(0xc);
    pub const HTTP_1_1_REQUIRED: ErrorCode = ErrorCode(0xd);

    /// The name §7 gives the code, if it is one of §7's.
    pub fn name(self) -> Option<&'static str> {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        NAMES.get(self.0 as usize).copied()
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "ErrorCode({:#x})", self.0),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Why a frame was refused, and what the refusal ends (RFC 9113 §5.4).
///
/// The kind is the RFC's for each rule, and tells the caller what to send: a connection
/// error is a GOAWAY with the code, after which the connection closes (§5.4.1); a stream
/// error is a RST_STREAM on that stream, after which the connection goes on with the next
/// frame (§5.4.2). The reason is for logs and GOAWAY's debug data, never for decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// End the connection: GOAWAY with `code`.
    Connection { code: ErrorCode, reason: &'static str },
    /// Reset `stream` with `code`; the refused frame took `frame_len` octets of the input
    /// (its header included), which the caller consumes before decoding the next frame.
    Stream { stream: u32, code: ErrorCode, frame_len: usize, reason: &'static str },
}

impl FrameError {
    pub(crate) fn connection(code: ErrorCode, reason: &'static str) -> FrameError {
        FrameError::Connection { code, reason }
    }

    /// The error code to send.
    pub fn code(&self) -> ErrorCode {
        match *self {
            FrameError::Connection { code, .. } | FrameError::Stream { code, .. } => code,
        }
    }

    /// The stream to reset, for a stream error; `None` for a connection error.
    pub fn stream(&self) -> Option<u32> {
        match *self {
            FrameError::Connection { .. } => None,
            FrameError::Stream { stream, .. } => Some(stream),
        }
    }

    /// What was wrong, in a few words.
    pub fn reason(&self) -> &'static str {
        match *self {
            FrameError::Connection { reason, .. } | FrameError::Stream { reason, .. } => reason,
        }
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Connection { code, reason } => write!(f, "connection error {code}: {reason}"),
            FrameError::Stream { stream, code, reason, .. } => write!(f, "stream {stream} error {code}: {reason}"),
        }
    }
}

impl std::error::Error for FrameError {}
