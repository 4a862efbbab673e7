//! `spidey bench --h2` against a real HTTP/2 server that is not Spidey: Debian's nginx
//! (its http_v2 module), over plain TCP by prior knowledge (h2c) and over TLS with ALPN
//! `h2`. Each run's counts are checked against what nginx's access log counted, its
//! bytes against the files' sizes; a TLS server without HTTP/2 must fail every connection
//! with one clear reason. Without nginx (apt-get install nginx-light) each test says it
//! skipped.

mod common;
#[allow(dead_code)]
#[path = "bench_tls/servers.rs"]
mod servers;

use common::nginx::{Nginx, NGINX};
use servers::{fixture, Certs};
use spidey_bench::BenchResult;
use std::path::Path;

/// Whether nginx (with HTTP/2) is here; if not, the test says it skipped.
fn have_nginx(test: &str) -> bool {
    let ok = Path::new(NGINX).exists()
        && std::process::Command::new(NGINX)
            .arg("-V")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stderr).contains("http_v2_module"));
    if !ok {
        eprintln!("{test}: skipped: {NGINX} with http_v2_module not found (apt-get install nginx-light)");
    }
    ok
}

/// nginx serving `root` with HTTP/2 on `listen_flags`, logging each request to `log`.
/// `keepalive_requests` is low, so runs cross GOAWAYs and reconnect.
fn nginx_h2(root: &Path, listen_flags: &str, log: &Path, more: &str) -> Nginx {
    let directives = format!("access_log {} combined;\n    keepalive_requests 300;\n    {more}", log.display());
    Nginx::start(root, listen_flags, &directives)
}

/// curl's view of `url` over HTTP/2 by prior knowledge: `VERSION STATUS SIZE`.
fn curl_h2c(url: &str) -> String {
    let out = std::process::Command::new("curl")
        .args([
            "-s",
            "--http2-prior-knowledge",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code} %{size_download}",
        ])
        .arg(url)
        .output()
        .expect("curl (apt-get install curl)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn log_lines(log: &Path) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().lines().count()
}

fn assert_counts(r: &BenchResult, n: u64, len: u64, log: &Path, what: &str) {
    assert_eq!(r.errors.total(), 0, "{what}: errors {:?} ({:?}, {:?})", r.errors, r.tls_error, r.h2);
    assert_eq!((r.responses, r.status.get(&200).copied()), (n, Some(n)), "{what}");
    assert_eq!(r.body_bytes, n * len, "{what}: body bytes");
    assert_eq!(log_lines(log) as u64, n, "{what}: nginx's access log");
    assert_eq!((r.protocol.as_str(), r.streams.is_some()), ("h2", true), "{what}");
}

#[test]
fn h2c_counts_match_nginx_across_goaways() {
    if !have_nginx("h2c_counts_match_nginx_across_goaways") {
        return;
    }
    let (root, logs) = (fixture(), tempfile::tempdir().unwrap());
    for (file, len, streams) in [("1k", 1024, "8"), ("64k", 65536, "1"), ("64k", 65536, "16")] {
        let log = logs.path().join(format!("{file}-{streams}.log"));
        let nginx = nginx_h2(root.path(), "http2", &log, "");
        let url = format!("http://127.0.0.1:{}/{file}", nginx.port);
        assert_eq!(curl_h2c(&url), format!("2 200 {len}"), "nginx serves {file} over h2c");
        std::fs::write(&log, "").unwrap();
        let (r, out) = common::bench::run(&["--h2", "--streams", streams, "-n", "1000", "-c", "2", "-t", "1", &url]);
        drop(nginx);
        let what = format!("{file} x{streams}");
        assert_counts(&r, 1000, len, &log, &what);
        let h2 = r.h2.clone().unwrap();
        // 1000 requests, at most 300 per connection, 2 at a time: at least 4 connections,
        // and the 2 or 3 that served their 300 ended with a GOAWAY.
        assert!(h2.connections >= 4 && h2.goaways >= 2, "{what}: {h2:?}");
        assert_eq!(h2.connection_errors, 0, "{what}");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(report.starts_with(&format!("spidey bench: h2 ({streams} stream")), "{report}");
    }
}

#[test]
fn h2c_open_loop_keeps_its_rate() {
    if !have_nginx("h2c_open_loop_keeps_its_rate") {
        return;
    }
    let (root, logs) = (fixture(), tempfile::tempdir().unwrap());
    let log = logs.path().join("open.log");
    let nginx = nginx_h2(root.path(), "http2", &log, "");
    let url = format!("http://127.0.0.1:{}/1k", nginx.port);
    let args =
        ["--h2", "--streams", "4", "--rate", "400", "-d", "1s", "-c", "2", "-t", "1", "--late-after", "50ms", &url];
    let (r, _) = common::bench::run(&args);
    drop(nginx);
    // A second at 400/s: every slot sent, answered, and logged.
    assert_eq!(r.errors.total(), 0, "{:?}", r.errors);
    assert_eq!(r.responses, 400);
    assert_eq!(log_lines(&log), 400);
    assert!(r.latency_uncorrected.is_some() && r.loop_mode == "open");
}

#[test]
fn tls_alpn_h2_counts_match_nginx() {
    if !have_nginx("tls_alpn_h2_counts_match_nginx") {
        return;
    }
    let (certs, root, logs) = (Certs::new(), fixture(), tempfile::tempdir().unwrap());
    let (cert, key, ca) = (certs.path("cert.pem"), certs.path("key.pem"), certs.path("ca.pem"));
    let tls = format!("ssl_certificate {cert};\n    ssl_certificate_key {key};");
    let log = logs.path().join("tls.log");
    let nginx = nginx_h2(root.path(), "ssl http2", &log, &tls);
    let url = format!("https://localhost:{}/64k", nginx.port);
    let (r, _) =
        common::bench::run(&["--h2", "--streams", "4", "-n", "400", "-c", "2", "-t", "1", "--cacert", &ca, &url]);
    drop(nginx);
    assert_counts(&r, 400, 65536, &log, "https 64k x4");
    assert!(r.handshakes.unwrap().total() >= 2, "{:?}", r.handshakes);
}

#[test]
fn tls_server_without_h2_fails_with_one_reason() {
    if !have_nginx("tls_server_without_h2_fails_with_one_reason") {
        return;
    }
    let (certs, root, logs) = (Certs::new(), fixture(), tempfile::tempdir().unwrap());
    let (cert, key, ca) = (certs.path("cert.pem"), certs.path("key.pem"), certs.path("ca.pem"));
    let tls = format!("ssl_certificate {cert};\n    ssl_certificate_key {key};");
    let nginx = nginx_h2(root.path(), "ssl", &logs.path().join("h1.log"), &tls);
    let url = format!("https://localhost:{}/1k", nginx.port);
    let (r, report, stderr) =
        common::bench::run_failing(&["--h2", "-n", "5", "-c", "1", "-t", "1", "--cacert", &ca, &url]);
    assert_eq!((r.responses, r.errors.tls, r.errors.total()), (0, 5, 5), "{:?}", r.errors);
    let reason = r.tls_error.unwrap_or_default();
    assert!(reason.contains("ALPN h2"), "{reason}");
    assert!(stderr.contains("ALPN h2") && report.contains("TLS error:"), "{stderr}\n{report}");
}
