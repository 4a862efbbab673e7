//! `--redirect-http PORT`: a plain-HTTP listener that answers every request with
//! `308 Permanent Redirect` to the same path and query over HTTPS.
//!
//! It is small and apart from the modes, the same in all of them: one thread per listener
//! blocks in accept(2), and every connection gets a thread of its own (at most
//! [`MAX_CONNS`] at once; beyond that a new connection is closed unanswered), which reads
//! one request head of at most [`MAX_HEAD`] bytes within [`DEADLINE`] (all reads
//! together), writes the answer and closes. No body is read, nothing is logged.
//!
//! In the forking modes (`fork`, `prefork`) the master must stay single-threaded to fork,
//! so these threads run in a child process forked at start, which closes its copies of
//! the server's listeners and dies with the master (PR_SET_PDEATHSIG, SIGKILL); in every
//! other mode they run in the server's own process.
//!
//! The `Location` is `https://HOST:PORT/PATH`: HOST is the request's `Host` without its
//! port (the address the connection came in on when there is none), checked to be a name
//! or an IP literal, so no byte of it can end the field; PORT is the HTTPS listener's,
//! left out when it is 443. A request target that is not a path (`*`, absolute form) or a
//! `Host` that is not a host is 400.

use crate::net::Listener;
use spidey_http::{parse, HeaderSlots, Limits, Parsed};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most connections answered at once.
pub(crate) const MAX_CONNS: usize = 256;
/// The largest request head read.
pub(crate) const MAX_HEAD: usize = 8192;

/// The parser's limits here: the head within [`MAX_HEAD`], a few fields.
const LIMITS: Limits = Limits { max_request_line: MAX_HEAD, max_head: MAX_HEAD, max_headers: 64 };
/// How long a connection may take to send its head and take the answer.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);

/// The bound redirect listeners, not yet answering.
#[derive(Debug)]
pub(crate) struct Redirect {
    listeners: Vec<Listener>,
}

/// Binds `port` on each of `addrs` (127.0.0.1 if none), as `--addr` and `--port` do.
pub(crate) fn bind(addrs: &[IpAddr], port: u16, backlog: i32) -> anyhow::Result<Redirect> {
    Ok(Redirect { listeners: crate::listen::bind_all(addrs, port, backlog)? })
}

impl Redirect {
    pub(crate) fn addrs(&self) -> Vec<SocketAddr> {
        self.listeners.iter().map(|l| l.addr).collect()
    }

    /// Starts answering, redirecting to `tls_port`: in threads of this process, or when
    /// `fork` in a child process that first drops its copies of `server_listeners`.
    pub(crate) fn start(self, tls_port: u16, fork: bool, server_listeners: &mut Vec<Listener>) -> anyhow::Result<()> {
        let sockets = self
            .listeners
            .into_iter()
            .map(|l| {
                l.socket.set_nonblocking(false)?;
                Ok(l.socket)
            })
            .collect::<std::io::Result<Vec<TcpListener>>>()?;
        if !fork {
            for socket in sockets {
                spawn("spidey-redirect", move || accept_loop(socket, tls_port))?;
            }
            return Ok(());
        }
        let parent = rustix::process::getpid();
        match spidey_sys::fork()? {
            spidey_sys::Fork::Parent { .. } => Ok(()),
            spidey_sys::Fork::Child => {
                drop(std::mem::take(server_listeners));
                let dies = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
                if dies.is_err() || rustix::process::getppid() != Some(parent) {
                    spidey_sys::exit_immediately(0);
                }
                let mut sockets = sockets.into_iter();
                let first = sockets.next().expect("bind_all binds at least one");
                for socket in sockets {
                    if spawn("spidey-redirect", move || accept_loop(socket, tls_port)).is_err() {
                        spidey_sys::exit_immediately(1);
                    }
                }
                accept_loop(first, tls_port);
                spidey_sys::exit_immediately(0)
            }
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new().name(name.into()).stack_size(128 << 10).spawn(f).map(drop)
}

fn accept_loop(socket: TcpListener, tls_port: u16) {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let Ok((stream, _)) = socket.accept() else {
            // EMFILE and the like: wait rather than spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNS {
            active.fetch_sub(1, Ordering::AcqRel);
            continue; // dropped: closed unanswered
        }
        let done = Arc::clone(&active);
        let answered = spawn("spidey-redirect-conn", move || {
            answer(stream, tls_port);
            done.fetch_sub(1, Ordering::AcqRel);
        });
        if answered.is_err() {
            active.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Reads one head from `stream` within [`DEADLINE`] and answers it.
fn answer(mut stream: TcpStream, tls_port: u16) {
    let deadline = Instant::now() + DEADLINE;
    let Ok(local) = stream.local_addr() else { return };
    let mut buf = vec![0u8; MAX_HEAD];
    let mut len = 0;
    let response = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(&mut buf[len..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => len += n,
        }
        let mut slots = HeaderSlots::new();
        match parse(&buf[..len], &mut slots, &LIMITS) {
            Ok(Parsed::Complete(req, _)) => {
                break match location(req.raw_target, req.header("host"), local.ip(), tls_port) {
                    Some(to) => format!(
                        "HTTP/1.1 308 Permanent Redirect\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                    None => BAD_REQUEST.to_string(),
                };
            }
            Ok(Parsed::Partial) if len < MAX_HEAD => continue,
            _ => break BAD_REQUEST.to_string(),
        }
    };
    let _ = stream
        .set_write_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))));
    let _ = stream.write_all(response.as_bytes());
}

const BAD_REQUEST: &str = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// The `Location` for a request to `target` with `Host` `host` that came in on `local`,
/// or `None` when the target is not a path or the host is not a host.
pub(crate) fn location(target: &str, host: Option<&[u8]>, local: IpAddr, tls_port: u16) -> Option<String> {
    if !target.starts_with('/') || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let host = match host {
        Some(value) => host_name(std::str::from_utf8(value).ok()?.trim())?.to_string(),
        None => match local {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        },
    };
    let port = if tls_port == 443 { String::new() } else { format!(":{tls_port}") };
    Some(format!("https://{host}{port}{target}"))
}

/// The host of a `Host` value (RFC 9110 §7.2: uri-host [":" port]): a bracketed IPv6
/// literal, or a name or IPv4 address of letters, digits, `-` and `.`; its port dropped.
fn host_name(value: &str) -> Option<&str> {
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let end = rest.find(']')?;
        rest[..end].parse::<std::net::Ipv6Addr>().ok()?;
        let after = &rest[end + 1..];
        (&value[..end + 2], if after.is_empty() { "" } else { after.strip_prefix(':')? })
    } else {
        let (host, port) = value.split_once(':').unwrap_or((value, ""));
        let name = !host.is_empty() && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        (if name { host } else { return None }, port)
    };
    port.bytes().all(|b| b.is_ascii_digit()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_table() {
        let v4: IpAddr = "127.0.0.1".parse().unwrap();
        let v6: IpAddr = "::1".parse().unwrap();
        // target, Host, local address, HTTPS port → Location
        type Case<'a> = (&'a str, Option<&'a str>, IpAddr, u16, Option<&'a str>);
        let cases: &[Case] = &[
            ("/", Some("example.com"), v4, 443, Some("https://example.com/")),
            ("/a/b?x=1&y=%20", Some("example.com:80"), v4, 8443, Some("https://example.com:8443/a/b?x=1&y=%20")),
            ("/x", Some("[::1]:8080"), v6, 8443, Some("https://[::1]:8443/x")),
            ("/x", None, v4, 8443, Some("https://127.0.0.1:8443/x")),
            ("/x", None, v6, 443, Some("https://[::1]/x")),
            ("/x", Some("a.example"), v4, 443, Some("https://a.example/x")),
            ("//evil.example/x", Some("a.example"), v4, 443, Some("https://a.example//evil.example/x")),
            ("*", Some("a.example"), v4, 443, None),
            ("http://evil.example/", Some("a.example"), v4, 443, None),
            ("/x", Some("evil.example/x"), v4, 443, None),
            ("/x", Some("a.example\r\nSet-Cookie: x"), v4, 443, None),
            ("/x", Some("a@b"), v4, 443, None),
            ("/x", Some("[::1"), v4, 443, None),
            ("/x", Some("[nothex]"), v4, 443, None),
            ("/x", Some("a.example:8x"), v4, 443, None),
            ("/x", Some(""), v4, 443, None),
        ];
        for (target, host, local, port, want) in cases {
            let got = location(target, host.map(str::as_bytes), *local, *port);
            assert_eq!(got.as_deref(), *want, "{target} {host:?}");
        }
    }
}
