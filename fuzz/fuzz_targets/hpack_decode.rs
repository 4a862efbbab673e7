//! The HPACK decoder: random blocks, two per input on one connection (the first byte says
//! where the input splits, so the second block meets the table the first one left),
//! through a decoder with a small table (256 octets) and a small header list limit
//! (1024). It never panics, and what it accepts stays within the limit; the fields it
//! decodes, re-encoded by our encoder and decoded again, come back the same, with the
//! never-indexed mark kept.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_http::hpack::{Decoder, Encoder, Field};

const TABLE: usize = 256;
const LIST: usize = 1024;

type Owned = (Vec<u8>, Vec<u8>, bool);

fuzz_target!(|data: &[u8]| {
    let Some((&split, input)) = data.split_first() else { return };
    let (first, second) = input.split_at(usize::from(split).min(input.len()));
    let mut decoder = Decoder::new(LIST);
    // This side advertised 256 octets and the peer has acknowledged it: the peer's first
    // block must start with a size update, sent here as a block of its own.
    decoder.set_max_table_size(TABLE);
    decoder.decode(&[0x3f, 0xe1, 0x01], |_| {}).expect("a size update to the advertised size");

    let mut encoder = Encoder::new();
    encoder.set_max_table_size(TABLE);
    let mut again = Decoder::new(LIST);
    again.set_max_table_size(TABLE);
    for block in [first, second] {
        let mut fields: Vec<Owned> = Vec::new();
        let decoded = decoder.decode(block, |f| fields.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)));
        if decoded.is_err() {
            return;
        }
        let size: usize = fields.iter().map(|(n, v, _)| n.len() + v.len() + 32).sum();
        assert!(size <= LIST, "a header list of {size} octets passed a limit of {LIST}");
        let mut wire = Vec::new();
        encoder.encode(fields.iter().map(|(n, v, s)| Field { name: n, value: v, never_indexed: *s }), &mut wire);
        let mut round: Vec<Owned> = Vec::new();
        again
            .decode(&wire, |f| round.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)))
            .unwrap_or_else(|e| panic!("our encoder's block refused: {e:?}: {wire:02x?}"));
        assert_eq!(round.len(), fields.len());
        for (back, field) in round.iter().zip(&fields) {
            assert_eq!((&back.0, &back.1), (&field.0, &field.1));
            assert!(back.2 || !field.2, "the never-indexed mark was lost: {field:?}");
        }
    }
});
