//! The receiving side: each frame the client sends, acted on as RFC 9113 says.

use super::*;

impl Conn {
    /// Acts on one frame: first the rules of order (SETTINGS first, §3.4; nothing but the
    /// block's CONTINUATION inside a field block, §4.3), then the type's own.
    pub(super) fn frame(&mut self, f: Frame<'_>) -> Result<(), ConnError> {
        if self.phase == Phase::FirstSettings {
            if !matches!(f, Frame::Settings(_)) {
                return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "the client's first frame is not SETTINGS"));
            }
            self.phase = Phase::Open;
        }
        if let Some(block) = &self.block {
            if !matches!(f, Frame::Continuation { stream, .. } if stream == block.stream) {
                return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "a frame inside a field block"));
            }
        }
        match f {
            Frame::Data { stream, data, end_stream, .. } => {
                self.data(stream, data, f.flow_controlled_len(), end_stream)
            }
            Frame::Headers { stream, fragment, end_stream, end_headers, priority, .. } => {
                let self_dependent = priority.is_some_and(|p| p.depends_on == stream);
                self.headers(stream, fragment, end_stream, end_headers, self_dependent)
            }
            Frame::Continuation { fragment, end_headers, .. } => self.continuation(fragment, end_headers),
            Frame::Priority { .. } | Frame::Unknown { .. } => Ok(()),
            Frame::RstStream { stream, code } => self.rst_stream(stream, code),
            Frame::Settings(settings) => self.settings(settings),
            Frame::SettingsAck => {
                self.settings_acked();
                Ok(())
            }
            Frame::PushPromise { .. } => Err(self.fail(ErrorCode::PROTOCOL_ERROR, "PUSH_PROMISE from a client")),
            Frame::Ping { ack: true, .. } => Ok(()),
            Frame::Ping { ack: false, data } => {
                frame::encode_ping_ack(&mut self.out, data);
                self.ack_queued()
            }
            Frame::GoAway { last_stream, code, .. } => {
                self.peer_goaway = true;
                self.events.push_back(Event::GoAway { last_stream, code });
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => self.window_update(stream, increment),
        }
    }

    /// HEADERS (§6.2): starts a field block, a request's or a trailer section's. Only odd
    /// streams; the fragment bounded like the whole block.
    fn headers(
        &mut self,
        stream: StreamId,
        fragment: &[u8],
        end_stream: bool,
        end_headers: bool,
        self_dependent: bool,
    ) -> Result<(), ConnError> {
        if stream % 2 == 0 {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "HEADERS on an even stream"));
        }
        if fragment.len() > self.config.max_header_list_size as usize {
            return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "a field block over SETTINGS_MAX_HEADER_LIST_SIZE"));
        }
        if end_headers {
            // The whole block is in this frame: decoded where it lies, not copied.
            let block = Block { stream, octets: Vec::new(), end_stream, self_dependent, continuations: 0 };
            self.field_block(&block, fragment)
        } else {
            self.block =
                Some(Block { stream, octets: fragment.to_vec(), end_stream, self_dependent, continuations: 0 });
            Ok(())
        }
    }

    /// CONTINUATION (§6.10): the block grows, within its bounds in octets and frames.
    fn continuation(&mut self, fragment: &[u8], end_headers: bool) -> Result<(), ConnError> {
        let Some(block) = &mut self.block else {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "CONTINUATION without HEADERS"));
        };
        block.continuations += 1;
        block.octets.extend_from_slice(fragment);
        if block.continuations > self.config.max_continuations {
            return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "too many CONTINUATION frames"));
        }
        if block.octets.len() > self.config.max_header_list_size as usize {
            return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "a field block over SETTINGS_MAX_HEADER_LIST_SIZE"));
        }
        if end_headers {
            let block = self.block.take().expect("checked above");
            self.field_block(&block, &block.octets)?;
        }
        Ok(())
    }

    /// A whole field block: decoded first, whatever becomes of the stream, so the HPACK
    /// tables stay in step (§4.3); then a new request, trailers, or a refusal.
    fn field_block(&mut self, block: &Block, octets: &[u8]) -> Result<(), ConnError> {
        // Decoded into a list the connection keeps, so a request costs no growth of it.
        let mut list = std::mem::take(&mut self.decoded);
        list.clear();
        let result = self.decoded_block(block, octets, &mut list);
        self.decoded = list;
        result
    }

    /// [`Conn::field_block`], decoding into `list`.
    fn decoded_block(&mut self, block: &Block, octets: &[u8], list: &mut FieldList) -> Result<(), ConnError> {
        if self.decoder.decode(octets, |f| list.push(f)).is_err() {
            return Err(self.fail(ErrorCode::COMPRESSION_ERROR, "a field block HPACK cannot decode"));
        }
        let id = block.stream;
        if let Some(s) = self.streams.get(&id) {
            if !s.state.receiving() {
                return self.stream_error(id, ErrorCode::STREAM_CLOSED);
            }
            if !block.end_stream || head::trailers(list).is_err() {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR);
            }
            if s.content_length.is_some_and(|n| n != s.received) {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR);
            }
            self.events.push_back(Event::Trailers { stream: id, fields: list.to_pairs() });
            return self.received_end(id);
        }
        if id <= self.highest {
            return match self.closed.get(id) {
                Some(Closed::ResetByUs) => Ok(()),
                Some(_) => Err(self.fail(ErrorCode::STREAM_CLOSED, "HEADERS on a closed stream")),
                None => Err(self.fail(ErrorCode::PROTOCOL_ERROR, "a stream identifier not above the last")),
            };
        }
        self.highest = id;
        if self.phase == Phase::Draining {
            self.closed.push(id, Closed::ResetByUs);
            return Ok(());
        }
        self.opened_in_window += 1;
        if self.opened_in_window > self.config.reset_window {
            self.opened_in_window = 1;
            self.ended_early = 0;
        }
        if block.self_dependent {
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR);
        }
        if self.streams.len() >= self.config.max_concurrent_streams as usize {
            return self.stream_error(id, ErrorCode::REFUSED_STREAM);
        }
        let head = match head::request(list) {
            Ok(head) if !(block.end_stream && head.content_length.is_some_and(|n| n > 0)) => head,
            _ => return self.stream_error(id, ErrorCode::PROTOCOL_ERROR),
        };
        let stream = Stream {
            state: if block.end_stream { State::HalfClosedRemote(Reply::Head) } else { State::Open(Reply::Head) },
            recv_window: i64::from(self.local_window),
            held: 0,
            unacked: 0,
            send_window: i64::from(self.peer_window),
            blocked: false,
            content_length: head.content_length,
            received: 0,
        };
        self.streams.insert(id, stream);
        self.events.push_back(Event::Request { stream: id, head, end_stream: block.end_stream });
        Ok(())
    }

    /// DATA (§6.1): counted against the connection's window first, whatever the stream
    /// (§6.9), then against the stream's and its content-length (§8.1.1). On a stream this
    /// side reset the frame is ignored, its credit given back; on any other closed stream
    /// it is a stream error of type STREAM_CLOSED (§5.1).
    fn data(&mut self, id: StreamId, data: &[u8], flow_len: u32, end_stream: bool) -> Result<(), ConnError> {
        if id > self.highest {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "DATA on an idle stream"));
        }
        if i64::from(flow_len) > self.recv_window {
            return Err(self.fail(ErrorCode::FLOW_CONTROL_ERROR, "DATA over the connection's window"));
        }
        self.recv_window -= i64::from(flow_len);
        if data.is_empty() && !end_stream {
            self.empty_frames += 1;
            if self.empty_frames > self.config.max_empty_frames {
                return Err(self.fail(ErrorCode::ENHANCE_YOUR_CALM, "a flood of empty DATA frames"));
            }
        } else {
            self.empty_frames = 0;
        }
        let Some(s) = self.streams.get_mut(&id).filter(|s| s.state.receiving()) else {
            self.unacked += flow_len;
            self.send_window_updates(0);
            let late = self.closed.get(id) == Some(Closed::ResetByUs) && !self.streams.contains_key(&id);
            return if late { Ok(()) } else { self.stream_error(id, ErrorCode::STREAM_CLOSED) };
        };
        if i64::from(flow_len) > s.recv_window {
            self.unacked += flow_len;
            return self.stream_error(id, ErrorCode::FLOW_CONTROL_ERROR);
        }
        s.recv_window -= i64::from(flow_len);
        let padding = flow_len - data.len() as u32;
        s.unacked += padding;
        s.held += data.len() as u32;
        self.unacked += padding;
        s.received += data.len() as u64;
        let length_wrong = match s.content_length {
            Some(n) => s.received > n || (end_stream && s.received != n),
            None => false,
        };
        if length_wrong {
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR);
        }
        if !data.is_empty() || end_stream {
            self.events.push_back(Event::Data { stream: id, bytes: data.to_vec(), end_stream });
        }
        if end_stream {
            self.received_end(id)?;
        }
        self.send_window_updates(id);
        Ok(())
    }

    /// RST_STREAM (§6.4): the stream ends, and counts as ended early.
    fn rst_stream(&mut self, id: StreamId, code: ErrorCode) -> Result<(), ConnError> {
        if id > self.highest {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "RST_STREAM on an idle stream"));
        }
        if self.streams.contains_key(&id) {
            self.close(id, Closed::ResetByPeer);
            self.events.push_back(Event::Reset { stream: id, code });
            return self.ended_early();
        }
        Ok(())
    }

    /// WINDOW_UPDATE (§6.9): more room to send; past 2^31 - 1 a FLOW_CONTROL_ERROR, on
    /// the connection (a connection error) or a stream (a stream error), §6.9.1.
    fn window_update(&mut self, id: StreamId, increment: u32) -> Result<(), ConnError> {
        if id == 0 {
            if self.send_window + i64::from(increment) > i64::from(MAX_WINDOW_SIZE) {
                return Err(self.fail(ErrorCode::FLOW_CONTROL_ERROR, "the connection's window over 2^31-1"));
            }
            self.send_window += i64::from(increment);
            self.wake_blocked();
            return Ok(());
        }
        if id > self.highest {
            return Err(self.fail(ErrorCode::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream"));
        }
        let Some(s) = self.streams.get_mut(&id) else { return Ok(()) };
        if s.send_window + i64::from(increment) > i64::from(MAX_WINDOW_SIZE) {
            return self.stream_error(id, ErrorCode::FLOW_CONTROL_ERROR);
        }
        s.send_window += i64::from(increment);
        self.wake_blocked();
        Ok(())
    }

    /// Applies the client's SETTINGS in order (§6.5.3) and acknowledges them.
    fn settings(&mut self, settings: Settings<'_>) -> Result<(), ConnError> {
        for setting in settings.iter() {
            match setting {
                Setting::HeaderTableSize(size) => self.encoder.set_max_table_size(size as usize),
                Setting::InitialWindowSize(size) => {
                    // §6.9.2: the change applies to every stream's window, and one over
                    // 2^31-1 is a connection error.
                    let delta = i64::from(size) - i64::from(self.peer_window);
                    if self.streams.values().any(|s| s.send_window + delta > i64::from(MAX_WINDOW_SIZE)) {
                        return Err(self.fail(ErrorCode::FLOW_CONTROL_ERROR, "a stream's window over 2^31-1"));
                    }
                    self.streams.values_mut().for_each(|s| s.send_window += delta);
                    self.peer_window = size;
                }
                Setting::MaxFrameSize(size) => self.peer_max_frame = size,
                Setting::EnablePush(_) | Setting::MaxConcurrentStreams(_) | Setting::MaxHeaderListSize(_) => {}
            }
        }
        frame::encode_settings_ack(&mut self.out);
        self.wake_blocked();
        self.ack_queued()
    }

    /// The client acknowledged this side's SETTINGS: its limits hold from now on.
    fn settings_acked(&mut self) {
        if !std::mem::take(&mut self.settings_unacked) {
            return;
        }
        self.local_max_frame = self.config.max_frame_size.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_MAX_FRAME_SIZE);
        let window = self.config.initial_window_size.min(MAX_WINDOW_SIZE);
        let delta = i64::from(window) - i64::from(self.local_window);
        self.streams.values_mut().for_each(|s| s.recv_window += delta);
        self.local_window = window;
        self.decoder.set_max_table_size(self.config.header_table_size as usize);
    }

    /// The client ended its side of `id` (END_STREAM on DATA or trailers).
    fn received_end(&mut self, id: StreamId) -> Result<(), ConnError> {
        let Some(s) = self.streams.get_mut(&id) else { return Ok(()) };
        match s.state {
            State::Open(reply) => s.state = State::HalfClosedRemote(reply),
            State::HalfClosedLocal => self.close(id, Closed::Ended),
            State::HalfClosedRemote(_) => {}
        }
        Ok(())
    }
}
