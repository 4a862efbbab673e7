//! An incremental decoder for the chunked transfer coding (RFC 9112 §7.1).
//!
//! ```text
//! chunked-body = *chunk last-chunk trailer-section CRLF
//! chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! chunk-size   = 1*HEXDIG
//! last-chunk   = 1*("0") [ chunk-ext ] CRLF
//! chunk-ext    = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
//! chunk-ext-name = token
//! chunk-ext-val  = token / quoted-string
//! ```
//!
//! Strict where leniency has been exploited: every line must end in CRLF (a bare LF in a
//! chunk line is how Go CVE-2025-22871 smuggled requests); a size line, extensions
//! included, is at most [`MAX_LINE`] bytes (chunk-extension amplification, Go
//! CVE-2023-39326); sizes never overflow; after the size only whitespace may come before
//! `;` (so `1 2` is not size 1 with an extension ` 2`, which a front end may read as 0x12),
//! extensions must follow the grammar above; trailer lines carry no control bytes but
//! HTAB. The trailer section is bounded and discarded.

use crate::field::{is_field_byte, is_tchar};

/// The longest chunk-size line or trailer line, CRLF included.
pub const MAX_LINE: usize = 4096;
/// The most bytes of trailer fields accepted.
pub const MAX_TRAILERS: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkError {
    /// The chunk-size is not hex, is empty, or does not fit 64 bits.
    Size,
    /// A size line or trailer line is longer than [`MAX_LINE`], or trailers exceed [`MAX_TRAILERS`].
    LineTooLong,
    /// A line does not end in CRLF, or chunk data is not followed by CRLF.
    LineEnding,
    /// Something other than whitespace and `;` after the size, or a chunk extension that
    /// is not `name[=value]` with token name and token or quoted-string value.
    Extension,
    /// A trailer line holds a control byte other than HTAB.
    Trailer,
}

/// Where in a chunk-size line's extensions the decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ext {
    /// Still in the size digits.
    Size,
    /// After the size or a complete extension: BWS, then `;` or the line end.
    AfterItem,
    /// After `;`: BWS, then a name.
    NameStart,
    Name,
    /// After a name and whitespace: `=`, `;` or the line end.
    AfterName,
    /// After `=`: BWS, then a token or a quoted string.
    ValueStart,
    Token,
    Quoted,
    /// After a backslash inside a quoted string.
    QuotedPair,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a size line; `len` bytes of it seen so far, `cr` if the last was CR.
    SizeLine {
        size: u64,
        digits: u8,
        ext: Ext,
        len: usize,
        cr: bool,
    },
    Data {
        left: u64,
    },
    DataCr,
    DataLf,
    /// Reading the trailer section; `line` bytes into the current line.
    Trailer {
        line: usize,
        total: usize,
        cr: bool,
    },
    Done,
}

/// Decodes a chunked body fed in pieces of any size.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        ChunkedDecoder { state: State::SizeLine { size: 0, digits: 0, ext: Ext::Size, len: 0, cr: false } }
    }
}

/// The result of one [`ChunkedDecoder::decode`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Input bytes consumed.
    pub consumed: usize,
    /// Whether the whole body, trailers included, has been read.
    pub done: bool,
}

impl ChunkedDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Consumes as much of `input` as belongs to the body, appending decoded data to `out`.
    /// Bytes after the end of the body are left unconsumed (they are the next request).
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Progress, ChunkError> {
        self.feed(input, |data| out.extend_from_slice(data))
    }

    /// Like [`decode`](Self::decode), but discards the data instead of copying it: for
    /// clients that only need to find where a chunked body ends.
    pub fn skip(&mut self, input: &[u8]) -> Result<Progress, ChunkError> {
        self.feed(input, |_| {})
    }

    fn feed(&mut self, input: &[u8], mut data: impl FnMut(&[u8])) -> Result<Progress, ChunkError> {
        let mut i = 0;
        while i < input.len() && self.state != State::Done {
            if let State::Data { left } = self.state {
                let take = usize::try_from(left).unwrap_or(usize::MAX).min(input.len() - i);
                data(&input[i..i + take]);
                i += take;
                let left = left - take as u64;
                self.state = if left == 0 { State::DataCr } else { State::Data { left } };
                continue;
            }
            self.state = step(self.state, input[i])?;
            i += 1;
        }
        Ok(Progress { consumed: i, done: self.state == State::Done })
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }
}

fn step(state: State, b: u8) -> Result<State, ChunkError> {
    Ok(match state {
        State::SizeLine { size, digits, ext, len, cr } => size_line(size, digits, ext, len, cr, b)?,
        State::DataCr if b == b'\r' => State::DataLf,
        State::DataLf if b == b'\n' => State::SizeLine { size: 0, digits: 0, ext: Ext::Size, len: 0, cr: false },
        State::DataCr | State::DataLf => return Err(ChunkError::LineEnding),
        State::Trailer { line, total, cr } => trailer(line, total, cr, b)?,
        State::Data { .. } | State::Done => unreachable!("handled by decode"),
    })
}

fn size_line(size: u64, digits: u8, ext: Ext, len: usize, cr: bool, b: u8) -> Result<State, ChunkError> {
    if len + 1 > MAX_LINE {
        return Err(ChunkError::LineTooLong);
    }
    let len = len + 1;
    match b {
        b'\n' if cr && digits == 0 => Err(ChunkError::Size),
        b'\n' if cr && size == 0 => Ok(State::Trailer { line: 0, total: 0, cr: false }),
        b'\n' if cr => Ok(State::Data { left: size }),
        b'\n' => Err(ChunkError::LineEnding),
        _ if cr => Err(ChunkError::LineEnding),
        b'\r' if ext == Ext::Size && digits == 0 => Err(ChunkError::Size),
        b'\r' if matches!(ext, Ext::Size | Ext::AfterItem | Ext::Name | Ext::AfterName | Ext::Token) => {
            Ok(State::SizeLine { size, digits, ext, len, cr: true })
        }
        b'\r' => Err(ChunkError::Extension),
        _ if ext == Ext::Size && b.is_ascii_hexdigit() => {
            if size >> 60 != 0 {
                return Err(ChunkError::Size);
            }
            let d = (b as char).to_digit(16).unwrap_or(0);
            let digits = digits.saturating_add(1);
            Ok(State::SizeLine { size: size << 4 | u64::from(d), digits, ext, len, cr: false })
        }
        _ if ext == Ext::Size && digits == 0 => Err(ChunkError::Size),
        _ => {
            let ext = extension(ext, b)?;
            Ok(State::SizeLine { size, digits, ext, len, cr: false })
        }
    }
}

/// One byte of `chunk-ext` (RFC 9112 §7.1.1), after the size digits and before CR.
fn extension(ext: Ext, b: u8) -> Result<Ext, ChunkError> {
    let ws = b == b' ' || b == b'\t';
    Ok(match ext {
        Ext::Size | Ext::AfterItem if ws => Ext::AfterItem,
        Ext::Size | Ext::AfterItem | Ext::Name | Ext::AfterName | Ext::Token if b == b';' => Ext::NameStart,
        Ext::NameStart if ws => Ext::NameStart,
        Ext::NameStart | Ext::Name if is_tchar(b) => Ext::Name,
        Ext::Name | Ext::AfterName if ws => Ext::AfterName,
        Ext::Name | Ext::AfterName if b == b'=' => Ext::ValueStart,
        Ext::ValueStart if ws => Ext::ValueStart,
        Ext::ValueStart if b == b'"' => Ext::Quoted,
        Ext::ValueStart | Ext::Token if is_tchar(b) => Ext::Token,
        Ext::Token if ws => Ext::AfterItem,
        Ext::Quoted if b == b'"' => Ext::AfterItem,
        Ext::Quoted if b == b'\\' => Ext::QuotedPair,
        // qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text; quoted-pair takes the same
        // bytes plus `"` and `\`: together, a field value's bytes.
        Ext::Quoted | Ext::QuotedPair if is_field_byte(b) => Ext::Quoted,
        _ => return Err(ChunkError::Extension),
    })
}

fn trailer(line: usize, total: usize, cr: bool, b: u8) -> Result<State, ChunkError> {
    if line + 1 > MAX_LINE || total + 1 > MAX_TRAILERS {
        return Err(ChunkError::LineTooLong);
    }
    match b {
        b'\n' if cr && line == 1 => Ok(State::Done),
        b'\n' if cr => Ok(State::Trailer { line: 0, total: total + 1, cr: false }),
        b'\n' => Err(ChunkError::LineEnding),
        _ if cr => Err(ChunkError::LineEnding),
        b'\r' => Ok(State::Trailer { line: line + 1, total: total + 1, cr: true }),
        _ if !is_field_byte(b) => Err(ChunkError::Trailer),
        _ => Ok(State::Trailer { line: line + 1, total: total + 1, cr: false }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decoded bytes and input consumed, or the error.
    type Outcome<'a> = Result<(&'a [u8], usize), ChunkError>;

    fn decode_all(input: &[u8]) -> Result<(Vec<u8>, usize), ChunkError> {
        let mut d = ChunkedDecoder::new();
        let mut out = Vec::new();
        let p = d.decode(input, &mut out)?;
        assert!(p.done, "not done: {input:?}");
        // skip() must find the same end, byte by byte too.
        let mut s = ChunkedDecoder::new();
        let mut consumed = 0;
        for b in input.chunks(1) {
            consumed += s.skip(b)?.consumed;
            if s.is_done() {
                break;
            }
        }
        assert_eq!(consumed, p.consumed, "skip() disagrees with decode() on {input:?}");
        Ok((out, p.consumed))
    }

    #[test]
    fn bodies_table() {
        let cases: &[(&[u8], Outcome)] = &[
            (b"5\r\nhello\r\n0\r\n\r\n", Ok((b"hello", 15))),
            (b"5\r\nhello\r\n0\r\n\r\nGET", Ok((b"hello", 15))),
            (b"3;a=b\r\nabc\r\n0\r\n\r\n", Ok((b"abc", 17))),
            (b"A\r\n0123456789\r\n00\r\n\r\n", Ok((b"0123456789", 21))),
            (b"1\r\nx\r\n0\r\nX-T: v\r\n\r\n", Ok((b"x", 19))),
            (b"0\r\n\r\n", Ok((b"", 5))),
            (b"5\nhello\r\n0\r\n\r\n", Err(ChunkError::LineEnding)),
            (b"5\r\nhello\n0\r\n\r\n", Err(ChunkError::LineEnding)),
            (b"5\r\nhelloXX0\r\n\r\n", Err(ChunkError::LineEnding)),
            (b"0\r\n\n", Err(ChunkError::LineEnding)),
            (b"\r\n", Err(ChunkError::Size)),
            (b"g\r\n", Err(ChunkError::Size)),
            (b"-1\r\n", Err(ChunkError::Size)),
            (b"+1\r\n", Err(ChunkError::Size)),
            (b";x\r\n", Err(ChunkError::Size)),
            (b"10000000000000000\r\n", Err(ChunkError::Size)),
            (b"1;a\x00\r\n", Err(ChunkError::Extension)),
            // Extensions (RFC 9112 §7.1.1): BWS around `;` and `=`, token names, token or
            // quoted-string values.
            (b"1 ;a\r\nx\r\n0\r\n\r\n", Ok((b"x", 14))),
            (b"1\t; a = b ; c\r\nx\r\n0\r\n\r\n", Ok((b"x", 23))),
            (b"1;a=\"b \\\" c\"\r\nx\r\n0\r\n\r\n", Ok((b"x", 22))),
            (b"1;a=\"\xc3\xa9\"\r\nx\r\n0\r\n\r\n", Ok((b"x", 18))),
            (b"1;a;b=c\r\nx\r\n0;z=\"\"\r\n\r\n", Ok((b"x", 22))),
            (b"1 \r\nx\r\n0\r\n\r\n", Ok((b"x", 12))),
            (b"1 2\r\nx\r\n0\r\n\r\n", Err(ChunkError::Extension)),
            (b"1 x\r\n", Err(ChunkError::Extension)),
            (b"1x\r\n", Err(ChunkError::Extension)),
            (b"1;\r\n", Err(ChunkError::Extension)),
            (b"1; \r\n", Err(ChunkError::Extension)),
            (b"1;=b\r\n", Err(ChunkError::Extension)),
            (b"1;a@b\r\n", Err(ChunkError::Extension)),
            (b"1;a b\r\n", Err(ChunkError::Extension)),
            (b"1;a=\r\n", Err(ChunkError::Extension)),
            (b"1;a= \r\n", Err(ChunkError::Extension)),
            (b"1;a=b c\r\n", Err(ChunkError::Extension)),
            (b"1;a=b\"c\"\r\n", Err(ChunkError::Extension)),
            (b"1;a=\"b\r\n", Err(ChunkError::Extension)),
            (b"1;a=\"b\"c\r\n", Err(ChunkError::Extension)),
            (b"1;a=\"\x7f\"\r\n", Err(ChunkError::Extension)),
            (b"1;a=\"\x01\"\r\n", Err(ChunkError::Extension)),
            (b"1;a\x7f\r\n", Err(ChunkError::Extension)),
            (b"1;\xc3\xa9\r\n", Err(ChunkError::Extension)),
            (b" 1\r\n", Err(ChunkError::Size)),
            // Trailers: no control bytes but HTAB.
            (b"0\r\nX-T: a\tb\r\n\r\n", Ok((b"", 15))),
            (b"0\r\nX-T: caf\xc3\xa9\r\n\r\n", Ok((b"", 17))),
            (b"0\r\nX-T: a\x01b\r\n\r\n", Err(ChunkError::Trailer)),
            (b"0\r\nX-T: \x1b[31m\r\n\r\n", Err(ChunkError::Trailer)),
            (b"0\r\nX-T: a\x7f\r\n\r\n", Err(ChunkError::Trailer)),
            (b"0\r\nX-T: a\x00\r\n\r\n", Err(ChunkError::Trailer)),
        ];
        for (input, want) in cases {
            let got = decode_all(input);
            let got = got.as_ref().map(|(o, n)| (o.as_slice(), *n)).map_err(|e| *e);
            assert_eq!(got, *want, "{:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn oversized_extension_is_refused() {
        let mut input = b"1;".to_vec();
        input.extend(std::iter::repeat_n(b'a', MAX_LINE));
        assert_eq!(ChunkedDecoder::new().decode(&input, &mut Vec::new()), Err(ChunkError::LineTooLong));
    }

    #[test]
    fn byte_at_a_time_equals_all_at_once() {
        let input = b"4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\nT: 1\r\n\r\nNEXT";
        let mut d = ChunkedDecoder::new();
        let mut out = Vec::new();
        let mut consumed = 0;
        for b in input.iter() {
            consumed += d.decode(std::slice::from_ref(b), &mut out).unwrap().consumed;
        }
        assert!(d.is_done());
        assert_eq!(out, b"Wikipedia");
        assert_eq!(consumed, input.len() - 4);
    }
}
