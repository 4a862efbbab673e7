//! IPv6: `--addr ::1` serves IPv6 loopback, `--addr ::` is dual-stack (IPv4 clients too),
//! and both the access log and CGI's `REMOTE_ADDR` print the client address as nginx's
//! `$remote_addr` does (no brackets), an IPv4 client of `::` as plain IPv4.

use crate::common::{Fixture, HELLO};
use crate::harness::{body, command, get, script, spawn};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

const V4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const V6: IpAddr = IpAddr::V6(Ipv6Addr::LOCALHOST);

/// Serves from `--addr listen` and checks, for each client address: a static file, what
/// a CGI script sees as REMOTE_ADDR, and the first field of the access log line.
fn serves_from(mode: &str, listen: &str, clients: &[(IpAddr, &str)]) {
    let fx = Fixture::new();
    script(&fx.root(), "cgi-bin/addr.sh", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n%s' \"$REMOTE_ADDR\"\n");
    let mut s = spawn(command(mode, &fx.root(), &["--addr", listen, "--port", "0"]));
    for &(client, shown) in clients {
        let addr = SocketAddr::new(client, s.port);
        let (status, text) = get(addr, "/hello.txt");
        assert_eq!((status, body(&text)), (200, HELLO), "{client} on {listen}");
        let (status, text) = get(addr, "/cgi-bin/addr.sh");
        assert_eq!((status, body(&text)), (200, shown), "REMOTE_ADDR of {client} on {listen}");
    }
    let mut logged: Vec<String> =
        s.log_lines(2 * clients.len()).iter().map(|l| l.split(' ').next().unwrap().to_string()).collect();
    let mut want: Vec<String> = clients.iter().flat_map(|(_, shown)| [shown.to_string(), shown.to_string()]).collect();
    logged.sort();
    want.sort();
    assert_eq!(logged, want, "access log clients on {listen}");
}

fn ipv6_loopback_serves_and_prints_addresses_without_brackets(mode: &str) {
    serves_from(mode, "::1", &[(V6, "::1")]);
}

fn dual_stack_any_takes_ipv4_and_ipv6_clients(mode: &str) {
    serves_from(mode, "::", &[(V4, "127.0.0.1"), (V6, "::1")]);
}

crate::for_each_mode!(
    ipv6_loopback_serves_and_prints_addresses_without_brackets,
    dual_stack_any_takes_ipv4_and_ipv6_clients
);
