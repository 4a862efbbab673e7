//! The two tables that indices address (RFC 7541 §2.3): the static table of Appendix A at
//! 1 to 61, and the dynamic table from 62 on, newest entry first.
//!
//! The dynamic table's size is counted as §4.1 says: each entry is its name's and value's
//! octets plus 32. Adding an entry first evicts the oldest ones until it fits (§4.4); an
//! entry larger than the whole table empties it and is not added, which is not an error.
//! Lowering the maximum size evicts too (§4.3). Encoder and decoder each keep one, and
//! stay in step because both apply the same representations in the same order.

use std::collections::VecDeque;

/// The static table (Appendix A): `STATIC[i - 1]` is index `i`.
#[rustfmt::skip]
pub(crate) const STATIC: [Pair<'static>; 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What §4.1 adds to an entry's name and value: "an estimated overhead associated with an
/// entry (for example, an entry structure using two 64-bit pointers and two 64-bit
/// integers)".
pub(crate) const ENTRY_OVERHEAD: usize = 32;

/// The size §4.1 counts for a field, in the dynamic table and in a header list.
pub(crate) fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len().saturating_add(value.len()).saturating_add(ENTRY_OVERHEAD)
}

/// A field as the tables hold it: name and value.
pub(crate) type Pair<'a> = (&'a [u8], &'a [u8]);

/// A dynamic table entry: its name and value in one allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    bytes: Box<[u8]>,
    /// INVARIANT: `name_len <= bytes.len()`.
    name_len: usize,
}

impl Entry {
    /// Copies `name` and `value`, so an entry can be made from a field that borrows the
    /// table it is about to go into (its name may be an entry this insertion evicts, §4.4).
    pub(crate) fn new(name: &[u8], value: &[u8]) -> Entry {
        let mut bytes = Vec::with_capacity(name.len() + value.len());
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        Entry { bytes: bytes.into_boxed_slice(), name_len: name.len() }
    }

    pub(crate) fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    pub(crate) fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    pub(crate) fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// Where a field is found in the tables, by index in the combined space (§2.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Found {
    /// An entry with this name and value.
    pub(crate) field: Option<usize>,
    /// An entry with this name.
    pub(crate) name: Option<usize>,
}

/// The dynamic table, and through [`DynamicTable::get`] the static one before it.
#[derive(Debug, Clone)]
pub(crate) struct DynamicTable {
    /// Newest first: `entries[0]` is index 62.
    entries: VecDeque<Entry>,
    /// INVARIANT: `size` is the sum of the entries' [`Entry::size`], and `size <= max_size`.
    size: usize,
    /// The maximum size, as the last size update (or the protocol's initial value) set it.
    max_size: usize,
}

/// The positions in [`STATIC`] (0-based) of the entries named `name`: one run, since the
/// static table keeps a name's entries together.
fn static_names(name: &[u8]) -> Option<std::ops::Range<usize>> {
    static INDEX: std::sync::LazyLock<std::collections::HashMap<&'static [u8], std::ops::Range<usize>>> =
        std::sync::LazyLock::new(|| {
            let mut index = std::collections::HashMap::new();
            for (i, (n, _)) in STATIC.iter().enumerate() {
                index.entry(*n).and_modify(|r: &mut std::ops::Range<usize>| r.end = i + 1).or_insert(i..i + 1);
            }
            index
        });
    INDEX.get(name).cloned()
}

impl DynamicTable {
    pub(crate) fn new(max_size: usize) -> DynamicTable {
        DynamicTable { entries: VecDeque::new(), size: 0, max_size }
    }

    #[cfg(test)]
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    pub(crate) fn max_size(&self) -> usize {
        self.max_size
    }

    /// The entries, newest first (index 62 first).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> impl Iterator<Item = Pair<'_>> {
        self.entries.iter().map(|e| (e.name(), e.value()))
    }

    /// The field at `index` in the combined space: 1 to 61 static, then dynamic. None for 0
    /// or past the end.
    pub(crate) fn get(&self, index: usize) -> Option<Pair<'_>> {
        match index {
            0 => None,
            1..=61 => Some(STATIC[index - 1]),
            _ => self.entries.get(index - 62).map(|e| (e.name(), e.value())),
        }
    }

    /// The lowest indices holding `name` and `value`, and `name` alone: the static table
    /// before the dynamic one, so a name match prefers the entry that cannot be evicted.
    ///
    /// The static table is searched through [`static_names`] (its entries with `name`, which
    /// sit side by side), not entry by entry: an encoder looks up every field it sends.
    pub(crate) fn find(&self, name: &[u8], value: &[u8]) -> Found {
        let mut found = Found::default();
        if let Some(range) = static_names(name) {
            found.name = Some(range.start + 1);
            if let Some(i) = range.clone().find(|&i| STATIC[i].1 == value) {
                found.field = Some(i + 1);
                return found;
            }
        }
        for (i, e) in self.entries.iter().enumerate() {
            if e.name() == name {
                found.name.get_or_insert(i + 62);
                if e.value() == value {
                    found.field = Some(i + 62);
                    break;
                }
            }
        }
        found
    }

    /// Adds an entry at index 62, evicting from the oldest end until it fits (§4.4).
    pub(crate) fn insert(&mut self, entry: Entry) {
        let size = entry.size();
        if size > self.max_size {
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max_size - size);
        self.size += size;
        self.entries.push_front(entry);
    }

    /// Sets the maximum size (a size update, §4.3), evicting what no longer fits.
    pub(crate) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    fn evict_to(&mut self, size: usize) {
        while self.size > size {
            let Some(oldest) = self.entries.pop_back() else { break };
            self.size -= oldest.size();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(t: &DynamicTable) -> Vec<(String, String)> {
        t.entries().map(|(n, v)| (String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into())).collect()
    }

    #[test]
    fn static_table_spot_checks() {
        let t = DynamicTable::new(4096);
        let cases: [(usize, Option<Pair>); 7] = [
            (0, None),
            (1, Some((b":authority", b""))),
            (2, Some((b":method", b"GET"))),
            (8, Some((b":status", b"200"))),
            (16, Some((b"accept-encoding", b"gzip, deflate"))),
            (61, Some((b"www-authenticate", b""))),
            (62, None),
        ];
        for (index, want) in cases {
            assert_eq!(t.get(index), want, "{index}");
        }
    }

    #[test]
    fn size_accounting_eviction_and_updates() {
        // Entries of 40 octets each (4 + 4 + 32) in a table of 100: two fit.
        let mut t = DynamicTable::new(100);
        t.insert(Entry::new(b"aaaa", b"1111"));
        t.insert(Entry::new(b"bbbb", b"2222"));
        assert_eq!((t.size(), table(&t).len()), (80, 2));
        assert_eq!(t.get(62), Some((&b"bbbb"[..], &b"2222"[..])));
        t.insert(Entry::new(b"cccc", b"3333"));
        assert_eq!(table(&t), [("cccc".into(), "3333".into()), ("bbbb".into(), "2222".into())]);
        assert_eq!(t.size(), 80);
        // Exactly the table's size fits, evicting everything else.
        t.insert(Entry::new(&[b'x'; 60], b"8"));
        assert_eq!((t.size(), table(&t).len()), (93, 1));
        // One octet more than the table empties it and is not added.
        t.insert(Entry::new(&[b'x'; 60], b"123456789"));
        assert_eq!((t.size(), table(&t).len()), (0, 0));
        // Lowering the maximum evicts; zero empties the table; raising it evicts nothing.
        t.set_max_size(4096);
        for i in 0..10u8 {
            t.insert(Entry::new(b"name", &[b'0' + i]));
        }
        assert_eq!(t.size(), 370);
        t.set_max_size(100);
        assert_eq!((t.size(), t.get(62).unwrap().1, t.get(63).unwrap().1), (74, &b"9"[..], &b"8"[..]));
        t.set_max_size(0);
        assert_eq!((t.size(), t.get(62)), (0, None));
    }

    #[test]
    fn an_entry_may_name_the_entry_its_insertion_evicts() {
        // §4.4: the new entry's name is the (only) entry, which must be evicted for it.
        let mut t = DynamicTable::new(70);
        t.insert(Entry::new(b"custom-name", b"a"));
        let (name, _) = t.get(62).unwrap();
        let entry = Entry::new(name, b"a longer value");
        t.insert(entry);
        assert_eq!(table(&t), [("custom-name".into(), "a longer value".into())]);
    }

    #[test]
    fn a_static_name_s_entries_sit_together() {
        for (i, (name, _)) in STATIC.iter().enumerate() {
            let range = static_names(name).unwrap();
            assert!(range.contains(&i), "{:?}", String::from_utf8_lossy(name));
            assert!(STATIC[range.clone()].iter().all(|(n, _)| n == name));
            let elsewhere = STATIC.iter().enumerate().filter(|(j, (n, _))| n == name && !range.contains(j)).count();
            assert_eq!(elsewhere, 0, "{:?}", String::from_utf8_lossy(name));
        }
        assert_eq!(static_names(b"x-unknown"), None);
    }

    #[test]
    fn find_prefers_static_and_the_newest() {
        let mut t = DynamicTable::new(4096);
        t.insert(Entry::new(b":status", b"302"));
        t.insert(Entry::new(b"x-a", b"1"));
        t.insert(Entry::new(b"x-a", b"2"));
        let cases: [(&[u8], &[u8], Found); 6] = [
            (b":method", b"GET", Found { field: Some(2), name: Some(2) }),
            (b":status", b"404", Found { field: Some(13), name: Some(8) }),
            (b":status", b"302", Found { field: Some(64), name: Some(8) }),
            (b":status", b"307", Found { field: None, name: Some(8) }),
            (b"x-a", b"1", Found { field: Some(63), name: Some(62) }),
            (b"x-b", b"1", Found { field: None, name: None }),
        ];
        for (name, value, want) in cases {
            assert_eq!(t.find(name, value), want, "{name:?} {value:?}");
        }
    }
}
