//! Every frame type written and read back, from a table and at random; every truncation of
//! every such frame is "not yet", never an error; random octets never panic the decoder,
//! and whatever it accepts comes back the same once written again.

use super::*;
use crate::h2::{Priority, Settings};

/// A SETTINGS payload as the decoder would borrow it.
fn settings(payload: &'static [u8]) -> Frame<'static> {
    Frame::Settings(Settings::parse(payload).expect("valid parameters"))
}

/// One frame of every type and every shape: each flag, padding and priority, empty and
/// full payloads, the largest identifiers and values.
fn samples() -> Vec<(&'static str, Frame<'static>)> {
    let p = Priority { depends_on: 0x7fff_ffff, exclusive: true, weight: 255 };
    vec![
        ("DATA", Frame::Data { stream: 1, data: b"hello", end_stream: false, padding: None }),
        ("DATA END_STREAM, empty", Frame::Data { stream: 3, data: b"", end_stream: true, padding: None }),
        ("DATA padded 0", Frame::Data { stream: 5, data: b"x", end_stream: false, padding: Some(0) }),
        ("DATA padded 255", Frame::Data { stream: 0x7fff_ffff, data: b"abc", end_stream: true, padding: Some(255) }),
        (
            "HEADERS",
            Frame::Headers {
                stream: 1,
                fragment: b"\x82\x86\x84",
                end_stream: false,
                end_headers: true,
                padding: None,
                priority: None,
            },
        ),
        (
            "HEADERS every flag",
            Frame::Headers {
                stream: 7,
                fragment: b"\x88",
                end_stream: true,
                end_headers: true,
                padding: Some(3),
                priority: Some(p),
            },
        ),
        (
            "HEADERS no END_HEADERS, empty",
            Frame::Headers {
                stream: 9,
                fragment: b"",
                end_stream: false,
                end_headers: false,
                padding: None,
                priority: Some(Priority { depends_on: 0, exclusive: false, weight: 15 }),
            },
        ),
        ("PRIORITY", Frame::Priority { stream: 1, priority: p }),
        ("RST_STREAM", Frame::RstStream { stream: 1, code: ErrorCode::CANCEL }),
        ("RST_STREAM, unknown code", Frame::RstStream { stream: 2, code: ErrorCode(u32::MAX) }),
        ("SETTINGS, empty", settings(b"")),
        ("SETTINGS", settings(b"\x00\x03\x00\x00\x00\x64\x00\x04\x7f\xff\xff\xff\x00\x05\x00\xff\xff\xff")),
        ("SETTINGS, unknown parameter", settings(b"\x00\x09\xff\xff\xff\xff")),
        ("SETTINGS ACK", Frame::SettingsAck),
        (
            "PUSH_PROMISE",
            Frame::PushPromise { stream: 1, promised: 2, fragment: b"\x82", end_headers: true, padding: None },
        ),
        (
            "PUSH_PROMISE padded",
            Frame::PushPromise {
                stream: 3,
                promised: 0x7fff_fffe,
                fragment: b"",
                end_headers: false,
                padding: Some(9),
            },
        ),
        ("PING", Frame::Ping { ack: false, data: *b"12345678" }),
        ("PING ACK", Frame::Ping { ack: true, data: [0xff; 8] }),
        ("GOAWAY", Frame::GoAway { last_stream: 0, code: ErrorCode::NO_ERROR, debug: b"" }),
        ("GOAWAY with debug", Frame::GoAway { last_stream: 0x7fff_ffff, code: ErrorCode(0x1234), debug: b"bye" }),
        ("WINDOW_UPDATE, connection", Frame::WindowUpdate { stream: 0, increment: 1 }),
        ("WINDOW_UPDATE, stream", Frame::WindowUpdate { stream: 1, increment: 0x7fff_ffff }),
        ("CONTINUATION", Frame::Continuation { stream: 1, fragment: b"\x84", end_headers: true }),
        ("CONTINUATION, empty", Frame::Continuation { stream: 1, fragment: b"", end_headers: false }),
        ("unknown type", Frame::Unknown { kind: 0x0a, flags: 0xff, stream: 0, payload: b"\x00\x00" }),
        ("unknown type, empty", Frame::Unknown { kind: 0xff, flags: 0, stream: 0x7fff_ffff, payload: b"" }),
    ]
}

/// Checks one frame's octets: decoded whole (with anything after it left alone) to `want`,
/// and each truncation is `Ok(None)`.
fn check(what: &str, bytes: &[u8], want: &Frame<'_>) {
    assert_eq!(decode(bytes), Ok(Some((*want, bytes.len()))), "{what}");
    let mut more = bytes.to_vec();
    more.extend_from_slice(&[0, 0, 0, 4, 1, 0, 0, 0, 0]);
    assert_eq!(decode(&more), Ok(Some((*want, bytes.len()))), "{what}, followed by another frame");
    for cut in 0..bytes.len() {
        assert_eq!(decode(&bytes[..cut]), Ok(None), "{what}, cut at {cut}");
    }
}

#[test]
fn every_type_round_trips_and_every_truncation_waits() {
    let samples = samples();
    let kinds: std::collections::HashSet<u8> = samples.iter().map(|(_, f)| encoded(f)[3]).collect();
    assert!((0..=9).all(|k| kinds.contains(&k)), "every type of RFC 9113 has a row");
    for (what, frame) in &samples {
        check(what, &encoded(frame), frame);
    }
}

#[test]
fn the_encoder_functions_write_what_the_decoder_reads() {
    use crate::h2::*;
    let mut out = Vec::new();
    let mut rows: Vec<(&str, Vec<u8>, Frame<'_>)> = Vec::new();
    let mut take = |what, f: &dyn Fn(&mut Vec<u8>), want| {
        out.clear();
        f(&mut out);
        rows.push((what, out.clone(), want));
    };
    take(
        "settings",
        &|o| encode_settings(o, &[Setting::MaxConcurrentStreams(100), Setting::EnablePush(false)]),
        settings(b"\x00\x03\x00\x00\x00\x64\x00\x02\x00\x00\x00\x00"),
    );
    take("settings, none", &|o| encode_settings(o, &[]), settings(b""));
    take("settings ack", &|o| encode_settings_ack(o), Frame::SettingsAck);
    take(
        "headers",
        &|o| encode_headers(o, 1, b"\x88", true, DEFAULT_MAX_FRAME_SIZE),
        Frame::Headers {
            stream: 1,
            fragment: b"\x88",
            end_stream: true,
            end_headers: true,
            padding: None,
            priority: None,
        },
    );
    take(
        "data",
        &|o| encode_data(o, 3, b"body", false),
        Frame::Data { stream: 3, data: b"body", end_stream: false, padding: None },
    );
    take(
        "data, last",
        &|o| encode_data(o, 3, b"", true),
        Frame::Data { stream: 3, data: b"", end_stream: true, padding: None },
    );
    take(
        "window update",
        &|o| encode_window_update(o, 0, 65_535),
        Frame::WindowUpdate { stream: 0, increment: 65_535 },
    );
    take(
        "rst stream",
        &|o| encode_rst_stream(o, 5, ErrorCode::REFUSED_STREAM),
        Frame::RstStream { stream: 5, code: ErrorCode::REFUSED_STREAM },
    );
    take("ping ack", &|o| encode_ping_ack(o, *b"pingpong"), Frame::Ping { ack: true, data: *b"pingpong" });
    take(
        "goaway",
        &|o| encode_goaway(o, 7, ErrorCode::ENHANCE_YOUR_CALM, b"calm"),
        Frame::GoAway { last_stream: 7, code: ErrorCode::ENHANCE_YOUR_CALM, debug: b"calm" },
    );
    for (what, bytes, want) in &rows {
        check(what, bytes, want);
    }
    let Frame::Settings(s) = rows[0].2 else { unreachable!() };
    assert_eq!(s.iter().collect::<Vec<_>>(), [Setting::MaxConcurrentStreams(100), Setting::EnablePush(false)]);
}

/// A random frame over `store`'s octets, valid as the decoder reads frames.
fn random_frame<'a>(rng: &mut fastrand::Rng, store: &'a [u8], params: &'a [u8]) -> Frame<'a> {
    let mut bytes = |max: usize| {
        let start = rng.usize(..store.len() - max);
        &store[start..start + rng.usize(..=max)]
    };
    let stream = |rng: &mut fastrand::Rng| rng.u32(1..=0x7fff_ffff);
    let padding = |rng: &mut fastrand::Rng| rng.bool().then(|| rng.u8(..));
    let priority =
        |rng: &mut fastrand::Rng| Priority { depends_on: rng.u32(0..100), exclusive: rng.bool(), weight: rng.u8(..) };
    let (a, b) = (bytes(300), bytes(300));
    match rng.u8(0..12) {
        0 => Frame::Data { stream: stream(rng), data: a, end_stream: rng.bool(), padding: padding(rng) },
        1 => Frame::Headers {
            stream: stream(rng),
            fragment: a,
            end_stream: rng.bool(),
            end_headers: rng.bool(),
            padding: padding(rng),
            priority: rng.bool().then(|| priority(rng)),
        },
        2 => loop {
            let (s, p) = (stream(rng), priority(rng));
            if p.depends_on != s {
                break Frame::Priority { stream: s, priority: p };
            }
        },
        3 => Frame::RstStream { stream: stream(rng), code: ErrorCode(rng.u32(..)) },
        4 => Frame::Settings(Settings::parse(&params[..6 * rng.usize(..=params.len() / 6)]).unwrap()),
        5 => Frame::SettingsAck,
        6 => Frame::PushPromise {
            stream: stream(rng),
            promised: rng.u32(..=0x7fff_ffff),
            fragment: a,
            end_headers: rng.bool(),
            padding: padding(rng),
        },
        7 => Frame::Ping { ack: rng.bool(), data: rng.u64(..).to_be_bytes() },
        8 => Frame::GoAway { last_stream: rng.u32(..=0x7fff_ffff), code: ErrorCode(rng.u32(..)), debug: b },
        9 => Frame::WindowUpdate { stream: rng.u32(..=0x7fff_ffff), increment: rng.u32(1..=0x7fff_ffff) },
        10 => Frame::Continuation { stream: stream(rng), fragment: a, end_headers: rng.bool() },
        _ => Frame::Unknown { kind: rng.u8(10..), flags: rng.u8(..), stream: rng.u32(..=0x7fff_ffff), payload: b },
    }
}

#[test]
fn random_frames_round_trip_one_after_another() {
    let mut rng = fastrand::Rng::with_seed(9113);
    let store: Vec<u8> = (0..4096).map(|_| rng.u8(..)).collect();
    let params: Vec<u8> =
        [(0x1, 4096), (0x2, 0), (0x3, 100), (0x4, 1 << 30), (0x5, 1 << 20), (0x6, 1 << 16), (0x42, 7)]
            .iter()
            .flat_map(|&(id, v): &(u16, u32)| id.to_be_bytes().into_iter().chain(v.to_be_bytes()))
            .collect();
    let frames: Vec<Frame<'_>> = (0..2000).map(|_| random_frame(&mut rng, &store, &params)).collect();
    let mut wire = Vec::new();
    for f in &frames {
        f.encode(&mut wire);
    }
    let (mut at, mut n) = (0, 0);
    while let Some((frame, used)) = decode(&wire[at..]).unwrap() {
        assert_eq!(frame, frames[n], "frame {n}");
        at += used;
        n += 1;
    }
    assert_eq!((at, n), (wire.len(), frames.len()));
}

/// The fuzz target's property, over random octets shaped like frames: decoding never
/// panics, every truncation of what it accepts is "not yet", and what it accepts is read
/// back the same once written again, in as many octets.
#[test]
fn random_octets_decode_or_refuse_and_what_decodes_round_trips() {
    let mut rng = fastrand::Rng::with_seed(0x7540);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..20_000 {
        let len = rng.usize(0..40);
        let mut buf = raw(rng.u8(0..12), rng.u8(..), rng.u32(..) & [0, 1, u32::MAX][rng.usize(..3)], &[]);
        buf[..3].copy_from_slice(&(len as u32).to_be_bytes()[1..]);
        buf.extend((0..len).map(|_| if rng.bool() { rng.u8(..) } else { rng.u8(..4) }));
        match decode(&buf) {
            Ok(Some((frame, used))) => {
                accepted += 1;
                assert_eq!(used, buf.len());
                let again = encoded(&frame);
                assert_eq!(again.len(), used, "{frame:?} written in a different length");
                assert_eq!(decode(&again), Ok(Some((frame, again.len()))), "{buf:02x?}");
                assert!((0..buf.len()).all(|cut| decode(&buf[..cut]) == Ok(None)));
            }
            Ok(None) => unreachable!("a whole frame"),
            Err(_) => refused += 1,
        }
    }
    assert!(accepted > 5000 && refused > 5000, "{accepted} accepted, {refused} refused");
}
