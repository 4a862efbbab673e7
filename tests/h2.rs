//! HTTP/2 (`--http2`) in every mode, plain (prior knowledge) and over TLS (ALPN `h2`),
//! with real clients: curl, nghttp, h2load, a raw-frame Python client (`h2/client.py`) for
//! the known attacks, and httpwg-cli's 107 RFC 9113 cases. (Headless Chromium over HTTPS
//! with ALPN h2 is `tests/browser.rs`.)

mod common;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A site: `index.html`, a 1 MiB file, a listing, and a CGI script that echoes its body.
fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("index.html"), b"<p>hello</p>\n").unwrap();
    let big: Vec<u8> = (0..1 << 20).map(|i: u32| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(root.join("big.bin"), &big).unwrap();
    std::fs::create_dir(root.join("list")).unwrap();
    std::fs::write(root.join("list").join("<a&b>.txt"), b"x").unwrap();
    std::fs::create_dir(root.join("cgi-bin")).unwrap();
    let script = root.join("cgi-bin").join("echo");
    std::fs::write(
        &script,
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\nX-Proto: %s\\r\\n\\r\\n' \"$SERVER_PROTOCOL\"\n\
         echo \"$REQUEST_METHOD $CONTENT_LENGTH\"\ncat\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `curl` over HTTP/2: ALPN over TLS, prior knowledge in clear text.
fn curl_h2(s: &Spidey) -> Command {
    let mut c = s.curl();
    c.arg(if s.tls { "--http2" } else { "--http2-prior-knowledge" });
    c.args(["-s", "--max-time", "20"]);
    c
}

/// Runs `c` and returns stdout; panics if curl failed.
fn output(mut c: Command) -> String {
    let out = c.output().unwrap();
    assert!(out.status.success(), "{c:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What HTTP/1.1 serves is served over HTTP/2: files whole and in ranges, validators,
/// HEAD, listings, errors, and a CGI script's answer, each checked against curl's view.
fn curl_sees_the_same_site(mode: &str) {
    let dir = site();
    let mut s = Spidey::start(mode, dir.path(), &["--http2", "--cgi", "--metrics", "/-/metrics"]);
    let etag = {
        let mut c = curl_h2(&s);
        c.args(["-o", "/dev/null", "-w", "%header{etag}", &s.url("/index.html")]);
        output(c)
    };
    assert!(etag.starts_with('"'), "an ETag over HTTP/2: {etag:?}");
    // (what, extra curl arguments, path, curl's -w line: version, status, size, and a field)
    type Case = (&'static str, Vec<String>, &'static str, String);
    let cases: Vec<Case> = vec![
        ("a page", vec![], "/index.html", "2 200 13 text/html; charset=utf-8".into()),
        ("1 MiB", vec![], "/big.bin", "2 200 1048576 ".into()),
        ("a range", vec!["-r".into(), "100-199".into()], "/big.bin", "2 206 100 ".into()),
        ("HEAD", vec!["-I".into()], "/big.bin", "2 200 0 ".into()),
        ("not modified", vec!["-H".into(), format!("If-None-Match: {etag}")], "/index.html", "2 304 0 ".into()),
        ("a listing", vec![], "/list/", "2 200 ".into()),
        ("not found", vec![], "/nope", "2 404 ".into()),
        ("a script", vec!["-d".into(), "a=1&b=2".into()], "/cgi-bin/echo", "2 200 14 text/plain".into()),
    ];
    for (what, args, path, want) in &cases {
        let mut c = curl_h2(&s);
        c.args(args).args(["-o", "/dev/null", "-w", "%{http_version} %{http_code} %{size_download} %{content_type}"]);
        let got = output({
            c.arg(s.url(path));
            c
        });
        assert!(got.starts_with(want.as_str()), "{mode} {what}: {got:?}, want {want:?}");
    }
    let body = output({
        let mut c = curl_h2(&s);
        c.args(["-d", "a=1&b=2", "-D", "-", &s.url("/cgi-bin/echo")]);
        c
    });
    assert!(body.contains("x-proto: HTTP/2.0"), "{mode}: the script sees HTTP/2.0: {body}");
    assert!(body.ends_with("POST 7\na=1&b=2"), "{mode}: the script read the body: {body}");
    let mut c = curl_h2(&s);
    let file = dir.path().join("got.bin");
    c.args(["-o"]).arg(&file).arg(s.url("/big.bin"));
    output(c);
    assert_eq!(std::fs::read(&file).unwrap(), std::fs::read(dir.path().join("big.bin")).unwrap(), "{mode}");
    // The counters say how many connections and requests were HTTP/2 (every one so far).
    let metrics = output({
        let mut c = curl_h2(&s);
        c.arg(s.url("/-/metrics"));
        c
    });
    let count = |family: &str| -> u64 {
        let line = metrics.lines().find(|l| l.starts_with(&format!("{family}{{protocol=\"HTTP/2\"}} ")));
        line.and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("{mode}: no {family}: {metrics}"))
    };
    let requests = cases.len() as u64 + 4; // and the etag, the echo, the file, the metrics
    assert_eq!(count("spidey_requests_total"), requests, "{mode}");
    assert_eq!(count("spidey_connections_total"), requests, "{mode}: curl opens one per request");
    // nghttp (nghttp2-client): another HTTP/2 client, its own frame log.
    let out = Command::new("nghttp").args(["-nv", &s.url("/index.html")]).output().expect("nghttp runs");
    let frames = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && frames.contains(":status: 200"), "{mode}: nghttp: {frames}");
    let log = s.log_lines(cases.len() + 5);
    assert!(log.iter().any(|l| l.contains("\"GET /index.html HTTP/2.0\" 200 13")), "{mode}: {log:#?}");
    assert!(log.iter().any(|l| l.contains("\"POST /cgi-bin/echo HTTP/2.0\" 200")), "{mode}: {log:#?}");
}

/// h2load's streams, 32 at a time on each of 4 connections, all answered.
fn h2load_multiplexes(mode: &str) {
    let dir = site();
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q"]);
    for (path, n) in [("/index.html", "4000"), ("/big.bin", "64")] {
        let out = Command::new("h2load")
            .args(["-n", n, "-c", "4", "-m", "32", "-t", "1", &s.url(path)])
            .output()
            .expect("h2load (nghttp2-client) runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let want = format!("requests: {n} total, {n} started, {n} done, {n} succeeded, 0 failed");
        assert!(text.contains(&want), "{mode} {path}: {text}");
        assert!(text.contains(&format!("status codes: {n} 2xx")), "{mode} {path}: {text}");
        if s.tls {
            assert!(text.contains("Application protocol: h2"), "{mode}: ALPN chose h2: {text}");
        }
    }
}

/// Regression: a connection busy with streams for longer than `--idle-timeout` (or
/// `--head-timeout`) is not cut. The event loops armed the idle deadline once, when a drive
/// first ended with every stream answered, and did not move it while later drives answered
/// more: the connection was closed (a reset, no GOAWAY) one idle timeout after it began.
/// Here 2 connections keep 16 streams each busy for 8 of either timeout, from `spidey
/// bench --h2`, which opens new streams after it has read what the server wrote, so a
/// server's drive can end with every stream answered.
/// h2load (`-c2 -m16`, 2 s) against the same old build did not show it. Each cut came
/// with streams in flight, so errors; a connection the server closes after really idling
/// for 250 ms (a client stalled on a loaded machine) is no error and may be reopened.
fn a_busy_connection_outlives_the_timeouts(mode: &str) {
    let dir = site();
    let timeouts = ["--head-timeout", "250ms", "--idle-timeout", "250ms"];
    let s =
        Spidey::start(mode, dir.path(), &[&["--http2", "-q", "--max-requests", "4000000000"][..], &timeouts].concat());
    let ca = tls::ca_file().to_str().unwrap().to_string();
    let trust: &[&str] = if s.tls { &["--cacert", &ca] } else { &[] };
    let load = ["bench", "--h2", "-c", "2", "--streams", "16", "-d", "2s", &s.url("/index.html")];
    let out = Command::new(env!("CARGO_BIN_EXE_spidey")).args(load).args(trust).output().expect("spidey bench runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Errors:       none"), "{mode}: {text}{}", String::from_utf8_lossy(&out.stderr));
}

/// Runs `h2/client.py` against `s`: what the server did with `case`.
fn client(s: &Spidey, case: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h2/client.py");
    let tls = if s.tls { "1" } else { "0" };
    let ca = if s.tls { tls::ca_file().to_str().unwrap().to_string() } else { "-".into() };
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .args([&s.port.to_string(), tls, &ca, case])
        .output()
        .expect("/usr/bin/python3 runs");
    assert!(out.status.success(), "{case}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Each known attack on HTTP/2 servers ends as its limit says (SECURITY.md), and the
/// server goes on serving: a plain GET on a new connection right after each.
fn attacks_meet_their_limits(mode: &str) {
    let dir = site();
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q", "--idle-timeout", "2s"]);
    // (attack, what the server must do: a prefix of client.py's line)
    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("rapid-reset", "goaway 11"),          // ENHANCE_YOUR_CALM after 100 early resets
        ("made-you-reset", "goaway 11"),       // the resets it is made to send count too
        ("continuation-flood", "goaway 11"),   // at most 32 CONTINUATION frames per block
        ("hpack-bomb", "goaway 9"),            // COMPRESSION_ERROR past 16 KiB of fields
        ("settings-flood", "goaway 11"),       // at most 64 acknowledgements unwritten
        ("ping-flood", "goaway 11"),
        ("empty-data-flood", "goaway 11"),     // at most 64 empty DATA frames in a row
        ("priority-flood", "served 200 13"),   // PRIORITY is accepted and ignored
        ("too-many-streams", "refused "),      // REFUSED_STREAM over 100 open streams
        ("zero-window", "closed"),             // a reader that never reads: the idle timeout
    ];
    for (attack, want) in cases {
        let start = Instant::now();
        let got = client(&s, attack);
        assert!(got.starts_with(want), "{mode} {attack}: {got:?}, want {want:?}");
        assert!(start.elapsed() < Duration::from_secs(15), "{mode} {attack}: took {:?}", start.elapsed());
        assert_eq!(client(&s, "get"), "served 200 13", "{mode}: served after {attack}");
    }
    assert!(client(&s, "too-many-streams").ends_with(" served 200 13"), "{mode}");
    assert_eq!(client(&s, "big"), "served 200 1048576", "{mode}");
}

/// Without `--http2`, HTTP/2 is not spoken: over TLS ALPN agrees on http/1.1, and the
/// preface in clear text gets GOAWAY HTTP_1_1_REQUIRED (13).
fn without_the_flag_http1_only(mode: &str) {
    let dir = site();
    let s = Spidey::start(mode, dir.path(), &["-q"]);
    let mut c = curl_h2(&s);
    c.args(["-o", "/dev/null", "-w", "%{http_version} %{http_code}", &s.url("/index.html")]);
    if s.tls {
        assert_eq!(output(c), "1.1 200", "{mode}: ALPN h2 is not offered");
    } else {
        assert_eq!(client(&s, "get"), "goaway 13", "{mode}");
    }
}

/// Shutdown (SIGTERM) with an idle HTTP/2 connection open: the client gets GOAWAY with
/// NO_ERROR (0) before the close, so it knows no stream was cut.
fn shutdown_says_goaway(mode: &str) {
    let dir = site();
    let mut s = Spidey::start(mode, dir.path(), &["--http2", "-q"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h2/client.py");
    let ca = if s.tls { tls::ca_file().to_str().unwrap().to_string() } else { "-".into() };
    let mut child = Command::new("/usr/bin/python3")
        .arg(&script)
        .args([s.port.to_string().as_str(), if s.tls { "1" } else { "0" }, &ca, "hold"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    use std::io::BufRead;
    assert_eq!(lines.next().unwrap().unwrap(), "served 200 13", "{mode}");
    assert!(s.stop().success(), "{mode}: a clean exit");
    assert_eq!(lines.next().unwrap().unwrap(), "then goaway 0", "{mode}");
    let _ = child.wait();
}

/// `--max-requests` counts streams: the third of five requests on one connection is the
/// last answered, GOAWAY (NO_ERROR) goes out with it, and the two that came with them are
/// refused (REFUSED_STREAM: the client may send them again elsewhere); then the close.
fn max_requests_counts_streams(mode: &str) {
    let dir = site();
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q", "--max-requests", "3", "--idle-timeout", "3s"]);
    assert_eq!(client(&s, "five"), "served 3 refused 2 goaway 0", "{mode}");
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q", "--idle-timeout", "1s"]);
    assert_eq!(client(&s, "five"), "served 5 refused 0 no goaway", "{mode}: the idle timeout closes it");
}

/// `--delay` holds HTTP/2 answers too: every stream waits at least the delay, and streams
/// sent together wait together (one hold, not one per stream in turn).
fn delay_holds_every_stream(mode: &str) {
    const DELAY_MS: f64 = 400.0;
    let dir = site();
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q", "--delay", "400ms"]);
    let out = Command::new("h2load")
        .args(["-n", "4", "-c", "1", "-m", "4", "-t", "1", &s.url("/index.html")])
        .output()
        .expect("h2load (nghttp2-client) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("4 succeeded, 0 failed"), "{mode}: {text}");
    // `time for request:  401.20ms  402.96ms  402.10ms ...`: min, max, mean.
    let ms = |v: &str| match v.strip_suffix("ms") {
        Some(ms) => ms.parse::<f64>().unwrap(),
        None => v.strip_suffix('s').unwrap().parse::<f64>().unwrap() * 1000.0,
    };
    let line = text.lines().find(|l| l.starts_with("time for request:")).unwrap_or_else(|| panic!("{text}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (min, max) = (ms(fields[3]), ms(fields[4]));
    assert!(min >= DELAY_MS, "{mode}: a stream answered after {min} ms, under the 400 ms delay: {text}");
    assert!(max < 3.0 * DELAY_MS, "{mode}: four streams sent together took {max} ms: held one by one? {text}");
}

/// A slow in-process handler's stream does not hold up its siblings on the same
/// connection where the mode has a pool for it: `hybrid` answers the handler's stream on
/// its workers while its loop sends the file. Elsewhere the handler runs where the
/// connection is served, so the file waits for it. Both are answered in every mode; and
/// in `hybrid` a stream the pool is late with gets 504.
fn a_slow_stream_and_its_sibling(mode: &str) {
    let dir = site();
    let mount = format!("/sleep={}", sleeper_handler().display());
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q", "--handler", &mount]);
    let order = client(&s, "slow-first");
    let want = if mode == "hybrid" { "3:200 1:200" } else { "1:200 3:200" };
    assert_eq!(order, want, "{mode}: the order the slow stream (1) and the file (3) ended");
    // The pool's bound on an answer (`--cgi-timeout`, as over HTTP/1.1): a stream it has
    // not answered in time gets 504, and the connection goes on.
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q", "--handler", &mount, "--cgi", "--cgi-timeout", "1s"]);
    let want = if mode == "hybrid" { "served 504" } else { "served 200" };
    let got = client(&s, "slow");
    assert!(got.starts_with(want), "{mode}: a 2.5 s handler under a 1 s pool bound: {got}");
}

/// Two scripts on one connection: a quick one is answered as soon as it is done, not when a
/// slow sibling started before it next writes. The loops wait on every running script's
/// pipes (`Session::script_watch`); so does the blocking driver, which starts both scripts
/// at once too. Before, only the first script's pipes were watched, so the quick answer
/// waited the 3 s of the slow one.
fn scripts_on_one_connection_do_not_wait_for_each_other(mode: &str) {
    let dir = site();
    let late = dir.path().join("cgi-bin").join("late");
    std::fs::write(&late, "#!/bin/sh\nsleep 3\nprintf 'Content-Type: text/plain\\r\\n\\r\\nlate\\n'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&late, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q", "--cgi"]);
    let got = client(&s, "scripts");
    let (order, gap) = got.split_once(" apart ").unwrap_or((&got, "0 s"));
    assert_eq!(order, "3:200 1:200", "{mode}: the order the quick (3) and the slow (1) script ended: {got}");
    let gap: f64 = gap.trim_end_matches(" s").parse().unwrap_or(0.0);
    assert!(gap >= 1.5, "{mode}: the quick script's answer waited for the slow one: {got}");
}

for_each_mode!(
    scripts_on_one_connection_do_not_wait_for_each_other,
    a_slow_stream_and_its_sibling,
    delay_holds_every_stream,
    max_requests_counts_streams,
    curl_sees_the_same_site,
    h2load_multiplexes,
    a_busy_connection_outlives_the_timeouts,
    attacks_meet_their_limits,
    without_the_flag_http1_only,
    shutdown_says_goaway
);

/// A handler that answers anything with 200 and 13 bytes: httpwg-cli's cases POST to `/`
/// and want 200 (a file answers POST with 405), with a body of at least 5 bytes (one case
/// shrinks the window to 3 and waits for the rest) that fits the first window (the
/// client never opens it).
const OK_HANDLER: &str = r#"#include "spidey_handler.h"
uint32_t spidey_handler_abi_version(void) { return SPIDEY_HANDLER_ABI_VERSION; }
int spidey_handle(const struct spidey_request *req, const struct spidey_response *res)
{
    (void)req;
    res->set_status(res->ctx, 200);
    return res->write(res->ctx, (const unsigned char *)"ok, answered\n", 13);
}
"#;

/// httpwg-cli (installed by scripts/test.sh): all 107 RFC 9113 cases, over h2c.
fn httpwg_passes_every_case(mode: &str) {
    if plaintext_only("httpwg-cli speaks h2c only") {
        return;
    }
    let Ok(bin) = which("httpwg") else {
        assert!(std::env::var_os("SPIDEY_REQUIRE_HTTPWG").is_none(), "httpwg-cli is not installed");
        eprintln!("skipped: httpwg-cli is not installed (cargo install httpwg-cli@0.2.5 --locked)");
        return;
    };
    let dir = site();
    let handler = format!("/={}", c_handler("ok", OK_HANDLER).display());
    let s = Spidey::start(mode, dir.path(), &["--http2", "-q", "--handler", &handler]);
    // Its default waits 250 ms for each frame: too little on a shared machine under a
    // test suite's load (seen: 104/107). No case waits out the timeout when the server
    // answers as it should, so a long one costs nothing.
    let address = format!("127.0.0.1:{}", s.port);
    let args = ["--frame-timeout", "5000", "--connect-timeout", "5000", "-a", &address];
    let out = Command::new(bin).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    let plain: String = strip_ansi(&text);
    let passed = plain.lines().find(|l| l.contains("Passed ")).unwrap_or("no summary line");
    assert!(passed.contains("Passed 107/107"), "{mode}: {passed}");
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo/bin"));
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).chain(home).map(|d| d.join(name)).find(|p| p.is_file()).ok_or(())
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

mod httpwg {
    #[test]
    fn event() {
        super::httpwg_passes_every_case("event");
    }
    #[test]
    fn uring() {
        super::httpwg_passes_every_case("uring");
    }
    #[test]
    fn pool() {
        super::httpwg_passes_every_case("pool");
    }
}
