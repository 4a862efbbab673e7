//! The account a server drops to once it has bound its ports (`--user`): looked up through
//! the system's name service (getpwnam_r(3), so NSS sources such as LDAP count), and become
//! by the whole process: supplementary groups (initgroups(3)), then the group, then the
//! user, in that order (after setuid the others would be refused). glibc applies each
//! set*id call to every thread of the process (nptl(7), "all of the threads in a process
//! are caused to change credentials"), so threads started earlier drop too.

use std::ffi::CString;
use std::io;

/// An account of the system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// The account named `name`, if there is one.
pub fn lookup(name: &str) -> io::Result<Option<Account>> {
    let c_name = CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the name"))?;
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: `passwd` is plain data that getpwnam_r(3) fills; an all-zero value (null
        // pointers, zero ids) is a valid one to hand it.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: getpwnam_r(3) reads the NUL-terminated `c_name`, writes the entry into
        // `pwd` with its strings in `buf` (`buf.len()` bytes, ours for the call) and sets
        // `found` to `&pwd` or to null; it keeps no pointer after returning.
        let err =
            unsafe { libc::getpwnam_r(c_name.as_ptr(), &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
        if err == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
        if found.is_null() {
            return Ok(None);
        }
        return Ok(Some(Account { name: name.to_string(), uid: pwd.pw_uid, gid: pwd.pw_gid }));
    }
}

/// Becomes `account` for good: its groups, its group, then its user, for every thread; then
/// checks that root cannot be had back.
pub fn become_account(account: &Account) -> io::Result<()> {
    let name = CString::new(account.name.as_str())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the name"))?;
    let check = |r: libc::c_int| if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) };
    // SAFETY: initgroups(3) reads the NUL-terminated `name` and takes a plain gid; it
    // touches no memory of ours.
    check(unsafe { libc::initgroups(name.as_ptr(), account.gid) })?;
    // SAFETY: setgid(2) and setuid(2) take plain ids and touch no memory; glibc's wrappers
    // apply them to every thread (nptl(7)).
    check(unsafe { libc::setgid(account.gid) })?;
    // SAFETY: as above.
    check(unsafe { libc::setuid(account.uid) })?;
    // SAFETY: as above; this must fail once root's user id is gone.
    if account.uid != 0 && unsafe { libc::setuid(0) } == 0 {
        return Err(io::Error::other("setuid(0) still succeeds after dropping privileges"));
    }
    Ok(())
}

/// The process's effective user id.
pub fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}
