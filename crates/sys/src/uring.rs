//! A small, safe io_uring ring for the `uring` mode.
//!
//! The io-uring crate's `push` is unsafe because the kernel reads and writes the memory an
//! entry points to until the operation completes (io_uring_enter(2): "the application must
//! ensure the buffers remain valid until the completion"). This wrapper makes every
//! operation sound by owning all such memory itself:
//! - receive buffers live in one region owned by the ring and lent to the kernel through a
//!   buffer ring (`buf_ring.rs`); a completed receive shows its bytes to the caller, then
//!   the buffer is given back to the kernel (a store into the buffer ring, no operation);
//! - a send takes ownership of its `Vec` and hands it back with the completion; a send
//!   made ahead of a receive copies its bytes into a buffer of the ring's, held until the
//!   receive linked after it completes;
//! - every other operation (poll, close, cancel) points at no user memory.
//!
//! The ring keeps each operation's kind and buffer by the caller's tag (user data), so a
//! tag names at most one operation in flight: an operation whose tag is still in flight is
//! refused ([`ErrorKind::AlreadyExists`](io::ErrorKind::AlreadyExists)) before anything is
//! queued. Otherwise a second send under a tag would drop the buffer the kernel is still
//! reading for the first.
//!
//! Descriptors are named by number, and the kernel looks the number up when it issues the
//! operation. Every operation here is issued at once, in order, when submitted; none that
//! io_uring always hands to its worker threads (shutdown, splice) is offered, because a
//! late lookup could find the number closed and reused by a new connection. (A ring
//! shutdown did exactly that: a connection's half-close ran after its close and shut a
//! newer connection before its response.)
//!
//! In-flight operations are counted; dropping the ring cancels them and waits for their
//! completions before freeing any memory they could still touch (or leaks the memory
//! if the kernel does not answer in time).

mod buf_ring;
mod send;

use buf_ring::BufRing;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

/// The buffer group of the receive buffers.
const GROUP: u16 = 0;
/// The user data of internal operations (closes, cancels): never shown to callers.
const INTERNAL: u64 = u64::MAX;
/// IORING_RECVSEND_POLL_FIRST (include/uapi/linux/io_uring.h, Linux 5.19): a receive that
/// expects no data yet waits for it without trying first (io_uring_prep_recv(3)).
const RECV_POLL_FIRST: u16 = 1;

/// What a completion carried.
#[derive(Debug)]
pub enum Outcome<'a> {
    /// A receive: the bytes (empty at end of stream), or the error (ENOBUFS: no
    /// receive buffer was free; retry).
    Received(io::Result<&'a [u8]>),
    /// A send: how many bytes went out, and the buffer given back.
    Sent(io::Result<usize>, Vec<u8>),
    /// A poll: the ready events, or the error.
    Polled(io::Result<u32>),
}

/// One completion, tagged with the caller's user data. `more`: a multishot operation
/// stays armed and will complete again. `input_left`: a receive left input in the socket
/// (IORING_CQE_F_SOCK_NONEMPTY, io_uring_enter(2)); false for every other operation.
#[derive(Debug)]
pub struct Completion<'a> {
    pub user_data: u64,
    pub more: bool,
    pub input_left: bool,
    pub outcome: Outcome<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Recv,
    Send,
    /// A send made ahead of a receive: its completion only ever reports a failure.
    SendAhead,
    Poll,
}

/// An io_uring instance with its receive buffers and the sends it holds.
pub struct Ring {
    ring: IoUring,
    /// `count` receive buffers of `size` bytes; the kernel may write into any buffer it
    /// was given back until it picks one for a receive.
    region: Box<[u8]>,
    size: usize,
    /// The buffer ring that lends `region`'s buffers, registered as group GROUP.
    /// INVARIANT: registered until `Drop` unregisters it (or leaks it).
    buffers: Option<BufRing>,
    /// The kind of each in-flight operation, by user data; a send also keeps its buffer.
    /// INVARIANT: a user data is in `kinds` from its operation's queueing until its last
    /// completion is reaped, and no operation is queued under one already there (`claim`).
    kinds: HashMap<u64, Kind>,
    sends: HashMap<u64, Vec<u8>>,
    /// Sends made ahead of a receive ([`Ring::send_ahead_of_recv`]), by the receive's user
    /// data: the send's user data. INVARIANT: each such send is in `kinds` and `sends`
    /// until its failure's completion or its receive's last completion is reaped.
    ahead: HashMap<u64, u64>,
    /// Buffers of finished sends made ahead, for the next copies.
    spare: Vec<Vec<u8>>,
    /// Completions the last [`Ring::complete`] reaped.
    reaped: usize,
    /// Operations submitted whose last completion has not been reaped yet.
    in_flight: usize,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring").field("in_flight", &self.in_flight).finish_non_exhaustive()
    }
}

impl Ring {
    /// Sets up a ring of `entries` and lends it `count` receive buffers (a power of two) of
    /// `size` bytes. Fails with ENOSYS or EPERM where the kernel has no (or forbids)
    /// io_uring, and with EINVAL where it has no buffer rings (before Linux 5.19).
    pub fn new(entries: u32, count: u16, size: usize) -> io::Result<Ring> {
        // One thread submits and reaps (single issuer), so completions' task work can wait
        // until that thread asks for events (defer taskrun, Linux 6.1): fewer interrupts
        // of the loop. Older kernels get a plain ring.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))?;
        u32::try_from(size).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let region = vec![0u8; usize::from(count) * size].into_boxed_slice();
        let buffers = BufRing::new(count)?;
        // SAFETY: io_uring_register_buf_ring(3): the ring memory must stay valid until it is
        // unregistered or the ring is destroyed. `buffers` moves into the `Ring` below (its
        // heap memory does not move), whose `Drop` unregisters it before freeing it, or
        // leaks it; if registering fails, nothing references it and it is freed here.
        unsafe { ring.submitter().register_buf_ring_with_flags(buffers.addr(), count, GROUP, 0) }?;
        let mut ring = Ring {
            ring,
            region,
            size,
            buffers: Some(buffers),
            kinds: HashMap::new(),
            sends: HashMap::new(),
            ahead: HashMap::new(),
            spare: Vec::new(),
            reaped: 0,
            in_flight: 0,
        };
        for id in 0..count {
            ring.give_back(id);
        }
        Ok(ring)
    }

    /// Pushes one entry, submitting first if the queue is full.
    fn push(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        self.push_room(1, entry)
    }

    /// Pushes one entry, submitting first if the queue has room for fewer than `room`
    /// (a linked pair must reach the kernel in one submission).
    fn push_room(&mut self, room: usize, entry: &squeue::Entry) -> io::Result<()> {
        let free = {
            let queue = self.ring.submission();
            queue.capacity() - queue.len()
        };
        if free < room {
            self.ring.submit()?;
        }
        // SAFETY: io_uring_enter(2) requires the memory an entry points to to stay valid
        // until its completion. Every entry built in this module points either at no user
        // memory (poll, cancel, close), at `self.region` (receives through buffer
        // selection from the buffer ring), which lives as long as `self` and is only freed
        // by `Drop` after every operation completed, or at a send buffer owned by
        // `self.sends` (from right after it is queued, before any submission) until its
        // completion is reaped (for a send made ahead of a receive, until the receive's
        // last completion: linked, it runs after the send). `claim` refuses a tag in
        // flight, so no buffer in `self.sends` is ever replaced before its completion.
        unsafe { self.ring.submission().push(entry) }.map_err(|_| io::Error::other("submission queue full"))?;
        self.in_flight += 1;
        Ok(())
    }

    /// Refuses a tag the ring cannot keep state under: its own internal tag, or a tag
    /// whose operation is still in flight (its completion has not been reaped).
    fn claim(&self, user_data: u64) -> io::Result<()> {
        if user_data == INTERNAL {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "io_uring tag u64::MAX is reserved"));
        }
        if self.kinds.contains_key(&user_data) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "io_uring tag already in flight"));
        }
        Ok(())
    }

    /// Whether an operation tagged `user_data` is in flight: its last completion has not
    /// been reaped yet, so the tag cannot be used again.
    pub fn is_in_flight(&self, user_data: u64) -> bool {
        self.kinds.contains_key(&user_data)
    }

    fn track(&mut self, entry: squeue::Entry, user_data: u64, kind: Kind) -> io::Result<()> {
        self.claim(user_data)?;
        self.push(&entry.user_data(user_data))?;
        self.kinds.insert(user_data, kind);
        Ok(())
    }

    /// A receive into one of the ring's buffers (refused if `user_data` is in flight).
    /// `expect_wait`: the caller knows the socket
    /// held no input at its last read, so the kernel waits for input before trying
    /// (IORING_RECVSEND_POLL_FIRST) instead of failing a first try.
    pub fn recv(&mut self, fd: BorrowedFd<'_>, expect_wait: bool, user_data: u64) -> io::Result<()> {
        let len = u32::try_from(self.size).unwrap_or(u32::MAX);
        let entry = opcode::Recv::new(types::Fd(fd.as_raw_fd()), std::ptr::null_mut(), len)
            .buf_group(GROUP)
            .ioprio(if expect_wait { RECV_POLL_FIRST } else { 0 })
            .build()
            .flags(squeue::Flags::BUFFER_SELECT);
        self.track(entry, user_data, Kind::Recv)
    }

    /// Closes `fd` through the ring (its completion is not reported). If the operation
    /// cannot be queued, `fd` is closed at once instead.
    pub fn close(&mut self, fd: OwnedFd) -> io::Result<()> {
        use std::os::fd::IntoRawFd;
        self.push(&opcode::Close::new(types::Fd(fd.as_raw_fd())).build().user_data(INTERNAL))?;
        // Queued: the descriptor's ownership passes to the ring operation, which closes it.
        let _ = fd.into_raw_fd();
        Ok(())
    }

    /// A one-shot poll for `events` (POLLIN, POLLOUT) on `fd` (refused if `user_data` is
    /// in flight).
    pub fn poll(&mut self, fd: BorrowedFd<'_>, events: u32, user_data: u64) -> io::Result<()> {
        let entry = opcode::PollAdd::new(types::Fd(fd.as_raw_fd()), events).build();
        self.track(entry, user_data, Kind::Poll)
    }

    /// Asks the kernel to cancel the operation tagged `user_data` (it completes with
    /// ECANCELED, or normally if it was already done).
    pub fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        self.push(&opcode::AsyncCancel::new(user_data).build().user_data(INTERNAL))
    }

    /// Submits what is queued and waits for at least one completion, or `timeout`.
    pub fn submit_and_wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let result = match timeout {
            Some(t) => {
                let ts = types::Timespec::new().sec(t.as_secs()).nsec(t.subsec_nanos());
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(1, &args)
            }
            None => self.ring.submit_and_wait(1),
        };
        match result {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Calls `handle` for every completion ready now.
    pub fn complete(&mut self, mut handle: impl FnMut(Completion<'_>)) -> io::Result<()> {
        self.reaped = 0;
        loop {
            let next = self.ring.completion().next();
            let Some(cqe) = next else { break };
            self.reaped += 1;
            let (user_data, result, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            let (more, input_left) = (cqueue::more(flags), cqueue::sock_nonempty(flags));
            let kind = match user_data {
                INTERNAL => None,
                _ if more => self.kinds.get(&user_data).copied(),
                _ => self.kinds.remove(&user_data),
            };
            // A completion of an operation no longer tracked (a receive retired with its
            // failed send ahead, below) does not count again.
            if !more && (user_data == INTERNAL || kind.is_some()) {
                self.in_flight -= 1;
            }
            let Some(kind) = kind else { continue };
            let error = || io::Error::from_raw_os_error(-result);
            let outcome = match kind {
                Kind::Poll => Outcome::Polled(if result < 0 { Err(error()) } else { Ok(result as u32) }),
                Kind::Send => {
                    let buf = self.sends.remove(&user_data).unwrap_or_default();
                    Outcome::Sent(if result < 0 { Err(error()) } else { Ok(result as usize) }, buf)
                }
                Kind::SendAhead => {
                    self.spare.extend(self.sends.remove(&user_data));
                    let sent = if result < 0 { Err(error()) } else { Ok(result as usize) };
                    handle(Completion { user_data, more, input_left: false, outcome: Outcome::Sent(sent, Vec::new()) });
                    // The failure cancelled the receive linked behind it, and the kernel
                    // posts no completion for it (a chain whose request has
                    // IOSQE_CQE_SKIP_SUCCESS skips its failed links' completions:
                    // REQ_F_SKIP_LINK_CQES in io_uring/io_uring.c, io_fail_links): it is
                    // retired here and reported as cancelled.
                    let behind = self.ahead.iter().find(|(_, send)| **send == user_data).map(|(recv, _)| *recv);
                    if let Some(recv) = behind {
                        self.ahead.remove(&recv);
                        if self.kinds.remove(&recv).is_some() {
                            self.in_flight -= 1;
                        }
                        let cancelled = io::Error::from_raw_os_error(libc::ECANCELED);
                        let outcome = Outcome::Received(Err(cancelled));
                        handle(Completion { user_data: recv, more: false, input_left: false, outcome });
                    }
                    continue;
                }
                Kind::Recv => {
                    if !more {
                        self.end_send_ahead(user_data);
                    }
                    let id = cqueue::buffer_select(flags);
                    if result < 0 || id.is_none() {
                        let r = if result < 0 { Err(error()) } else { Ok(&[][..]) };
                        handle(Completion { user_data, more, input_left, outcome: Outcome::Received(r) });
                        continue;
                    }
                    let id = id.unwrap_or(0);
                    let start = usize::from(id) * self.size;
                    let n = (result as usize).min(self.size);
                    handle(Completion {
                        user_data,
                        more,
                        input_left,
                        outcome: Outcome::Received(Ok(&self.region[start..start + n])),
                    });
                    self.give_back(id);
                    continue;
                }
            };
            handle(Completion { user_data, more, input_left: false, outcome });
        }
        Ok(())
    }

    /// How many completions the last call to [`Ring::complete`] reaped: how busy the loop
    /// that calls it is.
    pub fn reaped(&self) -> usize {
        self.reaped
    }

    /// Lends receive buffer `id` to the kernel (again): a slot in the buffer ring. A
    /// completion that consumed a buffer reports its id once, so each id is given back
    /// once per use (`buf_ring.rs`'s INVARIANT).
    fn give_back(&mut self, id: u16) {
        let Some(buffers) = self.buffers.as_mut() else { return };
        if id >= buffers.count() {
            return; // not one of ours: never lent, never given
        }
        // The pointer is taken inside `region`, which outlives every operation (see push).
        let ptr = self.region[usize::from(id) * self.size..].as_mut_ptr();
        buffers.push(ptr, self.size as u32, id);
        buffers.publish();
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Cancel everything still in flight and reap it, so no operation can touch the
        // region or a send buffer after they are freed.
        let pending: Vec<u64> = self.kinds.keys().copied().collect();
        for user_data in pending {
            let _ = self.cancel(user_data);
        }
        for _ in 0..100 {
            if self.in_flight == 0 {
                // Nothing can pick a buffer any more: the kernel lets go of the buffer
                // ring, then it is freed (or, if the kernel refuses, leaked).
                if let Some(buffers) = self.buffers.take() {
                    if self.ring.submitter().unregister_buf_ring(GROUP).is_err() {
                        buffers.leak();
                    }
                }
                return;
            }
            let _ = self.submit_and_wait(Some(Duration::from_millis(10)));
            let _ = self.complete(|_| {});
        }
        // The kernel did not finish in time: leak rather than free memory it may write.
        std::mem::forget(std::mem::take(&mut self.region));
        std::mem::forget(std::mem::take(&mut self.sends));
        if let Some(buffers) = self.buffers.take() {
            buffers.leak();
        }
    }
}
