//! Detached threads started with pthread_create(3) itself, for `thread` mode's thread per
//! connection.
//!
//! `std::thread::Builder::spawn` gives every thread things a short-lived detached thread
//! never uses: a signal stack for its stack-overflow message (`sched_getaffinity`,
//! `gettid`, `mmap`, `mprotect` and two `sigaltstack` calls as it starts, `sigaltstack` and
//! `munmap` as it ends), a `Thread` handle and a packet for its result (two `Arc`s), and
//! with a name a `prctl` and a `CString`. Per connection that is 8 to 9 system calls and
//! several allocations that the C reference server (`bench/ref/thread.c`) does not make.
//!
//! What stays as with std: the stack size asked for, glibc's guard page below it (an
//! overflow still ends the process, by SIGSEGV, without std's message), thread-locals and
//! their destructors (registered with glibc, which runs them at the thread's end), the
//! creator's signal mask, and a panic that ends the thread alone, after its captures are
//! dropped (the panic hook has printed it).

use std::ffi::c_void;
use std::io;
use std::panic::AssertUnwindSafe;

/// What the new thread is given: its data and what to run on it.
struct Start<T> {
    data: T,
    run: fn(T),
}

/// Starts a detached thread with a stack of `stack_size` bytes that runs `run(data)` and
/// ends. If no thread can be started (EAGAIN: out of threads or memory), `data` comes back
/// with the error, so nothing it owns (a connection) is lost.
pub fn spawn_detached<T: Send + 'static>(stack_size: usize, data: T, run: fn(T)) -> Result<(), (io::Error, T)> {
    let start = Box::into_raw(Box::new(Start { data, run }));
    match create(stack_size, start) {
        Ok(()) => Ok(()),
        Err(e) => {
            // SAFETY: pthread_create failed, so no thread was started and `start` is still
            // the only pointer to the box made above: it is taken back exactly once.
            let start = unsafe { Box::from_raw(start) };
            Err((e, start.data))
        }
    }
}

/// The new thread's entry: takes its `Start` back and runs it, catching a panic, which
/// must not unwind into pthread's C frames.
extern "C" fn entry<T>(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is the `Box<Start<T>>` that `spawn_detached::<T>` leaked and passed to
    // pthread_create, which started this thread with it; only this thread takes it back,
    // once (spawn_detached reclaims it only when no thread started).
    let start = unsafe { Box::from_raw(arg.cast::<Start<T>>()) };
    let Start { data, run } = *start;
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| run(data)));
    std::ptr::null_mut()
}

fn create<T>(stack_size: usize, start: *mut Start<T>) -> io::Result<()> {
    let check = |rc: libc::c_int| if rc == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(rc)) };
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: pthread_attr_init(3) initialises the attribute object `attr` points to, which
    // lives on this stack frame until pthread_attr_destroy below.
    check(unsafe { libc::pthread_attr_init(attr.as_mut_ptr()) })?;
    let attr = attr.as_mut_ptr();
    let created = (|| {
        // SAFETY: `attr` was initialised above; pthread_attr_setstacksize(3) and
        // pthread_attr_setdetachstate(3) only set fields of it (a stack size under
        // PTHREAD_STACK_MIN is refused with EINVAL, not undefined behaviour).
        check(unsafe { libc::pthread_attr_setstacksize(attr, stack_size) })?;
        // SAFETY: as above.
        check(unsafe { libc::pthread_attr_setdetachstate(attr, libc::PTHREAD_CREATE_DETACHED) })?;
        let mut thread: libc::pthread_t = 0;
        // SAFETY: pthread_create(3) starts `entry::<T>` with `start`, a pointer to a live
        // `Start<T>` whose ownership passes to the new thread when this returns 0; `T:
        // Send` (spawn_detached's bound) makes moving its data to that thread sound. The
        // thread is detached, so nobody joins it and `thread` is not used again.
        check(unsafe { libc::pthread_create(&mut thread, attr, entry::<T>, start.cast()) })
    })();
    // SAFETY: `attr` was initialised by pthread_attr_init and is destroyed once; the
    // thread, if started, has its own copy of the attributes (pthread_attr_destroy(3)).
    unsafe { libc::pthread_attr_destroy(attr) };
    created
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// The thread runs with its data and its own thread-locals, whose destructors run when
    /// it ends; a panic on it ends it alone and still drops what it owned.
    #[test]
    fn a_detached_thread_runs_ends_and_drops() {
        struct Dropped(mpsc::Sender<&'static str>);
        impl Drop for Dropped {
            fn drop(&mut self) {
                let _ = self.0.send("dropped");
            }
        }
        thread_local! { static LOCAL: std::cell::RefCell<Option<Dropped>> = const { std::cell::RefCell::new(None) }; }
        let (tx, rx) = mpsc::channel();
        spawn_detached(256 * 1024, (tx.clone(), Dropped(tx.clone())), |(tx, owned)| {
            tx.send("ran").unwrap();
            LOCAL.with(|l| *l.borrow_mut() = Some(owned));
        })
        .map_err(|(e, _)| e)
        .unwrap();
        assert_eq!(rx.recv().unwrap(), "ran");
        assert_eq!(rx.recv().unwrap(), "dropped", "the thread-local's destructor ran as the thread ended");

        spawn_detached(256 * 1024, Dropped(tx), |owned| {
            let _owned = owned;
            panic!("a connection thread's panic (expected by this test)");
        })
        .map_err(|(e, _)| e)
        .unwrap();
        assert_eq!(rx.recv().unwrap(), "dropped", "unwinding dropped the panicking thread's data");
    }

    /// A stack too small to start a thread with is refused, and the data comes back.
    #[test]
    fn a_refused_thread_gives_its_data_back() {
        let refused = spawn_detached(1, String::from("the connection"), |_| unreachable!("no thread starts"));
        let (e, data) = refused.expect_err("a 1-byte stack");
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
        assert_eq!(data, "the connection");
    }
}
