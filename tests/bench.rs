//! `spidey bench` against servers that know the truth: tiny in-test servers that count what
//! they receive, stall once, or misbehave in one known way; and the real `spidey serve`.

mod common;

use common::{Fixture, ReadRetry, Spidey};
use spidey::bench::BenchResult;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Runs `spidey bench ARGS --json FILE` and returns the parsed results and the output.
fn bench(args: &[&str]) -> (BenchResult, Output) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("result.json");
    let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run spidey bench");
    assert!(out.status.success(), "spidey bench {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&json).expect("the --json file");
    (serde_json::from_str(&text).expect("the --json file parses as a BenchResult"), out)
}

/// How an in-test server answers each request.
#[derive(Clone, Copy)]
enum Behaviour {
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
fn test_server(behaviour: Behaviour) -> (u16, Arc<AtomicU64>) {
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

const NO_STALL: Behaviour = Behaviour::Hello { stall_at: 0, stall: Duration::ZERO };

#[test]
fn counts_agree_with_what_the_server_received() {
    // (flags, requests the bench must report; None for a timed run: whatever the server counted)
    let cases: &[(&[&str], Option<u64>)] = &[
        (&["-c1", "-t1", "-n", "100"], Some(100)),
        (&["-c7", "-t2", "-n", "1000"], Some(1000)),
        (&["-c3", "-t1", "-n", "500", "--no-keepalive"], Some(500)),
        (&["-c4", "-t2", "-n", "300", "--rate", "3000"], Some(300)),
        (&["-c4", "-t2", "-d", "500ms"], None),
        (&["-c4", "-t2", "-d", "500ms", "--rate", "2000", "--no-keepalive"], None),
    ];
    for (flags, want) in cases {
        let (port, count) = test_server(NO_STALL);
        let url = format!("http://127.0.0.1:{port}/");
        let (r, _) = bench(&[flags, &[url.as_str()][..]].concat());
        let server = count.load(Ordering::SeqCst);
        // Open loop: an answer to a request sent over 1 ms late (all connections busy) is a
        // `late` error, not a response; nothing else may fail.
        let late = r.errors.late;
        assert_eq!((r.requests, r.responses + late, r.errors.total() - late), (server, server, 0), "{flags:?}");
        assert_eq!(r.status.get(&200).copied().unwrap_or(0) + late, server, "{flags:?}");
        assert_eq!(r.body_bytes, 5 * server, "{flags:?}");
        if let Some(n) = want {
            assert_eq!(r.requests, *n, "{flags:?}");
        }
        assert!(server > 0, "{flags:?}");
    }
}

#[test]
fn warmup_requests_are_sent_but_not_counted() {
    let (port, count) = test_server(NO_STALL);
    let (r, _) = bench(&["-c2", "-t1", "-n", "200", "--warmup", "300ms", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(r.requests, 200);
    assert!(count.load(Ordering::SeqCst) > 200, "the warmup sent nothing");
}

#[test]
fn open_loop_latency_includes_a_server_stall() {
    // 100 requests/s for 3 s on one connection; request 50 stalls the server for 1 s, so the
    // ~100 requests scheduled during the stall wait up to 1 s for their turn.
    let (port, _) = test_server(Behaviour::Hello { stall_at: 50, stall: Duration::from_secs(1) });
    let url = format!("http://127.0.0.1:{port}/");
    let (r, _) = bench(&["-c1", "-t1", "--rate", "100", "-d", "3s", &url]);
    let corrected = &r.latency;
    let uncorrected = r.latency_uncorrected.as_ref().expect("open loop reports uncorrected latency");
    assert!(corrected.max_us >= 900_000 && corrected.p99_us >= 800_000, "corrected: {corrected:?}");
    assert!(corrected.p90_us >= 300_000, "a third of the requests waited: {corrected:?}");
    assert!(uncorrected.max_us >= 900_000, "the stalled request itself: {uncorrected:?}");
    assert!(uncorrected.p99_us < 200_000, "only one request was itself slow: {uncorrected:?}");
    // The ~100 requests that waited for the one connection went out late: errors of their own.
    assert!((80..=120).contains(&r.errors.late), "{:?}", r.errors);
    assert_eq!((r.errors.total() - r.errors.late, r.errors.unsent), (0, 0), "{:?}", r.errors);
    let lateness = r.send_lateness.as_ref().expect("open loop reports send lateness");
    assert!(lateness.max_us >= 900_000 && lateness.p50_us < 1_000, "{lateness:?}");
}

#[test]
fn closed_loop_hides_the_stall_in_all_but_the_max() {
    let (port, _) = test_server(Behaviour::Hello { stall_at: 50, stall: Duration::from_secs(1) });
    let (r, _) = bench(&["-c1", "-t1", "-n", "300", &format!("http://127.0.0.1:{port}/")]);
    assert!(r.latency_uncorrected.is_none());
    assert!(r.latency.max_us >= 900_000 && r.latency.p99_us < 200_000, "{:?}", r.latency);
}

#[test]
fn errors_are_classified_and_counted() {
    let refused = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let port = |b| test_server(b).0;
    // (server port, flags, class name → expected count of 4 requests)
    let cases: &[(u16, &[&str], &str)] = &[
        (refused, &[], "connect"),
        (port(Behaviour::Garbage), &[], "malformed"),
        (port(Behaviour::CloseWithoutAnswer), &[], "closed"),
        (port(Behaviour::NeverAnswer), &["--timeout", "200ms"], "timeout"),
    ];
    for (port, flags, class) in cases {
        let url = format!("http://127.0.0.1:{port}/");
        let (r, _) = bench(&[&["-c1", "-t1", "-n", "4"], *flags, &[url.as_str()]].concat());
        let errors: Vec<(&str, u64)> = r.errors.named().into_iter().filter(|(_, n)| *n > 0).collect();
        assert_eq!(errors, [(*class, 4)], "{class}");
        assert_eq!((r.requests, r.responses), (4, 0), "{class}");
    }
}

#[test]
fn file_descriptor_exhaustion_is_reported_as_such() {
    let (port, _) = test_server(NO_STALL);
    let url = format!("http://127.0.0.1:{port}/");
    let script = format!(
        "ulimit -n 24 && exec {} bench -c 40 -t1 -n 200 --json /dev/stdout {url}",
        env!("CARGO_BIN_EXE_spidey")
    );
    let out = Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let json = &text[text.find("{\n").expect("JSON after the report")..];
    let r: BenchResult = serde_json::from_str(json).unwrap();
    assert!(r.errors.fd_exhausted > 0, "{:?}", r.errors);
    assert_eq!((r.errors.connect, r.requests), (0, 200), "{:?}", r.errors);
    assert!(String::from_utf8_lossy(&out.stdout).contains("fd exhausted (EMFILE/ENFILE)"));
}

#[test]
fn status_codes_from_spidey_are_counted_apart() {
    let fx = Fixture::new();
    let s = Spidey::start("single", &fx.root(), &["-q"]);
    let (r, out) = bench(&["-c1", "-t1", "-n", "400", &s.url("/hello.txt"), &s.url("/missing")]);
    let (ok, missing) = (r.status[&200], r.status[&404]);
    assert_eq!((ok + missing, r.status.len(), r.errors.total()), (400, 2, 0));
    // Each request picks a URL at random: both get a fair share.
    assert!((100..=300).contains(&ok), "200: {ok}, 404: {missing}");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains(&format!("200: {ok}, 404: {missing}")), "{report}");
}

#[test]
fn no_keepalive_against_spidey_opens_a_connection_per_request() {
    let fx = Fixture::new();
    let s = Spidey::start("single", &fx.root(), &["-q"]);
    let (r, out) = bench(&["-c2", "-t1", "-n", "300", "--no-keepalive", &s.url("/hello.txt")]);
    assert_eq!((r.responses, r.errors.total(), r.keepalive), (300, 0, false));
    assert_eq!(r.body_bytes, 300 * common::HELLO.len() as u64);
    assert!(String::from_utf8_lossy(&out.stdout).contains("a new connection per request"));
}

#[test]
fn json_has_every_documented_field() {
    let fx = Fixture::new();
    let s = Spidey::start("single", &fx.root(), &["-q"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let url = s.url("/hello.txt");
    let status = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(["bench", "-c1", "-t1", "--rate", "200", "-d", "1200ms", "--json", path.to_str().unwrap(), &url])
        .output()
        .unwrap();
    assert!(status.status.success());
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases = [
        ("/urls/0", "string"),
        ("/loop_mode", "string"),
        ("/connections", "number"),
        ("/threads", "number"),
        ("/rate", "number"),
        ("/requests", "number"),
        ("/responses", "number"),
        ("/duration_s", "number"),
        ("/requests_per_sec", "number"),
        ("/body_bytes_per_sec", "number"),
        ("/wire_bytes_per_sec", "number"),
        ("/latency/p50_us", "number"),
        ("/latency/p99_9_us", "number"),
        ("/latency/percentiles/0/1", "number"),
        ("/latency_uncorrected/p99_us", "number"),
        ("/status/200", "number"),
        ("/errors/ports_exhausted", "number"),
        ("/errors/fd_exhausted", "number"),
        ("/backlog", "number"),
        ("/errors/unsent", "number"),
        ("/errors/late", "number"),
        ("/open_model", "string"),
        ("/late_after_us", "number"),
        ("/send_lateness/p50_us", "number"),
        ("/send_lateness/p99_us", "number"),
        ("/send_lateness/max_us", "number"),
        ("/send_lateness/percentiles/0/1", "number"),
        ("/series/0/responses", "number"),
        ("/series/1/latency_p99_us", "number"),
    ];
    for (pointer, kind) in cases {
        let field = v.pointer(pointer).unwrap_or_else(|| panic!("no {pointer} in {v}"));
        let is = if field.is_number() {
            "number"
        } else if field.is_string() {
            "string"
        } else {
            "other"
        };
        assert_eq!(is, kind, "{pointer}");
    }
    assert_eq!(
        (&v["loop_mode"], &v["open_model"], &v["late_after_us"]),
        (&"open".into(), &"pool".into(), &1000.into())
    );
    assert_eq!(v.pointer("/send_lateness/count"), v.pointer("/latency/count"), "every request sent has its lateness");
    let series_total: u64 = v["series"].as_array().unwrap().iter().map(|s| s["responses"].as_u64().unwrap()).sum();
    assert_eq!(Some(series_total), v["responses"].as_u64(), "the series adds up to the total");
}

#[test]
fn https_urls_are_refused_with_a_clear_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_spidey")).args(["bench", "https://127.0.0.1:1/"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("https is not supported") && stderr.lines().count() == 1, "{stderr}");
}

/// A TCP relay to `upstream` on loopback: counts the connections it accepts and the most it
/// held open at once, so a test sees how a client connects to a real server.
struct Relay {
    port: u16,
    accepted: Arc<AtomicU64>,
    peak: Arc<AtomicU64>,
}

fn relay(upstream: u16) -> Relay {
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
fn access_log_count(s: &mut Spidey) -> u64 {
    s.stop();
    let mut log = String::new();
    std::io::Read::read_to_string(s.stdout.as_mut().unwrap(), &mut log).unwrap();
    log.lines().filter(|l| l.contains("\"GET /")).count() as u64
}

#[test]
fn per_request_model_opens_one_connection_per_scheduled_request() {
    // 200 requests/s for 1 s against a server that holds each for 100 ms: about 20 at once,
    // though -c says 1. Generator lateness is not under test here, hence --late-after 50ms.
    let fx = Fixture::new();
    let mut s = Spidey::start("event", &fx.root(), &["--delay", "100ms"]);
    let relay = relay(s.port);
    let url = format!("http://127.0.0.1:{}/hello.txt", relay.port);
    let flags = ["-c1", "-t1", "--rate", "200", "-d", "1s", "--open-model", "per-request", "--late-after", "50ms"];
    let (r, out) = bench(&[&flags[..], &[url.as_str()]].concat());
    let logged = access_log_count(&mut s);
    assert_eq!((r.requests, r.responses, r.errors.total()), (200, 200, 0), "{:?}", r.errors);
    assert_eq!((r.open_model.as_deref(), r.keepalive), (Some("per-request"), false));
    let (accepted, peak) = (relay.accepted.load(Ordering::SeqCst), relay.peak.load(Ordering::SeqCst));
    assert_eq!((accepted, logged), (200, 200), "one connection per request, each request reached the server");
    assert!(peak >= 10, "no cap but the descriptor limit: only {peak} connections open at once");
    assert!(r.latency.p50_us >= 100_000 && r.latency.p99_us < 400_000, "{:?}", r.latency);
    assert!(String::from_utf8_lossy(&out.stdout).contains("(per-request model)"), "the report names the model");
}

#[test]
fn unsent_requests_are_counted_when_the_server_cannot_keep_up() {
    // 100 requests/s for 1 s against a server that holds each for 200 ms. Two kept-alive
    // connections carry at most 10 a second: the rest are never sent (unsent), and those
    // that waited for a connection went out late. Per request, every one is sent on time.
    let fx = Fixture::new();
    // (flags, unsent expected)
    let cases: &[(&[&str], bool)] = &[
        (&["-c2", "--open-model", "pool"], true),
        (&["-c2", "--open-model", "per-request", "--late-after", "50ms"], false),
    ];
    for (flags, stalls) in cases {
        let mut s = Spidey::start("event", &fx.root(), &["--delay", "200ms"]);
        let url = s.url("/hello.txt");
        let (r, out) = bench(&[&["-t1", "--rate", "100", "-d", "1s"], *flags, &[url.as_str()]].concat());
        let logged = access_log_count(&mut s);
        let e = &r.errors;
        assert!((99..=101).contains(&r.requests), "every scheduled request is accounted for: {r:?}");
        assert_eq!(r.requests, r.responses + e.total(), "{flags:?}");
        assert_eq!(logged, r.requests - e.unsent, "{flags:?}: what was sent reached the server");
        assert_eq!(r.backlog, e.unsent, "{flags:?}");
        if *stalls {
            assert!(e.unsent >= 60 && e.late >= 1, "{flags:?}: {e:?}");
            assert!(r.responses <= 4, "{flags:?}: only the first requests went out on time");
        } else {
            assert_eq!((r.responses, e.total()), (r.requests, 0), "{flags:?}: {e:?}");
        }
        let report = String::from_utf8_lossy(&out.stdout);
        let line = format!("Schedule:     {} unsent (scheduled, never sent), {} late", e.unsent, e.late);
        assert!(report.contains(&line), "{report}");
    }
}

#[test]
fn open_loop_timeouts_count_from_the_intended_send() {
    // 20 requests/s on one connection to a server that answers each after 300 ms, with a
    // 500 ms timeout. Counted from the send, every request would make it (300 ms < 500 ms);
    // counted from the intended time, the second one (due at 50 ms, sent at 300 ms) is
    // 500 ms overdue at 550 ms, before its answer comes at 600 ms.
    let fx = Fixture::new();
    let s = Spidey::start("event", &fx.root(), &["-q", "--delay", "300ms"]);
    let url = s.url("/hello.txt");
    let (r, _) = bench(&["-c1", "-t1", "--rate", "20", "-d", "1s", "--timeout", "500ms", &url]);
    assert_eq!(r.responses, 1, "only the first request, sent on time, is answered in time: {:?}", r.errors);
    assert!(r.errors.timeout >= 1, "{:?}", r.errors);
    assert_eq!(r.requests, r.responses + r.errors.total());
}
