//! Integers with an N-bit prefix (RFC 7541 §5.1).
//!
//! ```text
//!   0   1   2   3   4   5   6   7
//! +---+---+---+---+---+---+---+---+
//! | ? | ? | ? |       Value       |   value < 2^N - 1: in the prefix
//! +---+---+---+-------------------+
//! | ? | ? | ? | 1   1   1   1   1 |   else the prefix is all ones and the rest,
//! | 1 |    Value-(2^N-1) LSB      |   value - (2^N - 1), follows 7 bits at a time,
//! | 0 |    Value-(2^N-1) MSB      |   least significant first, the top bit saying "more"
//! +---+---------------------------+
//! ```
//!
//! The RFC sets no bound; §5.1 says encodings that exceed an implementation's limits "in
//! value or octet length" MUST be treated as decoding errors. Ours: a value is at most
//! [`MAX_INTEGER`] (`u32::MAX`, more than any length or index a block can hold) and takes
//! at most [`MAX_CONTINUATION`] octets after the prefix, enough for that value with any
//! prefix (32 bits / 7 per octet). Octets of zeros after the value (`0x1f 0x80 0x80 0x00`
//! for 31) are legal and accepted within that count.

use super::DecodeError;

/// A decoded integer and the octets it took.
pub(crate) type Decoded = Result<(usize, usize), DecodeError>;

/// The largest integer a block may carry.
pub(crate) const MAX_INTEGER: u64 = u32::MAX as u64;

/// The most octets after the prefix octet: ceil(32 / 7).
pub(crate) const MAX_CONTINUATION: usize = 5;

/// Decodes an integer with a `prefix`-bit prefix (1..=8) at the start of `input` (the
/// prefix octet's other bits are ignored). Returns the value and the octets it took.
pub(crate) fn decode(input: &[u8], prefix: u8) -> Decoded {
    debug_assert!((1..=8).contains(&prefix));
    let mask = (1u16 << prefix) - 1;
    let &first = input.first().ok_or(DecodeError::Truncated)?;
    let small = u16::from(first) & mask;
    if small < mask {
        return Ok((usize::from(small), 1));
    }
    let mut value = u64::from(mask);
    for (i, &octet) in input.iter().enumerate().skip(1).take(MAX_CONTINUATION) {
        // i <= 5, so the shift is at most 28 and the term below 2^35: no u64 overflow.
        value += u64::from(octet & 0x7f) << (7 * (i - 1));
        if value > MAX_INTEGER {
            return Err(DecodeError::IntegerOverflow);
        }
        if octet & 0x80 == 0 {
            // value <= u32::MAX, which fits the usize of the 32- and 64-bit targets.
            let value = usize::try_from(value).map_err(|_| DecodeError::IntegerOverflow)?;
            return Ok((value, i + 1));
        }
        if i == MAX_CONTINUATION {
            return Err(DecodeError::IntegerOverflow);
        }
    }
    Err(DecodeError::Truncated)
}

/// Appends `value` with a `prefix`-bit prefix; `flags` are the prefix octet's high bits
/// (the representation's pattern), which must not overlap the prefix.
pub(crate) fn encode(value: usize, prefix: u8, flags: u8, out: &mut Vec<u8>) {
    debug_assert!((1..=8).contains(&prefix));
    let mask = (1usize << prefix) - 1;
    debug_assert_eq!(usize::from(flags) & mask, 0);
    if value < mask {
        // value < mask <= 255: the cast keeps every bit.
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: usize, prefix: u8) -> Vec<u8> {
        let mut out = Vec::new();
        encode(value, prefix, 0, &mut out);
        out
    }

    #[test]
    fn rfc_7541_examples() {
        // §5.1's examples (C.1.1, C.1.2, C.1.3), with the flags a representation would set.
        let cases: [(usize, u8, u8, &[u8]); 3] =
            [(10, 5, 0xe0, &[0xea]), (1337, 5, 0x00, &[0x1f, 0x9a, 0x0a]), (42, 8, 0x00, &[0x2a])];
        for (value, prefix, flags, wire) in cases {
            let mut out = Vec::new();
            encode(value, prefix, flags, &mut out);
            assert_eq!(out, wire, "{value} with a {prefix}-bit prefix");
            assert_eq!(decode(wire, prefix), Ok((value, wire.len())), "{wire:02x?}");
        }
    }

    #[test]
    fn every_prefix_round_trips_at_its_boundaries() {
        let max = MAX_INTEGER as usize;
        for prefix in 1..=8u8 {
            let mask = (1usize << prefix) - 1;
            let values =
                [0, mask - 1, mask, mask + 1, mask + 127, mask + 128, mask + 16_383, mask + 16_384, max - 1, max];
            for value in values {
                let wire = encoded(value, prefix);
                assert_eq!(decode(&wire, prefix), Ok((value, wire.len())), "{value} prefix {prefix}");
                // The bits above the prefix are the representation's: ignored.
                let mut flagged = wire.clone();
                flagged[0] |= !(mask as u8);
                assert_eq!(decode(&flagged, prefix), Ok((value, wire.len())), "{value} prefix {prefix} flagged");
                for cut in 0..wire.len() {
                    assert_eq!(decode(&wire[..cut], prefix), Err(DecodeError::Truncated), "{value} cut at {cut}");
                }
            }
            // The largest value takes the most continuation octets with a one-bit prefix.
            assert!(encoded(max, prefix).len() <= 1 + MAX_CONTINUATION);
        }
        assert_eq!(encoded(MAX_INTEGER as usize, 1).len(), 1 + MAX_CONTINUATION);
    }

    #[test]
    fn the_overflow_boundary() {
        use DecodeError::*;
        let cases: [(&[u8], u8, Decoded); 9] = [
            // u32::MAX with an 8-bit prefix: 255 + 0xffff_ff00.
            (&[0xff, 0x80, 0xfe, 0xff, 0xff, 0x0f], 8, Ok((u32::MAX as usize, 6))),
            // One more.
            (&[0xff, 0x81, 0xfe, 0xff, 0xff, 0x0f], 8, Err(IntegerOverflow)),
            // The fifth continuation octet with bits above u32.
            (&[0xff, 0x80, 0xfe, 0xff, 0xff, 0x7f], 8, Err(IntegerOverflow)),
            // Six continuation octets, even of zeros.
            (&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 5, Err(IntegerOverflow)),
            (&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80], 5, Err(IntegerOverflow)),
            // Five of zeros are within the bound.
            (&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x00], 5, Ok((31, 6))),
            (&[0x1f, 0x80, 0x80, 0x80, 0x80], 5, Err(Truncated)),
            (&[0x7f], 7, Err(Truncated)),
            (&[], 7, Err(Truncated)),
        ];
        for (wire, prefix, want) in cases {
            assert_eq!(decode(wire, prefix), want, "{wire:02x?}");
        }
    }
}
