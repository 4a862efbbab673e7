//! The file-server features in every mode: `--index`, `--fallback` (single-page
//! applications), `--error-page`, one file as the root, `--security-headers`,
//! `--basic-auth-file` (files made by `htpasswd -B` and `openssl passwd -6`) and
//! `--redirect-http`. Every page these flags name has a hostile name. Bad values: one
//! line, exit 2, before anything binds.

mod common;

use common::*;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

for_each_mode!(
    index_names_default_and_repeatable,
    spa_fallback_only_for_gets_of_nothing,
    error_pages_keep_their_status,
    a_single_file_is_served_at_root_and_its_name,
    security_headers_on_every_response,
    basic_auth_file_from_htpasswd_and_openssl,
    redirect_http_answers_308_to_https,
    no_listing_does_not_tell_a_directory_exists,
    a_single_file_root_serves_no_precompressed_sibling,
);

/// Markup, quotes, an ampersand, spaces and UTF-8: how every page here is named.
const HOSTILE: &str = "<i>\"dx' & é.html";
const SHELL: &[u8] = b"<div id=app>shell</div>\n";
const NOT_FOUND_PAGE: &[u8] = b"<h1>custom 404</h1>\n";

/// The common fixture plus directories with each kind of index, an app shell and error
/// pages, all under hostile names.
fn fixture() -> Fixture {
    let fx = Fixture::new();
    let w = |p: &str, body: &[u8]| {
        let path = fx.root().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    };
    w("htm/index.htm", b"htm index\n");
    w("both/index.html", b"html index\n");
    w("both/index.htm", b"htm index\n");
    w(&format!("custom/{HOSTILE}"), b"hostile index\n");
    w(&format!("app/{HOSTILE}"), SHELL);
    w(&format!("errors/{HOSTILE}"), NOT_FOUND_PAGE);
    w("errors/403 & co.txt", b"custom 403\n");
    w("errors/405.html", b"custom 405\n");
    fx
}

/// `path` inside ROOT as a request names it: every byte outside unreserved characters
/// percent-encoded.
fn url_path(path: &str) -> String {
    const SET: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'/').remove(b'.').remove(b'-').remove(b'_');
    percent_encoding::utf8_percent_encode(path, SET).to_string()
}

fn start(mode: &str, root: &Path, args: &[&str]) -> Spidey {
    Spidey::start(mode, root, &[&["--quiet"], args].concat())
}

/// One request on its own connection (`Connection: close`): the head and the body.
fn fetch(s: &Spidey, method: &str, path: &str, extra: &str) -> (String, Vec<u8>) {
    let mut c = s.connect();
    let request = format!("{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{extra}\r\n");
    c.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    let end = out.windows(4).position(|w| w == b"\r\n\r\n").map_or(out.len(), |i| i + 4);
    (String::from_utf8_lossy(&out[..end]).into_owned(), out[end..].to_vec())
}

fn index_names_default_and_repeatable(mode: &str) {
    let fx = fixture();
    let s = start(mode, &fx.root(), &[]);
    // path → body start: index.html first, then index.htm, then the listing.
    let defaults: &[(&str, &str)] =
        &[("/site/", "<h1>index</h1>"), ("/htm/", "htm index"), ("/both/", "html index"), ("/custom/", "<!DOCTYPE")];
    for (path, want) in defaults {
        let (head, body) = fetch(&s, "GET", path, "");
        assert_eq!(status_of(&head), 200, "{path}: {head}");
        assert!(String::from_utf8_lossy(&body).starts_with(want), "{path}: {body:?}");
        assert_eq!(head_field(&head, "content-type"), Some("text/html; charset=utf-8"), "{path}");
    }
    drop(s);
    let s = start(mode, &fx.root(), &["--index", HOSTILE, "--index", "index.htm"]);
    let named: &[(&str, &str)] =
        &[("/custom/", "hostile index"), ("/both/", "htm index"), ("/htm/", "htm index"), ("/site/", "<!DOCTYPE")];
    for (path, want) in named {
        let (head, body) = fetch(&s, "GET", path, "");
        assert_eq!(status_of(&head), 200, "{path}: {head}");
        assert!(String::from_utf8_lossy(&body).starts_with(want), "{path}: {body:?}");
    }
    // The listing of /site/ (no index among the names) names index.html as a plain file.
    assert!(String::from_utf8_lossy(&fetch(&s, "GET", "/site/", "").1).contains("index.html"));
}

fn spa_fallback_only_for_gets_of_nothing(mode: &str) {
    let fx = fixture();
    let page = format!("/app/{HOSTILE}");
    let lib = page_handler().to_str().unwrap();
    let s = start(
        mode,
        &fx.root(),
        &["--fallback", &page, "--cgi-interpreter", ".py=/usr/bin/python3", "--handler", &format!("/h={lib}")],
    );
    // method, path → status, whether the body is the shell
    let cases: &[(&str, &str, u16, bool)] = &[
        ("GET", "/", 200, false),
        ("GET", "/some/route", 200, true),
        ("GET", "/some/route?tab=2", 200, true),
        ("GET", "/nope/", 200, true),
        ("GET", "/caf%C3%A9/%3Cx%3E", 200, true),
        ("HEAD", "/some/route", 200, false),
        ("GET", "/hello.txt", 200, false),
        ("GET", "/list/", 200, false),
        ("POST", "/some/route", 404, false),
        ("DELETE", "/some/route", 404, false),
        ("GET", "/.git/config", 404, false),
        ("GET", "/.env", 404, false),
        ("GET", "/a/%2egit", 404, false),
        ("GET", "/.well-known/nothing", 404, false),
        ("GET", "/a/./b", 404, false),
        ("GET", "/%2e%2e/etc/passwd", 400, false),
        ("GET", "/missing.py", 404, false),
        ("GET", "/cgi-bin/missing", 404, false),
        ("GET", "/h/anything", 200, false),
        ("GET", "/out-file", 403, false),
    ];
    for (method, path, status, shell) in cases {
        let (head, body) = fetch(&s, method, path, "");
        assert_eq!(status_of(&head), *status, "{method} {path}: {head}");
        assert_eq!(body == SHELL, *shell, "{method} {path}: {body:?}");
        if *shell {
            assert_eq!(head_field(&head, "content-type"), Some("text/html; charset=utf-8"), "{path}");
        }
    }
    // HEAD says the shell's length; a validator of the shell gives 304.
    let (head, _) = fetch(&s, "HEAD", "/deep/link", "");
    assert_eq!(head_field(&head, "content-length"), Some(SHELL.len().to_string().as_str()), "{head}");
    let tag = head_field(&head, "etag").unwrap().to_string();
    assert_eq!(status_of(&fetch(&s, "GET", "/deep/link", &format!("If-None-Match: {tag}\r\n")).0), 304);
}

fn error_pages_keep_their_status(mode: &str) {
    let fx = fixture();
    let nf = format!("404=/errors/{HOSTILE}");
    let s = start(
        mode,
        &fx.root(),
        &["--error-page", &nf, "--error-page", "403=/errors/403 & co.txt", "--error-page", "405=/errors/405.html"],
    );
    // The 405 page goes missing after start: the built-in page stands in.
    std::fs::remove_file(fx.root().join("errors/405.html")).unwrap();
    // method, path → status, body start, content type
    let cases: &[(&str, &str, u16, &[u8], &str)] = &[
        ("GET", "/missing", 404, NOT_FOUND_PAGE, "text/html; charset=utf-8"),
        ("GET", "/.env", 404, NOT_FOUND_PAGE, "text/html; charset=utf-8"),
        ("GET", "/list/nothing/", 404, NOT_FOUND_PAGE, "text/html; charset=utf-8"),
        ("GET", "/out-file", 403, b"custom 403\n", "text/plain; charset=utf-8"),
        ("GET", "/fifo", 403, b"custom 403\n", "text/plain; charset=utf-8"),
        ("POST", "/hello.txt", 405, b"<!DOCTYPE html>", "text/html; charset=utf-8"),
        ("GET", "/%2e%2e/x", 400, b"<!DOCTYPE html>", "text/html; charset=utf-8"),
        ("GET", "/hello.txt", 200, HELLO.as_bytes(), "text/plain; charset=utf-8"),
    ];
    for (method, path, status, body_start, content_type) in cases {
        let (head, body) = fetch(&s, method, path, "");
        assert_eq!(status_of(&head), *status, "{method} {path}: {head}");
        assert!(body.starts_with(body_start), "{method} {path}: {:?}", String::from_utf8_lossy(&body));
        assert_eq!(head_field(&head, "content-type"), Some(*content_type), "{method} {path}: {head}");
        assert_eq!(head.matches("\r\nContent-Type:").count(), 1, "{head}");
    }
    assert_eq!(head_field(&fetch(&s, "POST", "/hello.txt", "").0, "allow"), Some("GET, HEAD"));
    // HEAD: the custom page's length, no body.
    let (head, body) = fetch(&s, "HEAD", "/missing", "");
    assert_eq!((status_of(&head), body.len()), (404, 0), "{head}");
    assert_eq!(head_field(&head, "content-length"), Some(NOT_FOUND_PAGE.len().to_string().as_str()));
}

fn a_single_file_is_served_at_root_and_its_name(mode: &str) {
    let fx = fixture();
    let name = "report <1> & é.pdf";
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(fx.root().join(name), &bytes).unwrap();
    let s = start(mode, &fx.root().join(name), &[]);
    let own = format!("/{}", url_path(name));
    // path → status, served whole
    let cases: &[(&str, u16, bool)] = &[
        ("/", 200, true),
        (&own, 200, true),
        (&format!("{own}/"), 404, false),
        ("/hello.txt", 404, false),
        ("/site/", 404, false),
        ("/index.html", 404, false),
        ("/..%2fhello.txt", 400, false),
        ("/../hello.txt", 400, false),
    ];
    for (path, status, whole) in cases {
        let (head, body) = fetch(&s, "GET", path, "");
        assert_eq!(status_of(&head), *status, "{path}: {head}");
        assert_eq!(body == bytes, *whole, "{path}");
        if *whole {
            assert_eq!(head_field(&head, "content-type"), Some("application/pdf"), "{path}");
        }
    }
    let (head, body) = fetch(&s, "GET", "/", "Range: bytes=10-19\r\n");
    assert_eq!((status_of(&head), body.as_slice()), (206, &bytes[10..20]), "{head}");
}

/// Third audit, L3: with `--no-listing`, `/list` (a directory without an index) answered
/// 301 where a path naming nothing answers 404, which told that it exists. Both are 404
/// now; a directory with an index still redirects to its slash.
fn no_listing_does_not_tell_a_directory_exists(mode: &str) {
    let fx = fixture();
    let s = start(mode, &fx.root(), &["--no-listing"]);
    // path -> status
    let cases = [("/list", 404), ("/list/", 404), ("/no-such-dir", 404), ("/list/sub%20dir", 404), ("/site", 301)];
    for (path, status) in cases {
        let (head, _) = fetch(&s, "GET", path, "");
        assert_eq!(status_of(&head), status, "{path}: {head}");
    }
}

/// Third audit (Info): a single-file root with `--precompressed` served the file's `.gz`
/// sibling, another file with any content. Only the named file is served now.
fn a_single_file_root_serves_no_precompressed_sibling(mode: &str) {
    let fx = fixture();
    let name = "notes <1>.txt";
    std::fs::write(fx.root().join(name), b"the file itself\n").unwrap();
    std::fs::write(fx.root().join(format!("{name}.gz")), b"not a gzip of it at all").unwrap();
    let s = start(mode, &fx.root().join(name), &["--precompressed"]);
    let (head, body) = fetch(&s, "GET", "/", "Accept-Encoding: gzip\r\n");
    assert_eq!(status_of(&head), 200, "{head}");
    assert_eq!(head_field(&head, "content-encoding"), None, "{head}");
    assert_eq!(body, b"the file itself\n");
}

fn security_headers_on_every_response(mode: &str) {
    let fx = fixture();
    let s = start(mode, &fx.root(), &["--security-headers"]);
    let paths = ["/hello.txt", "/list/", "/site", "/missing", "/out-file"];
    for path in paths {
        let (head, _) = fetch(&s, "GET", path, "");
        assert_eq!(head.matches("\r\nX-Frame-Options: DENY\r\n").count(), 1, "{path}: {head}");
        assert_eq!(head.matches("\r\nReferrer-Policy: no-referrer\r\n").count(), 1, "{path}: {head}");
        assert_eq!(head.matches("\r\nX-Content-Type-Options: nosniff\r\n").count(), 1, "{path}: {head}");
        let hsts = head_field(&head, "strict-transport-security");
        assert_eq!(hsts, s.tls.then_some("max-age=31536000"), "HSTS over TLS only: {path}: {head}");
    }
    drop(s);
    // A --header of the same name replaces the default; without the flag, none of them.
    let s = start(mode, &fx.root(), &["--security-headers", "--header", "Referrer-Policy: same-origin"]);
    let head = fetch(&s, "GET", "/hello.txt", "").0;
    assert_eq!(head.matches("Referrer-Policy").count(), 1, "{head}");
    assert_eq!(head_field(&head, "referrer-policy"), Some("same-origin"));
    drop(s);
    let s = start(mode, &fx.root(), &[]);
    let head = fetch(&s, "GET", "/hello.txt", "").0;
    assert!(head_field(&head, "x-frame-options").is_none() && head_field(&head, "referrer-policy").is_none());
}

/// `ann` with password `pa:ss é` from `htpasswd -B` and `bob` with `b0b` from
/// `openssl passwd -6`, in one htpasswd file with a comment and a blank line.
fn htpasswd_file(dir: &Path) -> std::path::PathBuf {
    let out = Command::new("htpasswd").args(["-nbB", "-C", "5", "ann", "pa:ss é"]).output();
    let out = out.expect("htpasswd (Debian apache2-utils) is needed: bash scripts/test.sh installs it");
    assert!(out.status.success());
    let ann = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(ann.starts_with("ann:$2y$05$"), "{ann}");
    let out = Command::new("openssl").args(["passwd", "-6", "b0b"]).output().unwrap();
    let bob = format!("bob:{}", String::from_utf8(out.stdout).unwrap().trim());
    let path = dir.join("users htpasswd");
    std::fs::write(&path, format!("# made by htpasswd and openssl\n{ann}\n\n{bob}\n")).unwrap();
    path
}

fn basic(user_pass: &str) -> String {
    use base64::Engine;
    format!("Authorization: Basic {}\r\n", base64::engine::general_purpose::STANDARD.encode(user_pass))
}

fn basic_auth_file_from_htpasswd_and_openssl(mode: &str) {
    let fx = fixture();
    let file = htpasswd_file(fx.outside.path());
    let s = start(mode, &fx.root(), &["--basic-auth-file", file.to_str().unwrap()]);
    // credentials → status
    let cases: &[(Option<&str>, u16)] = &[
        (Some("ann:pa:ss é"), 200),
        (Some("bob:b0b"), 200),
        (Some("ann:pa:ss"), 401),
        (Some("bob:pa:ss é"), 401),
        (Some("eve:b0b"), 401),
        (Some("#:x"), 401),
        (None, 401),
    ];
    for _ in 0..2 {
        for (credentials, status) in cases {
            let extra = credentials.map(basic).unwrap_or_default();
            let (head, body) = fetch(&s, "GET", "/hello.txt", &extra);
            assert_eq!(status_of(&head), *status, "{credentials:?}: {head}");
            assert_eq!(body == HELLO.as_bytes(), *status == 200);
            if *status == 401 {
                assert!(head_field(&head, "www-authenticate").unwrap().starts_with("Basic realm="), "{head}");
            }
        }
    }
}

/// The port of the redirect listener, from its startup line.
fn redirect_port(s: &mut Spidey) -> u16 {
    let line = s.log_lines(1).remove(0);
    let addr = line.strip_prefix("spidey redirecting http://").expect(&line).split(' ').next().unwrap();
    addr.rsplit(':').next().unwrap().parse().unwrap()
}

/// One raw request to `port` (plain TCP) and everything until the server closes.
fn plain(port: u16, request: &[u8]) -> String {
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    c.write_all(request).unwrap();
    read_to_close(&mut c)
}

fn redirect_http_answers_308_to_https(mode: &str) {
    let fx = fixture();
    let pki = tls::pki();
    let tls_args = ["--tls-cert", pki.cert.to_str().unwrap(), "--tls-key", pki.key.to_str().unwrap()];
    let mut s = start(mode, &fx.root(), &[&tls_args[..], &["--redirect-http", "0"]].concat());
    let port = redirect_port(&mut s);
    let tls_port = s.port;
    // request → status, Location
    let cases: Vec<(String, u16, Option<String>)> = vec![
        (
            "GET /a%20b/c?x=1&y=<z> HTTP/1.1\r\nHost: example.com:80\r\n\r\n".into(),
            308,
            Some(format!("https://example.com:{tls_port}/a%20b/c?x=1&y=<z>")),
        ),
        (
            "POST /form HTTP/1.1\r\nHost: a.example\r\nContent-Length: 3\r\n\r\nabc".into(),
            308,
            Some(format!("https://a.example:{tls_port}/form")),
        ),
        ("GET /x HTTP/1.0\r\n\r\n".into(), 308, Some(format!("https://127.0.0.1:{tls_port}/x"))),
        ("GET /x HTTP/1.1\r\nHost: [::1]\r\n\r\n".into(), 308, Some(format!("https://[::1]:{tls_port}/x"))),
        ("GET /x HTTP/1.1\r\nHost: evil.example/y\r\n\r\n".into(), 400, None),
        ("GET http://evil.example/ HTTP/1.1\r\nHost: a\r\n\r\n".into(), 400, None),
        ("GARBAGE\r\n\r\n".into(), 400, None),
        (format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(9000)), 400, None),
    ];
    for (request, status, location) in &cases {
        let reply = plain(port, request.as_bytes());
        assert_eq!(status_of(&reply), *status, "{request:?}: {reply}");
        assert_eq!(head_field(&reply, "location"), location.as_deref(), "{request:?}: {reply}");
    }
    // A real client follows it to the file over TLS.
    let out = s
        .curl()
        .args(["-sS", "-L", "--max-redirs", "1"])
        .arg(format!("http://127.0.0.1:{port}/hello.txt"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), HELLO, "{}", String::from_utf8_lossy(&out.stderr));
    // The listener goes with the server (in the forking modes, its own process too).
    s.stop();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(std::time::Instant::now() < deadline, "the redirect listener outlived the server");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bad_serving_flags_exit_2_with_one_line_before_binding() {
    let fx = fixture();
    let root = fx.root();
    let file = root.join("hello.txt");
    let dear = root.join("dear");
    std::fs::write(&dear, "ann:$2y$13$abcdefghijklmnopqrstuuKSDWTR7Kc7RdsgDj2JXx8oC6JXs3LSy\n").unwrap();
    let apr1 = root.join("apr1");
    std::fs::write(&apr1, "ann:$apr1$abc$0123456789abcdefghijkl\n").unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    // root, flags → what the one line names (every server asks for a busy --port: the
    // mistake must be reported, not the port)
    let cases: &[(&Path, Vec<&str>, &str)] = &[
        (&root, vec!["--index", "a/b.html"], "--index"),
        (&root, vec!["--index", ".hidden"], "--index"),
        (&root, vec!["--fallback", "index.html"], "--fallback"),
        (&root, vec!["--fallback", "/nothing.html"], "is not a file"),
        (&root, vec!["--fallback", "/site/"], "directory"),
        (&root, vec!["--fallback", "/../x.html"], "'..'"),
        (&root, vec!["--fallback", "/list/.hidden"], "dot-segment"),
        (&root, vec!["--error-page", "404"], "STATUS=/PATH"),
        (&root, vec!["--error-page", "200=/hello.txt"], "400 to 599"),
        (&root, vec!["--error-page", "404=/nothing.html"], "is not a file"),
        (&root, vec!["--error-page", "404=/hello.txt", "--error-page", "404=/page.html"], "twice"),
        (&file, vec!["--fallback", "/hello.txt"], "needs a directory"),
        (&file, vec!["--index", "x.html"], "needs a directory"),
        (&root, vec!["--basic-auth-file", "/nonexistent/htpasswd"], "cannot read"),
        (&root, vec!["--basic-auth-file", dear.to_str().unwrap()], "cost above 12"),
        (&root, vec!["--basic-auth-file", apr1.to_str().unwrap()], "line 1"),
        (&root, vec!["--basic-auth-file", "/dev/null"], "no user:HASH"),
        (&root, vec!["--redirect-http", "8081"], "needs --tls-cert"),
    ];
    for (root, flags, needle) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .arg("serve")
            .arg(root)
            .args(["--port", &busy_port])
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flags:?}: {stderr:?}");
        assert!(stderr.contains(needle), "{flags:?}: {stderr:?}");
    }
}
