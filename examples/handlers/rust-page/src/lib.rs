//! An in-process handler for Spidey written in Rust: the same 102,400-byte dynamic page
//! as examples/handlers/page.c, behind the C ABI of include/spidey_handler.h.
//!
//! Panics are caught at the `extern "C"` boundary with `catch_unwind` and turned into an
//! error code (Spidey answers 500); unwinding into Spidey's C-ABI call would abort it.
//! A query of `panic` panics on purpose, `fail` returns an error, and `burn=MICROS` spins on
//! the CPU for that many microseconds (at most one second) and answers a one-line text
//! instead of the page: the CPU-bound request of the mixed-load experiments. It counts the
//! thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), so on a shared core it takes longer
//! but still burns MICROS of CPU, as Spidey's own `--cpu-work` does.

use std::ffi::{c_int, c_void};
use std::fmt::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

const ABI_VERSION: u32 = 1;
const PAGE_SIZE: usize = 102_400;

#[repr(C)]
pub struct SpideyStr {
    ptr: *const u8,
    len: usize,
}

#[repr(C)]
pub struct SpideyHeader {
    name: SpideyStr,
    value: SpideyStr,
}

#[repr(C)]
pub struct SpideyRequest {
    method: SpideyStr,
    target: SpideyStr,
    path: SpideyStr,
    query: SpideyStr,
    headers: *const SpideyHeader,
    header_count: usize,
    body: *const u8,
    body_len: usize,
    peer: SpideyStr,
}

#[repr(C)]
pub struct SpideyResponse {
    ctx: *mut c_void,
    set_status: extern "C" fn(*mut c_void, c_int),
    add_header: extern "C" fn(*mut c_void, *const u8, usize, *const u8, usize) -> c_int,
    write: extern "C" fn(*mut c_void, *const u8, usize) -> c_int,
}

impl SpideyStr {
    /// # Safety
    /// `ptr` must point at `len` readable bytes for the lifetime chosen (the ABI guarantees
    /// this for the duration of `spidey_handle`).
    unsafe fn bytes<'a>(&self) -> &'a [u8] {
        if self.ptr.is_null() || self.len == 0 {
            return &[];
        }
        // SAFETY: guaranteed by the caller, see above.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// The longest `burn=MICROS` accepted: one second.
const MAX_BURN_MICROS: u64 = 1_000_000;

/// What a query asks of the CPU.
#[derive(Debug, PartialEq, Eq)]
enum Burn {
    /// Not a `burn=` query: answer the page.
    No,
    Micros(u64),
    /// `burn=` with a missing, malformed or too large number.
    Invalid,
}

/// Parses `burn=MICROS` (at most [`MAX_BURN_MICROS`]).
fn burn_micros(query: &[u8]) -> Burn {
    let Some(digits) = query.strip_prefix(b"burn=") else { return Burn::No };
    match std::str::from_utf8(digits).ok().and_then(|d| d.parse::<u64>().ok()) {
        Some(n) if n <= MAX_BURN_MICROS => Burn::Micros(n),
        _ => Burn::Invalid,
    }
}

/// The calling thread's CPU time so far, in nanoseconds.
fn thread_cpu_nanos() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Spins until this thread has used `micros` more microseconds of CPU, doing work the
/// optimiser cannot remove.
fn burn(micros: u64) -> u64 {
    let until = thread_cpu_nanos() + micros * 1000;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while thread_cpu_nanos() < until {
        for _ in 0..256 {
            x = std::hint::black_box(x.rotate_left(5) ^ x.wrapping_mul(0x2545_f491_4f6c_dd1d));
        }
    }
    x
}

/// The page for `path`, numbered `n`: exactly [`PAGE_SIZE`] bytes.
fn page(path: &[u8], n: u64) -> Vec<u8> {
    let tail = "</table></body></html>\n";
    let path = String::from_utf8_lossy(&path[..path.len().min(200)]);
    let mut s = String::with_capacity(PAGE_SIZE);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html><head><title>page {n}</title></head><body>\n<h1>Dynamic page {n} for {path}</h1>\n<table>\n"
    );
    let mut row: u64 = 0;
    while s.len() + 64 + tail.len() < PAGE_SIZE {
        let _ =
            writeln!(s, "<tr><td>{row:08}</td><td>{:08x}</td></tr>", (row.wrapping_mul(2654435761) + n) & 0xffff_ffff);
        row += 1;
    }
    while s.len() + tail.len() < PAGE_SIZE {
        s.push(' ');
    }
    s.push_str(tail);
    s.into_bytes()
}

#[no_mangle]
pub extern "C" fn spidey_handler_abi_version() -> u32 {
    ABI_VERSION
}

/// # Safety
/// Called by Spidey with pointers valid for the duration of the call, per the header.
#[no_mangle]
pub unsafe extern "C" fn spidey_handle(req: *const SpideyRequest, res: *const SpideyResponse) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: Spidey passes valid, aligned, non-null pointers that live for this call.
        let (req, res) = unsafe { (&*req, &*res) };
        // SAFETY: the ABI makes every string valid for the duration of the call.
        let (path, query) = unsafe { (req.path.bytes(), req.query.bytes()) };
        match query {
            b"panic" => panic!("asked to panic"),
            b"fail" => return 1,
            _ => {}
        }
        let text = b"text/plain; charset=utf-8";
        match burn_micros(query) {
            Burn::No => {}
            Burn::Invalid => {
                let body = format!("burn takes a whole number of microseconds up to {MAX_BURN_MICROS}\n");
                (res.set_status)(res.ctx, 400);
                if (res.add_header)(res.ctx, b"Content-Type".as_ptr(), 12, text.as_ptr(), text.len()) != 0 {
                    return 1;
                }
                return (res.write)(res.ctx, body.as_ptr(), body.len());
            }
            Burn::Micros(micros) => {
                burn(micros);
                let body = format!("burned {micros} us\n");
                (res.set_status)(res.ctx, 200);
                if (res.add_header)(res.ctx, b"Content-Type".as_ptr(), 12, text.as_ptr(), text.len()) != 0 {
                    return 1;
                }
                return (res.write)(res.ctx, body.as_ptr(), body.len());
            }
        }
        let body = page(path, COUNTER.fetch_add(1, Ordering::Relaxed) + 1);
        let ct = b"text/html; charset=utf-8";
        (res.set_status)(res.ctx, 200);
        if (res.add_header)(res.ctx, b"Content-Type".as_ptr(), 12, ct.as_ptr(), ct.len()) != 0 {
            return 1;
        }
        (res.write)(res.ctx, body.as_ptr(), body.len())
    }));
    outcome.unwrap_or(2)
}

#[cfg(test)]
mod tests {
    #[test]
    fn burn_query_table() {
        use super::Burn::{Invalid, Micros, No};
        let cases: &[(&[u8], super::Burn)] = &[
            (b"", No),
            (b"x=1", No),
            (b"burn=0", Micros(0)),
            (b"burn=1000", Micros(1000)),
            (b"burn=1000000", Micros(1_000_000)),
            (b"burn=1000001", Invalid),
            (b"burn=", Invalid),
            (b"burn=-1", Invalid),
            (b"burn=1e3", Invalid),
            (b"burn=99999999999999999999999", Invalid),
        ];
        for (query, want) in cases {
            assert_eq!(super::burn_micros(query), *want, "{}", String::from_utf8_lossy(query));
        }
    }

    #[test]
    fn page_is_102400_bytes() {
        for path in [&b"/"[..], b"/app/some/longer/path", &[b'x'; 500]] {
            assert_eq!(super::page(path, 7).len(), super::PAGE_SIZE);
        }
    }
}
