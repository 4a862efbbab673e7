//! Test support (feature `test-support`, off by default, so the production binary never
//! carries it): run one child process as if the kernel had no io_uring, without touching the
//! machine-wide `kernel.io_uring_disabled` sysctl. Tests use it to check that `--mode uring`
//! refuses to start, and names `event`, when io_uring_setup(2) fails.
//!
//! Soundness: the filter program is built in the parent, before fork, into a fixed-size
//! array the `pre_exec` closure owns. In the child the closure only points a stack
//! `sock_fprog` at that array and makes two prctl(2) system calls: no allocation, no lock, as
//! the safety contract of `std::os::unix::process::CommandExt::pre_exec` requires of code run
//! between fork and execve. seccomp(2): with SECCOMP_MODE_FILTER the kernel copies the
//! program, and PR_SET_NO_NEW_PRIVS first lets an unprivileged process install it.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The architecture the filter answers for (linux/audit.h: `EM_* | __AUDIT_ARCH_64BIT |
/// __AUDIT_ARCH_LE`); a system call made under another ABI is allowed, not misread.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000; // AUDIT_ARCH_AARCH64

const fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

const fn jump_eq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16, jt, jf, k }
}

/// Makes io_uring_setup(2) fail with `errno` (EPERM is what `kernel.io_uring_disabled=2`
/// gives, ENOSYS what a kernel built without io_uring gives) in the process `cmd` spawns;
/// every other system call is allowed. Only io_uring_setup is denied: without a ring, no
/// other io_uring call has anything to act on.
///
/// The filter is installed between fork and execve and is inherited across execve(2) (and
/// by any child the program forks); it cannot be removed. x32 system calls on x86_64 (the
/// number with bit 30 set) are not matched; Spidey is a native 64-bit binary.
///
/// Panics if `errno` is not in 1..=4095.
pub fn deny_io_uring_setup(cmd: &mut Command, errno: i32) -> &mut Command {
    assert!((1..=4095).contains(&errno), "errno {errno} is not in 1..=4095");
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let ret = libc::BPF_RET | libc::BPF_K;
    let mut filter = [
        stmt(load, std::mem::offset_of!(libc::seccomp_data, arch) as u32),
        jump_eq(AUDIT_ARCH, 0, 3), // another ABI: allow
        stmt(load, std::mem::offset_of!(libc::seccomp_data, nr) as u32),
        jump_eq(libc::SYS_io_uring_setup as u32, 0, 1),
        stmt(ret, libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
    ];
    let install = move || -> io::Result<()> {
        let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() };
        // prctl is variadic and the kernel reads unsigned longs: pass them at that width.
        let (one, zero): (libc::c_ulong, libc::c_ulong) = (1, 0);
        // SAFETY: prctl(2) PR_SET_NO_NEW_PRIVS takes integers only (arguments 3 to 5 must be
        // 0); it touches no memory.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, one, zero, zero, zero) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mode = libc::SECCOMP_MODE_FILTER as libc::c_ulong;
        // SAFETY: prctl(2) PR_SET_SECCOMP / seccomp(2) SECCOMP_MODE_FILTER reads a
        // `struct sock_fprog` and the `len` instructions it points to; both live for the
        // call (`prog` on this stack, `filter` in the closure) and the kernel copies them.
        if unsafe { libc::prctl(libc::PR_SET_SECCOMP, mode, &prog as *const libc::sock_fprog) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: `pre_exec` (std docs) runs `install` in the forked child before execve(2), so it
    // must be async-signal-safe and must not allocate or take locks: it only builds a struct
    // on its stack, makes raw prctl(2) calls and reads errno (last_os_error does not allocate).
    unsafe { cmd.pre_exec(install) }
}
