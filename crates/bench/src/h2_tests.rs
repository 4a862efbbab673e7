use super::*;
use crate::{run_bench_protocol, BenchConfig, OpenModel, Protocol, Stop, TlsOptions, LATE_AFTER};
use spidey_http::h2::{encode_data, encode_goaway, encode_headers, encode_settings, Frame};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

fn req() -> Req {
    let now = Instant::now();
    Req { intended: now, issued: now, late: false, counted: true, target: 0 }
}

/// A raw frame: header and payload as given.
fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A response head `:status` `code`, HPACK-encoded by a fresh encoder.
fn head_block(code: &str) -> Vec<u8> {
    let mut block = Vec::new();
    Encoder::new().encode([Field::new(b":status", code.as_bytes())], &mut block);
    block
}

/// A client connection past the server's SETTINGS, with stream 1 open.
fn open_conn(window: u32) -> ClientConn {
    let mut c = ClientConn::with_window(window);
    let mut settings = Vec::new();
    encode_settings(&mut settings, &[Setting::MaxConcurrentStreams(10)]);
    let mut ended = Vec::new();
    c.receive(&settings, &mut ended).unwrap();
    assert!(c.ready && c.can_open(10));
    c.open([Field::new(b":method", b"GET"), Field::new(b":path", b"/")], req());
    c.out.clear();
    c
}

/// What the server sends in each hostile case, on the one open stream (1).
fn hostile_cases() -> Vec<(&'static str, Vec<u8>, Option<ErrorCode>)> {
    let mut ok_head = Vec::new();
    encode_headers(&mut ok_head, 1, &head_block("200"), false, 16384);
    let mut past_window = ok_head.clone();
    encode_data(&mut past_window, 1, &[0; 101], false);
    let mut unknown_then_ok = raw(0xfa, 0xff, 1, b"whatever");
    unknown_then_ok.extend(raw(0xfb, 0, 0, b""));
    encode_headers(&mut unknown_then_ok, 1, &head_block("200"), true, 16384);
    let mut never_opened = Vec::new();
    encode_headers(&mut never_opened, 99, &head_block("200"), true, 16384);
    let mut data_never_opened = Vec::new();
    encode_data(&mut data_never_opened, 7, b"x", true);
    let mut headers_then_ping = raw(0x1, 0, 1, &head_block("200"));
    headers_then_ping.extend(raw(0x6, 0, 0, &[0; 8]));
    vec![
        ("oversized frame", raw(0x0, 0, 1, &[0; 16385]), Some(ErrorCode::FRAME_SIZE_ERROR)),
        ("unknown frame types are ignored", unknown_then_ok, None),
        ("HEADERS for a stream never opened", never_opened, Some(ErrorCode::PROTOCOL_ERROR)),
        ("DATA for a stream never opened", data_never_opened, Some(ErrorCode::PROTOCOL_ERROR)),
        ("bad HPACK block (index 0)", raw(0x1, 0x5, 1, &[0x80]), Some(ErrorCode::COMPRESSION_ERROR)),
        ("bad HPACK block (integer overflow)", raw(0x1, 0x5, 1, &[0xff; 8]), Some(ErrorCode::COMPRESSION_ERROR)),
        ("DATA past the stream window", past_window, Some(ErrorCode::FLOW_CONTROL_ERROR)),
        ("PUSH_PROMISE", raw(0x5, 0x4, 1, &[0, 0, 0, 2, 0x82]), Some(ErrorCode::PROTOCOL_ERROR)),
        ("CONTINUATION without HEADERS", raw(0x9, 0x4, 1, &[0x88]), Some(ErrorCode::PROTOCOL_ERROR)),
        ("a PING inside a header block", headers_then_ping, Some(ErrorCode::PROTOCOL_ERROR)),
        ("DATA before the response head", raw(0x0, 0x1, 1, b"x"), Some(ErrorCode::PROTOCOL_ERROR)),
        ("no :status", raw(0x1, 0x5, 1, &[0x82]), Some(ErrorCode::PROTOCOL_ERROR)),
        ("SETTINGS_ENABLE_PUSH 1", raw(0x4, 0, 0, &[0, 2, 0, 0, 0, 1]), Some(ErrorCode::PROTOCOL_ERROR)),
    ]
}

#[test]
fn hostile_server_frames_table() {
    for (name, bytes, want) in hostile_cases() {
        // Whole, and one octet at a time: the same verdict either way, and no panic.
        for split in [bytes.len(), 1] {
            let mut c = open_conn(100);
            let mut ended = Vec::new();
            let mut got = Ok(());
            for chunk in bytes.chunks(split) {
                got = c.receive(chunk, &mut ended);
                if got.is_err() {
                    break;
                }
            }
            match want {
                Some(code) => {
                    let f = got.expect_err(name);
                    assert_eq!(f.code, code, "{name}: {f}");
                    let goaway = Frame::decode(&c.out[c.out.len() - 17 - f.reason.len()..], 16384);
                    assert!(matches!(goaway, Ok(Some((Frame::GoAway { code: c, .. }, _))) if c == code), "{name}");
                    // Nothing is taken after a connection error.
                    assert_eq!(c.receive(&raw(0x6, 0, 0, &[0; 8]), &mut ended), Ok(()));
                }
                None => {
                    assert_eq!(got, Ok(()), "{name}");
                    assert!(matches!(ended.as_slice(), [Ended::Response(s)] if s.status == 200), "{name}: {ended:?}");
                }
            }
        }
    }
}

#[test]
fn a_response_goaway_reset_and_windows() {
    let mut c = open_conn(100);
    let mut ended = Vec::new();
    let mut frames = Vec::new();
    encode_headers(&mut frames, 1, &head_block("404"), false, 16384);
    encode_data(&mut frames, 1, &[7; 60], false);
    c.receive(&frames, &mut ended).unwrap();
    // 60 of the stream's 100 used: a WINDOW_UPDATE of 60 for it.
    assert!(matches!(Frame::decode(&c.out, 16384), Ok(Some((Frame::WindowUpdate { stream: 1, increment: 60 }, _)))));
    let mut frames = Vec::new();
    encode_data(&mut frames, 1, &[7; 40], true);
    c.receive(&frames, &mut ended).unwrap();
    assert!(matches!(ended.as_slice(), [Ended::Response(s)] if s.status == 404 && s.body == 100));
    // Streams 3 and 5; a GOAWAY naming 3 ends 5 as a retry, a reset of 3 is a reset.
    c.open([Field::new(b":path", b"/")], req());
    c.open([Field::new(b":path", b"/")], req());
    ended.clear();
    let mut frames = Vec::new();
    encode_goaway(&mut frames, 3, ErrorCode::NO_ERROR, b"");
    frames.extend(raw(0x3, 0, 3, &ErrorCode::INTERNAL_ERROR.0.to_be_bytes()));
    c.receive(&frames, &mut ended).unwrap();
    assert!(
        matches!(ended.as_slice(), [Ended::Retry(a), Ended::Reset(b, ErrorCode::INTERNAL_ERROR)] if a.id == 5 && b.id == 3)
    );
    assert!(!c.can_open(10));
}

#[test]
fn streams_never_exceed_the_servers_limit() {
    let mut c = ClientConn::new();
    assert!(!c.can_open(8), "no stream before the server's SETTINGS");
    let mut settings = Vec::new();
    encode_settings(&mut settings, &[Setting::MaxConcurrentStreams(2)]);
    c.receive(&settings, &mut Vec::new()).unwrap();
    c.open([Field::new(b":path", b"/")], req());
    c.open([Field::new(b":path", b"/")], req());
    assert!(!c.can_open(8));
    assert!(ClientConn::new().out.starts_with(PREFACE));
}

/// The HEADERS blocks in `out`, in order.
fn blocks(out: &[u8]) -> Vec<Vec<u8>> {
    let (mut at, mut found) = (0, Vec::new());
    while let Ok(Some((frame, len))) = Frame::decode(&out[at..], 16384) {
        if let Frame::Headers { fragment, .. } = frame {
            found.push(fragment.to_vec());
        }
        at += len;
    }
    found
}

#[test]
fn header_blocks_are_copied_once_steady_and_always_decode() {
    let paths: [&[u8]; 2] = [b"/a", b"/bb"];
    for table_size in [None, Some(0), Some(64)] {
        let mut c = ClientConn::new();
        let mut settings = Vec::new();
        let mut s = vec![Setting::MaxConcurrentStreams(1000)];
        s.extend(table_size.map(Setting::HeaderTableSize));
        encode_settings(&mut settings, &s);
        c.receive(&settings, &mut Vec::new()).unwrap();
        c.out.clear();
        let mut decoder = Decoder::new(1 << 16);
        if let Some(n) = table_size {
            decoder.set_max_table_size(n as usize);
        }
        let mut sent = Vec::new();
        for i in 0..12 {
            let target = [0, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0][i];
            let fields = [
                Field::new(b":method", b"GET"),
                Field::new(b":scheme", b"http"),
                Field::new(b":authority", b"127.0.0.1:8080"),
                Field::new(b":path", paths[target]),
                Field::new(b"user-agent", b"spidey-bench"),
            ];
            c.open(fields, Req { target, ..req() });
            sent.push((target, fields.map(|f| (f.name.to_vec(), f.value.to_vec()))));
        }
        let got = blocks(&c.out);
        assert_eq!(got.len(), 12);
        for (block, (target, want)) in got.iter().zip(&sent) {
            let mut fields = Vec::new();
            decoder.decode(block, |f| fields.push((f.name.to_vec(), f.value.to_vec()))).unwrap();
            assert_eq!(&fields, &want.to_vec(), "table {table_size:?}, target {target}");
        }
        // The last blocks for each target repeat: copied, not encoded.
        assert_eq!(got[10], got[9], "table {table_size:?}");
        assert_eq!(got[8], got[6], "table {table_size:?}");
    }
}

/// A server on a loopback port: each connection gets SETTINGS; the first request on the
/// first connection (stream 1) gets `first`, every other request a 200 with 5 octets of
/// body. Returns the port.
fn fake_server(first: Vec<u8>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (k, conn) in listener.incoming().enumerate() {
            let Ok(conn) = conn else { return };
            let first = first.clone();
            std::thread::spawn(move || serve(conn, k == 0, &first));
        }
    });
    port
}

fn serve(mut conn: TcpStream, mut hostile: bool, first: &[u8]) {
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut out = Vec::new();
    encode_settings(&mut out, &[]);
    let _ = conn.write_all(&out);
    let mut input = Vec::new();
    let mut buf = [0; 4096];
    let mut encoder = Encoder::new();
    loop {
        let n = match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        input.extend_from_slice(&buf[..n]);
        if input.len() < PREFACE.len() {
            continue;
        }
        let mut at = PREFACE.len();
        let mut out = Vec::new();
        while let Ok(Some((frame, len))) = Frame::decode(&input[at..], 1 << 20) {
            at += len;
            if let Frame::Headers { stream, .. } = frame {
                if hostile {
                    out.extend_from_slice(first);
                    hostile = false;
                } else {
                    let mut block = Vec::new();
                    encoder.encode([Field::new(b":status", b"200")], &mut block);
                    encode_headers(&mut out, stream, &block, false, 16384);
                    encode_data(&mut out, stream, b"hello", true);
                }
            }
        }
        input.drain(PREFACE.len()..at);
        if conn.write_all(&out).is_err() {
            return;
        }
    }
}

#[test]
fn hostile_servers_cost_a_counted_error_and_a_reconnect() {
    for (name, bytes, want) in hostile_cases() {
        if name.contains("window") {
            // The client opens its windows to 2^31 - 1: the table above covers this one.
            continue;
        }
        let port = fake_server(bytes);
        let cfg = BenchConfig {
            targets: vec![crate::args::parse_url(&format!("http://127.0.0.1:{port}/")).unwrap()],
            connections: 1,
            threads: 1,
            stop: Stop::Requests(3),
            rate: None,
            open_model: OpenModel::Pool,
            late_after: LATE_AFTER,
            keepalive: true,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(3),
            method: "GET".into(),
            headers: vec![],
            body: None,
        };
        let began = Instant::now();
        let r = run_bench_protocol(&cfg, Protocol::H2 { streams: 1 }, &TlsOptions::default(), &mut |_| {}).unwrap();
        assert!(began.elapsed() < Duration::from_secs(2), "{name}: took {:?}", began.elapsed());
        let h2 = r.h2.clone().unwrap();
        assert_eq!(r.requests, 3, "{name}");
        match want {
            Some(_) => {
                assert_eq!((r.responses, r.errors.malformed, r.errors.total()), (2, 1, 1), "{name}: {:?}", r.errors);
                assert_eq!((h2.connections, h2.connection_errors), (2, 1), "{name}: {h2:?}");
                assert!(h2.first_error.is_some_and(|e| e.contains("HTTP/2 connection error")), "{name}");
            }
            None => {
                assert_eq!((r.responses, r.errors.total(), h2.connections), (3, 0, 1), "{name}: {h2:?}");
            }
        }
    }
}

/// Which is cheaper per request: encoding the request's fields again (after the first, a
/// few octets of indices) or copying one block (what the client does once it is steady).
/// A measurement, printed: `cargo test -p spidey-bench --release -- --ignored --nocapture encode_cost`.
#[test]
#[ignore]
fn encode_cost() {
    let fields: Vec<(Vec<u8>, Vec<u8>)> = [
        (":method", "GET"),
        (":scheme", "http"),
        (":authority", "127.0.0.1:8080"),
        (":path", "/static/1k.bin"),
        ("user-agent", "spidey-bench"),
    ]
    .iter()
    .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
    .collect();
    let n = 1_000_000;
    let mut encoder = Encoder::new();
    let mut out = Vec::with_capacity(256);
    let mut scratch = Vec::with_capacity(256);
    let began = Instant::now();
    for _ in 0..n {
        scratch.clear();
        encoder.encode(fields.iter().map(|(n, v)| Field::new(n, v)), &mut scratch);
        out.clear();
        encode_headers(&mut out, 1, &scratch, true, 16384);
    }
    let reencode = began.elapsed();
    let again = out.len();
    let mut block = Vec::new();
    Encoder::new().encode(fields.iter().map(|(n, v)| Field::new(n, v)), &mut block);
    let began = Instant::now();
    for _ in 0..n {
        out.clear();
        encode_headers(&mut out, 1, std::hint::black_box(&block), true, 16384);
    }
    let copy = began.elapsed();
    println!(
        "re-encode: {:.0} ns/request ({again} octets with the frame header); copy: {:.0} ns/request ({} octets)",
        reencode.as_nanos() as f64 / n as f64,
        copy.as_nanos() as f64 / n as f64,
        block.len() + 9
    );
}
