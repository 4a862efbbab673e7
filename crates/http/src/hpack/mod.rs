//! HPACK, the header compression of HTTP/2 (RFC 7541): a sans-IO encoder and decoder.
//!
//! What it does:
//! - [`Decoder`] decodes one whole header block at a time into a callback, one [`Field`]
//!   each, borrowed from the block, the table or a reused scratch buffer. It keeps the
//!   dynamic table between blocks, and refuses what a cheap block could use to make it
//!   work or hold without bound: a table size update above the size this side advertised
//!   or anywhere but the start of a block, a header list over the caller's limit (counted
//!   as SETTINGS_MAX_HEADER_LIST_SIZE counts, checked field by field, so repeated indexed
//!   references to a large entry stop there too), an integer over 2^32 - 1 or longer than
//!   6 octets, an index of 0 or past the tables, a truncated block, and Huffman strings with
//!   EOS or bad padding (§5.2). Each refusal is a [`DecodeError`]; all of them are HTTP/2's
//!   COMPRESSION_ERROR, a connection error. It never panics on any input.
//! - [`Encoder`] encodes a list of fields into a caller's `Vec<u8>`: exact matches as
//!   indices, otherwise literals with an indexed name where the tables have it, Huffman
//!   strings unless longer, incremental indexing by a simple policy (see [`Encoder`]:
//!   credentials and fields the caller marks are never indexed, values that rarely repeat
//!   are not added), and the size updates a change of the peer's table size requires.
//! - A field's "never indexed" mark (§6.2.3) survives both ways: the decoder reports it in
//!   [`Field::never_indexed`] and the encoder keeps it, so a proxy can pass it on.
//!
//! What it does not do: the reassembly of a block from HEADERS and CONTINUATION frames and
//! the acknowledgement of SETTINGS, which are [`crate::h2::Conn`]'s: it hands in whole
//! blocks, bounds how large a block it buffers (the decoder's scratch buffers grow to at
//! most 8/5 of a block), and passes the table sizes once settled. Nor does it check what the fields say
//! (lower-case names, pseudo-header order, connection-specific fields: RFC 9113 §8.2), and
//! the decoder does not decode a block incrementally, as it arrives.
//!
//! The parts, by concept: `integer` (§5.1), `huffman` (§5.2 and Appendix B), `table` (the
//! static table of Appendix A and the dynamic table, §2.3 and §4), `decoder`, `encoder`,
//! and `list` (a header list laid flat, as the encoder and HTTP/2's connection keep one).

mod decoder;
mod encoder;
mod huffman;
mod integer;
mod list;
mod table;

#[cfg(test)]
mod tests;

pub use decoder::Decoder;
pub use encoder::Encoder;
pub(crate) use list::{FieldList, Span};

use std::fmt;

/// The dynamic table size both sides start from (SETTINGS_HEADER_TABLE_SIZE's initial
/// value, RFC 9113 §6.5.2).
pub(crate) const INITIAL_TABLE_SIZE: usize = 4096;

/// A header field as the decoder reports it and the encoder takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
    /// Sent, or to be sent, as "never indexed" (§6.2.3): no table on the way may keep it.
    pub never_indexed: bool,
}

impl<'a> Field<'a> {
    pub fn new(name: &'a [u8], value: &'a [u8]) -> Field<'a> {
        Field { name, value, never_indexed: false }
    }

    /// A field that must never be indexed: a credential, or a value an attacker could
    /// otherwise guess by its compressed length.
    pub fn sensitive(name: &'a [u8], value: &'a [u8]) -> Field<'a> {
        Field { name, value, never_indexed: true }
    }
}

/// Why a header block was refused. Every one is a COMPRESSION_ERROR in HTTP/2 (RFC 9113
/// §4.3), ending the connection: the tables of the two sides no longer agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The block ends inside a representation.
    Truncated,
    /// An integer above 2^32 - 1, or with more than 5 octets after its prefix (§5.1).
    IntegerOverflow,
    /// Index 0, or past the end of the dynamic table (§2.3.3).
    InvalidIndex,
    /// A Huffman string holding EOS, or padded with more than 7 bits or not with ones (§5.2).
    InvalidHuffman,
    /// A table size update above the size this side advertised (§6.3).
    TableSizeTooLarge,
    /// A table size update after a field of the block (§4.2).
    TableSizeUpdateMisplaced,
    /// No table size update at the start of the first block after this side lowered its
    /// table size (RFC 9113 §4.3.1).
    TableSizeUpdateMissing,
    /// The decoded header list is larger than the decoder's limit.
    HeaderListTooLarge,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            DecodeError::Truncated => "header block truncated",
            DecodeError::IntegerOverflow => "integer too large",
            DecodeError::InvalidIndex => "invalid table index",
            DecodeError::InvalidHuffman => "invalid Huffman string",
            DecodeError::TableSizeTooLarge => "table size update above the advertised size",
            DecodeError::TableSizeUpdateMisplaced => "table size update after a field",
            DecodeError::TableSizeUpdateMissing => "table size update missing after a reduction",
            DecodeError::HeaderListTooLarge => "header list too large",
        };
        f.write_str(what)
    }
}

impl std::error::Error for DecodeError {}
