//! `spidey bench https://` against real TLS servers that are not Spidey: nginx (OpenSSL)
//! and Python's `ssl`, with certificates rcgen makes here. Each run must answer every
//! request with the right length, count one handshake per connection (keep-alive) or per
//! request (close), resume only when allowed, and fail an untrusted certificate as `tls`
//! errors, quickly.

mod common;
#[path = "bench_tls/servers.rs"]
mod servers;

use servers::{fixture, nginx_tls, Certs, PythonTls, Versions};
use spidey_bench::{decode_histogram, BenchResult};
use std::process::Command;
use std::time::{Duration, Instant};

/// Runs `spidey bench ARGS --json FILE`; the parsed result, the report, and how long it took.
fn bench(args: &[&str]) -> (BenchResult, String, Duration) {
    let start = Instant::now();
    let (result, out) = common::bench::run(args);
    (result, String::from_utf8_lossy(&out.stdout).into_owned(), start.elapsed())
}

/// Every request answered 200 with a `len`-byte body; no error of any class.
fn assert_all_answered(r: &BenchResult, n: u64, len: u64, what: &str) {
    assert_eq!(r.errors.total(), 0, "{what}: errors {:?} ({:?})", r.errors, r.tls_error);
    assert_eq!((r.responses, r.status.get(&200).copied()), (n, Some(n)), "{what}");
    assert_eq!(r.body_bytes, n * len, "{what}: body bytes");
}

/// The handshake histogram in the JSON holds exactly the counted handshakes.
fn assert_histogram_counts_handshakes(r: &BenchResult, what: &str) {
    let counts = r.handshakes.expect("https results count handshakes");
    let encoded = r.histograms.as_ref().and_then(|h| h.handshake.as_deref()).expect("a handshake histogram");
    assert_eq!(decode_histogram(encoded).unwrap().len(), counts.total(), "{what}");
    assert_eq!(r.handshake.as_ref().unwrap().count, counts.total(), "{what}");
}

#[test]
fn keep_alive_does_one_handshake_per_connection() {
    let (certs, root) = (Certs::new(), fixture());
    let ca = certs.path("ca.pem");
    for versions in [Versions::Tls13, Versions::Tls12Only] {
        let nginx = nginx_tls(root.path(), &certs.path("cert.pem"), &certs.path("key.pem"), versions);
        for (file, len) in [("1k", 1024), ("64k", 65536)] {
            let url = format!("https://localhost:{}/{file}", nginx.port);
            let (r, report, _) = bench(&["-n", "40", "-c", "3", "-t", "2", "--cacert", &ca, &url]);
            let what = format!("{versions:?} {file}");
            assert_all_answered(&r, 40, len, &what);
            // At most one per connection (a connection the others outpaced may do none).
            let total = r.handshakes.unwrap().total();
            assert!((1..=3).contains(&total), "{what}: {total} handshakes for 3 connections");
            assert_histogram_counts_handshakes(&r, &what);
            assert!(report.contains("TLS handshake") && report.contains(&format!("Handshakes:   {total}")), "{report}");
        }
    }
}

#[test]
fn close_per_request_does_a_handshake_per_request_resumed_unless_no_resume() {
    let (certs, root) = (Certs::new(), fixture());
    let ca = certs.path("ca.pem");
    for versions in [Versions::Tls13, Versions::Tls12Only] {
        let nginx = nginx_tls(root.path(), &certs.path("cert.pem"), &certs.path("key.pem"), versions);
        let url = format!("https://localhost:{}/1k", nginx.port);
        // (flags, lowest number of resumed handshakes, highest): one connection at a time,
        // so only the first needs a full handshake when resumption is on.
        let cases: &[(&[&str], u64, u64)] = &[(&[], 29, 30), (&["--no-resume"], 0, 0)];
        for (flags, least, most) in cases {
            let mut args = vec!["-n", "30", "-c", "1", "-t", "1", "--no-keepalive", "--cacert", &ca, &url];
            args.extend_from_slice(flags);
            let (r, _, _) = bench(&args);
            let what = format!("{versions:?} {flags:?}");
            assert_all_answered(&r, 30, 1024, &what);
            let h = r.handshakes.unwrap();
            assert_eq!(h.total(), 30, "{what}: one per request: {h:?}");
            assert!((*least..=*most).contains(&h.resumed), "{what}: {h:?}");
            assert_histogram_counts_handshakes(&r, &what);
        }
    }
}

#[test]
fn open_loop_pool_and_per_request_over_tls() {
    let (certs, root) = (Certs::new(), fixture());
    let nginx = nginx_tls(root.path(), &certs.path("cert.pem"), &certs.path("key.pem"), Versions::Tls13);
    let url = format!("https://localhost:{}/1k", nginx.port);
    let ca = certs.path("ca.pem");
    // (model, most handshakes): the pool keeps its 2 connections; per request, one each.
    for (model, least, most) in [("pool", 1, 2), ("per-request", 20, 20)] {
        let args = ["--rate", "100", "--open-model", model, "--late-after", "1s", "-n", "20", "-c", "2", "-t", "1"];
        let (r, _, _) = bench(&[&args[..], &["--cacert", &ca, &url]].concat());
        assert_all_answered(&r, 20, 1024, model);
        let total = r.handshakes.unwrap().total();
        assert!((least..=most).contains(&total), "{model}: {total} handshakes");
    }
}

#[test]
fn an_untrusted_certificate_is_a_tls_error_not_a_hang() {
    let (certs, root) = (Certs::new(), fixture());
    let nginx = nginx_tls(root.path(), &certs.path("cert.pem"), &certs.path("key.pem"), Versions::Tls13);
    let url = format!("https://localhost:{}/1k", nginx.port);
    let other = certs.path("other-ca.pem");
    // No flag: the system's CA bundle, which does not know the test CA; --cacert of another
    // CA, which the sentence names (it is no use telling to pass --cacert: it was passed).
    let not_by_other =
        format!("TLS: certificate not trusted by the CA file given to --cacert, {other} (unknown issuer)");
    let cases: &[(&[&str], &str)] = &[
        (&[], "TLS: certificate not trusted (unknown issuer); pass --cacert FILE or --insecure"),
        (&["--cacert", &other], &not_by_other),
    ];
    for (flags, want) in cases {
        let start = Instant::now();
        let (r, report, _) = common::bench::run_failing(
            &[&["-n", "10", "-c", "2", "-t", "1", "--timeout", "10s"], *flags, &[&url]].concat(),
        );
        let took = start.elapsed();
        assert_eq!((r.responses, r.errors.tls, r.errors.total()), (0, 10, 10), "{flags:?}: {:?}", r.errors);
        let why = r.tls_error.as_deref().unwrap_or_default();
        assert_eq!(why, *want, "{flags:?}");
        assert!(report.contains("tls: 10") && report.contains("TLS error:"), "{report}");
        assert!(took < Duration::from_secs(5), "{flags:?}: took {took:?}, a TLS failure must not wait for --timeout");
    }
}

#[test]
fn insecure_accepts_a_self_signed_certificate() {
    let (certs, root) = (Certs::new(), fixture());
    let (cert, key) = (certs.path("self.pem"), certs.path("self-key.pem"));
    let nginx = nginx_tls(root.path(), &cert, &key, Versions::Tls13);
    let url = format!("https://127.0.0.1:{}/1k", nginx.port);
    let (refused, _, _) = common::bench::run_failing(&["-n", "4", "-c", "1", "-t", "1", &url]);
    assert_eq!((refused.responses, refused.errors.tls), (0, 4));
    let (r, _, _) = bench(&["-n", "20", "-c", "2", "-t", "1", "--insecure", &url]);
    assert_all_answered(&r, 20, 1024, "--insecure");
    // The self-signed certificate itself, trusted by name: verified, no --insecure needed.
    let (r, _, _) = bench(&["-n", "20", "-c", "2", "-t", "1", "--cacert", &cert, &url]);
    assert_all_answered(&r, 20, 1024, "--cacert self.pem");
}

#[test]
fn python_ssl_server_answers_every_request() {
    let (certs, root) = (Certs::new(), fixture());
    let python = PythonTls::start(root.path(), &certs.path("cert.pem"), &certs.path("key.pem"));
    let ca = certs.path("ca.pem");
    // (flags, least and most handshakes): keep-alive, at most one per connection; close,
    // one per request.
    let cases: &[(&[&str], u64, u64)] =
        &[(&[], 1, 2), (&["--no-keepalive"], 20, 20), (&["--no-keepalive", "--no-resume"], 20, 20)];
    for (file, len) in [("1k", 1024), ("64k", 65536)] {
        let url = format!("https://localhost:{}/{file}", python.port);
        for (flags, least, most) in cases {
            let (r, _, _) = bench(&[&["-n", "20", "-c", "2", "-t", "1", "--cacert", &ca, &url], *flags].concat());
            let what = format!("python {file} {flags:?}");
            assert_all_answered(&r, 20, len, &what);
            let total = r.handshakes.unwrap().total();
            assert!((*least..=*most).contains(&total), "{what}: {total} handshakes");
        }
    }
}

#[test]
fn https_runs_merge_with_their_handshakes() {
    let (certs, root) = (Certs::new(), fixture());
    let nginx = nginx_tls(root.path(), &certs.path("cert.pem"), &certs.path("key.pem"), Versions::Tls13);
    let url = format!("https://localhost:{}/1k", nginx.port);
    let dir = tempfile::tempdir().unwrap();
    let (mut files, mut handshakes) = (Vec::new(), Vec::new());
    for (i, c) in ["2", "3"].iter().enumerate() {
        let json = dir.path().join(format!("run{i}.json"));
        let args = ["bench", "-n", "12", "-c", c, "-t", "1", "--insecure", "--json", json.to_str().unwrap(), &url];
        assert!(Command::new(env!("CARGO_BIN_EXE_spidey")).args(args).output().unwrap().status.success());
        let part: BenchResult = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        handshakes.push(part.handshakes.unwrap());
        files.push(json);
    }
    let merged = dir.path().join("merged.json");
    let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(["bench", "merge"])
        .args(&files)
        .arg("--json")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: BenchResult = serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_all_answered(&r, 24, 1024, "merged");
    let (full, resumed) = (handshakes.iter().map(|h| h.full).sum(), handshakes.iter().map(|h| h.resumed).sum());
    assert_eq!((r.handshakes.unwrap().full, r.handshakes.unwrap().resumed), (full, resumed), "{handshakes:?}");
    assert_histogram_counts_handshakes(&r, "merged");
}

#[test]
fn a_pinned_cipher_suite_is_the_one_negotiated_or_the_handshake_fails() {
    let (certs, root) = (Certs::new(), fixture());
    let (cert, key) = (certs.path("cert.pem"), certs.path("key.pem"));
    let ca = certs.path("ca.pem");
    let tls13 = nginx_tls(root.path(), &cert, &key, Versions::Tls13);
    let tls12 = nginx_tls(root.path(), &cert, &key, Versions::Tls12Only);
    // (server, offered suite, negotiated; None: no suite in common, a TLS error).
    let cases = [
        (&tls13, "TLS13_AES_128_GCM_SHA256", Some("TLSv1.3 TLS13_AES_128_GCM_SHA256")),
        (&tls13, "TLS13_CHACHA20_POLY1305_SHA256", Some("TLSv1.3 TLS13_CHACHA20_POLY1305_SHA256")),
        (&tls12, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", Some("TLSv1.2 TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")),
        (&tls12, "TLS13_AES_128_GCM_SHA256", None),
    ];
    for (server, suite, want) in cases {
        let url = format!("https://localhost:{}/1k", server.port);
        let args = ["-n", "6", "-c", "2", "-t", "1", "--cacert", &ca, "--tls-cipher", suite, &url];
        match want {
            Some(negotiated) => {
                let (r, report, _) = bench(&args);
                assert_all_answered(&r, 6, 1024, suite);
                assert_eq!(r.tls_negotiated.as_deref(), Some(negotiated), "{suite}");
                assert!(report.contains(negotiated), "{report}");
            }
            None => {
                let (r, _, _) = common::bench::run_failing(&args);
                assert_eq!((r.responses, r.errors.tls, r.tls_negotiated), (0, 6, None), "{suite}");
            }
        }
    }
}

#[test]
fn https_to_a_plain_http_server_is_a_tls_error() {
    // Answers whatever arrives (a ClientHello) the way a plain HTTP server does, then closes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            use std::io::{Read, Write};
            let _ = s.read(&mut [0u8; 4096]);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let url = format!("https://127.0.0.1:{port}/");
    let start = Instant::now();
    let (r, _, _) =
        common::bench::run_failing(&["-n", "5", "-c", "1", "-t", "1", "--insecure", "--timeout", "10s", &url]);
    let took = start.elapsed();
    assert_eq!((r.responses, r.errors.tls, r.errors.total()), (0, 5, 5), "{:?}", r.errors);
    assert_eq!(r.tls_error.as_deref(), Some("TLS: the server's answer is not TLS (a plain http:// server?)"));
    assert!(took < Duration::from_secs(5), "took {took:?}");
}
