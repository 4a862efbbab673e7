//! Hostile crowds for the robustness experiment: N connections that each do one of the
//! things that break some architecture, held open from one background thread while the
//! lab measures a legitimate client beside them.
//!
//! - [`Attack::Slowloris`]: a request head that never ends (one more header line every
//!   [`TRICKLE`]), as slowhttptest's slowloris does;
//! - [`Attack::Idle`]: one request answered, then an idle keep-alive connection;
//! - [`Attack::SlowReader`]: a request for a large file read at about 1 KB/s through a 4 KiB
//!   receive buffer, so the server's sends stall on a full socket.
//!
//! The crowd keeps N connections: one the server closes is counted (`cut`) and opened
//! again on the next tick, as a real attacker would. Connects are non-blocking, so a
//! server whose accept queue is full does not stall the crowd. The thread owns every
//! socket; [`Crowd::stop`] (or dropping the crowd) ends it and closes them all.

use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the crowd's thread wakes: reads, trickles, reconnects.
const TICK: Duration = Duration::from_millis(100);
/// How often a slowloris connection sends one more header line (under every common
/// server's header timeout, so the whole head's deadline is what cuts it).
pub(crate) const TRICKLE: Duration = Duration::from_secs(5);
/// A slow reader's budget per tick: 100 bytes every 100 ms is 1 KB/s.
const SLOW_READ_PER_TICK: usize = 100;
/// A slow reader's receive buffer (the kernel may round it up).
const SLOW_RCVBUF: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attack {
    Slowloris,
    Idle,
    SlowReader,
}

impl Attack {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Attack::Slowloris => "slowloris",
            Attack::Idle => "idle keep-alive",
            Attack::SlowReader => "slow readers",
        }
    }
}

/// What the crowd requests: a small file (`Idle`, and the slowloris head's path) and a large
/// one (`SlowReader`).
#[derive(Debug, Clone)]
pub(crate) struct Targets {
    pub addr: SocketAddr,
    pub small: String,
    pub large: String,
}

/// Counts shared between the crowd's thread and the lab.
#[derive(Debug, Default)]
struct Counts {
    open: AtomicUsize,
    connects: AtomicUsize,
    cut: AtomicUsize,
}

/// What a crowd did, read when it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CrowdStats {
    /// Connections opened, including reopenings.
    pub connects: usize,
    /// Connections the server closed (or reset) while the crowd held them.
    pub cut: usize,
}

/// A running crowd; stops (and closes every socket) when dropped.
pub(crate) struct Crowd {
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    thread: Option<JoinHandle<()>>,
}

impl Crowd {
    /// Starts `n` connections of `attack` against `targets`.
    pub(crate) fn start(attack: Attack, n: usize, targets: Targets) -> std::io::Result<Crowd> {
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let (s, c) = (stop.clone(), counts.clone());
        let thread = std::thread::Builder::new()
            .name(format!("crowd-{}", attack.name()))
            .spawn(move || hold(attack, n, &targets, &s, &c))?;
        Ok(Crowd { stop, counts, thread: Some(thread) })
    }

    /// Connections open right now (connected or connecting).
    pub(crate) fn open(&self) -> usize {
        self.counts.open.load(Ordering::Relaxed)
    }

    /// Waits until `n` connections are open or `limit` passes; returns how many are.
    pub(crate) fn wait_open(&self, n: usize, limit: Duration) -> usize {
        let until = Instant::now() + limit;
        while self.open() < n && Instant::now() < until {
            std::thread::sleep(TICK);
        }
        self.open()
    }

    pub(crate) fn stop(mut self) -> CrowdStats {
        self.halt();
        CrowdStats {
            connects: self.counts.connects.load(Ordering::Relaxed),
            cut: self.counts.cut.load(Ordering::Relaxed),
        }
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Crowd {
    fn drop(&mut self) {
        self.halt();
    }
}

/// One crowd connection.
struct Member {
    stream: TcpStream,
    /// The request bytes still to send (all of it, for a connect still in progress).
    pending: Vec<u8>,
    /// When a slowloris connection sends its next header line.
    next_trickle: Instant,
    trickled: u32,
}

/// The crowd's thread: keeps `n` members alive until `stop`.
fn hold(attack: Attack, n: usize, t: &Targets, stop: &AtomicBool, counts: &Counts) {
    let mut members: Vec<Option<Member>> = (0..n).map(|_| None).collect();
    let mut scratch = vec![0u8; 64 << 10];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        for (i, slot) in members.iter_mut().enumerate() {
            if slot.is_none() {
                match open(attack, t, i, now) {
                    Some(m) => {
                        counts.connects.fetch_add(1, Ordering::Relaxed);
                        *slot = Some(m);
                    }
                    None => continue,
                }
            }
            let Some(m) = slot else { continue };
            if !tend(attack, m, now, &mut scratch) {
                *slot = None;
                counts.cut.fetch_add(1, Ordering::Relaxed);
            }
        }
        counts.open.store(members.iter().flatten().count(), Ordering::Relaxed);
        std::thread::sleep(TICK);
    }
}

/// Opens one member with a non-blocking connect (`None` if the socket cannot be made; the
/// next tick tries again).
fn open(attack: Attack, t: &Targets, i: usize, now: Instant) -> Option<Member> {
    let socket = Socket::new(Domain::for_address(t.addr), Type::STREAM, None).ok()?;
    if attack == Attack::SlowReader {
        let _ = socket.set_recv_buffer_size(SLOW_RCVBUF);
    }
    socket.set_nonblocking(true).ok()?;
    match socket.connect(&t.addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INPROGRESS.raw_os_error()) => {}
        Err(_) => return None,
    }
    let host = t.addr;
    let pending = match attack {
        Attack::Slowloris => format!("GET {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: spidey-lab\r\n", t.small),
        Attack::Idle => format!("GET {} HTTP/1.1\r\nHost: {host}\r\n\r\n", t.small),
        Attack::SlowReader => format!("GET {} HTTP/1.1\r\nHost: {host}\r\n\r\n", t.large),
    };
    // Stagger the trickles so the crowd does not send in bursts.
    let offset = TRICKLE.mul_f64((i % 50) as f64 / 50.0);
    Some(Member { stream: socket.into(), pending: pending.into_bytes(), next_trickle: now + offset, trickled: 0 })
}

/// One tick of one member; `false` once the server has closed it.
fn tend(attack: Attack, m: &mut Member, now: Instant, scratch: &mut [u8]) -> bool {
    if attack == Attack::Slowloris && m.pending.is_empty() && now >= m.next_trickle {
        m.trickled += 1;
        m.pending = format!("X-Slow-{}: {}\r\n", m.trickled, m.trickled).into_bytes();
        m.next_trickle = now + TRICKLE;
    }
    if !m.pending.is_empty() {
        match m.stream.write(&m.pending) {
            Ok(k) => drop(m.pending.drain(..k)),
            // Still connecting, or the server is not reading: try on the next tick.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::NotConnected) => {}
            Err(_) => return false,
        }
    }
    let budget = if attack == Attack::SlowReader { SLOW_READ_PER_TICK } else { scratch.len() };
    loop {
        match m.stream.read(&mut scratch[..budget]) {
            Ok(0) => return false,
            Ok(k) if attack == Attack::SlowReader || k < budget => return true,
            Ok(_) => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::NotConnected) => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A real listener that accepts and keeps every connection, reading what arrives.
    fn sink() -> (SocketAddr, Arc<AtomicUsize>, Arc<std::sync::Mutex<Vec<u8>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (a, s) = (accepted.clone(), seen.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                a.fetch_add(1, Ordering::Relaxed);
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut conn = conn;
                    let mut buf = [0u8; 4096];
                    while let Ok(k @ 1..) = conn.read(&mut buf) {
                        s.lock().unwrap().extend_from_slice(&buf[..k]);
                    }
                });
            }
        });
        (addr, accepted, seen)
    }

    #[test]
    fn slowloris_crowd_holds_n_partial_heads() {
        let (addr, accepted, seen) = sink();
        let targets = Targets { addr, small: "/small".into(), large: "/large".into() };
        let crowd = Crowd::start(Attack::Slowloris, 20, targets).unwrap();
        assert_eq!(crowd.wait_open(20, Duration::from_secs(5)), 20);
        let until = Instant::now() + Duration::from_secs(5);
        while accepted.load(Ordering::Relaxed) < 20 && Instant::now() < until {
            std::thread::sleep(TICK);
        }
        std::thread::sleep(Duration::from_millis(300));
        let stats = crowd.stop();
        assert_eq!((stats.connects, stats.cut), (20, 0));
        let text = String::from_utf8(seen.lock().unwrap().clone()).unwrap();
        assert_eq!(text.matches("GET /small HTTP/1.1\r\n").count(), 20, "{text}");
        assert!(!text.contains("\r\n\r\n"), "a slowloris head ended: {text}");
    }

    #[test]
    fn closed_members_are_counted_and_reopened() {
        // A server that closes every connection at once: the crowd keeps reconnecting.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || listener.incoming().for_each(drop));
        let targets = Targets { addr, small: "/s".into(), large: "/l".into() };
        let crowd = Crowd::start(Attack::Idle, 5, targets).unwrap();
        std::thread::sleep(Duration::from_millis(800));
        let stats = crowd.stop();
        assert!(stats.cut >= 5 && stats.connects >= 10, "{stats:?}");
    }
}
