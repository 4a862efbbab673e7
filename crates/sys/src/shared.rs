//! Counters shared by a process and every child it forks afterwards: one anonymous
//! `MAP_SHARED` mapping, made before any fork, so `prefork` workers and `fork` children
//! add to the very counters their parent reads (the server's metrics, and the access log's
//! reopen generation).
//!
//! Atomics in shared memory are the same atomics across processes: `AtomicU64` is
//! lock-free on every target Spidey builds for (it has no fallback lock that a copy of the
//! process could not see), and the mapping is the same physical pages in each process
//! (mmap(2): "Updates to the mapping are visible to other processes mapping the same
//! region"; fork(2): "memory mappings ... MAP_SHARED are shared" with the child).

use std::io;
use std::sync::atomic::AtomicU64;

/// `len` zeroed counters, shared with every process forked from now on and never unmapped
/// (they live as long as the process).
pub fn shared_counters(len: usize) -> io::Result<&'static [AtomicU64]> {
    let bytes = len.checked_mul(std::mem::size_of::<AtomicU64>()).filter(|&b| b > 0).ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "shared_counters: length must be positive and fit in memory")
    })?;
    // SAFETY: mmap(2) with a null address, MAP_SHARED | MAP_ANONYMOUS, fd -1 and offset 0
    // creates a fresh mapping the kernel places where nothing else lives; it touches no
    // memory of ours. Failure is MAP_FAILED, checked below.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the mapping is `bytes` long, readable and writable, page-aligned (mmap(2):
    // the address is a multiple of the page size, more than `AtomicU64`'s alignment), and
    // "initialized to zero" (mmap(2), MAP_ANONYMOUS), which is a valid `AtomicU64` (its
    // layout is that of `u64`, std docs). It is never unmapped, so `'static` holds, and it
    // is only ever accessed through these atomics (interior mutability), so shared
    // references to it are sound in this process and in every forked copy.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast::<AtomicU64>(), len) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn counters_start_at_zero_and_count() {
        let c = shared_counters(100).unwrap();
        assert!(c.iter().all(|a| a.load(Ordering::Relaxed) == 0));
        c[7].fetch_add(3, Ordering::Relaxed);
        assert_eq!(c[7].load(Ordering::Relaxed), 3);
        assert!(shared_counters(0).is_err());
    }
}
