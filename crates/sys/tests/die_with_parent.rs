//! `process::die_with_parent`: the child does not outlive a parent process killed with SIGKILL.
//!
//! The parent has to die for the test, so it cannot be the test process: this test binary
//! runs itself again as an intermediate (the environment variable below names the role),
//! which spawns `sleep 60` with `die_with_parent`, prints its pid and waits. The test
//! SIGKILLs the intermediate and expects the sleeper gone within a few seconds.

use rustix::process::{kill_process, Pid, Signal};
use spidey_sys::process::die_with_parent;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ROLE: &str = "SPIDEY_SYS_TEST_INTERMEDIATE";
const LIMIT: Duration = Duration::from_secs(5);

#[test]
fn child_dies_with_sigkilled_parent() {
    if std::env::var_os(ROLE).is_some() {
        intermediate();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut command = Command::new(exe);
    command
        .args(["child_dies_with_sigkilled_parent", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut parent = KillOnDrop(command.spawn().unwrap());
    let sleeper = Sleeper::new(sleeper_pid(&mut parent.0));
    let first = sleeper.start_time().expect("the sleeper runs");
    assert_eq!(parent_of(sleeper.pid), Some(parent.0.id()), "the sleeper is the intermediate's child");

    parent.0.kill().unwrap();
    parent.0.wait().unwrap();
    let deadline = Instant::now() + LIMIT;
    while sleeper.start_time() == Some(first) {
        assert!(Instant::now() < deadline, "sleep {} outlived its parent by {LIMIT:?}", sleeper.pid);
        std::thread::sleep(Duration::from_millis(20));
    }
    sleeper.disarm();
}

/// The intermediate parent: spawns `sleep 60` from this (long-lived) test thread, prints
/// its pid, and waits for the test to kill it (or for stdin to close if the test is gone).
fn intermediate() {
    let mut command = Command::new("sleep");
    command.arg("60").stdin(Stdio::null()).stdout(Stdio::null());
    let mut sleeper = die_with_parent(&mut command, Signal::TERM).spawn().unwrap();
    println!("sleeper {}", sleeper.id());
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// The pid the intermediate prints, read on a thread so a silent intermediate cannot hang
/// the test.
fn sleeper_pid(parent: &mut Child) -> u32 {
    let stdout = parent.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest has already printed "test NAME ... " on the same line.
            if let Some((_, pid)) = line.rsplit_once("sleeper ") {
                let _ = tx.send(pid.trim().parse::<u32>().unwrap());
                return;
            }
        }
    });
    rx.recv_timeout(LIMIT).expect("the intermediate names its child")
}

/// Field `name` (1-based, as in proc_pid_stat(5)) of /proc/PID/stat, unless the process is
/// gone or a zombie (a dead child nobody has reaped yet, which a container's pid 1 may
/// never do).
fn stat_field(pid: u32, name: usize) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; it ends at the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    if fields.next()? == "Z" {
        return None;
    }
    fields.nth(name - 4)?.parse().ok()
}

fn parent_of(pid: u32) -> Option<u32> {
    stat_field(pid, 4).map(|p| p as u32)
}

/// The sleeper, killed on drop unless the test saw it die: a failed assertion leaves no
/// process behind. The start time tells it from a later process that reuses its pid.
struct Sleeper {
    pid: u32,
    start: Option<u64>,
}

impl Sleeper {
    fn new(pid: u32) -> Sleeper {
        Sleeper { pid, start: stat_field(pid, 22) }
    }

    fn start_time(&self) -> Option<u64> {
        stat_field(self.pid, 22)
    }

    fn disarm(mut self) {
        self.start = None;
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        if self.start.is_some() && self.start_time() == self.start {
            let pid = Pid::from_raw(self.pid as i32).unwrap();
            let _ = kill_process(pid, Signal::KILL);
        }
    }
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
