//! The machine a run happened on, for the report: numbers mean little without it.

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
    /// The machine a run's results were measured on: `machine.json` in `dir`, else this
    /// machine, said to be the one the report was written on.
    pub fn of_results(dir: &std::path::Path) -> Machine {
        if let Some(m) = std::fs::read(dir.join(FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
            return m;
        }
        let mut m = Machine::describe_with("not recorded with the results".into());
        m.cpu += " (the machine that wrote this report: the results do not say which machine ran them)";
        m
    }

    /// Writes `machine.json` into `dir`.
    pub fn save(&self, dir: &std::path::Path) -> anyhow::Result<()> {
        std::fs::write(dir.join(FILE), serde_json::to_vec_pretty(self)?)?;
        Ok(())
    }

    pub fn describe(pinning: &crate::lab::cpu::Pinning) -> Machine {
        Machine::describe_with(pinning.describe())
    }

    fn describe_with(pinning: String) -> Machine {
        Machine {
            // All the machine's CPUs: the lab's own thread is pinned to some of them.
            cores: online_cpus().unwrap_or_else(crate::modes::cores),
            cpu: cpu_model().unwrap_or_else(unknown),
            memory: memory().unwrap_or_else(unknown),
            kernel: kernel().unwrap_or_else(unknown),
            build: if cfg!(debug_assertions) { "debug (numbers are not representative)" } else { "release" }.into(),
            spidey: spidey_version(),
            rustc: first_line("rustc", &["--version"]).unwrap_or_else(unknown),
            nginx: first_line("nginx", &["-v"]).unwrap_or_else(|| "not installed".into()),
            load: load_average().unwrap_or_else(unknown),
            pinning,
            network: "loopback".into(),
        }
    }

    /// (name, value) rows for the report's machine table.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        vec![
            ("Cores", self.cores.to_string()),
            ("CPU", self.cpu.clone()),
            ("Memory", self.memory.clone()),
            ("Kernel", self.kernel.clone()),
            ("Build profile", self.build.clone()),
            ("spidey", self.spidey.clone()),
            ("rustc", self.rustc.clone()),
            ("nginx", self.nginx.clone()),
            ("Load average (1, 5, 15 min) at report time", self.load.clone()),
            ("Pinning", self.pinning.clone()),
            ("Network", self.network.clone()),
        ]
    }
}

/// The machine's description beside the results.
const FILE: &str = "machine.json";

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

fn spidey_version() -> String {
    let commit = first_line("git", &["rev-parse", "--short", "HEAD"]);
    match commit {
        Some(c) => format!("{} (commit {c})", env!("CARGO_PKG_VERSION")),
        None => env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// The first line a program prints (stdout, else stderr), if it runs.
fn first_line(program: &str, args: &[&str]) -> Option<String> {
    let path = crate::lab::server::which(program)?;
    let out = Command::new(path).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = if out.stdout.is_empty() { out.stderr } else { out.stdout };
    String::from_utf8_lossy(&text).lines().next().map(|l| l.trim().to_string())
}
