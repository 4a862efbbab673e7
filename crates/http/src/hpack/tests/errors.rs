//! Blocks the decoder refuses, as a table: each from a decoder in a stated state, with the
//! fields it hands over before the refusal.

use super::*;
use DecodeError::*;

/// A decoder with the protocol's defaults and a 16 KiB list limit.
fn fresh() -> Decoder {
    Decoder::new(16 * 1024)
}

/// A decoder whose table holds one entry, `x-big` with a 200-octet value (237 octets
/// counted), under a 1000-octet list limit: four references to it fit (948), five do not.
fn big_entry() -> Decoder {
    let mut d = Decoder::new(1000);
    let mut block = vec![0x40, 0x05];
    block.extend_from_slice(b"x-big");
    block.extend_from_slice(&[0x7f, 200 - 127]);
    block.extend_from_slice(&[b'v'; 200]);
    assert_eq!(decode(&mut d, &block).map(|f| f.len()), Ok(1));
    d
}

/// A decoder after C.3.1 (one dynamic entry, index 62).
fn one_entry() -> Decoder {
    let mut d = fresh();
    decode(&mut d, &hex(super::appendix_c::SEQUENCES[0].blocks[0].wire)).unwrap();
    d
}

/// A decoder that advertised 256 octets after the initial 4096.
fn reduced() -> Decoder {
    let mut d = fresh();
    d.set_max_table_size(256);
    d
}

#[test]
fn refused_blocks() {
    let refs = |n: usize| vec![0xbe; n];
    type Case = (&'static str, Decoder, Vec<u8>, Result<usize, DecodeError>);
    let cases: Vec<Case> = vec![
        ("index 0", fresh(), hex("80"), Err(InvalidIndex)),
        ("index 62, the dynamic table empty", fresh(), hex("be"), Err(InvalidIndex)),
        ("index 61, the static table's last", fresh(), hex("bd"), Ok(1)),
        ("index 63 past one entry", one_entry(), hex("bf"), Err(InvalidIndex)),
        ("index 62, the one entry", one_entry(), hex("be"), Ok(1)),
        ("a literal's name index past the table", fresh(), hex("7e 0161"), Err(InvalidIndex)),
        ("a never-indexed literal's name index 70", fresh(), hex("1f37 00"), Err(InvalidIndex)),
        ("an index of 2^32", fresh(), hex("ff81 ffff ff0f"), Err(IntegerOverflow)),
        ("an index with 6 continuation octets", fresh(), hex("ff80 8080 8080 00"), Err(IntegerOverflow)),
        ("a string length of 2^32", fresh(), hex("047f 81ff ffff 0f"), Err(IntegerOverflow)),
        ("a string longer than the block", fresh(), hex("0405 61"), Err(Truncated)),
        ("a string length cut", fresh(), hex("047f"), Err(Truncated)),
        ("a literal without its value", fresh(), hex("0001 61"), Err(Truncated)),
        ("a never-indexed literal without its name", fresh(), hex("10"), Err(Truncated)),
        ("Huffman EOS in a name", fresh(), hex("0084 ffff ffff 00"), Err(InvalidHuffman)),
        ("Huffman EOS after a symbol", fresh(), hex("0485 1fff ffff ff"), Err(InvalidHuffman)),
        ("Huffman padding of 8 ones", fresh(), hex("0481 ff"), Err(InvalidHuffman)),
        ("Huffman padding of 11 ones", fresh(), hex("0482 1fff"), Err(InvalidHuffman)),
        ("Huffman padding of zeros", fresh(), hex("0481 18"), Err(InvalidHuffman)),
        ("Huffman padding ones then a zero", fresh(), hex("0481 1e"), Err(InvalidHuffman)),
        ("Huffman 'a' padded right", fresh(), hex("0481 1f"), Ok(1)),
        ("Huffman, empty", fresh(), hex("0480"), Ok(1)),
        ("a size update to 4096, the advertised size", fresh(), hex("3fe1 1f82"), Ok(1)),
        ("a size update to 4097", fresh(), hex("3fe2 1f82"), Err(TableSizeTooLarge)),
        ("a size update to 2^32", fresh(), hex("3fe1 ffff ff0f"), Err(IntegerOverflow)),
        ("two size updates at the start", fresh(), hex("203f e11f 82"), Ok(1)),
        ("a block of only a size update", fresh(), hex("20"), Ok(0)),
        ("a size update after a field", fresh(), hex("8220"), Err(TableSizeUpdateMisplaced)),
        ("a size update between fields", fresh(), hex("823f e11f 82"), Err(TableSizeUpdateMisplaced)),
        ("no size update after a reduction", reduced(), hex("82"), Err(TableSizeUpdateMissing)),
        ("an empty block after a reduction", reduced(), vec![], Err(TableSizeUpdateMissing)),
        ("a size update above the reduced size", reduced(), hex("3fe2 0182"), Err(TableSizeTooLarge)),
        ("a size update to the reduced size", reduced(), hex("3fe1 0182"), Ok(1)),
        ("a size update to 0 after a reduction", reduced(), hex("2082"), Ok(1)),
        ("four references to a 237-octet entry", big_entry(), refs(4), Ok(4)),
        ("five references to a 237-octet entry", big_entry(), refs(5), Err(HeaderListTooLarge)),
        ("a thousand references to a 237-octet entry", big_entry(), refs(1000), Err(HeaderListTooLarge)),
        ("fields of exactly the limit", Decoder::new(32 + 7 + 3), hex("82"), Ok(1)),
        ("one octet over the limit", Decoder::new(32 + 7 + 3 - 1), hex("82"), Err(HeaderListTooLarge)),
    ];
    for (what, mut d, block, want) in cases {
        let mut handed = 0;
        let got = d.decode(&block, |_| handed += 1).map(|()| handed);
        assert_eq!(got, want, "{what}");
        if want == Err(HeaderListTooLarge) && what.contains("references") {
            // Refused at the limit, not after decoding the rest: four fit.
            assert_eq!(handed, 4, "{what}");
        }
    }
}

#[test]
fn errors_have_messages() {
    let all = [
        Truncated,
        IntegerOverflow,
        InvalidIndex,
        InvalidHuffman,
        TableSizeTooLarge,
        TableSizeUpdateMisplaced,
        TableSizeUpdateMissing,
        HeaderListTooLarge,
    ];
    let messages: std::collections::HashSet<String> = all.iter().map(|e| e.to_string()).collect();
    assert_eq!(messages.len(), all.len());
}
