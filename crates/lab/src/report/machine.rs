//! The machine a run happened on, for the report: numbers mean little without it.

use crate::report::render::{self, Table};
use serde::{Deserialize, Serialize};
use std::process::Command;

/// Saved beside the results as `machine.json`, so a report re-rendered later
/// (`spidey lab --report`) describes the machine the run happened on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub memory: String,
    pub kernel: String,
    pub build: String,
    pub spidey: String,
    pub rustc: String,
    pub nginx: String,
    /// When the report was written: other load on the machine skews every number.
    pub load: String,
    /// Which CPUs the servers and the load generator ran on.
    pub pinning: String,
    /// The network between the load and the server: loopback, other hosts, a delay line.
    pub network: String,
}

impl Machine {
    /// The machine a run's results were measured on: `machine.json` in `dir`; else the
    /// machine table of the `report.md` the run wrote there; else every field "not recorded"
    /// (never the machine rendering the report, which may not be the one that measured).
    pub fn of_results(dir: &std::path::Path) -> Machine {
        if let Some(m) = std::fs::read(dir.join(FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
            return m;
        }
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap_or_default();
        Machine::from_report(&report)
    }

    /// The machine as a report's machine table ([`Machine::table`]) gives it; "not
    /// recorded" where a row is missing.
    pub fn from_report(md: &str) -> Machine {
        let cell = |label: &str| {
            md.lines()
                .filter_map(|l| l.strip_prefix("| ")?.strip_suffix(" |")?.split_once(" | "))
                .find(|(k, _)| *k == label)
                .map(|(_, v)| render::unescape(v))
                .unwrap_or_else(|| NOT_RECORDED.into())
        };
        Machine {
            cores: cell("Cores").parse().unwrap_or(0),
            cpu: cell("CPU"),
            memory: cell("Memory"),
            kernel: cell("Kernel"),
            build: cell("Build profile"),
            spidey: cell("spidey"),
            rustc: cell("rustc"),
            nginx: cell("nginx"),
            load: cell(LOAD),
            pinning: cell("Pinning"),
            network: cell("Network"),
        }
    }

    /// Writes `machine.json` into `out`.
    pub fn save(&self, out: &crate::run::out_dir::OutDir) -> anyhow::Result<()> {
        out.write(FILE, serde_json::to_vec_pretty(self)?)
    }

    pub fn describe(pinning: &crate::run::cpu::Pinning) -> Machine {
        Machine {
            // All the machine's CPUs: the lab's own thread is pinned to some of them.
            cores: online_cpus().unwrap_or_else(crate::run::cpu::cores),
            cpu: cpu_model().unwrap_or_else(unknown),
            memory: memory().unwrap_or_else(unknown),
            kernel: kernel().unwrap_or_else(unknown),
            build: if cfg!(debug_assertions) { "debug (numbers are not representative)" } else { "release" }.into(),
            spidey: spidey_version(),
            rustc: first_line("rustc", &["--version"]).unwrap_or_else(unknown),
            nginx: first_line("nginx", &["-v"]).unwrap_or_else(|| "not installed".into()),
            load: load_average().unwrap_or_else(unknown),
            pinning: pinning.describe(),
            network: "loopback".into(),
        }
    }

    /// The report's machine table: each value, read from the machine or from a
    /// `machine.json`, as data ([`render::literal`]).
    pub fn table(&self) -> Table {
        let rows = self.rows().into_iter().map(|(k, v)| vec![k.to_string(), render::literal(&v)]).collect();
        Table::new(vec!["Machine".to_string(), "This run".to_string()], rows)
    }

    /// (name, value) rows of the machine table.
    fn rows(&self) -> Vec<(&'static str, String)> {
        vec![
            ("Cores", if self.cores == 0 { NOT_RECORDED.into() } else { self.cores.to_string() }),
            ("CPU", self.cpu.clone()),
            ("Memory", self.memory.clone()),
            ("Kernel", self.kernel.clone()),
            ("Build profile", self.build.clone()),
            ("spidey", self.spidey.clone()),
            ("rustc", self.rustc.clone()),
            ("nginx", self.nginx.clone()),
            (LOAD, self.load.clone()),
            ("Pinning", self.pinning.clone()),
            ("Network", self.network.clone()),
        ]
    }
}

/// The machine's description beside the results.
pub(crate) const FILE: &str = "machine.json";

const NOT_RECORDED: &str = "not recorded with the results";

const LOAD: &str = "Load average (1, 5, 15 min) at report time";

fn unknown() -> String {
    "unknown".into()
}

fn online_cpus() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    Some(info.lines().filter(|l| l.starts_with("processor")).count()).filter(|n| *n > 0)
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

fn memory() -> Option<String> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: f64 = info.lines().find(|l| l.starts_with("MemTotal:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(format!("{:.1} GiB", kb / (1024.0 * 1024.0)))
}

fn kernel() -> Option<String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    Some(format!("Linux {}", release.trim()))
}

fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(text.split_whitespace().take(3).collect::<Vec<_>>().join(", "))
}

/// The version and, when this binary runs from a checkout's `target/`, the commit that
/// checkout is at (never the working directory's, which may be another checkout), with
/// "+ changes" when it has uncommitted changes. A build is not stamped: a checkout moved
/// on since the build names its new commit.
fn spidey_version() -> String {
    let version = env!("CARGO_PKG_VERSION");
    let exe = std::env::current_exe().ok();
    let checkout = exe.as_deref().and_then(|exe| exe.ancestors().find(|d| d.ends_with("target"))?.parent());
    let Some(dir) = checkout.and_then(|d| d.to_str()) else { return version.to_string() };
    let Some(commit) = first_line("git", &["-C", dir, "rev-parse", "--short", "HEAD"]) else {
        return version.to_string();
    };
    let changed = first_line("git", &["-C", dir, "status", "--porcelain", "--untracked-files=no"]).is_some();
    format!("{version} (commit {commit}{}, built in {dir})", if changed { " + changes" } else { "" })
}

/// The first line a program prints (stdout, else stderr), if it runs.
fn first_line(program: &str, args: &[&str]) -> Option<String> {
    let path = crate::run::server::which(program)?;
    let out = Command::new(path).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = if out.stdout.is_empty() { out.stderr } else { out.stdout };
    String::from_utf8_lossy(&text).lines().next().map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report's machine table gives back the machine it was written from, markup in its
    /// fields included; a report without one gives "not recorded", never the machine
    /// reading it.
    #[test]
    fn machine_round_trips_through_a_reports_table() {
        let m = Machine {
            cores: 2,
            cpu: "AMD EPYC <script>alert(1)</script>".into(),
            memory: "23.5 GiB".into(),
            kernel: "Linux 6.18 [x](javascript:y)".into(),
            build: "release".into(),
            spidey: "0.1.0 (commit abc, built in /w/a_b*c*)".into(),
            rustc: "rustc 1.95.0 `\\`".into(),
            nginx: "nginx/1.22.1 & <img src=x onerror=y>".into(),
            load: "2.54, 4.21, 7.51".into(),
            pinning: "server on CPUs 1 | load on 0".into(),
            network: "loopback ~~".into(),
        };
        let md =
            render::markdown(&[render::Block::Heading(2, "Appendix: machine".into()), render::Block::Table(m.table())]);
        let back = Machine::from_report(&md);
        assert_eq!(back.rows(), m.rows());
        let none = Machine::from_report("# a report without a machine table\n");
        assert!(none.rows().iter().all(|(_, v)| v == NOT_RECORDED), "{:?}", none.rows());
    }
}
