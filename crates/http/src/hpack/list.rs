//! A header list laid flat, as the encoder keeps its last one and an HTTP/2 connection
//! decodes a block into one.

use super::Field;

/// A list of header fields laid flat: every name and value back to back in one buffer,
/// and where each ends, so a list costs two allocations however many fields it holds, and
/// an emptied list keeps its memory for the next.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldList {
    octets: Vec<u8>,
    /// Per field: where its name ends, where its value ends, and its never-indexed mark.
    /// INVARIANT: the offsets rise and the last is `octets.len()` (a header list is far
    /// below 4 GiB: the caller bounds it before).
    ends: Vec<(u32, u32, bool)>,
}

/// Where one name or value lies in its buffer ([`FieldList::octets`], an HTTP/2 request
/// head's): `start..end`.
pub(crate) type Span = (u32, u32);

impl FieldList {
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Empties the list, its memory kept.
    pub(crate) fn clear(&mut self) {
        self.truncate(0);
    }

    /// Keeps the first `n` fields.
    pub(crate) fn truncate(&mut self, n: usize) {
        self.ends.truncate(n);
        self.octets.truncate(self.ends.last().map_or(0, |e| e.1 as usize));
    }

    /// Gives back the room the list grew beyond its length.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.octets.shrink_to_fit();
        self.ends.shrink_to_fit();
    }

    /// Appends one field.
    pub(crate) fn push(&mut self, field: Field<'_>) {
        self.octets.extend_from_slice(field.name);
        let name_end = self.octets.len() as u32;
        self.octets.extend_from_slice(field.value);
        self.ends.push((name_end, self.octets.len() as u32, field.never_indexed));
    }

    /// Every name and value, back to back, as [`FieldList::spans`] places them.
    pub(crate) fn octets(&self) -> &[u8] {
        &self.octets
    }

    /// Where each field's name and value lie in [`FieldList::octets`], in order.
    pub(crate) fn spans(&self) -> impl Iterator<Item = (Span, Span)> + '_ {
        self.ends.iter().scan(0, |start, &(name_end, value_end, _)| {
            Some(((std::mem::replace(start, value_end), name_end), (name_end, value_end)))
        })
    }

    /// The field at `i`.
    pub(crate) fn get(&self, i: usize) -> Option<Field<'_>> {
        let &(name_end, value_end, never_indexed) = self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |p| self.ends[p].1 as usize);
        let (name_end, value_end) = (name_end as usize, value_end as usize);
        let (name, value) = (&self.octets[start..name_end], &self.octets[name_end..value_end]);
        Some(Field { name, value, never_indexed })
    }

    /// Every field, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Field<'_>> {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Every field's name and value as owned pairs (trailers, which are rare).
    pub(crate) fn to_pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.iter().map(|f| (f.name.to_vec(), f.value.to_vec())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields pushed come back as they went, by index, in order and as spans; truncating
    /// keeps the first ones.
    #[test]
    fn a_list_gives_back_what_it_was_given() {
        let fields = [
            Field::new(b":status", b"200"),
            Field::new(b"", b""),
            Field::sensitive(b"cookie", b"a=b"),
            Field::new(b"x", b""),
        ];
        let mut list = FieldList::default();
        fields.iter().for_each(|&f| list.push(f));
        assert_eq!(list.len(), 4);
        assert_eq!(list.iter().collect::<Vec<_>>(), fields);
        let at = |(s, e): Span| &list.octets()[s as usize..e as usize];
        let spans: Vec<_> = list.spans().map(|(n, v)| (at(n), at(v))).collect();
        assert_eq!(spans, fields.map(|f| (f.name, f.value)));
        assert_eq!(list.get(4), None);
        list.truncate(2);
        assert_eq!(list.iter().collect::<Vec<_>>(), fields[..2]);
        assert_eq!(list.octets(), b":status200");
        list.clear();
        assert_eq!((list.len(), list.octets()), (0, &b""[..]));
    }
}
