//! The CGI body kind of the [`Session`] state machine: pumping a running script's output
//! into the session's out bytes, feeding it the request body, following local redirects.
//! The protocol is `crate::exchange`'s (see its module docs); the driver only learns
//! whether to write, read the socket, or wait for the script.

use super::{Buffers, Outgoing, Session};
use crate::exchange::{CgiStep, Exchanger, ScriptWatch};
use crate::server::Server;
use std::time::Instant;

/// What a CGI body needs next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CgiFlow {
    /// The script wrote bytes for the client (the out bytes): send them, then pump again.
    Write,
    /// The script wants request-body bytes and none are buffered: read the socket.
    NeedRead,
    /// Wait for the script's pipes or deadline, then pump again.
    Wait,
    /// The response is complete.
    Done,
}

impl Session {
    /// Pumps the CGI body once the out bytes have drained (call only then).
    pub(super) fn pump_cgi(&mut self, ex: &mut Exchanger, server: &Server, buffers: &mut Buffers) -> CgiFlow {
        self.reset_out();
        loop {
            self.out_buf(buffers);
            let Some(Outgoing::Cgi(cgi, parts)) = &mut self.body else {
                return if self.out.is_empty() { CgiFlow::Done } else { CgiFlow::Write };
            };
            let Some(out) = self.out.buf_mut() else { unreachable!("out_buf made it held") };
            let step = cgi.pump(&mut parts.writer(out));
            let wrote = !self.out.is_empty();
            match step {
                CgiStep::NeedBody if self.start < self.end => {
                    self.start += cgi.feed_body(&self.inbuf[self.start..self.end]);
                    self.release_inbuf_if_empty(buffers);
                    if wrote {
                        return CgiFlow::Write;
                    }
                }
                CgiStep::NeedBody if wrote => return CgiFlow::Write,
                CgiStep::NeedBody => return CgiFlow::NeedRead,
                CgiStep::Wait if wrote => return CgiFlow::Write,
                CgiStep::Wait => return CgiFlow::Wait,
                CgiStep::LocalRedirect(path) => {
                    let request = cgi.redirect_request(&path);
                    self.body = None; // kills the script; reaped without blocking (content/cgi/process.rs)
                    let answer = ex.local_redirect(server, &request, self.peer);
                    self.keep_alive &= answer.keep_alive;
                    self.stage(answer.head.as_ref(), answer.keep_alive, answer.body, buffers);
                    if !self.out.is_empty() {
                        return CgiFlow::Write;
                    }
                }
                CgiStep::Done => {
                    self.keep_alive &= cgi.keep_alive();
                    self.body_unread = cgi.body_unread();
                    self.body = None;
                    return if wrote { CgiFlow::Write } else { CgiFlow::Done };
                }
            }
        }
    }

    /// When the session must be driven even if no byte moves: while a CGI request body is
    /// still to arrive, when it must have arrived (the pump then answers 408 and the
    /// connection closes); over HTTP/2, when the first stream on the worker pool is late
    /// (504 on it). The driver arms this deadline (not the send one) and drives the
    /// session when it passes.
    pub(crate) fn wake_at(&self) -> Option<Instant> {
        match (&self.body, &self.protocol) {
            (Some(Outgoing::Cgi(cgi, _)), _) => cgi.body_deadline(),
            (_, super::Speaking::Http2(h2)) => h2.offload_deadline(),
            _ => None,
        }
    }

    /// While scripts run: what to wait on ([`ScriptWatch`]: each one's stdout, or once it
    /// is closed a pidfd readable at its exit; its stdin while body bytes are still to be
    /// written), and the earliest deadline (then pump: 504 for a script past its own).
    /// Over HTTP/2 every stream's script at once.
    pub(crate) fn script_watch(&self) -> Option<ScriptWatch<'_>> {
        if let super::Speaking::Http2(h2) = &self.protocol {
            return h2.script_watch();
        }
        match &self.body {
            Some(Outgoing::Cgi(cgi, _)) => {
                let mut watch = ScriptWatch::default();
                watch.add(cgi);
                Some(watch)
            }
            _ => None,
        }
    }
}
