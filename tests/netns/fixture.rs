//! Hosts on one machine: network namespaces joined by veth pairs to a bridge, built with
//! iproute2's `ip` (needs root). Each [`Net`] has a namespace of its own for the bridge and
//! one namespace per host, named `spidey-PID-N-…` so concurrent tests and runs never clash;
//! nothing is added to the machine's own namespace. Dropping the `Net` deletes its
//! namespaces (the veth pairs and the bridge go with them); namespaces left by a test
//! process that was killed are deleted by the next [`Net::create`].
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// One host: a namespace with `eth0` on the bridge at `ip` (10.77.0.0/24) and `lo` up.
pub struct Host {
    pub ns: String,
    pub ip: Ipv4Addr,
}

impl Host {
    /// `ip netns exec NS`, the command prefix that runs a program on this host.
    pub fn prefix(&self) -> String {
        format!("ip netns exec {}", self.ns)
    }

    /// `program` run on this host.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns]).arg(program);
        c
    }
}

/// Hosts on one bridge; deleted on drop.
pub struct Net {
    bridge: String,
    pub hosts: Vec<Host>,
}

impl Net {
    /// `hosts` hosts on a bridge, or why that cannot be done here (not root, no `ip`, no
    /// namespaces in this kernel or container).
    pub fn create(hosts: usize) -> Result<Net, String> {
        if !Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n")) {
            return Err("not root: creating network namespaces needs root".into());
        }
        if Command::new("ip").arg("-V").output().is_err() {
            return Err("`ip` (iproute2) is not installed".into());
        }
        remove_stale();
        let name = format!("spidey-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
        let bridge = format!("{name}-br");
        ip(&["netns", "add", &bridge])?;
        // From here on, dropping `net` deletes whatever was made.
        let mut net = Net { bridge: bridge.clone(), hosts: Vec::new() };
        ip(&["-n", &bridge, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &bridge, "link", "set", "br0", "up"])?;
        for i in 0..hosts {
            let host = Host { ns: format!("{name}-h{i}"), ip: Ipv4Addr::new(10, 77, 0, i as u8 + 1) };
            ip(&["netns", "add", &host.ns])?;
            let (ns, port) = (host.ns.clone(), format!("v{i}"));
            net.hosts.push(host);
            ip(&["-n", &bridge, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &ns])?;
            ip(&["-n", &bridge, "link", "set", &port, "master", "br0", "up"])?;
            let cidr = format!("{}/24", net.hosts[i].ip);
            ip(&["-n", &ns, "addr", "add", &cidr, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for h in &self.hosts {
            let _ = ip(&["netns", "del", &h.ns]);
        }
        let _ = ip(&["netns", "del", &self.bridge]);
    }
}

/// Runs `ip ARGS`; its stderr's first line on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(format!("ip {}: {}", args.join(" "), err.lines().next().unwrap_or("failed")))
}

/// Deletes `spidey-PID-…` namespaces whose test process is gone.
fn remove_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(pid) = name.strip_prefix("spidey-").and_then(|r| r.split('-').next()) else { continue };
        if pid.parse::<u32>().is_ok() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

/// The fixture, or a clear line saying why the calling test is skipped.
pub fn net_or_skip(test: &str, hosts: usize) -> Option<Net> {
    match Net::create(hosts) {
        Ok(net) => Some(net),
        Err(why) => {
            // Straight to stderr, past the test harness's capture of print!, so a skip shows.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED {test}: network namespaces unavailable here: {why}");
            None
        }
    }
}
