//! What the ops suites share: starting the server on any address (the common harness
//! expects 127.0.0.1), raw requests to any address, CGI scripts, polling the access log.

use crate::common::{read_to_close, status_of, Spidey};
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `spidey serve ROOT --mode MODE ARGS...` (no `--port`: the caller says where).
pub fn command(mode: &str, root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_spidey"));
    // --cgi: the ops tests run scripts (the environment, the address, the metrics of CGI).
    c.arg("serve").arg(root).args(["--mode", mode, "--cgi"]).args(args).stderr(Stdio::inherit());
    c
}

/// Spawns `command` with stdout piped and reads the port from its startup line, whatever
/// the address (`http://[::1]:PORT`, `http://127.0.0.1:PORT`).
pub fn spawn(mut command: Command) -> Spidey {
    let mut child = command.stdout(Stdio::piped()).spawn().expect("spawn spidey");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read startup line");
    let url = line.strip_prefix("spidey listening on http://").unwrap_or_else(|| panic!("startup line: {line:?}"));
    let host_port = url.split(' ').next().unwrap();
    let port = host_port.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).expect("port in startup line");
    Spidey { child, port, stdout: Some(stdout), tls: false }
}

/// Sends `request` to `addr` on a fresh connection; the status and the whole response.
pub fn send(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let text = read_to_close(&mut s);
    (status_of(&text), text)
}

/// GET `path` from `addr` in HTTP/1.0 (closed after it; a script's body not chunked).
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    send(addr, &format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n"))
}

/// The body of a whole response text.
pub fn body(response: &str) -> &str {
    response.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

/// Writes an executable CGI script at ROOT/`rel`.
pub fn script(root: &Path, rel: &str, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Waits until `check` holds (polling every 20 ms), or panics after 10 s naming `what`.
pub fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The file's text, or empty if it does not exist (yet).
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
