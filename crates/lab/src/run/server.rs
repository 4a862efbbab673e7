//! The server under test: `spidey serve` (this very binary) or a peer such as nginx, as a
//! child process on a free loopback port. Started, waited for until it answers, stopped
//! with SIGTERM (SIGKILL to its process group after a grace period), and its process group
//! killed if the lab itself unwinds.
//!
//! If the lab dies without unwinding (SIGKILL), the kernel sends the server SIGTERM
//! (prctl PR_SET_PDEATHSIG, see [`spidey_sys::process`]). SIGTERM rather than SIGKILL, so a
//! server with processes of its own stops them too: a SIGKILLed nginx master leaves its
//! worker running, holding the port. The death signal follows the thread that spawned the
//! server; that is the lab's main thread (`lab::run` runs on it), which lives as long as
//! the lab. A server is spawned on the server's CPUs when the lab pins ([`crate::run::cpu`]).
//! A server on another host (`--server-via`) is stopped there ([`RemoteServer`]).

use crate::experiment::{Peer, Scheme, ServerSpec};
use crate::run::docroot::DocRoot;
use crate::run::hosts::Hosts;
use crate::run::remote_server::RemoteServer;
use anyhow::Context;
use rustix::process::{kill_process, kill_process_group, Pid, Signal};
use spidey_sys::process::die_with_parent;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const START_LIMIT: Duration = Duration::from_secs(10);
const STOP_LIMIT: Duration = Duration::from_secs(15);

/// A server that answers on `ip`:`port`.
pub(crate) struct Running {
    child: Child,
    pub port: u16,
    pub ip: IpAddr,
    /// Whether it answers `--metrics` at `server_counts::PATH` (spidey does, peers do not).
    pub counts: bool,
    /// Over HTTPS: the CA file that verifies its certificate ([`crate::run::tls`]).
    pub tls: Option<PathBuf>,
    /// On another host: stopped there, since signals to `child` (the prefix) do not reach it.
    remote: Option<RemoteServer>,
}

/// The outcome of a start: running, or not available here (with the reason for the report).
pub(crate) enum Started {
    Running(Running),
    Unavailable(String),
}

/// Starts the server a spec describes over `root`.
pub(crate) fn start(spec: &ServerSpec, peers: &[Peer], root: &DocRoot, hosts: &Hosts) -> anyhow::Result<Started> {
    if let Some(missing) = spec.requires.iter().find(|r| !root.sources().join(r).exists()) {
        return Ok(Started::Unavailable(format!("{}: needs {missing}, not found", spec.label)));
    }
    if let Err(e) = prepare(spec, root) {
        return Ok(Started::Unavailable(format!("{}: preparation failed: {e:#}", spec.label)));
    }
    match (&spec.mode, &spec.peer) {
        (Some(_), _) if spec.scheme == Scheme::Https && !hosts.is_local() => {
            Ok(Started::Unavailable(format!("{}: HTTPS servers run only on this host, on loopback", spec.label)))
        }
        (Some(mode), _) => start_spidey(spec, mode, root, hosts),
        (None, Some(_)) if spec.scheme == Scheme::Https => {
            Ok(Started::Unavailable(format!("{}: the lab has no HTTPS peers (bench/vs-peers.sh has)", spec.label)))
        }
        (None, Some(_)) if !hosts.is_local() => {
            Ok(Started::Unavailable(format!("{}: peers run only on this host, on loopback", spec.label)))
        }
        (None, Some(name)) => {
            let peer = peers.iter().find(|p| &p.name == name).context("unknown peer")?;
            start_peer(spec, peer, root)
        }
        (None, None) => anyhow::bail!("server {} has neither mode nor peer", spec.label),
    }
}

/// The placeholders a server spec's commands may use, on a host that sees `root`'s scratch
/// directory at `at` ([`Hosts::place`]), for a server on `cpus` CPUs.
fn vars(root: &DocRoot, at: &Path, cpus: Option<usize>) -> Vec<(&'static str, String)> {
    let on = |p: PathBuf| at.join(p.strip_prefix(root.base()).unwrap_or(&p)).display().to_string();
    vec![
        ("root", on(root.root())),
        ("repo", on(root.sources())),
        ("dir", on(root.scratch())),
        // The server's CPUs + 2: seed 004's cap on threads (hardware_concurrency() + 2).
        ("cores_plus_2", (crate::run::cpu::server_cores(cpus) + 2).to_string()),
    ]
}

fn fill_all(template: &str, vars: &[(&'static str, String)]) -> String {
    let pairs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    fill(template, &pairs)
}

/// Runs the spec's `prepare` command, if any.
fn prepare(spec: &ServerSpec, root: &DocRoot) -> anyhow::Result<()> {
    let Some((program, args)) = spec.prepare.split_first() else { return Ok(()) };
    let vars = vars(root, root.base(), spec.cpus);
    let out = Command::new(fill_all(program, &vars))
        .args(args.iter().map(|a| fill_all(a, &vars)))
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    anyhow::ensure!(out.status.success(), "{program}: {}", stderr.lines().next().unwrap_or("failed"));
    Ok(())
}

/// The `spidey serve` command line for a spec, its placeholders filled from `vars` (the
/// paths as the server's host sees them).
fn spidey_args(spec: &ServerSpec, mode: &str, vars: &[(&'static str, String)]) -> Vec<String> {
    let mut args: Vec<String> = vec!["serve".into(), fill_all("{root}", vars)];
    args.extend(["--port", "0", "--quiet", "--mode", mode].map(String::from));
    // The document root is the lab's own, generated: its scripts are the workloads.
    args.push("--cgi".into());
    // The server's own counts, scraped around every point (`server_counts.rs`).
    args.extend(["--metrics", crate::run::server_counts::PATH].map(String::from));
    let flags = [("--workers", &spec.workers), ("--delay", &spec.delay), ("--cpu-work", &spec.cpu_work)];
    for (flag, value) in flags {
        if let Some(v) = value {
            args.extend([flag.to_string(), fill_all(v, vars)]);
        }
    }
    args.extend(spec.args.iter().map(|a| fill_all(a, vars)));
    args
}

fn start_spidey(spec: &ServerSpec, mode: &str, root: &DocRoot, hosts: &Hosts) -> anyhow::Result<Started> {
    let stderr_path = root.scratch().join(format!("{}.stderr", safe(&spec.label)));
    let at = hosts.place(root, !spec.prepare.is_empty())?;
    let mut args = spidey_args(spec, mode, &vars(root, &at, spec.cpus));
    let tls = match spec.scheme {
        Scheme::Http => None,
        Scheme::Https => {
            let pki = crate::run::tls::make(&root.scratch().join(format!("{}.tls", safe(&spec.label))))?;
            args.extend(["--tls-cert".into(), pki.cert.display().to_string()]);
            args.extend(["--tls-key".into(), pki.key.display().to_string()]);
            Some(pki.ca)
        }
    };
    args.extend(hosts.listen_args());
    let mut command = hosts.server_command(&args)?;
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(std::fs::File::create(&stderr_path)?);
    let mut child = spawn_server(&mut command, spec.cpus).context("cannot start spidey serve")?;
    let stdout = child.stdout.take().context("no stdout")?;
    // Through a prefix, the server's pid on its host comes first ([`RemoteServer`]).
    let lines = startup_lines(stdout, if hosts.server_via().is_some() { 2 } else { 1 });
    let remote = match (hosts.server_via(), lines.first()) {
        (Some(via), Some(line)) => RemoteServer::from_line(via, line),
        _ => None,
    };
    let remote_ok = hosts.server_via().is_none() || remote.is_some();
    match lines.last().and_then(|l| startup_port(l)).filter(|_| remote_ok) {
        // `server_counts` scrapes over plain HTTP: an HTTPS server's own count is not taken.
        Some(port) => ready(Running { child, port, ip: hosts.server_ip(), counts: tls.is_none(), tls, remote }),
        None => {
            if let Some(r) = &remote {
                r.terminate();
            }
            unavailable_or_error(child, &stderr_path, &spec.label)
        }
    }
}

/// The first `n` lines of the server's stdout (fewer if it ends or is slow to start).
fn startup_lines(stdout: std::process::ChildStdout, n: usize) -> Vec<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        for _ in 0..n {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || tx.send(line).is_err() {
                return;
            }
        }
        // Keep draining so the server never blocks on a full pipe.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let deadline = Instant::now() + START_LIMIT;
    let mut lines = Vec::new();
    while lines.len() < n {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => lines.push(line),
            Err(_) => break,
        }
    }
    lines
}

/// The port in the startup line (`spidey listening on http[s]://127.0.0.1:PORT (mode M)`).
fn startup_port(line: &str) -> Option<u16> {
    let addr = line.split("://").nth(1)?.split_whitespace().next()?;
    addr.rsplit(':').next()?.parse().ok()
}

/// A child that never announced itself: exit code 2 means "not in this build" (a mode or
/// flag that does not exist yet), which the report notes; anything else is an error.
fn unavailable_or_error(mut child: Child, stderr: &Path, label: &str) -> anyhow::Result<Started> {
    let status = wait_for(&mut child, START_LIMIT).or_else(|| {
        let _ = child.kill();
        child.wait().ok()
    });
    let message = std::fs::read_to_string(stderr).unwrap_or_default();
    let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim().to_string();
    match status.and_then(|s| s.code()) {
        Some(2) => Ok(Started::Unavailable(format!("{label}: not available in this build ({first})"))),
        code => anyhow::bail!("{label}: server did not start (exit {code:?}): {first}"),
    }
}

fn start_peer(spec: &ServerSpec, peer: &Peer, root: &DocRoot) -> anyhow::Result<Started> {
    let Some(program) = which(&peer.program) else {
        return Ok(Started::Unavailable(format!("{}: {} is not installed", spec.label, peer.program)));
    };
    let port = free_port()?;
    let scratch = root.scratch().join(safe(&spec.label));
    std::fs::create_dir_all(scratch.join("logs"))?;
    let config = scratch.join("peer.conf");
    let port_s = port.to_string();
    let root_s = root.root().display().to_string();
    let dir_s = scratch.display().to_string();
    let config_s = config.display().to_string();
    let vars = [("port", port_s.as_str()), ("root", &root_s), ("dir", &dir_s), ("config", &config_s)];
    if let Some(template) = &peer.config {
        std::fs::write(&config, fill(template, &vars))?;
    }
    let mut command = Command::new(program);
    command
        .args(peer.args.iter().map(|a| fill(a, &vars)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scratch.join("stderr"))?);
    let child = spawn_server(&mut command, spec.cpus).with_context(|| format!("cannot start {}", peer.program))?;
    ready(Running { child, port, ip: IpAddr::V4(Ipv4Addr::LOCALHOST), counts: false, tls: None, remote: None })
}

/// Spawns a server as the leader of a process group of its own, so that killing the group
/// kills the processes it starts too (nginx's workers), with the death signal above.
fn spawn_server(command: &mut Command, cpus: Option<usize>) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    let command = die_with_parent(command, Signal::TERM).process_group(0);
    crate::run::cpu::spawn_as_server(cpus, || command.spawn())
}

/// Waits until the server answers a request (an HTTPS one: accepts a connection; the
/// runner's probe then checks an answer over TLS), or fails.
fn ready(mut server: Running) -> anyhow::Result<Started> {
    let deadline = Instant::now() + START_LIMIT;
    while Instant::now() < deadline {
        let up = match server.tls {
            None => answers(server.addr()),
            Some(_) => TcpStream::connect_timeout(&server.addr(), Duration::from_secs(2)).is_ok(),
        };
        if up {
            return Ok(Started::Running(server));
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            anyhow::bail!("server exited before answering ({status})");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!("server did not answer within {START_LIMIT:?}")
}

fn answers(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = [0u8; 12];
    s.write_all(b"HEAD / HTTP/1.0\r\n\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && buf.starts_with(b"HTTP/1.")
}

impl Running {
    /// Where the server answers.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, self.port)
    }

    /// The server process (the root of its process tree).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then wait; SIGKILL if it has not stopped within the limit.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.terminate()
    }

    fn terminate(&mut self) -> anyhow::Result<()> {
        if let Ok(Some(_)) = self.child.try_wait() {
            return Ok(());
        }
        // The prefix (ssh) exits with the server there.
        if let Some(remote) = &self.remote {
            remote.terminate();
            if wait_for(&mut self.child, STOP_LIMIT).is_some() {
                return Ok(());
            }
        }
        let _ = kill_process(Pid::from_child(&self.child), Signal::TERM);
        if wait_for(&mut self.child, STOP_LIMIT).is_none() {
            self.kill_group();
            anyhow::bail!("server ignored SIGTERM for {STOP_LIMIT:?}; killed");
        }
        Ok(())
    }

    /// SIGKILL to the server's whole process group (see [`spawn_server`]): a SIGKILLed
    /// nginx master alone leaves its worker running, holding the port.
    fn kill_group(&mut self) {
        let _ = kill_process_group(Pid::from_child(&self.child), Signal::KILL);
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            if let Some(remote) = &self.remote {
                remote.terminate();
            }
            self.kill_group();
        }
    }
}

fn wait_for(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Replaces `{name}` placeholders.
pub(crate) fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    vars.iter().fold(template.to_string(), |s, (k, v)| s.replace(&format!("{{{k}}}"), v))
}

/// A program on PATH (or a path that exists).
pub(crate) fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).exists().then(|| PathBuf::from(program));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    let extra = [PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")];
    std::env::split_paths(&path).chain(extra).map(|d| d.join(program)).find(|p| p.is_file())
}

fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(l.local_addr()?.port())
}

fn safe(label: &str) -> String {
    label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests {
    use super::{fill, spawn_server, spidey_args, Running};
    use std::io::BufRead;
    use std::net::{IpAddr, Ipv4Addr};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// `spidey serve`'s command line, as the binary parses it (its other commands left out).
    #[derive(Debug, clap::Parser)]
    #[command(name = "spidey")]
    enum ServeCommand {
        Serve(spidey_server::args::ServeArgs),
    }

    /// Regression: dropping a server (the lab unwinding) killed only the process it started,
    /// and a peer's own children (nginx's worker) ran on, holding the port.
    #[test]
    fn dropping_a_server_kills_its_children_too() {
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 300 & echo $!; wait"]).stdout(Stdio::piped());
        let mut child = spawn_server(&mut command, None).unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let sleeper: i32 = line.trim().parse().unwrap();
        let gone = || {
            let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap_or_default();
            stat.is_empty() || stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'))
        };
        assert!(!gone(), "the sleeper should be running");
        drop(Running { child, port: 0, ip: IpAddr::V4(Ipv4Addr::LOCALHOST), counts: false, tls: None, remote: None });
        let start = Instant::now();
        while !gone() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let survived = !gone();
        if survived {
            let _ = Command::new("kill").args(["-KILL", &sleeper.to_string()]).status();
        }
        assert!(!survived, "the server's child outlived the dropped server");
    }

    #[test]
    fn fill_table() {
        let vars = [("port", "8080"), ("root", "/r")];
        let cases =
            [("listen {port};", "listen 8080;"), ("root {root}; {port}", "root /r; 8080"), ("{other}", "{other}")];
        for (input, want) in cases {
            assert_eq!(fill(input, &vars), want);
        }
    }

    /// Every spidey server of every built-in experiment is a command line `spidey serve`
    /// takes (flags, values, and the combinations it checks before binding), its
    /// placeholders filled: a misspelt or misplaced seed option fails here, not hours into
    /// a run as "not available in this build".
    #[test]
    fn every_experiment_server_is_a_valid_serve_command() {
        use clap::Parser;
        let vars: Vec<(&'static str, String)> = ["root", "repo", "dir"]
            .into_iter()
            .map(|k| (k, format!("/{k}")))
            .chain([("cores_plus_2", "3".into())])
            .collect();
        let mut checked = 0;
        for source in crate::experiment::sources::find(None, &[]).unwrap() {
            let exp = crate::experiment::Experiment::parse(&source).unwrap();
            let robust = exp.robustness.iter().flat_map(|r| r.servers.iter());
            for spec in exp.sweeps.iter().flat_map(|s| s.servers.iter()).chain(robust) {
                let Some(mode) = &spec.mode else { continue };
                let mut args = spidey_args(spec, mode, &vars);
                if spec.scheme == crate::experiment::Scheme::Https {
                    args.extend(["--tls-cert", "/c.pem", "--tls-key", "/k.pem"].map(String::from));
                }
                assert!(!args.iter().any(|a| a.contains('{')), "{}: a placeholder left in {args:?}", spec.label);
                let cli = ServeCommand::try_parse_from(std::iter::once("spidey".to_string()).chain(args.clone()));
                let serve = match cli {
                    Ok(ServeCommand::Serve(serve)) => serve,
                    Err(e) => panic!("{}: {args:?}: {e}", spec.label),
                };
                spidey_server::flags::check(&serve).unwrap_or_else(|e| panic!("{}: {e}", spec.label));
                checked += 1;
            }
        }
        assert!(checked > 20, "only {checked} servers found");
    }
}
