//! Where the CPU time of a point went, and who may use which CPUs.
//!
//! - The server's CPU: the CPU-time clock (nanoseconds, every thread it has had, exited
//!   ones included: `spidey_sys::cputime`) of the server process and every descendant, plus
//!   cutime+cstime (`/proc/PID/stat`), the time of the children each has reaped (fork's
//!   per-connection children, CGI scripts), which the kernel keeps in nanoseconds but shows
//!   only in clock ticks: taken before and after a point.
//! - The load generator's CPU: this process's CPU-time clock, when the load runs in it.
//! - Other processes: all tasks' run time on the machine, in nanoseconds, less the server's
//!   and the load generator's ([`BusySource`]): the root cgroup's `cpuacct.usage` (cgroup
//!   v1), else the sum of `/proc/schedstat`'s per-CPU run time. Both are kept by the
//!   scheduler in ns and brought up to date at every context switch (and, for cpuacct, at
//!   every scheduler tick, 4 ms at HZ=250), so a point of a few ms knows others' share. With
//!   neither, the fallback is `/proc/stat`: the wall clock times the CPUs, less its idle,
//!   iowait and steal time, is the CPU time used; what the server and the load generator did
//!   not use of it went to other processes. `/proc/stat` shows that in 10 ms ticks, so a
//!   point of half a second on two CPUs knows others' share to about 1%, one of 5 ms only
//!   to 0% or 100%: a tick-based point shorter than [`TICK_MIN_S`] is not judged.
//! - Steal: only `/proc/stat` gives it, in ticks; it is judged for points of at least
//!   [`STEAL_MIN_S`] (one tick is then at most 1% of two CPUs' time), recorded for all.
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

/// How many CPUs a server asking for `cpus` runs on (all the lab's when it does not pin).
pub(crate) fn server_cores(cpus: Option<usize>) -> usize {
    match PINNING.get() {
        Some(p @ Pinning::Split { .. }) => p.server_set(cpus).len(),
        Some(Pinning::Shared(all)) if !all.is_empty() => all.len(),
        _ => cores(),
    }
}

/// The CPUs this process may run on (`std::thread::available_parallelism`), at least 1.
pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Who had which CPUs in a point whose server asked for `cpus` ([`Shares::of`] on the lab's
/// pinning, with the load generator's threads; on an unpinned lab, every CPU shared).
pub(crate) fn point_shares(cpus: Option<usize>) -> Shares {
    let threads = client_threads();
    match PINNING.get() {
        Some(p) => Shares::of(p, cpus, threads),
        None => Shares::of(&Pinning::Shared((0..cores()).collect()), cpus, threads),
    }
}

/// How many threads the load generator runs: one per CPU of its own half when [`pin`]
/// split the CPUs (those not given to the server by default), else one.
pub(crate) fn client_threads() -> usize {
    match PINNING.get() {
        Some(Pinning::Split { client, .. }) => client.len().max(1),
        _ => 1,
    }
}

/// Spawns a server on its CPUs (`cpus` of them, or the server's half), when [`pin`] split
/// them.
pub(crate) fn spawn_as_server<T>(cpus: Option<usize>, spawn: impl FnOnce() -> T) -> T {
    match PINNING.get() {
        Some(p) => p.spawn_as_server(cpus, spawn),
        None => spawn(),
    }
}

/// A point is measured on a disturbed machine when other processes kept more than this
/// share of the machine's CPU busy during it...
pub(crate) const OTHER_BUSY_LIMIT_PCT: f64 = 10.0;
/// ...or the hypervisor stole more than this share, in a point of at least [`STEAL_MIN_S`].
pub(crate) const STEAL_LIMIT_PCT: f64 = 2.0;
/// Steal comes only in 10 ms ticks (`/proc/stat`): a point shorter than this (s) sees 0 or a
/// whole tick, 0% or 100% of a 5 ms point's time, so its steal is recorded but not judged.
/// From here a tick is at most 1% of two CPUs' time, half the limit. A full run's points
/// last at least this long (`runner::MIN_POINT`), so all of theirs is judged.
pub(crate) const STEAL_MIN_S: f64 = 0.5;
/// A point whose others' share comes from ticks ([`BusySource::ProcStat`]: no nanosecond
/// source on the machine) is not judged at all below this duration (s): a tick is then more
/// than 2.5% of two CPUs' time, and at 5 ms a whole 100%.
pub(crate) const TICK_MIN_S: f64 = 0.2;

/// When a repeat counts as disturbed, as the report and the terminal say it: "other
/// processes kept more than 10% of the machine's CPU busy (or, in a point of at least 0.5 s,
/// the hypervisor stole more than 2%)", from the limits above.
pub(crate) fn disturbance_rule() -> String {
    format!(
        "other processes kept more than {OTHER_BUSY_LIMIT_PCT}% of the machine's CPU busy (or, in a point of at \
         least {STEAL_MIN_S} s, the hypervisor stole more than {STEAL_LIMIT_PCT}%)"
    )
}

/// Where a point's figure for other processes' CPU use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum BusySource {
    /// The root cgroup's `cpuacct.usage` (cgroup v1): all tasks' run time, in ns.
    Cpuacct,
    /// `/proc/schedstat`: each CPU's time spent running tasks (field 7 of its `cpuN` line),
    /// in ns, counted when a task leaves the CPU.
    Schedstat,
    /// `/proc/stat`'s idle, iowait and steal, in 10 ms ticks.
    ProcStat,
}

/// What a point's disturbed flag judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Judged {
    /// Others' share and steal.
    All,
    /// Others' share only: the point was shorter than [`STEAL_MIN_S`].
    OthersOnly,
    /// Nothing: the point was shorter than [`TICK_MIN_S`] and had only ticks.
    TooShort,
}

/// Whether a point was disturbed, from its steal and others' share (%), its duration (s) and
/// the source of others' share; and what that could judge.
pub(crate) fn judge(steal_pct: f64, other_busy_pct: f64, elapsed_s: f64, source: BusySource) -> (bool, Judged) {
    if source == BusySource::ProcStat && elapsed_s < TICK_MIN_S {
        return (false, Judged::TooShort);
    }
    let others = other_busy_pct > OTHER_BUSY_LIMIT_PCT;
    if elapsed_s < STEAL_MIN_S {
        return (others, Judged::OthersOnly);
    }
    (others || steal_pct > STEAL_LIMIT_PCT, Judged::All)
}

/// A point's load generator is saturated when it used at least this share of the CPUs it
/// could keep busy ([`Shares::client`])...
pub(crate) const CLIENT_BUSY_PCT: f64 = 90.0;
/// ...and the server left at least this share of its CPUs idle meanwhile: such a point
/// measured the load generator, not the server ([`Saturation::client_bound`]).
pub(crate) const SERVER_IDLE_PCT: f64 = 20.0;

/// Who had which CPUs during a point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shares {
    /// The CPUs the server could run on (0: it ran on another host).
    pub server: u32,
    /// The CPUs the load generator could keep busy: its threads ([`client_threads`]), at
    /// most the CPUs it could run on.
    pub client: u32,
    /// The CPUs both could run on.
    pub shared: u32,
}

impl Shares {
    /// The shares under `pinning` of a server asking for `cpus` ([`Pinning::server_set`]),
    /// with a load generator of `threads` threads.
    pub fn of(pinning: &Pinning, cpus: Option<usize>, threads: usize) -> Shares {
        let server = pinning.server_set(cpus);
        let client = match pinning {
            Pinning::Split { client, .. } => client.clone(),
            Pinning::Shared(all) => all.clone(),
        };
        let shared = server.iter().filter(|c| client.contains(c)).count();
        let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        Shares { server: n(server.len()), client: n(client.len().min(threads)), shared: n(shared) }
    }

    /// The shares on a machine of `cores` CPUs split as the lab splits them ([`split`]),
    /// with the one load thread of the runs whose records did not store their shares.
    pub fn on(cores: usize, cpus: Option<usize>) -> Shares {
        Shares::of(&split(&(0..cores).collect::<Vec<_>>()), cpus, 1)
    }
}

/// How busy a point's load generator was and how idle its server's CPUs, in % of the CPUs
/// each had.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Saturation {
    pub client_busy_pct: f64,
    pub server_idle_pct: f64,
}

impl Saturation {
    /// The load generator's CPU time and the server's (µs) over `elapsed_s`, each as a share
    /// of the CPUs [`Shares`] gives it: the server's idle is what neither it nor the load
    /// generator used of the server's CPUs (the load generator's time counted on the shared
    /// ones first, so a server sharing its CPUs is never called idler than it was). None
    /// when a figure is missing, not finite or negative, or a side had no CPU. Both shares
    /// are clamped to 0-100 (a clock read a little apart from the wall clock may pass 100).
    pub fn of(client_cpu_us: Option<f64>, server_cpu_us: f64, elapsed_s: f64, shares: Shares) -> Option<Saturation> {
        let client_us = client_cpu_us?;
        let sane = |x: f64| x.is_finite() && x >= 0.0;
        if !(sane(client_us) && sane(server_cpu_us) && sane(elapsed_s) && elapsed_s > 0.0) {
            return None;
        }
        if shares.server == 0 || shares.client == 0 {
            return None;
        }
        let wall_us = elapsed_s * 1e6;
        let pct = |used: f64, cpus: u32| (100.0 * used / (f64::from(cpus) * wall_us)).clamp(0.0, 100.0);
        let on_shared = client_us.min(f64::from(shares.shared.min(shares.server)) * wall_us);
        Some(Saturation {
            client_busy_pct: pct(client_us, shares.client),
            server_idle_pct: 100.0 - pct(server_cpu_us + on_shared, shares.server),
        })
    }

    /// Whether the point measured the load generator: it was at least [`CLIENT_BUSY_PCT`]
    /// busy while the server left at least [`SERVER_IDLE_PCT`] of its CPUs idle.
    pub fn client_bound(&self) -> bool {
        self.client_busy_pct >= CLIENT_BUSY_PCT && self.server_idle_pct >= SERVER_IDLE_PCT
    }
}

/// CPU time counters read at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot {
    at: std::time::Instant,
    /// The server tree's CPU time: its processes' clocks, in ns...
    server_ns: u64,
    /// ...and the time of the children they reaped, in ticks.
    server_reaped_ticks: u64,
    /// This process's CPU time (the load generator's threads), in ns.
    own_ns: u64,
    /// /proc/stat: idle ticks (idle + iowait), steal ticks, and how many CPUs it lists.
    idle: u64,
    steal: u64,
    cpus: u32,
    /// All tasks' run time in ns, and its source ([`tasks_ns`]), when the machine has one.
    tasks: Option<(BusySource, u64)>,
}

/// Which end of a point a [`Snapshot`] is taken at: this process's own clock is read last
/// at the start and first at the end, so the snapshot's own reading of /proc is not counted
/// as the load generator's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Edge {
    Start,
    End,
}

/// What a point's interval cost, and how quiet the machine was meanwhile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PointCpu {
    /// CPU time of the server tree during the point, in microseconds (to the nanosecond
    /// when `fine_clock`, else in clock ticks).
    pub server_cpu_us: f64,
    /// CPU time of the load generator during the point, in microseconds (nanosecond
    /// clock), when it ran in the lab's process (not from other hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_us: Option<f64>,
    /// Wall-clock time the point took, snapshots included, in seconds.
    #[serde(default)]
    pub elapsed_s: f64,
    /// Whether the CPU times come from the processes' nanosecond clocks (false in records
    /// of older runs, which read 100 Hz ticks).
    #[serde(default)]
    pub fine_clock: bool,
    /// One-minute load average at the point's start.
    pub load1: f64,
    /// Share of the machine's CPU time stolen by the hypervisor during the point.
    pub steal_pct: f64,
    /// Share of the machine's CPU time used by processes other than the lab and its server.
    pub other_busy_pct: f64,
    /// Whether steal or others' use passed the limits above ([`judge`]).
    pub disturbed: bool,
    /// Where others' share came from (absent in records of older runs: `/proc/stat` ticks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_source: Option<BusySource>,
    /// What the disturbed flag judged (absent in records of older runs: both, at any
    /// duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Judged>,
    /// Who had which CPUs during the point (absent in records of older runs: see
    /// [`Shares::on`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shares: Option<Shares>,
}

impl PointCpu {
    /// The load generator's CPU time as a share of the CPUs it could keep busy over the
    /// point ([`Shares::client`]; one in records without shares, which ran one thread): 100
    /// is every thread saturated throughout. NaN when unknown.
    pub fn client_busy_pct(&self) -> f64 {
        let cpus = self.shares.map_or(1, |s| s.client);
        match self.client_cpu_us {
            Some(us) if self.elapsed_s > 0.0 && cpus > 0 => us / 1e4 / self.elapsed_s / f64::from(cpus),
            _ => f64::NAN,
        }
    }

    /// How busy the load generator and how idle the server were ([`Saturation::of`]), with
    /// the point's own [`Shares`] or, in records without them, `fallback`.
    pub fn saturation(&self, fallback: Shares) -> Option<Saturation> {
        let shares = self.shares.unwrap_or(fallback);
        Saturation::of(self.client_cpu_us, self.server_cpu_us, self.elapsed_s, shares)
    }
}

impl Snapshot {
    /// The counters now. All tasks' run time is read right beside this process's clock (just
    /// before it at the start, just after it at the end), so the snapshot's own reading of
    /// /proc is counted neither as the load generator's nor as others'; the server's tree,
    /// the slowest to read, lies outside that pair, where its time counts as the server's
    /// and not as others'.
    pub fn take(server_pid: u32, edge: Edge) -> Snapshot {
        let own = || rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
        let start = edge == Edge::Start;
        let server_first = start.then(|| tree_cpu(server_pid));
        let ticks_first = start.then(system_ticks);
        let (own_ts, tasks) = if start {
            // Reading this process's clock brings its running thread's time into the
            // scheduler's totals (cpuacct's too): read once before all tasks' time, or what
            // this thread ran since its last context switch or scheduler tick (up to 4 ms,
            // here the snapshot's own /proc scan) would be charged after the reading and
            // count as others' in the point.
            let _ = own();
            let tasks = tasks_ns();
            (own(), tasks)
        } else {
            let own_ts = own();
            (own_ts, tasks_ns())
        };
        let (idle, steal, cpus) = ticks_first.unwrap_or_else(system_ticks).unwrap_or((0, 0, 1));
        let (server_ns, server_reaped_ticks) = server_first.unwrap_or_else(|| tree_cpu(server_pid));
        let own_ns = own_ts.tv_sec as u64 * 1_000_000_000 + own_ts.tv_nsec as u64;
        Snapshot { at: std::time::Instant::now(), server_ns, server_reaped_ticks, own_ns, idle, steal, cpus, tasks }
    }

    /// The interval from `self` to `later`; `load1` is read now; the load generator's CPU
    /// is reported when `client_here` (it ran in this process).
    pub fn until(&self, later: &Snapshot, load1: f64, client_here: bool) -> PointCpu {
        let tick_ns = 1e9 / rustix::param::clock_ticks_per_second() as f64;
        let elapsed_ns = later.at.saturating_duration_since(self.at).as_nanos() as f64;
        let capacity = (elapsed_ns * f64::from(later.cpus.max(1))).max(1.0);
        let server = later.server_ns.saturating_sub(self.server_ns) as f64
            + later.server_reaped_ticks.saturating_sub(self.server_reaped_ticks) as f64 * tick_ns;
        let own = later.own_ns.saturating_sub(self.own_ns) as f64;
        let idle = later.idle.saturating_sub(self.idle) as f64 * tick_ns;
        let steal = later.steal.saturating_sub(self.steal) as f64 * tick_ns;
        // All tasks' time from a nanosecond source both snapshots read; else the ticks'
        // busy time (what was neither idle nor stolen).
        let (source, tasks) = match (self.tasks, later.tasks) {
            (Some((a, x)), Some((b, y))) if a == b => (a, y.saturating_sub(x) as f64),
            _ => (BusySource::ProcStat, (capacity - idle - steal).max(0.0)),
        };
        let other = (tasks - server - own).max(0.0);
        let (steal_pct, other_busy_pct) =
            ((100.0 * steal / capacity).min(100.0), (100.0 * other / capacity).min(100.0));
        let (disturbed, judged) = judge(steal_pct, other_busy_pct, elapsed_ns / 1e9, source);
        PointCpu {
            server_cpu_us: server / 1e3,
            client_cpu_us: client_here.then_some(own / 1e3),
            elapsed_s: elapsed_ns / 1e9,
            fine_clock: true,
            load1,
            steal_pct,
            other_busy_pct,
            disturbed,
            others_source: Some(source),
            judged: Some(judged),
            shares: None,
        }
    }
}

/// The one-minute load average.
pub(crate) fn load1() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

/// The parent pid and cutime+cstime (fields 16-17 of /proc/PID/stat: the reaped children's
/// time), read after the command name's closing parenthesis (names may hold spaces).
fn stat_fields(text: &str) -> Option<(u32, u64)> {
    let rest = text.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field k is f[k - 3].
    let ppid = f.get(1)?.parse().ok()?;
    let ticks = (13..=14).map(|i| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)).sum();
    Some((ppid, ticks))
}

/// The CPU time of `pid` and all its descendants: their clocks' sum in ns, and the ticks of
/// the children they reaped.
fn tree_cpu(pid: u32) -> (u64, u64) {
    let mut procs: Vec<(u32, u32, u64)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if let Some((ppid, ticks)) =
            std::fs::read_to_string(format!("/proc/{p}/stat")).ok().and_then(|t| stat_fields(&t))
        {
            procs.push((p, ppid, ticks));
        }
    }
    let members = tree(pid, &procs);
    let reaped = procs.iter().filter(|p| members.contains(&p.0)).map(|p| p.2).sum();
    // A process that exits between the scan and its clock's reading counts nothing here;
    // its parent's cutime takes its time once reaped.
    let ns = members
        .iter()
        .filter_map(|p| spidey_sys::cputime::process_cpu_time(*p).ok())
        .map(|d| d.as_nanos() as u64)
        .sum();
    (ns, reaped)
}

/// `root` and its descendants among (pid, ppid, _).
fn tree(root: u32, procs: &[(u32, u32, u64)]) -> Vec<u32> {
    let mut members = vec![root];
    let mut i = 0;
    while i < members.len() {
        let parent = members[i];
        members.extend(procs.iter().filter(|p| p.1 == parent).map(|p| p.0));
        i += 1;
    }
    members
}

/// (idle + iowait, steal) ticks of the machine from /proc/stat's `cpu` line, and how many
/// CPUs it lists (`cpuN` lines).
fn system_ticks() -> Option<(u64, u64, u32)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let cpus = text.lines().filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit));
    // user nice system idle iowait irq softirq steal (guest time is within user).
    Some((v.get(3)? + v.get(4).unwrap_or(&0), *v.get(7).unwrap_or(&0), cpus.count() as u32))
}

/// The root cgroup's `cpuacct.usage` under the names cgroup v1 is mounted at.
const CPUACCT_USAGE: [&str; 2] = ["/sys/fs/cgroup/cpuacct/cpuacct.usage", "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage"];

/// All tasks' run time on the machine, in ns, and its source: the root cgroup's
/// `cpuacct.usage`, else `/proc/schedstat`; None with neither (the caller falls back to
/// `/proc/stat`'s ticks). (cgroup v2's root `cpu.stat` is made from the tick-sampled
/// counters /proc/stat shows, so it is not taken.)
fn tasks_ns() -> Option<(BusySource, u64)> {
    let cpuacct = CPUACCT_USAGE.iter().find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok());
    if let Some(ns) = cpuacct {
        return Some((BusySource::Cpuacct, ns));
    }
    let text = std::fs::read_to_string("/proc/schedstat").ok()?;
    schedstat_run_ns(&text).map(|ns| (BusySource::Schedstat, ns))
}

/// The sum over `/proc/schedstat`'s `cpuN` lines of field 7, the time the CPU spent running
/// tasks (ns), in the layout of version 15 and later (`cpuN yld_count 0 sched_count
/// sched_goidle ttwu_count ttwu_local rq_cpu_time run_delay pcount`). None for another
/// version, no CPU line, or a CPU line without a number there: a partial sum would read as
/// idle CPUs.
fn schedstat_run_ns(text: &str) -> Option<u64> {
    let mut lines = text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>());
    let version = lines.find(|f| f.first() == Some(&"version"))?.get(1)?.parse::<u32>().ok()?;
    if version < 15 {
        return None;
    }
    let is_cpu =
        |name: &str| name.strip_prefix("cpu").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let mut total: Option<u64> = None;
    for f in lines.filter(|f| f.first().is_some_and(|n| is_cpu(n))) {
        let ns = f.get(7)?.parse::<u64>().ok()?;
        total = Some(total.unwrap_or(0).checked_add(ns)?);
    }
    total
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

    /// The CPUs a server asking for `cpus` runs on: the server's half without a number;
    /// with one, that many from the top of all the lab's CPUs (the server's half first,
    /// then the load generator's, shared), at most all of them.
    pub fn server_set(&self, cpus: Option<usize>) -> Vec<usize> {
        match (self, cpus) {
            (Pinning::Split { server, .. }, None) => server.clone(),
            (Pinning::Split { server, client }, Some(n)) => {
                let all: Vec<usize> = client.iter().chain(server).copied().collect();
                all[all.len().saturating_sub(n.max(1))..].to_vec()
            }
            (Pinning::Shared(all), _) => all.clone(),
        }
    }

    /// Runs `spawn` with this thread on the server's CPUs ([`Pinning::server_set`]), so the
    /// child inherits them, then returns the thread to the client's.
    pub fn spawn_as_server<T>(&self, cpus: Option<usize>, spawn: impl FnOnce() -> T) -> T {
        let Pinning::Split { client, .. } = self else { return spawn() };
        let server = self.server_set(cpus);
        let _ = sched_setaffinity(None, &cpu_set(&server));
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
    use std::time::{Duration, Instant};

    #[test]
    fn stat_fields_read_past_a_name_with_spaces_and_parentheses() {
        let line = "42 (a b) c) S 7 42 42 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0";
        assert_eq!(stat_fields(line), Some((7, 33 + 44)));
    }

    #[test]
    fn a_tree_holds_descendants_only() {
        // 10 -> 11 -> 12, and 20 unrelated (its child 21 too).
        let procs = [(10, 1, 5), (11, 10, 7), (12, 11, 100), (20, 1, 1000), (21, 20, 9)];
        assert_eq!(tree(10, &procs), [10, 11, 12]);
        assert_eq!(tree(11, &procs), [11, 12]);
    }

    /// Others' share and the disturbed flag from two snapshots on a fake clock: half a
    /// second on two CPUs is 1 s of CPU; what is neither idle, stolen, the server's nor the
    /// load generator's went to other processes.
    #[test]
    fn others_are_what_the_machine_used_beyond_the_lab() {
        let tick = 1e9 / rustix::param::clock_ticks_per_second() as f64;
        let ticks = |ms: f64| (ms * 1e6 / tick).round() as u64;
        let start = Instant::now();
        let before = Snapshot {
            at: start,
            server_ns: 7,
            server_reaped_ticks: 3,
            own_ns: 11,
            idle: 1000,
            steal: 50,
            cpus: 2,
            tasks: None,
        };
        // (idle ms, steal ms, server's clock ms, reaped ms, own ms) → (others %, steal %, disturbed)
        let cases = [
            ((300.0, 0.0, 350.0, 50.0, 200.0), (10.0, 0.0, false)),
            ((200.0, 0.0, 350.0, 50.0, 200.0), (20.0, 0.0, true)),
            ((300.0, 30.0, 350.0, 50.0, 200.0), (7.0, 3.0, true)),
            ((600.0, 0.0, 350.0, 50.0, 200.0), (0.0, 0.0, false)),
        ];
        for ((idle, steal, server, reaped, own), (others, stolen, disturbed)) in cases {
            let after = Snapshot {
                at: start + Duration::from_millis(500),
                server_ns: 7 + (server * 1e6) as u64,
                server_reaped_ticks: 3 + ticks(reaped),
                own_ns: 11 + (own * 1e6) as u64,
                idle: 1000 + ticks(idle),
                steal: 50 + ticks(steal),
                cpus: 2,
                tasks: None,
            };
            let cpu = before.until(&after, 0.5, true);
            assert!((cpu.other_busy_pct - others).abs() < 1e-6, "{cpu:?}");
            assert!((cpu.steal_pct - stolen).abs() < 1e-6, "{cpu:?}");
            assert_eq!(cpu.disturbed, disturbed, "{cpu:?}");
            assert!((cpu.server_cpu_us - (server + reaped) * 1e3).abs() < 1e-3, "{cpu:?}");
            assert_eq!(cpu.client_cpu_us, Some(own * 1e3));
            assert!((cpu.client_busy_pct() - own / 5.0).abs() < 1e-9, "{cpu:?}");
            assert!(cpu.fine_clock && cpu.elapsed_s == 0.5);
            assert_eq!((cpu.others_source, cpu.judged), (Some(BusySource::ProcStat), Some(Judged::All)));
            assert_eq!(before.until(&after, 0.5, false).client_cpu_us, None, "load from other hosts");
        }
    }

    /// A point of `ms` on two CPUs where the server used `server` ms of CPU and the load
    /// generator `own`; `/proc/stat` moved by `idle` and `steal` ticks; all tasks' time, when
    /// a nanosecond source is given, by `tasks` ms.
    fn point(ms: f64, server: f64, own: f64, idle: u64, steal: u64, tasks: Option<(BusySource, f64)>) -> PointCpu {
        let start = Instant::now();
        let at = |t: Duration, server: f64, own: f64, idle, steal, tasks: Option<(BusySource, f64)>| Snapshot {
            at: start + t,
            server_ns: 1_000 + (server * 1e6) as u64,
            server_reaped_ticks: 0,
            own_ns: 2_000 + (own * 1e6) as u64,
            idle: 5_000 + idle,
            steal: 70 + steal,
            cpus: 2,
            tasks: tasks.map(|(s, t)| (s, 3_000 + (t * 1e6) as u64)),
        };
        let before = at(Duration::ZERO, 0.0, 0.0, 0, 0, tasks.map(|(s, _)| (s, 0.0)));
        let after = at(Duration::from_secs_f64(ms / 1e3), server, own, idle, steal, tasks);
        before.until(&after, 0.0, true)
    }

    /// The disturbed flag by the point's length and source: steal (ticks only) is judged
    /// from [`STEAL_MIN_S`], others' share from a nanosecond source at any length and from
    /// ticks only from [`TICK_MIN_S`]. `old` is the rule before sources and lengths: steal
    /// or others' share (as recorded) over its limit.
    #[test]
    fn disturbed_by_length_and_source() {
        use BusySource::*;
        let old = |c: &PointCpu| c.steal_pct > STEAL_LIMIT_PCT || c.other_busy_pct > OTHER_BUSY_LIMIT_PCT;
        // (ms, server ms, own ms, idle ticks, steal ticks, tasks) → (disturbed, judged, old rule)
        let cases = [
            // 5 ms, one whole tick of steal (100% of the point's 10 ms of CPU) and nothing else
            // running: the tick says nothing at this length.
            ((5.0, 4.0, 4.0, 0, 1, Some((Cpuacct, 8.0))), (false, Judged::OthersOnly, true)),
            ((5.0, 4.0, 4.0, 0, 1, None), (false, Judged::TooShort, true)),
            // 5 ms, no idle tick: by ticks the machine was wholly busy, 20% of it by others; by
            // the ns source it ran the lab only.
            ((5.0, 4.0, 4.0, 0, 0, Some((Cpuacct, 8.1))), (false, Judged::OthersOnly, true)),
            ((5.0, 4.0, 4.0, 0, 0, Some((Schedstat, 8.1))), (false, Judged::OthersOnly, true)),
            // 5 ms with others really busy, seen in ns: disturbed at any length.
            ((5.0, 4.0, 4.0, 0, 0, Some((Cpuacct, 12.0))), (true, Judged::OthersOnly, true)),
            // 1 s, 30% steal (60 ticks of 200): disturbed from either source.
            ((1000.0, 500.0, 500.0, 40, 60, Some((Cpuacct, 1000.0))), (true, Judged::All, true)),
            ((1000.0, 500.0, 500.0, 40, 60, None), (true, Judged::All, true)),
            // 1 s, 1% steal: clean.
            ((1000.0, 500.0, 500.0, 98, 2, Some((Cpuacct, 1000.0))), (false, Judged::All, false)),
            // 300 ms from ticks: others' share judged (17%), steal not (5%).
            ((300.0, 200.0, 200.0, 10, 0, None), (true, Judged::OthersOnly, true)),
            ((300.0, 200.0, 200.0, 17, 3, None), (false, Judged::OthersOnly, true)),
        ];
        for ((ms, server, own, idle, steal, tasks), (disturbed, judged, was)) in cases {
            let cpu = point(ms, server, own, idle, steal, tasks);
            let source = tasks.map_or(ProcStat, |t| t.0);
            assert_eq!(
                (cpu.disturbed, cpu.judged, cpu.others_source),
                (disturbed, Some(judged), Some(source)),
                "{cpu:?}"
            );
            assert_eq!(old(&cpu) || old(&point(ms, server, own, idle, steal, None)), was, "old rule: {cpu:?}");
        }
        // The 5 ms point's steal is still recorded: a whole tick, 100%.
        assert_eq!(point(5.0, 4.0, 4.0, 0, 1, Some((Cpuacct, 8.0))).steal_pct, 100.0);
        // Snapshots from different sources: ticks.
        let start = Instant::now();
        let snap = |tasks| Snapshot {
            at: start,
            server_ns: 0,
            server_reaped_ticks: 0,
            own_ns: 0,
            idle: 0,
            steal: 0,
            cpus: 2,
            tasks,
        };
        let later = Snapshot { at: start + Duration::from_secs(1), idle: 200, ..snap(Some((Schedstat, 9))) };
        let cpu = snap(Some((Cpuacct, 5))).until(&later, 0.0, true);
        assert_eq!((cpu.others_source, cpu.judged, cpu.disturbed), (Some(ProcStat), Some(Judged::All), false));
        // A full run's points are long enough for steal.
        assert!(crate::run::runner::MIN_POINT.as_secs_f64() >= STEAL_MIN_S);
    }

    /// `/proc/schedstat`'s run time: field 7 of each `cpuN` line, summed, whatever the
    /// spacing; nothing from another version's layout or a line cut short.
    #[test]
    fn schedstat_run_time_is_field_7_of_each_cpu() {
        let real = "version 15\ntimestamp 4295843322\n\
            cpu0 0 0 1797146 496412 827012 458426 1285424385043 92311244518 1300546\n\
            domain0 00000003 1014 1000 10 2066 4 0 0 1000 3 3 0 0 0 0 0 3 9 9 0 0 0 0 0 0 0 0 0 2 0 0 0 0 0 1 1 0 0 0 0 0 0 0 0 0 0 0 0\n\
            cpu1 0 0 1752437 449436 846311 465474 1297412345678 93611110001 1302888\n\
            domain0 00000003 1024 1012 9 2051 3 0 0 1012 4 4 0 0 0 0 0 4 8 8 0 0 0 0 0 0 0 0 0 1 0 0 0 0 0 2 2 0 0 0 0 0 0 0 0 0 0 0 0\n";
        assert_eq!(schedstat_run_ns(real), Some(1285424385043 + 1297412345678));
        // Tabs, runs of spaces, leading blanks, CRLF, a blank line, a `cpu` line without a number.
        let odd = "  version\t17 \r\ntimestamp 1\n\n\tcpu0   0 0\t5 6 7 8   100\t\t9 10\r\ncpu 1 2 3 4 5 6 7777 8 9\ncpux 1 2 3 4 5 6 7777 8 9\n cpu12 0 0 5 6 7 8 23 9 10 11\n";
        assert_eq!(schedstat_run_ns(odd), Some(123));
        let cases = [
            "version 14\ncpu0 0 0 0 0 0 0 0 0 0 1285424385043 92311244518 1300546\n",
            "version 15\ncpu0 0 0 1 2 3 4 100 5 6\ncpu1 0 0 1 2 3 4\n",
            "version 15\ncpu0 0 0 1 2 3 4 -100 5 6\n",
            "version 15\ncpu0 0 0 1 2 3 4 1e9 5 6\n",
            "version 15\ndomain0 3 1 2 3 4 5 6 7 8\n",
            "cpu0 0 0 1 2 3 4 100 5 6\n",
            "version x\ncpu0 0 0 1 2 3 4 100 5 6\n",
            "version 15\ncpu0 0 0 1 2 3 4 18446744073709551615 5 6\ncpu1 0 0 1 2 3 4 1 5 6\n",
            "",
        ];
        for text in cases {
            assert_eq!(schedstat_run_ns(text), None, "{text:?}");
        }
    }

    /// An idle machine's short points, as the old rule and the new judge them: 2-20 ms on
    /// two CPUs, the server and the load generator each busy 20-100% of one CPU, others 0.5%
    /// of the machine and steal 0.5% (what this VM shows idle), each kernel counter at a
    /// random phase of its 10 ms tick in each try; a ns source read to within 0.1 ms. A point
    /// is excluded when its three tries are all flagged.
    #[test]
    fn short_points_on_an_idle_machine_are_not_tick_artifacts() {
        let tick = 1e9 / rustix::param::clock_ticks_per_second() as f64;
        let mut rng = fastrand::Rng::with_seed(43);
        let old = |c: &PointCpu| c.steal_pct > STEAL_LIMIT_PCT || c.other_busy_pct > OTHER_BUSY_LIMIT_PCT;
        // A point's length and CPU use are its own, the same in each try; the counters'
        // phases and the ns source's error are each try's.
        let try_once = |rng: &mut fastrand::Rng, (ms, server, own): (f64, f64, f64)| {
            let wall = ms * 1e6;
            let (others, steal) = (0.005 * 2.0 * wall, 0.005 * 2.0 * wall);
            let idle = 2.0 * wall - server - own - others - steal;
            let (idle0, steal0) = (rng.f64() * tick, rng.f64() * tick);
            let ticks = |from: f64, ns: f64| ((from + ns) / tick).floor() as u64;
            let tasks = server + own + others + (rng.f64() - 0.5) * 2e5;
            let start = Instant::now();
            let snap = |at, server: f64, own: f64, idle, steal, tasks: Option<f64>| Snapshot {
                at,
                server_ns: server as u64,
                server_reaped_ticks: 0,
                own_ns: own as u64,
                idle,
                steal,
                cpus: 2,
                tasks: tasks.map(|t| (BusySource::Cpuacct, 1_000_000 + t.max(0.0) as u64)),
            };
            let end = start + Duration::from_nanos(wall as u64);
            let (i, s) = (ticks(idle0, idle), ticks(steal0, steal));
            let was = snap(start, 0.0, 0.0, 0, 0, None).until(&snap(end, server, own, i, s, None), 0.0, true);
            let now =
                snap(start, 0.0, 0.0, 0, 0, Some(0.0)).until(&snap(end, server, own, i, s, Some(tasks)), 0.0, true);
            (old(&was), now.disturbed)
        };
        let n = 20_000;
        let (mut flagged, mut excluded) = ([0u32; 2], [0u32; 2]);
        for _ in 0..n {
            let ms = 2.0 + 18.0 * rng.f64();
            let point = (ms, ms * 1e6 * (0.2 + 0.8 * rng.f64()), ms * 1e6 * (0.2 + 0.8 * rng.f64()));
            let tries: Vec<(bool, bool)> = (0..3).map(|_| try_once(&mut rng, point)).collect();
            flagged[0] += u32::from(tries[0].0);
            flagged[1] += u32::from(tries[0].1);
            excluded[0] += u32::from(tries.iter().all(|t| t.0));
            excluded[1] += u32::from(tries.iter().all(|t| t.1));
        }
        let pct = |k: u32| 100.0 * f64::from(k) / f64::from(n);
        eprintln!(
            "2-20 ms points, idle machine: old rule flags {:.1}%, excludes {:.1}%; new rule flags {:.2}%, excludes {:.2}%",
            pct(flagged[0]),
            pct(excluded[0]),
            pct(flagged[1]),
            pct(excluded[1])
        );
        assert!(pct(excluded[1]) < 1.0 && pct(flagged[1]) < 1.0, "the new rule");
        assert!(pct(excluded[0]) > 10.0 && pct(flagged[0]) > 30.0, "the old rule's tick artifact");
    }

    /// The client-bound rule on one repeat: the busy and idle shares from the CPU times and
    /// the CPUs each side had, and no figure where one is missing, not finite, negative, or
    /// a side had no CPU.
    #[test]
    fn saturation_table() {
        let one = Shares { server: 1, client: 1, shared: 0 };
        let sat = |c: Option<f64>, s: f64, e: f64, sh: Shares| {
            Saturation::of(c, s, e, sh)
                .map(|x| (x.client_busy_pct.round(), x.server_idle_pct.round(), x.client_bound()))
        };
        // (client µs, server µs, elapsed s, shares) → (busy %, idle %, client-bound)
        let cases = [
            ((Some(485e3), 360e3, 0.5, one), Some((97.0, 28.0, true))),
            ((Some(450e3), 400e3, 0.5, one), Some((90.0, 20.0, true))),
            ((Some(445e3), 360e3, 0.5, one), Some((89.0, 28.0, false))),
            ((Some(485e3), 410e3, 0.5, one), Some((97.0, 18.0, false))),
            // Two server CPUs, one of them the client's: its time counts against the server's idle.
            ((Some(480e3), 300e3, 0.5, Shares { server: 2, client: 1, shared: 1 }), Some((96.0, 22.0, true))),
            ((Some(480e3), 400e3, 0.5, Shares { server: 2, client: 1, shared: 1 }), Some((96.0, 12.0, false))),
            // Two client threads: busy is of both.
            ((Some(480e3), 100e3, 0.5, Shares { server: 1, client: 2, shared: 0 }), Some((48.0, 80.0, false))),
            // A clock a little past the wall clock: clamped.
            ((Some(510e3), 0.0, 0.5, one), Some((100.0, 100.0, true))),
            ((Some(100e3), 600e3, 0.5, one), Some((20.0, 0.0, false))),
            // Missing, hostile and empty figures: none.
            ((None, 360e3, 0.5, one), None),
            ((Some(485e3), 360e3, 0.0, one), None),
            ((Some(485e3), 360e3, -0.5, one), None),
            ((Some(f64::NAN), 360e3, 0.5, one), None),
            ((Some(485e3), f64::NAN, 0.5, one), None),
            ((Some(485e3), 360e3, f64::INFINITY, one), None),
            ((Some(-1.0), 360e3, 0.5, one), None),
            ((Some(485e3), -1.0, 0.5, one), None),
            ((Some(485e3), 360e3, 0.5, Shares { server: 0, client: 1, shared: 0 }), None),
            ((Some(485e3), 360e3, 0.5, Shares { server: 1, client: 0, shared: 0 }), None),
            ((Some(485e3), 360e3, 0.5, Shares::default()), None),
            // More shared than the server has: at most its own.
            ((Some(480e3), 0.0, 0.5, Shares { server: 1, client: 1, shared: u32::MAX }), Some((96.0, 4.0, false))),
        ];
        for ((c, s, e, sh), want) in cases {
            assert_eq!(sat(c, s, e, sh), want, "{c:?} {s} {e} {sh:?}");
        }
        // A record without shares takes the fallback; one with its own keeps them.
        let cpu = PointCpu { server_cpu_us: 360e3, client_cpu_us: Some(485e3), elapsed_s: 0.5, ..Default::default() };
        assert!(cpu.saturation(one).is_some_and(|x| x.client_bound()));
        let remote = PointCpu { shares: Some(Shares::default()), ..cpu.clone() };
        assert_eq!(remote.saturation(one), None, "a server on another host: no figure");
    }

    /// Who had which CPUs, from the lab's split: the server's half, or `cpus` from the top
    /// (shared with the load generator past the half); one load thread.
    #[test]
    fn shares_follow_the_split() {
        let cases = [
            ((2, None), Shares { server: 1, client: 1, shared: 0 }),
            ((2, Some(1)), Shares { server: 1, client: 1, shared: 0 }),
            ((2, Some(2)), Shares { server: 2, client: 1, shared: 1 }),
            ((2, Some(8)), Shares { server: 2, client: 1, shared: 1 }),
            ((8, None), Shares { server: 4, client: 1, shared: 0 }),
            ((8, Some(6)), Shares { server: 6, client: 1, shared: 2 }),
            ((1, None), Shares { server: 1, client: 1, shared: 1 }),
            ((0, None), Shares { server: 0, client: 0, shared: 0 }),
        ];
        for ((cores, cpus), want) in cases {
            assert_eq!(Shares::on(cores, cpus), want, "{cores} cores, cpus {cpus:?}");
        }
        // A load thread per CPU of the client's half: the client keeps all of them busy.
        let eight = split(&(0..8).collect::<Vec<_>>());
        assert_eq!(Shares::of(&eight, None, 4), Shares { server: 4, client: 4, shared: 0 });
        assert_eq!(Shares::of(&eight, None, 16), Shares { server: 4, client: 4, shared: 0 });
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
    /// driver do) is counted through cutime, once the child is gone; a live busy child
    /// through its clock, to the nanosecond.
    #[test]
    fn reaped_and_live_children_count_in_the_tree() {
        // The busy grandchild, reaped by its shell, which then leaves a mark and waits: the
        // test waits for the mark, however long a busy machine makes the loop take.
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("reaped");
        let script = format!(
            "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; touch '{}'; sleep 120; true",
            mark.display()
        );
        let mut child = std::process::Command::new("sh").args(["-c", &script]).spawn().unwrap();
        let pid = child.id();
        let cutime = || {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let rest = text.rsplit_once(')').map(|r| r.1.to_string()).unwrap_or_default();
            rest.split_whitespace().nth(13).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0)
        };
        let start = Instant::now();
        let mut live = 0;
        while !mark.exists() && start.elapsed() < Duration::from_secs(110) {
            live = live.max(tree_cpu(pid).0);
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(mark.exists(), "the busy child did not finish in 110 s");
        let (reaped, (_, tree_reaped)) = (cutime(), tree_cpu(pid));
        let _ = child.kill();
        let _ = child.wait();
        assert!(reaped > 0, "the busy child ran and was reaped");
        assert!(tree_reaped >= reaped, "the tree ({tree_reaped}) counts the reaped child's ticks ({reaped})");
        assert!(live > 0 && live % 10_000_000 != 0, "the live child's clock, in ns: {live}");
    }
}
