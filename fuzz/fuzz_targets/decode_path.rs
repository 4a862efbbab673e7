//! Path decoding: whatever the request path, the result never holds a `..` segment or a NUL
//! and never starts with `/`, so it always stays beneath ROOT as a relative path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_server::content::resolve::decode_path;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else { return };
    if let Ok(path) = decode_path(raw) {
        assert!(!path.is_empty());
        assert!(!path.contains(&0), "NUL in {path:?}");
        assert!(!path.starts_with(b"/"), "absolute: {path:?}");
        assert!(path.split(|&b| b == b'/').all(|s| s != b".."), "dot-dot in {path:?}");
    }
});
