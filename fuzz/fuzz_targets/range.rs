//! The Range parser: a partial answer always lies inside the representation
//! (start <= end < len), so no request gets more bytes than the file holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_http::range::{resolve, RangeOutcome};

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (len, value) = data.split_at(8);
    let len = u64::from_le_bytes(len.try_into().unwrap());
    // Small lengths are the interesting ones; keep the full range reachable too.
    let len = if len & 1 == 0 { len >> 1 } else { (len >> 1) % 1024 };
    if let RangeOutcome::Partial { start, end } = resolve(value, len) {
        assert!(start <= end && end < len, "{start}-{end} of {len} for {:?}", String::from_utf8_lossy(value));
    }
});
