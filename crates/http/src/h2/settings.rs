//! SETTINGS parameters (RFC 9113 §6.5.1, §6.5.2): the six the RFC defines, their ranges,
//! and a SETTINGS frame's payload as the decoder hands it over, validated.

use super::error::{ErrorCode, FrameError};

/// SETTINGS_MAX_FRAME_SIZE's initial value, and its lowest (§6.5.2): the largest frame
/// payload either side accepts until the peer's SETTINGS say more.
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// SETTINGS_MAX_FRAME_SIZE's highest value, 2^24 - 1 (§6.5.2): the most a frame's 24-bit
/// length can say.
pub const MAX_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
/// SETTINGS_INITIAL_WINDOW_SIZE's initial value (§6.5.2), and the connection window's
/// (§6.9.2).
pub const DEFAULT_INITIAL_WINDOW_SIZE: u32 = 65_535;
/// The largest flow-control window, 2^31 - 1 (§6.9.1): the highest
/// SETTINGS_INITIAL_WINDOW_SIZE and the highest WINDOW_UPDATE increment.
pub const MAX_WINDOW_SIZE: u32 = (1 << 31) - 1;

/// The octets of one parameter: a 16-bit identifier and a 32-bit value (§6.5.1).
pub(crate) const PARAMETER_LEN: usize = 6;

/// One SETTINGS parameter of the six RFC 9113 defines (§6.5.2), with its value.
///
/// Parameters of other identifiers are not represented: "an endpoint that receives a
/// SETTINGS frame with any unknown or unsupported identifier MUST ignore that setting"
/// (§6.5.2), and the decoder skips them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// SETTINGS_HEADER_TABLE_SIZE (0x1): the most HPACK table the sender's decoder keeps.
    HeaderTableSize(u32),
    /// SETTINGS_ENABLE_PUSH (0x2): 0 or 1 on the wire. A server never sends 1, and a client
    /// that receives 1 treats it as a PROTOCOL_ERROR: the role's check, not the decoder's.
    EnablePush(bool),
    /// SETTINGS_MAX_CONCURRENT_STREAMS (0x3).
    MaxConcurrentStreams(u32),
    /// SETTINGS_INITIAL_WINDOW_SIZE (0x4): at most [`MAX_WINDOW_SIZE`].
    InitialWindowSize(u32),
    /// SETTINGS_MAX_FRAME_SIZE (0x5): from [`DEFAULT_MAX_FRAME_SIZE`] to
    /// [`MAX_MAX_FRAME_SIZE`].
    MaxFrameSize(u32),
    /// SETTINGS_MAX_HEADER_LIST_SIZE (0x6): advisory.
    MaxHeaderListSize(u32),
}

impl Setting {
    /// The parameter's identifier on the wire (§6.5.2).
    pub fn id(self) -> u16 {
        match self {
            Setting::HeaderTableSize(_) => 0x1,
            Setting::EnablePush(_) => 0x2,
            Setting::MaxConcurrentStreams(_) => 0x3,
            Setting::InitialWindowSize(_) => 0x4,
            Setting::MaxFrameSize(_) => 0x5,
            Setting::MaxHeaderListSize(_) => 0x6,
        }
    }

    /// The parameter's value on the wire.
    pub fn value(self) -> u32 {
        match self {
            Setting::EnablePush(on) => u32::from(on),
            Setting::HeaderTableSize(v)
            | Setting::MaxConcurrentStreams(v)
            | Setting::InitialWindowSize(v)
            | Setting::MaxFrameSize(v)
            | Setting::MaxHeaderListSize(v) => v,
        }
    }

    /// One parameter as received: `Ok(None)` for an identifier RFC 9113 does not define
    /// (ignored, §6.5.2), an error for a value out of its range. Each of those is a
    /// connection error (§6.5.2): ENABLE_PUSH other than 0 or 1 and MAX_FRAME_SIZE outside
    /// 2^14..=2^24-1 are PROTOCOL_ERROR, INITIAL_WINDOW_SIZE above 2^31-1 is
    /// FLOW_CONTROL_ERROR.
    pub(crate) fn decode(id: u16, value: u32) -> Result<Option<Setting>, FrameError> {
        let out_of_range = |code, reason| Err(FrameError::connection(code, reason));
        Ok(Some(match id {
            0x1 => Setting::HeaderTableSize(value),
            0x2 => match value {
                0 | 1 => Setting::EnablePush(value == 1),
                _ => return out_of_range(ErrorCode::PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH not 0 or 1"),
            },
            0x3 => Setting::MaxConcurrentStreams(value),
            0x4 if value > MAX_WINDOW_SIZE => {
                return out_of_range(ErrorCode::FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1")
            }
            0x4 => Setting::InitialWindowSize(value),
            0x5 if !(DEFAULT_MAX_FRAME_SIZE..=MAX_MAX_FRAME_SIZE).contains(&value) => {
                return out_of_range(ErrorCode::PROTOCOL_ERROR, "SETTINGS_MAX_FRAME_SIZE outside 2^14..2^24-1")
            }
            0x5 => Setting::MaxFrameSize(value),
            0x6 => Setting::MaxHeaderListSize(value),
            _ => return Ok(None),
        }))
    }

    /// Whether the value is in the parameter's range: what [`Setting::decode`] accepts.
    pub(crate) fn is_valid(self) -> bool {
        matches!(Setting::decode(self.id(), self.value()), Ok(Some(_)))
    }
}

/// The parameters of a SETTINGS frame that is not an ACK, borrowed from the frame.
///
/// INVARIANT: `payload` is a whole number of 6-octet parameters, and every parameter
/// whose identifier RFC 9113 defines has a value in range: `Settings::parse` is the only
/// way to make one, so iterating cannot fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings<'a> {
    payload: &'a [u8],
}

impl<'a> Settings<'a> {
    /// Validates a SETTINGS payload (§6.5): a length that is not a multiple of 6 is a
    /// connection error of type FRAME_SIZE_ERROR, and so is each value out of range (see
    /// [`Setting`]). Unknown identifiers are kept in the payload and skipped by the
    /// iterator.
    pub(crate) fn parse(payload: &'a [u8]) -> Result<Settings<'a>, FrameError> {
        if payload.len() % PARAMETER_LEN != 0 {
            return Err(FrameError::connection(ErrorCode::FRAME_SIZE_ERROR, "SETTINGS length not a multiple of 6"));
        }
        for raw in payload.chunks_exact(PARAMETER_LEN) {
            let (id, value) = split(raw);
            Setting::decode(id, value)?;
        }
        Ok(Settings { payload })
    }

    /// The payload as received, unknown parameters included.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// The known parameters in the order sent; a parameter sent twice comes twice, and
    /// the later one wins when applied in order (§6.5.3: "processed in the order in which
    /// they appear").
    pub fn iter(&self) -> impl Iterator<Item = Setting> + 'a {
        self.payload.chunks_exact(PARAMETER_LEN).filter_map(|raw| {
            let (id, value) = split(raw);
            Setting::decode(id, value).ok().flatten()
        })
    }
}

/// One parameter's identifier and value; `raw` is 6 octets.
fn split(raw: &[u8]) -> (u16, u32) {
    (u16::from_be_bytes([raw[0], raw[1]]), u32::from_be_bytes([raw[2], raw[3], raw[4], raw[5]]))
}
