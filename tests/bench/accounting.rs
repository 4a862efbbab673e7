//! What `spidey bench` counts: requests against what the server received, warm-up, error
//! classes, descriptor exhaustion, status codes, a connection per request.

use super::bench;
use crate::common::bench::run_failing;
use crate::common::{self, Fixture, Spidey};
use crate::fake_server::{test_server, Behaviour, NO_STALL};
use spidey_bench::BenchResult;
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::Ordering;
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
        // response like any other (also counted `late`); a slot the generator never got to
        // send (a loaded machine: CI runs many suites at once) is an `unsent` error the
        // server cannot have seen. Every request is one of the two; nothing else may fail.
        let unsent = r.errors.unsent;
        assert_eq!(
            (r.requests - unsent, r.responses, r.errors.total() - unsent),
            (server, server, 0),
            "{flags:?}: {:?}",
            r.errors
        );
        assert_eq!(r.status.get(&200).copied().unwrap_or(0), server, "{flags:?}");
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
fn errors_are_classified_and_counted() {
    let refused = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let port = |b| test_server(b).0;
    // (server port, flags, class name → expected count of 4 requests, the report's first
    // line): nothing is answered, so the run exits 1, its most common failure first.
    let cases: &[(u16, &[&str], &str, &str)] = &[
        (refused, &[], "connect", "connection refused"),
        (port(Behaviour::Garbage), &[], "malformed", "malformed response"),
        (port(Behaviour::CloseWithoutAnswer), &[], "closed", "connection closed before the response was complete"),
        (port(Behaviour::NeverAnswer), &["--timeout", "200ms"], "timeout", "no complete response within 200ms"),
    ];
    for (port, flags, class, why) in cases {
        let url = format!("http://127.0.0.1:{port}/");
        let (r, report, _) = run_failing(&[&["-c1", "-t1", "-n", "4"], *flags, &[url.as_str()]].concat());
        let errors: Vec<(&str, u64)> = r.errors.named().into_iter().filter(|(_, n)| *n > 0).collect();
        assert_eq!(errors, [(*class, 4)], "{class}");
        assert_eq!((r.requests, r.responses), (4, 0), "{class}");
        assert_eq!(report.lines().next(), Some(format!("spidey bench: {why} (4 of 4)").as_str()), "{report}");
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

/// The latencies are summed by status class: a slow 200 (a script that sleeps 30 ms) and a
/// quick 404 have means of their own, not one mean of both.
#[test]
fn latency_is_summed_by_status_class() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let dir = fx.dir.path().join("cgi-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("slow.sh");
    std::fs::write(&script, "#!/bin/sh\nsleep 0.03\nprintf 'Content-Type: text/plain\\n\\nslow\\n'\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = Spidey::start("single", &fx.root(), &["-q", "--cgi"]);
    let (r, _) = bench(&["-c1", "-t1", "-n", "60", &s.url("/cgi-bin/slow.sh"), &s.url("/missing")]);
    let (ok, missing) = (r.status[&200], r.status[&404]);
    assert!(ok > 0 && missing > 0, "200: {ok}, 404: {missing}");
    let sums = &r.latency_sum_by_class_us;
    assert_eq!(sums.keys().map(String::as_str).collect::<Vec<_>>(), ["2xx", "4xx"], "{sums:?}");
    let (slow, quick) = (sums["2xx"] / ok, sums["4xx"] / missing);
    assert!(slow >= 30_000, "a 200 after a 30 ms script took {slow} µs on average");
    assert!(quick < 15_000, "a 404 took {quick} µs on average");
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
