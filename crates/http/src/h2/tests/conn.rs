//! The connection (`Conn`): hostile and ordinary inputs by name, each row the octets a
//! client sends after its preface, SETTINGS and SETTINGS ACK, and what must come out: the
//! frames written, the events queued, and whether the connection ended. Then the sending
//! side: heads, flow-controlled bodies, the output cap, interim heads, GOAWAY.

use super::*;
use crate::h2::{Config, Conn, Event, SendError};

/// Frame types and flags, as the rows write them.
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const PRIORITY: u8 = 0x2;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const ES: u8 = 0x1;
const EH: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIO: u8 = 0x20;

/// An HPACK integer with an `n`-bit prefix whose high bits are `first` (RFC 7541 §5.1).
fn int(out: &mut Vec<u8>, first: u8, n: u32, v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    let mut v = v - max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// A field block of literals without indexing and new names (RFC 7541 §6.2.2): it needs
/// no table, so each row's blocks are independent of the others.
fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0);
        int(&mut out, 0, 7, name.len());
        out.extend_from_slice(name.as_bytes());
        int(&mut out, 0, 7, value.len());
        out.extend_from_slice(value.as_bytes());
    }
    out
}

const GET: [(&str, &str); 4] = [(":method", "GET"), (":scheme", "https"), (":path", "/"), (":authority", "a")];
const POST: [(&str, &str); 4] = [(":method", "POST"), (":scheme", "https"), (":path", "/p"), (":authority", "a")];

/// HEADERS with `fields` after GET's pseudo-headers... or instead of them, as written.
fn headers(stream: u32, flags: u8, fields: &[(&str, &str)]) -> Vec<u8> {
    raw(HEADERS, flags, stream, &block(fields))
}

fn get(stream: u32) -> Vec<u8> {
    headers(stream, ES | EH, &GET)
}

/// A POST's head without END_STREAM, with `extra` fields after the pseudo-headers.
fn post(stream: u32, extra: &[(&str, &str)]) -> Vec<u8> {
    headers(stream, EH, &[&POST[..], extra].concat())
}

fn data(stream: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    raw(DATA, flags, stream, payload)
}

fn rst(stream: u32, code: u32) -> Vec<u8> {
    raw(RST_STREAM, 0, stream, &code.to_be_bytes())
}

fn window(stream: u32, increment: u32) -> Vec<u8> {
    raw(WINDOW_UPDATE, 0, stream, &increment.to_be_bytes())
}

fn settings(params: &[(u16, u32)]) -> Vec<u8> {
    let p: Vec<u8> =
        params.iter().flat_map(|&(id, v)| [&id.to_be_bytes()[..], &v.to_be_bytes()[..]].concat()).collect();
    raw(SETTINGS, 0, 0, &p)
}

fn ping() -> Vec<u8> {
    raw(PING, 0, 0, b"12345678")
}

/// The frames in `out`, one short line each.
fn frames(mut out: &[u8]) -> Vec<String> {
    let mut lines = Vec::new();
    while let Some((f, n)) = Frame::decode(out, crate::h2::MAX_MAX_FRAME_SIZE).expect("our output decodes") {
        let es = |e: bool| if e { " es" } else { "" };
        lines.push(match f {
            Frame::Data { stream, data, end_stream, .. } => format!("DATA {stream} {}{}", data.len(), es(end_stream)),
            Frame::Headers { stream, end_stream, .. } => format!("HEADERS {stream}{}", es(end_stream)),
            Frame::Continuation { stream, .. } => format!("CONTINUATION {stream}"),
            Frame::RstStream { stream, code } => format!("RST_STREAM {stream} {code}"),
            Frame::Settings(_) => "SETTINGS".to_string(),
            Frame::SettingsAck => "SETTINGS_ACK".to_string(),
            Frame::Ping { ack, .. } => format!("PING{}", if ack { "_ACK" } else { "" }),
            Frame::GoAway { last_stream, code, .. } => format!("GOAWAY {last_stream} {code}"),
            Frame::WindowUpdate { stream, increment } => format!("WINDOW_UPDATE {stream} +{increment}"),
            other => format!("{other:?}"),
        });
        out = &out[n..];
    }
    assert!(out.is_empty(), "a partial frame in our output");
    lines
}

/// The events queued, one short line each.
fn events(conn: &mut Conn) -> Vec<String> {
    std::iter::from_fn(|| conn.next_event())
        .map(|e| match e {
            Event::Request { stream, head, end_stream } => format!(
                "request {stream} {} {}{}",
                String::from_utf8_lossy(head.method()),
                String::from_utf8_lossy(head.path().unwrap_or(b"-")),
                if end_stream { " es" } else { "" }
            ),
            Event::Data { stream, bytes, end_stream } => {
                format!("data {stream} {}{}", bytes.len(), if end_stream { " es" } else { "" })
            }
            Event::Trailers { stream, fields } => format!("trailers {stream} {}", fields.len()),
            Event::Reset { stream, code } => format!("reset {stream} {code}"),
            Event::GoAway { last_stream, code } => format!("goaway {last_stream} {code}"),
            Event::WindowOpened { stream } => format!("window {stream}"),
        })
        .collect()
}

/// A connection past its handshake: the client's preface, empty SETTINGS and the ACK of
/// ours are in, and the output so far is written.
fn open(config: Config) -> Conn {
    let mut conn = Conn::new(config);
    let hello = [&crate::choice::HTTP2_PREFACE[..], &settings(&[]), &raw(SETTINGS, ES, 0, &[])].concat();
    assert_eq!(conn.receive(&hello), Ok(hello.len()));
    let n = conn.pending_output().len();
    conn.consumed(n);
    conn
}

/// Feeds `input` whole (as many calls as it takes), then drains output and events.
fn feed(conn: &mut Conn, input: &[u8]) -> (Vec<String>, Vec<String>, Result<(), ErrorCode>) {
    let mut at = 0;
    let mut result = Ok(());
    while at < input.len() {
        match conn.receive(&input[at..]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) => {
                result = Err(e.code);
                break;
            }
        }
    }
    let out = frames(conn.pending_output());
    let n = conn.pending_output().len();
    conn.consumed(n);
    (out, events(conn), result)
}

/// [`feed`], for the inputs that must not end the connection.
fn go(conn: &mut Conn, input: &[u8]) -> (Vec<String>, Vec<String>) {
    let (out, ev, result) = feed(conn, input);
    assert_eq!(result, Ok(()), "{out:?} {ev:?}");
    (out, ev)
}

type Row = (&'static str, Vec<u8>, &'static [&'static str], &'static [&'static str], Result<(), ErrorCode>);

fn check(config: Config, rows: Vec<Row>) {
    for (what, input, want_frames, want_events, want) in rows {
        let mut conn = open(config.clone());
        let (out, ev, result) = feed(&mut conn, &input);
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!((out, ev, result), (strings(want_frames), strings(want_events), want), "{what}");
    }
}

use ErrorCode as E;

#[test]
fn streams_and_their_rules() {
    let ok = Ok(());
    let conn = Err;
    let cat = |parts: &[Vec<u8>]| parts.concat();
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("a GET", get(1), &[], &["request 1 GET / es"], ok),
        ("a POST with a body and trailers", cat(&[post(1, &[]), data(1, 0, b"abc"), headers(1, ES | EH, &[("x-t", "1")])]),
            &[], &["request 1 POST /p", "data 1 3", "trailers 1 1"], ok),
        ("HEADERS on an even stream", get(2), &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("stream identifiers going down", cat(&[get(3), get(1)]), &["GOAWAY 3 PROTOCOL_ERROR"], &["request 3 GET / es"], conn(E::PROTOCOL_ERROR)),
        ("identifiers may skip", cat(&[get(1), get(7)]), &[], &["request 1 GET / es", "request 7 GET / es"], ok),
        ("HEADERS again on a half-closed (remote) stream", cat(&[get(1), get(1)]),
            &["RST_STREAM 1 STREAM_CLOSED"], &["request 1 GET / es", "reset 1 STREAM_CLOSED"], ok),
        ("trailers without END_STREAM", cat(&[post(1, &[]), headers(1, EH, &[("x-t", "1")])]),
            &["RST_STREAM 1 PROTOCOL_ERROR"], &["request 1 POST /p", "reset 1 PROTOCOL_ERROR"], ok),
        ("trailers with a pseudo-header", cat(&[post(1, &[]), headers(1, ES | EH, &[(":path", "/")])]),
            &["RST_STREAM 1 PROTOCOL_ERROR"], &["request 1 POST /p", "reset 1 PROTOCOL_ERROR"], ok),
        ("DATA on an idle stream", data(1, 0, b"x"), &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("RST_STREAM on an idle stream", rst(1, 8), &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("WINDOW_UPDATE on an idle stream", window(1, 1), &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("PRIORITY on an idle stream is ignored", raw(PRIORITY, 0, 5, &[0, 0, 0, 0, 16]), &[], &[], ok),
        ("PRIORITY making a stream depend on itself", raw(PRIORITY, 0, 5, &[0, 0, 0, 5, 16]),
            &["RST_STREAM 5 PROTOCOL_ERROR"], &[], ok),
        ("HEADERS with a priority that depends on itself",
            raw(HEADERS, ES | EH | PRIO, 1, &[&[0, 0, 0, 1, 16][..], &block(&GET)].concat()),
            &["RST_STREAM 1 PROTOCOL_ERROR"], &[], ok),
        ("HEADERS with a priority, accepted and ignored",
            raw(HEADERS, ES | EH | PRIO, 1, &[&[0x80, 0, 0, 0, 16][..], &block(&GET)].concat()),
            &[], &["request 1 GET / es"], ok),
        ("DATA on a half-closed (remote) stream", cat(&[get(1), data(1, 0, b"x")]),
            &["RST_STREAM 1 STREAM_CLOSED"], &["request 1 GET / es", "reset 1 STREAM_CLOSED"], ok),
        ("DATA on a stream this side reset is ignored", cat(&[headers(1, EH, &[("x", "1")]), data(1, 0, b"x")]),
            &["RST_STREAM 1 PROTOCOL_ERROR"], &[], ok),
        ("DATA after the client's RST_STREAM", cat(&[post(1, &[]), rst(1, 8), data(1, 0, b"x")]),
            &["RST_STREAM 1 STREAM_CLOSED"], &["request 1 POST /p", "reset 1 CANCEL"], ok),
        ("HEADERS after the client's RST_STREAM", cat(&[post(1, &[]), rst(1, 8), get(1)]),
            &["GOAWAY 1 STREAM_CLOSED"], &["request 1 POST /p", "reset 1 CANCEL"], conn(E::STREAM_CLOSED)),
        ("WINDOW_UPDATE and PRIORITY on a closed stream", cat(&[post(1, &[]), rst(1, 8), window(1, 5), raw(PRIORITY, 0, 1, &[0, 0, 0, 3, 1])]),
            &[], &["request 1 POST /p", "reset 1 CANCEL"], ok),
        ("PUSH_PROMISE from a client", raw(PUSH_PROMISE, EH, 1, &[0, 0, 0, 2]), &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("a GOAWAY from the client", raw(GOAWAY, 0, 0, &[0, 0, 0, 0, 0, 0, 0, 0]), &[], &["goaway 0 NO_ERROR"], ok),
        ("an unknown frame type is ignored", raw(0xfa, 0xff, 3, b"xyz"), &[], &[], ok),
        ("a frame over SETTINGS_MAX_FRAME_SIZE", data(1, 0, &[0; 16_385]), &["GOAWAY 0 FRAME_SIZE_ERROR"], &[], conn(E::FRAME_SIZE_ERROR)),
        ("an HPACK block that does not decode", raw(HEADERS, ES | EH, 1, &[0xff, 0xff, 0xff]),
            &["GOAWAY 0 COMPRESSION_ERROR"], &[], conn(E::COMPRESSION_ERROR)),
    ];
    check(Config::default(), rows);
}

#[test]
fn field_blocks_and_continuation() {
    let ok = Ok(());
    let conn = Err;
    let b = block(&GET);
    let (first, second) = b.split_at(5);
    let calm = || conn(E::ENHANCE_YOUR_CALM);
    let many_empty: Vec<u8> = (0..33).flat_map(|_| raw(CONTINUATION, 0, 1, &[])).collect();
    let big = "v".repeat(8000);
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("HEADERS and CONTINUATION", [raw(HEADERS, ES, 1, first), raw(CONTINUATION, EH, 1, second)].concat(),
            &[], &["request 1 GET / es"], ok),
        ("32 empty CONTINUATION frames, the most", [raw(HEADERS, ES, 1, first), many_empty[9..].to_vec(), raw(CONTINUATION, EH, 1, second)].concat(),
            &["GOAWAY 0 ENHANCE_YOUR_CALM"], &[], calm()),
        ("31 empty CONTINUATION frames", [raw(HEADERS, ES, 1, first), many_empty[18..].to_vec(), raw(CONTINUATION, EH, 1, second)].concat(),
            &[], &["request 1 GET / es"], ok),
        ("CONTINUATION flood (CVE-2024-27316)", [raw(HEADERS, ES, 1, first), many_empty.clone()].concat(),
            &["GOAWAY 0 ENHANCE_YOUR_CALM"], &[], calm()),
        ("a field block over the header list size", [raw(HEADERS, ES, 1, &[0; 16_000]), raw(CONTINUATION, 0, 1, &[0; 400])].concat(),
            &["GOAWAY 0 ENHANCE_YOUR_CALM"], &[], calm()),
        ("a PING inside a field block", [raw(HEADERS, ES, 1, first), ping()].concat(),
            &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("an unknown frame inside a field block", [raw(HEADERS, ES, 1, first), raw(0xfa, 0, 1, b"")].concat(),
            &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("CONTINUATION on another stream", [raw(HEADERS, ES, 1, first), raw(CONTINUATION, EH, 3, second)].concat(),
            &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("CONTINUATION without HEADERS", raw(CONTINUATION, EH, 1, &b), &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("CONTINUATION after END_HEADERS", [get(1), raw(CONTINUATION, EH, 1, &b)].concat(),
            &["GOAWAY 1 PROTOCOL_ERROR"], &["request 1 GET / es"], conn(E::PROTOCOL_ERROR)),
        ("a header list over SETTINGS_MAX_HEADER_LIST_SIZE", {
            // One 8000-octet value added to the table, then referenced twice more: a short
            // block, a long list.
            let mut blk = vec![0x40, 1, b'x'];
            int(&mut blk, 0, 7, big.len());
            blk.extend_from_slice(big.as_bytes());
            blk.extend_from_slice(&[0xbe, 0xbe]);
            raw(HEADERS, ES | EH, 1, &blk)
        }, &["GOAWAY 0 COMPRESSION_ERROR"], &[], conn(E::COMPRESSION_ERROR)),
        ("zero-length fields, many", raw(HEADERS, ES | EH, 1, &[0u8, 0, 0].repeat(600)),
            &["GOAWAY 0 COMPRESSION_ERROR"], &[], conn(E::COMPRESSION_ERROR)),
    ];
    check(Config::default(), rows);
}

#[test]
fn malformed_requests_are_stream_errors() {
    let refused: &[&str] = &["RST_STREAM 1 PROTOCOL_ERROR"];
    let with = |extra: &[(&'static str, &'static str)]| headers(1, ES | EH, &[&GET[..], extra].concat());
    #[rustfmt::skip]
    let bad: Vec<(&str, Vec<u8>)> = vec![
        ("no :method", headers(1, ES | EH, &GET[1..])),
        ("no :scheme", headers(1, ES | EH, &[GET[0], GET[2], GET[3]])),
        ("no :path", headers(1, ES | EH, &[GET[0], GET[1], GET[3]])),
        ("an empty :path", headers(1, ES | EH, &[GET[0], GET[1], (":path", ""), GET[3]])),
        ("a :path with a space", headers(1, ES | EH, &[GET[0], GET[1], (":path", "/a b"), GET[3]])),
        ("a :path with a tab", headers(1, ES | EH, &[GET[0], GET[1], (":path", "/a\tb"), GET[3]])),
        ("a :path with DEL", headers(1, ES | EH, &[GET[0], GET[1], (":path", "/a\x7fb"), GET[3]])),
        ("an unknown pseudo-header", with(&[(":protocol", "x")])),
        ("a response pseudo-header", headers(1, ES | EH, &[&GET[..], &[(":status", "200")]].concat())),
        ("a pseudo-header after a regular field", headers(1, ES | EH, &[GET[0], GET[1], ("accept", "*/*"), GET[2]])),
        ("a pseudo-header twice", headers(1, ES | EH, &[&GET[..], &[(":path", "/b")]].concat())),
        ("an upper-case name", with(&[("Accept", "*/*")])),
        ("a name with a space", with(&[("a b", "c")])),
        ("a name with a colon inside", with(&[("a:b", "c")])),
        ("an empty name", with(&[("", "c")])),
        ("a value with LF", with(&[("a", "b\nc")])),
        ("a value with NUL", with(&[("a", "b\0c")])),
        ("a value with a leading space", with(&[("a", " b")])),
        ("a value with a trailing tab", with(&[("a", "b\t")])),
        ("connection", with(&[("connection", "close")])),
        ("keep-alive", with(&[("keep-alive", "5")])),
        ("proxy-connection", with(&[("proxy-connection", "x")])),
        ("transfer-encoding", with(&[("transfer-encoding", "chunked")])),
        ("upgrade", with(&[("upgrade", "h2c")])),
        ("te other than trailers", with(&[("te", "gzip")])),
        ("host differing from :authority", with(&[("host", "b")])),
        ("CONNECT with :path", headers(1, ES | EH, &[(":method", "CONNECT"), (":authority", "a:443"), (":path", "/")])),
        ("CONNECT without :authority", headers(1, ES | EH, &[(":method", "CONNECT")])),
        ("content-length not a number", with(&[("content-length", "1x")])),
        ("content-length past u64", with(&[("content-length", "99999999999999999999")])),
        ("two content-lengths that differ", headers(1, EH, &[&POST[..], &[("content-length", "1"), ("content-length", "2")]].concat())),
        ("END_STREAM on a head with content-length 5", with(&[("content-length", "5")])),
    ];
    let rows: Vec<Row> = bad.into_iter().map(|(what, input)| (what, input, refused, &[][..], Ok(()))).collect();
    check(Config::default(), rows);
    #[rustfmt::skip]
    let good: Vec<Row> = vec![
        ("te: trailers", with(&[("te", "trailers")]), &[], &["request 1 GET / es"], Ok(())),
        ("host equal to :authority", with(&[("host", "a")]), &[], &["request 1 GET / es"], Ok(())),
        ("CONNECT", headers(1, EH, &[(":method", "CONNECT"), (":authority", "a:443")]), &[], &["request 1 CONNECT -"], Ok(())),
        ("content-length 0 with END_STREAM", with(&[("content-length", "0")]), &[], &["request 1 GET / es"], Ok(())),
        ("content-length repeated, equal", headers(1, ES | EH, &[&GET[..], &[("content-length", "0"), ("content-length", "0")]].concat()),
            &[], &["request 1 GET / es"], Ok(())),
        ("a cookie in crumbs", with(&[("cookie", "a=1"), ("cookie", "b=2")]), &[], &["request 1 GET / es"], Ok(())),
    ];
    check(Config::default(), good);
}

#[test]
fn content_length_against_data() {
    let cl = |n: &'static str| post(1, &[("content-length", n)]);
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("as declared", [cl("3"), data(1, ES, b"abc")].concat(), &[], &["request 1 POST /p", "data 1 3 es"], Ok(())),
        ("in two frames", [cl("3"), data(1, 0, b"ab"), data(1, ES, b"c")].concat(), &[],
            &["request 1 POST /p", "data 1 2", "data 1 1 es"], Ok(())),
        ("more than declared", [cl("3"), data(1, 0, b"abcd")].concat(), &["RST_STREAM 1 PROTOCOL_ERROR"],
            &["request 1 POST /p", "reset 1 PROTOCOL_ERROR"], Ok(())),
        ("less than declared", [cl("3"), data(1, ES, b"ab")].concat(), &["RST_STREAM 1 PROTOCOL_ERROR"],
            &["request 1 POST /p", "reset 1 PROTOCOL_ERROR"], Ok(())),
        ("less, then trailers", [cl("3"), data(1, 0, b"ab"), headers(1, ES | EH, &[("x", "y")])].concat(),
            &["RST_STREAM 1 PROTOCOL_ERROR"], &["request 1 POST /p", "data 1 2", "reset 1 PROTOCOL_ERROR"], Ok(())),
    ];
    check(Config::default(), rows);
}

#[test]
fn settings_ping_and_windows() {
    let ok = Ok(());
    let conn = Err;
    let max = crate::h2::MAX_WINDOW_SIZE;
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("SETTINGS is acknowledged", settings(&[(0x4, 100), (0x5, 20_000)]), &["SETTINGS_ACK"], &[], ok),
        ("SETTINGS with ENABLE_PUSH 1 from a client is fine", settings(&[(0x2, 1)]), &["SETTINGS_ACK"], &[], ok),
        ("SETTINGS INITIAL_WINDOW_SIZE over 2^31-1", settings(&[(0x4, max + 1)]),
            &["GOAWAY 0 FLOW_CONTROL_ERROR"], &[], conn(E::FLOW_CONTROL_ERROR)),
        ("SETTINGS that push an open stream's window over 2^31-1",
            [get(1), window(1, max - 65_535), settings(&[(0x4, 65_536)])].concat(),
            &["GOAWAY 1 FLOW_CONTROL_ERROR"], &["request 1 GET / es"], conn(E::FLOW_CONTROL_ERROR)),
        ("an unsolicited SETTINGS ACK is ignored", raw(SETTINGS, ES, 0, &[]), &[], &[], ok),
        ("PING is answered", ping(), &["PING_ACK"], &[], ok),
        ("a PING ACK is not", raw(PING, ES, 0, b"12345678"), &[], &[], ok),
        ("WINDOW_UPDATE to the connection's 2^31-1", window(0, max - 65_535), &[], &[], ok),
        ("WINDOW_UPDATE past 2^31-1 on the connection", window(0, max - 65_534),
            &["GOAWAY 0 FLOW_CONTROL_ERROR"], &[], conn(E::FLOW_CONTROL_ERROR)),
        ("WINDOW_UPDATE past 2^31-1 on a stream", [get(1), window(1, max - 65_534)].concat(),
            &["RST_STREAM 1 FLOW_CONTROL_ERROR"], &["request 1 GET / es", "reset 1 FLOW_CONTROL_ERROR"], ok),
        ("WINDOW_UPDATE of 0 on a stream", [get(1), window(1, 0)].concat(),
            &["RST_STREAM 1 PROTOCOL_ERROR"], &["request 1 GET / es", "reset 1 PROTOCOL_ERROR"], ok),
        ("WINDOW_UPDATE of 0 on an idle stream", window(1, 0), &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
        ("PRIORITY of 4 octets on an idle stream", raw(PRIORITY, 0, 3, &[0, 0, 0, 0]), &["RST_STREAM 3 FRAME_SIZE_ERROR"], &[], ok),
        ("WINDOW_UPDATE of 0 on the connection", window(0, 0), &["GOAWAY 0 PROTOCOL_ERROR"], &[], conn(E::PROTOCOL_ERROR)),
    ];
    check(Config::default(), rows);

    // Small windows: 100 octets a stream, the connection's 65535.
    let small = Config { initial_window_size: 100, connection_window: 65_535, ..Config::default() };
    let big = Config { initial_window_size: 1 << 20, connection_window: 65_535, ..Config::default() };
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("DATA filling the stream's window", [post(1, &[]), data(1, 0, &[7; 100])].concat(), &[],
            &["request 1 POST /p", "data 1 100"], ok),
        ("DATA over the stream's window", [post(1, &[]), data(1, 0, &[7; 101])].concat(),
            &["RST_STREAM 1 FLOW_CONTROL_ERROR"], &["request 1 POST /p", "reset 1 FLOW_CONTROL_ERROR"], ok),
        ("padding is given back at once", [post(1, &[]), data(1, PADDED, &[&[59u8][..], b"ab", &[0; 59]].concat())].concat(),
            &["WINDOW_UPDATE 1 +60"], &["request 1 POST /p", "data 1 2"], ok),
    ];
    check(small, rows);
    let frame = data(1, 0, &[7; 16_384]);
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("DATA over the connection's window: 4 x 16384 > 65535", [post(1, &[]), frame.repeat(4)].concat(),
            &["GOAWAY 1 FLOW_CONTROL_ERROR"], &["request 1 POST /p", "data 1 16384", "data 1 16384", "data 1 16384"],
            conn(E::FLOW_CONTROL_ERROR)),
    ];
    check(big, rows);
}

#[test]
fn floods() {
    let calm = Err(E::ENHANCE_YOUR_CALM);
    let limits = Config {
        max_concurrent_streams: 2,
        max_queued_acks: 4,
        max_empty_frames: 3,
        reset_window: 6,
        max_resets: 3,
        ..Config::default()
    };
    let get_rst = |ids: &[u32]| -> Vec<u8> { ids.iter().flat_map(|&i| [get(i), rst(i, 8)].concat()).collect() };
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("MAX_CONCURRENT_STREAMS: the third is refused", [post(1, &[]), post(3, &[]), post(5, &[])].concat(),
            &["RST_STREAM 5 REFUSED_STREAM"], &["request 1 POST /p", "request 3 POST /p"], Ok(())),
        ("a stream closing makes room", [post(1, &[]), post(3, &[]), rst(1, 8), post(5, &[])].concat(),
            &[], &["request 1 POST /p", "request 3 POST /p", "reset 1 CANCEL", "request 5 POST /p"], Ok(())),
        ("refused streams count as resets", [post(1, &[]), post(3, &[]), get(5), get(7), get(9), get(11)].concat(),
            &["RST_STREAM 5 REFUSED_STREAM", "RST_STREAM 7 REFUSED_STREAM", "RST_STREAM 9 REFUSED_STREAM",
              "RST_STREAM 11 REFUSED_STREAM", "GOAWAY 11 ENHANCE_YOUR_CALM"],
            &["request 1 POST /p", "request 3 POST /p"], calm),
        ("malformed requests count as resets", (0..4).flat_map(|i| headers(2 * i + 1, ES | EH, &[("x", "y")])).collect(),
            &["RST_STREAM 1 PROTOCOL_ERROR", "RST_STREAM 3 PROTOCOL_ERROR", "RST_STREAM 5 PROTOCOL_ERROR",
              "RST_STREAM 7 PROTOCOL_ERROR", "GOAWAY 7 ENHANCE_YOUR_CALM"], &[], calm),
        ("four PINGs unanswered", ping().repeat(4), &["PING_ACK"; 4], &[], Ok(())),
        ("PING flood: the fifth", ping().repeat(5), &["PING_ACK", "PING_ACK", "PING_ACK", "PING_ACK", "PING_ACK", "GOAWAY 0 ENHANCE_YOUR_CALM"], &[], calm),
        ("SETTINGS flood", settings(&[]).repeat(5),
            &["SETTINGS_ACK", "SETTINGS_ACK", "SETTINGS_ACK", "SETTINGS_ACK", "SETTINGS_ACK", "GOAWAY 0 ENHANCE_YOUR_CALM"], &[], calm),
        ("three empty DATA frames", [post(1, &[]), data(1, 0, b"").repeat(3), data(1, ES, b"")].concat(), &[],
            &["request 1 POST /p", "data 1 0 es"], Ok(())),
        ("empty DATA flood: the fourth", [post(1, &[]), data(1, 0, b"").repeat(4)].concat(), &["GOAWAY 1 ENHANCE_YOUR_CALM"],
            &["request 1 POST /p"], calm),
    ];
    check(limits, rows);
    let rapid = Config { max_concurrent_streams: 10, reset_window: 6, max_resets: 3, ..Config::default() };
    let r = |ids: &[u32]| -> Vec<String> {
        ids.iter().flat_map(|i| [format!("request {i} GET / es"), format!("reset {i} CANCEL")]).collect()
    };
    let leak =
        |v: Vec<String>| -> &'static [&'static str] { v.into_iter().map(|s| &*s.leak()).collect::<Vec<_>>().leak() };
    let gets = |ids: &[u32]| -> Vec<String> { ids.iter().map(|i| format!("request {i} GET / es")).collect() };
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("rapid reset: three resets", get_rst(&[1, 3, 5]), &[], leak(r(&[1, 3, 5])), Ok(())),
        ("rapid reset: the fourth (CVE-2023-44487)", get_rst(&[1, 3, 5, 7]), &["GOAWAY 7 ENHANCE_YOUR_CALM"],
            leak(r(&[1, 3, 5, 7])), calm),
        ("rapid reset: the count starts again after 6 streams",
            [get_rst(&[1, 3, 5]), get(7), get(9), get(11), get_rst(&[13, 15, 17])].concat(), &[],
            leak([r(&[1, 3, 5]), gets(&[7, 9, 11]), r(&[13, 15, 17])].concat()), Ok(())),
    ];
    check(rapid, rows);
}

#[test]
fn the_preface() {
    let hello = [&crate::choice::HTTP2_PREFACE[..], &settings(&[])].concat();
    // In pieces: nothing taken until the preface is whole, then the frame once whole.
    let mut conn = Conn::new(Config::default());
    assert_eq!(conn.receive(&hello[..10]), Ok(0));
    assert_eq!(conn.receive(&hello[..30]), Ok(24));
    assert_eq!(conn.receive(&hello[24..]), Ok(9));
    assert_eq!(frames(conn.pending_output()), ["SETTINGS", "WINDOW_UPDATE 0 +983041", "SETTINGS_ACK"]);

    let refused: [(&str, Vec<u8>, ErrorCode); 3] = [
        ("an HTTP/1.1 request", b"GET / HTTP/1.1\r\n\r\n".to_vec(), E::PROTOCOL_ERROR),
        ("a preface and no SETTINGS", [&crate::choice::HTTP2_PREFACE[..], &ping()].concat(), E::PROTOCOL_ERROR),
        (
            "a preface and a stream error first",
            [&crate::choice::HTTP2_PREFACE[..], &window(1, 0)].concat(),
            E::PROTOCOL_ERROR,
        ),
    ];
    for (what, input, code) in refused {
        let mut conn = Conn::new(Config::default());
        let n = conn.pending_output().len();
        conn.consumed(n);
        assert_eq!(conn.receive(&input).map_err(|e| e.code), Err(code), "{what}");
        assert_eq!(frames(conn.pending_output()), [format!("GOAWAY 0 {code}")], "{what}");
        assert!(!conn.wants_read() && conn.receive(&input) == Ok(0), "{what}");
        conn.consumed(conn.pending_output().len());
        assert!(conn.is_closed(), "{what}");
    }
}

#[test]
fn our_limits_hold_once_acknowledged() {
    // Before the client's ACK: frames of 16384 at most and windows of 65535, whatever
    // this side advertised.
    let config = Config { max_frame_size: 32_768, initial_window_size: 200_000, ..Config::default() };
    let mut conn = Conn::new(config.clone());
    let hello = [&crate::choice::HTTP2_PREFACE[..], &settings(&[])].concat();
    assert!(conn.receive(&hello).is_ok());
    let (_, _, r) = feed(&mut conn, &[post(1, &[]), data(1, 0, &[0; 16_385])].concat());
    assert_eq!(r, Err(E::FRAME_SIZE_ERROR));
    // After it: 32768-octet frames, and a stream window of 200000 (65535 before, and the
    // difference given to the streams already open).
    let mut conn = Conn::new(config.clone());
    let (_, ev, r) = feed(&mut conn, &[&hello[..], &post(1, &[]), &raw(SETTINGS, ES, 0, &[])].concat());
    assert_eq!((ev, r), (vec!["request 1 POST /p".to_string()], Ok(())));
    let (out, _, r) = feed(&mut conn, &data(1, 0, &[0; 32_768]).repeat(6));
    assert_eq!((out, r), (vec![], Ok(())));
    let (out, ev, _) = feed(&mut conn, &data(1, 0, &[0; 3_500]));
    assert_eq!(
        (out, ev),
        (vec!["RST_STREAM 1 FLOW_CONTROL_ERROR".to_string()], vec!["reset 1 FLOW_CONTROL_ERROR".to_string()])
    );
}

#[test]
fn release_gives_credit_back_by_halves() {
    let config = Config { initial_window_size: 100, connection_window: 400, ..Config::default() };
    let mut conn = open(config);
    go(&mut conn, &[post(1, &[]), data(1, 0, &[1; 60])].concat());
    conn.release(1, 40);
    assert_eq!(frames(conn.pending_output()), Vec::<String>::new(), "40 of 100: under half");
    conn.release(1, 40); // only 20 more were held
    assert_eq!(frames(conn.pending_output()), ["WINDOW_UPDATE 1 +60"]);
    conn.consumed(conn.pending_output().len());
    // The stream's window is whole again: 100 more octets may come.
    let (out, ev, _) = feed(&mut conn, &data(1, 0, &[1; 100]));
    assert_eq!((out, ev), (vec![], vec!["data 1 100".to_string()]));
    // A reset gives the connection back what the stream held: 60 released, and 100 held
    // on each stream, over half of 400 once both close.
    let (out, _) = go(&mut conn, &[post(3, &[]), data(3, 0, &[1; 100])].concat());
    assert_eq!(out, Vec::<String>::new());
    conn.send_reset(1, E::CANCEL);
    conn.send_reset(3, E::CANCEL);
    assert_eq!(frames(conn.pending_output()), ["RST_STREAM 1 CANCEL", "RST_STREAM 3 CANCEL", "WINDOW_UPDATE 0 +260"]);
    conn.release(3, 100); // a closed stream: nothing
    assert_eq!(conn.open_streams(), 0);
}

#[test]
fn responses_under_flow_control() {
    let mut conn = open(Config::default());
    // The client allows 10 octets a stream and frames of 16384.
    go(&mut conn, &[settings(&[(0x4, 10)]), get(1)].concat());
    assert_eq!(conn.send_data(1, b"x", false), Err(SendError::WrongOrder));
    conn.send_head(1, 200, &[(b"Content-Type", b"text/plain"), (b"Connection", b"close")], false).unwrap();
    assert_eq!(conn.send_head(1, 200, &[], false), Err(SendError::WrongOrder));
    assert_eq!(conn.send_data(1, &[b'a'; 25], true), Ok(10));
    assert_eq!(conn.send_data(1, &[b'a'; 15], true), Ok(0));
    let (out, ev, _) = feed(&mut conn, &window(1, 5));
    assert_eq!((out, ev), (vec!["HEADERS 1".to_string(), "DATA 1 10".to_string()], vec!["window 1".to_string()]));
    assert_eq!(conn.send_data(1, &[b'a'; 15], true), Ok(5));
    go(&mut conn, &window(1, 100));
    assert_eq!(conn.send_data(1, &[b'a'; 10], true), Ok(10));
    assert_eq!(frames(conn.pending_output()), ["DATA 1 10 es"], "DATA 1 5 was written by `go`");
    assert_eq!(conn.send_data(1, b"", true), Err(SendError::StreamGone), "closed by END_STREAM");
    assert_eq!(conn.open_streams(), 0);

    // The head's fields went lower-cased and without `connection`: decode them back.
    let mut conn = open(Config::default());
    go(&mut conn, &get(1));
    let head: [(&[u8], &[u8]); 6] = [
        (b"server", b"spidey"),
        (b"Content-Type", b"text/plain"),
        (b"Connection", b"close"),
        (b"etag", b"\"x\""),
        (b"X-Mixed-CASE", b"Kept"),
        (b"keep-alive", b"timeout=5"),
    ];
    conn.send_head(1, 404, &head, true).unwrap();
    let out = conn.pending_output().to_vec();
    let Ok(Some((Frame::Headers { fragment, end_stream: true, end_headers: true, .. }, _))) =
        Frame::decode(&out, 16_384)
    else {
        panic!("{out:02x?}")
    };
    let mut fields = Vec::new();
    crate::hpack::Decoder::new(4096).decode(fragment, |f| fields.push((f.name.to_vec(), f.value.to_vec()))).unwrap();
    let want: [(&[u8], &[u8]); 5] = [
        (b":status", b"404"),
        (b"server", b"spidey"),
        (b"content-type", b"text/plain"),
        (b"etag", b"\"x\""),
        (b"x-mixed-case", b"Kept"),
    ];
    assert_eq!(fields, want.map(|(n, v)| (n.to_vec(), v.to_vec())));
}

/// The connection's room for body octets on any stream: its window, and the output cap;
/// a stream's own room is never more.
#[test]
fn the_connections_room_bounds_every_streams() {
    let mut conn = open(Config::default());
    go(&mut conn, &[get(1), get(3)].concat());
    assert_eq!(conn.connection_room(), 65_535, "the initial window");
    conn.send_head(1, 200, &[], false).unwrap();
    conn.send_head(3, 200, &[], false).unwrap();
    assert_eq!(conn.send_data(1, &[b'a'; 60_000], false), Ok(60_000));
    assert_eq!(conn.connection_room(), 5_535);
    assert_eq!(conn.data_room(3), 5_535);
    assert_eq!(conn.send_data(3, &[b'b'; 10_000], false), Ok(5_535));
    assert_eq!((conn.connection_room(), conn.data_room(1), conn.data_room(3)), (0, 0, 0));
    go(&mut conn, &window(0, 1_000));
    assert_eq!((conn.connection_room(), conn.data_room(1), conn.data_room(3)), (1_000, 1_000, 1_000));
    // The output cap: 256 KiB queued and not yet written.
    let mut conn = open(Config::default());
    go(&mut conn, &[settings(&[(0x4, 1 << 20)]), window(0, 1 << 20), get(1)].concat());
    conn.send_head(1, 200, &[], false).unwrap();
    let queued = conn.pending_output().len();
    assert_eq!(conn.send_data(1, &vec![b'c'; 300_000], false), Ok(256 * 1024 - queued));
    assert_eq!(conn.connection_room(), 0, "the output is full");
    let n = conn.pending_output().len();
    conn.consumed(n);
    assert!(conn.connection_room() > 0);
}

#[test]
fn interim_heads_trailers_and_frame_sizes() {
    let mut conn = open(Config::default());
    go(&mut conn, &[settings(&[(0x5, 20_000)]), post(1, &[("expect", "100-continue")])].concat());
    conn.send_head(1, 100, &[], true).unwrap(); // END_STREAM ignored on an interim head
    conn.send_head(1, 200, &[], false).unwrap();
    assert_eq!(conn.send_data(1, &[0; 30_000], false), Ok(30_000));
    conn.send_trailers(1, &[(b"X-Sum", b"1")]).unwrap();
    let out = frames(conn.pending_output());
    assert_eq!(out, ["HEADERS 1", "HEADERS 1", "DATA 1 20000", "DATA 1 10000", "HEADERS 1 es"]);
    assert_eq!(conn.open_streams(), 1, "half-closed (local): the client's body may still come");
    let (_, ev, _) = feed(&mut conn, &data(1, ES, b"body"));
    assert_eq!(ev, ["data 1 4 es"]);
    assert_eq!(conn.open_streams(), 0);
}

#[test]
fn the_output_cap_and_window_opened() {
    let config = Config { max_output: 40_000, ..Config::default() };
    let mut conn = open(config);
    go(&mut conn, &[settings(&[(0x4, 1 << 20)]), window(0, 1 << 20), get(1), get(3)].concat());
    conn.send_head(1, 200, &[], false).unwrap();
    conn.send_head(3, 200, &[], false).unwrap();
    let first = conn.send_data(1, &[0; 100_000], true).unwrap();
    assert!(first < 40_000, "{first}");
    assert_eq!(conn.send_data(3, &[0; 10], true), Ok(0), "the output is full");
    assert!(!conn.wants_read(), "a full output stops reading");
    assert_eq!(conn.receive(&ping()), Ok(0));
    conn.consumed(conn.pending_output().len() - 1000);
    assert_eq!(events(&mut conn), ["window 1", "window 3"]);
    assert!(conn.wants_read());
}

#[test]
fn going_away() {
    // Gracefully: the open stream finishes, a new one is ignored, then closed.
    let mut conn = open(Config::default());
    go(&mut conn, &get(1));
    conn.go_away(E::NO_ERROR);
    let (out, ev, r) = feed(&mut conn, &[get(3), data(3, 0, b"x")].concat());
    assert_eq!((out, ev, r), (vec!["GOAWAY 1 NO_ERROR".to_string()], vec![], Ok(())));
    assert!(!conn.is_closed());
    conn.send_head(1, 204, &[], true).unwrap();
    assert!(!conn.is_closed(), "output pending");
    conn.consumed(conn.pending_output().len());
    assert!(conn.is_closed());

    // The client's GOAWAY: its streams are answered, and a PING after them too; the
    // client closes the connection, not this side.
    let mut conn = open(Config::default());
    go(&mut conn, &[get(1), raw(GOAWAY, 0, 0, &[0; 8])].concat());
    conn.send_head(1, 204, &[], true).unwrap();
    conn.consumed(conn.pending_output().len());
    let (out, _) = go(&mut conn, &ping());
    assert_eq!(out, ["PING_ACK"]);
    assert!(!conn.is_closed());

    // With an error: every stream dropped at once.
    let mut conn = open(Config::default());
    go(&mut conn, &get(1));
    conn.go_away(E::INTERNAL_ERROR);
    assert_eq!(conn.send_head(1, 200, &[], true), Err(SendError::StreamGone));
    assert_eq!(frames(conn.pending_output()), ["GOAWAY 1 INTERNAL_ERROR"]);
    conn.consumed(conn.pending_output().len());
    assert!(conn.is_closed());
}

#[test]
fn the_peers_table_size_reaches_the_encoder() {
    let mut conn = open(Config::default());
    go(&mut conn, &[settings(&[(0x1, 0)]), get(1)].concat());
    conn.send_head(1, 200, &[], true).unwrap();
    let out = conn.pending_output();
    assert_eq!(out[9], 0x20, "the block starts with a size update to 0: {out:02x?}");
}

#[test]
fn a_full_event_queue_stops_reading() {
    let mut conn = open(Config::default());
    let input = [post(1, &[]), data(1, 0, b"x").repeat(300)].concat();
    let taken = conn.receive(&input).unwrap();
    assert_eq!(taken, input.len() - 45 * 10, "the request and 255 DATA frames: 256 events");
    assert!(!conn.wants_read());
    assert_eq!(conn.receive(&input[taken..]), Ok(0));
    assert_eq!(events(&mut conn).len(), 256);
    assert_eq!(conn.receive(&input[taken..]), Ok(45 * 10));
}

#[test]
fn write_to_drains_the_output() {
    let mut conn = Conn::new(Config::default());
    let mut wire = Vec::new();
    assert_eq!(conn.write_to(&mut wire).unwrap(), 9 + 36 + 13);
    assert_eq!(frames(&wire), ["SETTINGS", "WINDOW_UPDATE 0 +983041"]);
    assert!(!conn.wants_write());
    assert_eq!(conn.read_buffer_len(), 9 + 16_384);
}

#[test]
fn going_away_before_the_preface() {
    let mut conn = Conn::new(Config::default());
    conn.consumed(conn.pending_output().len());
    conn.go_away(E::NO_ERROR);
    assert_eq!(frames(conn.pending_output()), ["GOAWAY 0 NO_ERROR"]);
    assert_eq!(conn.receive(crate::choice::HTTP2_PREFACE), Ok(0));
    conn.consumed(conn.pending_output().len());
    assert!(conn.is_closed());
}

#[test]
fn the_peers_initial_window_moves_open_streams() {
    let mut conn = open(Config::default());
    go(&mut conn, &[settings(&[(0x4, 10)]), get(1)].concat());
    conn.send_head(1, 200, &[], false).unwrap();
    assert_eq!(conn.send_data(1, &[0; 50], true), Ok(10));
    // Lowered to 0: the window is -10; raised to 30, it is 20, and the stream may send.
    let (_, ev) = go(&mut conn, &settings(&[(0x4, 0)]));
    assert_eq!(ev, Vec::<String>::new());
    let (out, ev) = go(&mut conn, &settings(&[(0x4, 30)]));
    assert_eq!((out, ev), (vec!["SETTINGS_ACK".to_string()], vec!["window 1".to_string()]));
    assert_eq!(conn.send_data(1, &[0; 40], true), Ok(20));
}

#[test]
fn data_read_in_place_is_framed_as_data_given() {
    // (the peer's SETTINGS_INITIAL_WINDOW_SIZE, the body's length)
    let cases: &[(u32, usize)] = &[(65_535, 40_000), (10, 50), (65_535, 0), (20_000, 20_000)];
    for &(window, len) in cases {
        let body: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let (mut given, mut read) = (open(Config::default()), open(Config::default()));
        for conn in [&mut given, &mut read] {
            go(conn, &[settings(&[(0x4, window)]), get(1)].concat());
            conn.send_head(1, 200, &[], false).unwrap();
            conn.consumed(conn.pending_output().len());
        }
        let a = given.send_data(1, &body, true);
        let mut at = 0;
        let b = read.send_data_with(1, len, true, |bufs| {
            for buf in bufs {
                buf.copy_from_slice(&body[at..at + buf.len()]);
                at += buf.len();
            }
            true
        });
        assert_eq!(a, b, "window {window}, {len} octets");
        assert_eq!(given.pending_output(), read.pending_output(), "window {window}, {len} octets");
    }
    // More frames than one read is given (8): 12 frames of 16 KiB, read 8 and 4 at a time,
    // each read given its frames' payloads in order.
    let (mut given, mut read) = (open(Config::default()), open(Config::default()));
    let big = 1 << 20;
    for conn in [&mut given, &mut read] {
        go(conn, &[settings(&[(0x4, big)]), window(0, big), get(1)].concat());
        conn.send_head(1, 200, &[], false).unwrap();
        conn.consumed(conn.pending_output().len());
    }
    let body: Vec<u8> = (0..12 * 16_384).map(|i| (i % 251) as u8).collect();
    assert_eq!(given.send_data(1, &body, true), Ok(body.len()));
    let (mut at, mut groups) = (0, Vec::new());
    let sent = read.send_data_with(1, body.len(), true, |bufs| {
        groups.push(bufs.iter().map(|b| b.len()).collect::<Vec<_>>());
        for buf in bufs {
            buf.copy_from_slice(&body[at..at + buf.len()]);
            at += buf.len();
        }
        true
    });
    assert_eq!(sent, Ok(body.len()));
    assert_eq!(groups, [vec![16_384; 8], vec![16_384; 4]]);
    assert_eq!(given.pending_output(), read.pending_output());
    // A source that fails on its second read: the first read's frames are sent, none of
    // the second's.
    let mut conn = open(Config::default());
    go(&mut conn, &[settings(&[(0x4, big)]), window(0, big), get(1)].concat());
    conn.send_head(1, 200, &[], false).unwrap();
    conn.consumed(conn.pending_output().len());
    let mut reads = 0;
    let failed = conn.send_data_with(1, 12 * 16_384, true, |_| {
        reads += 1;
        reads == 1
    });
    assert_eq!(failed, Err(SendError::Source));
    assert_eq!(frames(conn.pending_output()).len(), 8, "the first read's frames only");
    // A source that fails: nothing of its frame is sent.
    let mut conn = open(Config::default());
    go(&mut conn, &get(1));
    conn.send_head(1, 200, &[], false).unwrap();
    conn.consumed(conn.pending_output().len());
    assert_eq!(conn.send_data_with(1, 100, true, |_| false), Err(SendError::Source));
    assert!(conn.pending_output().is_empty());
}
