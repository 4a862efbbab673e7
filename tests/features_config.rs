//! `spidey serve --config FILE` in every mode: a TOML file's keys are `serve`'s long
//! flags (and `root`), the command line wins over the file, and every mistake in the file
//! is one line and exit 2 before anything binds. The file and the pages it names have
//! hostile names.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

for_each_mode!(config_file_gives_flags_and_the_command_line_wins);

/// Markup, quotes, an ampersand, spaces and UTF-8.
const HOSTILE: &str = "<i>\"cf' & é.html";

/// `value` as a TOML string.
fn quoted(value: &str) -> String {
    toml::Value::String(value.to_string()).to_string()
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("spidey \"conf\" & é.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn config_file_gives_flags_and_the_command_line_wins(mode: &str) {
    let fx = Fixture::new();
    let root = fx.root();
    std::fs::create_dir_all(root.join("custom")).unwrap();
    std::fs::create_dir_all(root.join("errors")).unwrap();
    std::fs::write(root.join("custom").join(HOSTILE), b"hostile index\n").unwrap();
    std::fs::write(root.join("errors").join(HOSTILE), b"custom 404\n").unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_mode = if mode == "single" { "fork" } else { "single" };
    // The file's root, mode and port lose to the command line's (Spidey::start gives ROOT,
    // --port 0 and --mode); a busy port or another mode would show.
    let text = format!(
        "root = {}\nmode = {}\nport = {}\nindex = [{}]\nerror-page = [{}]\nsecurity-headers = true\n\
         header = [\"X-From-File: 1\"]\ncache-control = \"max-age=60\"\n",
        quoted(fx.outside.path().to_str().unwrap()),
        quoted(other_mode),
        busy.local_addr().unwrap().port(),
        quoted(HOSTILE),
        quoted(&format!("404=/errors/{HOSTILE}")),
    );
    let config = write_config(fx.outside.path(), &text);
    let s = Spidey::start(mode, &root, &["--quiet", "--config", config.to_str().unwrap(), "--header", "X-From-Cli: 1"]);
    // path → status, body start
    let cases: &[(&str, u16, &str)] = &[
        ("/custom/", 200, "hostile index"),
        ("/site/", 200, "<!DOCTYPE"),
        ("/hello.txt", 200, HELLO),
        ("/missing", 404, "custom 404"),
    ];
    for (path, status, body) in cases {
        let reply = s.get(path, &[]);
        assert_eq!(reply.status, *status, "{path}");
        assert!(reply.text().starts_with(body), "{path}: {:?}", reply.text());
        assert_eq!(reply.header("x-frame-options"), Some("DENY"), "{path}");
        // A repeatable flag on the command line replaces the file's list wholly.
        assert_eq!((reply.header("x-from-cli"), reply.header("x-from-file")), (Some("1"), None), "{path}");
    }
    assert_eq!(s.get("/hello.txt", &[]).header("cache-control"), Some("max-age=60"));
}

#[test]
fn config_mistakes_exit_2_with_one_line_before_binding() {
    let fx = Fixture::new();
    let root = fx.root();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let file_root = format!("root = {}\n", quoted(root.join("hello.txt").to_str().unwrap()));
    // file (every one also names the busy port, which must not be what is reported) →
    // what the one line says
    let cases: Vec<(String, &str)> = vec![
        ("prot = 8080\n".into(), "unknown key \"prot\" (did you mean \"port\"?)"),
        ("Port = 8080\n".into(), "unknown key \"Port\" (did you mean \"port\"?)"),
        ("max-con = 8\n".into(), "(did you mean \"max-conns\"?)"),
        ("quiet = true\naccess-log = \"x.log\"\n".into(), ": quiet and access-log cannot both be set"),
        ("[serve]\nindex = [\"a.html\"]\n".into(), "unknown key \"serve\""),
        ("config = \"other.toml\"\n".into(), "unknown key \"config\""),
        ("max_conns = 5\n".into(), "unknown key \"max_conns\""),
        ("port = 70000\n".into(), "invalid value '70000'"),
        ("mode = \"evnt\"\n".into(), "invalid value 'evnt'"),
        ("head-timeout = \"soon\"\n".into(), "head-timeout"),
        ("compress = \"yes\"\n".into(), "compress takes true or false"),
        ("index = [\"a.html\"\nsecurity-headers = true\n".into(), "line 3"),
        (format!("port = {port}\nport = {port}\n"), "line 2"),
        ("index = [\"a/b.html\"]\n".into(), "--index"),
        ("mode = \"single\"\nworkers = \"4\"\n".into(), "--workers does not apply to mode single"),
        (format!("{file_root}fallback = \"/x.html\"\n"), "needs a directory"),
        ("redirect-http = 8081\n".into(), "needs --tls-cert"),
        ("basic-auth-file = \"/nonexistent\"\n".into(), "cannot read --basic-auth-file"),
    ];
    for (text, needle) in &cases {
        let text = if text.contains("port =") { text.clone() } else { format!("port = {port}\n{text}") };
        let config = write_config(fx.outside.path(), &text);
        let out = Command::new(env!("CARGO_BIN_EXE_spidey")).args(["serve", "--config"]).arg(&config).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{text:?}: {stderr:?}");
        assert!(stderr.contains(needle) && !stderr.contains("bind"), "{text:?}: {stderr:?}");
        assert!(!stderr.contains("Usage") && !stderr.contains("cannot be used with"), "the file's mistake: {stderr:?}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_spidey")).args(["serve", "--config", "/nonexistent.toml"]).output();
    let stderr = String::from_utf8(out.unwrap().stderr).unwrap();
    assert!(stderr.starts_with("spidey: cannot read --config /nonexistent.toml"), "{stderr}");
}
