//! The decoder: one header block at a time into the caller's sink (RFC 7541 §3, §6).

use super::huffman;
use super::integer;
use super::table::{entry_size, DynamicTable, Entry};
use super::{DecodeError, Field, INITIAL_TABLE_SIZE};

/// Decodes header blocks, keeping the dynamic table between them.
///
/// What a cheap block cannot make it do: hold a table larger than the size this side
/// advertised ([`Decoder::set_max_table_size`]), or decode a header list larger than
/// `max_header_list_size` (each field counted as name + value + 32 octets, as
/// SETTINGS_MAX_HEADER_LIST_SIZE counts it), checked before each field reaches the sink, so
/// a short block of indexed references to one large entry stops at the limit. Decoding
/// allocates nothing per field but for the table's own entries and two scratch buffers for
/// Huffman strings, which are reused and never longer than 8/5 of the block.
#[derive(Debug, Clone)]
pub struct Decoder {
    table: DynamicTable,
    /// SETTINGS_HEADER_TABLE_SIZE as this side advertised it: the most a size update may set.
    max_table_size: usize,
    max_list_size: usize,
    /// The advertised size went below the table's: the next block must start with a size
    /// update (RFC 9113 §4.3.1).
    update_required: bool,
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl Decoder {
    /// A decoder with the protocol's initial table size (4096, RFC 9113 §6.5.2) and a limit
    /// on the size of each decoded header list.
    pub fn new(max_header_list_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(INITIAL_TABLE_SIZE),
            max_table_size: INITIAL_TABLE_SIZE,
            max_list_size: max_header_list_size,
            update_required: false,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    /// Takes the SETTINGS_HEADER_TABLE_SIZE this side advertised, once the peer has
    /// acknowledged it. Lowered below the table's current maximum, the peer's next block
    /// must start with a size update to at most this (RFC 9113 §4.3.1); raised, the peer
    /// may grow its table up to it.
    pub fn set_max_table_size(&mut self, size: usize) {
        self.max_table_size = size;
        if size < self.table.max_size() {
            self.update_required = true;
        }
    }

    /// Decodes one whole header block (a HEADERS or PUSH_PROMISE frame's fragment with its
    /// CONTINUATION frames), handing each field to `sink` in order.
    ///
    /// After an error the table may hold part of the block's changes, so it no longer
    /// matches the peer's: the connection must end with COMPRESSION_ERROR, and this decoder
    /// not be used again. Fields already handed to the sink belong to the refused block.
    pub fn decode(&mut self, block: &[u8], mut sink: impl FnMut(Field<'_>)) -> Result<(), DecodeError> {
        let Decoder { table, max_table_size, max_list_size, update_required, name_buf, value_buf } = self;
        let mut rest = block;
        let mut list_size = 0usize;
        let mut at_start = true;
        while let Some(&first) = rest.first() {
            // 001xxxxx: a dynamic table size update (§6.3), only before the first field.
            if first & 0xe0 == 0x20 {
                if !at_start {
                    return Err(DecodeError::TableSizeUpdateMisplaced);
                }
                let (size, n) = integer::decode(rest, 5)?;
                if size > *max_table_size {
                    return Err(DecodeError::TableSizeTooLarge);
                }
                table.set_max_size(size);
                *update_required = false;
                rest = &rest[n..];
                continue;
            }
            if *update_required {
                return Err(DecodeError::TableSizeUpdateMissing);
            }
            at_start = false;
            let (field, indexing, n) = if first & 0x80 != 0 {
                // 1xxxxxxx: an indexed field (§6.1).
                let (index, n) = integer::decode(rest, 7)?;
                let (name, value) = table.get(index).ok_or(DecodeError::InvalidIndex)?;
                (Field { name, value, never_indexed: false }, false, n)
            } else {
                // 01xxxxxx with incremental indexing (§6.2.1), 0001xxxx never indexed
                // (§6.2.3), 0000xxxx without indexing (§6.2.2).
                let (prefix, indexing, never_indexed) = match first {
                    0x40.. => (6, true, false),
                    0x10.. => (4, false, true),
                    _ => (4, false, false),
                };
                let (index, mut n) = integer::decode(rest, prefix)?;
                let name = if index == 0 {
                    let (name, m) = string(&rest[n..], name_buf)?;
                    n += m;
                    name
                } else {
                    table.get(index).ok_or(DecodeError::InvalidIndex)?.0
                };
                let (value, m) = string(&rest[n..], value_buf)?;
                (Field { name, value, never_indexed }, indexing, n + m)
            };
            list_size = list_size.saturating_add(entry_size(field.name, field.value));
            if list_size > *max_list_size {
                return Err(DecodeError::HeaderListTooLarge);
            }
            sink(field);
            if indexing {
                let entry = Entry::new(field.name, field.value);
                table.insert(entry);
            }
            rest = &rest[n..];
        }
        if *update_required {
            return Err(DecodeError::TableSizeUpdateMissing);
        }
        Ok(())
    }

    /// A decoder whose table starts at `size`, as RFC 7541's examples assume (no size
    /// update needed), for the tests.
    #[cfg(test)]
    pub(crate) fn with_table_size(size: usize, max_header_list_size: usize) -> Decoder {
        Decoder { table: DynamicTable::new(size), max_table_size: size, ..Decoder::new(max_header_list_size) }
    }

    #[cfg(test)]
    pub(crate) fn table(&self) -> &DynamicTable {
        &self.table
    }
}

/// A string literal (§5.2) at the start of `input`: its octets, borrowed from `input` or,
/// Huffman-decoded, from `buf`; and the octets it took.
fn string<'a>(input: &'a [u8], buf: &'a mut Vec<u8>) -> Result<(&'a [u8], usize), DecodeError> {
    let &first = input.first().ok_or(DecodeError::Truncated)?;
    let (len, n) = integer::decode(input, 7)?;
    let end = n.checked_add(len).ok_or(DecodeError::Truncated)?;
    let octets = input.get(n..end).ok_or(DecodeError::Truncated)?;
    if first & 0x80 == 0 {
        return Ok((octets, end));
    }
    buf.clear();
    huffman::decode(octets, buf).map_err(|_| DecodeError::InvalidHuffman)?;
    Ok((buf, end))
}
