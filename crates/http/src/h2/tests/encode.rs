//! The encoder's one decision: where a field block splits into HEADERS and CONTINUATION
//! frames (RFC 9113 §4.3, §6.2, §6.10), and which of them carry END_STREAM and END_HEADERS.

use super::*;
use crate::h2::encode_headers;

#[test]
fn a_field_block_splits_at_the_maximum_frame_size() {
    const H: u8 = 0x1;
    const C: u8 = 0x9;
    const ES: u8 = 0x1;
    const EH: u8 = 0x4;
    // (block length, max frame size, END_STREAM, the frames: type, flags, payload length)
    type Case = (usize, u32, bool, &'static [(u8, u8, usize)]);
    #[rustfmt::skip]
    let cases: &[Case] = &[
        (0, 16_384, false, &[(H, EH, 0)]),
        (0, 16_384, true, &[(H, ES | EH, 0)]),
        (1, 16_384, false, &[(H, EH, 1)]),
        (16_384, 16_384, true, &[(H, ES | EH, 16_384)]),
        (16_385, 16_384, true, &[(H, ES, 16_384), (C, EH, 1)]),
        (10, 10, false, &[(H, EH, 10)]),
        (11, 10, false, &[(H, 0, 10), (C, EH, 1)]),
        (30, 10, true, &[(H, ES, 10), (C, 0, 10), (C, EH, 10)]),
        (31, 10, false, &[(H, 0, 10), (C, 0, 10), (C, 0, 10), (C, EH, 1)]),
        (3, 1, false, &[(H, 0, 1), (C, 0, 1), (C, EH, 1)]),
        (2, 0, false, &[(H, 0, 1), (C, EH, 1)]),
        (40_000, 16_777_215, false, &[(H, EH, 40_000)]),
        (40_000, u32::MAX, false, &[(H, EH, 40_000)]),
    ];
    for &(len, max, end_stream, want) in cases {
        let block: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut out = Vec::new();
        encode_headers(&mut out, 5, &block, end_stream, max);
        let (mut at, mut got, mut joined) = (0, Vec::new(), Vec::new());
        while let Some((frame, used)) = Frame::decode(&out[at..], max.clamp(1, 16_777_215)).unwrap() {
            let (stream, fragment) = match frame {
                Frame::Headers { stream, fragment, priority: None, padding: None, .. } => (stream, fragment),
                Frame::Continuation { stream, fragment, .. } => (stream, fragment),
                other => panic!("{len}/{max}: {other:?}"),
            };
            assert_eq!(stream, 5);
            joined.extend_from_slice(fragment);
            got.push((out[at + 3], out[at + 4], fragment.len()));
            at += used;
        }
        assert_eq!(at, out.len(), "{len}/{max}");
        assert_eq!(got, want, "{len}/{max}/{end_stream}");
        assert_eq!(joined, block, "{len}/{max}: the fragments make the block");
    }
}

#[test]
#[should_panic(expected = "an HTTP/2 frame payload of 16777216 octets")]
fn a_payload_no_frame_can_say_is_refused() {
    crate::h2::encode_data(&mut Vec::new(), 1, &vec![0; 1 << 24], false);
}
