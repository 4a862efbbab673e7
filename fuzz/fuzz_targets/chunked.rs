//! The chunked decoder: never panics, never consumes or produces more than it was given, and
//! gives the same result fed in two pieces as fed whole (so a TCP segment boundary cannot
//! change where a body ends). And its counterpart, the encoder: the input cut in the same
//! two pieces, chunk-encoded and finished, decodes to exactly the input, all of it consumed;
//! a length encoder writes at most its length and reports the rest as an overrun.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_http::chunked::ChunkedDecoder;
use spidey_http::{EncodeError, Encoder};

fuzz_target!(|data: &[u8]| {
    let Some((&split, input)) = data.split_first() else { return };
    let whole = {
        let mut out = Vec::new();
        ChunkedDecoder::new().decode(input, &mut out).map(|p| (p, out))
    };
    let split = usize::from(split).min(input.len());
    let pieces = {
        let mut d = ChunkedDecoder::new();
        let mut out = Vec::new();
        d.decode(&input[..split], &mut out).and_then(|first| {
            if first.done {
                return Ok((first, out));
            }
            let second = d.decode(&input[split..], &mut out)?;
            let consumed = first.consumed + second.consumed;
            Ok((spidey_http::chunked::Progress { consumed, done: second.done }, out))
        })
    };
    if let Ok((p, out)) = &whole {
        assert!(p.consumed <= input.len() && out.len() <= p.consumed);
    }
    assert_eq!(whole, pieces, "split at {split}");
    encode_round_trip(input, split);
});

fn encode_round_trip(input: &[u8], split: usize) {
    let (first, second) = input.split_at(split);
    let mut chunked = Encoder::Chunked;
    let mut wire = Vec::new();
    for piece in [first, second] {
        assert_eq!(chunked.encode(piece, &mut wire), Ok(()));
    }
    assert_eq!(chunked.finish(&mut wire), Ok(()));
    let mut decoded = Vec::new();
    let progress = ChunkedDecoder::new().decode(&wire, &mut decoded).expect("the encoder's output decodes");
    assert!(progress.done && progress.consumed == wire.len());
    assert_eq!(decoded, input);

    let len = split as u64;
    let mut length = Encoder::Length(len);
    let mut out = Vec::new();
    let result = length.encode(input, &mut out);
    let extra = input.len().saturating_sub(split) as u64;
    assert_eq!(out, &input[..split]);
    assert_eq!(result, if extra == 0 { Ok(()) } else { Err(EncodeError::Overrun(extra)) });
}
