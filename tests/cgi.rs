//! CGI/1.1 scripts with real interpreters (sh, python3, php-cgi), in every mode.

mod common;
use common::*;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

fn script(root: &Path, rel: &str, body: &str, mode: u32) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The fixture plus scripts: an env dumper, a body echo, fds listing, bad outputs, ...
fn cgi_fixture() -> Fixture {
    let fx = Fixture::new();
    let root = fx.root();
    let r = &root;
    script(
        r,
        "cgi-bin/env.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nenv | sort\necho \"ARGC=$#\"\necho \"PWD=$(pwd)\"\n",
        0o755,
    );
    script(r, "cgi-bin/echo.sh", "#!/bin/sh\nprintf 'Status: 201 Created\\nContent-Type: text/plain\\nX-Len: %s\\n\\n' \"$CONTENT_LENGTH\"\ncat\n", 0o755);
    script(
        r,
        "cgi-bin/fds.sh",
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nreadlink /proc/$$/fd/3\nexec ls /proc/self/fd\n",
        0o755,
    );
    script(r, "cgi-bin/noexec.sh", "#!/bin/sh\necho secret\n", 0o644);
    script(r, "cgi-bin/garbage.sh", "#!/bin/sh\necho 'this is not a header block'\necho\n", 0o755);
    script(r, "cgi-bin/inject.sh", "#!/bin/sh\nprintf 'Content-Type: text/plain\\rSet-Cookie: evil=1\\n\\nx'\n", 0o755);
    script(r, "cgi-bin/silent.sh", "#!/bin/sh\nexit 0\n", 0o755);
    script(r, "cgi-bin/slow.sh", "#!/bin/sh\necho $$ > \"$DOCUMENT_ROOT/slow.pid\"\nsleep 30\n", 0o755);
    script(r, "cgi-bin/forever.sh", "#!/bin/sh\necho $$ > \"$DOCUMENT_ROOT/forever.pid\"\nprintf 'Content-Type: text/plain\\n\\n'\nwhile true; do echo tick; sleep 0.05; done\n", 0o755);
    script(r, "cgi-bin/local.sh", "#!/bin/sh\nprintf 'Location: /hello.txt\\n\\n'\n", 0o755);
    script(r, "cgi-bin/loop.sh", "#!/bin/sh\nprintf 'Location: /cgi-bin/loop.sh\\n\\n'\n", 0o755);
    script(r, "cgi-bin/away.sh", "#!/bin/sh\nprintf 'Location: http://example.com/x\\n\\n'\n", 0o755);
    script(r, "cgi-bin/hello.py", "#!/usr/bin/env python3\nimport os\nprint('Content-Type: text/plain')\nprint()\nprint('python says', os.environ['QUERY_STRING'])\n", 0o755);
    script(r, "tools/page.cgi", "#!/bin/sh\nprintf 'Content-Type: text/html\\n\\n<p>cgi anywhere</p>'\n", 0o755);
    script(r, "tools/plain.cgi", "#!/bin/sh\necho source\n", 0o644);
    script(r, "php/info.php", "<?php header('X-Php: yes'); echo 'php ', $_GET['q'] ?? '-', ' ', $_SERVER['REQUEST_METHOD'], ' ', file_get_contents('php://input');\n", 0o644);
    fx
}

const PHP: &[&str] = &["--cgi", "--cgi-interpreter", ".php=/usr/bin/php-cgi", "--cgi-timeout", "2s"];

fn start(mode: &str, fx: &Fixture) -> Spidey {
    Spidey::start(mode, &fx.root(), PHP)
}

/// Reads one chunked-or-length response from a kept-alive stream: (head, decoded body).
fn read_framed(s: &mut common::Conn) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(s.read_retry(&mut byte).unwrap(), 1, "EOF in head: {:?}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    if head_field(&head, "transfer-encoding") != Some("chunked") {
        let len = head_field(&head, "content-length").map_or(0, |v| v.parse().unwrap());
        let mut body = vec![0; len];
        s.read_exact(&mut body).unwrap();
        return (head, body);
    }
    let mut body = Vec::new();
    loop {
        let mut line = Vec::new();
        while !line.ends_with(b"\r\n") {
            s.read_exact(&mut byte).unwrap();
            line.push(byte[0]);
        }
        let size = usize::from_str_radix(std::str::from_utf8(&line).unwrap().trim(), 16).unwrap();
        let mut chunk = vec![0; size + 2];
        s.read_exact(&mut chunk).unwrap();
        if size == 0 {
            return (head, body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

fn gone(pid_file: &Path) -> bool {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    // Neither running nor a zombie: the process entry is gone.
    (0..100).any(|_| {
        let alive = Path::new(&format!("/proc/{}", pid.trim())).exists();
        if alive {
            std::thread::sleep(Duration::from_millis(50));
        }
        !alive
    })
}

fn wait_for(path: &Path) {
    for _ in 0..200 {
        if path.exists() && !std::fs::read_to_string(path).unwrap().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{} never appeared", path.display());
}

fn statuses_table(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    let cases: &[(&str, u16, &str)] = &[
        ("/cgi-bin/env.sh", 200, "GATEWAY_INTERFACE=CGI/1.1"),
        ("/cgi-bin/hello.py?x=1", 200, "python says x=1"),
        ("/php/info.php?q=42", 200, "php 42 GET"),
        ("/tools/page.cgi", 200, "<p>cgi anywhere</p>"),
        ("/tools/plain.cgi", 403, ""),
        ("/cgi-bin/noexec.sh", 403, ""),
        ("/cgi-bin/garbage.sh", 502, ""),
        ("/cgi-bin/inject.sh", 502, ""),
        ("/cgi-bin/silent.sh", 502, ""),
        ("/cgi-bin/local.sh", 200, HELLO),
        ("/cgi-bin/loop.sh", 502, ""),
        ("/cgi-bin/away.sh", 302, ""),
        ("/cgi-bin/missing.sh", 404, ""),
    ];
    for (path, status, contains) in cases {
        let reply = s.get(path, &[]);
        assert_eq!(reply.status, *status, "{path}: {}", reply.text());
        assert!(reply.text().contains(contains), "{path}: {:?}", reply.text());
        if *status == 200 || *status == 502 {
            assert!(!reply.text().contains("Set-Cookie"), "{path}");
        }
    }
    assert_eq!(s.get("/cgi-bin/away.sh", &[]).header("location"), Some("http://example.com/x"));
    // Traversal into an interpreter (Apache CVE-2021-41773), sent raw so no client normalises it.
    for path in [
        "/cgi-bin/.%2e/.%2e/.%2e/.%2e/bin/sh",
        "/cgi-bin/%2e%2e/%2e%2e/%2e%2e/bin/sh",
        "/cgi-bin/..%2f..%2f..%2fbin/sh",
    ] {
        let out = s.raw(format!("GET {path}?-s HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
        assert_eq!(status_of(&out), 400, "{path}: {out}");
    }
    assert_eq!(s.get("/php/info.php", &[]).header("x-php"), Some("yes"));
}

fn meta_variables(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    let headers = [("Proxy", "http://evil:1"), ("X-Thing", "a"), ("X_Sneaky", "b"), ("Content-Type", "text/x")];
    let reply = s.get("/cgi-bin/env.sh/extra/p%20i?a=1&-s", &headers);
    let text = reply.text();
    let root = fx.root().canonicalize().unwrap();
    let root = root.display();
    let want = [
        "REQUEST_METHOD=GET".to_string(),
        "SCRIPT_NAME=/cgi-bin/env.sh".into(),
        format!("SCRIPT_FILENAME={root}/cgi-bin/env.sh"),
        "PATH_INFO=/extra/p i".into(),
        format!("PATH_TRANSLATED={root}/extra/p i"),
        "QUERY_STRING=a=1&-s".into(),
        "REQUEST_URI=/cgi-bin/env.sh/extra/p%20i?a=1&-s".into(),
        "REMOTE_ADDR=127.0.0.1".into(),
        "SERVER_PROTOCOL=HTTP/1.1".into(),
        format!("SERVER_PORT={}", s.port),
        "SERVER_NAME=127.0.0.1".into(),
        "REDIRECT_STATUS=200".into(),
        "HTTP_X_THING=a".into(),
        "CONTENT_TYPE=text/x".into(),
        "PATH=/usr/local/bin:/usr/bin:/bin".into(),
        "ARGC=0".into(),
        format!("PWD={root}/cgi-bin"),
    ];
    for w in &want {
        assert!(text.lines().any(|l| l == w), "missing {w:?} in:\n{text}");
    }
    for absent in ["HTTP_PROXY=", "HTTP_X_SNEAKY", "X_SNEAKY", "HOME=", "CARGO", "RUST"] {
        assert!(!text.lines().any(|l| l.starts_with(absent)), "{absent} leaked:\n{text}");
    }
    assert!(text.lines().any(|l| l.starts_with("REMOTE_PORT=")), "{text}");
}

/// A script gets fds 0, 1 and 2, and its own file (read-only) at 3, which it runs from.
fn only_std_fds_and_the_script(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    // ls itself opens one fd for the directory listing: 0 1 2 3 and that one.
    let reply = s.get("/cgi-bin/fds.sh", &[]);
    let text = reply.text();
    let (fd3, rest) = text.split_once('\n').unwrap_or_default();
    assert!(fd3.ends_with("/cgi-bin/fds.sh"), "fd 3 of the script: {text}");
    let fds: Vec<&str> = rest.split_whitespace().collect();
    assert_eq!(fds.len(), 5, "fds seen by the script: {fds:?}");
    assert_eq!(&fds[..4], ["0", "1", "2", "3"]);
}

fn post_bodies_reach_stdin(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    let big: String = "0123456789abcdef".repeat(20_000); // 320 KB: more than a pipe holds
    let mut c = s.connect();
    let req = format!("POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{big}", big.len());
    c.write_all(req.as_bytes()).unwrap();
    let (head, body) = read_framed(&mut c);
    assert!(head.starts_with("HTTP/1.1 201 Created"), "{head}");
    assert_eq!(head_field(&head, "x-len"), Some(big.len().to_string().as_str()));
    assert_eq!(body, big.as_bytes());
    // Same connection: chunked request body, then a pipelined GET.
    let req = "POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    c.write_all(req.as_bytes()).unwrap();
    let (head, body) = read_framed(&mut c);
    assert_eq!((status_of(&head), head_field(&head, "x-len"), body.as_slice()), (201, Some("11"), &b"hello world"[..]));
    let (head, body) = read_framed(&mut c);
    assert_eq!((status_of(&head), body.as_slice()), (200, HELLO.as_bytes()));
    // php-cgi reads the POST body too.
    c.write_all(b"POST /php/info.php?q=p HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody").unwrap();
    let (head, body) = read_framed(&mut c);
    assert_eq!((status_of(&head), String::from_utf8_lossy(&body).as_ref()), (200, "php p POST body"));
}

fn expect_100_continue(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    let mut c = s.connect();
    c.write_all(b"POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
        .unwrap();
    let mut interim = [0u8; 25];
    c.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.write_all(b"abc").unwrap();
    let (head, body) = read_framed(&mut c);
    assert_eq!((status_of(&head), body.as_slice()), (201, &b"abc"[..]));
}

/// An HTTP/1.0 client never gets `100 Continue` (RFC 9110 §10.1.1: a server MUST ignore
/// `Expect: 100-continue` from one): the body it sends after a pause is answered directly.
fn no_100_continue_for_http10(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    let mut c = s.connect();
    c.write_all(b"POST /cgi-bin/echo.sh HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n").unwrap();
    // Long enough for the server to have the head and start on the script's body.
    std::thread::sleep(std::time::Duration::from_millis(300));
    c.write_all(b"abc").unwrap();
    let out = read_to_close(&mut c);
    assert!(out.starts_with("HTTP/1.1 201"), "{out}");
    assert!(!out.contains("100 Continue"), "{out}");
    assert!(out.ends_with("abc"), "{out}");
}

fn body_over_max_body_is_413(mode: &str) {
    let fx = cgi_fixture();
    let s = Spidey::start(mode, &fx.root(), &["--cgi", "--max-body", "10"]);
    let cases: [&[u8]; 2] = [
        b"POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n01234567890",
        b"POST /cgi-bin/echo.sh HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nb\r\n01234567890\r\n0\r\n\r\n",
    ];
    for req in cases {
        assert_eq!(status_of(&s.raw(req)), 413, "{}", String::from_utf8_lossy(req));
    }
}

fn http10_is_close_delimited(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    let out = s.raw(b"GET /cgi-bin/hello.py?v=10 HTTP/1.0\r\n\r\n");
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(!out.contains("Transfer-Encoding"), "{out}");
    assert!(out.ends_with("python says v=10\n"), "{out}");
    let head = s.raw(b"HEAD /cgi-bin/hello.py HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200") && head.ends_with("\r\n\r\n"), "{head}");
}

fn timeout_kills_script_504(mode: &str) {
    let fx = cgi_fixture();
    let s = Spidey::start(mode, &fx.root(), &["--cgi", "--cgi-timeout", "1s"]);
    let reply = s.get("/cgi-bin/slow.sh", &[]);
    assert_eq!(reply.status, 504);
    assert!(gone(&fx.root().join("slow.pid")), "the timed-out script (and its sleep) lingers");
}

fn disconnect_kills_script(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    let mut c = s.connect();
    c.write_all(b"GET /cgi-bin/forever.sh HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut first = [0u8; 64];
    let _ = c.read_retry(&mut first).unwrap();
    wait_for(&fx.root().join("forever.pid"));
    drop(c);
    assert!(gone(&fx.root().join("forever.pid")), "the script of a departed client lingers");
    assert_eq!(s.get("/hello.txt", &[]).status, 200);
}

/// CGI is opt-in: without --cgi a script is a file like any other, its bytes served and
/// never run (the regression: CGI ran by default, so serving a downloads folder ran
/// whatever landed in it).
fn scripts_are_files_without_the_cgi_flag(mode: &str) {
    let fx = cgi_fixture();
    let s = Spidey::start(mode, &fx.root(), &[]);
    // (path, a line of its source)
    let cases = [
        ("/cgi-bin/env.sh", "#!/bin/sh"),
        ("/cgi-bin/forever.sh", "forever.pid"),
        ("/tools/page.cgi", "cgi anywhere"),
        ("/cgi-bin/noexec.sh", "echo secret"),
        ("/php/info.php", "<?php"),
    ];
    for (path, source) in cases {
        let reply = s.get(path, &[]);
        assert_eq!(reply.status, 200, "{path}");
        assert!(reply.text().contains(source), "{path} served as its source: {}", reply.text());
    }
    assert!(!fx.root().join("forever.pid").exists(), "a script ran without --cgi");
}

/// With CGI on, a page named by `--index`, `--fallback` or `--error-page` goes through the
/// same script-or-file decision as its own address: a script page runs (an error page with
/// the error's status, whatever its `Status:` says), and none is ever served as its source.
fn pages_that_are_scripts_run_and_are_never_served_as_source(mode: &str) {
    let fx = cgi_fixture();
    let r = fx.root();
    script(
        &r,
        "front/index.php",
        "<?php echo 'front ', $_SERVER['SCRIPT_NAME'], ' ', $_SERVER['REQUEST_URI'];\n",
        0o644,
    );
    script(
        &r,
        "php/router.php",
        "<?php echo 'router ', $_SERVER['SCRIPT_NAME'], ' ', $_SERVER['REQUEST_URI'];\n",
        0o644,
    );
    script(
        &r,
        "cgi-bin/err.sh",
        "#!/bin/sh\nprintf 'Status: 200 OK\\nContent-Type: text/plain\\n\\nerror page for %s' \"$REQUEST_URI\"\n",
        0o755,
    );
    let pages = [
        "--index",
        "index.php",
        "--fallback",
        "/php/router.php",
        "--error-page",
        "404=/cgi-bin/err.sh",
        "--error-page",
        "403=/cgi-bin/noexec.sh",
    ];
    let s = Spidey::start(mode, &r, &[PHP, &pages].concat());
    // (path, status, what the body says)
    let cases = [
        ("/front/", 200, "front /front/index.php /front/"),
        ("/front/?a=%3Cb%3E", 200, "front /front/index.php /front/?a=%3Cb%3E"),
        ("/users/42?x=1", 200, "router /php/router.php /users/42?x=1"),
        ("/no/such/%22page%22", 200, "router /php/router.php /no/such/%22page%22"),
        ("/cgi-bin/missing.sh", 404, "error page for /cgi-bin/missing.sh"),
        ("/tools/missing.cgi", 404, "error page for /tools/missing.cgi"),
        ("/cgi-bin/noexec.sh", 403, "may not be served"),
    ];
    for (path, status, says) in cases {
        let reply = s.get(path, &[]);
        let text = reply.text();
        assert_eq!(reply.status, status, "{path}: {text}");
        assert!(text.contains(says), "{path}: {text}");
        for source in ["<?php", "#!/bin/sh", "echo secret"] {
            assert!(!text.contains(source), "{path} served a script's source: {text}");
        }
    }
    // An error-page script runs for GET and HEAD only: a POST to nothing keeps the built-in
    // 404, and never the script's source.
    let reply =
        s.raw(b"POST /cgi-bin/missing.sh HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&reply), 404, "{reply}");
    assert!(!reply.contains("error page for") && !reply.contains("#!/bin/sh"), "{reply}");
}

fn no_zombies_after_many(mode: &str) {
    let fx = cgi_fixture();
    let mut s = start(mode, &fx);
    for path in ["/cgi-bin/env.sh", "/cgi-bin/garbage.sh", "/cgi-bin/local.sh", "/php/info.php"].repeat(5) {
        let _ = s.get(path, &[]);
    }
    std::thread::sleep(Duration::from_millis(200));
    let zombies = std::process::Command::new("ps").args(["-eo", "ppid=,stat="]).output().unwrap();
    let server = s.child.id().to_string();
    let text = String::from_utf8_lossy(&zombies.stdout);
    let ours: Vec<&str> = text.lines().filter(|l| l.split_whitespace().next() == Some(server.as_str())).collect();
    assert!(ours.iter().all(|l| !l.contains('Z')), "zombies: {ours:?}");
    assert!(s.stop().success());
}

/// A script's local redirect (`Location: /path` alone) under `--basic-auth`: the internal
/// GET carries the client's credentials, so an authenticated client gets the target (it
/// was 401 before: the internal GET had no `Authorization`); a client without them never
/// gets as far as the script.
fn local_redirect_under_basic_auth_keeps_the_credentials(mode: &str) {
    use base64::Engine as _;
    let fx = cgi_fixture();
    // 1000 rounds: a debug build checks it quickly.
    let hash = sha_crypt::sha512_simple("secret", &sha_crypt::Sha512Params::new(1000).unwrap()).unwrap();
    let s = Spidey::start(mode, &fx.root(), &["--cgi", "--basic-auth", &format!("ann:{hash}")]);
    let good = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("ann:secret"));
    // (credentials, path) → (status, body)
    let cases: [(&str, &str, u16, &str); 4] = [
        (&good, "/cgi-bin/local.sh", 200, HELLO),
        (&good, "/hello.txt", 200, HELLO),
        ("", "/cgi-bin/local.sh", 401, ""),
        ("Basic YW5uOndyb25n", "/cgi-bin/local.sh", 401, ""),
    ];
    for (credentials, path, status, body) in cases {
        let headers: Vec<(&str, &str)> =
            [("Authorization", credentials)].into_iter().filter(|h| !h.1.is_empty()).collect();
        let reply = s.get(path, &headers);
        assert_eq!(reply.status, status, "{path} {credentials:?}: {}", reply.text());
        assert!(reply.text().contains(body), "{path} {credentials:?}: {}", reply.text());
    }
}

/// For an absolute-form target the Host field is ignored (RFC 9112 §3.2.2): `HTTP_HOST`
/// is the target's authority, as `SERVER_NAME` is. Before, `SERVER_NAME` came from the
/// target and `HTTP_HOST` from the field, and they disagreed.
fn absolute_form_host_is_http_host_too(mode: &str) {
    let fx = cgi_fixture();
    let s = start(mode, &fx);
    // (request target, Host field) → (SERVER_NAME, HTTP_HOST)
    let cases = [
        ("http://a.example:8080/cgi-bin/env.sh", "b.example", "a.example", "a.example:8080"),
        ("/cgi-bin/env.sh", "b.example:81", "b.example", "b.example:81"),
    ];
    for (target, host, server_name, http_host) in cases {
        let mut c = s.connect();
        c.write_all(format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes()).unwrap();
        let (head, body) = read_framed(&mut c);
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status_of(&head), 200, "{target}: {head}");
        let vars: Vec<&str> =
            text.lines().filter(|l| l.starts_with("SERVER_NAME=") || l.starts_with("HTTP_HOST=")).collect();
        assert_eq!(vars, [format!("HTTP_HOST={http_host}"), format!("SERVER_NAME={server_name}")], "{target}:\n{text}");
    }
}

for_each_mode!(
    local_redirect_under_basic_auth_keeps_the_credentials,
    absolute_form_host_is_http_host_too,
    statuses_table,
    meta_variables,
    only_std_fds_and_the_script,
    post_bodies_reach_stdin,
    expect_100_continue,
    no_100_continue_for_http10,
    body_over_max_body_is_413,
    http10_is_close_delimited,
    timeout_kills_script_504,
    disconnect_kills_script,
    scripts_are_files_without_the_cgi_flag,
    pages_that_are_scripts_run_and_are_never_served_as_source,
    no_zombies_after_many,
);
