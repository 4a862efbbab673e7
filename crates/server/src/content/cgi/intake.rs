//! The request body a CGI script is given, taken in whole before the script starts.
//!
//! ```text
//! Length(n) | Chunked ──feed (last byte)──▶ Whole
//!        │ too large, malformed, too slow
//!        └──────────────────────────────▶ Failed(413 | 400 | 408)
//! ```
//! A `Content-Length` body is counted off, a chunked one decoded with the protocol crate's
//! strict [`ChunkedDecoder`]; either is bounded by `--max-body` (413), and the whole body by a
//! deadline that grows with the bytes received (`--body-timeout`, `--body-min-rate`: 408). A
//! HTTP/1.1 client that sent `Expect: 100-continue` is owed a `100 Continue` before it sends the body;
//! [`Intake::poll`] says when (the exchanger writes it). A failed intake leaves the rest of
//! the body unread, so the connection must close after the error response.

use super::options::CgiOptions;
use spidey_http::chunked::ChunkedDecoder;
use spidey_http::{BodyFraming, Request, StatusCode, Version};
use std::time::{Duration, Instant};

/// Where taking in the body is.
#[derive(Debug)]
enum State {
    /// `Content-Length`: this many bytes still to come.
    ///
    /// INVARIANT: more than zero (the last byte taken moves to `Whole`), so a waiting
    /// intake always has a body deadline.
    Length(u64),
    Chunked(ChunkedDecoder),
    /// The body is whole (or there was none).
    Whole,
    /// The body will not be taken: answer this status with this sentence, then close.
    Failed(StatusCode, &'static str),
}

/// Whether the client waits for `100 Continue` before sending the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Continue {
    Owed,
    /// Sent, or never asked for (or the body is already whole).
    Settled,
}

/// What the body intake needs next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Write `100 Continue` to the client; then the body may come.
    Continue,
    /// More body bytes: give them to [`Intake::feed`].
    NeedBody,
    /// The body is whole: [`Intake::body`].
    Whole,
    /// Answer this status with this sentence and close (the body was not read whole).
    Failed(StatusCode, &'static str),
}

/// One request's body on its way in.
#[derive(Debug)]
pub(crate) struct Intake {
    state: State,
    continue_: Continue,
    /// The body so far; whole once the state is [`State::Whole`].
    body: Vec<u8>,
    /// Whether the request has a body at all (then `CONTENT_LENGTH` is set, even to 0).
    declared: bool,
    max_body: u64,
    /// When the request head was answered: the body's deadline counts from here.
    started: Instant,
    timeout: Duration,
    min_rate: u64,
}

impl Intake {
    pub(crate) fn new(req: &Request<'_, '_>, opts: &CgiOptions) -> Intake {
        let state = match req.body {
            BodyFraming::None | BodyFraming::Length(0) => State::Whole,
            BodyFraming::Length(n) if n > opts.max_body => State::Failed(StatusCode::PAYLOAD_TOO_LARGE, TOO_LARGE),
            BodyFraming::Length(n) => State::Length(n),
            BodyFraming::Chunked => State::Chunked(ChunkedDecoder::new()),
        };
        // An HTTP/1.0 client's `Expect` is ignored (RFC 9110 §10.1.1): it knows no 1xx.
        let expect = req.version == Version::Http11
            && req.header("expect").is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
        let waiting = matches!(state, State::Length(_) | State::Chunked(_));
        Intake {
            continue_: if expect && waiting { Continue::Owed } else { Continue::Settled },
            state,
            body: Vec::new(),
            declared: req.body != BodyFraming::None,
            max_body: opts.max_body,
            started: Instant::now(),
            timeout: opts.body_timeout,
            min_rate: opts.body_min_rate,
        }
    }

    /// Takes body bytes from the front of `bytes`; returns how many belonged to the body
    /// (the rest is the next request).
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> usize {
        match &mut self.state {
            State::Length(left) => {
                let take = usize::try_from(*left).unwrap_or(usize::MAX).min(bytes.len());
                self.body.extend_from_slice(&bytes[..take]);
                *left -= take as u64;
                if *left == 0 {
                    self.state = State::Whole;
                }
                take
            }
            State::Chunked(decoder) => match decoder.decode(bytes, &mut self.body) {
                Ok(p) => {
                    if self.body.len() as u64 > self.max_body {
                        self.state = State::Failed(StatusCode::PAYLOAD_TOO_LARGE, TOO_LARGE);
                    } else if p.done {
                        self.state = State::Whole;
                    }
                    p.consumed
                }
                Err(_) => {
                    self.state = State::Failed(StatusCode::BAD_REQUEST, "The chunked request body is malformed.");
                    bytes.len()
                }
            },
            State::Whole | State::Failed(..) => 0,
        }
    }

    /// What is needed next; past the deadline, the intake fails with 408.
    pub(crate) fn poll(&mut self) -> Progress {
        if self.deadline().is_some_and(|d| Instant::now() >= d) {
            self.state = State::Failed(StatusCode::REQUEST_TIMEOUT, "The request body took too long to arrive.");
        }
        match self.state {
            State::Whole => Progress::Whole,
            State::Failed(status, detail) => Progress::Failed(status, detail),
            State::Length(_) | State::Chunked(_) if self.continue_ == Continue::Owed => {
                self.continue_ = Continue::Settled;
                Progress::Continue
            }
            State::Length(_) | State::Chunked(_) => Progress::NeedBody,
        }
    }

    /// While the body is still to arrive: when it must have arrived (then [`Intake::poll`]
    /// fails with 408 and the connection closes). `--body-timeout` from the request head,
    /// plus a second per `--body-min-rate` bytes received so far, as Apache's mod_reqtimeout
    /// `body=10,MinRate=500` does: a client trickling below the rate runs out of time,
    /// whatever the size of the body.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        if !matches!(self.state, State::Length(_) | State::Chunked(_)) {
            return None;
        }
        let earned = match self.min_rate {
            0 => Duration::ZERO,
            rate => Duration::from_secs_f64(self.body.len() as f64 / rate as f64),
        };
        Some(self.started + self.timeout + earned)
    }

    /// Whether the body was left unread: refused (413, 400) or late (408) before all of
    /// it arrived, so the client may still be sending it.
    pub(crate) fn left_unread(&self) -> bool {
        !matches!(self.state, State::Whole)
    }

    /// The body taken in so far (whole once [`Intake::poll`] says [`Progress::Whole`]).
    pub(crate) fn body(&self) -> &[u8] {
        &self.body
    }

    /// The script's `CONTENT_LENGTH`, if the request has a body (once it is whole).
    pub(crate) fn content_length(&self) -> Option<usize> {
        self.declared.then_some(self.body.len())
    }
}

const TOO_LARGE: &str = "The request body is larger than this server accepts.";
