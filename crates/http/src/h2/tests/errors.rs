//! One row per rule of RFC 9113 §4.2 and §6 that a frame can break alone, with the rows
//! on either side of each boundary: the exact error code, and whether it ends the
//! connection or one stream.

use super::*;
use crate::h2::MAX_MAX_FRAME_SIZE;
use ErrorCode as E;
use Kind::{Conn, Stream};

/// Frame types, as the rows write them.
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

/// Flags.
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const PADDED: u8 = 0x8;
const PRIO: u8 = 0x20;

/// One SETTINGS parameter's 6 octets.
fn param(id: u16, value: u32) -> Vec<u8> {
    let mut p = id.to_be_bytes().to_vec();
    p.extend_from_slice(&value.to_be_bytes());
    p
}

/// A frame header alone, announcing `len` octets of payload that have not come.
fn header_only(len: u32, kind: u8) -> Vec<u8> {
    let mut h = raw(kind, 0, 1, &[]);
    h[..3].copy_from_slice(&len.to_be_bytes()[1..]);
    h
}

type Want = Result<(), (ErrorCode, Kind)>;

#[test]
fn each_rule_refuses_with_its_code_and_kind() {
    let ok: Want = Ok(());
    let conn = |code| -> Want { Err((code, Conn)) };
    let stream = |code, id| -> Want { Err((code, Stream(id))) };
    let big = |n: usize| vec![0u8; n];
    let prio = |dep: u32, weight: u8| {
        let mut p = dep.to_be_bytes().to_vec();
        p.push(weight);
        p
    };
    let two_params = [param(0x3, 100), param(0x2, 2)].concat();
    // (what, octets, outcome at a SETTINGS_MAX_FRAME_SIZE of 16384)
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, Want)> = vec![
        // §4.2: the maximum frame size, for every type, seen from the header alone.
        ("DATA of exactly the maximum", raw(DATA, 0, 1, &big(16_384)), ok),
        ("DATA one octet over", raw(DATA, 0, 1, &big(16_385)), conn(E::FRAME_SIZE_ERROR)),
        ("over the maximum, refused from the header", header_only(16_385, DATA), conn(E::FRAME_SIZE_ERROR)),
        ("2^24-1 announced, refused from the header", header_only(MAX_MAX_FRAME_SIZE, HEADERS), conn(E::FRAME_SIZE_ERROR),),
        ("an unknown type over the maximum", header_only(16_385, 0xff), conn(E::FRAME_SIZE_ERROR)),
        ("SETTINGS ACK over the maximum", header_only(16_385, SETTINGS), conn(E::FRAME_SIZE_ERROR)),
        // §6.1 DATA.
        ("DATA on stream 0", raw(DATA, 0, 0, b"x"), conn(E::PROTOCOL_ERROR)),
        ("DATA on stream 0 with the reserved bit set", raw(DATA, 0, 0x8000_0000, b"x"), conn(E::PROTOCOL_ERROR),),
        ("DATA on stream 2^31-1", raw(DATA, 0, 0x7fff_ffff, b"x"), ok),
        ("empty DATA", raw(DATA, END_STREAM, 1, b""), ok),
        ("DATA PADDED, no Pad Length", raw(DATA, PADDED, 1, b""), conn(E::FRAME_SIZE_ERROR)),
        ("DATA padding of 0", raw(DATA, PADDED, 1, &hex("00 6869")), ok),
        ("DATA padding all but the Pad Length", raw(DATA, PADDED, 1, &hex("04 00000000")), ok),
        ("DATA padding the payload's length", raw(DATA, PADDED, 1, &hex("05 00000000")), conn(E::PROTOCOL_ERROR),),
        ("DATA Pad Length 1, nothing after it", raw(DATA, PADDED, 1, &hex("01")), conn(E::PROTOCOL_ERROR)),
        ("DATA padding of 255 in 10 octets", raw(DATA, PADDED, 1, &hex("ff 0000 0000 0000 0000 00")), conn(E::PROTOCOL_ERROR),),
        // §6.2 HEADERS.
        ("HEADERS on stream 0", raw(HEADERS, 0x4, 0, &hex("82")), conn(E::PROTOCOL_ERROR)),
        ("HEADERS PADDED, no Pad Length", raw(HEADERS, PADDED, 1, b""), conn(E::FRAME_SIZE_ERROR)),
        ("HEADERS padding the payload's length", raw(HEADERS, PADDED, 1, &hex("03 8200")), conn(E::PROTOCOL_ERROR),),
        ("HEADERS padding all but the Pad Length", raw(HEADERS, PADDED, 1, &hex("02 0000")), ok),
        ("HEADERS PRIORITY, 4 octets", raw(HEADERS, PRIO, 1, &hex("0000 0000")), conn(E::FRAME_SIZE_ERROR)),
        ("HEADERS PRIORITY, 5 octets, empty fragment", raw(HEADERS, PRIO, 1, &prio(0, 15)), ok),
        ("HEADERS PADDED+PRIORITY, 5 octets", raw(HEADERS, PADDED | PRIO, 1, &hex("00 0000 0000")), conn(E::FRAME_SIZE_ERROR),),
        ("HEADERS padding past the priority fields", raw(HEADERS, PADDED | PRIO, 1, &[&[2][..], &prio(0, 15), b"x"].concat()), conn(E::PROTOCOL_ERROR),),
        ("HEADERS padding up to the priority fields", raw(HEADERS, PADDED | PRIO, 1, &[&[1][..], &prio(0, 15), b"x"].concat()), ok,),
        ("HEADERS depending on itself (typed, for the connection)", raw(HEADERS, PRIO, 3, &prio(3, 15)), ok),
        // §6.3 PRIORITY.
        ("PRIORITY on stream 0", raw(PRIORITY, 0, 0, &prio(1, 0)), conn(E::PROTOCOL_ERROR)),
        ("PRIORITY on stream 0, 4 octets: the stream first", raw(PRIORITY, 0, 0, &hex("0000 0001")), conn(E::PROTOCOL_ERROR),),
        ("PRIORITY of 4 octets", raw(PRIORITY, 0, 1, &hex("0000 0000")), stream(E::FRAME_SIZE_ERROR, 1)),
        ("PRIORITY of 6 octets", raw(PRIORITY, 0, 7, &hex("0000 0000 0000")), stream(E::FRAME_SIZE_ERROR, 7)),
        ("PRIORITY of 0 octets", raw(PRIORITY, 0, 1, b""), stream(E::FRAME_SIZE_ERROR, 1)),
        ("PRIORITY depending on itself", raw(PRIORITY, 0, 3, &prio(3, 15)), stream(E::PROTOCOL_ERROR, 3)),
        ("PRIORITY depending on itself, exclusively", raw(PRIORITY, 0, 3, &prio(0x8000_0003, 15)), stream(E::PROTOCOL_ERROR, 3),),
        ("PRIORITY depending on stream 0", raw(PRIORITY, 0, 3, &prio(0, 255)), ok),
        ("PRIORITY for a stream never opened", raw(PRIORITY, 0, 0x7fff_ffff, &prio(1, 0)), ok),
        // §6.4 RST_STREAM.
        ("RST_STREAM on stream 0", raw(RST_STREAM, 0, 0, &hex("0000 0008")), conn(E::PROTOCOL_ERROR)),
        ("RST_STREAM of 3 octets", raw(RST_STREAM, 0, 1, &hex("0000 08")), conn(E::FRAME_SIZE_ERROR)),
        ("RST_STREAM of 5 octets", raw(RST_STREAM, 0, 1, &hex("0000 0008 00")), conn(E::FRAME_SIZE_ERROR)),
        ("RST_STREAM with an unknown code", raw(RST_STREAM, 0, 1, &hex("ffff ffff")), ok),
        // §6.5 SETTINGS.
        ("SETTINGS on stream 1", raw(SETTINGS, 0, 1, b""), conn(E::PROTOCOL_ERROR)),
        ("SETTINGS ACK on stream 1", raw(SETTINGS, ACK, 1, b""), conn(E::PROTOCOL_ERROR)),
        ("SETTINGS on stream 0, the reserved bit set", raw(SETTINGS, 0, 0x8000_0000, b""), ok),
        ("SETTINGS ACK with a parameter", raw(SETTINGS, ACK, 0, &param(0x3, 100)), conn(E::FRAME_SIZE_ERROR)),
        ("SETTINGS ACK with one octet", raw(SETTINGS, ACK, 0, b"\0"), conn(E::FRAME_SIZE_ERROR)),
        ("SETTINGS ACK with every flag set", raw(SETTINGS, 0xff, 0, b""), ok),
        ("SETTINGS of 5 octets", raw(SETTINGS, 0, 0, &param(0x3, 100)[..5]), conn(E::FRAME_SIZE_ERROR)),
        ("SETTINGS of 7 octets", raw(SETTINGS, 0, 0, &[&param(0x3, 100)[..], b"\0"].concat()), conn(E::FRAME_SIZE_ERROR),),
        ("SETTINGS, empty", raw(SETTINGS, 0, 0, b""), ok),
        ("ENABLE_PUSH 0", raw(SETTINGS, 0, 0, &param(0x2, 0)), ok),
        ("ENABLE_PUSH 1", raw(SETTINGS, 0, 0, &param(0x2, 1)), ok),
        ("ENABLE_PUSH 2", raw(SETTINGS, 0, 0, &param(0x2, 2)), conn(E::PROTOCOL_ERROR)),
        ("ENABLE_PUSH 2^32-1", raw(SETTINGS, 0, 0, &param(0x2, u32::MAX)), conn(E::PROTOCOL_ERROR)),
        ("a bad value after a good one", raw(SETTINGS, 0, 0, &two_params), conn(E::PROTOCOL_ERROR)),
        ("INITIAL_WINDOW_SIZE 2^31-1", raw(SETTINGS, 0, 0, &param(0x4, 0x7fff_ffff)), ok),
        ("INITIAL_WINDOW_SIZE 2^31", raw(SETTINGS, 0, 0, &param(0x4, 0x8000_0000)), conn(E::FLOW_CONTROL_ERROR),),
        ("INITIAL_WINDOW_SIZE 2^32-1", raw(SETTINGS, 0, 0, &param(0x4, u32::MAX)), conn(E::FLOW_CONTROL_ERROR)),
        ("INITIAL_WINDOW_SIZE 0", raw(SETTINGS, 0, 0, &param(0x4, 0)), ok),
        ("MAX_FRAME_SIZE 0", raw(SETTINGS, 0, 0, &param(0x5, 0)), conn(E::PROTOCOL_ERROR)),
        ("MAX_FRAME_SIZE 16383", raw(SETTINGS, 0, 0, &param(0x5, 16_383)), conn(E::PROTOCOL_ERROR)),
        ("MAX_FRAME_SIZE 16384", raw(SETTINGS, 0, 0, &param(0x5, 16_384)), ok),
        ("MAX_FRAME_SIZE 2^24-1", raw(SETTINGS, 0, 0, &param(0x5, 16_777_215)), ok),
        ("MAX_FRAME_SIZE 2^24", raw(SETTINGS, 0, 0, &param(0x5, 16_777_216)), conn(E::PROTOCOL_ERROR)),
        ("HEADER_TABLE_SIZE 2^32-1", raw(SETTINGS, 0, 0, &param(0x1, u32::MAX)), ok),
        ("MAX_CONCURRENT_STREAMS 0", raw(SETTINGS, 0, 0, &param(0x3, 0)), ok),
        ("MAX_HEADER_LIST_SIZE 0", raw(SETTINGS, 0, 0, &param(0x6, 0)), ok),
        ("an unknown parameter, any value", raw(SETTINGS, 0, 0, &param(0x7, u32::MAX)), ok),
        ("parameter 0", raw(SETTINGS, 0, 0, &param(0x0, u32::MAX)), ok),
        ("parameter 0xffff", raw(SETTINGS, 0, 0, &param(0xffff, 2)), ok),
        ("ENABLE_CONNECT_PROTOCOL (RFC 8441), unknown here", raw(SETTINGS, 0, 0, &param(0x8, 7)), ok),
        // §6.6 PUSH_PROMISE.
        ("PUSH_PROMISE on stream 0", raw(PUSH_PROMISE, 0x4, 0, &hex("0000 0002")), conn(E::PROTOCOL_ERROR)),
        ("PUSH_PROMISE of 3 octets", raw(PUSH_PROMISE, 0x4, 1, &hex("0000 02")), conn(E::FRAME_SIZE_ERROR)),
        ("PUSH_PROMISE PADDED, no Pad Length", raw(PUSH_PROMISE, PADDED, 1, b""), conn(E::FRAME_SIZE_ERROR)),
        ("PUSH_PROMISE PADDED, 4 octets", raw(PUSH_PROMISE, PADDED, 1, &hex("00 0000 02")), conn(E::FRAME_SIZE_ERROR),),
        ("PUSH_PROMISE padding past the promised stream", raw(PUSH_PROMISE, PADDED, 1, &hex("01 0000 0002")), conn(E::PROTOCOL_ERROR),),
        ("PUSH_PROMISE padded, empty fragment", raw(PUSH_PROMISE, PADDED, 1, &hex("01 0000 0002 00")), ok),
        ("PUSH_PROMISE (typed: the server's caller refuses it)", raw(PUSH_PROMISE, 0x4, 1, &hex("0000 0002 82")), ok,),
        // §6.7 PING.
        ("PING on stream 1", raw(PING, 0, 1, &big(8)), conn(E::PROTOCOL_ERROR)),
        ("PING of 7 octets", raw(PING, 0, 0, &big(7)), conn(E::FRAME_SIZE_ERROR)),
        ("PING of 9 octets", raw(PING, 0, 0, &big(9)), conn(E::FRAME_SIZE_ERROR)),
        ("PING of 0 octets", raw(PING, ACK, 0, b""), conn(E::FRAME_SIZE_ERROR)),
        ("PING", raw(PING, 0, 0, &big(8)), ok),
        // §6.8 GOAWAY.
        ("GOAWAY on stream 1", raw(GOAWAY, 0, 1, &big(8)), conn(E::PROTOCOL_ERROR)),
        ("GOAWAY of 7 octets", raw(GOAWAY, 0, 0, &big(7)), conn(E::FRAME_SIZE_ERROR)),
        ("GOAWAY of 0 octets", raw(GOAWAY, 0, 0, b""), conn(E::FRAME_SIZE_ERROR)),
        ("GOAWAY of 8 octets", raw(GOAWAY, 0, 0, &big(8)), ok),
        ("GOAWAY with debug data and an unknown code", raw(GOAWAY, 0, 0, &hex("8000 0001 ffff ffff 6279 65")), ok,),
        // §6.9 WINDOW_UPDATE.
        ("WINDOW_UPDATE of 3 octets", raw(WINDOW_UPDATE, 0, 0, &hex("0000 01")), conn(E::FRAME_SIZE_ERROR)),
        ("WINDOW_UPDATE of 5 octets on a stream", raw(WINDOW_UPDATE, 0, 1, &hex("0000 0001 00")), conn(E::FRAME_SIZE_ERROR),),
        ("WINDOW_UPDATE of 0 octets", raw(WINDOW_UPDATE, 0, 1, b""), conn(E::FRAME_SIZE_ERROR)),
        ("increment 0 on the connection", raw(WINDOW_UPDATE, 0, 0, &hex("0000 0000")), conn(E::PROTOCOL_ERROR)),
        ("increment 0 on stream 5", raw(WINDOW_UPDATE, 0, 5, &hex("0000 0000")), stream(E::PROTOCOL_ERROR, 5)),
        ("increment 0 but the reserved bit, on stream 5", raw(WINDOW_UPDATE, 0, 5, &hex("8000 0000")), stream(E::PROTOCOL_ERROR, 5),),
        ("increment 0, stream 0 but the reserved bit", raw(WINDOW_UPDATE, 0, 0x8000_0000, &hex("0000 0000")), conn(E::PROTOCOL_ERROR),),
        ("increment 1", raw(WINDOW_UPDATE, 0, 0, &hex("0000 0001")), ok),
        ("increment 2^31-1", raw(WINDOW_UPDATE, 0, 3, &hex("7fff ffff")), ok),
        // §6.10 CONTINUATION.
        ("CONTINUATION on stream 0", raw(CONTINUATION, 0x4, 0, &hex("82")), conn(E::PROTOCOL_ERROR)),
        ("CONTINUATION, empty", raw(CONTINUATION, 0, 1, b""), ok),
        // §4.1, §5.5: unknown types are ignored whatever they hold.
        ("an unknown type on stream 0, every flag", raw(0xff, 0xff, 0, b"abc"), ok),
        ("ALTSVC (RFC 7838), unknown here", raw(0x0a, 0, 0, &hex("0000")), ok),
        ("an unknown type, empty, the reserved bit set", raw(0x0b, 0, 0xffff_ffff, b""), ok),
    ];
    let mut refused = 0;
    for (what, bytes, want) in &cases {
        let got = decode(bytes);
        match (&got, want) {
            (Ok(Some((_, used))), Ok(())) => assert_eq!(*used, bytes.len(), "{what}"),
            (Err(e), Err(want)) => {
                assert_eq!(kind_of(e), *want, "{what}: {e}");
                if let FrameError::Stream { frame_len, .. } = e {
                    assert_eq!(*frame_len, bytes.len(), "{what}: a stream error skips the whole frame");
                }
                refused += 1;
            }
            _ => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
    assert!(refused > 50, "{refused} refusals");
}

#[test]
fn a_frame_depending_on_itself_in_headers_keeps_its_fragment() {
    let bytes = raw(HEADERS, PRIO | 0x4, 3, &hex("8000 0003 0f 82"));
    let (frame, _) = decode(&bytes).unwrap().unwrap();
    let Frame::Headers { stream, fragment, priority: Some(p), .. } = frame else { panic!("{frame:?}") };
    assert_eq!((stream, fragment, p.depends_on, p.exclusive), (3, &[0x82][..], 3, true));
}

#[test]
fn settings_iterate_known_parameters_in_order() {
    use crate::h2::Setting::*;
    let payload = [param(0x3, 100), param(0x99, 1), param(0x2, 0), param(0x4, 1 << 20), param(0x3, 7)].concat();
    let bytes = raw(SETTINGS, 0, 0, &payload);
    let Ok(Some((Frame::Settings(s), _))) = decode(&bytes) else { panic!() };
    let got: Vec<_> = s.iter().collect();
    assert_eq!(
        got,
        [MaxConcurrentStreams(100), EnablePush(false), InitialWindowSize(1 << 20), MaxConcurrentStreams(7)]
    );
    assert_eq!(s.payload(), &payload[..], "unknown parameters stay in the payload");
}

#[test]
fn errors_say_what_and_which_code() {
    let e = decode(&raw(WINDOW_UPDATE, 0, 5, &hex("0000 0000"))).unwrap_err();
    assert_eq!(e.to_string(), "stream 5 error PROTOCOL_ERROR: WINDOW_UPDATE increment of 0");
    let e = decode(&raw(PING, 0, 0, b"")).unwrap_err();
    assert_eq!(e.to_string(), "connection error FRAME_SIZE_ERROR: PING not 8 octets");
    assert_eq!(format!("{:?}", ErrorCode(0xd)), "HTTP_1_1_REQUIRED");
    assert_eq!(format!("{:?}", ErrorCode(0xe)), "ErrorCode(0xe)");
}

/// The limit is the caller's advertised SETTINGS_MAX_FRAME_SIZE, not the default (§4.2).
#[test]
fn the_maximum_frame_size_is_the_callers() {
    let frame = raw(DATA, 0, 1, &[0; 20_000]);
    assert_eq!(decode(&frame).map_err(|e| kind_of(&e)), Err((E::FRAME_SIZE_ERROR, Conn)));
    assert!(matches!(Frame::decode(&frame, 20_000), Ok(Some((Frame::Data { .. }, 20_009)))));
    assert!(matches!(Frame::decode(&frame, MAX_MAX_FRAME_SIZE), Ok(Some((Frame::Data { .. }, 20_009)))));
    assert_eq!(Frame::decode(&frame, 19_999).map_err(|e| kind_of(&e)), Err((E::FRAME_SIZE_ERROR, Conn)));
}
