//! A request's header fields as the content side sees them, whichever protocol carried
//! them: HTTP/1.1's parser leaves them in its header slots, HTTP/2's HPACK decoder in a
//! list of its own. [`Fields`] hides which, so nothing above the protocol names a parser.

/// One header field: its name as sent (HTTP/1.1 keeps the client's case; HTTP/2 sends
/// lowercase) and its value's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'b> {
    pub name: &'b str,
    pub value: &'b [u8],
}

/// A request's header fields, in the order they came.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'h, 'b>(Store<'h, 'b>);

#[derive(Debug, Clone, Copy)]
enum Store<'h, 'b> {
    /// HTTP/1.1: the slots httparse filled.
    Slots(&'h [httparse::Header<'b>]),
    /// A list built by its protocol (HTTP/2's decoded header block, a test's table).
    Listed(&'h [Field<'b>]),
}

impl<'h, 'b> Fields<'h, 'b> {
    pub(crate) fn slots(slots: &'h [httparse::Header<'b>]) -> Self {
        Fields(Store::Slots(slots))
    }

    /// Fields from a list that a protocol decoded on its own.
    pub fn listed(list: &'h [Field<'b>]) -> Self {
        Fields(Store::Listed(list))
    }

    /// The value of the first field named `name` (ASCII case-insensitive).
    pub fn get(&self, name: &str) -> Option<&'b [u8]> {
        self.iter().find(|f| f.name.eq_ignore_ascii_case(name)).map(|f| f.value)
    }

    /// Every field, in the order sent.
    pub fn iter(&self) -> impl Iterator<Item = Field<'b>> + 'h {
        let (slots, listed) = match self.0 {
            Store::Slots(s) => (s, &[][..]),
            Store::Listed(l) => (&[][..], l),
        };
        let from_slots = slots.iter().map(|h| Field { name: h.name, value: h.value });
        from_slots.chain(listed.iter().copied())
    }

    pub fn len(&self) -> usize {
        match self.0 {
            Store::Slots(s) => s.len(),
            Store::Listed(l) => l.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_stores_read_alike() {
        let slots = [
            httparse::Header { name: "Host", value: b"example.com" },
            httparse::Header { name: "X-Twice", value: b"1" },
            httparse::Header { name: "x-twice", value: b"2" },
        ];
        let list = [
            Field { name: "host", value: b"example.com" },
            Field { name: "x-twice", value: b"1" },
            Field { name: "x-twice", value: b"2" },
        ];
        for fields in [Fields::slots(&slots), Fields::listed(&list)] {
            assert_eq!(fields.len(), 3);
            assert_eq!(fields.get("HOST"), Some(&b"example.com"[..]));
            assert_eq!(fields.get("x-twice"), Some(&b"1"[..]), "the first of a repeated field");
            assert_eq!(fields.get("absent"), None);
            let values: Vec<&[u8]> = fields.iter().map(|f| f.value).collect();
            assert_eq!(values, [&b"example.com"[..], b"1", b"2"]);
        }
        assert!(Fields::listed(&[]).is_empty());
    }
}
