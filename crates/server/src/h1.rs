//! HTTP/1.1's encoding of a response: a [`Head`] value in HTTP/1.1 bytes
//! (`spidey_http::write_head`: the status line, `Server`, `Date`, the fields, the framing,
//! `Connection`), written when the session stages an answer, straight into the
//! connection's out bytes; and [`H1Parts`], the framing of a response written part by part
//! (a script's): chunked, or to an HTTP/1.0 client delimited by the connection's close.

use crate::exchange::PartWriter;
use crate::head::{Head, Length};
use crate::software::SOFTWARE;
use spidey_http::response::Framing;
use spidey_http::{Encoder, HeadOptions};

/// Appends `head` in HTTP/1.1 to `out`; `keep_alive`: the connection stays open after it
/// (unless the framing needs the close to end the body). Returns whether it stays open.
pub(crate) fn write_head(out: &mut Vec<u8>, head: &Head<'_>, keep_alive: bool) -> bool {
    let framing = framing(head);
    let keep_alive = keep_alive && framing != Framing::Close;
    let opts = HeadOptions { date: &head.date, server: SOFTWARE, framing, keep_alive, http10: head.http10 };
    spidey_http::write_head(out, head.status, head.fields(), &opts);
    keep_alive
}

/// How HTTP/1.1 delimits the body `head` announces.
fn framing(head: &Head<'_>) -> Framing {
    match head.length {
        Length::Known(n) => Framing::Length(n),
        Length::Unstated => Framing::None,
        Length::Streamed if head.http10 => Framing::Close,
        Length::Streamed => Framing::Chunked,
    }
}

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The HTTP/1.1 framing state of a response written part by part, kept by the connection
/// between pumps: the body's encoder once the head is out (`None`: no body follows).
#[derive(Debug, Default)]
pub(crate) struct H1Parts {
    encoder: Option<Encoder>,
}

impl H1Parts {
    /// A [`PartWriter`] appending to `out`, framing with this state.
    pub(crate) fn writer<'a>(&'a mut self, out: &'a mut Vec<u8>) -> H1PartWriter<'a> {
        H1PartWriter { out, parts: self }
    }
}

/// [`H1Parts`] with the out bytes it appends to, for one pump.
pub(crate) struct H1PartWriter<'a> {
    out: &'a mut Vec<u8>,
    parts: &'a mut H1Parts,
}

impl PartWriter for H1PartWriter<'_> {
    fn interim_continue(&mut self) {
        self.out.extend_from_slice(CONTINUE);
    }

    fn head(&mut self, head: &Head<'_>, keep_alive: bool, body: bool) -> bool {
        let keep_alive = write_head(self.out, head, keep_alive);
        self.parts.encoder = if body { Encoder::new(framing(head)) } else { None };
        keep_alive
    }

    fn data(&mut self, bytes: &[u8]) {
        if let Some(encoder) = &mut self.parts.encoder {
            // The exchange writes a known length's bytes exactly; chunks and a
            // close-delimited body take any length.
            let _ = encoder.encode(bytes, self.out);
        }
    }

    fn end(&mut self) {
        if let Some(mut encoder) = self.parts.encoder.take() {
            let _ = encoder.finish(self.out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spidey_http::StatusCode;
    use std::borrow::Cow;

    fn head(length: Length, http10: bool) -> Head<'static> {
        let (fields, extra, headers) = (Vec::new(), Vec::new(), Cow::Borrowed(&[][..]));
        Head { status: StatusCode(200), fields, extra, headers, date: "D".into(), length, http10 }
    }

    /// What follows the head, part by part, for each framing HTTP/1.1 chooses.
    #[test]
    fn parts_are_framed_as_the_head_said() {
        #[rustfmt::skip]
        let cases = [
            // (length, http10, body follows) → (framing line, bytes after the head, keep-alive)
            ((Length::Streamed, false, true), ("Transfer-Encoding: chunked", "5\r\nhello\r\n0\r\n\r\n", true)),
            ((Length::Streamed, true, true), ("Connection: close", "hello", false)),
            ((Length::Streamed, false, false), ("Transfer-Encoding: chunked", "", true)),
            ((Length::Known(5), false, true), ("Content-Length: 5", "hello", true)),
            ((Length::Known(5), true, false), ("Connection: keep-alive", "", true)),
        ];
        for ((length, http10, body), (framing, after, want_keep)) in cases {
            let (mut out, mut parts) = (Vec::new(), H1Parts::default());
            let mut writer = parts.writer(&mut out);
            let keep_alive = writer.head(&head(length, http10), true, body);
            if body {
                writer.data(b"hello");
                writer.data(b"");
                writer.end();
            }
            let text = String::from_utf8(out).unwrap();
            let (head_text, rest) = text.split_once("\r\n\r\n").unwrap();
            assert!(head_text.contains(framing), "{length:?} {http10}: {head_text}");
            assert_eq!((rest, keep_alive), (after, want_keep), "{length:?} {http10} {body}");
        }
        let mut out = Vec::new();
        H1Parts::default().writer(&mut out).interim_continue();
        assert_eq!(out, b"HTTP/1.1 100 Continue\r\n\r\n");
    }
}
