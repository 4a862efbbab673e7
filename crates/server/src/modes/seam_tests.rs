//! The seams of `modes/` checked against the source, so they stay what ARCHITECTURE.md
//! says: the [`Session`](super::session::Session) is the connection state every driver
//! shares, not the union of each driver's exceptions (at most [`MAX_SESSION_METHODS`]
//! methods, each called by the blocking driver and by the event loops), and the transport
//! is chosen in one place and named by no driver.

use crate::layout_tests::{production_text, rust_files};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The most crate-visible methods the session may have.
const MAX_SESSION_METHODS: usize = 25;

fn modes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/modes")
}

/// The `pub(crate) fn`s of `impl Session` blocks in `text`, leaving out blocks behind a
/// `#[cfg(..)]` (test and fuzzing helpers).
fn session_methods(text: &str) -> Vec<String> {
    let mut methods = Vec::new();
    let mut in_session_impl = false;
    let mut gated = false;
    let mut previous = "";
    for line in text.lines() {
        if line.starts_with("impl Session {") {
            in_session_impl = true;
            gated = previous.starts_with("#[cfg(");
        } else if line.starts_with('}') {
            in_session_impl = false;
        } else if in_session_impl && !gated {
            if let Some(rest) = line.trim_start().strip_prefix("pub(crate) fn ") {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                methods.push(name);
            }
        }
        previous = line;
    }
    methods
}

/// Which driver a file of `modes/` belongs to, if it is one: the blocking driver, or the
/// event loops (their core and both backends).
fn driver(path: &Path) -> Option<&'static str> {
    let rel = path.strip_prefix(modes_dir()).unwrap().to_string_lossy().replace('\\', "/");
    match rel.as_str() {
        "blocking.rs" | "fork_parse.rs" => Some("blocking"),
        "event.rs" => Some("loops"),
        r if r.starts_with("evloop/") || r.starts_with("uring/") => Some("loops"),
        _ => None,
    }
}

#[test]
fn the_session_is_shared_by_every_driver_not_the_sum_of_their_exceptions() {
    let mut files = Vec::new();
    rust_files(&modes_dir(), &mut files);
    let is_session = |p: &Path| p.ends_with("session.rs") || p.parent().is_some_and(|d| d.ends_with("session"));
    let methods: Vec<String> =
        files.iter().filter(|p| is_session(p)).flat_map(|p| session_methods(&production_text(p))).collect();
    assert!(methods.len() >= 10, "the method scan found too few ({methods:?}): is it still reading the session?");
    assert!(
        methods.len() <= MAX_SESSION_METHODS,
        "Session has {} methods, more than {MAX_SESSION_METHODS}: {methods:?}",
        methods.len()
    );
    let mut callers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for path in files.iter().filter(|p| !is_session(p)) {
        let Some(driver) = driver(path) else { continue };
        let text = production_text(path);
        for m in &methods {
            let calls = [format!("session.{m}("), format!("Session::{m}(")];
            if calls.iter().any(|c| text.contains(c.as_str())) {
                let drivers = callers.entry(m).or_default();
                if !drivers.contains(&driver) {
                    drivers.push(driver);
                }
            }
        }
    }
    let lonely: Vec<String> = methods
        .iter()
        .filter(|m| callers.get(m.as_str()).map_or(0, Vec::len) < 2)
        .map(|m| format!("{m} (called by {:?})", callers.get(m.as_str()).cloned().unwrap_or_default()))
        .collect();
    assert!(lonely.is_empty(), "Session methods not shared by the blocking driver and the loops: {lonely:?}");
}

/// `text` without its comments (`//` to the end of a line; no string in `modes/` holds
/// `//`), so prose may name what code may not.
fn code_of(text: &str) -> String {
    text.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Whether `code` uses the identifier `name` (not as part of a longer one).
fn names(code: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(name).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// The transport is chosen once, when a connection is accepted (`Transport::choose`,
/// called from one place), and lives in the session: no driver names it, TLS or the
/// transport's types, so none can ask which one a connection has. Drivers hand the
/// session their socket (`socket.rs`) and ask it neutral questions (`holds_input`).
#[test]
fn no_driver_names_a_transport() {
    let mut files = Vec::new();
    rust_files(&modes_dir(), &mut files);
    let (mut named, mut chooses, mut drivers) = (Vec::new(), Vec::new(), 0);
    for path in files.iter().filter(|p| !p.to_string_lossy().ends_with("_tests.rs")) {
        let code = code_of(&production_text(path));
        chooses.extend(code.matches("Transport::choose(").map(|_| path.display().to_string()));
        if driver(path).is_none() {
            continue;
        }
        drivers += 1;
        for name in ["Transport", "Tls", "TlsWire", "tls", "transport", "ServerConnection", "is_tls"] {
            if names(&code, name) {
                named.push(format!("{} names {name}", path.display()));
            }
        }
    }
    assert!(drivers >= 8, "the scan found {drivers} driver files: is it still reading modes/?");
    assert!(named.is_empty(), "a driver names the transport: {named:?}");
    assert_eq!(chooses.len(), 1, "Transport::choose is called from more than one place: {chooses:?}");
}

/// TLS is one transport among others: only the transport (`transport.rs`, `tls.rs`) and
/// the backend that receives its ciphertext itself (`uring/`) name it; the session asks
/// the transport to read and write, and names of the earlier seam (`Inbound`, `RingSend`)
/// stay gone.
#[test]
fn only_the_transport_names_tls() {
    let mut files = Vec::new();
    rust_files(&modes_dir(), &mut files);
    let allowed = |rel: &str| matches!(rel, "transport.rs" | "tls.rs") || rel.starts_with("uring/");
    let mut named = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(modes_dir()).unwrap().to_string_lossy().replace('\\', "/");
        if rel.ends_with("_tests.rs") {
            continue;
        }
        let code = code_of(&production_text(path));
        let tls_names = ["Tls", "TlsWire", "ServerConnection"];
        let forbidden = if allowed(&rel) { &[][..] } else { &tls_names[..] };
        for name in ["Inbound", "RingSend"].iter().chain(forbidden) {
            if names(&code, name) {
                named.push(format!("{rel} names {name}"));
            }
        }
    }
    assert!(files.len() > 20, "the scan found {} files: is it still reading modes/?", files.len());
    assert!(named.is_empty(), "TLS named outside the transport: {named:?}");
}

#[test]
fn the_name_scan_reads_what_it_should() {
    let code = code_of("use super::tls::Inflow; // a Transport in prose\nlet t = TlsWire::new();");
    assert!(names(&code, "tls") && names(&code, "TlsWire"));
    assert!(!names(&code, "Transport"), "comments are prose");
    assert!(!names(&code, "Tls"), "TlsWire is not Tls");
    assert!(!names("is_tls_like()", "is_tls"));
}

#[test]
fn the_method_scan_reads_what_it_should() {
    let text = "impl Session {\n    pub(crate) fn open(x: u8) {}\n    fn private() {}\n}\n#[cfg(test)]\nimpl Session {\n    pub(crate) fn for_tests() {}\n}\nimpl Other {\n    pub(crate) fn not_mine() {}\n}\n";
    assert_eq!(session_methods(text), ["open"]);
}
