//! RFC 7541 Appendix C: every example, decoded (fields, then the dynamic table and its size
//! after each block) and encoded byte for byte by the encoder the examples assume (every
//! field indexed; Huffman for every string in C.4 and C.6, for none in C.2, C.3 and C.5).
//! And every truncation of every block refused as truncated, nothing else.

use super::super::encoder::{literal, Literal};
use super::*;

/// A dynamic table's entries, newest first: name, value, size.
type Table = &'static [(&'static str, &'static str, usize)];

pub(super) struct Block {
    pub(super) wire: &'static str,
    pub(super) fields: &'static [(&'static str, &'static str)],
    /// The dynamic table after the block, newest first, with each entry's size.
    table: Table,
    size: usize,
}

pub(super) struct Sequence {
    name: &'static str,
    huffman: bool,
    table_size: usize,
    pub(super) blocks: &'static [Block],
}

const DATE_21: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE_22: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const HTTPS: &str = "https://www.example.com";

const REQUEST_FIELDS: [&[(&str, &str)]; 3] = [
    &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
    &[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
        ("cache-control", "no-cache"),
    ],
    &[
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ],
];
const REQUEST_TABLES: [Table; 3] = [
    &[(":authority", "www.example.com", 57)],
    &[("cache-control", "no-cache", 53), (":authority", "www.example.com", 57)],
    &[("custom-key", "custom-value", 54), ("cache-control", "no-cache", 53), (":authority", "www.example.com", 57)],
];
const RESPONSE_FIELDS: [&[(&str, &str)]; 3] = [
    &[(":status", "302"), ("cache-control", "private"), ("date", DATE_21), ("location", HTTPS)],
    &[(":status", "307"), ("cache-control", "private"), ("date", DATE_21), ("location", HTTPS)],
    &[
        (":status", "200"),
        ("cache-control", "private"),
        ("date", DATE_22),
        ("location", HTTPS),
        ("content-encoding", "gzip"),
        ("set-cookie", COOKIE),
    ],
];
const RESPONSE_TABLES: [Table; 3] = [
    &[("location", HTTPS, 63), ("date", DATE_21, 65), ("cache-control", "private", 52), (":status", "302", 42)],
    &[(":status", "307", 42), ("location", HTTPS, 63), ("date", DATE_21, 65), ("cache-control", "private", 52)],
    &[("set-cookie", COOKIE, 98), ("content-encoding", "gzip", 52), ("date", DATE_22, 65)],
];

pub(super) const SEQUENCES: [Sequence; 4] = [
    Sequence {
        name: "C.3 requests without Huffman",
        huffman: false,
        table_size: 4096,
        blocks: &[
            Block {
                wire: "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                fields: REQUEST_FIELDS[0],
                table: REQUEST_TABLES[0],
                size: 57,
            },
            Block {
                wire: "8286 84be 5808 6e6f 2d63 6163 6865",
                fields: REQUEST_FIELDS[1],
                table: REQUEST_TABLES[1],
                size: 110,
            },
            Block {
                wire: "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                fields: REQUEST_FIELDS[2],
                table: REQUEST_TABLES[2],
                size: 164,
            },
        ],
    },
    Sequence {
        name: "C.4 requests with Huffman",
        huffman: true,
        table_size: 4096,
        blocks: &[
            Block {
                wire: "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                fields: REQUEST_FIELDS[0],
                table: REQUEST_TABLES[0],
                size: 57,
            },
            Block {
                wire: "8286 84be 5886 a8eb 1064 9cbf",
                fields: REQUEST_FIELDS[1],
                table: REQUEST_TABLES[1],
                size: 110,
            },
            Block {
                wire: "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                fields: REQUEST_FIELDS[2],
                table: REQUEST_TABLES[2],
                size: 164,
            },
        ],
    },
    Sequence {
        name: "C.5 responses without Huffman",
        huffman: false,
        table_size: 256,
        blocks: &[
            Block {
                wire: "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a \
                       3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                fields: RESPONSE_FIELDS[0],
                table: RESPONSE_TABLES[0],
                size: 222,
            },
            Block { wire: "4803 3330 37c1 c0bf", fields: RESPONSE_FIELDS[1], table: RESPONSE_TABLES[1], size: 222 },
            Block {
                wire: "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 \
                       677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 \
                       553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
                fields: RESPONSE_FIELDS[2],
                table: RESPONSE_TABLES[2],
                size: 215,
            },
        ],
    },
    Sequence {
        name: "C.6 responses with Huffman",
        huffman: true,
        table_size: 256,
        blocks: &[
            Block {
                wire: "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e \
                       919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                fields: RESPONSE_FIELDS[0],
                table: RESPONSE_TABLES[0],
                size: 222,
            },
            Block { wire: "4883 640e ffc1 c0bf", fields: RESPONSE_FIELDS[1], table: RESPONSE_TABLES[1], size: 222 },
            Block {
                wire: "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 \
                       821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed \
                       4ee5 b106 3d50 07",
                fields: RESPONSE_FIELDS[2],
                table: RESPONSE_TABLES[2],
                size: 215,
            },
        ],
    },
];

fn owned(fields: &[(&str, &str)]) -> Vec<Owned> {
    fields.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec(), false)).collect()
}

fn table_of(want: &[(&str, &str, usize)]) -> Vec<(String, String, usize)> {
    want.iter().map(|&(n, v, s)| (n.to_string(), v.to_string(), s)).collect()
}

#[test]
fn appendix_c_sequences_decode() {
    for seq in &SEQUENCES {
        let mut d = Decoder::with_table_size(seq.table_size, 64 * 1024);
        for (i, block) in seq.blocks.iter().enumerate() {
            let at = format!("{} block {}", seq.name, i + 1);
            assert_eq!(decode(&mut d, &hex(block.wire)), Ok(owned(block.fields)), "{at}");
            assert_eq!(entries(d.table()), table_of(block.table), "{at}");
            assert_eq!(d.table().size(), block.size, "{at}");
        }
    }
}

#[test]
fn appendix_c_sequences_encode_byte_for_byte() {
    for seq in &SEQUENCES {
        let mut e = Encoder::rfc_examples(seq.huffman, seq.table_size);
        for (i, block) in seq.blocks.iter().enumerate() {
            let at = format!("{} block {}", seq.name, i + 1);
            assert_eq!(encode(&mut e, &owned(block.fields)), hex(block.wire), "{at}");
            assert_eq!(entries(e.table()), table_of(block.table), "{at}");
        }
    }
}

/// C.2's four representations, each from an empty table: the field, the block, and the
/// table after it.
#[test]
fn appendix_c_2_representations() {
    let cases: [(&str, Owned, &str, Table); 4] = [
        (
            "C.2.1 literal with indexing",
            (b"custom-key".to_vec(), b"custom-header".to_vec(), false),
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            &[("custom-key", "custom-header", 55)],
        ),
        (
            "C.2.2 literal without indexing",
            (b":path".to_vec(), b"/sample/path".to_vec(), false),
            "040c 2f73 616d 706c 652f 7061 7468",
            &[],
        ),
        (
            "C.2.3 literal never indexed",
            (b"password".to_vec(), b"secret".to_vec(), true),
            "1008 7061 7373 776f 7264 0673 6563 7265 74",
            &[],
        ),
        ("C.2.4 indexed", (b":method".to_vec(), b"GET".to_vec(), false), "82", &[]),
    ];
    for (name, field, wire, table) in cases {
        let mut d = Decoder::new(64 * 1024);
        assert_eq!(decode(&mut d, &hex(wire)), Ok(vec![field.clone()]), "{name}");
        assert_eq!(entries(d.table()), table_of(table), "{name}");
        // C.2.2 is the one choice the encoder's policy does not make (it would index
        // `:path` with every field indexed): write that representation directly.
        let encoded = if name.starts_with("C.2.2") {
            let mut out = Vec::new();
            literal(Literal::WithoutIndexing, Some(4), &field.0, &field.1, false, &mut out);
            out
        } else {
            let mut e = Encoder::rfc_examples(false, 4096);
            let out = encode(&mut e, &[field]);
            assert_eq!(entries(e.table()), table_of(table), "{name}");
            out
        };
        assert_eq!(encoded, hex(wire), "{name}");
    }
}

/// Every cut of every block, from the table the block was sent against: it decodes only at
/// a field boundary (to the fields before the cut), and is otherwise refused as truncated.
#[test]
fn every_truncation_of_appendix_c_is_refused() {
    for seq in &SEQUENCES {
        let mut d = Decoder::with_table_size(seq.table_size, 64 * 1024);
        for (i, block) in seq.blocks.iter().enumerate() {
            let wire = hex(block.wire);
            let fields = owned(block.fields);
            let mut boundaries = 0;
            for cut in 0..wire.len() {
                match decode(&mut d.clone(), &wire[..cut]) {
                    Ok(got) => {
                        boundaries += 1;
                        assert_eq!(got, fields[..got.len()], "{} block {} cut at {cut}", seq.name, i + 1);
                    }
                    Err(e) => assert_eq!(e, DecodeError::Truncated, "{} block {} cut at {cut}", seq.name, i + 1),
                }
            }
            // One boundary before each field: the cuts at 0 and after every field but the last.
            assert_eq!(boundaries, fields.len(), "{} block {}", seq.name, i + 1);
            decode(&mut d, &wire).unwrap();
        }
    }
}
