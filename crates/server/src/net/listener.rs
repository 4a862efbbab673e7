//! The server's listening sockets: bound with SO_REUSEPORT (siblings on one port), tuned
//! once so every accepted socket inherits the options.

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;

/// The server's listening socket, and how to bind siblings on the same port.
///
/// Every listener is bound with SO_REUSEPORT, so modes that want one listener per worker
/// (`event`, `uring`) bind siblings with [`Listener::bind_sibling`] and the kernel
/// spreads new connections across them. Only processes of the same user can join the group.
/// An IPv6 listener is dual-stack (IPV6_V6ONLY off): `--addr ::` takes IPv4 clients too.
#[derive(Debug)]
pub struct Listener {
    pub socket: TcpListener,
    /// The bound address, with the real port when `--port 0` was asked.
    pub addr: SocketAddr,
    pub backlog: i32,
    pub origin: Origin,
    /// The TCP_NOTSENT_LOWAT set by [`Listener::tune`] (0: none), for siblings too.
    pub notsent_lowat: u32,
}

/// Where a [`Listener`] came from, which decides what a sibling is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Bound here with SO_REUSEPORT: siblings are new sockets on the same port.
    Bound,
    /// Passed by a service manager (`crate::activation`): siblings share its one queue.
    Inherited,
}

impl Listener {
    ///
    /// SO_REUSEPORT would let a second server on the same port join this one's group
    /// silently, so a fixed port is first probed with a plain bind that fails if anyone
    /// listens there already.
    pub fn bind(addr: SocketAddr, backlog: i32) -> anyhow::Result<Listener> {
        // A bind that fails (in use, no such address, a privileged port) is a mistake in
        // the configuration: one line, exit code 2.
        let failed = |e: io::Error| spidey_config::ConfigError(format!("failed to bind {addr}: {e}"));
        if addr.port() != 0 {
            probe_free(addr).map_err(failed)?;
        }
        let socket = bind_reuseport(addr, backlog).map_err(failed)?;
        let addr = socket.local_addr()?;
        Ok(Listener { socket, addr, backlog, origin: Origin::Bound, notsent_lowat: 0 })
    }

    /// Sets the per-connection TCP options every mode wants on the listener, once: Linux
    /// copies a listener's TCP options into each socket it accepts (the child socket is a
    /// clone of the listener), so no accepted connection needs a setsockopt of its own.
    /// - TCP_NODELAY: responses are written whole, and Nagle would only delay their last
    ///   segment.
    /// - TCP_NOTSENT_LOWAT `notsent_lowat` (0 leaves the kernel's default): a send stops
    ///   queueing, and the socket stops polling writable, while that many bytes already
    ///   written are still unsent. A file body then leaves in steps of about that size,
    ///   each sendfile(2) moving bytes the peer's window has room for, instead of one call
    ///   queueing the whole file for the kernel to push out later from whatever context
    ///   the acknowledgements arrive in (over loopback, the client's). See `--notsent-lowat`.
    ///
    /// Siblings from [`Listener::bind_sibling`] get the same options.
    pub fn tune(&mut self, notsent_lowat: u32) -> io::Result<()> {
        self.notsent_lowat = notsent_lowat;
        tune_listener(&self.socket, notsent_lowat)
    }

    /// Another non-blocking listener on the same address and port: a new SO_REUSEPORT
    /// socket, or for a passed socket a duplicate of it (close-on-exec, as dup(2) with
    /// F_DUPFD_CLOEXEC makes it).
    pub fn bind_sibling(&self) -> io::Result<TcpListener> {
        match self.origin {
            Origin::Bound => {
                let socket = bind_reuseport(self.addr, self.backlog)?;
                tune_listener(&socket, self.notsent_lowat)?;
                Ok(socket)
            }
            Origin::Inherited => self.socket.try_clone(), // the same socket: tuned already
        }
    }
}

fn probe_free(addr: SocketAddr) -> io::Result<()> {
    let probe = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    dual_stack(&probe, addr)?;
    probe.set_reuse_address(true)?;
    probe.bind(&addr.into())
}

fn bind_reuseport(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    // socket2 creates sockets close-on-exec, so CGI children never inherit a listener.
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    dual_stack(&socket, addr)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(socket.into())
}

/// Turns IPV6_V6ONLY off on an IPv6 socket (whatever the sysctl `net.ipv6.bindv6only`
/// says), so `::` also accepts IPv4 clients, seen as `::ffff:a.b.c.d`.
fn dual_stack(socket: &Socket, addr: SocketAddr) -> io::Result<()> {
    if addr.is_ipv6() {
        socket.set_only_v6(false)?;
    }
    Ok(())
}

/// The options of [`Listener::tune`], on one listening socket.
fn tune_listener(socket: &TcpListener, notsent_lowat: u32) -> io::Result<()> {
    socket2::SockRef::from(socket).set_nodelay(true)?;
    if notsent_lowat > 0 {
        spidey_sys::tcp::set_notsent_lowat(socket.as_fd(), notsent_lowat)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Listener;
    use std::net::{Ipv4Addr, SocketAddr, TcpStream};
    use std::os::fd::AsFd;

    /// What `Listener::tune` sets must reach every accepted connection, of the listener
    /// and of its siblings, without a setsockopt per connection (Linux clones the
    /// listener's TCP options into the sockets it accepts): the table is (lowat asked,
    /// lowat each accepted socket must have), where 0 leaves the kernel's own default.
    #[test]
    fn accepted_sockets_inherit_nodelay_and_notsent_lowat() {
        let default = {
            let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            spidey_sys::tcp::notsent_lowat(l.as_fd()).unwrap()
        };
        for (asked, want) in [(128 << 10, 128 << 10), (16384, 16384), (0, default)] {
            let mut listener = Listener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), 16).unwrap();
            listener.tune(asked).unwrap();
            let sibling = listener.bind_sibling().unwrap();
            for socket in [&listener.socket, &sibling] {
                // SO_REUSEPORT spreads connections over the group: connect until this
                // socket has accepted one.
                let accepted = loop {
                    let _client = TcpStream::connect(listener.addr).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    if let Ok((stream, _)) = socket.accept() {
                        break stream;
                    }
                };
                assert!(accepted.nodelay().unwrap(), "TCP_NODELAY (asked lowat {asked})");
                assert_eq!(spidey_sys::tcp::notsent_lowat(accepted.as_fd()).unwrap(), want, "asked {asked}");
            }
        }
    }
}
