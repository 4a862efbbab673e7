//! HPACK's tests across the modules: RFC 7541's Appendix C examples decoded and encoded
//! byte for byte (`appendix_c`), refused blocks (`errors`), and random field lists through
//! our encoder and two decoders, ours and loona-hpack's (`random`). The modules' own parts
//! (integers, Huffman, the tables) are tested beside them.

mod appendix_c;
mod errors;
mod random;

use super::table::DynamicTable;
use super::{DecodeError, Decoder, Encoder, Field};

/// A field as the tests hold it: name, value, never indexed.
pub(super) type Owned = (Vec<u8>, Vec<u8>, bool);

pub(super) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

pub(super) fn decode(d: &mut Decoder, block: &[u8]) -> Result<Vec<Owned>, DecodeError> {
    let mut fields = Vec::new();
    d.decode(block, |f| fields.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed)))?;
    Ok(fields)
}

pub(super) fn encode(e: &mut Encoder, fields: &[Owned]) -> Vec<u8> {
    let mut out = Vec::new();
    e.encode(fields.iter().map(|(n, v, never)| Field { name: n, value: v, never_indexed: *never }), &mut out);
    out
}

/// A table's entries, newest first, with their sizes.
pub(super) fn entries(t: &DynamicTable) -> Vec<(String, String, usize)> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    t.entries().map(|(n, v)| (text(n), text(v), n.len() + v.len() + 32)).collect()
}
