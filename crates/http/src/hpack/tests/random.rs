//! Random field lists on random connections: encoded by ours, decoded by ours and by
//! loona-hpack, which must agree with the list and with each other; the two tables stay
//! equal. And random or damaged blocks through our decoder: never a panic, and a block it
//! accepts loona-hpack accepts too, with the same fields.

use super::super::table::STATIC;
use super::*;

/// Names that repeat, as a response's do, beside the static table's and random ones.
const NAMES: [&str; 8] =
    ["server", "content-type", "x-request-id", "vary", "x-a", "set-cookie", "authorization", "etag"];
const VALUES: [&str; 6] = ["", "spidey", "text/html; charset=utf-8", "accept-encoding", "1", "no-store"];

fn bytes(rng: &mut fastrand::Rng, len: std::ops::Range<usize>, alphabet: &[u8]) -> Vec<u8> {
    (0..rng.usize(len))
        .map(|_| if alphabet.is_empty() { rng.u8(..) } else { alphabet[rng.usize(..alphabet.len())] })
        .collect()
}

fn field(rng: &mut fastrand::Rng) -> Owned {
    const TOKEN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789-";
    const TEXT: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.,;:/=?&%\"'()";
    let from_static = STATIC[rng.usize(..STATIC.len())];
    let name = match rng.u8(0..10) {
        0..=3 => from_static.0.to_vec(),
        4..=6 => NAMES[rng.usize(..NAMES.len())].as_bytes().to_vec(),
        7 | 8 => bytes(rng, 1..24, TOKEN),
        _ => bytes(rng, 0..12, &[]),
    };
    let value = match rng.u8(0..12) {
        0..=2 => from_static.1.to_vec(),
        3..=5 => VALUES[rng.usize(..VALUES.len())].as_bytes().to_vec(),
        6..=8 => bytes(rng, 0..48, TEXT),
        9 | 10 => bytes(rng, 0..48, &[]),
        _ => bytes(rng, 100..700, TEXT),
    };
    (name, value, rng.u8(0..8) == 0)
}

/// Names and values, without the never-indexed mark loona-hpack does not report.
type Plain = Vec<(Vec<u8>, Vec<u8>)>;

/// Decodes with loona-hpack: the fields, or its error as text.
fn loona(d: &mut loona_hpack::Decoder, block: &[u8]) -> Result<Plain, String> {
    d.decode(block).map_err(|e| format!("{e:?}"))
}

#[test]
fn random_lists_round_trip_through_both_decoders() {
    let mut rng = fastrand::Rng::with_seed(0x6870_6163);
    let (mut blocks, mut fields, mut octets, mut plain) = (0usize, 0usize, 0usize, 0usize);
    for connection in 0..300 {
        let mut encoder = Encoder::new();
        let mut ours = Decoder::new(usize::MAX);
        let mut theirs = loona_hpack::Decoder::new();
        for block_no in 0..rng.usize(1..16) {
            if rng.u8(0..6) == 0 {
                // This side advertises a new table size, and the peer has acknowledged it.
                let size = [0, 64, 256, 1024, 4096, 8192][rng.usize(..6)];
                ours.set_max_table_size(size);
                encoder.set_max_table_size(size);
                theirs.set_max_allowed_table_size(size);
            }
            let list: Vec<Owned> = (0..rng.usize(1..12)).map(|_| field(&mut rng)).collect();
            let block = encode(&mut encoder, &list);
            let at = || format!("connection {connection} block {block_no}: {list:?}");
            let decoded = decode(&mut ours, &block).unwrap_or_else(|e| panic!("{}: {e:?}", at()));
            assert_eq!(decoded.len(), list.len(), "{}", at());
            for (got, sent) in decoded.iter().zip(&list) {
                assert_eq!((&got.0, &got.1), (&sent.0, &sent.1), "{}", at());
                // A mark is kept; the encoder may add it (credentials), never drop it.
                assert!(got.2 || !sent.2, "{}", at());
            }
            let expected: Plain = list.iter().map(|(n, v, _)| (n.clone(), v.clone())).collect();
            assert_eq!(loona(&mut theirs, &block), Ok(expected), "{}", at());
            assert_eq!(entries(encoder.table()), entries(ours.table()), "{}", at());
            blocks += 1;
            fields += list.len();
            octets += block.len();
            plain += list.iter().map(|(n, v, _)| n.len() + v.len() + 4).sum::<usize>();
        }
    }
    println!("{blocks} blocks, {fields} fields: {octets} octets encoded for {plain} as HTTP/1.1 lines");
}

#[test]
fn random_and_damaged_blocks_never_panic() {
    let mut rng = fastrand::Rng::with_seed(0x6465_636f);
    let mut accepted = 0;
    let encoder = Encoder::new();
    for round in 0..20_000 {
        let block = match round % 3 {
            // Uniform bytes: mostly refused early.
            0 => bytes(&mut rng, 0..40, &[]),
            // Bytes biased toward small indices and short literals, which decode further.
            1 => (0..rng.usize(0..40))
                .map(|_| match rng.u8(0..4) {
                    0 => 0x80 | rng.u8(1..0x45),
                    1 => rng.u8(0..0x10),
                    2 => rng.u8(0..8),
                    _ => rng.u8(..),
                })
                .collect(),
            // A valid block, damaged: a bit flipped, cut, or an octet inserted.
            _ => {
                let list: Vec<Owned> = (0..rng.usize(1..6)).map(|_| field(&mut rng)).collect();
                let mut block = encode(&mut encoder.clone(), &list);
                let i = rng.usize(..block.len());
                match rng.u8(0..3) {
                    0 => block[i] ^= 1 << rng.u8(0..8),
                    1 => block.truncate(i),
                    _ => block.insert(i, rng.u8(..)),
                }
                block
            }
        };
        // A small table and a small list limit, a table with entries in it, and loona.
        let mut small = Decoder::new(512);
        small.set_max_table_size(256);
        let _ = small.decode(&[0x3f, 0xe1, 0x01], |_| {});
        let ours = decode(&mut small, &block);
        let mut theirs = loona_hpack::Decoder::new();
        theirs.set_max_allowed_table_size(256);
        let _ = theirs.decode(&[0x3f, 0xe1, 0x01, 0x82]);
        if let Ok(fields) = ours {
            accepted += 1;
            assert!(fields.iter().map(|(n, v, _)| n.len() + v.len() + 32).sum::<usize>() <= 512);
            let expected: Plain = fields.into_iter().map(|(n, v, _)| (n, v)).collect();
            let theirs = loona(&mut theirs, &block);
            // loona-hpack refuses a block that ends with a size update; nothing else differs.
            if theirs != Err("SizeUpdateAtEnd".into()) {
                assert_eq!(theirs, Ok(expected), "{block:02x?}");
            }
        }
    }
    println!("{accepted} of 20000 random or damaged blocks decoded");
}
