//! Response body framing (RFC 9112 §6): the encoder beside [`crate::chunked::ChunkedDecoder`].
//!
//! An [`Encoder`] is chosen with the head's [`Framing`] and then turns body bytes, as they
//! are produced, into the bytes the client gets: as they are for a `Content-Length` body
//! (counting down what is left, so an overrun is caught instead of sent) and for a body that
//! ends with the connection, as `size CRLF data CRLF` chunks for a chunked one. [`Encoder::finish`]
//! writes the end of the body (`0 CRLF CRLF` when chunked) and says whether a length-framed
//! body was cut short. As hyper's `proto::h1::Encoder`, with the bytes appended to a `Vec`.
//!
//! ```text
//! chunk      = chunk-size CRLF chunk-data CRLF      (never a zero size: that is last-chunk)
//! last-chunk = "0" CRLF CRLF                         (no extensions, no trailers)
//! ```

use crate::response::Framing;
use std::io::Write;

/// How the body being written is framed, and how much of it a length still allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoder {
    /// `Content-Length`: this many bytes are still to come.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    ///
    /// INVARIANT: a zero-size chunk is written only by [`Encoder::finish`], as the last
    /// chunk; [`Encoder::encode`] of no bytes writes nothing.
    Chunked,
    /// Neither: the body ends when the connection closes (HTTP/1.0, or a 1.1 response
    /// whose length is not known to a client that cannot take chunks).
    CloseDelimited,
}

/// A body that did not match its framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// More bytes than `Content-Length` allows: this many were dropped.
    Overrun(u64),
    /// The body ended with this many bytes of its `Content-Length` never written.
    Unfinished(u64),
}

impl Encoder {
    /// The encoder for a head framed with `framing`; `None` for a head without a body
    /// ([`Framing::None`]: 1xx, 204, 304).
    pub fn new(framing: Framing) -> Option<Encoder> {
        match framing {
            Framing::Length(n) => Some(Encoder::Length(n)),
            Framing::Chunked => Some(Encoder::Chunked),
            Framing::Close => Some(Encoder::CloseDelimited),
            Framing::None => None,
        }
    }

    /// Appends `data` to `out`, framed. A length-framed body takes what it still allows and
    /// reports the rest as [`EncodeError::Overrun`] (nothing past the length is written).
    pub fn encode(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            Encoder::Length(left) => {
                let take = usize::try_from(*left).unwrap_or(usize::MAX).min(data.len());
                out.extend_from_slice(&data[..take]);
                *left -= take as u64;
                match (data.len() - take) as u64 {
                    0 => Ok(()),
                    extra => Err(EncodeError::Overrun(extra)),
                }
            }
            Encoder::Chunked if data.is_empty() => Ok(()),
            Encoder::Chunked => {
                // Writing into a Vec cannot fail.
                let _ = write!(out, "{:x}\r\n", data.len());
                out.extend_from_slice(data);
                out.extend_from_slice(b"\r\n");
                Ok(())
            }
            Encoder::CloseDelimited => {
                out.extend_from_slice(data);
                Ok(())
            }
        }
    }

    /// Appends the end of the body to `out`: the last chunk of a chunked body, nothing
    /// otherwise (a close-delimited body ends with the close). Fails if a length-framed
    /// body is short, which only closing the connection can tell the client.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match *self {
            Encoder::Length(0) | Encoder::CloseDelimited => Ok(()),
            Encoder::Length(left) => Err(EncodeError::Unfinished(left)),
            Encoder::Chunked => {
                out.extend_from_slice(b"0\r\n\r\n");
                Ok(())
            }
        }
    }

    /// Whether the body is known to be whole: a length-framed one with nothing left.
    /// (A chunked or close-delimited body is whole only when its writer says so.)
    pub fn is_complete(&self) -> bool {
        *self == Encoder::Length(0)
    }

    /// Whether the client can tell where this body ends without the connection closing.
    pub fn keeps_connection(&self) -> bool {
        !matches!(self, Encoder::CloseDelimited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunked::ChunkedDecoder;

    /// Encodes `pieces` one after the other, then finishes.
    fn run(framing: Framing, pieces: &[&str]) -> (String, Vec<Outcome>, Outcome) {
        let mut encoder = Encoder::new(framing).expect("a framing with a body");
        let mut out = Vec::new();
        let results = pieces.iter().map(|p| encoder.encode(p.as_bytes(), &mut out)).collect();
        let end = encoder.finish(&mut out);
        (String::from_utf8(out).unwrap(), results, end)
    }

    type Outcome = Result<(), EncodeError>;
    /// Framing, pieces encoded in turn, the bytes written, each piece's outcome, `finish`'s.
    type Case = (Framing, &'static [&'static str], &'static str, &'static [Outcome], Outcome);

    #[test]
    fn encodes_each_framing() {
        use EncodeError::*;
        const OK: Outcome = Ok(());
        #[rustfmt::skip]
        let cases: [Case; 10] = [
            (Framing::Chunked, &["hello"], "5\r\nhello\r\n0\r\n\r\n", &[OK], OK),
            (Framing::Chunked, &["hello", "", "world!"], "5\r\nhello\r\n6\r\nworld!\r\n0\r\n\r\n", &[OK, OK, OK], OK),
            (Framing::Chunked, &[], "0\r\n\r\n", &[], OK),
            (Framing::Chunked, &["0123456789abcdef"], "10\r\n0123456789abcdef\r\n0\r\n\r\n", &[OK], OK),
            (Framing::Length(5), &["hel", "lo"], "hello", &[OK, OK], OK),
            (Framing::Length(5), &["hello world"], "hello", &[Err(Overrun(6))], OK),
            (Framing::Length(5), &["hello", "!"], "hello", &[OK, Err(Overrun(1))], OK),
            (Framing::Length(5), &["he"], "he", &[OK], Err(Unfinished(3))),
            (Framing::Length(0), &[], "", &[], OK),
            (Framing::Close, &["a", "", "b"], "ab", &[OK, OK, OK], OK),
        ];
        for (framing, pieces, want, want_results, want_end) in cases {
            let (out, results, end) = run(framing, pieces);
            assert_eq!(
                (out.as_str(), results.as_slice(), end),
                (want, want_results, want_end),
                "{framing:?} {pieces:?}"
            );
        }
    }

    #[test]
    fn framing_none_has_no_encoder() {
        assert_eq!(Encoder::new(Framing::None), None);
    }

    #[test]
    fn completeness_and_connection() {
        let cases = [
            (Encoder::Length(0), true, true),
            (Encoder::Length(3), false, true),
            (Encoder::Chunked, false, true),
            (Encoder::CloseDelimited, false, false),
        ];
        for (encoder, complete, keeps) in cases {
            assert_eq!((encoder.is_complete(), encoder.keeps_connection()), (complete, keeps), "{encoder:?}");
        }
    }

    #[test]
    fn chunked_output_decodes_to_the_input() {
        let pieces: [&[u8]; 4] = [b"a", &[0u8; 300], b"", b"\r\n0\r\n\r\n"];
        let mut encoder = Encoder::Chunked;
        let mut wire = Vec::new();
        for p in pieces {
            encoder.encode(p, &mut wire).unwrap();
        }
        encoder.finish(&mut wire).unwrap();
        let mut decoded = Vec::new();
        let progress = ChunkedDecoder::new().decode(&wire, &mut decoded).unwrap();
        assert_eq!((progress.consumed, progress.done), (wire.len(), true));
        assert_eq!(decoded, pieces.concat());
    }
}
