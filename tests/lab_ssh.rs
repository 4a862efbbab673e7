//! `spidey lab` across hosts reached through a real `sshd` (Debian's openssh-server), one per
//! host, each started by the test in a network namespace ([`fixture`]) with a private `/tmp`
//! (a tmpfs in a mount namespace of its own): like a real host, it does not see the lab's
//! temporary directory, so the server can only serve the document root the lab copied there.
//! The build's target directory stays in view wherever the checkout lives (under /tmp too):
//! it holds the binary the lab runs on the host and the sshd's own files.
//! The key pairs are made at test time. Needs root, iproute2, unshare and openssh-server
//! (`scripts/test.sh` installs them); elsewhere the test prints why it skipped.

#[path = "netns/fixture.rs"]
mod fixture;

use fixture::{net_or_skip, Host};
use spidey_bench::BenchResult;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SPIDEY: &str = env!("CARGO_BIN_EXE_spidey");
const SSHD: &str = "/usr/sbin/sshd";

/// An `sshd` listening on a host's address, with a private `/tmp`; killed on drop, with
/// whatever else still runs in the host's namespace.
struct Sshd {
    child: Child,
    log: PathBuf,
    ns: String,
}

impl Sshd {
    /// Starts one on `host`, its files in `dir` (outside `/tmp`, which it does not see),
    /// accepting the key `key`.pub for root.
    fn start(host: &Host, dir: &Path, key: &Path) -> Sshd {
        let name = |f: &str| dir.join(format!("{}-{f}", host.ip));
        let (host_key, config, log) = (name("host_key"), name("sshd_config"), name("log"));
        keygen(&host_key);
        let text = format!(
            "ListenAddress {}:22\nHostKey {}\nAuthorizedKeysFile {}.pub\nPermitRootLogin prohibit-password\n\
             StrictModes no\nPidFile none\n",
            host.ip,
            host_key.display(),
            key.display()
        );
        std::fs::write(&config, text).unwrap();
        // sshd's privilege separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        // The private /tmp hides whatever the host has under /tmp, and a checkout may live
        // there: the build's target directory (the spidey binary the lab runs on the host,
        // and `dir`, which is under it) is bound aside first and moved back on top of the
        // new /tmp, as a real host has the binary where the lab expects it.
        let target = target_dir();
        let script = format!(
            "set -e; mount --bind {target} /mnt; mount -t tmpfs spidey-host-tmp /tmp; mkdir -p {target}; \
             mount --move /mnt {target}; exec {SSHD} -D -f {} -E {}",
            config.display(),
            log.display(),
            target = target.display(),
        );
        let child = host.command("unshare").args(["--mount", "sh", "-c", &script]).spawn().expect("start sshd");
        let mut sshd = Sshd { child, log, ns: host.ns.clone() };
        sshd.wait_listening();
        sshd
    }

    fn wait_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.log_text().contains("Server listening on") {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("sshd exited ({status}): {}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("sshd did not listen within 20 s: {}", self.log_text());
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let pids = Command::new("ip").args(["netns", "pids", &self.ns]).output().map(|o| o.stdout).unwrap_or_default();
        for pid in String::from_utf8_lossy(&pids).split_whitespace() {
            let _ = Command::new("kill").args(["-KILL", pid]).status();
        }
    }
}

/// The build's target directory: the spidey binary and `CARGO_TARGET_TMPDIR` are in it.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target/tmp has a parent").to_path_buf()
}

/// What a host's private /tmp holds besides what the lab left: the first directory of the
/// path to the target directory, when the checkout is under /tmp.
fn tmp_skeleton() -> Option<String> {
    let target = target_dir();
    let inside = target.strip_prefix("/tmp").ok()?;
    Some(inside.components().next()?.as_os_str().to_string_lossy().into_owned())
}

/// A new ed25519 key pair at `path` and `path`.pub.
fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(path).output().unwrap();
    assert!(out.status.success(), "ssh-keygen: {}", String::from_utf8_lossy(&out.stderr));
}

/// The `ssh` command prefix that reaches `host` as root with `key`, without prompts; with
/// a terminal when `tty` (`-tt`, which the lab must cope with: it copies without one).
fn ssh(key: &Path, host: &Host, tty: bool) -> String {
    format!(
        "ssh{} -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR root@{}",
        if tty { " -tt" } else { "" },
        key.display(),
        host.ip
    )
}

/// Runs `command` on `host` through ssh from `from`; its exit status and stdout.
fn run_over_ssh(from: &Host, prefix: &str, command: &str) -> (bool, String) {
    let out = from.command("sh").args(["-c", &format!("{prefix} {command}")]).stdin(Stdio::null()).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every process's command line, its arguments joined by spaces.
fn processes() -> Vec<String> {
    let entries = std::fs::read_dir("/proc").unwrap().flatten();
    let lines = entries.filter_map(|e| std::fs::read(e.path().join("cmdline")).ok());
    lines.map(|c| String::from_utf8_lossy(&c).replace('\0', " ")).collect()
}

/// Why this test cannot run here, if it cannot: the programs it starts are missing.
fn missing_programs() -> Option<String> {
    let missing: Vec<&str> = [SSHD, "/usr/bin/ssh", "/usr/bin/ssh-keygen", "/usr/bin/unshare"]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    (!missing.is_empty()).then(|| format!("not installed: {} (openssh-server, util-linux)", missing.join(", ")))
}

/// One experiment: a 1 KiB file and a CGI script (which reads a data file beside the root),
/// 1000 requests each over 4 connections.
const EXPERIMENT: &str = r#"
id = "901-ssh"
title = "Across hosts over ssh"
seed = "none"
question = "Does the lab run across hosts reached through ssh?"
workloads = [{ name = "1 KB", kind = "file", size = "1KB" }, { name = "cgi", kind = "cgi", size = "2KB" }]

[[sweeps]]
name = "hosts"
title = "Across hosts"
servers = [{ label = "event", mode = "event" }]
workloads = ["1 KB", "cgi"]
clients = [{ c = 4, n = 1000 }]
table.dims = ["workload", "server"]
table.columns = [{ header = "Requests/s", metric = "rps" }]
"#;

#[test]
fn lab_over_ssh_copies_the_root_to_the_server_host_and_removes_it() {
    const NAME: &str = "lab_over_ssh_copies_the_root_to_the_server_host_and_removes_it";
    if let Some(why) = missing_programs() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIPPED {NAME}: {why}");
        return;
    }
    let Some(net) = net_or_skip(NAME, 3) else { return };
    // Host 0 runs the lab, host 1 the server, host 2 the load; 1 and 2 through their sshd.
    let (control, server, client) = (&net.hosts[0], &net.hosts[1], &net.hosts[2]);
    let keys = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let key = keys.path().join("id");
    keygen(&key);
    let sshds = [Sshd::start(server, keys.path(), &key), Sshd::start(client, keys.path(), &key)];
    let (to_server, to_client) = (ssh(&key, server, false), ssh(&key, client, false));

    let dir = tempfile::tempdir().unwrap();
    let (ok, _) = run_over_ssh(control, &to_server, &format!("test -e {}", dir.path().display()));
    assert!(!ok, "the server host must not see the lab's temporary directory");
    let exps = dir.path().join("experiments");
    std::fs::create_dir_all(&exps).unwrap();
    std::fs::write(exps.join("901-ssh.toml"), EXPERIMENT).unwrap();
    let out_dir = dir.path().join("out");
    let out = control
        .command(SPIDEY)
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .args(["lab", "901", "--quick", "--experiments-dir"])
        .arg(&exps)
        .arg("--out")
        .arg(&out_dir)
        .args(["--server-via", &ssh(&key, server, true), "--server-addr", &server.ip.to_string()])
        .args(["--client-via", &to_client])
        .output()
        .expect("run spidey lab in the control namespace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "spidey lab: {stderr}");

    // The results: every request answered from the copy, with the bodies' full length.
    let journal = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = journal.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // `--quick` measures each point three times.
    assert_eq!(records.len(), 6, "{journal}");
    for record in &records {
        // Measured only after the lab's probe got a first body of the exact length.
        assert_eq!(record["outcome"], "measured", "{journal}\n{stderr}");
        let raw: BenchResult = serde_json::from_value(record["raw"].clone()).expect("the point's result");
        // A point repeats its 1000 requests in batches until it lasts the minimum duration.
        let n = 1000 * record["measurement"]["batches"].as_u64().expect("batches");
        assert_eq!(raw.requests, n, "{journal}");
        assert_eq!(raw.status.get(&200), Some(&n), "every request answered: {:?}", raw.errors);
        // CGI bodies come chunked over keep-alive, their framing counted in the bytes.
        let (body, cgi) = (raw.body_bytes, record["workload"] == "cgi");
        assert!(if cgi { body > n * 2048 } else { body == n * 1024 }, "{}: {body} bytes", record["workload"]);
        assert!(raw.urls.iter().all(|u| u.starts_with(&format!("http://{}:", server.ip))), "{:?}", raw.urls);
    }

    // The copy: made once (no `prepare` command) in the server host's /tmp, not the lab's
    // directory, and gone once the lab is done, with nothing else left there.
    let copies: Vec<&str> = stderr.lines().filter(|l| l.contains("copied the document root to")).collect();
    assert_eq!(copies.len(), 1, "{stderr}");
    let copy = copies[0].split(" to ").nth(1).and_then(|r| r.split(' ').next()).expect("the copy's path");
    assert!(copy.starts_with("/tmp/spidey-lab-copy-") && !copy.starts_with(&*dir.path().to_string_lossy()), "{copy}");
    assert!(copies[0].contains(&format!("via ssh -T -i {}", key.display())), "copied without a terminal: {stderr}");
    let (ok, _) = run_over_ssh(control, &to_server, &format!("test -e {copy}"));
    assert!(!ok, "{copy} removed from the server host");
    let (ok, left) = run_over_ssh(control, &to_server, "ls -A /tmp");
    let left: Vec<&str> = left.lines().filter(|l| Some(l.to_string()) != tmp_skeleton()).collect();
    assert!(ok && left.is_empty(), "the server host's /tmp is empty again: {left:?}");
    // The servers were stopped there: killing ssh here would not have stopped them. The
    // namespaces share this pid namespace, so this host's /proc shows the server host's.
    let left: Vec<String> = processes().into_iter().filter(|c| c.contains(copy) && c.contains(" serve ")).collect();
    assert!(left.is_empty(), "servers left running on the server host: {left:?}");
    for sshd in &sshds {
        assert!(sshd.log_text().contains("Accepted publickey for root"), "through ssh: {}", sshd.log_text());
    }
}
