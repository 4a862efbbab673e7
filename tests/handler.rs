//! In-process handlers (C and Rust, loaded from shared libraries) and artificial work
//! (--delay, --cpu-work), in every mode.

mod common;
use common::*;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A library that names an ABI version this Spidey does not speak.
const OLD_ABI_C: &str = "unsigned spidey_handler_abi_version(void) { return 999; }\nint spidey_handle(const void *q, const void *s) { return 0; }\n";

/// Builds the rust-page cdylib once with cargo, next to this test binary's target dir.
fn rust_lib() -> &'static PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        // This test binary is target/PROFILE/deps/handler-HASH: build the library with
        // the same profile, so it lands in target/PROFILE (under `cargo test --release`
        // a debug build would leave target/release without it, or with a stale one).
        let target = std::env::current_exe().unwrap().parent().unwrap().parent().unwrap().to_path_buf();
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "--quiet", "-p", "rust-page"]);
        if target.file_name().is_some_and(|profile| profile == "release") {
            build.arg("--release");
        }
        assert!(build.status().unwrap().success(), "cargo build -p rust-page failed");
        target.join("librust_page.so")
    })
}

fn start(mode: &str, fx: &Fixture) -> Spidey {
    let c = format!("/app={}", page_handler().display());
    let rs = format!("/rs={}", rust_lib().display());
    Spidey::start(mode, &fx.root(), &["--handler", &c, "--handler", &rs])
}

fn handlers_table(mode: &str) {
    let fx = Fixture::new();
    let s = start(mode, &fx);
    let cases: &[(&str, u16, usize)] = &[
        ("/app", 200, 102_400),
        ("/app/deep/path?x=1", 200, 102_400),
        ("/app?fail", 500, 0),
        ("/rs/page", 200, 102_400),
        ("/rs/page?fail", 500, 0),
        ("/rs/page?panic", 500, 0),
        ("/rs/after-panic", 200, 102_400),
        ("/rs/work?burn=1000", 200, "burned 1000 us\n".len()),
        ("/rs/work?burn=2000000", 400, 0),
        ("/app/work?burn=1000", 200, "burned 1000 us\n".len()),
        ("/app/work?burn=", 400, 0),
        ("/app/work?burn=1x", 400, 0),
        ("/app/work?burn=1000001", 400, 0),
        ("/app/work?burn=99999999999", 400, 0),
        ("/apple", 404, 0),
        ("/hello.txt", 200, HELLO.len()),
    ];
    for (path, status, len) in cases {
        let reply = s.get(path, &[]);
        assert_eq!(reply.status, *status, "{path}");
        if *status == 200 {
            assert_eq!(reply.body.len(), *len, "{path}");
        }
    }
    let reply = s.get("/app/x%3Cy", &[]);
    assert_eq!(reply.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(reply.text().contains("Dynamic page") && reply.text().contains("for /app/x%3Cy"));
}

fn handler_keeps_connection_with_small_body(mode: &str) {
    let fx = Fixture::new();
    let s = start(mode, &fx);
    let mut c = s.connect();
    use std::io::Write;
    c.write_all(
        b"POST /app HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .unwrap();
    let (head, body) = read_response(&mut c);
    assert_eq!((status_of(&head), body.len()), (200, 102_400));
    let (head, body) = read_response(&mut c);
    assert_eq!((status_of(&head), body.as_slice()), (200, HELLO.as_bytes()));
}

fn bad_handler_libraries_exit_2(mode: &str) {
    let fx = Fixture::new();
    let old = format!("/x={}", c_handler("old_abi", OLD_ABI_C).display());
    let cases =
        [(old.as_str(), "ABI version 999"), ("/x=/nonexistent/lib.so", "cannot load"), ("nope", "invalid handler")];
    for (flag, message) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .args(["serve", "--port", "0", "--mode", mode, "--handler", flag])
            .arg(fx.root())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(message), "{flag}: {stderr}");
    }
}

fn delay_holds_every_answer(mode: &str) {
    let fx = Fixture::new();
    let s = Spidey::start(mode, &fx.root(), &["--delay", "300ms"]);
    for path in ["/hello.txt", "/missing"] {
        let t = Instant::now();
        let _ = s.get(path, &[]);
        assert!(t.elapsed() >= Duration::from_millis(300), "{path} answered after {:?}", t.elapsed());
    }
}

/// CPU time (user + system, in clock ticks) of the server and its children (fork and
/// prefork run requests in children): live children's own, reaped ones' via cutime/cstime.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = |p: &str| -> Option<(u32, Vec<u64>)> {
        let text = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let fields: Vec<&str> = text.rsplit(')').next()?.split_whitespace().collect();
        Some((fields[1].parse().ok()?, fields[11..15].iter().map(|f| f.parse().unwrap_or(0)).collect()))
    };
    let (_, own) = stat(&pid.to_string()).unwrap();
    let children: u64 = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| stat(e.ok()?.file_name().to_str()?))
        .filter(|(ppid, _)| *ppid == pid)
        .map(|(_, t)| t[0] + t[1])
        .sum();
    own.iter().sum::<u64>() + children
}

fn cpu_work_burns_cpu(mode: &str) {
    let fx = Fixture::new();
    let s = Spidey::start(mode, &fx.root(), &["--cpu-work", "100ms"]);
    let before = cpu_ticks(s.child.id());
    for _ in 0..5 {
        assert_eq!(s.get("/hello.txt", &[]).status, 200);
    }
    assert_burnt_500ms(s.child.id(), before, "--cpu-work");
}

/// Waits for the server `pid` to show 5 × 100 ms of CPU since `before`: 50 ticks at 100 Hz,
/// at least 40 of which must show (tick sampling is coarse, and a fork child's ticks move
/// to cutime only once it is reaped, so wait for that).
fn assert_burnt_500ms(pid: u32, before: u64, what: &str) {
    let mut burnt = 0;
    for _ in 0..20 {
        burnt = cpu_ticks(pid) - before;
        if burnt >= 40 {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("only {burnt} ticks of CPU for 5 × 100 ms of {what}");
}

/// `?burn=MICROS` on the example handlers (C and Rust) really spins on the CPU in every mode:
/// it is the CPU-bound request of the mixed-load experiments, so a no-op would make them lie.
fn handler_burn_query_burns_cpu(mode: &str) {
    let fx = Fixture::new();
    let s = start(mode, &fx);
    let before = cpu_ticks(s.child.id());
    for prefix in ["/rs", "/app", "/rs", "/app", "/rs"] {
        let reply = s.get(&format!("{prefix}/work?burn=100000"), &[]);
        assert_eq!((reply.status, reply.text()), (200, "burned 100000 us\n".to_string()));
    }
    assert_burnt_500ms(s.child.id(), before, "?burn");
}

/// A handler that adds the header field its query names, then writes `HANDLER-BODY`.
const BAD_FIELDS_C: &str = r#"
#include "spidey_handler.h"
#include <string.h>
uint32_t spidey_handler_abi_version(void) { return SPIDEY_HANDLER_ABI_VERSION; }
static int is(const struct spidey_str *q, const char *s) { return q->len == strlen(s) && memcmp(q->ptr, s, q->len) == 0; }
static void add(const struct spidey_response *res, const char *n, const char *v) { res->add_header(res->ctx, n, strlen(n), v, strlen(v)); }
int spidey_handle(const struct spidey_request *req, const struct spidey_response *res) {
    const struct spidey_str *q = &req->query;
    if (is(q, "tab-in-name")) add(res, "Content-Length\t", "5");
    else if (is(q, "paren-in-name")) add(res, "X(A)", "v");
    else if (is(q, "slash-in-name")) add(res, "X/A", "v");
    else if (is(q, "quote-in-name")) add(res, "X\"A", "v");
    else if (is(q, "del-in-name")) add(res, "X\177A", "v");
    else if (is(q, "soh-in-value")) add(res, "X-A", "a\001b");
    else if (is(q, "esc-in-value")) add(res, "X-A", "\033[31m");
    else if (is(q, "del-in-value")) add(res, "X-A", "a\177b");
    else if (is(q, "tab-in-value")) add(res, "X-Ok", "a\tb");
    else if (is(q, "obs-text-in-value")) add(res, "X-Ok", "caf\303\251");
    res->write(res->ctx, (const unsigned char *)"HANDLER-BODY", 12);
    return 0;
}
"#;

/// A handler whose initialiser starts a thread when the library is loaded.
const THREADS_C: &str = r#"
#include "spidey_handler.h"
#include <pthread.h>
#include <unistd.h>
static void *idle(void *arg) { (void)arg; for (;;) pause(); return 0; }
__attribute__((constructor)) static void start_thread(void) { pthread_t t; pthread_create(&t, 0, idle, 0); }
uint32_t spidey_handler_abi_version(void) { return SPIDEY_HANDLER_ABI_VERSION; }
int spidey_handle(const struct spidey_request *req, const struct spidey_response *res) {
    (void)req;
    res->write(res->ctx, (const unsigned char *)"threaded", 8);
    return 0;
}
"#;

/// The mount is chosen on the decoded, normalised path that static files and CGI are found
/// by: no spelling of `/app/...` reaches the file `ROOT/app/secret.txt` past the handler.
fn handler_mounts_match_the_decoded_path(mode: &str) {
    let fx = Fixture::new();
    std::fs::create_dir(fx.root().join("app")).unwrap();
    std::fs::write(fx.root().join("app/secret.txt"), b"APP SECRET").unwrap();
    let s = start(mode, &fx);
    let targets = [
        "/app/secret.txt",
        "/%61pp/secret.txt",
        "//app/secret.txt",
        "/app%2fsecret.txt",
        "/./app/secret.txt",
        "/%61pp",
    ];
    for target in targets {
        let r = s.raw(format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
        assert_eq!(status_of(&r), 200, "{target}: {}", &r[..r.len().min(300)]);
        assert!(r.contains("Dynamic page") && !r.contains("APP SECRET"), "{target} bypassed the handler");
    }
}

/// A handler's field names must be tokens and its values free of control bytes (HTAB
/// aside): otherwise the response is refused with 500, never sent with the field.
fn handler_fields_must_be_tokens_without_controls(mode: &str) {
    let fx = Fixture::new();
    let mount = format!("/bad={}", c_handler("bad_fields", BAD_FIELDS_C).display());
    let s = Spidey::start(mode, &fx.root(), &["--quiet", "--handler", &mount]);
    let refused = [
        "tab-in-name",
        "paren-in-name",
        "slash-in-name",
        "quote-in-name",
        "del-in-name",
        "soh-in-value",
        "esc-in-value",
        "del-in-value",
    ];
    for query in refused {
        let r = s.raw(format!("GET /bad?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
        assert_eq!(status_of(&r), 500, "{query}: {r:?}");
        assert!(!r.contains("HANDLER-BODY") && !r.contains("X-A") && !r.contains("Content-Length\t"), "{query}: {r:?}");
    }
    for (query, field) in [("tab-in-value", "X-Ok: a\tb\r\n"), ("obs-text-in-value", "X-Ok: caf\u{e9}\r\n")] {
        let r = s.raw(format!("GET /bad?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
        assert_eq!(status_of(&r), 200, "{query}: {r:?}");
        assert!(r.contains(field) && r.ends_with("HANDLER-BODY"), "{query}: {r:?}");
    }
}

/// fork(2) is sound only in a single-threaded process. A handler library whose initialiser
/// starts a thread makes `fork` and `prefork` refuse to start (a clear error, non-zero
/// exit); the other modes never fork and serve it.
fn forking_modes_refuse_a_process_with_threads(mode: &str) {
    let fx = Fixture::new();
    let mount = format!("/t={}", c_handler("threads", THREADS_C).display());
    if matches!(mode, "fork" | "prefork") {
        let mut child = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .args(["serve", "--port", "0", "--quiet", "--mode", mode, "--handler", &mount])
            .arg(fx.root())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_timeout(&mut child, Duration::from_secs(10));
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        let status = status.unwrap_or_else(|| panic!("{mode} ran with a second thread; stderr: {stderr}"));
        assert!(!status.success() && stderr.contains("thread"), "{status}: {stderr}");
    } else {
        let s = Spidey::start(mode, &fx.root(), &["--quiet", "--handler", &mount]);
        let r = s.get("/t", &[]);
        assert_eq!((r.status, r.text().as_str()), (200, "threaded"));
    }
}

for_each_mode!(
    handler_mounts_match_the_decoded_path,
    handler_fields_must_be_tokens_without_controls,
    forking_modes_refuse_a_process_with_threads,
    handlers_table,
    handler_keeps_connection_with_small_body,
    bad_handler_libraries_exit_2,
    delay_holds_every_answer,
    cpu_work_burns_cpu,
    handler_burn_query_burns_cpu,
);
