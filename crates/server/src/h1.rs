//! HTTP/1.1's encoding of a response head: a [`Head`] value in HTTP/1.1 bytes
//! (`spidey_http::write_head`: the status line, `Server`, `Date`, the fields,
//! `Content-Length`, `Connection`), written when the session stages an answer, straight
//! into the connection's out bytes. A script's output is still framed in HTTP/1.1 inside
//! the exchange (`exchange/cgi.rs`), which uses this for its error responses.

use crate::head::Head;
use crate::software::SOFTWARE;
use spidey_http::response::Framing;
use spidey_http::HeadOptions;

/// Appends `head` in HTTP/1.1 to `out`; `keep_alive`: the connection stays open after it.
pub(crate) fn write_head(out: &mut Vec<u8>, head: &Head<'_>, keep_alive: bool) {
    let framing = match head.length {
        Some(n) => Framing::Length(n),
        None => Framing::None,
    };
    let opts = HeadOptions { date: &head.date, server: SOFTWARE, framing, keep_alive, http10: head.http10 };
    spidey_http::write_head(out, head.status, head.fields(), &opts);
}
