//! The HTTP/2 server connection: a client's preface and SETTINGS, then arbitrary octets,
//! fed in pieces whose size the first byte picks, with a small application answering each
//! request (a head, and as much of a body as the connection takes) and output written in
//! full, by halves, or not at all (the first byte again). The connection never panics,
//! never takes more octets than it was given, its output stays within the cap plus what
//! one frame and the answered heads add, what it writes reads back as whole, valid frames,
//! and once it has failed it reads nothing more.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_http::h2::{Config, Conn, Event, Frame, MAX_MAX_FRAME_SIZE};

/// What one frame's answer and a few response heads may add past `max_output`.
const SLACK: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, input)) = data.split_first() else { return };
    let config = Config { max_output: 8 * 1024, max_concurrent_streams: 4, ..Config::default() };
    let cap = config.max_output;
    let mut conn = Conn::new(config);
    let mut wire = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00".to_vec();
    if knobs & 0x80 != 0 {
        wire.extend_from_slice(b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"); // SETTINGS ACK
    }
    wire.extend_from_slice(input);
    let piece = [usize::MAX, 1, 7, 100][usize::from(knobs & 3)];
    let drain = (knobs >> 2) & 3; // 0, 1: all; 2: half; 3: never
    let mut buf: Vec<u8> = Vec::new();
    let mut at = 0;
    let mut failed = false;
    let mut stalls = 0;
    while stalls < 3 {
        let more = (wire.len() - at).min(piece);
        buf.extend_from_slice(&wire[at..at + more]);
        at += more;
        match conn.receive(&buf) {
            Ok(n) => {
                assert!(n <= buf.len(), "took {n} of {}", buf.len());
                assert!(!failed || n == 0, "read after failing");
                buf.drain(..n);
                stalls = if n == 0 && more == 0 { stalls + 1 } else { 0 };
            }
            Err(_) => {
                failed = true;
                assert!(!conn.wants_read());
                stalls += 1;
            }
        }
        while let Some(event) = conn.next_event() {
            match event {
                Event::Request { stream, end_stream, .. } => {
                    let _ = conn.send_head(stream, 200, &[(b"content-type", b"text/plain")], false);
                    let _ = conn.send_data(stream, &[b'x'; 3000], end_stream);
                }
                Event::Data { stream, bytes, .. } => conn.release(stream, bytes.len()),
                Event::WindowOpened { stream } => {
                    let _ = conn.send_data(stream, &[b'y'; 100], true);
                }
                Event::Trailers { .. } | Event::Reset { .. } | Event::GoAway { .. } => {}
            }
        }
        let pending = conn.pending_output().len();
        assert!(pending <= cap + SLACK, "{pending} octets of output queued");
        match drain {
            2 => conn.consumed(pending / 2),
            3 => {}
            _ => {
                let mut out = conn.pending_output();
                while let Some((_, n)) = Frame::decode(out, MAX_MAX_FRAME_SIZE).expect("our own output decodes") {
                    out = &out[n..];
                }
                assert!(out.is_empty(), "{} octets of a partial frame written", out.len());
                conn.consumed(pending);
            }
        }
    }
    if failed && drain < 2 {
        assert!(conn.is_closed(), "failed, its output written, and not closed");
    }
});
