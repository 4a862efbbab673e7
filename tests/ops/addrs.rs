//! Several `--addr` at once: one listener per address, all on the one `--port`, and every
//! mode accepts on all of them (blocking acceptors, prefork's shared listeners, the
//! `evloop` core of event/uring/hybrid). With `--port 0` the first address gets a free
//! port and the others bind the same one; the startup output has one line per listener,
//! the first in the format every harness parses.

use crate::common::{Fixture, HELLO};
use crate::harness::{body, command, get, spawn};
use std::io::BufRead;
use std::net::{IpAddr, SocketAddr};
use std::process::Stdio;

/// The addresses listened on, and how the access log prints a client of each: Linux
/// gives a connection to 127.0.0.2 the source address 127.0.0.1 (the loopback's primary).
const ADDRS: [(&str, &str); 3] = [("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("127.0.0.2", "127.0.0.1")];
/// Requests sent to each address, interleaved (fresh connections).
const ROUNDS: usize = 6;

fn every_address_answers_on_one_port(mode: &str) {
    let fx = Fixture::new();
    let mut args = vec![];
    for (addr, _) in ADDRS {
        args.extend(["--addr", addr]);
    }
    args.extend(["--port", "0"]);
    let mut s = spawn(command(mode, &fx.root(), &args));
    // The first startup line was read by `spawn`; one more per further listener, same port.
    let out = s.stdout.as_mut().unwrap();
    for (addr, _) in &ADDRS[1..] {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let ip: IpAddr = addr.parse().unwrap();
        let url = match ip {
            IpAddr::V4(_) => format!("http://{addr}:{}", s.port),
            IpAddr::V6(_) => format!("http://[{addr}]:{}", s.port),
        };
        assert_eq!(line, format!("spidey listening on {url} (mode {mode})\n"), "startup line of {addr}");
    }
    for round in 0..ROUNDS {
        for (addr, _) in ADDRS {
            let to = SocketAddr::new(addr.parse().unwrap(), s.port);
            let (status, text) = get(to, "/hello.txt");
            assert_eq!((status, body(&text)), (200, HELLO), "round {round} on {to}");
        }
    }
    let mut logged: Vec<String> =
        s.log_lines(ROUNDS * ADDRS.len()).iter().map(|l| l.split(' ').next().unwrap().to_string()).collect();
    let mut want: Vec<String> = ADDRS.iter().flat_map(|(_, shown)| vec![shown.to_string(); ROUNDS]).collect();
    logged.sort();
    want.sort();
    assert_eq!(logged, want, "the access log names each client address");
}

crate::for_each_mode!(every_address_answers_on_one_port);

/// Listeners that would overlap are a configuration error (exit 2, one line), whatever
/// the mode: the same address twice, or a wildcard beside an address it covers.
#[test]
fn overlapping_addresses_exit_2() {
    let fx = Fixture::new();
    let cases: [(&[&str], &str); 3] = [
        (&["::1", "::1"], "--addr ::1 given twice"),
        (&["::", "127.0.0.1"], "--addr :: already listens on 127.0.0.1"),
        (&["127.0.0.1", "0.0.0.0"], "--addr 0.0.0.0 already listens on 127.0.0.1"),
    ];
    for (addrs, says) in cases {
        let mut args: Vec<&str> = addrs.iter().flat_map(|a| ["--addr", a]).collect();
        args.extend(["--port", "0"]);
        let out = command("event", &fx.root(), &args).stderr(Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{addrs:?}: {stderr}");
        assert!(stderr.contains(says) && stderr.lines().count() == 1, "{addrs:?}: {stderr}");
    }
}
