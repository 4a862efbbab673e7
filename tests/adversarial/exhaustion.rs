//! Exhaustion: a connection flood under a 64-descriptor limit neither spins the CPU nor
//! kills the server, which serves again afterwards; clients that reset mid-response leave
//! no descriptor behind.

use super::table::{get, read_one};
use crate::common::{status_of, Fixture, Spidey};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Starts spidey under `prlimit --nofile=N:N`, like `Spidey::start`.
fn start_with_fd_limit(mode: &str, root: &Path, nofile: u32, args: &[&str]) -> Spidey {
    let mut command = Command::new("prlimit");
    command
        .arg(format!("--nofile={nofile}:{nofile}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_spidey"))
        .arg("serve")
        .arg(root)
        .args(["--port", "0", "--mode", mode])
        .args(args);
    Spidey::spawn(command, mode)
}

/// The CPU time, in clock ticks, used by `pid` and its live children (utime + stime).
fn cpu_ticks(pid: u32) -> u64 {
    let ticks = |stat: &str| -> (u64, u64) {
        // Fields after the parenthesised command: state is field 3, ppid 4, utime 14, stime 15.
        let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
        let f: Vec<&str> = rest.split(' ').collect();
        let num = |i: usize| f.get(i - 3).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        (num(4), num(14) + num(15))
    };
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let is_self = entry.file_name().to_str() == Some(&pid.to_string());
        let (ppid, t) = ticks(&stat);
        if is_self || ppid == u64::from(pid) {
            total += t;
        }
    }
    total
}

fn clock_ticks_per_second() -> u64 {
    let out = Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(100)
}

/// Open descriptors of `pid` and its child processes (prefork's workers, fork's children).
fn open_fds(pid: u32) -> usize {
    let count = |p: &str| std::fs::read_dir(format!("/proc/{p}/fd")).map(|d| d.count()).unwrap_or(0);
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    count(&pid.to_string()) + children.split_whitespace().map(count).sum::<usize>()
}

/// The descriptor count once it has held still for 300 ms (connections just answered may
/// still be closing), or the last count after `limit`.
fn settled_fds(pid: u32, limit: Duration) -> usize {
    let deadline = Instant::now() + limit;
    let mut last = open_fds(pid);
    let mut still_since = Instant::now();
    while Instant::now() < deadline && still_since.elapsed() < Duration::from_millis(300) {
        std::thread::sleep(Duration::from_millis(50));
        let now = open_fds(pid);
        if now != last {
            (last, still_since) = (now, Instant::now());
        }
    }
    last
}

/// 400 idle connections against a 64-descriptor server for 3 s: its CPU time stays well
/// under the wall time, it stays up, and it answers once the flood is gone.
fn fd_exhaustion_flood(mode: &str) {
    let fx = Fixture::new();
    let mut server = start_with_fd_limit(mode, &fx.root(), 64, &["--quiet", "--idle-timeout", "2s"]);
    let pid = server.child.id();
    assert_eq!(status_of(&get(&server, "/hello.txt", "").0), 200);
    let before = cpu_ticks(pid);
    let start = Instant::now();
    let flood: Vec<_> =
        (0..400).filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", server.port)).ok()).collect();
    std::thread::sleep(Duration::from_secs(3));
    let wall = start.elapsed().as_secs_f64();
    let cpu = (cpu_ticks(pid) - before) as f64 / clock_ticks_per_second() as f64;
    assert!(flood.len() > 64, "the flood opened only {} connections", flood.len());
    assert!(cpu < wall * 0.25, "spun: {cpu:.2} s of CPU in {wall:.2} s");
    drop(flood);
    let child = server.child.try_wait().unwrap();
    assert!(child.is_none(), "the server exited during the flood: {child:?}");
    // Serves again once the flood is gone (queued, already closed connections drain first).
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut served = false;
    while !served && Instant::now() < deadline {
        served = get(&server, "/hello.txt", "").0.starts_with("HTTP/1.1 200");
    }
    assert!(served, "not serving after the flood");
}

/// 50 clients that take part of a 4 MiB response and reset (SO_LINGER 0): the server's
/// open descriptors return to where they were. The worker count is fixed: by default
/// `pool` and `prefork` grow under the 50 clients and retire the extra workers (and, in
/// `prefork`, the master's copies of their sockets and pipes) one by one over seconds,
/// which is adaptation, not a leak. Each of the two workers may keep one descriptor of
/// `big.bin` in its open-file cache (content/file_cache.rs): up to two more is the cache,
/// anything beyond is a leak.
fn reset_mid_response_leaks_no_fd(mode: &str) {
    let fx = Fixture::new();
    let server = Spidey::start(mode, &fx.root(), &[&["--quiet"], &crate::common::workers(mode, "2")[..]].concat());
    let pid = server.child.id();
    assert_eq!(status_of(&get(&server, "/hello.txt", "").0), 200);
    let baseline = settled_fds(pid, Duration::from_secs(5));
    for _ in 0..50 {
        let mut s = server.connect();
        s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let _ = std::io::Read::read(&mut s, &mut [0u8; 1000]);
        socket2::SockRef::from(s.tcp()).set_linger(Some(Duration::ZERO)).unwrap();
    }
    let after = settled_fds(pid, Duration::from_secs(10));
    assert!(after <= baseline + 2, "descriptors leaked: {baseline} before, {after} after 50 resets");
    let mut s = server.connect();
    s.write_all(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(status_of(&read_one(&mut s).unwrap().0), 200);
}

crate::for_each_mode!(fd_exhaustion_flood, reset_mid_response_leaks_no_fd);
