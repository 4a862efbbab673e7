//! The CGI output (header block) parser: never panics; a parsed head lies within the input
//! and the limits, carries a valid status, and holds no byte that could forge the server's
//! own head (CR, LF, NUL) nor a field that frames the message; the same head is parsed from
//! exactly its own bytes (so how the script's writes are split cannot change it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_http::cgi::{parse_cgi_head, MAX_CGI_FIELDS, MAX_CGI_HEAD};
use spidey_http::Parsed;

fn clean(s: &str) -> bool {
    !s.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
}

fuzz_target!(|data: &[u8]| {
    let Ok(Parsed::Complete(head, n)) = parse_cgi_head(data) else { return };
    assert!(n <= data.len() && n <= MAX_CGI_HEAD, "head length {n}");
    assert!(head.status.is_none_or(|s| (100..=599).contains(&s)), "{:?}", head.status);
    assert!(head.fields.len() <= MAX_CGI_FIELDS);
    assert!(head.content_type.as_deref().is_none_or(clean) && head.location.as_deref().is_none_or(clean));
    for (name, value) in &head.fields {
        assert!(clean(name) && clean(value) && !name.is_empty(), "{name:?}: {value:?}");
        let lower = name.to_ascii_lowercase();
        assert!(!["content-length", "transfer-encoding", "connection"].contains(&lower.as_str()), "{name}");
    }
    match parse_cgi_head(&data[..n]) {
        Ok(Parsed::Complete(again, m)) => assert_eq!((again, m), (head, n)),
        other => panic!("its own bytes parse differently: {other:?}"),
    }
});
