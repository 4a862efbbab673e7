//! The request head parser: never panics, and a complete head lies within the input and the
//! limits, with a target that is origin-form (`/…`) or `*`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_http::{parse, BodyFraming, HeaderSlots, Limits, Parsed};

fuzz_target!(|data: &[u8]| {
    let limits = Limits { max_request_line: 256, max_head: 1024, max_headers: 16 };
    let mut slots = HeaderSlots::new();
    if let Ok(Parsed::Complete(req, n)) = parse(data, &mut slots, &limits) {
        assert!(n <= data.len() && n <= limits.max_head, "head length {n}");
        assert!(req.fields.len() <= limits.max_headers);
        assert!(req.target.path.starts_with('/') || req.target.path == "*", "{:?}", req.target.path);
        assert!(req.request_line.len() <= limits.max_request_line);
        // A body is never both length-delimited and chunked, and a length-delimited one fits i64.
        if let BodyFraming::Length(len) = req.body {
            assert!(len > 0 && len < 1 << 63);
            assert!(req.header("transfer-encoding").is_none());
        }
    }
});
