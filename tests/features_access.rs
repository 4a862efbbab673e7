//! Headers and access in every mode: `--header`, `--cache-control`, `--cors`,
//! `--basic-auth` (over static files, listings, CGI and handlers), and JSON listings
//! chosen by `Accept` in nginx autoindex's schema. Bad flag values: one line, exit 2.

mod common;

use base64::Engine;
use common::*;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

for_each_mode!(
    custom_headers_on_every_response,
    cache_control_on_static_files_only,
    cors_echoes_listed_origins_and_answers_preflight,
    cors_any_origin,
    basic_auth_guards_files_listings_scripts_and_handlers,
    long_password_costs_no_more_than_a_short_one,
    failed_guesses_are_limited_per_user_and_address,
    simultaneous_wrong_guesses_are_hashed_at_most_the_limit,
    a_logged_in_user_keeps_getting_in_while_the_address_is_limited,
    a_wrong_guess_does_not_stall_a_logged_in_client,
    user_drops_root_once_bound,
    listing_json_by_accept_in_nginx_schema,
);

fn start(mode: &str, fx: &Fixture, args: &[&str]) -> Spidey {
    Spidey::start(mode, &fx.root(), &[&["--quiet", "--cgi"], args].concat())
}

/// One raw request on its own connection: the head and the body.
fn fetch(s: &Spidey, request: &str) -> (String, Vec<u8>) {
    let mut c = s.connect();
    c.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    let end = out.windows(4).position(|w| w == b"\r\n\r\n").map_or(out.len(), |i| i + 4);
    (String::from_utf8_lossy(&out[..end]).into_owned(), out[end..].to_vec())
}

fn get(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{extra}\r\n")
}

/// `hi.cgi`, a script that prints `script ran`.
fn with_script(fx: &Fixture) {
    let script = fx.root().join("hi.cgi");
    std::fs::write(&script, "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nscript ran'\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn custom_headers_on_every_response(mode: &str) {
    let fx = Fixture::new();
    with_script(&fx);
    let s = start(
        mode,
        &fx,
        &["--header", "X-Frame-Options: DENY", "--header", "Permissions-Policy:  camera=(), geolocation=() "],
    );
    let tag = head_field(&fetch(&s, &get("/hello.txt", "")).0, "etag").unwrap().to_string();
    // request → status; every answer carries both fields, once.
    let cases: Vec<(String, u16)> = vec![
        (get("/hello.txt", ""), 200),
        (get("/hello.txt", &format!("If-None-Match: {tag}\r\n")), 304),
        (get("/hello.txt", "Range: bytes=0-1\r\n"), 206),
        (get("/list/", ""), 200),
        (get("/hi.cgi", ""), 200),
        (get("/missing", ""), 404),
        (get("/list", ""), 301),
        (get("/out-file", ""), 403),
        ("POST /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".into(), 405),
        ("GARBAGE\r\n\r\n".into(), 400),
        (format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(9000)), 414),
    ];
    for (request, status) in cases {
        let (head, _) = fetch(&s, &request);
        assert_eq!(status_of(&head), status, "{head}");
        assert_eq!(head.matches("\r\nX-Frame-Options: DENY\r\n").count(), 1, "{head}");
        assert_eq!(head.matches("\r\nPermissions-Policy: camera=(), geolocation=()\r\n").count(), 1, "{head}");
    }
}

fn cache_control_on_static_files_only(mode: &str) {
    let fx = Fixture::new();
    let s = start(mode, &fx, &["--cache-control", "public, max-age=3600"]);
    let tag = head_field(&fetch(&s, &get("/hello.txt", "")).0, "etag").unwrap().to_string();
    // path, extra fields → Cache-Control
    let cases: &[(&str, String, Option<&str>)] = &[
        ("/hello.txt", String::new(), Some("public, max-age=3600")),
        ("/site/", String::new(), Some("public, max-age=3600")),
        ("/hello.txt", format!("If-None-Match: {tag}\r\n"), Some("public, max-age=3600")),
        ("/hello.txt", "Range: bytes=0-1\r\n".into(), Some("public, max-age=3600")),
        ("/list/", String::new(), Some("no-cache")),
        ("/missing", String::new(), None),
    ];
    for (path, extra, want) in cases {
        let (head, _) = fetch(&s, &get(path, extra));
        assert_eq!(head_field(&head, "cache-control"), *want, "{path}: {head}");
        assert!(head.matches("Cache-Control").count() <= 1, "{head}");
    }
}

fn cors_echoes_listed_origins_and_answers_preflight(mode: &str) {
    let fx = Fixture::new();
    with_script(&fx);
    let s = start(mode, &fx, &["--cors", "https://a.example, http://b.example:8080"]);
    // Origin → Access-Control-Allow-Origin; Vary: Origin always.
    let cases: &[(Option<&str>, Option<&str>)] = &[
        (Some("https://a.example"), Some("https://a.example")),
        (Some("http://b.example:8080"), Some("http://b.example:8080")),
        (Some("https://evil.example"), None),
        (Some("https://a.example.evil"), None),
        (Some("null"), None),
        (None, None),
    ];
    for (origin, want) in cases {
        let extra = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
        for path in ["/hello.txt", "/list/", "/missing", "/hi.cgi"] {
            let (head, _) = fetch(&s, &get(path, &extra));
            assert_eq!(head_field(&head, "access-control-allow-origin"), *want, "{path} {origin:?}: {head}");
            assert!(head_field(&head, "vary").unwrap_or("").contains("Origin"), "{path}: {head}");
        }
    }
    let preflight = |origin: &str| {
        format!("OPTIONS /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: GET\r\nAccess-Control-Request-Headers: range\r\n\r\n")
    };
    let (head, body) = fetch(&s, &preflight("https://a.example"));
    assert_eq!(status_of(&head), 204, "{head}");
    assert!(body.is_empty());
    assert_eq!(head_field(&head, "access-control-allow-origin"), Some("https://a.example"));
    assert_eq!(head_field(&head, "access-control-allow-methods"), Some("GET, HEAD"));
    assert!(head_field(&head, "access-control-allow-headers").unwrap().contains("Range"));
    let (head, _) = fetch(&s, &preflight("https://evil.example"));
    assert_eq!((status_of(&head), head_field(&head, "access-control-allow-methods")), (204, None), "{head}");
    // A plain OPTIONS is no preflight: the resource takes GET and HEAD only.
    let (head, _) = fetch(&s, "OPTIONS /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&head), 405, "{head}");
}

fn cors_any_origin(mode: &str) {
    let fx = Fixture::new();
    let s = start(mode, &fx, &["--cors", "*"]);
    let (head, _) = fetch(&s, &get("/hello.txt", "Origin: https://anywhere.example\r\n"));
    assert_eq!(head_field(&head, "access-control-allow-origin"), Some("*"), "{head}");
    assert!(!head_field(&head, "vary").unwrap_or("").contains("Origin"), "{head}");
    let (head, _) = fetch(&s, &get("/hello.txt", ""));
    assert_eq!(head_field(&head, "access-control-allow-origin"), None, "no Origin, no CORS: {head}");
}

fn basic(user_pass: &str) -> String {
    format!("Authorization: Basic {}\r\n", base64::engine::general_purpose::STANDARD.encode(user_pass))
}

fn basic_auth_guards_files_listings_scripts_and_handlers(mode: &str) {
    let fx = Fixture::new();
    with_script(&fx);
    // What `mkpasswd -m sha-512 -R 1000` makes (fewer rounds than the default 5000, so a
    // debug build checks it quickly); the password holds a colon, which Basic allows.
    let hash = sha_crypt::sha512_simple("pa:ss wörd", &sha_crypt::Sha512Params::new(1000).unwrap()).unwrap();
    let handler = format!("/app={}", page_handler().display());
    let s = start(mode, &fx, &["--basic-auth", &format!("ann:{hash}"), "--handler", &handler, "--cors", "*"]);
    let good = basic("ann:pa:ss wörd");
    let denied = [
        String::new(),
        basic("ann:wrong"),
        basic("bob:pa:ss wörd"),
        basic("ann"),
        "Authorization: Bearer x\r\n".into(),
    ];
    for path in ["/hello.txt", "/list/", "/hi.cgi", "/app/page", "/missing"] {
        for extra in &denied {
            let (head, body) = fetch(&s, &get(path, extra));
            assert_eq!(status_of(&head), 401, "{path} {extra:?}: {head}");
            assert_eq!(head_field(&head, "www-authenticate"), Some("Basic realm=\"spidey\", charset=\"UTF-8\""));
            assert!(!String::from_utf8_lossy(&body).contains("script ran") && !body.starts_with(b"hello"));
        }
        let (head, body) = fetch(&s, &get(path, &good));
        let want = if path == "/missing" { 404 } else { 200 };
        assert_eq!(status_of(&head), want, "{path}: {head}");
        if path == "/hi.cgi" {
            assert!(String::from_utf8_lossy(&body).contains("script ran"));
        }
    }
    // A CORS preflight carries no credentials and is answered all the same.
    let preflight = "OPTIONS /hello.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\nOrigin: https://x.example\r\nAccess-Control-Request-Method: GET\r\n\r\n";
    assert_eq!(status_of(&fetch(&s, preflight).0), 204);
}

/// A server with one user, `ann`, whose password is `password` (1000 rounds: a debug build
/// checks it quickly).
fn start_with_user(mode: &str, fx: &Fixture, password: &str) -> Spidey {
    let hash = sha_crypt::sha512_simple(password, &sha_crypt::Sha512Params::new(1000).unwrap()).unwrap();
    start(mode, fx, &["--basic-auth", &format!("ann:{hash}")])
}

/// SHA-crypt's cost grows with the password's length: a 12 KB password, beyond the bound
/// on credentials, is refused without hashing, so it costs no more than a 12-byte one
/// (medians of five wrong guesses each, on fresh connections; under the failed-guess
/// limit). Unbounded, one such guess took 0.55 s in a release build.
fn long_password_costs_no_more_than_a_short_one(mode: &str) {
    let fx = Fixture::new();
    let s = start_with_user(mode, &fx, "right");
    let guesses = [("short", "x".repeat(12)), ("long", "x".repeat(12_000))];
    let mut took: [Vec<std::time::Duration>; 2] = Default::default();
    for _ in 0..5 {
        for (i, (what, password)) in guesses.iter().enumerate() {
            let request = get("/hello.txt", &basic(&format!("ann:{password}")));
            let start = std::time::Instant::now();
            let (head, _) = fetch(&s, &request);
            took[i].push(start.elapsed());
            assert_eq!(status_of(&head), 401, "{what}: {head}");
        }
    }
    let [short, long] = took.map(|mut t| {
        t.sort();
        t[t.len() / 2]
    });
    let bound = short * 3 + std::time::Duration::from_millis(5);
    assert!(long <= bound, "a 12 KB password took {long:?} (median), a 12-byte one {short:?}");
}

/// After 20 wrong passwords for one user from one address within a minute, that user gets
/// 429 with `Retry-After` from that address and nothing is checked, the right password
/// included; a request without credentials still gets the challenge. Counted across
/// `fork`'s and `prefork`'s processes.
fn failed_guesses_are_limited_per_user_and_address(mode: &str) {
    let fx = Fixture::new();
    let s = start_with_user(mode, &fx, "right");
    for i in 0..20 {
        let (head, _) = fetch(&s, &get("/hello.txt", &basic(&format!("ann:wrong{i}"))));
        assert_eq!(status_of(&head), 401, "guess {i}: {head}");
    }
    for extra in [basic("ann:wrong"), basic("ann:right")] {
        let (head, body) = fetch(&s, &get("/hello.txt", &extra));
        assert_eq!(status_of(&head), 429, "{extra:?}: {head}");
        let wait: u64 = head_field(&head, "retry-after").expect("Retry-After").parse().unwrap();
        assert!((1..=60).contains(&wait), "{head}");
        assert!(!body.starts_with(HELLO.as_bytes()));
    }
    let (head, _) = fetch(&s, &get("/hello.txt", ""));
    assert_eq!(status_of(&head), 401, "{head}");
}

/// A SHA-256-crypt hash of `password` at 1000 rounds (a debug build checks it quickly).
fn cheap_hash(password: &str) -> String {
    sha_crypt::sha256_simple(password, &sha_crypt::Sha256Params::new(1000).unwrap()).unwrap()
}

/// A bcrypt hash of `password` at `cost`, as `htpasswd -B` writes it.
fn bcrypt_hash(password: &str, cost: u32) -> String {
    bcrypt::hash(password, cost).unwrap().replacen("$2b$", "$2y$", 1)
}

/// `n` connections, each with one request sent before any answer is read (so guesses that
/// take a while to check overlap in every mode that answers connections side by side):
/// each connection's status.
fn all_at_once(s: &Spidey, requests: &[String]) -> Vec<u16> {
    let mut conns: Vec<_> = requests
        .iter()
        .map(|request| {
            let mut c = s.connect();
            c.write_all(request.as_bytes()).unwrap();
            c
        })
        .collect();
    conns
        .iter_mut()
        .map(|c| {
            let mut out = Vec::new();
            let _ = c.read_to_end(&mut out);
            status_of(&String::from_utf8_lossy(&out))
        })
        .collect()
}

/// Third audit, M1: the limit was checked before hashing and counted after, so 80
/// simultaneous guesses were all hashed in `thread`, `pool`, `prefork` and `fork`. A guess
/// now takes its place before it is hashed: of 60 at once, at most 20 are checked (401),
/// and the rest are 429 without hashing.
fn simultaneous_wrong_guesses_are_hashed_at_most_the_limit(mode: &str) {
    let fx = Fixture::new();
    let s = start(mode, &fx, &["--max-conns", "200", "--basic-auth", &format!("ann:{}", bcrypt_hash("right", 6))]);
    let requests: Vec<String> = (0..60).map(|i| get("/hello.txt", &basic(&format!("ann:wrong{i}")))).collect();
    let statuses = all_at_once(&s, &requests);
    // 401: checked; 429: refused unchecked by the limit; 503: refused unchecked by a full
    // worker queue (the pool `event`, `uring` and `hybrid` hash passwords on is bounded).
    let hashed = statuses.iter().filter(|&&st| st == 401).count();
    assert!(statuses.iter().all(|st| [401, 429, 503].contains(st)), "{statuses:?}");
    assert!(hashed <= 20, "{hashed} of 60 simultaneous wrong guesses were checked, past the limit of 20: {statuses:?}");
    assert!(statuses.contains(&429), "the limit answered some: {statuses:?}");
}

/// Third audit, M3: the limit locked out an address, so one guesser denied every user
/// behind it, and in `fork` and `prefork` users who had logged in before were refused too.
/// Now guessing one user's password limits that user from that address; spraying names
/// is stopped by the address's own count (100), which refuses new logins from it but not
/// a user who has logged in (remembered by every process of the server).
fn a_logged_in_user_keeps_getting_in_while_the_address_is_limited(mode: &str) {
    let fx = Fixture::new();
    let users: Vec<String> =
        ["ann", "bob", "carol", "dave"].iter().map(|u| format!("{u}:{}", cheap_hash(&format!("{u}-pw")))).collect();
    let flags: Vec<&str> = users.iter().flat_map(|u| ["--basic-auth", u.as_str()]).collect();
    let s = start(mode, &fx, &flags);
    let status = |user_pass: &str| status_of(&fetch(&s, &get("/hello.txt", &basic(user_pass))).0);
    assert_eq!(status("bob:bob-pw"), 200, "bob logs in");
    // (wrong guesses: user, how many) -> then (request, status). Carol logs in while only
    // ann is limited; dave tries only once the address is, and is refused.
    type Then<'a> = &'a [(&'a str, u16)];
    let steps: [(&str, u32, Then); 2] = [
        ("ann", 20, &[("ann:ann-pw", 429), ("carol:carol-pw", 200), ("bob:bob-pw", 200)]),
        // ann's 20, and 80 more over four names nobody has: the address's 100.
        ("<script>", 80, &[("dave:dave-pw", 429), ("bob:bob-pw", 200), ("carol:carol-pw", 200)]),
    ];
    for (user, n, then) in steps {
        for i in 0..n {
            let name = if user == "ann" { "ann".to_string() } else { format!("{user}{}", i / 20) };
            let got = status(&format!("{name}:wrong{i}"));
            assert_eq!(got, 401, "wrong guess {i} at {name}");
        }
        for (user_pass, want) in then {
            assert_eq!(status(user_pass), *want, "{user_pass} after {n} wrong guesses at {user}");
        }
    }
}

/// Third audit, M2: a wrong password was hashed on the event loop in `event`, `uring` and
/// `hybrid`, so two guessers stalled every client of the loop for seconds. Now a password
/// to hash is checked on a worker: while four wrong guesses at a bcrypt hash are being
/// checked (enough to reach every loop of a 2-core machine), a logged-in client is
/// answered, and before any guess. (`single` answers
/// one connection at a time by design: it waits behind them.)
fn a_wrong_guess_does_not_stall_a_logged_in_client(mode: &str) {
    if mode == "single" {
        return;
    }
    let fx = Fixture::new();
    let (ann, bob) = (format!("ann:{}", bcrypt_hash("right", 10)), format!("bob:{}", cheap_hash("bob-pw")));
    let s = start(mode, &fx, &["--basic-auth", &ann, "--basic-auth", &bob]);
    assert_eq!(status_of(&fetch(&s, &get("/hello.txt", &basic("bob:bob-pw"))).0), 200, "bob logs in");
    let mut guesses: Vec<_> = (0..4)
        .map(|i| {
            let mut c = s.connect();
            c.write_all(get("/hello.txt", &basic(&format!("ann:wrong{i}"))).as_bytes()).unwrap();
            c
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let (head, _) = fetch(&s, &get("/hello.txt", &basic("bob:bob-pw")));
    assert_eq!(status_of(&head), 200, "{head}");
    for (i, c) in guesses.iter_mut().enumerate() {
        c.set_read_timeout(Some(std::time::Duration::from_millis(10))).unwrap();
        let early = c.read(&mut [0u8; 64]);
        assert!(early.is_err(), "guess {i} was answered before the logged-in client: {early:?}");
        c.set_read_timeout(None).unwrap();
    }
    for c in &mut guesses {
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        assert_eq!(status_of(&String::from_utf8_lossy(&out)), 401);
    }
}

/// `--user nobody` (as root): the server binds, reads what its flags name, then becomes
/// `nobody` for good, so a CGI script runs as `nobody` and cannot become root again; static
/// files are still served from the root opened before.
fn user_drops_root_once_bound(mode: &str) {
    if rustix::process::geteuid().as_raw() != 0 {
        eprintln!("SKIPPED {mode}::user_drops_root_once_bound: not root");
        return;
    }
    let fx = Fixture::new();
    // nobody must be able to read the tree: the test's directories are 0700.
    for dir in [fx.dir.path(), fx.root().as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let script = fx.root().join("whoami.cgi");
    std::fs::write(&script, "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n%s:%s:' \"$(id -u)\" \"$(id -g)\"\nsu -c true root </dev/null >/dev/null 2>&1 && echo root-again || echo stays\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ids = |flag: &str| {
        let out = Command::new("id").args([flag, "nobody"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let s = start(mode, &fx, &["--user", "nobody"]);
    let reply = s.get("/whoami.cgi", &[]);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text().trim(), format!("{}:{}:stays", ids("-u"), ids("-g")));
    let (head, body) = fetch(&s, &get("/hello.txt", ""));
    assert_eq!((status_of(&head), body.as_slice()), (200, HELLO.as_bytes()), "{head}");
}

fn listing_json_by_accept_in_nginx_schema(mode: &str) {
    let fx = Fixture::new();
    let s = start(mode, &fx, &[]);
    // Accept (or the query) → JSON?
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let cases: &[(&str, Option<&str>, bool)] = &[
        ("/list/", Some("application/json"), true),
        ("/list/", Some("application/json, text/html;q=0.5"), true),
        ("/list/?format=json", Some(browser), true),
        ("/list/", Some(browser), false),
        ("/list/", Some("*/*"), false),
        ("/list/", None, false),
        ("/list/", Some("application/json;q=0.2, text/html"), false),
    ];
    for (path, accept, json) in cases {
        let extra = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
        let (head, body) = fetch(&s, &get(path, &extra));
        let want_type = if *json { "application/json" } else { "text/html; charset=utf-8" };
        assert_eq!(head_field(&head, "content-type"), Some(want_type), "{path} {accept:?}");
        assert_eq!(head_field(&head, "vary"), Some("Accept"), "{path} {accept:?}: {head}");
        if !json {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(&body).expect("valid JSON");
        let entries = v.as_array().expect("nginx's JSON is a bare array");
        assert_eq!(entries[0]["name"], "sub dir", "directories first");
        for e in entries {
            let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
            let kind = e["type"].as_str().unwrap();
            let want_keys: &[&str] =
                if kind == "file" { &["mtime", "name", "size", "type"] } else { &["mtime", "name", "type"] };
            assert_eq!(keys, want_keys, "{e}");
            assert!(["file", "directory", "other"].contains(&kind), "{e}");
            let mtime = e["mtime"].as_str().unwrap();
            assert!(httpdate::parse_http_date(mtime).is_ok() && mtime.ends_with(" GMT"), "RFC 1123 date: {mtime}");
        }
        let named = |n: &str| entries.iter().find(|e| e["name"] == n).unwrap_or_else(|| panic!("{n} listed"));
        assert_eq!((named("plain.txt")["size"].as_u64(), named("plain.txt")["type"].as_str()), (Some(3), Some("file")));
        assert_eq!(named("q\"uote's")["size"], 2);
        for hostile in ["<img src=x onerror=alert(1)>", "new\nline", "%20", "café", "bad\u{fffd}utf8"] {
            named(hostile);
        }
        assert!(!entries.iter().any(|e| e["name"] == ".hidden"));
    }
}

#[test]
fn bad_feature_flags_exit_2_with_one_line() {
    // flag and value → what the one line names
    let cases: &[(&str, &str, &str)] = &[
        ("--header", "Bad Name: x", "valid field name"),
        ("--header", "X-A: a\r\nSet-Cookie: s=1", "control character"),
        ("--header", "no colon", "Name: value"),
        ("--header", "Content-Length: 3", "writes itself"),
        ("--cors", "not-an-origin", "--cors"),
        ("--cors", "https://a.example/path", "--cors"),
        ("--basic-auth", "ann:plaintext", "mkpasswd"),
        ("--basic-auth", "no-colon", "user:HASH"),
        ("--cache-control", "a\nb", "--cache-control"),
        ("--user", "no-such-user-<x>", "--user no-such-user-<x>: no such user"),
    ];
    for (flag, value, needle) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .args(["serve", ".", "--port", "0", flag, value])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flag} {value:?}: {stderr:?}");
        assert!(stderr.contains(needle), "{flag} {value:?}: {stderr:?}");
    }
}

/// The README's way of making a hash, `openssl passwd -6`, gives one Spidey accepts.
#[test]
fn openssl_made_hash_is_accepted() {
    let out = Command::new("openssl").args(["passwd", "-6", "-stdin"]).stdin_bytes(b"s3cret:x\n");
    let hash = String::from_utf8(out).unwrap().trim().to_string();
    assert!(hash.starts_with("$6$"), "{hash}");
    let fx = Fixture::new();
    let s = start("event", &fx, &["--basic-auth", &format!("ann:{hash}")]);
    assert_eq!(status_of(&fetch(&s, &get("/hello.txt", &basic("ann:s3cret:x"))).0), 200);
    assert_eq!(status_of(&fetch(&s, &get("/hello.txt", &basic("ann:s3cret"))).0), 401);
}

trait StdinBytes {
    fn stdin_bytes(&mut self, input: &[u8]) -> Vec<u8>;
}

impl StdinBytes for Command {
    /// Runs the command with `input` on stdin; its stdout, once it succeeded.
    fn stdin_bytes(&mut self, input: &[u8]) -> Vec<u8> {
        let mut child = self.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{self:?}");
        out.stdout
    }
}

#[test]
fn serve_help_names_every_feature_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_spidey")).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--precompressed", "--compress", "--header", "--cors", "--basic-auth", "--cache-control"] {
        assert!(help.contains(flag), "{flag} missing from serve --help");
    }
}
