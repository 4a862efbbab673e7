//! TUN devices: a network interface whose packets a process reads and writes as whole IP
//! packets on a file descriptor (the kernel's `Documentation/networking/tuntap.rst`). The
//! lab's delay line joins two network namespaces through a pair of them.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;

/// Opens `/dev/net/tun` and attaches it to a new TUN interface named `name` (IFF_TUN, no
/// packet information header: each read returns one IP packet, each write sends one). The
/// interface lives as long as the returned file; it starts down and without an address.
pub fn open(name: &str) -> io::Result<File> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {name:?} must be 1 to {} bytes without NUL", libc::IFNAMSIZ - 1),
        ));
    }
    let file = OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
    // SAFETY: `ifreq` is a C struct of integers, byte arrays and a union of such (netdevice(7));
    // all-zero bytes are a valid value of it (an empty name, zero flags).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    // The name stays NUL-terminated: it is shorter than IFNAMSIZ and the rest is zero.
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF takes a pointer to a `struct ifreq` it reads the name and flags from
    // and writes the chosen name back into (tuntap.rst, "Network device allocation");
    // `req` is a live, initialised ifreq for the whole call, and `file` is an open
    // descriptor of /dev/net/tun.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut libc::ifreq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}
