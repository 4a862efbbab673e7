//! Listening sockets and the shutdown signal every mode watches.

use rustix::event::{poll, PollFd, PollFlags};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// The request to stop, as seen by every thread and every forked child.
///
/// SIGINT and SIGTERM write a byte into a pipe (signal-hook's async-signal-safe handler)
/// and set a flag. The pipe is never drained, so once written its read end stays readable
/// for good: every thread polling it, and every child that inherited it across fork, wakes
/// up. That is the whole broadcast; no thread is needed to relay it. The flag is the cheap
/// check for hot loops in this process. A second signal while draining exits at once.
#[derive(Debug, Clone)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    read: OwnedFd,
    write: OwnedFd,
    flag: Arc<AtomicBool>,
    grace: Duration,
    started: std::sync::OnceLock<Instant>,
    /// [`Shutdown::or_when_readable`]'s other fd, kept open while it is watched.
    _also: Option<OwnedFd>,
}

/// The server's own shutdown signal, once [`Shutdown::install`] made it: what
/// [`Shutdown::begun`] asks.
static INSTALLED: std::sync::OnceLock<Shutdown> = std::sync::OnceLock::new();

impl Shutdown {
    /// Creates the pipe and installs the signal handlers.
    pub fn install(grace: Duration) -> anyhow::Result<Shutdown> {
        let shutdown = Shutdown::new(grace)?;
        let _ = INSTALLED.set(shutdown.clone());
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            // A second signal while the first is being honoured exits at once (status 1).
            signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&shutdown.inner.flag))?;
            signal_hook::flag::register(signal, Arc::clone(&shutdown.inner.flag))?;
            let write = shutdown.inner.write.try_clone()?;
            signal_hook::low_level::pipe::register(signal, write)?;
        }
        Ok(shutdown)
    }

    /// A shutdown signal with no handlers installed (for tests and the in-process lab).
    pub fn new(grace: Duration) -> anyhow::Result<Shutdown> {
        let (read, write) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)?;
        let inner = Inner {
            read,
            write,
            flag: Arc::new(AtomicBool::new(false)),
            grace,
            started: Default::default(),
            _also: None,
        };
        Ok(Shutdown { inner: Arc::new(inner) })
    }

    /// A shutdown signal for one `prefork` worker: it fires on the whole server's shutdown
    /// or once `also` (the worker's retire pipe) becomes readable, so a retired worker
    /// finishes its response and closes its idle keep-alive connection as if the server
    /// were stopping, while the others go on. Its fd is an epoll set holding both
    /// (level-triggered; neither is ever drained, so once ready it stays ready); poll(2)
    /// reports an epoll fd readable while any of its members is. `trigger` still stops
    /// the whole server.
    pub fn or_when_readable(&self, also: OwnedFd) -> io::Result<Shutdown> {
        use rustix::event::epoll;
        let set = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        epoll::add(&set, &self.inner.read, epoll::EventData::new_u64(0), epoll::EventFlags::IN)?;
        epoll::add(&set, &also, epoll::EventData::new_u64(1), epoll::EventFlags::IN)?;
        let inner = Inner {
            read: set,
            write: self.inner.write.try_clone()?,
            flag: Arc::new(AtomicBool::new(self.flagged())),
            grace: self.inner.grace,
            started: Default::default(),
            _also: Some(also),
        };
        Ok(Shutdown { inner: Arc::new(inner) })
    }

    /// Asks every watcher to stop, as a signal would.
    pub fn trigger(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        let _ = rustix::io::write(&self.inner.write, b"x");
    }

    /// The fd that becomes readable, and stays readable, once shutdown is asked.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.inner.read.as_fd()
    }

    /// Whether shutdown was asked. In a forked child only the pipe carries the news, so
    /// this polls it (without blocking) when the flag is not yet set.
    pub fn requested(&self) -> bool {
        if self.inner.flag.load(Ordering::Relaxed) {
            return true;
        }
        let mut fds = [PollFd::new(&self.inner.read, PollFlags::IN)];
        let ready = matches!(poll(&mut fds, Some(&rustix::time::Timespec::default())), Ok(n) if n > 0);
        if ready {
            self.note();
        }
        ready
    }

    /// Whether the server this process belongs to is shutting down (in a forked child
    /// too: the pipe is polled when the flag is not set). False where no signal handlers
    /// were installed.
    pub fn begun() -> bool {
        INSTALLED.get().is_some_and(Shutdown::requested)
    }

    /// Records that the pipe was seen readable (by a caller that polled it itself).
    pub fn note(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        self.inner.started.get_or_init(Instant::now);
    }

    /// The flag alone, for hot paths that also poll [`Shutdown::fd`].
    pub fn flagged(&self) -> bool {
        self.inner.flag.load(Ordering::Relaxed)
    }

    /// When in-flight work must be abandoned: the grace period after shutdown was seen.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.started.get().map(|t| *t + self.inner.grace)
    }

    pub fn grace(&self) -> Duration {
        self.inner.grace
    }
}

/// Which of the fds given to [`wait_readable`] woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    Ready,
    Shutdown,
    Timeout,
}

/// Whether client bytes wait unread in `stream`'s receive queue (a non-blocking peek).
pub(crate) fn has_unread_input(stream: impl AsFd) -> bool {
    let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
    matches!(rustix::net::recv(stream, &mut [0u8; 1], flags), Ok((n, _)) if n > 0)
}

/// Waits until `fd` is readable, shutdown is asked, or `deadline` passes.
pub fn wait_readable(fd: BorrowedFd<'_>, shutdown: &Shutdown, deadline: Option<Instant>) -> io::Result<Wake> {
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::IN), PollFd::from_borrowed_fd(shutdown.fd(), PollFlags::IN)];
    if !poll_until(&mut fds, deadline)? {
        return Ok(Wake::Timeout);
    }
    if !fds[0].revents().is_empty() {
        return Ok(Wake::Ready);
    }
    shutdown.note();
    Ok(Wake::Shutdown)
}

/// The one poll(2) wait: until one of `fds` is ready for the events it asks, or
/// `deadline` passes (`None`: no deadline). An interrupted wait (EINTR) is retried with
/// the time left. Returns whether one is ready (their `revents` say which); false once
/// the deadline has passed, without polling if it already had, so a caller looping until
/// a deadline stops there however busy its descriptors are.
pub(crate) fn poll_until(fds: &mut [PollFd<'_>], deadline: Option<Instant>) -> io::Result<bool> {
    loop {
        let timeout = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => Some(to_timespec(left)),
                _ => return Ok(false),
            },
            None => None,
        };
        match poll(fds, timeout.as_ref()) {
            Ok(n) => return Ok(n > 0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A poll(2) timeout from a `Duration`.
fn to_timespec(d: Duration) -> rustix::time::Timespec {
    rustix::time::Timespec { tv_sec: d.as_secs() as i64, tv_nsec: i64::from(d.subsec_nanos()) }
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

#[cfg(test)]
mod poll_tests {
    use super::poll_until;
    use rustix::event::{PollFd, PollFlags};
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    /// (input waiting, deadline from now, ready expected, at least this long waited, at
    /// most this long): a passed deadline never polls, so even a ready descriptor is not
    /// reported; a ready one is reported at once; a quiet one waits out its deadline.
    #[test]
    fn poll_until_reports_readiness_within_its_deadline() {
        let ms = Duration::from_millis;
        let cases: [(bool, Option<i64>, bool, Duration, Duration); 5] = [
            (true, Some(-1), false, ms(0), ms(50)),
            (false, Some(-1), false, ms(0), ms(50)),
            (true, Some(2000), true, ms(0), ms(1000)),
            (true, None, true, ms(0), ms(1000)),
            (false, Some(100), false, ms(100), ms(2000)),
        ];
        for (input, deadline, ready, least, most) in cases {
            let (mut client, server) = UnixStream::pair().unwrap();
            if input {
                client.write_all(b"x").unwrap();
            }
            let start = Instant::now();
            let deadline = deadline.map(|d| match u64::try_from(d) {
                Ok(d) => start + ms(d),
                Err(_) => start - ms(1),
            });
            let mut fds = [PollFd::new(&server, PollFlags::IN)];
            let got = poll_until(&mut fds, deadline).unwrap();
            let took = start.elapsed();
            let case = format!("input {input}, deadline {deadline:?}");
            assert_eq!(got, ready, "{case}");
            assert_eq!(!fds[0].revents().is_empty(), ready, "{case}: revents");
            assert!(took >= least && took <= most, "{case}: took {took:?}");
        }
    }
}
