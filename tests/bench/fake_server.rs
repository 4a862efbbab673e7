//! In-test servers that know the truth: they count the requests they receive, stall once, or
//! misbehave in one known way; and a relay that counts the connections a client opens to a real
//! server.

use crate::common::{ReadRetry, Spidey};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
/// How an in-test server answers each request.
#[derive(Clone, Copy)]
pub(crate) enum Behaviour {
    /// `200 hello`, stalling every response for `stall` once request number `stall_at` arrives.
    Hello {
        stall_at: u64,
        stall: Duration,
    },
    Garbage,
    CloseWithoutAnswer,
    NeverAnswer,
}

/// A one-thread-per-connection HTTP server; returns its port and its count of requests.
pub(crate) fn test_server(behaviour: Behaviour) -> (u16, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicU64::new(0));
    let gate = Arc::new(Mutex::new(()));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (count, gate) = (counted.clone(), gate.clone());
            std::thread::spawn(move || serve_connection(stream, behaviour, &count, &gate));
        }
    });
    (port, count)
}

fn serve_connection(mut s: TcpStream, behaviour: Behaviour, count: &AtomicU64, gate: &Mutex<()>) {
    let mut pending = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") else {
            match s.read_retry(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
            continue;
        };
        let close = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase().contains("connection: close");
        pending.drain(..end + 4);
        let number = count.fetch_add(1, Ordering::SeqCst) + 1;
        let answer: &[u8] = match behaviour {
            Behaviour::Hello { stall_at, stall } => {
                // Every response passes the gate, so the stall holds up all connections.
                let _held = gate.lock().unwrap();
                if number == stall_at {
                    std::thread::sleep(stall);
                }
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
            }
            Behaviour::Garbage => b"SPDY/9 what\r\n\r\n",
            Behaviour::CloseWithoutAnswer => return,
            Behaviour::NeverAnswer => {
                std::thread::sleep(Duration::from_secs(30));
                return;
            }
        };
        if s.write_all(answer).is_err() || close {
            return;
        }
    }
}

pub(crate) const NO_STALL: Behaviour = Behaviour::Hello { stall_at: 0, stall: Duration::ZERO };

/// A TCP relay to `upstream` on loopback: counts the connections it accepts and the most it
/// held open at once, so a test sees how a client connects to a real server.
pub(crate) struct Relay {
    pub(crate) port: u16,
    pub(crate) accepted: Arc<AtomicU64>,
    pub(crate) peak: Arc<AtomicU64>,
}

pub(crate) fn relay(upstream: u16) -> Relay {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (accepted, peak, open) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (a, p) = (accepted.clone(), peak.clone());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            a.fetch_add(1, Ordering::SeqCst);
            p.fetch_max(open.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            let open = open.clone();
            std::thread::spawn(move || {
                let server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
                let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let up = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut s2);
                    let _ = s2.shutdown(std::net::Shutdown::Write);
                });
                let (mut client, mut server) = (client, server);
                let _ = std::io::copy(&mut server, &mut client);
                let _ = client.shutdown(std::net::Shutdown::Both);
                let _ = up.join();
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Relay { port, accepted, peak }
}

/// Stops `s` and counts the requests in its access log.
pub(crate) fn access_log_count(s: &mut Spidey) -> u64 {
    s.stop();
    let mut log = String::new();
    std::io::Read::read_to_string(s.stdout.as_mut().unwrap(), &mut log).unwrap();
    log.lines().filter(|l| l.contains("\"GET /")).count() as u64
}
