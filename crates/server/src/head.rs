//! A response head as a value: what the exchange decided a response says before its body,
//! in no protocol's bytes (see [`Head`]).

use crate::content::FieldValue;
use spidey_http::StatusCode;
use std::borrow::Cow;

/// What a response says before its body, in no protocol's bytes: the connection's
/// protocol encodes it as late as possible, when the answer is staged (HTTP/1.1:
/// [`crate::h1`]), as hyper encodes a head only when it writes it.
#[derive(Debug)]
pub struct Head<'h> {
    pub status: StatusCode,
    /// The content's own fields; then `extra` (names a handler chose); then `headers`
    /// (`--header`'s). `Date`, `Server` and framing are the encoder's.
    pub(crate) fields: Vec<(&'static str, FieldValue)>,
    pub(crate) extra: Vec<(String, String)>,
    pub(crate) headers: Cow<'h, [(String, String)]>,
    /// The `Date` value (IMF-fixdate), borrowed from the exchanger's cache.
    pub date: Cow<'h, str>,
    /// What the head says of the body's length.
    pub length: Length,
    /// The request came as HTTP/1.0 (an HTTP/1 encoder then announces keep-alive).
    pub http10: bool,
}

/// What a response head says of its body's length; the protocol turns it into its own
/// framing (HTTP/1.1: `Content-Length`, chunked, or the connection's close).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// This many bytes (the body follows whole, or not at all for HEAD).
    Known(u64),
    /// A body written part by part until its end, its total not known in advance (a
    /// script's output).
    Streamed,
    /// Nothing: a status without a body, or HEAD for a body that was not made.
    Unstated,
}

impl Head<'_> {
    /// Every field the response carries, in order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        let own = self.fields.iter().map(|(n, v)| (*n, &**v));
        own.chain(self.extra.iter().chain(self.headers.iter()).map(|(n, v)| (n.as_str(), v.as_str())))
    }

    /// The head with its own copies of what it borrowed.
    pub(crate) fn into_owned(self) -> Head<'static> {
        let Head { status, fields, extra, headers, date, length, http10 } = self;
        let (headers, date) = (Cow::Owned(headers.into_owned()), Cow::Owned(date.into_owned()));
        Head { status, fields, extra, headers, date, length, http10 }
    }
}
