//! Socket activation (systemd's `ListenStream=`, or anything speaking the LISTEN_FDS
//! protocol): serve on the listening socket the service manager passed at fd 3 instead of
//! binding one. `spidey_sys::activation` takes the descriptor (checking `LISTEN_PID`,
//! unsetting the variables, setting close-on-exec); this checks that it is what Spidey can
//! serve on: one listening TCP socket, IPv4 or IPv6.
//!
//! With a passed socket `--addr` and `--port` are refused (exit 2) rather than ignored: the
//! address is the unit file's, and a command line naming another would be misleading. The
//! modes that want a socket per worker (`prefork`, `event`, `uring`) share the passed one
//! (duplicated descriptors, one accept queue) instead of binding SO_REUSEPORT siblings,
//! which the manager's socket may not allow.

use crate::net::{Listener, Origin};
use rustix::net::{sockopt, SocketType};
use spidey_config::ConfigError;
use std::os::fd::OwnedFd;

/// The passed listener, if the service manager passed one to this process.
/// `addr_or_port_given`: whether the command line named an address or port.
pub(crate) fn take(addr_or_port_given: bool) -> Result<Option<Listener>, ConfigError> {
    let mut fds =
        spidey_sys::activation::take_listen_fds().map_err(|e| ConfigError(format!("socket activation: {e}")))?;
    let fd = match fds.len() {
        0 => return Ok(None),
        1 => fds.remove(0),
        n => {
            let why = format!("socket activation: {n} sockets passed (LISTEN_FDS={n}); spidey serves one (for IPv4 and IPv6 at once, pass one [::]:PORT socket)");
            return Err(ConfigError(why));
        }
    };
    if addr_or_port_given {
        return Err(ConfigError("--addr and --port cannot be used with socket activation (LISTEN_FDS): the socket passed at fd 3 is already bound".into()));
    }
    listener(fd).map(Some).map_err(|why| ConfigError(format!("socket activation: the socket passed at fd 3 {why}")))
}

fn listener(fd: OwnedFd) -> Result<Listener, String> {
    if !matches!(sockopt::socket_type(&fd), Ok(SocketType::STREAM)) {
        return Err("is not a stream socket".into());
    }
    if !sockopt::socket_acceptconn(&fd).unwrap_or(false) {
        return Err("is not listening (ListenStream= with Accept=no is needed)".into());
    }
    let socket = socket2::Socket::from(fd);
    let addr = socket.local_addr().ok().and_then(|a| a.as_socket()).ok_or("is not a TCP socket (IPv4 or IPv6)")?;
    socket.set_nonblocking(true).map_err(|e| format!("cannot be made non-blocking: {e}"))?;
    Ok(Listener { socket: socket.into(), addr, backlog: 0, origin: Origin::Inherited, notsent_lowat: 0 })
}
