//! One `--h2` load-generating thread: a mio event loop owning its share of the HTTP/2
//! connections, each carrying up to `--streams` requests at once as streams.
//!
//! The schedule is the HTTP/1.1 worker's ([`super::client`]): closed loop, every free
//! stream slot issues its next request at once; open loop, a due slot goes to the first
//! connection with a free stream slot, and when none has one it waits, its latency still
//! counted from the slot's time (coordinated omission corrected). A request's latency runs
//! from the moment its HEADERS are queued to its stream's end. A connection is opened when
//! a request needs it (TCP, then TLS with ALPN `h2` for https://, then the preface), and a
//! closed or failed one is opened again the same way; streams the server never acted on
//! (above a GOAWAY's last stream, or refused) are sent again first, on another connection.

use super::h2::{ClientConn, Ended, Req, Stream};
use super::stats::{classify_io, ErrorClass, Recorder, SecondSample, Sent};
use super::timer::{SlotTimer, SPIN, TIMER};
use super::tls::{Endpoint, Session};
use super::Plan;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use spidey_http::hpack::Field;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_millis(10);
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);
const READ_CHUNK: usize = 64 * 1024;

/// What every `--h2` thread sends: built once, shared read-only.
pub(crate) struct H2Requests {
    /// Each target's header fields, pseudo-headers first, names in lower case.
    pub fields: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
    /// One authority for all targets.
    pub addr: SocketAddr,
    pub tls: Option<Endpoint>,
    pub timeout: Duration,
    /// Streams at once per connection, at most (`-m`).
    pub streams: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Backoff(Instant),
    Open,
}

struct Link {
    state: State,
    socket: Option<TcpStream>,
    tls: Option<Box<Session>>,
    h2: ClientConn,
    /// Octets read since the last response was recorded: given to the next one.
    wire: u64,
    /// https: ALPN checked.
    alpn_ok: bool,
    connecting: bool,
    /// When the connection was opened: one whose server sends no SETTINGS within
    /// `--timeout` fails as a timeout.
    opened: Instant,
}

pub(crate) struct Worker<'a> {
    requests: &'a H2Requests,
    poll: Poll,
    timer: Option<SlotTimer>,
    links: Vec<Link>,
    /// Requests to send again (the server never acted on them), oldest first.
    retry: VecDeque<Req>,
    in_flight: usize,
    rec: Recorder,
    rng: fastrand::Rng,
    measure_start: Instant,
    end: Option<Instant>,
    budget: Option<u64>,
    next_slot: Option<Instant>,
    interval: Option<Duration>,
    late_after: Duration,
    exhausted: bool,
    ended: Vec<Ended>,
    chunk: Box<[u8]>,
    cursor: usize,
    /// Connections with requests queued by this dispatch, not yet written.
    dirty: Vec<usize>,
}

impl<'a> Worker<'a> {
    pub fn new(requests: &'a H2Requests, connections: usize, seed: u64) -> io::Result<Self> {
        let now = Instant::now();
        let links = (0..connections)
            .map(|_| Link {
                state: State::Closed,
                socket: None,
                tls: None,
                h2: ClientConn::new(),
                wire: 0,
                alpn_ok: false,
                connecting: false,
                opened: now,
            })
            .collect();
        Ok(Worker {
            requests,
            poll: Poll::new()?,
            timer: None,
            links,
            retry: VecDeque::new(),
            in_flight: 0,
            rec: Recorder::new(false, now),
            rng: fastrand::Rng::with_seed(seed),
            measure_start: now,
            end: None,
            budget: None,
            next_slot: None,
            interval: None,
            late_after: Duration::MAX,
            exhausted: false,
            ended: Vec::new(),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            cursor: 0,
            dirty: Vec::new(),
        })
    }

    pub fn run(
        mut self,
        plan: &Plan,
        progress: &AtomicU64,
        emit: &mut impl FnMut(SecondSample),
    ) -> io::Result<Recorder> {
        self.rec = Recorder::new(plan.interval.is_some(), plan.measure_start);
        self.measure_start = plan.measure_start;
        self.end = plan.end;
        self.budget = plan.budget;
        self.interval = plan.interval;
        self.next_slot = plan.interval.map(|_| plan.first_slot);
        self.late_after = plan.late_after;
        if plan.interval.is_some() {
            self.timer = Some(SlotTimer::new(self.poll.registry())?);
        }
        let mut events = Events::with_capacity(self.links.len().clamp(16, 1024));
        let mut next_tick = Instant::now();
        loop {
            let now = Instant::now();
            if now >= next_tick {
                self.tick(now);
                progress.store(self.rec.responses + self.rec.errors.total(), Ordering::Relaxed);
                self.rec.roll(now, emit);
                next_tick = now + TICK;
            }
            self.dispatch(now);
            if self.in_flight == 0 && self.no_more_requests(now) {
                break;
            }
            let wait = self.wait_for_slot(now)?.unwrap_or(next_tick.saturating_duration_since(now));
            match self.poll.poll(&mut events, Some(wait)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => r?,
            }
            for event in events.iter() {
                match event.token() {
                    TIMER => self.timer.as_mut().map_or((), SlotTimer::fired),
                    Token(li) => self.drive(li),
                }
            }
        }
        for li in 0..self.links.len() {
            self.close(li);
        }
        let now = Instant::now();
        self.count_backlog();
        self.rec.roll(now, emit);
        self.rec.flush(emit);
        progress.store(self.rec.responses + self.rec.errors.total(), Ordering::Relaxed);
        Ok(self.rec)
    }

    fn wait_for_slot(&mut self, now: Instant) -> io::Result<Option<Duration>> {
        let (Some(slot), Some(timer)) = (self.next_slot, self.timer.as_mut()) else { return Ok(None) };
        if slot.saturating_duration_since(now) <= SPIN {
            let streams = self.requests.streams;
            if self.links.iter().any(|l| l.state == State::Open && l.h2.can_open(streams)) {
                return Ok(Some(Duration::ZERO));
            }
            return Ok(None);
        }
        timer.arm(slot - SPIN)?;
        Ok(None)
    }

    fn no_more_requests(&self, now: Instant) -> bool {
        self.retry.is_empty()
            && (self.exhausted
                || self.budget == Some(0)
                || self.end.is_some_and(|end| now >= end)
                || (self.interval.is_some() && self.next_slot.is_none()))
    }

    fn admit(&mut self, at: Instant) -> Option<bool> {
        if at < self.measure_start {
            return Some(false);
        }
        if self.end.is_some_and(|end| at >= end) {
            return None;
        }
        match &mut self.budget {
            Some(0) => None,
            Some(left) => {
                *left -= 1;
                Some(true)
            }
            None => Some(true),
        }
    }

    /// A connection with a free stream slot, round robin; if none, opens a closed one (its
    /// streams become free once the server's SETTINGS are in).
    fn free_link(&mut self, now: Instant) -> Option<usize> {
        let n = self.links.len();
        let streams = self.requests.streams;
        for k in 0..n {
            let li = (self.cursor + k) % n;
            if self.links[li].state == State::Open && self.links[li].h2.can_open(streams) {
                self.cursor = (li + 1) % n;
                return Some(li);
            }
        }
        // Closed ones, and open ones that are done after a GOAWAY, are (re)opened.
        for li in 0..n {
            let l = &self.links[li];
            let spent = l.state == State::Open && l.h2.goaway.is_some() && l.h2.streams.is_empty();
            if spent {
                self.close(li);
            }
            let l = &self.links[li];
            let due = match l.state {
                State::Closed => true,
                State::Backoff(until) => until <= now,
                State::Open => false,
            };
            if due {
                self.connect(li);
            }
        }
        None
    }

    /// Issues what is due, then writes each connection that got requests once: a burst of
    /// responses read together becomes one write of HEADERS frames, not one per request.
    fn dispatch(&mut self, now: Instant) {
        self.issue(now);
        while let Some(li) = self.dirty.pop() {
            if self.links[li].state == State::Open {
                self.flush(li);
            }
        }
    }

    fn issue(&mut self, now: Instant) {
        loop {
            if self.retry.is_empty() && self.end.is_some_and(|end| now >= end) {
                return;
            }
            if self.retry.is_empty() && (self.exhausted || self.interval.is_some() && self.next_slot.is_none()) {
                return;
            }
            let Some(li) = self.free_link(now) else { return };
            if let Some(req) = self.retry.pop_front() {
                self.send(li, req);
                continue;
            }
            let intended = match (self.interval, self.next_slot) {
                (None, _) => now,
                (Some(step), Some(slot)) if slot <= now => {
                    self.next_slot = Some(slot + step);
                    slot
                }
                _ => return,
            };
            let Some(counted) = self.admit(intended) else {
                self.exhausted = true;
                self.next_slot = None;
                return;
            };
            let issued = Instant::now();
            let late = self.interval.is_some() && issued.saturating_duration_since(intended) > self.late_after;
            if counted {
                self.rec.sent(intended, issued);
            }
            let n = self.requests.fields.len();
            let target = if n > 1 { self.rng.usize(..n) } else { 0 };
            self.in_flight += 1;
            self.send(li, Req { intended, issued, late, counted, target });
        }
    }

    fn send(&mut self, li: usize, req: Req) {
        let fields = &self.requests.fields[req.target];
        let l = &mut self.links[li];
        l.h2.open(fields.iter().map(|(n, v)| Field::new(n, v)), req);
        if !self.dirty.contains(&li) {
            self.dirty.push(li);
        }
    }

    fn connect(&mut self, li: usize) {
        let began = Instant::now();
        let session = match &self.requests.tls {
            Some(endpoint) => match endpoint.session(began) {
                Ok(s) => Some(s),
                Err(e) => {
                    self.rec.note_tls_error(&e);
                    self.fail_waiting(began, ErrorClass::Tls);
                    self.links[li].state = State::Backoff(began + CONNECT_BACKOFF);
                    return;
                }
            },
            None => None,
        };
        let connected = TcpStream::connect(self.requests.addr).and_then(|mut s| {
            s.set_nodelay(true)?;
            self.poll.registry().register(&mut s, Token(li), Interest::READABLE | Interest::WRITABLE)?;
            Ok(s)
        });
        let l = &mut self.links[li];
        match connected {
            Ok(socket) => {
                l.socket = Some(socket);
                l.tls = session;
                l.h2 = ClientConn::new();
                l.state = State::Open;
                l.alpn_ok = false;
                l.connecting = true;
                l.opened = began;
                self.rec.h2.connections += 1;
            }
            Err(e) => {
                let class = self.rec.connect_failed(&e);
                self.rec.note_h2(&format!("connect: {}", super::errors::describe_io(&e)));
                self.fail_waiting(began, class);
                self.links[li].state = State::Backoff(began + CONNECT_BACKOFF);
            }
        }
    }

    /// A connection failed before it could carry a stream: the error is a waiting
    /// request's (a retry, or the next due one), as a failed connect is in HTTP/1.1.
    fn fail_waiting(&mut self, now: Instant, class: ErrorClass) {
        if let Some(r) = self.retry.pop_front() {
            self.in_flight -= 1;
            if r.counted {
                self.rec.error(now, class);
            }
        } else if self.take_due_request() {
            self.rec.error(now, class);
        }
    }

    /// A connect failed with no connection at all: one request that would have gone on it
    /// fails instead (closed loop: the next; open loop: the due slot), so a refused server
    /// gives errors, not a hang. Whether it was counted.
    fn take_due_request(&mut self) -> bool {
        let now = Instant::now();
        if self.end.is_some_and(|end| now >= end) || self.exhausted {
            return false;
        }
        let intended = match (self.interval, self.next_slot) {
            (None, _) => now,
            (Some(step), Some(slot)) if slot <= now => {
                self.next_slot = Some(slot + step);
                slot
            }
            _ => return false,
        };
        match self.admit(intended) {
            Some(counted) => counted,
            None => {
                self.exhausted = true;
                self.next_slot = None;
                false
            }
        }
    }

    /// The socket of connection `li` is ready: write what is queued, read what came.
    fn drive(&mut self, li: usize) {
        if self.links[li].state != State::Open {
            return;
        }
        let result = if self.links[li].tls.is_some() { self.drive_tls(li) } else { self.drive_plain(li) };
        if let Err((class, why)) = result {
            self.fail_link(li, class, why);
        } else {
            self.settle(li);
        }
    }

    fn drive_plain(&mut self, li: usize) -> Result<(), (ErrorClass, Option<String>)> {
        self.write_plain(li)?;
        loop {
            let l = &mut self.links[li];
            let Some(socket) = l.socket.as_mut() else { return Ok(()) };
            match socket.read(&mut self.chunk) {
                Ok(0) => return Err((ErrorClass::Closed, None)),
                Ok(n) => {
                    l.connecting = false;
                    l.wire += n as u64;
                    if let Err(f) = l.h2.receive(&self.chunk[..n], &mut self.ended) {
                        let _ = self.write_plain(li);
                        self.finish_ended(li);
                        return Err((ErrorClass::Malformed, Some(f.to_string())));
                    }
                    self.finish_ended(li);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err((self.io_class(li, &e), None)),
            }
        }
        self.write_plain(li)
    }

    fn io_class(&mut self, li: usize, e: &io::Error) -> ErrorClass {
        if self.links[li].connecting {
            self.rec.connect_failed(e)
        } else {
            classify_io(e)
        }
    }

    fn write_plain(&mut self, li: usize) -> Result<(), (ErrorClass, Option<String>)> {
        let l = &mut self.links[li];
        let Some(socket) = l.socket.as_mut() else { return Ok(()) };
        let mut written = 0;
        let out = &l.h2.out;
        let result = loop {
            if written == out.len() {
                break Ok(());
            }
            match socket.write(&out[written..]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::NotConnected => {
                    break Ok(())
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        l.h2.out.drain(..written);
        result.map_err(|e| (self.io_class(li, &e), None))
    }

    fn drive_tls(&mut self, li: usize) -> Result<(), (ErrorClass, Option<String>)> {
        loop {
            self.write_tls(li)?;
            let l = &mut self.links[li];
            let (Some(socket), Some(session)) = (l.socket.as_mut(), l.tls.as_deref_mut()) else { return Ok(()) };
            let n = match session.conn.read_tls(socket) {
                Ok(0) if session.handshaking_since.is_some() => return Err((ErrorClass::Tls, None)),
                Ok(0) => return Err((ErrorClass::Closed, None)),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.write_tls(li),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err((self.io_class(li, &e), None)),
            };
            l.wire += n as u64;
            l.connecting = false;
            if let Err(e) = session.conn.process_new_packets() {
                let _ = session.conn.write_tls(socket);
                let why = crate::tls_verify::describe(&e);
                let hint = if why.contains("application protocol") {
                    "; --h2 offers ALPN h2 alone: the server does not speak HTTP/2 over TLS"
                } else {
                    ""
                };
                self.rec.note_tls_error(&format!("{why}{hint}"));
                return Err((ErrorClass::Tls, None));
            }
            if let Some((began, kind)) = session.handshake_done() {
                if self.rec.tls_negotiated.is_none() {
                    self.rec.tls_negotiated = Some(session.negotiated());
                }
                self.rec.handshake(Instant::now().saturating_duration_since(began), kind);
            }
            if !session.conn.is_handshaking() && !l.alpn_ok {
                if session.conn.alpn_protocol() != Some(b"h2") {
                    let chose = match session.conn.alpn_protocol() {
                        Some(p) => format!("it chose {}", String::from_utf8_lossy(p)),
                        None => "it chose no protocol".into(),
                    };
                    self.rec
                        .note_tls_error(&format!("the server did not select ALPN h2 ({chose}): no HTTP/2 over TLS"));
                    return Err((ErrorClass::Tls, None));
                }
                l.alpn_ok = true;
            }
            loop {
                match session.conn.reader().read(&mut self.chunk) {
                    Ok(0) => return Err((ErrorClass::Closed, None)),
                    Ok(n) => {
                        if let Err(f) = l.h2.receive(&self.chunk[..n], &mut self.ended) {
                            self.finish_ended(li);
                            let _ = self.write_tls(li);
                            return Err((ErrorClass::Malformed, Some(f.to_string())));
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err((classify_io(&e), None)),
                }
            }
            self.finish_ended(li);
        }
    }

    fn write_tls(&mut self, li: usize) -> Result<(), (ErrorClass, Option<String>)> {
        let l = &mut self.links[li];
        let (Some(socket), Some(session)) = (l.socket.as_mut(), l.tls.as_deref_mut()) else { return Ok(()) };
        if !l.h2.out.is_empty() {
            let took = session.conn.writer().write(&l.h2.out).unwrap_or(0);
            l.h2.out.drain(..took);
        }
        while session.conn.wants_write() {
            match session.conn.write_tls(socket) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::NotConnected => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err((self.io_class(li, &e), None)),
            }
        }
        Ok(())
    }

    fn flush(&mut self, li: usize) {
        let result = if self.links[li].tls.is_some() { self.write_tls(li) } else { self.write_plain(li) };
        if let Err((class, why)) = result {
            self.fail_link(li, class, why);
        }
    }

    /// Records the streams that ended on connection `li`.
    fn finish_ended(&mut self, li: usize) {
        let now = Instant::now();
        for ended in std::mem::take(&mut self.ended) {
            match ended {
                Ended::Response(s) => {
                    let wire = std::mem::take(&mut self.links[li].wire);
                    self.record(now, s, wire);
                }
                Ended::Reset(s, code) => {
                    self.rec.h2.resets += 1;
                    self.rec.note_h2(&format!("a stream reset by the server with {code}"));
                    self.in_flight -= 1;
                    if s.req.counted {
                        self.rec.error(now, ErrorClass::Reset);
                    }
                }
                Ended::Retry(s) => {
                    self.rec.h2.retried += 1;
                    self.retry.push_back(s.req);
                }
            }
        }
    }

    fn record(&mut self, now: Instant, s: Stream, wire: u64) {
        self.in_flight -= 1;
        if s.req.counted {
            let sent = Sent { intended: s.req.intended, issued: s.req.issued, late: s.req.late };
            self.rec.response(now, sent, s.status, s.body, wire);
        }
    }

    /// After a connection's events: a GOAWAY counted once, a connection drained after one
    /// closed.
    fn settle(&mut self, li: usize) {
        let l = &self.links[li];
        if l.h2.goaway.is_some() && l.h2.streams.is_empty() {
            self.rec.h2.goaways += 1;
            self.close(li);
        }
    }

    /// The connection failed: every stream on it is an error of `class`; it is reopened
    /// when a request next needs it (after a backoff if it never connected).
    fn fail_link(&mut self, li: usize, class: ErrorClass, why: Option<String>) {
        let now = Instant::now();
        if let Some(why) = &why {
            self.rec.h2.connection_errors += 1;
            self.rec.note_h2(why);
        }
        let l = &mut self.links[li];
        let goaway = l.h2.goaway;
        let connecting = l.connecting;
        let ready = l.h2.ready;
        let streams = std::mem::take(&mut l.h2.streams);
        if streams.is_empty() && !ready {
            self.fail_waiting(now, class);
        }
        for s in streams {
            self.in_flight -= 1;
            if s.req.counted {
                self.rec.error(now, class);
            }
        }
        if goaway.is_some() {
            self.rec.h2.goaways += 1;
        }
        self.close(li);
        if connecting || class == ErrorClass::Tls {
            self.links[li].state = State::Backoff(now + CONNECT_BACKOFF);
        }
    }

    fn close(&mut self, li: usize) {
        let l = &mut self.links[li];
        if let (Some(socket), Some(tls)) = (l.socket.as_mut(), l.tls.as_deref_mut()) {
            if !tls.conn.is_handshaking() {
                tls.conn.send_close_notify();
                let _ = tls.conn.write_tls(socket);
            }
        }
        if let Some(mut socket) = l.socket.take() {
            let _ = self.poll.registry().deregister(&mut socket);
        }
        l.tls = None;
        l.state = State::Closed;
        l.h2 = ClientConn::new();
        l.wire = 0;
    }

    /// Times out streams (and retries waiting) older than `--timeout`; ends backoffs.
    fn tick(&mut self, now: Instant) {
        let open = self.interval.is_some();
        let timeout = self.requests.timeout;
        let expired = |r: &Req| now.saturating_duration_since(if open { r.intended } else { r.issued }) >= timeout;
        for li in 0..self.links.len() {
            let ids: Vec<u32> = self.links[li].h2.streams.iter().filter(|s| expired(&s.req)).map(|s| s.id).collect();
            for id in &ids {
                if let Some(s) = self.links[li].h2.cancel(*id) {
                    self.in_flight -= 1;
                    if s.req.counted {
                        self.rec.error(now, ErrorClass::Timeout);
                    }
                }
            }
            if !ids.is_empty() {
                self.flush(li);
            }
            let l = &self.links[li];
            if l.state == State::Open && !l.h2.ready && now.saturating_duration_since(l.opened) >= timeout {
                self.fail_link(li, ErrorClass::Timeout, Some("no SETTINGS from the server within --timeout".into()));
            }
            if let State::Backoff(until) = self.links[li].state {
                if until <= now {
                    self.links[li].state = State::Closed;
                }
            }
        }
        while self.retry.front().is_some_and(expired) {
            let r = self.retry.pop_front().expect("a retry");
            self.in_flight -= 1;
            if r.counted {
                self.rec.error(now, ErrorClass::Timeout);
            }
        }
    }

    fn count_backlog(&mut self) {
        let (Some(step), Some(slot), Some(end)) = (self.interval, self.next_slot, self.end) else { return };
        let from = slot.max(self.measure_start);
        if from < end {
            let slots = (end - from).as_nanos().div_ceil(step.as_nanos().max(1));
            self.rec.unsent(u64::try_from(slots).unwrap_or(u64::MAX));
        }
    }
}
