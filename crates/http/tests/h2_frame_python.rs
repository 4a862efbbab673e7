//! HTTP/2 frames against an independent implementation: Python's `hyperframe` (the frame
//! layer python-hyper's h2 uses), from Debian's python3-hyperframe in /usr/bin/python3.
//! Random frames of every type go both ways: written by our encoder and parsed by
//! hyperframe, and built by hyperframe from the same description and read by our decoder,
//! which must also get the very octets ours wrote. A table of hostile frames that
//! hyperframe refuses must be refused by ours too (ours checks more: SETTINGS values, for
//! one, which hyperframe leaves to h2), and a table holds the paddings where hyperframe
//! and RFC 9113 part, ours siding with the RFC.
//!
//! Without the module the test prints `SKIPPED h2_frame_python: <why>` and passes:
//! python3-hyperframe comes with python3-h2, which scripts/test.sh installs.

mod common;

use spidey_http::h2::{self, ErrorCode, Frame, Priority, Setting};

/// Reads one command per line and prints one line for each:
/// - `parse HEX`: the frame's description (below), or `error <exception class>`;
/// - `build DESCRIPTION`: the frame hyperframe builds from it, serialized, in hex.
///
/// A description is the type's name and its fields, space-separated, `-` for none:
/// `data STREAM END_STREAM PAD DATA`, `headers STREAM END_STREAM END_HEADERS PAD PRIO
/// FRAGMENT` (PRIO `DEP:EXCLUSIVE:WEIGHT`), `priority STREAM PRIO`, `rst STREAM CODE`,
/// `settings ID=VALUE,...`, `settingsack`, `push STREAM PROMISED END_HEADERS PAD FRAGMENT`,
/// `ping ACK DATA`, `goaway LAST CODE DEBUG`, `window STREAM INCREMENT`, `cont STREAM
/// END_HEADERS FRAGMENT`, `ext TYPE FLAGS STREAM PAYLOAD`; octets in hex, flags 0 or 1.
const SCRIPT: &str = r#"
import sys
from hyperframe.frame import (Frame, DataFrame, HeadersFrame, PriorityFrame, RstStreamFrame,
    SettingsFrame, PushPromiseFrame, PingFrame, GoAwayFrame, WindowUpdateFrame,
    ContinuationFrame, ExtensionFrame)

def h(b): return b.hex() if b else "-"
def uh(s): return b"" if s == "-" else bytes.fromhex(s)
def pad(f): return str(f.pad_length) if "PADDED" in f.flags else "-"
def prio(f): return "%d:%d:%d" % (f.depends_on, f.exclusive, f.stream_weight)
def flag(f, name): return int(name in f.flags)

def describe(f):
    if isinstance(f, DataFrame):
        return "data %d %d %s %s" % (f.stream_id, flag(f, "END_STREAM"), pad(f), h(f.data))
    if isinstance(f, HeadersFrame):
        p = prio(f) if "PRIORITY" in f.flags else "-"
        return "headers %d %d %d %s %s %s" % (f.stream_id, flag(f, "END_STREAM"), flag(f, "END_HEADERS"), pad(f), p, h(f.data))
    if isinstance(f, PriorityFrame):
        return "priority %d %s" % (f.stream_id, prio(f))
    if isinstance(f, RstStreamFrame):
        return "rst %d %d" % (f.stream_id, f.error_code)
    if isinstance(f, SettingsFrame):
        if "ACK" in f.flags:
            return "settingsack"
        return "settings " + (",".join("%d=%d" % kv for kv in f.settings.items()) or "-")
    if isinstance(f, PushPromiseFrame):
        return "push %d %d %d %s %s" % (f.stream_id, f.promised_stream_id, flag(f, "END_HEADERS"), pad(f), h(f.data))
    if isinstance(f, PingFrame):
        return "ping %d %s" % (flag(f, "ACK"), h(f.opaque_data))
    if isinstance(f, GoAwayFrame):
        return "goaway %d %d %s" % (f.last_stream_id, f.error_code, h(f.additional_data))
    if isinstance(f, WindowUpdateFrame):
        return "window %d %d" % (f.stream_id, f.window_increment)
    if isinstance(f, ContinuationFrame):
        return "cont %d %d %s" % (f.stream_id, flag(f, "END_HEADERS"), h(f.data))
    if isinstance(f, ExtensionFrame):
        return "ext %d %d %d %s" % (f.type, f.flag_byte, f.stream_id, h(f.body))
    raise Exception("unexpected frame %r" % f)

def flags(pairs): return [name for name, on in pairs if on == "1"]

def padded(f, p):
    if p != "-":
        f.flags.add("PADDED")
        f.pad_length = int(p)
    return f

def build(w):
    t = w[0]
    if t == "data":
        return padded(DataFrame(int(w[1]), data=uh(w[4]), flags=flags([("END_STREAM", w[2])])), w[3])
    if t == "headers":
        f = HeadersFrame(int(w[1]), data=uh(w[6]), flags=flags([("END_STREAM", w[2]), ("END_HEADERS", w[3])]))
        if w[5] != "-":
            dep, ex, weight = w[5].split(":")
            f.flags.add("PRIORITY")
            f.depends_on, f.exclusive, f.stream_weight = int(dep), ex == "1", int(weight)
        return padded(f, w[4])
    if t == "priority":
        dep, ex, weight = w[2].split(":")
        return PriorityFrame(int(w[1]), depends_on=int(dep), exclusive=ex == "1", stream_weight=int(weight))
    if t == "rst":
        return RstStreamFrame(int(w[1]), error_code=int(w[2]))
    if t == "settings":
        pairs = [] if w[1] == "-" else [kv.split("=") for kv in w[1].split(",")]
        return SettingsFrame(0, settings={int(k): int(v) for k, v in pairs})
    if t == "settingsack":
        return SettingsFrame(0, flags=["ACK"])
    if t == "push":
        f = PushPromiseFrame(int(w[1]), promised_stream_id=int(w[2]), data=uh(w[5]), flags=flags([("END_HEADERS", w[3])]))
        return padded(f, w[4])
    if t == "ping":
        return PingFrame(0, opaque_data=uh(w[2]), flags=flags([("ACK", w[1])]))
    if t == "goaway":
        return GoAwayFrame(0, last_stream_id=int(w[1]), error_code=int(w[2]), additional_data=uh(w[3]))
    if t == "window":
        return WindowUpdateFrame(int(w[1]), window_increment=int(w[2]))
    if t == "cont":
        return ContinuationFrame(int(w[1]), data=uh(w[3]), flags=flags([("END_HEADERS", w[2])]))
    if t == "ext":
        f = ExtensionFrame(type=int(w[1]), stream_id=int(w[3]), flag_byte=int(w[2]), body=uh(w[4]))
        f.body_len = len(f.body)  # ExtensionFrame.serialize writes body_len, set only by parse_body
        return f
    raise Exception("unknown description %r" % w)

for line in sys.stdin:
    w = line.split()
    if w[0] == "parse":
        data = memoryview(bytes.fromhex(w[1]))
        try:
            f, length = Frame.parse_frame_header(data[:9])
            if length != len(data) - 9:
                raise Exception("length")
            f.parse_body(data[9:9 + length])
            print(describe(f), flush=True)
        except Exception as e:
            print("error", type(e).__name__, flush=True)
    elif w[0] == "build":
        print(build(w[1:]).serialize().hex(), flush=True)
"#;

fn hex(b: &[u8]) -> String {
    if b.is_empty() {
        return "-".to_string();
    }
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex from Python")).collect()
}

/// A frame described as the script describes it (see [`SCRIPT`]).
fn describe(f: &Frame<'_>) -> String {
    let pad = |p: Option<u8>| p.map_or("-".to_string(), |p| p.to_string());
    let prio = |p: Priority| format!("{}:{}:{}", p.depends_on, u8::from(p.exclusive), p.weight);
    let b = u8::from;
    match *f {
        Frame::Data { stream, data, end_stream, padding } => {
            format!("data {stream} {} {} {}", b(end_stream), pad(padding), hex(data))
        }
        Frame::Headers { stream, fragment, end_stream, end_headers, padding, priority } => format!(
            "headers {stream} {} {} {} {} {}",
            b(end_stream),
            b(end_headers),
            pad(padding),
            priority.map_or("-".to_string(), prio),
            hex(fragment)
        ),
        Frame::Priority { stream, priority } => format!("priority {stream} {}", prio(priority)),
        Frame::RstStream { stream, code } => format!("rst {stream} {}", code.0),
        Frame::Settings(s) => {
            let list: Vec<String> = s.iter().map(|s| format!("{}={}", s.id(), s.value())).collect();
            format!("settings {}", if list.is_empty() { "-".to_string() } else { list.join(",") })
        }
        Frame::SettingsAck => "settingsack".to_string(),
        Frame::PushPromise { stream, promised, fragment, end_headers, padding } => {
            format!("push {stream} {promised} {} {} {}", b(end_headers), pad(padding), hex(fragment))
        }
        Frame::Ping { ack, data } => format!("ping {} {}", b(ack), hex(&data)),
        Frame::GoAway { last_stream, code, debug } => format!("goaway {last_stream} {} {}", code.0, hex(debug)),
        Frame::WindowUpdate { stream, increment } => format!("window {stream} {increment}"),
        Frame::Continuation { stream, fragment, end_headers } => {
            format!("cont {stream} {} {}", b(end_headers), hex(fragment))
        }
        Frame::Unknown { kind, flags, stream, payload } => format!("ext {kind} {flags} {stream} {}", hex(payload)),
    }
}

/// Random frames of every type, written by our encoder, as hyperframe can build them too:
/// no duplicate SETTINGS parameter (its settings are a dict), even promised streams (it
/// refuses odd ones), no type 0xa (ALTSVC, which it knows and we do not).
fn random_frames(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut frames = Vec::new();
    for _ in 0..n {
        let most = [0, 8, 300][rng.usize(..3)];
        let len = rng.usize(..=most);
        let data: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        let stream = rng.u32(1..=0x7fff_ffff);
        let padding = rng.bool().then(|| rng.u8(..));
        let priority = Priority { depends_on: rng.u32(0..1000), exclusive: rng.bool(), weight: rng.u8(..) };
        let mut out = Vec::new();
        let frame = match rng.u8(0..12) {
            0 => Frame::Data { stream, data: &data, end_stream: rng.bool(), padding },
            1 => {
                let priority = rng.bool().then_some(priority);
                // Padding that fills all a HEADERS frame holds after its Pad Length is one
                // octet more than hyperframe allows (see DISAGREE).
                let fragment =
                    if data.is_empty() && padding.is_some() && priority.is_none() { b"\x82" } else { &data[..] };
                Frame::Headers { stream, fragment, end_stream: rng.bool(), end_headers: rng.bool(), padding, priority }
            }
            2 if priority.depends_on != stream => Frame::Priority { stream, priority },
            3 => Frame::RstStream { stream, code: ErrorCode(rng.u32(..)) },
            4 => {
                let all = [
                    Setting::HeaderTableSize(rng.u32(..)),
                    Setting::EnablePush(rng.bool()),
                    Setting::MaxConcurrentStreams(rng.u32(..)),
                    Setting::InitialWindowSize(rng.u32(..=h2::MAX_WINDOW_SIZE)),
                    Setting::MaxFrameSize(rng.u32(h2::DEFAULT_MAX_FRAME_SIZE..=h2::MAX_MAX_FRAME_SIZE)),
                    Setting::MaxHeaderListSize(rng.u32(..)),
                ];
                let some: Vec<Setting> = all.into_iter().filter(|_| rng.bool()).collect();
                h2::encode_settings(&mut out, &some);
                frames.push(out);
                continue;
            }
            5 => Frame::SettingsAck,
            6 => Frame::PushPromise {
                stream,
                promised: rng.u32(1..0x4000_0000) * 2,
                fragment: &data,
                end_headers: rng.bool(),
                padding,
            },
            7 => Frame::Ping { ack: rng.bool(), data: rng.u64(..).to_be_bytes() },
            8 => Frame::GoAway { last_stream: rng.u32(..=0x7fff_ffff), code: ErrorCode(rng.u32(..)), debug: &data },
            9 => Frame::WindowUpdate { stream: rng.u32(..=0x7fff_ffff), increment: rng.u32(1..=h2::MAX_WINDOW_SIZE) },
            10 => Frame::Continuation { stream, fragment: &data, end_headers: rng.bool() },
            _ => Frame::Unknown { kind: rng.u8(0xb..), flags: rng.u8(..), stream: stream - 1, payload: &data },
        };
        frame.encode(&mut out);
        frames.push(out);
    }
    frames
}

/// Frames hyperframe refuses, each breaking one rule of RFC 9113 §6: ours must refuse
/// them too.
const HOSTILE: [(&str, &str); 12] = [
    ("DATA on stream 0", "000001 00 00 00000000 78"),
    ("DATA padding the whole payload", "000002 00 08 00000001 0200"),
    ("HEADERS on stream 0", "000001 01 04 00000000 82"),
    ("PRIORITY of 6 octets", "000006 02 00 00000001 000000000000"),
    ("RST_STREAM of 3 octets", "000003 03 00 00000001 000008"),
    ("SETTINGS on stream 1", "000000 04 00 00000001"),
    ("SETTINGS ACK with a parameter", "000006 04 01 00000000 000300000064"),
    ("SETTINGS of 7 octets", "000007 04 00 00000000 00030000006400"),
    ("PING of 7 octets", "000007 06 00 00000000 00000000000000"),
    ("GOAWAY on stream 1", "000008 07 00 00000001 0000000000000000"),
    ("WINDOW_UPDATE increment 0", "000004 08 00 00000001 00000000"),
    ("CONTINUATION on stream 0", "000001 09 04 00000000 82"),
];

/// Where hyperframe 6.0 and RFC 9113 part, on padding, with whether ours accepts the
/// frame (as the RFC does). §6.2 and §6.6 refuse padding that exceeds what remains for the
/// field block fragment: it may take all the payload after the Pad Length and the fixed
/// fields (priority, promised stream), and no more. hyperframe checks HEADERS against the
/// payload less the Pad Length octet alone, refusing padding equal to it (an empty
/// fragment, valid) and accepting padding that reaches back into the priority fields; and
/// PUSH_PROMISE against the whole payload, accepting padding over the promised stream. Its
/// DATA check is the RFC's (§6.1).
const DISAGREE: [(&str, &str, bool); 3] = [
    ("HEADERS padding all after the Pad Length", "000003 01 0c 00000001 02 0000", true),
    ("HEADERS padding into the priority fields", "000008 01 2c 00000001 06 0000000010 0000", false),
    ("PUSH_PROMISE padding over the promised stream", "000006 05 0c 00000001 05 00000002 00", false),
];

fn decode(wire: &[u8]) -> Frame<'_> {
    let (frame, used) = Frame::decode(wire, h2::MAX_MAX_FRAME_SIZE)
        .unwrap_or_else(|e| panic!("ours refused {}: {e}", hex(wire)))
        .unwrap_or_else(|| panic!("ours found no whole frame in {}", hex(wire)));
    assert_eq!(used, wire.len(), "{}", hex(wire));
    frame
}

#[test]
fn h2_frame_python() {
    if let Err(why) = common::has_module("hyperframe", "python3-hyperframe") {
        println!("SKIPPED h2_frame_python: {why}");
        return;
    }

    // Ours → hyperframe: parsed to the same description.
    let ours = random_frames(0x9113, 600);
    let lines = common::run(SCRIPT, ours.iter().map(|w| format!("parse {}\n", hex(w))).collect());
    assert_eq!(lines.len(), ours.len());
    for (i, (wire, line)) in ours.iter().zip(&lines).enumerate() {
        assert_eq!(line, &describe(&decode(wire)), "frame {i}: {}", hex(wire));
    }

    // hyperframe → ours: built from our description, the same octets, read back the same.
    let ours = random_frames(0x7540, 600);
    let descriptions: Vec<String> = ours.iter().map(|w| describe(&decode(w))).collect();
    let mut input: String = descriptions.iter().map(|d| format!("build {d}\n")).collect();
    // SETTINGS with a parameter RFC 9113 does not define (ENABLE_CONNECT_PROTOCOL, 0x8):
    // ours skips it.
    input.push_str("build settings 4=65535,8=1,5=16384\n");
    let lines = common::run(SCRIPT, input);
    assert_eq!(lines.len(), ours.len() + 1);
    for (i, ((wire, d), line)) in ours.iter().zip(&descriptions).zip(&lines).enumerate() {
        let theirs = unhex(line);
        assert_eq!(describe(&decode(&theirs)), *d, "frame {i}: {line}");
        assert_eq!(hex(&theirs), hex(wire), "frame {i}: {d}");
    }
    let extra = unhex(&lines[ours.len()]);
    assert_eq!(describe(&decode(&extra)), "settings 4=65535,5=16384");

    // Hostile frames: hyperframe refuses each, and so does ours.
    let wires: Vec<Vec<u8>> = HOSTILE.iter().map(|(_, h)| unhex(&h.split_whitespace().collect::<String>())).collect();
    let lines = common::run(SCRIPT, wires.iter().map(|w| format!("parse {}\n", hex(w))).collect());
    for ((what, _), (wire, line)) in HOSTILE.iter().zip(wires.iter().zip(&lines)) {
        assert!(line.starts_with("error"), "{what}: hyperframe accepted it: {line}");
        let ours = Frame::decode(wire, h2::DEFAULT_MAX_FRAME_SIZE);
        assert!(ours.is_err(), "{what}: ours accepted it: {ours:?}");
    }

    // Where hyperframe and the RFC part: ours sides with the RFC.
    let wires: Vec<Vec<u8>> =
        DISAGREE.iter().map(|(_, h, _)| unhex(&h.split_whitespace().collect::<String>())).collect();
    let lines = common::run(SCRIPT, wires.iter().map(|w| format!("parse {}\n", hex(w))).collect());
    for ((what, _, valid), (wire, line)) in DISAGREE.iter().zip(wires.iter().zip(&lines)) {
        assert_eq!(line.starts_with("error"), *valid, "{what}: hyperframe now agrees ({line}): drop the row");
        let ours = Frame::decode(wire, h2::DEFAULT_MAX_FRAME_SIZE);
        if *valid {
            assert!(matches!(ours, Ok(Some((Frame::Headers { fragment: b"", .. }, 12)))), "{what}: {ours:?}");
        } else {
            assert_eq!(ours.map_err(|e| (e.code(), e.stream())), Err((ErrorCode::PROTOCOL_ERROR, None)), "{what}");
        }
    }
    println!(
        "h2_frame_python: 600 frames ours -> hyperframe, 601 hyperframe -> ours (600 octet for octet), \
         {} hostile frames refused by both, {} paddings where hyperframe parts from the RFC and ours does not",
        HOSTILE.len(),
        DISAGREE.len()
    );
}
