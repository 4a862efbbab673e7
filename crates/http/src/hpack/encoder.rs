//! The encoder: a list of fields into one header block (RFC 7541 §6), by a simple policy.

use super::huffman;
use super::integer;
use super::table::{entry_size, DynamicTable, Entry};
use super::{Field, FieldList, INITIAL_TABLE_SIZE};

/// The most table the encoder keeps, whatever larger size the peer allows: 4096 octets,
/// the protocol's initial size, enough for a response's repeating fields.
pub(crate) const ENCODER_TABLE_LIMIT: usize = 4096;

/// Fields written as "never indexed" (§6.2.3, §7.1.3) whatever the caller says: they carry
/// credentials, which must not sit in a table where a guess could be confirmed by the
/// compressed length (CRIME). A caller marks any other field with
/// [`Field::never_indexed`].
const SENSITIVE: [&str; 4] = ["authorization", "proxy-authorization", "cookie", "set-cookie"];

/// Fields whose values rarely repeat on a connection: written with an indexed name but not
/// added to the table, so they do not evict fields that do repeat. A response's
/// `content-length`, `etag` and `last-modified` are not among them: they repeat whenever a
/// connection asks for the same file again (a page's assets on every reload, a benchmark's
/// one file), and then cost one octet each instead of about fifty for the three.
const VARYING: [&str; 5] = [":path", "content-range", "age", "if-none-match", "if-modified-since"];

/// How a literal field is written (§6.2): the pattern of its first octet, its index prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Literal {
    /// 01xxxxxx: added to the table.
    Indexed,
    /// 0000xxxx: not added.
    WithoutIndexing,
    /// 0001xxxx: not added, here or by any intermediary.
    NeverIndexed,
}

/// Encodes header lists into header blocks, keeping the dynamic table between them.
///
/// The policy, per field:
/// 1. A field with the never-indexed mark, or named in `SENSITIVE` (`authorization`,
///    `proxy-authorization`, `cookie`, `set-cookie`), is a never-indexed literal (its name
///    indexed when a table has it). Nothing else about it is looked up.
/// 2. A field in the static or dynamic table (name and value) is an index.
/// 3. Otherwise a literal, its name indexed when a table has it (the static table first),
///    added to the table unless its name is in `VARYING` (`:path`, `content-range`,
///    `if-none-match`, ...: values that rarely repeat) or it would take more than half the
///    table (it would evict most of what repeats).
///
/// Each string is Huffman-coded unless that is longer. The table is at most 4096 octets, or
/// less if the peer allows less; a change is announced at the start of the next block.
/// Field names must already be lower case (RFC 9113 §8.2.1); the encoder does not check.
#[derive(Debug, Clone)]
pub struct Encoder {
    table: DynamicTable,
    /// The table size the next block announces: the peer's SETTINGS_HEADER_TABLE_SIZE,
    /// capped at [`ENCODER_TABLE_LIMIT`].
    target: usize,
    /// The smallest size the peer set since the last block, if it set any (§4.2).
    smallest: Option<usize>,
    /// Add every field but the ones the caller marks never indexed (`SENSITIVE` and
    /// `VARYING` included): the choice RFC 7541's examples make.
    index_all: bool,
    /// Huffman-code the strings that get shorter (else none).
    huffman: bool,
    /// Counts every change of the table (an insertion, a new maximum size): a block
    /// encoded against one count encodes the same fields again only while it holds.
    generation: u64,
    /// The last field list and its block, kept so the same list is not encoded again.
    replay: Replay,
    /// How many blocks were the last block again.
    #[cfg(test)]
    replayed: usize,
}

/// The last field list encoded, and its block (without any size update), which the next
/// block repeats octet for octet when it has the same fields and the table has not
/// changed since: the encoding is a function of the fields and the table, and a block that
/// added nothing to the table left it as it found it. A connection answering the same file
/// again sends the same head but for its `date`, which changes once a second; so most heads
/// cost one comparison instead of a table search per field.
#[derive(Debug, Clone, Default)]
struct Replay {
    fields: FieldList,
    block: Vec<u8>,
    /// The table's generation `block` was encoded against; `None` when that block changed
    /// the table (encoded again, it would not say the same).
    generation: Option<u64>,
}

impl Default for Encoder {
    fn default() -> Self {
        Encoder::new()
    }
}

impl Encoder {
    /// An encoder with the protocol's initial table size (4096).
    pub fn new() -> Encoder {
        Encoder {
            table: DynamicTable::new(INITIAL_TABLE_SIZE),
            target: INITIAL_TABLE_SIZE.min(ENCODER_TABLE_LIMIT),
            smallest: None,
            index_all: false,
            huffman: true,
            generation: 0,
            replay: Replay::default(),
            #[cfg(test)]
            replayed: 0,
        }
    }

    /// The encoder RFC 7541's Appendix C examples use: every field indexed, Huffman on or
    /// off, a table that starts at `table_size` (no size update needed).
    #[cfg(test)]
    pub(crate) fn rfc_examples(huffman: bool, table_size: usize) -> Encoder {
        let table = DynamicTable::new(table_size);
        Encoder { table, target: table_size, index_all: true, huffman, ..Encoder::new() }
    }

    /// Takes the peer's SETTINGS_HEADER_TABLE_SIZE. The next block starts with the size
    /// update(s) §4.2 asks for: the smallest size set since the last block, if below both
    /// the table's and the final size, then the final size, if it differs.
    pub fn set_max_table_size(&mut self, peer_size: usize) {
        let size = peer_size.min(ENCODER_TABLE_LIMIT);
        self.target = size;
        self.smallest = Some(self.smallest.map_or(size, |s| s.min(size)));
    }

    /// Appends the header block of `fields` to `out`: the last block's octets again when
    /// the fields are the last block's and the table has not changed since (see
    /// [`Replay`]), else each field by the policy above.
    pub fn encode<'f>(&mut self, fields: impl IntoIterator<Item = Field<'f>>, out: &mut Vec<u8>) {
        if let Some(smallest) = self.smallest.take() {
            if smallest < self.table.max_size() && smallest < self.target {
                size_update(smallest, out);
                self.table.set_max_size(smallest);
                self.generation += 1;
            }
            if self.target != self.table.max_size() {
                size_update(self.target, out);
                self.table.set_max_size(self.target);
                self.generation += 1;
            }
        }
        let mut replay = std::mem::take(&mut self.replay);
        let (start, before) = (out.len(), self.generation);
        // The fields are compared with the last list's as they come, and encoded from the
        // first that differs (with the equal ones before it): `matched` of them so far.
        let mut matched = 0;
        let mut same = replay.generation == Some(before);
        if !same {
            replay.fields.clear();
        }
        for field in fields {
            if same {
                if replay.fields.get(matched) == Some(field) {
                    matched += 1;
                    continue;
                }
                same = false;
                self.diverge(&mut replay.fields, matched, out);
            }
            replay.fields.push(field);
            self.field(field, out);
        }
        if same && matched == replay.fields.len() {
            out.extend_from_slice(&replay.block);
            self.replay = replay;
            #[cfg(test)]
            {
                self.replayed += 1;
            }
            return;
        }
        if same {
            self.diverge(&mut replay.fields, matched, out);
        }
        replay.generation = (self.generation == before).then_some(before);
        replay.block.clear();
        replay.block.extend_from_slice(&out[start..]);
        if replay.generation.is_some() {
            // Kept for as long as the table holds (on an idle connection, until it
            // closes): at its size, not at what growing it left.
            replay.fields.shrink_to_fit();
            replay.block.shrink_to_fit();
        } else {
            // This block changed the table: it can never be replayed, so it holds nothing.
            replay = Replay::default();
        }
        self.replay = replay;
    }

    /// The list differs from the last one after its first `matched` fields: those are
    /// encoded (they were only compared so far), and the rest of the last list dropped.
    fn diverge(&mut self, last: &mut FieldList, matched: usize, out: &mut Vec<u8>) {
        last.truncate(matched);
        for i in 0..matched {
            if let Some(field) = last.get(i) {
                self.field(field, out);
            }
        }
    }

    fn field(&mut self, field: Field<'_>, out: &mut Vec<u8>) {
        let Field { name, value, .. } = field;
        let sensitive = field.never_indexed
            || (!self.index_all && SENSITIVE.iter().any(|s| name.eq_ignore_ascii_case(s.as_bytes())));
        let found = self.table.find(name, value);
        if let (false, Some(index)) = (sensitive, found.field) {
            integer::encode(index, 7, 0x80, out);
            return;
        }
        let kind = if sensitive {
            Literal::NeverIndexed
        } else if self.index_all
            || (!VARYING.iter().any(|v| name == v.as_bytes()) && entry_size(name, value) <= self.table.max_size() / 2)
        {
            Literal::Indexed
        } else {
            Literal::WithoutIndexing
        };
        literal(kind, found.name, name, value, self.huffman, out);
        if kind == Literal::Indexed {
            self.table.insert(Entry::new(name, value));
            self.generation += 1;
        }
    }

    #[cfg(test)]
    pub(crate) fn table(&self) -> &DynamicTable {
        &self.table
    }
}

/// A dynamic table size update (§6.3).
pub(crate) fn size_update(size: usize, out: &mut Vec<u8>) {
    integer::encode(size, 5, 0x20, out);
}

/// A literal field (§6.2): its name by `name_index` if given, else as a string.
pub(crate) fn literal(
    kind: Literal,
    name_index: Option<usize>,
    name: &[u8],
    value: &[u8],
    huffman: bool,
    out: &mut Vec<u8>,
) {
    let (prefix, flags) = match kind {
        Literal::Indexed => (6, 0x40),
        Literal::WithoutIndexing => (4, 0x00),
        Literal::NeverIndexed => (4, 0x10),
    };
    match name_index {
        Some(index) => integer::encode(index, prefix, flags, out),
        None => {
            out.push(flags);
            string(name, huffman, out);
        }
    }
    string(value, huffman, out);
}

/// A string literal (§5.2), Huffman-coded if `huffman` and that is not longer: a tie goes
/// to Huffman, as in RFC 7541's examples ("307" is 3 octets either way, C.6.2), but for the
/// empty string.
pub(crate) fn string(s: &[u8], huffman: bool, out: &mut Vec<u8>) {
    let coded = if huffman && !s.is_empty() { huffman::encoded_len(s) } else { usize::MAX };
    if coded <= s.len() {
        integer::encode(coded, 7, 0x80, out);
        huffman::encode(s, out);
    } else {
        integer::encode(s.len(), 7, 0x00, out);
        out.extend_from_slice(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpack::Decoder;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Each field alone from a fresh encoder: how its block starts, and whether the table
    /// keeps it. The block decodes back to the field.
    #[test]
    fn the_indexing_policy() {
        let big = [b'v'; 2100];
        let high = [0xffu8; 4];
        let cases: [(Field, &str, bool); 16] = [
            (Field::new(b":status", b"200"), "88", false),
            (Field::new(b":method", b"GET"), "82", false),
            // A static name, a new value: literal with incremental indexing, name 54.
            (Field::new(b"server", b"spidey"), "76", true),
            (Field::new(b"x-new", b"1"), "40", true),
            // Credentials: never indexed, name 55, 23, 32, or literal (upper case is not in
            // the static table, but is a credential all the same); the caller's mark too.
            (Field::new(b"set-cookie", b"a=b"), "1f28", false),
            (Field::new(b"authorization", b"x"), "1f08", false),
            (Field::new(b"cookie", b"x"), "1f11", false),
            (Field::new(b"Cookie", b"x"), "10", false),
            (Field::sensitive(b"x-token", b"x"), "10", false),
            (Field::sensitive(b":method", b"GET"), "12", false),
            // Values that rarely repeat: an indexed name, not added.
            (Field::new(b":path", b"/a"), "04", false),
            (Field::new(b"content-range", b"bytes 0-1/2"), "0f0f", false),
            // A response's length repeats with its file: added.
            (Field::new(b"content-length", b"123"), "5c", true),
            // More than half the table (2100 + 5 + 32 > 2048): not added.
            (Field::new(b"x-big", &big), "00", false),
            // Huffman unless longer: a tie ("307") is Huffman, high octets are not.
            (Field::new(b":status", b"307"), "4883 640eff", true),
            (Field::new(b"x-h", &high), "40 83f2b4ff 04ffffffff", true),
        ];
        for (field, start, kept) in cases {
            let mut e = Encoder::new();
            let mut block = Vec::new();
            e.encode([field], &mut block);
            assert!(block.starts_with(&hex(start)), "{field:?}: {block:02x?}");
            assert_eq!(e.table().get(62).is_some(), kept, "{field:?}");
            let mut back = Vec::new();
            Decoder::new(1 << 20).decode(&block, |f| back.push((f.name.to_vec(), f.value.to_vec()))).unwrap();
            assert_eq!(back, [(field.name.to_vec(), field.value.to_vec())], "{field:?}");
        }
        // A field the table kept is an index the next time.
        let mut e = Encoder::new();
        let mut block = Vec::new();
        e.encode([Field::new(b"server", b"spidey")], &mut block);
        block.clear();
        e.encode([Field::new(b"server", b"spidey")], &mut block);
        assert_eq!(block, [0xbe]);
    }

    /// A sequence of heads on one connection: which blocks are the last block again (the
    /// same fields, nothing added to the table since), and that every block, replayed or
    /// not, decodes to its fields in order.
    #[test]
    fn the_last_block_is_replayed_while_the_table_holds() {
        let head = |date: &'static [u8], extra: &[Field<'static>]| {
            let mut list = vec![
                Field::new(b":status", b"200"),
                Field::new(b"server", b"spidey"),
                Field::new(b"date", date),
                Field::new(b"content-length", b"1024"),
            ];
            list.extend_from_slice(extra);
            list
        };
        let (d1, d2): (&[u8], &[u8]) = (b"Sun, 29 Nov 2026 05:00:00 GMT", b"Sun, 29 Nov 2026 05:00:01 GMT");
        let etag = Field::new(b"etag", b"\"x\"");
        // (table size settings before the block, fields, replayed)
        let steps: Vec<(&[usize], Vec<Field>, bool)> = vec![
            (&[], head(d1, &[]), false), // adds server, date, content-length
            (&[], head(d1, &[]), false), // indices only: kept for replay
            (&[], head(d1, &[]), true),
            (&[], head(d1, &[]), true),
            (&[], head(d2, &[]), false), // a new date: added
            (&[], head(d2, &[]), false),
            (&[], head(d2, &[]), true),
            (&[], head(d1, &[]), false), // the older date, still in the table
            (&[], head(d1, &[]), true),
            (&[], head(d1, &[etag]), false), // one field more: etag added
            (&[], head(d1, &[etag]), false),
            (&[], head(d1, &[]), false), // one field fewer
            (&[], head(d1, &[]), true),
            (&[], head(d1, &[Field::sensitive(b"etag", b"\"x\"")]), false), // the mark differs
            (&[], head(d1, &[]), false),
            (&[4096], head(d1, &[]), true), // the same size: no update, nothing changed
            (&[0, 4096], head(d1, &[]), false), // the table emptied: the block says so
            (&[], head(d1, &[]), false),
            (&[], head(d1, &[]), true),
            (&[], vec![], false), // an empty list
            (&[], vec![], true),
            (&[], head(d1, &[])[..2].to_vec(), false),
            (&[], head(d1, &[])[..2].to_vec(), true),
        ];
        let (mut e, mut d) = (Encoder::new(), Decoder::new(1 << 20));
        let owned = |f: Field| (f.name.to_vec(), f.value.to_vec());
        for (i, (sizes, fields, replayed)) in steps.into_iter().enumerate() {
            for &size in sizes {
                e.set_max_table_size(size);
            }
            let before = e.replayed;
            let mut block = Vec::new();
            e.encode(fields.iter().copied(), &mut block);
            assert_eq!(e.replayed - before == 1, replayed, "step {i}: {block:02x?}");
            let mut back = Vec::new();
            d.decode(&block, |f| back.push(owned(f))).unwrap();
            assert_eq!(back, fields.into_iter().map(owned).collect::<Vec<_>>(), "step {i}");
        }
    }

    /// The peer's table sizes set between two blocks, and the size updates the next block
    /// starts with (§4.2); the block after that starts with none.
    #[test]
    fn size_updates_follow_the_peers_setting() {
        let cases: [(&[usize], &str); 9] = [
            (&[], ""),
            (&[4096], ""),
            (&[65536], ""),
            (&[0], "20"),
            (&[0, 4096], "20 3fe11f"),
            (&[2048], "3fe10f"),
            (&[100, 4096], "3f45 3fe11f"),
            (&[2048, 1024, 3000], "3fe107 3f9917"),
            (&[1024, 4096, 65536], "3fe107 3fe11f"),
        ];
        for (sizes, want) in cases {
            let mut e = Encoder::new();
            for &size in sizes {
                e.set_max_table_size(size);
            }
            let mut block = Vec::new();
            e.encode([], &mut block);
            assert_eq!(block, hex(want), "{sizes:?}");
            block.clear();
            e.encode([], &mut block);
            assert_eq!(block, [], "{sizes:?} twice");
        }
    }
}
