//! One load-generating thread: a non-blocking mio event loop owning its share of the
//! connections.
//!
//! Each connection is a small state machine (Idle → Connecting → Writing → Reading → Idle)
//! with a fixed read buffer; request bytes are built once per target before the run. Per
//! request there is no allocation, no lock and no channel send: results go into the
//! thread's own [`Recorder`]. Once every [`TICK`] the thread checks timeouts and backoffs,
//! publishes its progress count (one relaxed atomic store) and hands finished seconds of
//! the series to the coordinator.
//!
//! Closed loop: an idle connection issues its next request at once. Open loop: the thread
//! has a fixed schedule (every `interval`, from `first_slot`); latency counts from the
//! slot's time, and so does `--timeout`. In the pool model an idle connection takes the next
//! due slot, so time spent waiting for a free connection — a stalled server — is part of the
//! latency (coordinated omission corrected), and such a request is `late`. In the
//! per-request model each due slot gets a new connection (slots grow on demand and are
//! reused once closed). Slots are waited for on a [`SlotTimer`] armed a little before each
//! slot, then a busy poll for the last microseconds; the gap between a slot and its send is
//! recorded as send lateness. The loop ends when no more requests may be issued and none is
//! in flight; requests in flight at the end of a timed run are waited for (at most
//! `--timeout`), never dropped; slots before the end never sent are counted `unsent`.

use super::conn::{Conn, Phase};
use super::response::{Feed, ResponseReader};
use super::stats::{classify_io, ErrorClass, Recorder, SecondSample, Sent};
use super::timer::{SlotTimer, SPIN, TIMER};
use super::tls::Endpoint;
use super::Plan;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often timeouts, backoffs, progress and the series are looked at.
const TICK: Duration = Duration::from_millis(10);
/// How long a connection waits before retrying after it could not connect.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);

/// What every thread sends: built once, shared read-only.
pub(crate) struct Requests {
    /// The request bytes for each target.
    pub bytes: Vec<Vec<u8>>,
    pub addrs: Vec<SocketAddr>,
    /// Each https:// target's TLS endpoint (None for http://).
    pub tls: Vec<Option<Endpoint>>,
    pub head_method: bool,
    pub keepalive: bool,
    pub timeout: Duration,
}

pub(crate) struct Worker<'a> {
    requests: &'a Requests,
    poll: Poll,
    /// Open loop only: wakes the poll a little before the next slot.
    timer: Option<SlotTimer>,
    conns: Vec<Conn>,
    /// Connections waiting for their next request, oldest first: a connection whose answer
    /// came back while others wait goes behind them, so a closed loop has every one of its
    /// connections busy, not the few a fast server keeps answering first.
    idle: VecDeque<usize>,
    in_flight: usize,
    rec: Recorder,
    rng: fastrand::Rng,
    measure_start: Instant,
    end: Option<Instant>,
    /// Counted requests this thread may still issue (`-n`).
    budget: Option<u64>,
    /// Open loop: the next slot and the time between slots; None once the schedule is over.
    next_slot: Option<Instant>,
    interval: Option<Duration>,
    /// Open loop: a new connection per scheduled request (per-request model).
    per_request: bool,
    late_after: Duration,
    exhausted: bool,
}

impl<'a> Worker<'a> {
    /// A worker with `connections` connections (opened lazily) and no schedule yet.
    pub fn new(requests: &'a Requests, connections: usize, seed: u64) -> io::Result<Self> {
        let response = ResponseReader::new(requests.head_method);
        let now = Instant::now();
        let conns = (0..connections).map(|_| Conn::new(&response, now)).collect();
        Ok(Worker {
            requests,
            poll: Poll::new()?,
            timer: None,
            conns,
            idle: (0..connections).collect(),
            in_flight: 0,
            rec: Recorder::new(false, now),
            rng: fastrand::Rng::with_seed(seed),
            measure_start: now,
            end: None,
            budget: None,
            next_slot: None,
            interval: None,
            per_request: false,
            late_after: Duration::MAX,
            exhausted: false,
        })
    }

    /// Runs `plan` until this thread's share is done; returns its measurements.
    pub fn run(
        mut self,
        plan: &Plan,
        progress: &AtomicU64,
        emit: &mut impl FnMut(SecondSample),
    ) -> io::Result<Recorder> {
        debug_assert_eq!(plan.connections, self.conns.len());
        self.rec = Recorder::new(plan.interval.is_some(), plan.measure_start);
        self.measure_start = plan.measure_start;
        self.end = plan.end;
        self.budget = plan.budget;
        self.interval = plan.interval;
        self.next_slot = plan.interval.map(|_| plan.first_slot);
        self.per_request = plan.per_request;
        self.late_after = plan.late_after;
        if plan.interval.is_some() {
            self.timer = Some(SlotTimer::new(self.poll.registry())?);
        }
        let most = if self.per_request { 1024 } else { self.conns.len().clamp(16, 1024) };
        let mut events = Events::with_capacity(most);
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
                    Token(ci) => self.on_event(ci),
                }
            }
        }
        let now = Instant::now();
        self.count_backlog();
        self.rec.roll(now, emit);
        self.rec.flush(emit);
        progress.store(self.rec.responses + self.rec.errors.total(), Ordering::Relaxed);
        Ok(self.rec)
    }

    /// Open loop, a slot ahead and a way to send it: arms the timer [`SPIN`] before the slot
    /// and returns None (poll until the tick or the timer), or, within [`SPIN`] of the slot,
    /// returns a zero wait: the loop busy-polls its sockets until the slot is due.
    fn wait_for_slot(&mut self, now: Instant) -> io::Result<Option<Duration>> {
        let (Some(slot), Some(timer)) = (self.next_slot, self.timer.as_mut()) else { return Ok(None) };
        if self.idle.is_empty() && !self.per_request {
            return Ok(None);
        }
        if slot.saturating_duration_since(now) <= SPIN {
            return Ok(Some(Duration::ZERO));
        }
        timer.arm(slot - SPIN)?;
        Ok(None)
    }

    fn no_more_requests(&self, now: Instant) -> bool {
        self.exhausted
            || self.budget == Some(0)
            || self.end.is_some_and(|end| now >= end)
            || (self.interval.is_some() && self.next_slot.is_none())
    }

    /// Whether a request intended for `at` may be issued, and if so whether it is counted.
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

    /// Gives idle connections their next request: at once (closed loop) or when their slot
    /// is due (open loop); per request, a due slot with no idle connection gets a new one.
    fn dispatch(&mut self, now: Instant) {
        // Nothing goes out after the end, not even an overdue slot: those are unsent.
        if self.end.is_some_and(|end| now >= end) {
            return;
        }
        loop {
            if self.idle.is_empty() && self.per_request && self.next_slot.is_some_and(|slot| slot <= now) {
                let conn = Conn::new(&ResponseReader::new(self.requests.head_method), now);
                self.conns.push(conn);
                self.idle.push_back(self.conns.len() - 1);
            }
            let Some(&ci) = self.idle.front() else { return };
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
            self.idle.pop_front();
            self.start(ci, intended, counted);
        }
    }

    fn start(&mut self, ci: usize, intended: Instant, counted: bool) {
        let target = if self.requests.bytes.len() > 1 { self.rng.usize(..self.requests.bytes.len()) } else { 0 };
        let c = &mut self.conns[ci];
        c.target = target;
        c.intended = intended;
        c.issued = Instant::now();
        c.late = self.interval.is_some() && c.issued.saturating_duration_since(intended) > self.late_after;
        c.counted = counted;
        if counted {
            self.rec.sent(intended, c.issued);
        }
        c.written = 0;
        c.wire = 0;
        c.len = 0;
        c.response.reset();
        c.phase = Phase::Writing;
        self.in_flight += 1;
        if self.conns[ci].stream.is_none() {
            if let Err(class) = self.connect(ci) {
                return self.fail(ci, class);
            }
        }
        self.write(ci);
    }

    /// Opens the connection (and, for https, its TLS session, timed from here).
    fn connect(&mut self, ci: usize) -> Result<(), ErrorClass> {
        let began = Instant::now();
        let c = &mut self.conns[ci];
        let session = match &self.requests.tls[c.target] {
            Some(endpoint) => Some(endpoint.session(began).map_err(|_| ErrorClass::Tls)?),
            None => None,
        };
        let rec = &mut self.rec;
        let mut stream = TcpStream::connect(self.requests.addrs[c.target]).map_err(|e| rec.connect_failed(&e))?;
        stream.set_nodelay(true).map_err(|e| rec.connect_failed(&e))?;
        let interest = Interest::READABLE | Interest::WRITABLE;
        self.poll.registry().register(&mut stream, Token(ci), interest).map_err(|e| rec.connect_failed(&e))?;
        c.stream = Some(stream);
        c.tls = session;
        c.phase = Phase::Connecting;
        Ok(())
    }

    fn on_event(&mut self, ci: usize) {
        match (self.conns[ci].phase, self.conns[ci].tls.is_some()) {
            (Phase::Connecting | Phase::Writing | Phase::Reading, true) => self.drive_tls(ci),
            (Phase::Connecting | Phase::Writing, false) => self.write(ci),
            (Phase::Reading, false) => self.read(ci),
            (Phase::Idle | Phase::Backoff(_), true) => self.check_idle_tls(ci),
            (Phase::Idle | Phase::Backoff(_), false) => self.check_idle(ci),
        }
        self.dispatch(Instant::now());
    }

    /// Writes the rest of the request; once it is all out, reads.
    fn write(&mut self, ci: usize) {
        if self.conns[ci].tls.is_some() {
            return self.drive_tls(ci);
        }
        let c = &mut self.conns[ci];
        let bytes = &self.requests.bytes[c.target];
        let Some(stream) = c.stream.as_mut() else { return };
        while c.written < bytes.len() {
            match stream.write(&bytes[c.written..]) {
                Ok(n) => {
                    c.written += n;
                    c.phase = Phase::Writing;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::NotConnected => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let class =
                        if c.phase == Phase::Connecting { self.rec.connect_failed(&e) } else { classify_io(&e) };
                    return self.fail(ci, class);
                }
            }
        }
        c.phase = Phase::Reading;
        self.read(ci);
    }

    /// Reads until the response is complete or the socket would block.
    fn read(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let Some(stream) = c.stream.as_mut() else { return };
        loop {
            match stream.read(&mut c.buf[c.len..]) {
                Ok(0) if c.response.complete_at_eof() => return self.complete(ci),
                Ok(0) => return self.fail(ci, ErrorClass::Closed),
                Ok(n) => {
                    c.wire += n as u64;
                    c.len += n;
                    match c.response.feed(&mut c.buf, &mut c.len) {
                        Feed::NeedMore => continue,
                        Feed::Done => return self.complete(ci),
                        Feed::Malformed => return self.fail(ci, ErrorClass::Malformed),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return self.fail(ci, classify_io(&e)),
            }
        }
    }

    /// An idle kept-alive connection became readable: the server closed it (or sent
    /// something unasked). No request is lost; the next one opens a new connection.
    fn check_idle(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let Some(stream) = c.stream.as_mut() else { return };
        match stream.read(&mut c.buf[..]) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            _ => c.close(),
        }
    }

    fn complete(&mut self, ci: usize) {
        let now = Instant::now();
        let c = &mut self.conns[ci];
        if c.counted {
            let (r, sent) = (&c.response, Sent { intended: c.intended, issued: c.issued, late: c.late });
            self.rec.response(now, sent, r.status, r.body_bytes, c.wire);
        }
        if !(self.requests.keepalive && c.response.keep_alive) {
            c.close();
        }
        c.phase = Phase::Idle;
        self.in_flight -= 1;
        self.idle.push_back(ci);
    }

    fn fail(&mut self, ci: usize, class: ErrorClass) {
        let now = Instant::now();
        let c = &mut self.conns[ci];
        if c.counted {
            self.rec.error(now, class);
        }
        c.close();
        self.in_flight -= 1;
        // Per request, the failed request was the connection's only one: nothing to retry.
        let retry = matches!(class, ErrorClass::Connect | ErrorClass::FdExhausted | ErrorClass::PortsExhausted);
        if retry && !self.per_request {
            c.phase = Phase::Backoff(now + CONNECT_BACKOFF);
        } else {
            c.phase = Phase::Idle;
            self.idle.push_back(ci);
        }
    }

    /// Times out requests older than `--timeout` (open loop: counted from the intended send
    /// time); ends backoffs that are over.
    fn tick(&mut self, now: Instant) {
        let open = self.interval.is_some();
        for ci in 0..self.conns.len() {
            let c = &mut self.conns[ci];
            let since = if open { c.intended } else { c.issued };
            match c.phase {
                _ if c.in_flight() && now.saturating_duration_since(since) >= self.requests.timeout => {
                    self.fail(ci, ErrorClass::Timeout)
                }
                Phase::Backoff(until) if until <= now => {
                    c.phase = Phase::Idle;
                    self.idle.push_back(ci);
                }
                _ => {}
            }
        }
    }

    /// Open loop, timed run: the slots before the end that were never sent.
    fn count_backlog(&mut self) {
        let (Some(step), Some(slot), Some(end)) = (self.interval, self.next_slot, self.end) else { return };
        let from = slot.max(self.measure_start);
        if from < end {
            let slots = (end - from).as_nanos().div_ceil(step.as_nanos().max(1));
            self.rec.unsent(u64::try_from(slots).unwrap_or(u64::MAX));
        }
    }
}

#[path = "client_tls.rs"]
mod tls;
