//! Which protocol a connection speaks, chosen once per connection: after the TLS
//! handshake from what ALPN agreed, and on any connection from its first bytes, as h2o's
//! `http1.c` looks for HTTP/2's connection preface before it parses a request.
//!
//! A server that serves HTTP/2 (`spidey serve --http2`) speaks it on a connection whose
//! handshake agreed on ALPN `h2`, and on one that opens with HTTP/2's preface (prior
//! knowledge, RFC 9113 §3.3); everything else is HTTP/1. A server that does not gives a
//! client opening with the preface HTTP/2's own refusal, which it can read: the server's
//! preface (an empty SETTINGS frame) and a GOAWAY with `HTTP_1_1_REQUIRED` (RFC 9113
//! §7), not an HTTP/1.1 status line it would take for a broken frame.

use crate::h2;
use std::sync::LazyLock;

/// The protocols a connection can speak here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Http1,
    Http2,
}

/// What [`choose`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The first bytes so far could still be HTTP/2's preface: wait for more.
    NeedMore,
    /// Speak this protocol for the rest of the connection.
    Speak(Protocol),
    /// The client speaks HTTP/2 and this server does not: send [`HTTP2_REFUSAL`] and close.
    RefuseHttp2,
}

/// HTTP/2's client connection preface (RFC 9113 §3.4).
pub const HTTP2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The GOAWAY frame's debug data (RFC 9113 §6.8): for whoever reads a packet capture.
const REFUSAL_REASON: &[u8] = b"HTTP/2 is not served here; use HTTP/1.1";

/// The bytes that refuse an HTTP/2 client: an empty SETTINGS frame (the server's
/// preface), then GOAWAY with last stream 0 and error `HTTP_1_1_REQUIRED` (0xd), written
/// once by the frame encoder.
pub static HTTP2_REFUSAL: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut out = Vec::new();
    h2::encode_settings(&mut out, &[]);
    h2::encode_goaway(&mut out, 0, h2::ErrorCode::HTTP_1_1_REQUIRED, REFUSAL_REASON);
    out
});

/// The protocol of a connection whose TLS handshake agreed on `alpn` (`None`: plaintext,
/// or no ALPN) and whose first bytes so far are `first`; `http2`: the server serves
/// HTTP/2.
///
/// ALPN `h2` is HTTP/2 before any byte (refused if the server does not serve it: only a
/// client that ignores what was agreed gets there); otherwise the bytes decide, byte by
/// byte: a prefix of the preface waits for more, the whole preface is HTTP/2, and
/// anything else is HTTP/1.
pub fn choose(alpn: Option<&[u8]>, first: &[u8], http2: bool) -> Choice {
    let h2 = if http2 { Choice::Speak(Protocol::Http2) } else { Choice::RefuseHttp2 };
    if alpn == Some(b"h2") {
        return h2;
    }
    let n = first.len().min(HTTP2_PREFACE.len());
    if first[..n] != HTTP2_PREFACE[..n] {
        Choice::Speak(Protocol::Http1)
    } else if n < HTTP2_PREFACE.len() {
        Choice::NeedMore
    } else {
        h2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bytes_choose_the_protocol() {
        use Choice::{NeedMore, RefuseHttp2, Speak};
        let (h1, h2) = (Speak(Protocol::Http1), Speak(Protocol::Http2));
        // (what the client did, ALPN agreed, the first bytes so far, the choice)
        type Case = (&'static str, Option<&'static [u8]>, &'static [u8], Choice);
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("nothing yet", None, b"", NeedMore),
            ("a GET", None, b"GET / HTTP/1.1\r\n", h1),
            ("POST shares the first byte", None, b"PO", h1),
            ("a prefix of the preface waits", None, b"PRI * HTTP/2", NeedMore),
            ("the preface", None, HTTP2_PREFACE, RefuseHttp2),
            ("the preface and a SETTINGS frame", None, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0", RefuseHttp2),
            ("HTTP/1's own PRI method", None, b"PRI * HTTP/1.1\r\n\r\n", h1),
            ("the preface's head without SM", None, b"PRI * HTTP/2.0\r\n\r\nGET", h1),
            ("a lowercase preface", None, b"pri * http/2.0\r\n\r\nSM\r\n\r\n", h1),
            ("ALPN http/1.1, a GET", Some(b"http/1.1"), b"GET /", h1),
            ("ALPN http/1.1, then the preface anyway", Some(b"http/1.1"), HTTP2_PREFACE, RefuseHttp2),
            ("ALPN h2: refused before any byte", Some(b"h2"), b"", RefuseHttp2),
            ("an unknown ALPN name", Some(b"\0\xff"), b"GET /", h1),
        ];
        for (name, alpn, first, want) in cases {
            assert_eq!(choose(*alpn, first, false), *want, "{name}, HTTP/1 only");
            // A server that serves HTTP/2 speaks it where the other refuses.
            let served = if *want == RefuseHttp2 { h2 } else { *want };
            assert_eq!(choose(*alpn, first, true), served, "{name}, with HTTP/2");
        }
    }

    /// The refusal as RFC 9113 §4.1 frames it, read back field by field.
    #[test]
    fn the_refusal_is_settings_then_goaway_http_1_1_required() {
        let r: &[u8] = &HTTP2_REFUSAL;
        let frame = |at: usize| {
            let len = u32::from_be_bytes([0, r[at], r[at + 1], r[at + 2]]) as usize;
            let stream = u32::from_be_bytes([r[at + 5], r[at + 6], r[at + 7], r[at + 8]]);
            (len, r[at + 3], r[at + 4], stream)
        };
        assert_eq!(frame(0), (0, 0x4, 0, 0), "an empty SETTINGS frame on stream 0");
        let (len, kind, flags, stream) = frame(9);
        assert_eq!((kind, flags, stream), (0x7, 0, 0), "GOAWAY on stream 0");
        assert_eq!(18 + len, r.len(), "the GOAWAY payload ends the bytes");
        assert_eq!(u32::from_be_bytes(r[18..22].try_into().unwrap()), 0, "last stream 0: nothing was processed");
        assert_eq!(u32::from_be_bytes(r[22..26].try_into().unwrap()), 0xd, "HTTP_1_1_REQUIRED");
        assert_eq!(&r[26..], REFUSAL_REASON);
        // And as HTTP/2's frame decoder reads it.
        let (settings, used) = h2::Frame::decode(r, h2::DEFAULT_MAX_FRAME_SIZE).unwrap().unwrap();
        assert_eq!(used, 9);
        assert!(matches!(settings, h2::Frame::Settings(s) if s.payload().is_empty()));
        let goaway = h2::Frame::decode(&r[9..], h2::DEFAULT_MAX_FRAME_SIZE).unwrap().unwrap();
        let want = h2::Frame::GoAway { last_stream: 0, code: h2::ErrorCode::HTTP_1_1_REQUIRED, debug: REFUSAL_REASON };
        assert_eq!(goaway, (want, r.len() - 9));
    }
}
