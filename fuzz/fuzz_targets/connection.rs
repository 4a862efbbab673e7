//! The whole connection: bytes in arbitrary read chunks through the session state machine
//! the modes share (`Session` and `Exchanger::step`, via `modes::session_fuzz`), not only the
//! parser. Never panics or stalls, and never answers bytes that were inside a body.
//!
//! The first input byte picks the form. Odd: the rest is raw bytes (no panic, no stall).
//! Even: the rest drives a generator of well-formed requests for ordinary files, each
//! carrying a body (Content-Length or chunked, with fuzzed chunking, filler and fields, or an
//! attack-shaped CL.TE / TE.CL / duplicate-length framing) that holds a request for
//! `/smuggled.txt`. No request outside a body names that file, so its content appearing in
//! the output means a request hidden in a body was answered.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_server::modes::session_fuzz::run_connection;
use spidey_server::server::Server;
use std::sync::OnceLock;

const MARKER: &[u8] = b"MARKER-9d1c-smuggled-content";
const HIDDEN: &str = "GET /smuggled.txt HTTP/1.1\r\nHost: x\r\n\r\n";

fn server() -> &'static Server {
    // The root lives as long as the server (a static, so LeakSanitizer sees it reachable).
    static SERVER: OnceLock<(tempfile::TempDir, Server)> = OnceLock::new();
    &SERVER
        .get_or_init(|| {
            let root = tempfile::tempdir().unwrap();
            std::fs::write(root.path().join("hello.txt"), b"hello\n").unwrap();
            std::fs::write(root.path().join("smuggled.txt"), MARKER).unwrap();
            std::fs::create_dir(root.path().join("dir")).unwrap();
            let server = Server::for_tests(root.path()).unwrap();
            (root, server)
        })
        .1
}

/// Takes bytes from the fuzz input; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[usize::from(self.byte()) % from.len()]
    }
    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = (usize::from(self.byte()) % (max + 1)).min(self.0.len());
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        taken.to_vec()
    }
    /// A field value: visible ASCII and spaces only, so it cannot end the head early.
    fn value(&mut self) -> String {
        self.bytes(24).iter().map(|b| char::from(0x20 + b % 0x5f)).collect()
    }
}

fn chunked(input: &mut Input, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let n = (usize::from(input.byte()) % 40 + 1).min(rest.len());
        let ext = if input.byte() % 4 == 0 { ";a=b" } else { "" };
        out.extend_from_slice(format!("{n:x}{ext}\r\n").as_bytes());
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(b"\r\n");
        rest = &rest[n..];
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn generate(input: &mut Input) -> Vec<u8> {
    let mut stream = Vec::new();
    for _ in 0..1 + input.byte() % 6 {
        let method = input.pick(&["GET", "HEAD", "POST", "PUT", "OPTIONS", "DELETE"]);
        let target = input.pick(&["/hello.txt", "/", "/dir", "/nope", "/hello.txt?q", "http://x/hello.txt", "*"]);
        let version = input.pick(&["HTTP/1.1", "HTTP/1.1", "HTTP/1.0"]);
        let mut head = format!("{method} {target} {version}\r\nHost: x\r\n");
        for _ in 0..input.byte() % 3 {
            let name = input.pick(&["X-Pad", "Accept", "Connection", "Expect", "Range", "If-None-Match"]);
            head += &format!("{name}: {}\r\n", input.value());
        }
        let mut body = HIDDEN.as_bytes().to_vec();
        if input.byte() % 2 == 0 {
            body.splice(0..0, input.bytes(32));
        }
        body.extend(input.bytes(32));
        let (fields, bytes) = match input.byte() % 7 {
            0 => (String::new(), Vec::new()),
            1 | 2 => (format!("Content-Length: {}\r\n", body.len()), body),
            3 | 4 => ("Transfer-Encoding: chunked\r\n".to_string(), chunked(input, &body)),
            5 => {
                // CL.TE: a length reader stops after the whole thing; a chunked reader ends
                // at `0` and would take the request after it.
                let mut b = b"0\r\n\r\n".to_vec();
                b.extend(body);
                (format!("Content-Length: {}\r\nTransfer-Encoding: chunked\r\n", b.len()), b)
            }
            _ => {
                // TE.CL: a length reader takes 4 bytes and would take the chunk for a request.
                let b = chunked(input, &body);
                ("Transfer-Encoding: chunked\r\nContent-Length: 4\r\n".to_string(), b)
            }
        };
        stream.extend_from_slice(head.as_bytes());
        stream.extend_from_slice(fields.as_bytes());
        stream.extend_from_slice(b"\r\n");
        stream.extend_from_slice(&bytes);
    }
    stream
}

/// Splits `stream` into reads whose sizes come from the input.
fn reads<'s>(input: &mut Input, stream: &'s [u8]) -> Vec<&'s [u8]> {
    let mut chunks = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let n = match input.byte() {
            0 => rest.len(),
            b => usize::from(b).min(rest.len()),
        };
        chunks.push(&rest[..n]);
        rest = &rest[n..];
    }
    chunks
}

fuzz_target!(|data: &[u8]| {
    let Some((&form, rest)) = data.split_first() else { return };
    let server = server();
    if form % 2 == 1 {
        let split = usize::from(rest.first().copied().unwrap_or(0)).min(rest.len());
        let (a, b) = rest.split_at(split);
        let mut chunks = Vec::new();
        for part in [a, b] {
            chunks.extend(part.chunks(1 + usize::from(form / 2) % 97));
        }
        run_connection(server, &chunks);
        return;
    }
    let mut input = Input(rest);
    let stream = generate(&mut input);
    let chunks = reads(&mut input, &stream);
    let out = run_connection(server, &chunks);
    assert!(
        !out.windows(MARKER.len()).any(|w| w == MARKER),
        "a request inside a body was answered; stream {:?}",
        String::from_utf8_lossy(&stream)
    );
});
