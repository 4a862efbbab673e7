//! The Huffman code of RFC 7541 Appendix B (§5.2): encoding, and a decoder that refuses what
//! §5.2 says a decoder MUST treat as an error.
//!
//! A string literal's Huffman form is its octets' codes, most significant bit first, padded
//! to an octet boundary with the most significant bits of EOS (all ones). So a decoder
//! refuses EOS itself inside the string, padding longer than 7 bits, and padding that is
//! not all ones ([`HuffmanError`]).
//!
//! Decoding walks the code tree four bits at a time: the tree's 256 internal nodes are the
//! states, and [`STEPS`], computed at compile time from [`CODES`], says for each state and
//! nibble where the walk ends and which octet, if any, it completed (one at most: the
//! shortest code is 5 bits). The shortest code being 5 bits also bounds the expansion: a
//! string decodes to at most 8/5 of its length.

/// Why a Huffman string is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HuffmanError {
    /// The EOS symbol (30 ones) inside the string.
    Eos,
    /// More than 7 bits after the last symbol.
    PaddingTooLong,
    /// The bits after the last symbol are not all ones.
    PaddingNotOnes,
}

/// The code and its length in bits of each symbol: octets 0 to 255, then EOS (256).
#[rustfmt::skip]
pub(crate) const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28), // 0
    (0xfffffe4, 28), (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28), // 4
    (0xfffffe8, 28), (0xffffea, 24), (0x3ffffffc, 30), (0xfffffe9, 28), // 8
    (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28), (0xfffffec, 28), // 12
    (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28), // 16
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28), // 20
    (0xffffff4, 28), (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28), // 24
    (0xffffff8, 28), (0xffffff9, 28), (0xffffffa, 28), (0xffffffb, 28), // 28
    (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12), // 32
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11), // 36
    (0x3fa, 10), (0x3fb, 10), (0xf9, 8), (0x7fb, 11), // 40
    (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6), // 44
    (0x0, 5), (0x1, 5), (0x2, 5), (0x19, 6), // 48
    (0x1a, 6), (0x1b, 6), (0x1c, 6), (0x1d, 6), // 52
    (0x1e, 6), (0x1f, 6), (0x5c, 7), (0xfb, 8), // 56
    (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10), // 60
    (0x1ffa, 13), (0x21, 6), (0x5d, 7), (0x5e, 7), // 64
    (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7), // 68
    (0x63, 7), (0x64, 7), (0x65, 7), (0x66, 7), // 72
    (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7), // 76
    (0x6b, 7), (0x6c, 7), (0x6d, 7), (0x6e, 7), // 80
    (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7), // 84
    (0xfc, 8), (0x73, 7), (0xfd, 8), (0x1ffb, 13), // 88
    (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6), // 92
    (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5), // 96
    (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6), // 100
    (0x27, 6), (0x6, 5), (0x74, 7), (0x75, 7), // 104
    (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5), // 108
    (0x2b, 6), (0x76, 7), (0x2c, 6), (0x8, 5), // 112
    (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7), // 116
    (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15), // 120
    (0x7fc, 11), (0x3ffd, 14), (0x1ffd, 13), (0xffffffc, 28), // 124
    (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20), // 128
    (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22), (0x7fffd9, 23), // 132
    (0x3fffd6, 22), (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23), // 136
    (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23), // 140
    (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22), (0x7fffe0, 23), // 144
    (0xffffee, 24), (0x7fffe1, 23), (0x7fffe2, 23), (0x7fffe3, 23), // 148
    (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23), // 152
    (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24), // 156
    (0x3fffda, 22), (0x1fffdd, 21), (0xfffe9, 20), (0x3fffdb, 22), // 160
    (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21), // 164
    (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22), (0xfffff0, 24), // 168
    (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23), (0x7fffec, 23), // 172
    (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21), // 176
    (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23), (0x7fffef, 23), // 180
    (0xfffea, 20), (0x3fffe2, 22), (0x3fffe3, 22), (0x3fffe4, 22), // 184
    (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23), // 188
    (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19), // 192
    (0x3fffe7, 22), (0x7ffff2, 23), (0x3fffe8, 22), (0x1ffffec, 25), // 196
    (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27), // 200
    (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25), // 204
    (0x7fff2, 19), (0x1fffe3, 21), (0x3ffffe6, 26), (0x7ffffe0, 27), // 208
    (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24), // 212
    (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26), // 216
    (0xffffffd, 28), (0x7ffffe3, 27), (0x7ffffe4, 27), (0x7ffffe5, 27), // 220
    (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21), // 224
    (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23), // 228
    (0x3fffea, 22), (0x3fffeb, 22), (0x1ffffee, 25), (0x1ffffef, 25), // 232
    (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23), // 236
    (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26), // 240
    (0x7ffffe7, 27), (0x7ffffe8, 27), (0x7ffffe9, 27), (0x7ffffea, 27), // 244
    (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27), // 248
    (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26), // 252
    (0x3fffffff, 30), // 256
];

const EOS: usize = 256;

/// A child in [`Tree`]: an internal node's index, or `LEAF | symbol`.
const LEAF: u16 = 0x8000;

/// The code tree: `tree[node][bit]`, the root at 0.
type Tree = [[u16; 2]; 256];

/// Builds the tree from [`CODES`]. The assertions make a table that is not a complete
/// prefix code (a code that is a prefix of another, or a missing branch) fail the build.
const fn tree() -> Tree {
    let mut tree = [[0u16; 2]; 256];
    let mut used = 1;
    let mut symbol = 0;
    while symbol < CODES.len() {
        let (code, len) = CODES[symbol];
        let (mut node, mut bit) = (0, len);
        while bit > 1 {
            bit -= 1;
            let b = ((code >> bit) & 1) as usize;
            if tree[node][b] == 0 {
                tree[node][b] = used as u16;
                used += 1;
            }
            assert!(tree[node][b] & LEAF == 0, "a code is a prefix of another");
            node = tree[node][b] as usize;
        }
        assert!(tree[node][(code & 1) as usize] == 0, "a code is a prefix of another");
        tree[node][(code & 1) as usize] = LEAF | symbol as u16;
        symbol += 1;
    }
    // 257 leaves and 256 internal nodes: the tree is full, no branch leads nowhere.
    assert!(used == 256, "not a complete prefix code");
    tree
}

/// One step of the decoder: the state after a nibble, packed as `next | symbol << 8 |
/// EMIT | FAIL`.
const EMIT: u32 = 1 << 16;
const FAIL: u32 = 1 << 17;

/// For each state (internal node) and nibble, the step; and for each state, whether a
/// string may end there: only if the bits walked from the root since the last symbol are
/// all ones and at most 7 of them (the padding rule).
struct Steps {
    steps: [[u32; 16]; 256],
    end: [Result<(), HuffmanError>; 256],
}

const fn steps() -> Steps {
    let tree = tree();
    let mut steps = [[0u32; 16]; 256];
    let mut end = [Ok(()); 256];
    // The depth and all-ones-ness of each node's path, found walking down from the root
    // (a child's index is always larger than its parent's).
    let mut depth = [0u8; 256];
    let mut ones = [false; 256];
    ones[0] = true;
    let mut node = 0;
    while node < 256 {
        end[node] = match (ones[node], depth[node] <= 7) {
            (false, _) => Err(HuffmanError::PaddingNotOnes),
            (true, false) => Err(HuffmanError::PaddingTooLong),
            (true, true) => Ok(()),
        };
        let mut b = 0;
        while b < 2 {
            let child = tree[node][b];
            if child & LEAF == 0 {
                depth[child as usize] = depth[node] + 1;
                ones[child as usize] = ones[node] && b == 1;
            }
            b += 1;
        }
        let mut nibble = 0;
        while nibble < 16 {
            let (mut at, mut step, mut shift) = (node, 0u32, 4);
            while shift > 0 {
                shift -= 1;
                let child = tree[at][(nibble >> shift) & 1];
                if child & LEAF == 0 {
                    at = child as usize;
                } else if (child & !LEAF) as usize == EOS {
                    step |= FAIL;
                    at = 0;
                } else {
                    step |= EMIT | ((child & !LEAF) as u32) << 8;
                    at = 0;
                }
            }
            steps[node][nibble] = step | at as u32;
            nibble += 1;
        }
        node += 1;
    }
    Steps { steps, end }
}

static STEPS: Steps = steps();

/// Appends the decoded form of `input` to `out`.
pub(crate) fn decode(input: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    out.reserve(input.len() * 8 / 5);
    let mut state = 0usize;
    for &octet in input {
        for nibble in [octet >> 4, octet & 0x0f] {
            let step = STEPS.steps[state][usize::from(nibble)];
            if step & FAIL != 0 {
                return Err(HuffmanError::Eos);
            }
            if step & EMIT != 0 {
                out.push((step >> 8) as u8);
            }
            state = (step & 0xff) as usize;
        }
    }
    STEPS.end[state]
}

/// The length of `input`'s Huffman form, in octets.
pub(crate) fn encoded_len(input: &[u8]) -> usize {
    input.iter().map(|&b| usize::from(CODES[usize::from(b)].1)).sum::<usize>().div_ceil(8)
}

/// Appends the Huffman form of `input` to `out`, padded with ones.
pub(crate) fn encode(input: &[u8], out: &mut Vec<u8>) {
    out.reserve(encoded_len(input));
    // INVARIANT: `pending` < 8 between octets: the low `pending` bits of `bits` wait for
    // an octet; with a code of at most 30 bits the live bits never exceed 37 of the 64.
    let (mut bits, mut pending) = (0u64, 0u32);
    for &b in input {
        let (code, len) = CODES[usize::from(b)];
        bits = (bits << len) | u64::from(code);
        pending += u32::from(len);
        while pending >= 8 {
            pending -= 8;
            out.push((bits >> pending) as u8);
        }
    }
    if pending > 0 {
        out.push(((bits << (8 - pending)) as u8) | (0xff >> pending));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(s, &mut out);
        assert_eq!(out.len(), encoded_len(s), "{s:?}");
        out
    }

    fn decoded(wire: &[u8]) -> Result<Vec<u8>, HuffmanError> {
        let mut out = Vec::new();
        decode(wire, &mut out).map(|()| out)
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn rfc_7541_appendix_c_strings() {
        // The Huffman strings of C.4 and C.6.
        let cases = [
            ("www.example.com", "f1e3 c2e5 f23a 6ba0 ab90 f4ff"),
            ("no-cache", "a8eb 1064 9cbf"),
            ("custom-key", "25a8 49e9 5ba9 7d7f"),
            ("custom-value", "25a8 49e9 5bb8 e8b4 bf"),
            ("302", "6402"),
            ("private", "aec3 771a 4b"),
            ("Mon, 21 Oct 2013 20:13:21 GMT", "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff"),
            ("https://www.example.com", "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3"),
            ("307", "640e ff"),
            ("gzip", "9bd9 ab"),
            (
                "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
                "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
            ),
        ];
        for (text, wire) in cases {
            assert_eq!(encoded(text.as_bytes()), hex(wire), "{text}");
            assert_eq!(decoded(&hex(wire)).as_deref(), Ok(text.as_bytes()), "{wire}");
        }
    }

    #[test]
    fn every_octet_round_trips() {
        for b in 0..=255u8 {
            for n in [1, 2, 3, 7, 8, 9] {
                let s = vec![b; n];
                assert_eq!(decoded(&encoded(&s)), Ok(s), "{b:#04x} x{n}");
            }
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encoded(&all)), Ok(all.clone()));
        let reversed: Vec<u8> = all.iter().rev().copied().collect();
        assert_eq!(decoded(&encoded(&reversed)), Ok(reversed));
        assert_eq!(decoded(&[]), Ok(vec![]));
    }

    #[test]
    fn the_code_is_canonical_and_complete() {
        // Kraft's sum is exactly 1 (the build already refuses a prefix, and counts nodes).
        let kraft: u64 = CODES.iter().map(|&(_, len)| 1u64 << (30 - len)).sum();
        assert_eq!(kraft, 1 << 30);
        // Every code fits its length; the shortest is 5 bits (the 8/5 expansion bound).
        assert!(CODES.iter().all(|&(code, len)| (5..=30).contains(&len) && u64::from(code) < 1 << len));
        assert_eq!(CODES[EOS], (0x3fff_ffff, 30));
    }

    #[test]
    fn hostile_strings() {
        use HuffmanError::*;
        type Case = (&'static [u8], Result<&'static [u8], HuffmanError>);
        let cases: [Case; 14] = [
            // EOS: 30 ones, here with 2 ones of padding, and inside a longer string.
            (&[0xff, 0xff, 0xff, 0xff], Err(Eos)),
            (&[0xff, 0xff, 0xff, 0xfc], Err(Eos)),
            (&[0x1f, 0xff, 0xff, 0xff, 0xff], Err(Eos)),
            // 8 to 29 bits of ones: padding longer than 7 bits.
            (&[0xff], Err(PaddingTooLong)),
            (&[0xff, 0xff], Err(PaddingTooLong)),
            (&[0xff, 0xff, 0xff], Err(PaddingTooLong)),
            // 'a' (00011), then 8 ones and 3 more: the padding is 11 bits.
            (&[0x1f, 0xff], Err(PaddingTooLong)),
            // 'a' then padding 000 or 110.
            (&[0x18], Err(PaddingNotOnes)),
            (&[0x1e], Err(PaddingNotOnes)),
            // '0' (00000) and 3 ones; 'a' and 3 ones.
            (&[0x07], Ok(b"0")),
            (&[0x1f], Ok(b"a")),
            // '0' and 000: the start of another code is not padding.
            (&[0x00], Err(PaddingNotOnes)),
            // 11111110: the first 8 bits of a 10-bit code ('!' is 1111111000).
            (&[0xfe], Err(PaddingNotOnes)),
            // Eight of the 8-bit '&' (11111000): no padding at all.
            (&[0xf8; 8], Ok(b"&&&&&&&&")),
        ];
        for (wire, want) in cases {
            assert_eq!(decoded(wire), want.map(<[u8]>::to_vec), "{wire:02x?}");
        }
    }

    #[test]
    fn random_strings_and_their_cuts() {
        let mut rng = fastrand::Rng::with_seed(7541);
        for _ in 0..2000 {
            let len = rng.usize(0..64);
            let s: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            let wire = encoded(&s);
            assert_eq!(decoded(&wire), Ok(s.clone()));
            // Every cut and every flipped bit decodes to something or an error, never a
            // panic, and never more than 8/5 of the input.
            for cut in 0..wire.len() {
                if let Ok(out) = decoded(&wire[..cut]) {
                    assert!(out.len() * 5 <= cut * 8);
                }
            }
            if !wire.is_empty() {
                let mut flipped = wire.clone();
                let i = rng.usize(..flipped.len());
                flipped[i] ^= 1 << rng.u8(0..8);
                let _ = decoded(&flipped);
            }
        }
        for _ in 0..2000 {
            let wire: Vec<u8> = (0..rng.usize(0..32)).map(|_| rng.u8(..)).collect();
            if let Ok(out) = decoded(&wire) {
                assert!(out.len() * 5 <= wire.len() * 8);
                // A string that decodes re-encodes to itself: the code is a bijection on
                // strings with correct padding.
                assert_eq!(encoded(&out), wire);
            }
        }
    }
}
