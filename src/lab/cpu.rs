//! Where the CPU time of a point went, and who may use which CPUs.
//!
//! - The server's CPU: the utime+stime of the server process and every descendant
//!   (`/proc/PID/stat`), plus cutime+cstime, the time of the children each has reaped
//!   (fork's per-connection children, CGI scripts), taken before and after a point.
//! - The machine: `/proc/stat`'s CPU line before and after, giving the steal share and the
//!   share of the machine busy with processes other than the lab and its server.
//! - Pinning: with at least two CPUs, the server gets the upper half of the lab's CPUs and
//!   the load generator (this process) the lower half, set with sched_setaffinity. The
//!   server inherits its set at spawn ([`Pinning::spawn_as_server`]), so its threads and
//!   children never run on the client's CPUs.

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The lab's pinning, decided once by [`pin`] on the thread that runs the lab.
static PINNING: OnceLock<Pinning> = OnceLock::new();

/// Splits the CPUs (once) and pins the calling thread, the lab's, to the client's half.
pub(crate) fn pin() -> &'static Pinning {
    PINNING.get_or_init(Pinning::apply)
}

/// How many CPUs a server runs on (all the lab's when it does not pin).
pub(crate) fn server_cores() -> usize {
    match PINNING.get() {
        Some(Pinning::Split { server, .. }) => server.len(),
        Some(Pinning::Shared(all)) if !all.is_empty() => all.len(),
        _ => crate::modes::cores(),
    }
}

/// Spawns a server on the server's CPUs, when [`pin`] split them.
pub(crate) fn spawn_as_server<T>(spawn: impl FnOnce() -> T) -> T {
    match PINNING.get() {
        Some(p) => p.spawn_as_server(spawn),
        None => spawn(),
    }
}

/// A point is measured on a disturbed machine when other processes kept more than this
/// share of the machine's CPU busy during it...
pub(crate) const OTHER_BUSY_LIMIT_PCT: f64 = 10.0;
/// ...or the hypervisor stole more than this share.
pub(crate) const STEAL_LIMIT_PCT: f64 = 2.0;

/// CPU time counters read at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    /// The server tree's ticks (own and reaped children's).
    server: u64,
    /// This process's ticks (the load generator's threads).
    own: u64,
    /// /proc/stat: all ticks, idle ticks (idle + iowait) and steal ticks.
    total: u64,
    idle: u64,
    steal: u64,
}

/// What a point's interval cost, and how quiet the machine was meanwhile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PointCpu {
    /// CPU time of the server tree during the point, in microseconds (tick resolution).
    pub server_cpu_us: f64,
    /// One-minute load average at the point's start.
    pub load1: f64,
    /// Share of the machine's CPU time stolen by the hypervisor during the point.
    pub steal_pct: f64,
    /// Share of the machine's CPU time used by processes other than the lab and its server.
    pub other_busy_pct: f64,
    /// Whether steal or others' use passed the limits above.
    pub disturbed: bool,
}

impl Snapshot {
    pub fn take(server_pid: u32) -> Snapshot {
        let (total, idle, steal) = system_ticks().unwrap_or((0, 0, 0));
        Snapshot { server: tree_ticks(server_pid), own: own_ticks(), total, idle, steal }
    }

    /// The interval from `self` to `later`; `load1` is read now.
    pub fn until(&self, later: &Snapshot, load1: f64) -> PointCpu {
        let tick_us = 1e6 / rustix::param::clock_ticks_per_second() as f64;
        let server = later.server.saturating_sub(self.server);
        let total = later.total.saturating_sub(self.total).max(1) as f64;
        let busy = total - later.idle.saturating_sub(self.idle) as f64;
        let steal = later.steal.saturating_sub(self.steal) as f64;
        let ours = (server + later.own.saturating_sub(self.own)) as f64;
        let other = (busy - steal - ours).max(0.0);
        let (steal_pct, other_busy_pct) = (100.0 * steal / total, 100.0 * other / total);
        PointCpu {
            server_cpu_us: server as f64 * tick_us,
            load1,
            steal_pct,
            other_busy_pct,
            disturbed: steal_pct > STEAL_LIMIT_PCT || other_busy_pct > OTHER_BUSY_LIMIT_PCT,
        }
    }
}

/// The one-minute load average.
pub(crate) fn load1() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

/// utime, stime, cutime and cstime (fields 14-17 of /proc/PID/stat) and the parent pid,
/// read after the command name's closing parenthesis (names may hold spaces).
fn stat_fields(text: &str) -> Option<(u32, u64)> {
    let rest = text.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field k is f[k - 3].
    let ppid = f.get(1)?.parse().ok()?;
    let ticks = (11..=14).map(|i| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)).sum();
    Some((ppid, ticks))
}

/// The ticks of `pid` and all its descendants (own and reaped children's).
fn tree_ticks(pid: u32) -> u64 {
    let mut procs: Vec<(u32, u32, u64)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if let Some((ppid, ticks)) =
            std::fs::read_to_string(format!("/proc/{p}/stat")).ok().and_then(|t| stat_fields(&t))
        {
            procs.push((p, ppid, ticks));
        }
    }
    sum_tree(pid, &procs)
}

/// The ticks of `root` and its descendants among (pid, ppid, ticks).
fn sum_tree(root: u32, procs: &[(u32, u32, u64)]) -> u64 {
    let mut members = vec![root];
    let mut i = 0;
    while i < members.len() {
        let parent = members[i];
        members.extend(procs.iter().filter(|p| p.1 == parent).map(|p| p.0));
        i += 1;
    }
    procs.iter().filter(|p| members.contains(&p.0)).map(|p| p.2).sum()
}

fn own_ticks() -> u64 {
    let text = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Reaped children excluded: the lab's own children are the servers, counted apart.
    let rest = text.rsplit_once(')').map(|r| r.1).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    (11..=12).map(|i| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)).sum()
}

/// (all, idle + iowait, steal) ticks of the machine, from /proc/stat's `cpu` line.
fn system_ticks() -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal (guest time is within user).
    let total = v.iter().take(8).sum();
    Some((total, v.get(3)? + v.get(4).unwrap_or(&0), *v.get(7).unwrap_or(&0)))
}

/// Which CPUs the server and the load generator may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Pinning {
    /// Fewer than two CPUs: both share what there is.
    Shared(Vec<usize>),
    Split {
        server: Vec<usize>,
        client: Vec<usize>,
    },
}

impl Pinning {
    /// Splits the CPUs this process may use, and pins this thread to the client's half.
    pub fn apply() -> Pinning {
        let Ok(set) = sched_getaffinity(None) else { return Pinning::Shared(Vec::new()) };
        let cpus: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect();
        let pinning = split(&cpus);
        if let Pinning::Split { client, .. } = &pinning {
            if sched_setaffinity(None, &cpu_set(client)).is_err() {
                return Pinning::Shared(cpus);
            }
        }
        pinning
    }

    /// Runs `spawn` with this thread on the server's CPUs, so the child inherits them,
    /// then returns the thread to the client's.
    pub fn spawn_as_server<T>(&self, spawn: impl FnOnce() -> T) -> T {
        let Pinning::Split { server, client } = self else { return spawn() };
        let _ = sched_setaffinity(None, &cpu_set(server));
        let out = spawn();
        let _ = sched_setaffinity(None, &cpu_set(client));
        out
    }

    /// For the report: "server on CPU 1, load generator on CPU 0".
    pub fn describe(&self) -> String {
        let list = |v: &[usize]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
        match self {
            Pinning::Shared(all) => format!("none (server and load generator share CPUs {})", list(all)),
            Pinning::Split { server, client } => {
                format!("server on CPUs {}, load generator on CPUs {} (sched_setaffinity)", list(server), list(client))
            }
        }
    }
}

/// The upper half for the server, the lower half for the client, when there are two CPUs.
fn split(cpus: &[usize]) -> Pinning {
    if cpus.len() < 2 {
        return Pinning::Shared(cpus.to_vec());
    }
    let half = cpus.len() / 2;
    Pinning::Split { server: cpus[half..].to_vec(), client: cpus[..half].to_vec() }
}

fn cpu_set(cpus: &[usize]) -> CpuSet {
    let mut set = CpuSet::new();
    cpus.iter().for_each(|&c| set.set(c));
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_read_past_a_name_with_spaces_and_parentheses() {
        let line = "42 (a b) c) S 7 42 42 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0";
        assert_eq!(stat_fields(line), Some((7, 11 + 22 + 33 + 44)));
    }

    #[test]
    fn a_tree_sums_descendants_only() {
        // 10 -> 11 -> 12, and 20 unrelated (its child 21 too).
        let procs = [(10, 1, 5), (11, 10, 7), (12, 11, 100), (20, 1, 1000), (21, 20, 9)];
        assert_eq!(sum_tree(10, &procs), 112);
        assert_eq!(sum_tree(11, &procs), 107);
    }

    #[test]
    fn cpus_split_in_halves_from_two() {
        let cases: [(&[usize], Pinning); 3] = [
            (&[0], Pinning::Shared(vec![0])),
            (&[0, 1], Pinning::Split { server: vec![1], client: vec![0] }),
            (&[0, 1, 2, 3, 4], Pinning::Split { server: vec![2, 3, 4], client: vec![0, 1] }),
        ];
        for (cpus, want) in cases {
            assert_eq!(split(cpus), want, "{cpus:?}");
        }
    }

    /// A process tree that burned CPU in a child it has reaped (as fork's parent and CGI's
    /// driver do) is counted through cutime, once the child is gone.
    #[test]
    fn reaped_children_count_in_the_tree() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; sleep 5; true"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let cutime = || {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let rest = text.rsplit_once(')').map(|r| r.1.to_string()).unwrap_or_default();
            rest.split_whitespace().nth(13).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        };
        let start = std::time::Instant::now();
        while cutime() == 0 && start.elapsed() < std::time::Duration::from_secs(4) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let (reaped, tree) = (cutime(), tree_ticks(pid));
        let _ = child.kill();
        let _ = child.wait();
        assert!(reaped > 0, "the busy child ran and was reaped");
        assert!(tree >= reaped, "the tree ({tree}) counts the reaped child's ticks ({reaped})");
    }
}
