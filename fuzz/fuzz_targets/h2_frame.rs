//! HTTP/2 frames: random octets decoded frame after frame, as a connection reads them, at a
//! SETTINGS_MAX_FRAME_SIZE the first byte picks (the default 16384, a tiny 16 to reach the
//! size refusal often, or the largest, 2^24 - 1). The decoder never panics and never
//! claims more octets than it was given; a stream error is skipped as the connection would
//! skip it, a connection error ends the input. Each frame it accepts, written again by
//! `Frame::encode`, takes as many octets as it came in and decodes to the same frame, and
//! every truncation of it is "not yet", never an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spidey_http::h2::{Frame, FrameError, MAX_MAX_FRAME_SIZE};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, mut buf)) = data.split_first() else { return };
    let max = [16_384, 16, MAX_MAX_FRAME_SIZE][usize::from(pick % 3)];
    loop {
        match Frame::decode(buf, max) {
            Ok(None) => break,
            Ok(Some((frame, used))) => {
                assert!((9..=buf.len()).contains(&used), "{used} octets of {}", buf.len());
                let mut wire = Vec::new();
                frame.encode(&mut wire);
                assert_eq!(wire.len(), used, "{frame:?} written in {} octets, read from {used}", wire.len());
                assert_eq!(Frame::decode(&wire, max), Ok(Some((frame, used))), "{wire:02x?}");
                for cut in 0..wire.len() {
                    assert_eq!(Frame::decode(&wire[..cut], max), Ok(None), "{frame:?} cut at {cut}");
                }
                buf = &buf[used..];
            }
            Err(FrameError::Stream { frame_len, .. }) => {
                assert!((9..=buf.len()).contains(&frame_len), "a stream error of {frame_len} octets");
                buf = &buf[frame_len..];
            }
            Err(FrameError::Connection { .. }) => break,
        }
    }
});
