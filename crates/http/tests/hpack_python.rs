//! HPACK against an independent implementation: Python's `hpack` (the one python-hyper's
//! h2 uses), from Debian's python3-hpack in /usr/bin/python3. A few hundred random field
//! lists, on connections whose table size changes now and then, go both ways: encoded by
//! our encoder and decoded by Python's decoder, and encoded by Python's (Huffman on or
//! off) and decoded by ours. Names, values and the never-indexed mark must come through.
//!
//! Without the module the test prints `SKIPPED hpack_python: <why>` and passes:
//! scripts/test.sh installs python3-hpack, so CI runs it.

mod common;

use spidey_http::hpack::{Decoder, Encoder, Field};

/// Reads one command per line and prints one line per block:
/// - `reset`: a new connection (new encoder and decoder);
/// - `size N`: this side's table size is now N (the decoder's maximum, or the encoder's
///   table size, which it then announces);
/// - `decode HEX`: prints the fields, `NAME:VALUE:NEVER` in hex and 0/1, or `error ...`;
/// - `encode HUFFMAN FIELD...`: prints the block in hex (FIELD as above).
const SCRIPT: &str = r#"
import sys, hpack
def connection():
    return hpack.Encoder(), hpack.Decoder(max_header_list_size=1 << 24)
enc, dec = connection()
for line in sys.stdin:
    words = line.split()
    if words[0] == "reset":
        enc, dec = connection()
    elif words[0] == "size":
        dec.max_allowed_table_size = int(words[1])
        enc.header_table_size = int(words[1])
    elif words[0] == "decode":
        try:
            fields = dec.decode(bytes.fromhex(words[1] if len(words) > 1 else ""), raw=True)
            never = [int(isinstance(f, hpack.NeverIndexedHeaderTuple)) for f in fields]
            print(" ".join("%s:%s:%d" % (f[0].hex(), f[1].hex(), n) for f, n in zip(fields, never)), flush=True)
        except Exception as e:
            print("error", repr(e).replace("\n", " "), flush=True)
    elif words[0] == "encode":
        fields = []
        for w in words[2:]:
            n, v, s = w.split(":")
            fields.append((bytes.fromhex(n), bytes.fromhex(v), s == "1"))
        print(enc.encode(fields, huffman=words[1] == "1").hex(), flush=True)
"#;

type Owned = (Vec<u8>, Vec<u8>, bool);

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex from Python")).collect()
}

fn field_words(list: &[Owned]) -> String {
    list.iter().map(|(n, v, s)| format!(" {}:{}:{}", hex(n), hex(v), u8::from(*s))).collect()
}

fn parse_fields(line: &str) -> Result<Vec<Owned>, String> {
    if line.starts_with("error") {
        return Err(line.to_string());
    }
    Ok(line
        .split_whitespace()
        .map(|w| {
            let mut parts = w.split(':');
            let (n, v, s) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
            (unhex(n), unhex(v), s == "1")
        })
        .collect())
}

fn text(rng: &mut fastrand::Rng, len: std::ops::Range<usize>, any_octet: bool) -> Vec<u8> {
    (0..rng.usize(len)).map(|_| if any_octet { rng.u8(..) } else { rng.u8(b' '..=b'~') }).collect()
}

fn random_field(rng: &mut fastrand::Rng) -> Owned {
    const NAMES: [&str; 12] = [
        ":status",
        ":path",
        "content-type",
        "content-length",
        "cache-control",
        "server",
        "date",
        "set-cookie",
        "authorization",
        "etag",
        "x-request-id",
        "vary",
    ];
    const VALUES: [&str; 6] = ["200", "/", "text/html", "spidey", "", "gzip"];
    let name = match rng.u8(0..4) {
        0..=2 => NAMES[rng.usize(..NAMES.len())].as_bytes().to_vec(),
        _ => (0..rng.usize(1..16)).map(|_| rng.lowercase() as u8).collect(),
    };
    let value = match rng.u8(0..8) {
        0..=2 => VALUES[rng.usize(..VALUES.len())].as_bytes().to_vec(),
        3..=5 => text(rng, 0..40, false),
        6 => text(rng, 0..40, true),
        _ => text(rng, 100..500, false),
    };
    (name, value, rng.u8(0..8) == 0)
}

/// Connections of random lists: each a list of blocks, some preceded by a size change.
fn connections(seed: u64) -> Vec<Vec<(Option<usize>, Vec<Owned>)>> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..30)
        .map(|_| {
            (0..rng.usize(5..16))
                .map(|_| {
                    let size = (rng.u8(0..5) == 0).then(|| [0, 100, 256, 4096, 8192][rng.usize(..5)]);
                    (size, (0..rng.usize(1..10)).map(|_| random_field(&mut rng)).collect())
                })
                .collect()
        })
        .collect()
}

#[test]
fn hpack_python() {
    if let Err(why) = common::has_module("hpack", "python3-hpack") {
        println!("SKIPPED hpack_python: {why}");
        return;
    }

    // Ours → Python.
    let conns = connections(0x7541);
    let mut input = String::new();
    let mut sent = Vec::new();
    for conn in &conns {
        input.push_str("reset\n");
        let mut encoder = Encoder::new();
        for (size, list) in conn {
            if let Some(size) = size {
                encoder.set_max_table_size(*size);
                input.push_str(&format!("size {size}\n"));
            }
            let mut block = Vec::new();
            encoder.encode(list.iter().map(|(n, v, s)| Field { name: n, value: v, never_indexed: *s }), &mut block);
            input.push_str(&format!("decode {}\n", hex(&block)));
            sent.push(list);
        }
    }
    let lines = common::run(SCRIPT, input);
    assert_eq!(lines.len(), sent.len());
    for (i, (line, list)) in lines.iter().zip(&sent).enumerate() {
        let got = parse_fields(line).unwrap_or_else(|e| panic!("block {i}: Python refused ours: {e}"));
        assert_eq!(got.len(), list.len(), "block {i}");
        for (g, s) in got.iter().zip(list.iter()) {
            assert_eq!((&g.0, &g.1), (&s.0, &s.1), "block {i}");
            assert!(g.2 || !s.2, "block {i}: the never-indexed mark was lost: {s:?}");
        }
    }
    let blocks_out = sent.len();

    // Python → ours, Huffman on and off.
    let conns = connections(0x6832);
    let mut input = String::new();
    let mut sent = Vec::new();
    for (c, conn) in conns.iter().enumerate() {
        input.push_str("reset\n");
        for (size, list) in conn {
            if let Some(size) = size {
                input.push_str(&format!("size {size}\n"));
            }
            input.push_str(&format!("encode {}{}\n", c % 2, field_words(list)));
            sent.push((*size, list));
        }
    }
    let lines = common::run(SCRIPT, input);
    assert_eq!(lines.len(), sent.len());
    let (mut at, mut marks) = (0, 0);
    for conn in &conns {
        let mut decoder = Decoder::new(1 << 24);
        for _ in conn {
            let ((size, list), line) = (&sent[at], &lines[at]);
            if let Some(size) = size {
                decoder.set_max_table_size(*size);
            }
            let mut got = Vec::new();
            let result =
                decoder.decode(&unhex(line), |f| got.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)));
            assert_eq!(result, Ok(()), "block {at}: we refused Python's {line}");
            assert_eq!(got.len(), list.len(), "block {at}");
            for (g, s) in got.iter().zip(list.iter()) {
                assert_eq!((&g.0, &g.1), (&s.0, &s.1), "block {at}");
                // Python's encoder writes a sensitive field that is already in a table as
                // an index (`encode([(b"content-type", b"200", True)])` after the same
                // field unmarked is `be`), so a mark can be missing; never invented.
                assert!(!g.2 || s.2, "block {at}: a never-indexed mark Python did not send: {s:?}");
                marks += usize::from(g.2);
            }
            at += 1;
        }
    }
    let sensitive = sent.iter().flat_map(|(_, list)| list.iter()).filter(|f| f.2).count();
    assert!(marks > sensitive / 2, "{marks} never-indexed marks decoded of {sensitive} sensitive fields sent");
    println!(
        "hpack_python: {blocks_out} blocks ours -> Python, {at} blocks Python -> ours \
         ({marks} never-indexed of {sensitive} sensitive fields), all agreed"
    );
}
