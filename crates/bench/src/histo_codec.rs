//! The latency histograms in HdrHistogram's standard interchange form, so runs can be merged
//! exactly and read by HdrHistogram's own tools: the V2 serialization, DEFLATE-compressed
//! (zlib framing, cookie `0x1c849314`), in base64 — the form HdrHistogram's interval logs
//! carry and its `decodeFromCompressedByteBuffer` reads. The `hdrhistogram` crate does the
//! encoding; this file only adds base64 and a typed error.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The name [`Histograms::encoding`] carries, so a reader knows what the strings are.
pub const ENCODING: &str = "HdrHistogram V2 compressed (DEFLATE), base64";

/// A run's latency histograms (microseconds), each encoded with [`encode`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// Always [`ENCODING`].
    pub encoding: String,
    /// The distribution behind `latency`.
    pub latency: String,
    /// Open loop only: behind `latency_uncorrected`.
    #[serde(default)]
    pub latency_uncorrected: Option<String>,
    /// Open loop only: behind `send_lateness`.
    #[serde(default)]
    pub send_lateness: Option<String>,
    /// https only: behind `handshake` (TCP connect to TLS handshake complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake: Option<String>,
}

/// Why a histogram string could not be read.
#[derive(Debug)]
pub enum CodecError {
    /// Not base64.
    Base64(base64::DecodeError),
    /// Base64, but not an HdrHistogram V2 (compressed) serialization.
    Hdr(hdrhistogram::serialization::DeserializeError),
    /// A histogram of another encoding than [`ENCODING`].
    Encoding(String),
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Base64(e) => write!(f, "histogram is not base64: {e}"),
            CodecError::Hdr(e) => write!(f, "histogram is not an HdrHistogram V2 serialization: {e}"),
            CodecError::Encoding(e) => write!(f, "histograms are encoded as '{e}', expected '{ENCODING}'"),
        }
    }
}

impl std::error::Error for CodecError {}

/// `h` as base64 of its compressed V2 serialization.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Writing into a Vec cannot fail, and a u64 histogram always has a V2 form.
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("V2 serialization into memory");
    STANDARD.encode(bytes)
}

/// The histogram [`encode`] made (or any V2 or V2-compressed HdrHistogram in base64).
pub fn decode(s: &str) -> Result<Histogram<u64>, CodecError> {
    let bytes = STANDARD.decode(s.trim()).map_err(CodecError::Base64)?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(CodecError::Hdr)
}

impl Histograms {
    /// The encoded form of a run's histograms.
    pub(crate) fn of(
        latency: &Histogram<u64>,
        uncorrected: Option<&Histogram<u64>>,
        lateness: Option<&Histogram<u64>>,
    ) -> Histograms {
        Histograms {
            encoding: ENCODING.to_string(),
            latency: encode(latency),
            latency_uncorrected: uncorrected.map(encode),
            send_lateness: lateness.map(encode),
            handshake: None,
        }
    }

    /// These histograms and the TLS handshake's.
    pub(crate) fn with_handshake(self, handshake: Option<&Histogram<u64>>) -> Histograms {
        Histograms { handshake: handshake.map(encode), ..self }
    }

    /// The handshake histogram decoded, if there is one.
    pub(crate) fn decode_handshake(&self) -> Result<Option<Histogram<u64>>, CodecError> {
        self.handshake.as_deref().map(decode).transpose()
    }

    /// The three histograms decoded (the optional ones only where present).
    #[allow(clippy::type_complexity)]
    pub(crate) fn decode(
        &self,
    ) -> Result<(Histogram<u64>, Option<Histogram<u64>>, Option<Histogram<u64>>), CodecError> {
        if self.encoding != ENCODING {
            return Err(CodecError::Encoding(self.encoding.clone()));
        }
        let opt = |s: &Option<String>| s.as_deref().map(decode).transpose();
        Ok((decode(&self.latency)?, opt(&self.latency_uncorrected)?, opt(&self.send_lateness)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::histogram;

    /// The bytes HdrHistogram's compressed V2 form starts with (big-endian cookie), so
    /// another implementation recognises it: `V2CompressedEncodingCookieBase` 0x1c849304
    /// with 0x10 set, as HdrHistogram's `getCompressedEncodingCookie` writes it.
    #[test]
    fn encoding_is_the_standard_compressed_v2_cookie() {
        let mut h = histogram(3);
        h.record(42).unwrap();
        let bytes = STANDARD.decode(encode(&h)).unwrap();
        assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x14]);
    }

    #[test]
    fn round_trip_keeps_every_count_table() {
        let cases: &[&[u64]] = &[&[], &[1], &[1, 1, 1], &[5, 500, 50_000, 5_000_000], &[3_600_000_000]];
        for values in cases {
            let mut h = histogram(3);
            for v in *values {
                h.record(*v).unwrap();
            }
            let back = decode(&encode(&h)).unwrap();
            assert_eq!(back.len(), h.len(), "{values:?}");
            let counts = |h: &Histogram<u64>| {
                h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect::<Vec<_>>()
            };
            assert_eq!(counts(&back), counts(&h), "{values:?}");
        }
    }

    #[test]
    fn garbage_is_refused_with_its_reason() {
        assert!(matches!(decode("not base64!"), Err(CodecError::Base64(_))));
        assert!(matches!(decode("aGVsbG8gd29ybGQ="), Err(CodecError::Hdr(_))));
    }
}
