//! Finding where a response ends: parse the status line and the framing headers of the
//! head (httparse), then count the body off by Content-Length, by chunked framing, or up
//! to the close. Body bytes are never copied or kept.

use spidey_http::chunked::ChunkedDecoder;

/// How the end of the body is found.
#[derive(Debug, Clone)]
enum Framing {
    /// No head yet.
    Head,
    /// This many body bytes are still to come.
    Length(u64),
    Chunked(ChunkedDecoder),
    /// The body runs until the server closes the connection.
    UntilClose,
}

/// What the bytes fed so far amount to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Feed {
    NeedMore,
    Done,
    Malformed,
}

/// The framing state of the response being read on one connection.
#[derive(Debug, Clone)]
pub(crate) struct ResponseReader {
    framing: Framing,
    pub status: u16,
    /// Whether the connection may carry another request after this response.
    pub keep_alive: bool,
    /// Bytes after the head (chunk framing included).
    pub body_bytes: u64,
    /// The request was HEAD: the response has no body whatever its headers say.
    head_request: bool,
}

/// The most header fields a response head may have.
const MAX_HEADERS: usize = 64;

impl ResponseReader {
    pub fn new(head_request: bool) -> Self {
        ResponseReader { framing: Framing::Head, status: 0, keep_alive: false, body_bytes: 0, head_request }
    }

    /// Starts over for the next response.
    pub fn reset(&mut self) {
        *self = ResponseReader::new(self.head_request);
    }

    /// Takes in `buf[..*len]`, the bytes received and not yet consumed. Bytes of a head not
    /// yet complete stay in the buffer (`*len` unchanged); everything else is consumed
    /// (`*len` becomes 0). A head that fills the whole buffer is malformed.
    pub fn feed(&mut self, buf: &mut [u8], len: &mut usize) -> Feed {
        let mut start = 0;
        while let Framing::Head = self.framing {
            match self.parse_head(&buf[start..*len]) {
                Ok(Some(n)) => start += n,
                Ok(None) if start == 0 && *len == buf.len() => return Feed::Malformed,
                Ok(None) => {
                    // Keep the partial head (after any 1xx heads) at the front of the buffer.
                    buf.copy_within(start..*len, 0);
                    *len -= start;
                    return Feed::NeedMore;
                }
                Err(()) => return Feed::Malformed,
            }
        }
        let body = &buf[start..*len];
        *len = 0;
        self.body(body)
    }

    /// Whether the head is complete: what follows is body, for [`Self::feed_body`].
    pub fn in_body(&self) -> bool {
        !matches!(self.framing, Framing::Head)
    }

    /// Takes in body bytes where they lie (after a complete head): counted, never copied.
    pub fn feed_body(&mut self, bytes: &[u8]) -> Feed {
        debug_assert!(self.in_body(), "feed_body before the head is complete");
        self.body(bytes)
    }

    /// The connection reached EOF: whether that completes the response.
    pub fn complete_at_eof(&self) -> bool {
        matches!(self.framing, Framing::UntilClose)
    }

    /// Parses one head from `bytes`: Some(length) when complete (an interim 1xx head leaves
    /// the framing at `Head`), None when more bytes are needed.
    fn parse_head(&mut self, bytes: &[u8]) -> Result<Option<usize>, ()> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let n = match resp.parse(bytes) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(()),
        };
        let status = resp.code.ok_or(())?;
        if (100..200).contains(&status) && status != 101 {
            return Ok(Some(n));
        }
        let (mut length, mut chunked, mut close, mut keep_alive) = (None, false, false, false);
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value).map_err(|_| ())?.trim().parse::<u64>().map_err(|_| ())?;
                if length.is_some_and(|l| l != v) {
                    return Err(());
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
            } else if h.name.eq_ignore_ascii_case("connection") {
                close |= has_token(h.value, b"close");
                keep_alive |= has_token(h.value, b"keep-alive");
            }
        }
        let http11 = resp.version == Some(1);
        self.status = status;
        self.keep_alive = !close && (http11 || keep_alive);
        self.framing = if self.head_request || status == 204 || status == 304 {
            Framing::Length(0)
        } else if chunked {
            Framing::Chunked(ChunkedDecoder::new())
        } else if let Some(l) = length {
            Framing::Length(l)
        } else {
            self.keep_alive = false;
            Framing::UntilClose
        };
        Ok(Some(n))
    }

    fn body(&mut self, bytes: &[u8]) -> Feed {
        self.body_bytes += bytes.len() as u64;
        match &mut self.framing {
            Framing::Head => unreachable!("body() after a complete head"),
            Framing::Length(left) => {
                let n = bytes.len() as u64;
                if n > *left {
                    return Feed::Malformed;
                }
                *left -= n;
                if *left == 0 {
                    Feed::Done
                } else {
                    Feed::NeedMore
                }
            }
            Framing::Chunked(d) => match d.skip(bytes) {
                Ok(p) if p.done && p.consumed < bytes.len() => Feed::Malformed,
                Ok(p) if p.done => Feed::Done,
                Ok(_) => Feed::NeedMore,
                Err(_) => Feed::Malformed,
            },
            Framing::UntilClose => Feed::NeedMore,
        }
    }
}

fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(|t| t.trim_ascii())
}

fn has_token(value: &[u8], token: &[u8]) -> bool {
    tokens(value).any(|t| t.eq_ignore_ascii_case(token))
}

fn last_token(value: &[u8]) -> &[u8] {
    tokens(value).last().unwrap_or(b"")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes through a 256-byte buffer.
    fn run(input: &[u8], step: usize, head_request: bool) -> (Feed, u16, bool, u64) {
        let mut buf = [0u8; 256];
        let mut len = 0;
        let mut r = ResponseReader::new(head_request);
        let mut result = Feed::NeedMore;
        let mut at = 0;
        while at < input.len() {
            // Like a read(2) into the free part of the buffer.
            let n = step.min(buf.len() - len).min(input.len() - at);
            buf[len..len + n].copy_from_slice(&input[at..at + n]);
            (len, at) = (len + n, at + n);
            result = r.feed(&mut buf, &mut len);
            if result != Feed::NeedMore {
                break;
            }
        }
        if result == Feed::NeedMore && r.complete_at_eof() {
            result = Feed::Done;
        }
        // Body bytes only count for complete responses (a malformed one stops anywhere).
        (result, r.status, r.keep_alive, if result == Feed::Done { r.body_bytes } else { 0 })
    }

    #[test]
    fn responses_table() {
        use Feed::*;
        let big_head = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(300));
        type Case<'a> = (&'a [u8], bool, (Feed, u16, bool, u64));
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, (Done, 200, true, 5)),
            (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", false, (Done, 404, true, 0)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", false, (Done, 200, false, 5)),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", false, (Done, 200, false, 2)),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nhi", false, (Done, 200, true, 2)),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                false,
                (Done, 200, true, 15),
            ),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true, (Done, 200, true, 0)),
            (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", false, (Done, 304, true, 0)),
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx",
                false,
                (Done, 201, true, 1),
            ),
            (b"HTTP/1.1 200 OK\r\n\r\nuntil close", false, (Done, 200, false, 11)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false, (Malformed, 0, false, 0)),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", false, (Malformed, 0, false, 0)),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, (Malformed, 200, true, 0)),
            (b"garbage\r\n\r\n", false, (Malformed, 0, false, 0)),
            (big_head.as_bytes(), false, (Malformed, 0, false, 0)),
        ];
        for (input, head, want) in cases {
            for step in [1, 7, input.len()] {
                let got = run(input, step, *head);
                assert_eq!(got, *want, "{:?} in steps of {step}", String::from_utf8_lossy(input));
            }
        }
    }

    #[test]
    fn bytes_beyond_the_body_in_the_same_read_are_malformed() {
        let input = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhello";
        assert_eq!(run(input, input.len(), false), (Feed::Malformed, 200, true, 0));
    }

    #[test]
    fn reset_reads_the_next_response() {
        let mut r = ResponseReader::new(false);
        let mut buf = *b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
        for status in [200, 200] {
            let mut len = buf.len();
            assert_eq!(r.feed(&mut buf, &mut len), Feed::Done);
            assert_eq!((r.status, len), (status, 0));
            r.reset();
        }
    }
}
