//! The sending side: response heads, bodies under flow control, trailers and resets, and
//! the credit this side gives back (WINDOW_UPDATE) and is given (`WindowOpened`).

use super::*;

/// The most DATA payloads one `read` of [`Conn::send_data_with`] is given at once.
pub(crate) const READ_GROUP: usize = 8;

impl Conn {
    /// Gives back `n` octets of `stream`'s request body, handed over in `Data` events and
    /// now consumed. The policy: credit goes back to the client in a WINDOW_UPDATE once
    /// half a window has been released (the stream's and the connection's, each on its
    /// own), so a client is never held up by a caller that keeps up, and never sends more
    /// than one window ahead of one that does not. A stream that closed has given its
    /// credit back already; releasing on it does nothing.
    pub fn release(&mut self, stream: StreamId, n: usize) {
        let Some(s) = self.streams.get_mut(&stream) else { return };
        let n = u32::try_from(n).unwrap_or(u32::MAX).min(s.held);
        s.held -= n;
        s.unacked += n;
        self.unacked += n;
        self.send_window_updates(stream);
    }

    /// Sends a response head on `stream`: `:status`, then `fields` (names lower-cased;
    /// the connection-specific fields HTTP/2 forbids, §8.2.2, are dropped). A status
    /// below 200 is an interim head and may be followed by another. HPACK-encoded and
    /// split at the client's SETTINGS_MAX_FRAME_SIZE. Never refused for lack of room.
    pub fn send_head(
        &mut self,
        stream: StreamId,
        status: u16,
        fields: &[(&[u8], &[u8])],
        end_stream: bool,
    ) -> Result<(), SendError> {
        let s = self.streams.get(&stream).ok_or(SendError::StreamGone)?;
        if s.state.reply() != Some(Reply::Head) {
            return Err(if s.state.reply().is_none() { SendError::StreamGone } else { SendError::WrongOrder });
        }
        let interim = status < 200;
        let code = status.clamp(100, 999);
        let status = [b'0' + (code / 100) as u8, b'0' + (code / 10 % 10) as u8, b'0' + (code % 10) as u8];
        // A name with an upper-case letter is lower-cased into one buffer the connection
        // keeps for the purpose; the others are used as they are.
        let (mut lower, mut ends) = std::mem::take(&mut self.lowered);
        lower.clear();
        ends.clear();
        for (n, _) in fields {
            if n.iter().any(u8::is_ascii_uppercase) {
                let from = lower.len();
                lower.extend_from_slice(n);
                lower[from..].make_ascii_lowercase();
                ends.push(Some(lower.len() as u32)); // a name is far below 4 GiB
            } else {
                ends.push(None);
            }
        }
        let mut start = 0;
        let names = ends.iter().zip(fields).map(|(end, (n, _))| match *end {
            Some(end) => &lower[std::mem::replace(&mut start, end as usize)..end as usize],
            None => *n,
        });
        let regular =
            names.zip(fields).filter(|(n, _)| !head::is_connection_specific(n)).map(|(n, (_, v))| Field::new(n, v));
        let list = std::iter::once(Field::new(b":status", &status)).chain(regular);
        self.write_block(stream, list, end_stream && !interim);
        self.lowered = (lower, ends);
        if !interim {
            self.sent(stream, end_stream);
        }
        Ok(())
    }

    /// How many body octets the connection would take now on any stream: the smaller of
    /// its flow-control window and the output room. While it is 0 no stream's body can
    /// move, which a caller can learn without looking each stream up.
    pub fn connection_room(&self) -> usize {
        let room = self.config.max_output.saturating_sub(self.pending_output().len());
        self.send_window.clamp(0, room as i64) as usize
    }

    /// How many body octets [`Conn::send_data`] would take on `stream` now: the smaller
    /// of the two flow-control windows and the output room (0 for a stream not held, or
    /// one not yet past its head).
    pub fn data_room(&self, stream: StreamId) -> usize {
        let room = self.config.max_output.saturating_sub(self.pending_output().len());
        match self.streams.get(&stream) {
            Some(s) if s.state.reply() == Some(Reply::Body) => {
                self.send_window.min(s.send_window).clamp(0, room as i64) as usize
            }
            _ => 0,
        }
    }

    /// Sends as much of `data` on `stream` as both flow-control windows and the output
    /// room allow, in DATA frames of at most the client's SETTINGS_MAX_FRAME_SIZE, and
    /// returns how much that was. END_STREAM goes on the last frame if `end_stream` and
    /// all of `data` went. When less went, the caller keeps the rest and tries again after
    /// a `WindowOpened` event for the stream.
    pub fn send_data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) -> Result<usize, SendError> {
        let room = self.config.max_output.saturating_sub(self.pending_output().len());
        let s = self.streams.get_mut(&stream).ok_or(SendError::StreamGone)?;
        match s.state.reply() {
            None => return Err(SendError::StreamGone),
            Some(Reply::Head) => return Err(SendError::WrongOrder),
            Some(Reply::Body) => {}
        }
        let allowed = self.send_window.min(s.send_window).clamp(0, room as i64) as usize;
        let n = data.len().min(allowed);
        let all = n == data.len();
        s.blocked = !all;
        s.send_window -= n as i64;
        self.send_window -= n as i64;
        let max = self.peer_max_frame as usize;
        let mut chunks = data[..n].chunks(max).peekable();
        if n == 0 && all && end_stream {
            frame::encode_data(&mut self.out, stream, &[], true);
        }
        while let Some(chunk) = chunks.next() {
            frame::encode_data(&mut self.out, stream, chunk, all && end_stream && chunks.peek().is_none());
        }
        if all && end_stream {
            self.sent(stream, true);
        }
        Ok(n)
    }

    /// [`Conn::send_data`] for a body the caller reads straight into the output (a file by
    /// preadv): at most `len` octets, as many as both windows and the output room allow, in
    /// DATA frames whose payloads `read` fills in place, up to eight of them at a time, in order (so a file is read with one system call for as many frames), and
    /// nothing is copied between the source and the frames. `read` must fill every slice it
    /// is given and return true; on false nothing of that group is sent and
    /// `Err(SendError::Source)` says so (the caller resets the stream). END_STREAM goes on
    /// the last frame if `end_stream` and all `len` octets went; returns how many did.
    pub fn send_data_with(
        &mut self,
        stream: StreamId,
        len: usize,
        end_stream: bool,
        mut read: impl FnMut(&mut [&mut [u8]]) -> bool,
    ) -> Result<usize, SendError> {
        let allowed = self.data_room(stream);
        if allowed == 0 && len > 0 {
            match self.streams.get(&stream).map(|s| s.state.reply()) {
                Some(Some(Reply::Body)) => {}
                Some(Some(Reply::Head)) => return Err(SendError::WrongOrder),
                _ => return Err(SendError::StreamGone),
            }
        }
        let n = len.min(allowed);
        let all = n == len;
        let max = self.peer_max_frame as usize;
        let mut sent = 0;
        while sent < n {
            // Up to READ_GROUP frames, their payloads zeroed, then filled by one `read`.
            let start = self.out.len();
            let mut payloads = [(0, 0); READ_GROUP];
            let (mut count, mut group) = (0, 0);
            while count < READ_GROUP && sent + group < n {
                let chunk = (n - sent - group).min(max);
                let last = all && end_stream && sent + group + chunk == n;
                frame::encode_data_head(&mut self.out, stream, chunk, last);
                payloads[count] = (self.out.len() - start, chunk);
                self.out.resize(self.out.len() + chunk, 0);
                (count, group) = (count + 1, group + chunk);
            }
            let mut slices: [&mut [u8]; READ_GROUP] = Default::default();
            let (mut rest, mut at) = (&mut self.out[start..], 0);
            for (slot, &(payload_at, chunk)) in slices.iter_mut().zip(&payloads[..count]) {
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(payload_at - at);
                let (payload, tail) = tail.split_at_mut(chunk);
                (*slot, rest, at) = (payload, tail, payload_at + chunk);
            }
            if !read(&mut slices[..count]) {
                self.out.truncate(start);
                self.charge(stream, sent, false);
                return Err(SendError::Source);
            }
            sent += group;
        }
        if n == 0 && all && end_stream {
            frame::encode_data(&mut self.out, stream, &[], true);
        }
        self.charge(stream, n, !all);
        if all && end_stream {
            self.sent(stream, true);
        }
        Ok(n)
    }

    /// Counts `n` body octets sent on `stream` against both windows; `blocked`: the stream
    /// waits for credit to send the rest.
    fn charge(&mut self, stream: StreamId, n: usize, blocked: bool) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.blocked = blocked;
            s.send_window -= n as i64;
        }
        self.send_window -= n as i64;
    }

    /// Sends a trailer section on `stream`, which ends it. Names are lower-cased.
    pub fn send_trailers(&mut self, stream: StreamId, fields: &[(&[u8], &[u8])]) -> Result<(), SendError> {
        let s = self.streams.get(&stream).ok_or(SendError::StreamGone)?;
        match s.state.reply() {
            None => return Err(SendError::StreamGone),
            Some(Reply::Head) => return Err(SendError::WrongOrder),
            Some(Reply::Body) => {}
        }
        let names: Vec<Vec<u8>> = fields.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
        let list = names.iter().zip(fields).map(|(n, (_, v))| Field::new(n, v));
        self.write_block(stream, list, true);
        self.sent(stream, true);
        Ok(())
    }

    /// Resets `stream` with `code` (CANCEL, INTERNAL_ERROR...). No `Reset` event follows.
    /// A stream not held is left alone.
    pub fn send_reset(&mut self, stream: StreamId, code: ErrorCode) {
        if self.streams.contains_key(&stream) && self.phase != Phase::Closed {
            frame::encode_rst_stream(&mut self.out, stream, code);
            self.close(stream, Closed::ResetByUs);
        }
    }

    /// This side sent a final head or body on `id`, ending its half if `end_stream`.
    fn sent(&mut self, id: StreamId, end_stream: bool) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        match (s.state, end_stream) {
            (State::Open(_), false) => s.state = State::Open(Reply::Body),
            (State::HalfClosedRemote(_), false) => s.state = State::HalfClosedRemote(Reply::Body),
            (State::Open(_), true) => s.state = State::HalfClosedLocal,
            (State::HalfClosedRemote(_), true) => self.close(id, Closed::Ended),
            (State::HalfClosedLocal, _) => {}
        }
    }

    /// Sends WINDOW_UPDATEs for credit released: the connection's once half its window is
    /// owed, and stream `id`'s (if not 0 and the client may still send on it) likewise.
    pub(super) fn send_window_updates(&mut self, id: StreamId) {
        if self.phase == Phase::Closed {
            return;
        }
        let half = self.local_window / 2;
        if let Some(s) = self.streams.get_mut(&id).filter(|s| s.state.receiving()) {
            if s.unacked > 0 && s.unacked >= half {
                frame::encode_window_update(&mut self.out, id, s.unacked);
                s.recv_window += i64::from(s.unacked);
                s.unacked = 0;
            }
        }
        if self.unacked > 0 && self.unacked >= self.config.connection_window.min(MAX_WINDOW_SIZE) / 2 {
            frame::encode_window_update(&mut self.out, 0, self.unacked);
            self.recv_window += i64::from(self.unacked);
            self.unacked = 0;
        }
    }

    /// Queues `WindowOpened` for each blocked stream that can send again.
    pub(super) fn wake_blocked(&mut self) {
        if self.send_window <= 0 || self.pending_output().len() >= self.config.max_output {
            return;
        }
        for (&id, s) in self.streams.iter_mut().filter(|(_, s)| s.blocked && s.send_window > 0) {
            s.blocked = false;
            self.events.push_back(Event::WindowOpened { stream: id });
        }
    }

    /// Writes a field block as HEADERS and CONTINUATION frames.
    fn write_block<'f>(&mut self, id: StreamId, fields: impl IntoIterator<Item = Field<'f>>, end_stream: bool) {
        let mut block = std::mem::take(&mut self.encoded);
        block.clear();
        self.encoder.encode(fields, &mut block);
        frame::encode_headers(&mut self.out, id, &block, end_stream, self.peer_max_frame);
        self.encoded = block;
    }
}
