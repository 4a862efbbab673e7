//! The HTTP/2 server connection (`h2::Conn`) against an independent client: Python's `h2`
//! (python-hyper's state machine, Debian's python3-h2 in /usr/bin/python3), which checks
//! every frame ours writes as it parses it. The two take turns over pipes: Python writes
//! what its connection wants to send, ours reads it, a small application answers, and
//! ours writes back.
//!
//! The exchange: SETTINGS both ways (the client's with a 16384-octet window and a
//! 256-octet HPACK table), a PING, a GET with a short body, a 200000-octet POST echoed
//! back (both directions held by flow control: the client waits on our WINDOW_UPDATEs, we
//! on its), a 100000-octet GET, a POST the client resets half-way, a POST with trailers
//! echoed with trailers, a request with a `connection` field (refused with
//! RST_STREAM PROTOCOL_ERROR), then the client's GOAWAY, after which ours is closed. A
//! second run floods: 150 requests each reset at once (rapid reset), which must end in
//! GOAWAY ENHANCE_YOUR_CALM.
//!
//! Without the module the test prints `SKIPPED h2_conn_python: <why>` and passes.

#[allow(dead_code)] // `common::run` is for one-shot scripts; this one takes turns
mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use spidey_http::h2::{Config, Conn, ErrorCode, Event};

/// The client. Each turn it prints `send HEX` (or `send -`) and reads `recv HEX` (or
/// `recv -`); at the end it prints `done` and one `result ...` line per finding.
const SCRIPT: &str = r#"
import sys, hashlib
import h2.connection, h2.config, h2.events, h2.settings

mode = sys.argv[1]
cfg = h2.config.H2Configuration(client_side=True, header_encoding=None,
                                validate_outbound_headers=False, normalize_outbound_headers=False)
c = h2.connection.H2Connection(config=cfg)
c.initiate_connection()
c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 16384,
                   h2.settings.SettingCodes.HEADER_TABLE_SIZE: 256})

status, bodies, trailers, ended, resets = {}, {}, {}, set(), {}
state = {"ping": False, "acks": 0, "terminated": None}
uploads = {}

def req(sid, method, path, extra=(), end=False):
    h = [(b":method", method), (b":scheme", b"https"), (b":authority", b"localhost"), (b":path", path)]
    c.send_headers(sid, h + list(extra), end_stream=end)

def pump_uploads():
    for sid in list(uploads):
        body, then = uploads[sid]
        while body:
            room = min(c.local_flow_control_window(sid), c.max_outbound_frame_size)
            if room <= 0:
                break
            chunk, body = body[:room], body[room:]
            c.send_data(sid, chunk, end_stream=not body and then is None)
        uploads[sid] = (body, then)
        if not body:
            del uploads[sid]
            if then is not None:
                c.send_headers(sid, then, end_stream=True)

def turn():
    data = c.data_to_send()
    print("send", data.hex() if data else "-", flush=True)
    line = sys.stdin.readline().split()
    if line[1] == "-":
        return
    for ev in c.receive_data(bytes.fromhex(line[1])):
        if isinstance(ev, h2.events.ResponseReceived):
            status[ev.stream_id] = dict(ev.headers)[b":status"].decode()
        elif isinstance(ev, h2.events.DataReceived):
            bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
            c.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        elif isinstance(ev, h2.events.TrailersReceived):
            trailers[ev.stream_id] = b",".join(k + b"=" + v for k, v in ev.headers).decode()
        elif isinstance(ev, h2.events.StreamEnded):
            ended.add(ev.stream_id)
        elif isinstance(ev, h2.events.StreamReset):
            resets[ev.stream_id] = int(ev.error_code)
        elif isinstance(ev, h2.events.PingAckReceived):
            state["ping"] = ev.ping_data == b"spidey!!"
        elif isinstance(ev, h2.events.SettingsAcknowledged):
            state["acks"] += 1
        elif isinstance(ev, h2.events.ConnectionTerminated):
            state["terminated"] = int(ev.error_code)

echo = bytes(i * 7 % 251 for i in range(200000))
if mode == "exchange":
    c.ping(b"spidey!!")
    req(1, b"GET", b"/small", end=True)
    req(3, b"POST", b"/echo", [(b"content-length", b"200000")])
    uploads[3] = (echo, None)
    req(5, b"POST", b"/echo")
    c.send_data(5, b"0123456789")
    req(7, b"GET", b"/big", end=True)
    req(9, b"POST", b"/echo", [(b"te", b"trailers")])
    uploads[9] = (b"abc", [(b"x-t", b"1")])
    req(11, b"GET", b"/bad", [(b"connection", b"keep-alive")], end=True)
    pump_uploads()
    turn()
    c.reset_stream(5, error_code=8)
    for _ in range(2000):
        if {1, 3, 7, 9} <= ended and 11 in resets and state["ping"]:
            break
        pump_uploads()
        turn()
    c.close_connection()
    turn()
    print("done", flush=True)
    for sid in sorted(set(status) | set(resets)):
        body = bodies.get(sid, b"")
        print("result", sid, status.get(sid, "-"), len(body), hashlib.sha256(body).hexdigest()[:16],
              trailers.get(sid, "-"), "reset=%s" % resets.get(sid, "-"), "ended" if sid in ended else "open")
    print("result echo", hashlib.sha256(echo).hexdigest()[:16], hashlib.sha256(b"abc").hexdigest()[:16])
    print("result ping", state["ping"], "acks", state["acks"], "terminated", state["terminated"])
else:
    for i in range(150):
        sid = 2 * i + 1
        req(sid, b"GET", b"/small", end=True)
        c.reset_stream(sid)
    for _ in range(20):
        turn()
        if state["terminated"] is not None:
            break
    print("done", flush=True)
    print("result terminated", state["terminated"])
"#;

/// The application: what it answers on each stream, and how much of that went.
struct Reply {
    body: Vec<u8>,
    sent: usize,
    trailers: bool,
}

#[derive(Default)]
struct App {
    requests: BTreeMap<u32, (String, Vec<u8>)>,
    replies: BTreeMap<u32, Reply>,
    log: Vec<String>,
}

impl App {
    fn events(&mut self, conn: &mut Conn) {
        while let Some(event) = conn.next_event() {
            match event {
                Event::Request { stream, head, end_stream } => {
                    let path = String::from_utf8(head.path().unwrap().to_vec()).unwrap();
                    self.log.push(format!("request {stream} {path}"));
                    self.requests.insert(stream, (path, Vec::new()));
                    if end_stream {
                        self.answer(conn, stream, false);
                    }
                }
                Event::Data { stream, bytes, end_stream } => {
                    conn.release(stream, bytes.len());
                    self.requests.get_mut(&stream).unwrap().1.extend_from_slice(&bytes);
                    if end_stream {
                        self.answer(conn, stream, false);
                    }
                }
                Event::Trailers { stream, fields } => {
                    self.log.push(format!("trailers {stream} {}", fields.len()));
                    self.answer(conn, stream, true);
                }
                Event::Reset { stream, code } => {
                    self.log.push(format!("reset {stream} {code}"));
                    self.requests.remove(&stream);
                    self.replies.remove(&stream);
                }
                Event::GoAway { code, .. } => self.log.push(format!("goaway {code}")),
                Event::WindowOpened { stream } => self.pump(conn, stream),
            }
        }
    }

    fn answer(&mut self, conn: &mut Conn, stream: u32, trailers: bool) {
        let (path, body) = self.requests.remove(&stream).unwrap();
        let body = match &path[..] {
            "/small" => b"hello".to_vec(),
            "/big" => (0..100_000u32).map(|i| (i % 256) as u8).collect(),
            _ => body,
        };
        let len = body.len().to_string();
        let fields: Vec<(&[u8], &[u8])> = if trailers {
            vec![(b"Content-Type", b"application/octet-stream")]
        } else {
            vec![(b"Content-Type", b"application/octet-stream"), (b"Content-Length", len.as_bytes())]
        };
        // A stream reset in the same read is gone by the time its request is answered: the
        // `Reset` event after it says so.
        if conn.send_head(stream, 200, &fields, false).is_err() {
            return;
        }
        self.replies.insert(stream, Reply { body, sent: 0, trailers });
        self.pump(conn, stream);
    }

    fn pump(&mut self, conn: &mut Conn, stream: u32) {
        let Some(r) = self.replies.get_mut(&stream) else { return };
        let Ok(n) = conn.send_data(stream, &r.body[r.sent..], !r.trailers) else { return };
        r.sent += n;
        if r.sent == r.body.len() {
            if r.trailers {
                conn.send_trailers(stream, &[(b"X-Echo-Trailers", b"1")]).unwrap();
            }
            self.replies.remove(&stream);
        }
    }
}

fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".to_string();
    }
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    if s == "-" {
        return Vec::new();
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Runs the client in `mode` against a fresh `Conn`: the client's result lines, our
/// application's log, the connection error if there was one, and the connection.
fn converse(mode: &str) -> (Vec<String>, Vec<String>, Option<ErrorCode>, Conn) {
    let mut child = Command::new(common::PYTHON)
        .args(["-c", SCRIPT, mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start python");
    let mut to = child.stdin.take().unwrap();
    let mut from = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut conn = Conn::new(Config::default());
    let mut app = App::default();
    let mut inbuf = Vec::new();
    let mut failed = None;
    loop {
        let line = from.next().expect("a line from python").unwrap();
        if line == "done" {
            break;
        }
        let sent = line.strip_prefix("send ").unwrap_or_else(|| panic!("python said {line}"));
        inbuf.extend_from_slice(&unhex(sent));
        let mut out = Vec::new();
        loop {
            let taken = match conn.receive(&inbuf) {
                Ok(n) => n,
                Err(e) => {
                    failed = Some(e.code);
                    inbuf.len()
                }
            };
            inbuf.drain(..taken);
            app.events(&mut conn);
            let pending = conn.pending_output().len();
            out.extend_from_slice(conn.pending_output());
            conn.consumed(pending);
            app.events(&mut conn);
            if taken == 0 && pending == 0 && !conn.wants_write() {
                break;
            }
        }
        writeln!(to, "recv {}", hex(&out)).unwrap();
        to.flush().unwrap();
    }
    let results = from.map(|l| l.unwrap()).collect();
    drop(to);
    assert!(child.wait().unwrap().success(), "python failed");
    (results, app.log, failed, conn)
}

#[test]
fn h2_conn_python() {
    if let Err(why) = common::has_module("h2.connection", "python3-h2") {
        println!("SKIPPED h2_conn_python: {why}");
        return;
    }
    let (results, log, failed, conn) = converse("exchange");
    let echo = results.iter().find(|l| l.starts_with("result echo")).unwrap().clone();
    let (echo_hash, abc_hash) = {
        let w: Vec<&str> = echo.split_whitespace().collect();
        (w[2].to_string(), w[3].to_string())
    };
    let want = [
        "result 1 200 5 2cf24dba5fb0a30e - reset=- ended".to_string(),
        format!("result 3 200 200000 {echo_hash} - reset=- ended"),
        "result 7 200 100000 ".to_string(),
        format!("result 9 200 3 {abc_hash} x-echo-trailers=1 reset=- ended"),
        "result 11 - 0 e3b0c44298fc1c14 - reset=1 open".to_string(),
    ];
    for (i, w) in want.iter().enumerate() {
        assert!(results[i].starts_with(w.as_str()), "{} is not {w}\nall: {results:#?}\nours: {log:#?}", results[i]);
    }
    assert!(results[2].ends_with("- reset=- ended"), "{results:#?}");
    assert_eq!(results[6], "result ping True acks 2 terminated None");
    assert_eq!(failed, None);
    for line in ["reset 5 CANCEL", "trailers 9 1", "goaway NO_ERROR"] {
        assert!(log.iter().any(|l| l == line), "{line} missing from {log:#?}");
    }
    assert!(!log.iter().any(|l| l.starts_with("reset 1 ") || l.starts_with("reset 3 ")), "{log:#?}");
    // The client's GOAWAY closes nothing on this side: the client closes the socket.
    assert!(!conn.is_closed(), "the client said GOAWAY; it, not this side, closes");
    assert_eq!(conn.open_streams(), 0, "every stream is done");

    let (results, _, failed, _) = converse("flood");
    assert_eq!(failed, Some(ErrorCode::ENHANCE_YOUR_CALM));
    assert_eq!(results, ["result terminated 11"]);
    println!("h2_conn_python: an exchange of 6 streams and a 150-stream rapid reset, checked by python's h2");
}
