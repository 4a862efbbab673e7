//! `--addr` (repeatable) and `--port`: which listening sockets to bind, checked first.
//!
//! Every address gets a listener on the same port. With `--port 0` the first address gets
//! a free port from the kernel and the others bind that same port; if it is taken on one
//! of them (by another program), all are closed and the whole set is tried again with a
//! new port, a few times, before giving up.

use crate::modes::MAX_LISTENERS;
use crate::net::Listener;
use spidey_config::ConfigError;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// How many ephemeral ports `--port 0` tries before giving up on a set of addresses.
const EPHEMERAL_TRIES: usize = 8;

/// Binds a listener on `port` for each of `addrs` (127.0.0.1 if none), in order.
pub(crate) fn bind_all(addrs: &[IpAddr], port: u16, backlog: i32) -> anyhow::Result<Vec<Listener>> {
    let default = [IpAddr::V4(Ipv4Addr::LOCALHOST)];
    let addrs = if addrs.is_empty() { &default[..] } else { addrs };
    check(addrs).map_err(ConfigError)?;
    if port != 0 || addrs.len() == 1 {
        return addrs.iter().map(|&ip| Listener::bind(SocketAddr::new(ip, port), backlog)).collect();
    }
    let mut last_error = None;
    for _ in 0..EPHEMERAL_TRIES {
        let first = Listener::bind(SocketAddr::new(addrs[0], 0), backlog)?;
        let port = first.addr.port();
        let rest: anyhow::Result<Vec<Listener>> =
            addrs[1..].iter().map(|&ip| Listener::bind(SocketAddr::new(ip, port), backlog)).collect();
        match rest {
            Ok(rest) => return Ok(std::iter::once(first).chain(rest).collect()),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.expect("at least one try").context(format!("no free port common to {} addresses", addrs.len())))
}

/// Refuses a set of addresses two of whose listeners would overlap: the same address
/// twice, or a wildcard beside an address it already covers (`::` is dual-stack, so it
/// covers every address; `0.0.0.0` every IPv4 one).
fn check(addrs: &[IpAddr]) -> Result<(), String> {
    if addrs.len() > MAX_LISTENERS {
        return Err(format!("--addr given {} times; at most {MAX_LISTENERS}", addrs.len()));
    }
    for (i, a) in addrs.iter().enumerate() {
        if addrs[..i].contains(a) {
            return Err(format!("--addr {a} given twice"));
        }
        let covered_by =
            |wild: &IpAddr| wild != a && wild.is_unspecified() && (wild.is_ipv6() || (wild.is_ipv4() && a.is_ipv4()));
        if let Some(wild) = addrs.iter().find(|w| covered_by(w)) {
            return Err(format!("--addr {wild} already listens on {a}; give {wild} alone"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check;
    use std::net::IpAddr;

    #[test]
    fn overlapping_addresses_are_refused() {
        let cases: &[(&[&str], bool)] = &[
            (&["127.0.0.1"], true),
            (&["127.0.0.1", "::1"], true),
            (&["127.0.0.1", "127.0.0.2", "::1"], true),
            (&["::"], true),
            (&["0.0.0.0", "::1"], true),
            (&["::1", "::1"], false),
            (&["::", "127.0.0.1"], false),
            (&["::1", "::"], false),
            (&["0.0.0.0", "127.0.0.1"], false),
            (&["0.0.0.0", "::"], false),
        ];
        for (addrs, ok) in cases {
            let ips: Vec<IpAddr> = addrs.iter().map(|a| a.parse().unwrap()).collect();
            assert_eq!(check(&ips).is_ok(), *ok, "{addrs:?}: {:?}", check(&ips));
        }
    }
}
