//! The chunked decoder: never panics, never consumes or produces more than it was given, and
//! gives the same result fed in two pieces as fed whole (so a TCP segment boundary cannot
//! change where a body ends).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_http::chunked::ChunkedDecoder;

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
});
