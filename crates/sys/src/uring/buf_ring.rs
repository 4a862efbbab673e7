//! The memory through which a [`Ring`](super::Ring) lends its receive buffers to the kernel:
//! a buffer ring (IORING_REGISTER_PBUF_RING, io_uring_register_buf_ring(3), Linux 5.19).
//!
//! The kernel takes buffers from the head, which only it knows; the ring gives them back
//! at the tail, which only it writes: an entry (address, length, buffer id) goes into the
//! slot after the last one published, then the new tail is stored with release ordering,
//! so the kernel, which loads the tail with acquire ordering, never sees a slot before its
//! entry is complete (io_uring_buf_ring_add(3), io_uring_buf_ring_advance(3)). Giving a
//! buffer back is therefore a store into shared memory, not an operation through the ring
//! as IORING_OP_PROVIDE_BUFFERS was: one submission and one completion fewer per receive.
//!
//! INVARIANT: at most `count` buffers are ever lent (each buffer id is given back only after
//! the completion that consumed it), so the slot at the tail was consumed by the kernel
//! before it is written again, and the kernel never reads a slot while it is written.

use std::alloc::{self, Layout};
use std::io;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU16, Ordering};

/// One slot, laid out as the kernel's `struct io_uring_buf` (include/uapi/linux/io_uring.h).
/// The ring's tail lives in the first slot's `resv` field (`struct io_uring_buf_ring`): slot
/// writes never touch `resv`.
#[repr(C)]
struct Slot {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

/// A buffer ring's memory: `count` slots, page aligned, owned until [`BufRing::leak`] or drop.
pub(super) struct BufRing {
    slots: NonNull<Slot>,
    layout: Layout,
    /// A power of two, at most 32768 (io_uring_register_buf_ring(3)).
    count: u16,
    /// The tail as this side wrote it; published by [`BufRing::publish`].
    tail: u16,
}

impl BufRing {
    /// Zeroed memory for `count` slots (a power of two), aligned to the page as the kernel
    /// requires of a ring it does not allocate itself.
    pub(super) fn new(count: u16) -> io::Result<BufRing> {
        if !count.is_power_of_two() || count > 32768 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "buffer ring size must be a power of two"));
        }
        let page = rustix::param::page_size();
        let layout = Layout::from_size_align(usize::from(count) * size_of::<Slot>(), page)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: std::alloc::alloc_zeroed (std docs) requires a layout of non-zero size;
        // count >= 1 (a power of two) and a slot is 16 bytes.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let slots = NonNull::new(raw.cast::<Slot>()).ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        Ok(BufRing { slots, layout, count, tail: 0 })
    }

    /// The address to register (`ring_addr` of `struct io_uring_buf_reg`).
    pub(super) fn addr(&self) -> u64 {
        self.slots.as_ptr() as u64
    }

    pub(super) fn count(&self) -> u16 {
        self.count
    }

    /// Writes the slot after the last one written: buffer `bid` at `addr`, `len` bytes. The
    /// kernel does not see it until [`BufRing::publish`].
    pub(super) fn push(&mut self, addr: *mut u8, len: u32, bid: u16) {
        let index = usize::from(self.tail & (self.count - 1));
        // SAFETY: `index < count`, so the slot lies inside the allocation. By the module's
        // INVARIANT the kernel is not reading this slot (it is past the published tail, which
        // io_uring_buf_ring_add(3) requires of a slot it fills), and
        // the three fields are written through raw pointers, without a reference to memory
        // the kernel shares; `resv` (the tail, in slot 0) is left alone.
        unsafe {
            let slot = self.slots.as_ptr().add(index);
            ptr::addr_of_mut!((*slot).addr).write(addr as u64);
            ptr::addr_of_mut!((*slot).len).write(len);
            ptr::addr_of_mut!((*slot).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Shows the kernel every slot written so far: the release store of the tail
    /// (io_uring_buf_ring_advance(3)).
    pub(super) fn publish(&self) {
        // SAFETY: slot 0's `resv` is a naturally aligned u16 inside the allocation, which
        // lives as long as `self`; the kernel reads it with an atomic acquire load
        // (io_uring_buf_ring_advance(3): "smp_store_release"), and this side only ever
        // accesses it atomically, so an AtomicU16 view of it is sound.
        let tail = unsafe { AtomicU16::from_ptr(ptr::addr_of_mut!((*self.slots.as_ptr()).resv)) };
        tail.store(self.tail, Ordering::Release);
    }

    /// Gives up the memory without freeing it: the kernel may still read it (it was not
    /// unregistered).
    pub(super) fn leak(self) {
        std::mem::forget(self);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: std::alloc::dealloc (std docs) requires memory from the same allocator
        // with the same layout: `slots` came from alloc_zeroed with `layout` and is freed
        // once, here. The owner (`Ring`) drops it only after unregistering it
        // (io_uring_unregister_buf_ring(3)) or destroying the ring whose kernel side
        // referenced it (or leaks it with `leak` instead).
        unsafe { alloc::dealloc(self.slots.as_ptr().cast(), self.layout) }
    }
}
