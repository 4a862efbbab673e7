//! The ring's sends: a send that hands its buffer back with its completion, and a send
//! made ahead of a receive, from a copy the ring holds until the receive linked behind it
//! ends (the bookkeeping `complete` in `uring.rs` finishes).

use super::{Kind, Ring};
use io_uring::{opcode, squeue, types};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

impl Ring {
    /// Sends a copy of `bytes`, then receives as [`Ring::recv`] does, the receive linked
    /// after the send (IOSQE_IO_LINK: it starts once the send is done). The send's success
    /// posts no completion (IOSQE_CQE_SKIP_SUCCESS, Linux 5.17), so a loop that submits the
    /// pair and waits sleeps until the receive completes, instead of waking at once for a
    /// send that finished during the submission. MSG_WAITALL makes the kernel retry a
    /// short send on a stream socket, so success is every byte out; anything else posts
    /// the send's completion ([`Outcome::Sent`](super::Outcome::Sent) with an error or a
    /// short count, and an empty buffer) and cancels the receive. The copy is the ring's
    /// until the receive's last completion, which comes after the send's end, then it is
    /// reused. Refused if either tag is in flight or the two are equal.
    pub fn send_ahead_of_recv(
        &mut self,
        fd: BorrowedFd<'_>,
        bytes: &[u8],
        send_data: u64,
        expect_wait: bool,
        recv_data: u64,
    ) -> io::Result<()> {
        // Both tags are checked before the send is queued: the receive must not be
        // refused once the send linked to it is in the queue.
        self.claim(send_data)?;
        self.claim(recv_data)?;
        if send_data == recv_data {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "a send ahead and its receive share a tag"));
        }
        let mut copy = self.spare.pop().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(bytes);
        let len = u32::try_from(copy.len()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let flags = libc::MSG_NOSIGNAL | libc::MSG_WAITALL;
        let send = opcode::Send::new(types::Fd(fd.as_raw_fd()), copy.as_ptr(), len)
            .flags(flags)
            .build()
            .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
            .user_data(send_data);
        self.push_room(2, &send)?;
        // The Vec's heap block does not move when the Vec itself is moved into the map.
        self.sends.insert(send_data, copy);
        self.kinds.insert(send_data, Kind::SendAhead);
        self.ahead.insert(recv_data, send_data);
        // Room for it was made above: the pair goes to the kernel in one submission.
        self.recv(fd, expect_wait, recv_data)
    }

    /// Sends `buf[from..]` (MSG_MORE if `more`); the buffer comes back with the completion.
    /// Refused if `user_data` is in flight: `buf` is dropped, and the send in flight keeps
    /// its own buffer.
    pub fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        buf: Vec<u8>,
        from: usize,
        more: bool,
        user_data: u64,
    ) -> io::Result<()> {
        let bytes = &buf[from.min(buf.len())..];
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
        let entry = opcode::Send::new(types::Fd(fd.as_raw_fd()), bytes.as_ptr(), len).flags(flags).build();
        // Queued (nothing reaches the kernel before the next submission), then kept: the
        // Vec's heap block does not move when the Vec itself is moved into the map.
        self.track(entry, user_data, Kind::Send)?;
        self.sends.insert(user_data, buf);
        Ok(())
    }

    /// A receive's last completion: the send made ahead of it, if any, is over (it
    /// succeeded, as a failure would have been reaped and removed already).
    pub(super) fn end_send_ahead(&mut self, recv_data: u64) {
        let Some(send_data) = self.ahead.remove(&recv_data) else { return };
        if let Some(buf) = self.sends.remove(&send_data) {
            self.kinds.remove(&send_data);
            self.in_flight -= 1;
            self.spare.push(buf);
        }
    }
}
