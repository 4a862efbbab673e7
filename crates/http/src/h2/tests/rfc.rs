//! RFC 9113's examples, where it gives octets or frames: the connection preface (§3.4),
//! the server's preface and a SETTINGS acknowledgement (§3.4, §6.5), and §8.8's exchanges,
//! written with our HPACK encoder and frame encoder, each frame header checked octet for
//! octet and every block read back through the frame decoder and the HPACK decoder.

use super::*;
use crate::h2::{encode_data, encode_goaway, encode_settings, encode_settings_ack};
use crate::hpack::{self, Field};

#[test]
fn octets_the_rfc_gives() {
    let mut preface = Vec::new();
    encode_settings(&mut preface, &[]);
    let mut ack = Vec::new();
    encode_settings_ack(&mut ack);
    let mut goaway = Vec::new();
    encode_goaway(&mut goaway, 0, ErrorCode::HTTP_1_1_REQUIRED, b"");
    // (what, ours, the octets)
    let cases: [(&str, &[u8], &str); 4] = [
        ("§3.4: the client preface", crate::choice::HTTP2_PREFACE, "505249202a20485454502f322e300d0a0d0a534d0d0a0d0a"),
        ("§3.4: a server preface of default settings", &preface, "000000 04 00 00000000"),
        ("§6.5: a SETTINGS acknowledgement", &ack, "000000 04 01 00000000"),
        ("§9.2.1/§7: GOAWAY HTTP_1_1_REQUIRED", &goaway, "000008 07 00 00000000 00000000 0000000d"),
    ];
    for (what, ours, want) in cases {
        assert_eq!(ours, &hex(want)[..], "{what}");
    }
}

/// One frame of an example: its type, flags and stream as §4.1 writes them (hex), and the
/// fields (a block, or a slice of one) or the data it carries.
enum Part {
    /// A field block's fragment with these fields, continuing the example's block.
    Fields(&'static str, &'static [(&'static str, &'static str)]),
    Data(&'static str, &'static [u8]),
}

#[test]
fn the_examples_of_section_8_8() {
    use Part::{Data, Fields};
    #[rustfmt::skip]
    let examples: &[(&str, &[Part])] = &[
        ("§8.8.1 a GET", &[
            Fields("01 05 00000001", &[(":method", "GET"), (":scheme", "https"), (":authority", "example.org"),
                (":path", "/resource"), ("host", "example.org"), ("accept", "image/jpeg")]),
        ]),
        ("§8.8.2 a 304", &[
            Fields("01 05 00000001", &[(":status", "304"), ("etag", "\"xyzzy\""),
                ("expires", "Thu, 23 Jan 2012 00:00:00 GMT")]),
        ]),
        ("§8.8.3 a POST with CONTINUATION", &[
            Fields("01 00 00000001", &[(":method", "POST"), (":authority", "example.org"), (":path", "/resource"),
                (":scheme", "https")]),
            Fields("09 04 00000001", &[("content-type", "image/jpeg"), ("host", "example.org"),
                ("content-length", "123")]),
            Data("00 01 00000001", b"{binary data}"),
        ]),
        ("§8.8.4 a 200 with a body", &[
            Fields("01 04 00000001", &[(":status", "200"), ("content-type", "image/jpeg"), ("content-length", "123")]),
            Data("00 01 00000001", b"{binary data}"),
        ]),
        ("§8.8.5 100-continue, then a 200 with trailers", &[
            Fields("01 04 00000001", &[(":status", "100"), ("extension-field", "bar")]),
            Fields("01 04 00000001", &[(":status", "200"), ("content-type", "image/jpeg"),
                ("trailer", "Foo")]),
            Data("00 00 00000001", b"{binary data}"),
            Fields("01 05 00000001", &[("foo", "bar")]),
        ]),
    ];
    for (what, parts) in examples {
        let mut encoder = hpack::Encoder::new();
        let mut decoder = hpack::Decoder::new(64 * 1024);
        let mut wire = Vec::new();
        let mut heads = Vec::new();
        // Consecutive `Fields` parts make one block, split where the RFC splits it.
        let mut i = 0;
        while i < parts.len() {
            match &parts[i] {
                Data(head, data) => {
                    let end_stream = hex(head)[1] & 0x1 != 0;
                    encode_data(&mut wire, 1, data, end_stream);
                    heads.push((hex(head), data.len()));
                    i += 1;
                }
                Fields(..) => {
                    let is_block_part = |p: &Part| matches!(p, Fields(h, _) if h.starts_with("09"));
                    let end = i + 1 + parts[i + 1..].iter().take_while(|p| is_block_part(p)).count();
                    for (j, part) in parts[i..end].iter().enumerate() {
                        let Fields(head, fields) = part else { unreachable!() };
                        let mut fragment = Vec::new();
                        encoder
                            .encode(fields.iter().map(|(n, v)| Field::new(n.as_bytes(), v.as_bytes())), &mut fragment);
                        let flags = hex(head)[1];
                        let frame = if j == 0 {
                            Frame::Headers {
                                stream: 1,
                                fragment: &fragment,
                                end_stream: flags & 0x1 != 0,
                                end_headers: flags & 0x4 != 0,
                                padding: None,
                                priority: None,
                            }
                        } else {
                            Frame::Continuation { stream: 1, fragment: &fragment, end_headers: flags & 0x4 != 0 }
                        };
                        frame.encode(&mut wire);
                        heads.push((hex(head), fragment.len()));
                    }
                    i = end;
                }
            }
        }
        // Read it all back: each frame header as the RFC's example has it, the blocks'
        // fields as listed, the data as sent.
        let (mut at, mut n, mut block, mut fields, mut data) = (0, 0, Vec::new(), Vec::new(), Vec::new());
        while let Some((frame, used)) = decode(&wire[at..]).unwrap() {
            let (head, len) = &heads[n];
            assert_eq!(&wire[at + 3..at + 9], &head[..], "{what}: frame {n}'s type, flags and stream");
            assert_eq!(wire[at..at + 3], (*len as u32).to_be_bytes()[1..], "{what}: frame {n}'s length");
            match frame {
                Frame::Headers { fragment, end_headers, .. } | Frame::Continuation { fragment, end_headers, .. } => {
                    block.extend_from_slice(fragment);
                    if end_headers {
                        decoder
                            .decode(&block, |f| {
                                fields.push(format!(
                                    "{}: {}",
                                    String::from_utf8_lossy(f.name),
                                    String::from_utf8_lossy(f.value)
                                ))
                            })
                            .unwrap();
                        block.clear();
                    }
                }
                Frame::Data { data: d, .. } => data.extend_from_slice(d),
                other => panic!("{what}: {other:?}"),
            }
            at += used;
            n += 1;
        }
        assert_eq!((at, n), (wire.len(), heads.len()), "{what}");
        let want: Vec<String> = parts
            .iter()
            .flat_map(|p| match p {
                Fields(_, f) => f.iter().map(|(n, v)| format!("{n}: {v}")).collect(),
                Data(..) => Vec::new(),
            })
            .collect();
        assert_eq!(fields, want, "{what}");
        let sent: Vec<u8> =
            parts.iter().flat_map(|p| if let Data(_, d) = p { d.to_vec() } else { Vec::new() }).collect();
        assert_eq!(data, sent, "{what}");
    }
}
