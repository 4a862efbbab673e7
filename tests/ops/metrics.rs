//! `--metrics PATH`: Prometheus text counters over the whole server (every worker process
//! of `fork` and `prefork` included), served before any file lookup, GET and HEAD only.

use crate::common::{read_response, Fixture, Spidey};
use crate::harness::{body, command, eventually, get, script, send, spawn};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

const PATH: &str = "/-/metrics";

fn start(mode: &str, root: &Path, extra: &[&str]) -> (Spidey, SocketAddr) {
    let mut args = vec!["--port", "0", "--metrics", PATH];
    args.extend_from_slice(extra);
    let s = spawn(command(mode, root, &args));
    let addr = SocketAddr::from(([127, 0, 0, 1], s.port));
    (s, addr)
}

/// One value from a scrape: the line `name value`, where `name` includes its labels.
fn value(scrape: &str, name: &str) -> u64 {
    let line = scrape.lines().find(|l| l.strip_prefix(name).is_some_and(|rest| rest.starts_with(' ')));
    let line = line.unwrap_or_else(|| panic!("no {name} in the scrape:\n{scrape}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

fn scrape(addr: SocketAddr) -> String {
    let (status, text) = get(addr, PATH);
    assert_eq!(status, 200, "{text}");
    body(&text).to_string()
}

fn content_length(response: &str) -> u64 {
    crate::common::head_field(response, "content-length").unwrap().parse().unwrap()
}

fn metrics_count_responses_bytes_errors_and_connections(mode: &str) {
    let fx = Fixture::new();
    // A file where the metrics are served: the metrics win, the file is never looked up.
    std::fs::create_dir_all(fx.root().join("-")).unwrap();
    std::fs::write(fx.root().join("-/metrics"), "FILE").unwrap();
    let (_s, addr) = start(mode, &fx.root(), &[]);
    let mut bytes = 0;
    for path in ["/hello.txt", "/digits.txt", "/nope"] {
        let (_, text) = get(addr, path);
        bytes += content_length(&text);
    }
    let head = send(addr, "HEAD /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let bad = send(addr, "GARBAGE\r\n\r\n");
    assert_eq!((head.0, bad.0), (200, 400));
    bytes += content_length(&bad.1);
    // One connection kept open and idle; not in `single`, where it would hold up the
    // scrape, nor `prefork`, where the scrape may queue on that worker's own socket.
    let idle = (!matches!(mode, "single" | "prefork")).then(|| {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let (_, body) = read_response(&mut c);
        (c, body.len() as u64)
    });
    bytes += idle.as_ref().map_or(0, |(_, n)| *n);
    let first = scrape(addr);
    assert!(!first.contains("FILE"), "the file beneath the metrics path was served");
    let table = [
        ("spidey_responses_total{class=\"2xx\"}", 3 + u64::from(idle.is_some())),
        ("spidey_responses_total{class=\"4xx\"}", 2),
        ("spidey_responses_total{class=\"5xx\"}", 0),
        ("spidey_response_body_bytes_total", bytes),
        ("spidey_errors_total{kind=\"bad_request\"}", 1),
        ("spidey_errors_total{kind=\"timeout\"}", 0),
        ("spidey_cgi_processes", 0),
        ("spidey_queue_depth", 0),
    ];
    for (name, want) in table {
        assert_eq!(value(&first, name), want, "{name} in {mode}:\n{first}");
    }
    assert!(first.contains(&format!("spidey_info{{mode=\"{mode}\",")), "{first}");
    assert!(value(&first, "spidey_workers_busy") >= 1, "the worker answering the scrape is busy:\n{first}");
    // Closed connections are counted out once their driver has seen the close.
    let open = 1 + u64::from(idle.is_some());
    eventually(&format!("{open} open connections in {mode}"), || {
        value(&scrape(addr), "spidey_connections_open") == open
    });
    drop(idle);
}

fn metrics_path_takes_get_and_head_only(mode: &str) {
    let fx = Fixture::new();
    let (_s, addr) = start(mode, &fx.root(), &[]);
    let cases: &[(&str, u16, Option<&str>)] = &[
        ("GET /-/metrics?x=1 HTTP/1.1", 200, Some("text/plain; version=0.0.4; charset=utf-8")),
        ("HEAD /-/metrics HTTP/1.1", 200, Some("text/plain; version=0.0.4; charset=utf-8")),
        ("POST /-/metrics HTTP/1.1", 405, None),
        ("DELETE /-/metrics HTTP/1.1", 405, None),
        ("GET /-/metrics/ HTTP/1.1", 404, None),
    ];
    for (line, status, content_type) in cases {
        let (got, text) = send(addr, &format!("{line}\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
        assert_eq!(got, *status, "{line}: {text}");
        let field = |name| crate::common::head_field(&text, name);
        if let Some(ct) = content_type {
            assert_eq!(field("content-type"), Some(*ct), "{line}");
        }
        if *status == 405 {
            assert_eq!(field("allow"), Some("GET, HEAD"), "{line}");
        }
    }
}

fn metrics_count_cgi_processes_and_handler_calls(mode: &str) {
    let fx = Fixture::new();
    let release = fx.root().join("release");
    let wait = "#!/bin/sh\ni=0; while [ ! -e \"$DOCUMENT_ROOT/release\" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done\nprintf 'Content-Type: text/plain\\n\\nreleased'\n";
    script(&fx.root(), "cgi-bin/wait.sh", wait);
    let handler = format!("/app={}", crate::common::page_handler().display());
    let (_s, addr) = start(mode, &fx.root(), &["--handler", &handler]);
    for _ in 0..2 {
        assert_eq!(get(addr, "/app").0, 200);
    }
    // `single` serves one connection at a time: it cannot be scraped while a script runs.
    if mode != "single" {
        let running = std::thread::spawn(move || get(addr, "/cgi-bin/wait.sh"));
        eventually("one CGI script running", || value(&scrape(addr), "spidey_cgi_processes") == 1);
        std::fs::write(&release, "").unwrap();
        let (status, text) = running.join().unwrap();
        assert_eq!((status, body(&text)), (200, "released"));
        eventually("no CGI script running", || value(&scrape(addr), "spidey_cgi_processes") == 0);
    }
    let last = scrape(addr);
    assert_eq!(value(&last, "spidey_handler_calls_total"), 2, "{last}");
}

/// The metrics path is matched on the decoded path, so the file beneath it is never served
/// under an encoded name; with `--basic-auth` the metrics need credentials as all else does.
fn metrics_are_behind_basic_auth_on_the_decoded_path(mode: &str) {
    use base64::Engine;
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.root().join("-")).unwrap();
    std::fs::write(fx.root().join("-/metrics"), "FILE").unwrap();
    // 1000 rounds (fewer than the default 5000): a debug build checks it quickly.
    let hash = sha_crypt::sha512_simple("pw", &sha_crypt::Sha512Params::new(1000).unwrap()).unwrap();
    let good = format!("Authorization: Basic {}\r\n", base64::engine::general_purpose::STANDARD.encode("ann:pw"));
    let request = |path: &str, auth: &str| format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\r\n");
    let encoded = ["/-/metrics", "/%2d/%6detrics", "/-/%6D%65trics", "//-/./metrics"];
    for with_auth in [false, true] {
        let user = format!("ann:{hash}");
        let extra: &[&str] = if with_auth { &["--basic-auth", &user] } else { &[] };
        let (_s, addr) = start(mode, &fx.root(), extra);
        for path in encoded {
            let (status, text) = send(addr, &request(path, if with_auth { &good } else { "" }));
            assert_eq!(status, 200, "{path} (auth {with_auth}): {text}");
            assert!(
                body(&text).contains("spidey_info{"),
                "{path} (auth {with_auth}) did not answer the metrics: {text}"
            );
            if with_auth {
                let (status, text) = send(addr, &request(path, ""));
                assert_eq!(status, 401, "{path} without credentials: {text}");
                assert!(!text.contains("spidey_") && !text.contains("FILE"), "{text}");
            }
        }
    }
}

/// `--health PATH`: 200 `ok` for GET and HEAD however the path is encoded, without
/// credentials even under `--basic-auth`, never the file at that path; 405 for POST; and
/// 503 `stopping` for a request whose head was on its way when SIGTERM came.
fn health_answers_ok_then_stopping(mode: &str) {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.root().join("-")).unwrap();
    std::fs::write(fx.root().join("-/health"), "FILE").unwrap();
    let hash = sha_crypt::sha512_simple("pw", &sha_crypt::Sha512Params::new(1000).unwrap()).unwrap();
    let user = format!("ann:{hash}");
    let (s, addr) = start(mode, &fx.root(), &["--health", "/-/health", "--basic-auth", &user]);
    // (request line, status, body)
    let cases = [
        ("GET /-/health HTTP/1.1", 200, "ok\n"),
        ("GET /%2d/%68ealth?probe=1 HTTP/1.1", 200, "ok\n"),
        ("HEAD /-/health HTTP/1.1", 200, ""),
        ("POST /-/health HTTP/1.1", 405, ""),
        ("GET /-/metrics HTTP/1.1", 401, ""),
    ];
    for (line, status, want) in cases {
        let (got, text) = send(addr, &format!("{line}\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"));
        assert_eq!(got, status, "{line}: {text}");
        if status == 200 {
            assert_eq!(body(&text), want, "{line}: {text}");
        }
        assert!(!text.contains("FILE"), "{line}: {text}");
    }
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    c.write_all(b"GET /-/health HTTP/1.1\r\nHost: x\r\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    crate::common::signal(s.child.id(), "TERM");
    std::thread::sleep(std::time::Duration::from_millis(200));
    c.write_all(b"\r\n").unwrap();
    let text = crate::common::read_to_close(&mut c);
    assert_eq!(crate::common::status_of(&text), 503, "{text}");
    assert_eq!(body(&text), "stopping\n", "{text}");
}

crate::for_each_mode!(
    health_answers_ok_then_stopping,
    metrics_count_responses_bytes_errors_and_connections,
    metrics_path_takes_get_and_head_only,
    metrics_count_cgi_processes_and_handler_calls,
    metrics_are_behind_basic_auth_on_the_decoded_path,
);
