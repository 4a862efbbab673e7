//! HTTP/2's side of a connection: the protocol crate's sans-IO [`Conn`] (frames, HPACK,
//! stream states, flow control) driven over the exchange, as `h1.rs` is HTTP/1.1's.
//!
//! [`H2::receive`] hands the connection the octets that arrived and acts on its events: a
//! request whose head (and body, if it has one) is whole becomes a [`Request`] the
//! exchange answers like any other ([`Exchanger::answer_request`]); the answer's head is
//! encoded as HEADERS at once, and its body becomes one [`Outflow`] of the stream.
//! [`H2::fill`] moves the bodies on as far as both flow-control windows and the output
//! cap allow: bytes in memory without a copy into anything but the frame, a file by
//! `pread(2)` of just what the windows take, straight into the frames (HTTP/2 frames every
//! DATA payload, so sendfile(2) cannot carry it), a CGI script's output as DATA as it comes. The frames
//! queue in the connection's one output buffer, which the session takes
//! ([`H2::take_output`]) and its transport writes.
//!
//! Streams are answered in the order their requests end; every stream with a body going
//! out gets its share of each fill, in turn. What a driver learns: output to write, a
//! script to wait on ([`Fill::WaitScript`]), or nothing until the client sends more
//! (a window update, a request).
//!
//! Request bodies are gathered whole before the request is answered, up to
//! `--max-body` (beyond it: 413, the rest of the body dropped). A script's stdin is then
//! fed that body. `--max-requests` counts requests (streams) per connection: the last one
//! goes out with GOAWAY, and a stream that arrives after it is refused (REFUSED_STREAM).
//! `--delay` holds the connection's output once streams are answered (the session's
//! hold, as for an HTTP/1.1 answer), so streams answered together wait together.
//!
//! Under a worker pool (`hybrid`; `event` and `uring` with `--basic-auth`) a request the
//! driver's [`Offloading`] names becomes a [`StreamJob`] ([`H2::take_jobs`]): the pool
//! answers it with [`answer_offloaded`], and the answer comes back to
//! [`H2::answered_elsewhere`] while the other streams go on. A stream the pool has not
//! answered by its deadline (`--cgi-timeout`, [`H2::offload_deadline`]) gets 504 at the
//! next fill; one it cannot take, 503 ([`H2::refused_by_pool`]). Not done here: server
//! push.

use crate::exchange::{
    Answer, Body, CgiResponse, CgiStep, Exchanger, Head, Length, Offloading, PartWriter, ScriptWatch,
};
use crate::server::Server;
use crate::software::SOFTWARE;
use smallvec::SmallVec;
use spidey_http::h2::{Config, Conn, ErrorCode, Event, RequestHead, SendError, StreamId};
use spidey_http::{BodyFraming, Field, Fields, Method, Request, StatusCode, Target, Version};
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Instant;

/// One HTTP/2 connection's protocol state on the server side.
#[derive(Debug)]
pub(crate) struct H2 {
    conn: Conn,
    /// Requests whose body is still arriving.
    incoming: HashMap<StreamId, Incoming>,
    /// Responses whose body is still going out, in the order they were answered.
    outflows: VecDeque<(StreamId, Outflow)>,
    /// Requests answered on this connection, against `--max-requests`.
    served: u32,
    /// Streams answered on the worker pool (`hybrid`; `event`, `uring` for passwords),
    /// until their answer comes back or their deadline passes (504).
    offloaded: HashMap<StreamId, Offloaded>,
    /// Streams for the pool that the driver has not handed over yet ([`H2::take_jobs`]).
    jobs: Vec<StreamJob>,
    /// Which requests the driver hands to a pool (given with each [`H2::receive`]).
    offloading: Offloading,
    /// The access-log line of the request being answered, its memory kept between
    /// requests while the connection is busy.
    line: Vec<u8>,
}

/// A stream being answered on the worker pool.
#[derive(Debug)]
struct Offloaded {
    /// When its answer is late (504).
    deadline: Instant,
    /// Its access-log request line, for the 504.
    line: Vec<u8>,
}

/// A request for the worker pool: answered there by [`answer_offloaded`], the answer
/// brought back by [`H2::answered_elsewhere`] while its siblings go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StreamJob {
    pub(crate) stream: StreamId,
    pub(crate) head: RequestHead,
    pub(crate) body: Vec<u8>,
}

/// A request waiting for the rest of its body.
#[derive(Debug)]
struct Incoming {
    head: RequestHead,
    body: Vec<u8>,
    /// The body outgrew `--max-body` and was answered with 413: the rest is dropped.
    refused: bool,
}

/// A response body on its way out.
#[derive(Debug)]
enum Outflow {
    /// Bytes in memory (`pos` of them sent).
    Bytes(Vec<u8>, usize),
    /// Bytes shared with the open-file cache: what is left to send.
    Shared(Arc<[u8]>, std::ops::Range<usize>),
    /// `left` bytes of `file` from `offset`.
    File { file: Arc<File>, offset: u64, left: u64 },
    /// A script's output, framed by [`H2Parts`] as it comes.
    Cgi(Box<CgiResponse>, H2Parts),
}

/// What [`H2::fill`] left for the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// Every body that can move has moved: write the output, then wait for the client.
    Moved,
    /// A script's output is awaited ([`H2::script_watch`]).
    WaitScript,
}

impl H2 {
    /// A connection whose SETTINGS are queued already: the server's preface (§3.4).
    pub(crate) fn new() -> H2 {
        H2 {
            conn: Conn::new(Config::default()),
            incoming: HashMap::new(),
            outflows: VecDeque::new(),
            served: 0,
            offloaded: HashMap::new(),
            jobs: Vec::new(),
            offloading: Offloading::Never,
            line: Vec::new(),
        }
    }

    /// How many streams have been answered so far.
    pub(crate) fn streams_answered(&self) -> u32 {
        self.served
    }

    /// Reads what it can of `input` (the client's octets) and answers every request that
    /// is whole; returns how many octets it took (the rest, a frame's start, comes again
    /// with what arrives next). `closing`: the server is shutting down, and the client is
    /// told with GOAWAY that no new stream will be served.
    /// `offload`: a request it names is left for the worker pool ([`H2::take_jobs`]).
    pub(crate) fn receive(
        &mut self,
        input: &[u8],
        ex: &mut Exchanger,
        server: &Server,
        peer: SocketAddr,
        closing: bool,
        offload: Offloading,
    ) -> usize {
        if closing {
            self.conn.go_away(ErrorCode::NO_ERROR);
        }
        // A connection error queues its GOAWAY and ends the connection: `is_over` says so.
        let used = self.conn.receive(input).unwrap_or(input.len());
        self.offloading = offload;
        while let Some(event) = self.conn.next_event() {
            self.act(event, ex, server, peer);
        }
        used
    }

    /// Acts on one of the client's events.
    fn act(&mut self, event: Event, ex: &mut Exchanger, server: &Server, peer: SocketAddr) {
        match event {
            // `--max-requests` reached: GOAWAY is on its way; a stream that came with it is
            // refused, which tells the client it may retry it elsewhere (RFC 9113 §8.7).
            Event::Request { stream, .. } if self.served >= server.max_requests => {
                self.conn.send_reset(stream, ErrorCode::REFUSED_STREAM);
            }
            Event::Request { stream, head, end_stream: true } => self.answer(stream, &head, &[], ex, server, peer),
            Event::Request { stream, head, end_stream: false } => {
                let refused = head.content_length.is_some_and(|n| n > server.max_body);
                if refused {
                    self.refuse_large(stream, &head, ex, server, peer);
                }
                self.incoming.insert(stream, Incoming { head, body: Vec::new(), refused });
            }
            Event::Data { stream, bytes, end_stream } => {
                self.conn.release(stream, bytes.len());
                let Some(inc) = self.incoming.get_mut(&stream) else { return };
                if !inc.refused && (inc.body.len() + bytes.len()) as u64 > server.max_body {
                    inc.refused = true;
                    let head = inc.head.clone();
                    self.refuse_large(stream, &head, ex, server, peer);
                } else if !inc.refused {
                    inc.body.extend_from_slice(&bytes);
                }
                if end_stream {
                    self.body_ended(stream, ex, server, peer);
                }
            }
            Event::Trailers { stream, .. } => self.body_ended(stream, ex, server, peer),
            Event::Reset { stream, .. } => {
                self.incoming.remove(&stream);
                self.offloaded.remove(&stream); // its answer, when it comes, is dropped
                self.outflows.retain(|(id, _)| *id != stream); // a script is killed on drop
            }
            Event::GoAway { .. } | Event::WindowOpened { .. } => {}
        }
    }

    /// A request's body ended: answered now, unless it was refused already.
    fn body_ended(&mut self, stream: StreamId, ex: &mut Exchanger, server: &Server, peer: SocketAddr) {
        if let Some(inc) = self.incoming.remove(&stream) {
            if !inc.refused {
                self.answer(stream, &inc.head, &inc.body, ex, server, peer);
            }
        }
    }

    /// 413 for a body over `--max-body`.
    fn refuse_large(
        &mut self,
        stream: StreamId,
        head: &RequestHead,
        ex: &mut Exchanger,
        server: &Server,
        peer: SocketAddr,
    ) {
        let line = log_line(head);
        let why = "The request body is larger than this server accepts.";
        let answer = ex.refuse_request(server, StatusCode::PAYLOAD_TOO_LARGE, why, &line, peer);
        self.start(stream, answer, &[]);
    }

    /// Answers the request `head` with its whole `body` on `stream`, or leaves it for the
    /// worker pool ([`H2::take_jobs`]) when the driver's [`Offloading`] names it.
    fn answer(
        &mut self,
        stream: StreamId,
        head: &RequestHead,
        body: &[u8],
        ex: &mut Exchanger,
        server: &Server,
        peer: SocketAddr,
    ) {
        // The access-log line, written into a buffer the connection keeps for it.
        let mut line = std::mem::take(&mut self.line);
        write_log_line(head, &mut line);
        let offloading = self.offloading;
        let built = with_request(head, body, &line, |req| {
            // Counted before it is answered (a metrics scrape counts itself).
            crate::metrics::add(crate::metrics::Counter::Http2Streams, 1);
            self.served += 1;
            if self.served >= server.max_requests {
                self.conn.go_away(ErrorCode::NO_ERROR); // the last request this connection takes
            }
            // (The path is decoded again by the exchange: only a pool's driver pays twice.)
            let pooled =
                offloading != Offloading::Never && offloading.takes(server, req, &crate::content::DecodedPath::of(req));
            match pooled {
                true => None,
                false => Some(ex.answer_request(server, req, body, peer)),
            }
        });
        let answer = match built {
            Err(why) => Some(ex.refuse_request(server, StatusCode::BAD_REQUEST, why, &line, peer)),
            Ok(answer) => answer,
        };
        match answer {
            Some(answer) => self.start(stream, answer, body),
            None => {
                self.jobs.push(StreamJob { stream, head: head.clone(), body: body.to_vec() });
                // The pool's bound on an answer, as for an HTTP/1.1 request it takes.
                let deadline = Instant::now() + server.site.options().cgi.timeout;
                self.offloaded.insert(stream, Offloaded { deadline, line: line.clone() });
            }
        }
        self.line = line;
    }

    /// Streams left for the worker pool since the last call: the driver submits each; one
    /// the pool cannot take comes back to [`H2::refused_by_pool`].
    pub(crate) fn take_jobs(&mut self) -> Vec<StreamJob> {
        std::mem::take(&mut self.jobs)
    }

    /// The pool's queue is full: `stream` is answered 503 here; false if it no longer
    /// waits.
    pub(crate) fn refused_by_pool(
        &mut self,
        stream: StreamId,
        ex: &mut Exchanger,
        server: &Server,
        peer: SocketAddr,
    ) -> bool {
        let Some(o) = self.offloaded.remove(&stream) else { return false };
        let why = "The server is too busy; try again shortly.";
        let answer = ex.refuse_request(server, StatusCode::SERVICE_UNAVAILABLE, why, &o.line, peer);
        self.start(stream, answer, &[]);
        true
    }

    /// The pool's `answer` to `stream` (whose request body was `body`): sent as if made
    /// here; false if the stream no longer waits for it (reset, or answered 504).
    pub(crate) fn answered_elsewhere(&mut self, stream: StreamId, answer: Answer<'_>, body: &[u8]) -> bool {
        if self.offloaded.remove(&stream).is_none() {
            return false;
        }
        self.start(stream, answer, body);
        true
    }

    /// Answers 504 on every stream the pool has not answered by now.
    fn expire_offloaded(&mut self, ex: &mut Exchanger, server: &Server, peer: SocketAddr) {
        let now = Instant::now();
        let late: Vec<StreamId> = self.offloaded.iter().filter(|(_, o)| o.deadline <= now).map(|(id, _)| *id).collect();
        for stream in late {
            let Some(o) = self.offloaded.remove(&stream) else { continue };
            let why = "The answer took too long.";
            let answer = ex.refuse_request(server, StatusCode::GATEWAY_TIMEOUT, why, &o.line, peer);
            self.start(stream, answer, &[]);
        }
    }

    /// When the first stream on the pool is late, if any is there.
    pub(crate) fn offload_deadline(&self) -> Option<Instant> {
        self.offloaded.values().map(|o| o.deadline).min()
    }

    /// Whether streams wait for the pool's answers.
    pub(crate) fn awaits_pool(&self) -> bool {
        !self.offloaded.is_empty()
    }

    /// Sends `answer`'s head on `stream` and queues its body; a script's stdin will be
    /// fed `request_body`.
    fn start(&mut self, stream: StreamId, answer: Answer<'_>, request_body: &[u8]) {
        let outflow = match answer.body {
            Body::Empty => None,
            Body::Bytes(b) => Some(Outflow::Bytes(b, 0)),
            Body::Shared(bytes, range) => Some(Outflow::Shared(bytes, range)),
            Body::File { file, offset, len } => Some(Outflow::File { file, offset, left: len }),
            Body::Cgi(cgi) => {
                let parts = H2Parts { request_body: request_body.to_vec(), ..H2Parts::default() };
                Some(Outflow::Cgi(cgi, parts))
            }
        };
        if let Some(head) = &answer.head {
            let end = outflow.is_none();
            if send_head(&mut self.conn, stream, head, end).is_err() {
                return; // the stream is gone: its body with it
            }
        }
        if let Some(outflow) = outflow {
            self.outflows.push_back((stream, outflow));
        }
    }

    /// Moves every response body on as far as flow control and the output cap allow,
    /// pumping scripts whose earlier output has gone; see [`Fill`].
    pub(crate) fn fill(&mut self, ex: &mut Exchanger, server: &Server, peer: SocketAddr) -> Fill {
        if !self.offloaded.is_empty() {
            self.expire_offloaded(ex, server, peer);
        }
        let mut waiting = false;
        let mut i = 0;
        while i < self.outflows.len() {
            let (stream, outflow) = &mut self.outflows[i];
            let stream = *stream;
            // A body with bytes left cannot move while the connection's room is spent: the
            // rest of the queue is passed over without a lookup per stream.
            let held = !matches!(outflow, Outflow::Cgi(..)) && !outflow_is_empty(outflow);
            if held && self.conn.connection_room() == 0 {
                i += 1;
                continue;
            }
            let step = match outflow {
                Outflow::Bytes(b, pos) => send_slice(&mut self.conn, stream, &b[..], pos),
                Outflow::Shared(bytes, range) => {
                    let mut pos = range.start;
                    let step = send_slice(&mut self.conn, stream, &bytes[..range.end], &mut pos);
                    range.start = pos;
                    step
                }
                Outflow::File { file, offset, left } => send_file(&mut self.conn, stream, file, offset, left),
                Outflow::Cgi(cgi, parts) => match pump(&mut self.conn, stream, cgi, parts) {
                    Pumped::Step(step) => step,
                    Pumped::Redirect(path) => {
                        let request = cgi.redirect_request(&path);
                        self.outflows.remove(i); // kills the script; reaped without blocking
                        let answer = ex.local_redirect(server, &request, peer);
                        self.start(stream, answer, &[]);
                        continue; // the target's body, if any, is last in the queue
                    }
                },
            };
            match step {
                Step::Done => {
                    self.outflows.remove(i);
                }
                Step::Script => {
                    waiting = true;
                    i += 1;
                }
                Step::Blocked => i += 1,
            }
        }
        if waiting {
            Fill::WaitScript
        } else {
            Fill::Moved
        }
    }

    /// Moves the queued frames to the end of `out` (without a copy when `out` is empty).
    /// A connection left with no stream open gives back the memory it held for them: its
    /// output buffer is returned (empty, for the caller's pool of buffers) and grown
    /// queues are dropped, so an idle connection costs little.
    pub(crate) fn take_output(&mut self, out: &mut Vec<u8>) -> Option<Vec<u8>> {
        self.conn.take_output(out);
        if !self.outflows.is_empty() || !self.incoming.is_empty() || self.conn.open_streams() > 0 {
            return None;
        }
        if self.outflows.capacity() > 8 {
            self.outflows = VecDeque::new();
        }
        self.incoming = HashMap::new(); // allocates nothing while empty
        self.line = Vec::new();
        self.conn.trim()
    }

    /// Whether the connection is over: this side queued a GOAWAY with an error, or a
    /// graceful one and no stream is left (the client's GOAWAY ends nothing: it closes).
    /// Its output is the session's to write.
    pub(crate) fn is_over(&self) -> bool {
        self.conn.is_closed()
    }

    /// Whether a body can move now: [`H2::fill`] would queue output or pump a script.
    pub(crate) fn has_work(&self) -> bool {
        // While the connection's window or output room is spent, no stream is looked up.
        let room = self.conn.connection_room() > 0;
        self.outflows.iter().any(|(stream, outflow)| {
            matches!(outflow, Outflow::Cgi(..))
                || outflow_is_empty(outflow)
                || (room && self.conn.data_room(*stream) > 0)
        })
    }

    /// Ends the connection gracefully: GOAWAY with NO_ERROR (shutdown, or a frame begun and
    /// not finished within the head deadline); open streams may finish.
    pub(crate) fn go_away(&mut self) {
        self.conn.go_away(ErrorCode::NO_ERROR);
    }

    /// Every running script's pipes and the earliest deadline, to wait on; `None` when no
    /// stream runs a script.
    pub(crate) fn script_watch(&self) -> Option<ScriptWatch<'_>> {
        let mut watch = ScriptWatch::default();
        for (_, outflow) in &self.outflows {
            if let Outflow::Cgi(cgi, _) = outflow {
                watch.add(cgi);
            }
        }
        watch.deadline().is_some().then_some(watch)
    }
}

/// Whether nothing of the body is left but its end (a stream whose window is 0 can still
/// be ended with an empty DATA frame).
fn outflow_is_empty(outflow: &Outflow) -> bool {
    match outflow {
        Outflow::Bytes(b, pos) => *pos == b.len(),
        Outflow::Shared(_, range) => range.is_empty(),
        Outflow::File { left, .. } => *left == 0,
        Outflow::Cgi(..) => false,
    }
}

/// How far one body moved in one fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// All of it went (or the stream is gone).
    Done,
    /// Flow control or the output cap holds the rest.
    Blocked,
    /// A script's output is awaited.
    Script,
}

/// Sends what the windows take of `bytes[*pos..]`, the last frame ending the stream.
fn send_slice(conn: &mut Conn, stream: StreamId, bytes: &[u8], pos: &mut usize) -> Step {
    match conn.send_data(stream, &bytes[*pos..], true) {
        Ok(n) => {
            *pos += n;
            if *pos == bytes.len() {
                Step::Done
            } else {
                Step::Blocked
            }
        }
        Err(_) => Step::Done,
    }
}

/// Sends what the windows take of the file's `left` bytes from `offset`, the DATA frames'
/// payloads read straight into the connection's output, several frames' by one preadv(2)
/// ([`read_exact_vectored_at`]); a short or failed read (the file shrank) resets the
/// stream, which cannot be finished honestly.
fn send_file(conn: &mut Conn, stream: StreamId, file: &File, offset: &mut u64, left: &mut u64) -> Step {
    let len = usize::try_from(*left).unwrap_or(usize::MAX);
    let mut at = *offset;
    let read = |bufs: &mut [&mut [u8]]| {
        let ok = read_exact_vectored_at(file, bufs, at);
        at += bufs.iter().map(|b| b.len() as u64).sum::<u64>();
        ok
    };
    match conn.send_data_with(stream, len, true, read) {
        Ok(n) => {
            *offset += n as u64;
            *left -= n as u64;
            if *left == 0 {
                Step::Done
            } else {
                Step::Blocked
            }
        }
        Err(SendError::Source) => {
            conn.send_reset(stream, ErrorCode::INTERNAL_ERROR);
            Step::Done
        }
        Err(_) => Step::Done,
    }
}

/// What pumping a script did.
enum Pumped {
    Step(Step),
    /// A local redirect: the script's output is dropped and the target answered instead.
    Redirect(String),
}

/// Sends what the script wrote earlier, then pumps it once that has gone.
fn pump(conn: &mut Conn, stream: StreamId, cgi: &mut CgiResponse, parts: &mut H2Parts) -> Pumped {
    loop {
        if !parts.flush(conn, stream) {
            return Pumped::Step(if parts.gone { Step::Done } else { Step::Blocked });
        }
        if parts.ended {
            return Pumped::Step(Step::Done);
        }
        let step = cgi.pump(&mut H2PartWriter { conn, stream, parts });
        match step {
            CgiStep::Done => {
                parts.ended = true;
                parts.end_pending = !parts.head_ended;
            }
            // The request body was whole before the script ran: all of it is fed.
            CgiStep::NeedBody => {
                let fed = cgi.feed_body(&parts.request_body);
                parts.request_body.drain(..fed);
                if fed == 0 && parts.pending.is_empty() {
                    return Pumped::Step(Step::Script);
                }
            }
            CgiStep::Wait if parts.pending.is_empty() && !parts.end_pending => return Pumped::Step(Step::Script),
            CgiStep::Wait => {}
            CgiStep::LocalRedirect(path) => return Pumped::Redirect(path),
        }
    }
}

/// The HTTP/2 framing state of a script's answer between pumps: body bytes the windows
/// did not take yet, and whether the stream's end is still to be sent.
#[derive(Debug, Default)]
struct H2Parts {
    pending: Vec<u8>,
    /// The head went with END_STREAM (no body follows).
    head_ended: bool,
    /// The script's answer is whole: END_STREAM goes with the last of `pending`.
    end_pending: bool,
    ended: bool,
    /// The stream is gone (reset): nothing more is sent.
    gone: bool,
    request_body: Vec<u8>,
}

impl H2Parts {
    /// Sends what is pending (and the end, once the answer is whole); returns whether
    /// all of it went.
    fn flush(&mut self, conn: &mut Conn, stream: StreamId) -> bool {
        if self.gone {
            return false;
        }
        if self.pending.is_empty() && !self.end_pending {
            return true;
        }
        match conn.send_data(stream, &self.pending, self.end_pending) {
            Ok(n) if n == self.pending.len() => {
                self.pending.clear();
                self.end_pending = false;
                true
            }
            Ok(n) => {
                self.pending.drain(..n);
                false
            }
            Err(_) => {
                self.gone = true;
                false
            }
        }
    }
}

/// [`H2Parts`] with the connection it writes to, for one pump.
struct H2PartWriter<'a> {
    conn: &'a mut Conn,
    stream: StreamId,
    parts: &'a mut H2Parts,
}

impl PartWriter for H2PartWriter<'_> {
    /// The body is whole before the script starts: no client waits for a 100.
    fn interim_continue(&mut self) {}

    fn head(&mut self, head: &Head<'_>, _keep_alive: bool, body: bool) -> bool {
        self.parts.head_ended = !body;
        if send_head(self.conn, self.stream, head, !body).is_err() {
            self.parts.gone = true;
        }
        true
    }

    fn data(&mut self, bytes: &[u8]) {
        self.parts.pending.extend_from_slice(bytes);
    }

    fn end(&mut self) {}
}

/// Encodes `head` as HEADERS on `stream`: `server`, `date`, `content-length` when known,
/// then the response's own fields (the connection drops those HTTP/2 forbids).
fn send_head(conn: &mut Conn, stream: StreamId, head: &Head<'_>, end_stream: bool) -> Result<(), ()> {
    let mut digits = [0u8; 20];
    let mut fields: SmallVec<[(&[u8], &[u8]); 12]> = SmallVec::new();
    fields.push((b"server", SOFTWARE.as_bytes()));
    fields.push((b"date", head.date.as_bytes()));
    if let Length::Known(n) = head.length {
        fields.push((b"content-length", decimal(n, &mut digits)));
    }
    fields.extend(head.fields().map(|(n, v)| (h2_name(n), v.as_bytes())));
    conn.send_head(stream, head.status.0, &fields, end_stream).map_err(|_| ())
}

/// The lower-case spelling HTTP/2 sends (RFC 9113 §8.2.1) of the names the server's own
/// responses carry, so the connection does not lower-case them per response; any other
/// name as it is (the connection lower-cases it).
fn h2_name(name: &str) -> &[u8] {
    match name {
        "Content-Type" => b"content-type",
        "Last-Modified" => b"last-modified",
        "ETag" => b"etag",
        "Accept-Ranges" => b"accept-ranges",
        "Content-Encoding" => b"content-encoding",
        "Content-Range" => b"content-range",
        "Cache-Control" => b"cache-control",
        "Vary" => b"vary",
        "Location" => b"location",
        "Allow" => b"allow",
        "Retry-After" => b"retry-after",
        "WWW-Authenticate" => b"www-authenticate",
        _ => name.as_bytes(),
    }
}

/// Fills `bufs`, in order, from `file` at `offset` onward: one preadv(2) for all of them,
/// then, after a short read, pread(2) for what is left. False if the file ends first or a
/// read fails.
fn read_exact_vectored_at(file: &File, bufs: &mut [&mut [u8]], offset: u64) -> bool {
    let total: usize = bufs.iter().map(|b| b.len()).sum();
    let mut io: SmallVec<[std::io::IoSliceMut<'_>; 8]> = bufs.iter_mut().map(|b| std::io::IoSliceMut::new(b)).collect();
    let Ok(mut done) = rustix::io::preadv(file, &mut io, offset) else { return false };
    drop(io);
    if done == total {
        return true;
    }
    let mut at = offset;
    for buf in bufs.iter_mut() {
        let len = buf.len();
        if done < len && file.read_exact_at(&mut buf[done..], at + done as u64).is_err() {
            return false;
        }
        done = done.saturating_sub(len);
        at += len as u64;
    }
    true
}

/// `n` in decimal, written into `buf` by std's formatting (20 digits hold any u64): a
/// `content-length` without allocating a String.
fn decimal(n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut rest = &mut buf[..];
    let _ = std::io::Write::write_fmt(&mut rest, format_args!("{n}"));
    let len = 20 - rest.len();
    &buf[..len]
}

/// Builds the [`Request`] that `head` and its whole `body` make (`line`: its access-log
/// request line) and hands it to `f`; or why it cannot be served (400).
fn with_request<R>(
    head: &RequestHead,
    body: &[u8],
    line: &[u8],
    f: impl FnOnce(&Request<'_, '_>) -> R,
) -> Result<R, &'static str> {
    let (Ok(method), Some(Ok(path))) = (std::str::from_utf8(head.method()), head.path().map(std::str::from_utf8))
    else {
        return Err("The request has no path this server can serve (CONNECT, or not UTF-8).");
    };
    let Ok(target) = Target::parse(path) else { return Err("The path is not a request target.") };
    let cookie = join_cookies(head);
    // On the stack for the usual head (16 fields), as httparse's array is for HTTP/1.1.
    let mut fields: SmallVec<[Field<'_>; 16]> = head
        .fields()
        .filter(|(n, _)| *n != b"cookie")
        .filter_map(|(n, v)| Some(Field { name: std::str::from_utf8(n).ok()?, value: v }))
        .collect();
    if let Some(cookie) = &cookie {
        fields.push(Field { name: "cookie", value: cookie });
    }
    let authority = head.authority().and_then(|a| std::str::from_utf8(a).ok());
    if let (Some(a), false) = (authority, fields.iter().any(|f| f.name == "host")) {
        fields.push(Field { name: "host", value: a.as_bytes() });
    }
    let host =
        authority.or_else(|| fields.iter().find(|f| f.name == "host").and_then(|f| std::str::from_utf8(f.value).ok()));
    let sent_body = !body.is_empty() || head.content_length.is_some();
    let req = Request {
        method: Method::from_token(method),
        raw_target: path,
        target,
        version: Version::Http2,
        fields: Fields::listed(&fields),
        body: if sent_body { BodyFraming::Length(body.len() as u64) } else { BodyFraming::None },
        keep_alive: true,
        host,
        request_line: line,
    };
    Ok(f(&req))
}

/// The worker pool's answer to a stream a loop left it ([`StreamJob`]): the exchange
/// `H2::answer` would have run, logged and counted the same way.
pub(crate) fn answer_offloaded<'h>(
    ex: &'h mut Exchanger,
    server: &'h Server,
    job: &StreamJob,
    peer: SocketAddr,
) -> Answer<'h> {
    let line = log_line(&job.head);
    // The loop built this request once already: it cannot fail here.
    if let Err(why) = with_request(&job.head, &job.body, &line, |_| ()) {
        return ex.refuse_request(server, StatusCode::BAD_REQUEST, why, &line, peer);
    }
    match with_request(&job.head, &job.body, &line, |req| ex.answer_request(server, req, &job.body, peer)) {
        Ok(answer) => answer,
        Err(_) => unreachable!("checked just above"),
    }
}

/// The request as the access log shows it: `GET /path HTTP/2.0`.
fn log_line(head: &RequestHead) -> Vec<u8> {
    let mut line = Vec::new();
    write_log_line(head, &mut line);
    line
}

/// [`log_line`] into `line`, which is cleared first (its memory kept).
fn write_log_line(head: &RequestHead, line: &mut Vec<u8>) {
    let target = head.path().or(head.authority()).unwrap_or(b"");
    line.clear();
    for part in [head.method(), b" ", target, b" HTTP/2.0"] {
        line.extend_from_slice(part);
    }
}

/// The `cookie` crumbs joined into one value, as RFC 9113 §8.2.3 says to for HTTP/1 code.
fn join_cookies(head: &RequestHead) -> Option<Vec<u8>> {
    let mut crumbs = head.fields().filter(|(n, _)| *n == b"cookie").map(|(_, v)| v).peekable();
    crumbs.peek()?;
    Some(crumbs.collect::<Vec<_>>().join(&b"; "[..]))
}

#[cfg(test)]
mod tests {
    /// Each name the table spells is the name lower-cased; others pass as they are.
    #[test]
    fn h2_names_are_the_names_lower_cased() {
        let names = ["Content-Type", "Last-Modified", "ETag", "Accept-Ranges", "Content-Encoding", "Content-Range"];
        let more = ["Cache-Control", "Vary", "Location", "Allow", "Retry-After", "WWW-Authenticate"];
        for name in names.into_iter().chain(more) {
            assert_eq!(super::h2_name(name), name.to_ascii_lowercase().as_bytes(), "{name}");
        }
        for name in ["X-Custom-Thing", "x-already-lower", "Set-Cookie"] {
            assert_eq!(super::h2_name(name), name.as_bytes());
        }
    }

    /// A file read into several buffers at an offset: whole, or false when the file ends
    /// before the buffers do.
    #[test]
    fn vectored_reads_fill_every_buffer_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // (offset, buffer lengths, whole)
        let cases: [(u64, &[usize], bool); 5] = [
            (0, &[10, 20, 30], true),
            (7, &[16_384, 16_384, 1], true),
            (99_990, &[5, 5], true),
            (99_990, &[5, 6], false),
            (100_000, &[1], false),
        ];
        for (offset, lens, whole) in cases {
            let mut owned: Vec<Vec<u8>> = lens.iter().map(|&n| vec![0; n]).collect();
            let mut bufs: Vec<&mut [u8]> = owned.iter_mut().map(|b| &mut b[..]).collect();
            assert_eq!(super::read_exact_vectored_at(&file, &mut bufs, offset), whole, "{offset} {lens:?}");
            if whole {
                let got: Vec<u8> = owned.concat();
                let start = offset as usize;
                assert_eq!(got, bytes[start..start + got.len()], "{offset} {lens:?}");
            }
        }
    }

    #[test]
    fn decimal_table() {
        for n in [0, 7, 10, 1024, 1 << 20, u64::MAX] {
            assert_eq!(super::decimal(n, &mut [0; 20]), n.to_string().as_bytes());
        }
    }
}
