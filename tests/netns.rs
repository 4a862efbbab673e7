//! Spidey across hosts, on one machine: the server in one network namespace, clients in two
//! others, joined by veth pairs to a bridge ([`fixture`]). Needs root and iproute2
//! (`scripts/test.sh` installs it); elsewhere each test prints why it skipped.

mod common;
#[path = "netns/fixture.rs"]
mod fixture;

use common::{signal, wait_timeout, Fixture};
use fixture::{net_or_skip, Host};
use spidey_bench::BenchResult;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

const SPIDEY: &str = env!("CARGO_BIN_EXE_spidey");

/// `spidey serve` on a host, listening on the host's address; its access log collected.
struct Server {
    child: Child,
    url: String,
    log: Option<JoinHandle<Vec<String>>>,
}

impl Server {
    fn start(host: &Host, root: &Path) -> Server {
        let mut child = host
            .command(SPIDEY)
            .arg("serve")
            .arg(root)
            .args(["--addr", &host.ip.to_string(), "--port", "0", "--mode", "event"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn spidey serve in the namespace");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let prefix = format!("spidey listening on http://{}:", host.ip);
        assert!(line.starts_with(&prefix), "startup line: {line:?}");
        let port: u16 = line[prefix.len()..].split(' ').next().and_then(|p| p.parse().ok()).expect("port");
        // Drained as it comes, so the server never blocks on a full pipe.
        let log = std::thread::spawn(move || out.lines().map_while(Result::ok).collect());
        Server { child, url: format!("http://{}:{port}", host.ip), log: Some(log) }
    }

    /// Stops the server and returns its access log's lines.
    fn stop(mut self) -> Vec<String> {
        signal(self.child.id(), "TERM");
        wait_timeout(&mut self.child, Duration::from_secs(20)).expect("spidey serve stops on SIGTERM");
        self.log.take().unwrap().join().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read(path: &Path) -> BenchResult {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON file")).expect("a BenchResult")
}

/// Requests per client address in an access log (Combined Log Format: the address first).
fn by_client(log: &[String]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in log {
        *counts.entry(line.split(' ').next().unwrap_or("").to_string()).or_default() += 1;
    }
    counts
}

#[test]
fn bench_from_two_client_namespaces_merges_to_the_sum_and_the_server_sees_both() {
    let Some(net) = net_or_skip("bench_from_two_client_namespaces_merges_to_the_sum_and_the_server_sees_both", 3)
    else {
        return;
    };
    let fx = Fixture::new();
    let (server_host, clients) = (&net.hosts[0], &net.hosts[1..]);
    let server = Server::start(server_host, &fx.root());
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/hello.txt", server.url);
    let n = 2000;
    let jsons: Vec<_> = (0..clients.len()).map(|i| dir.path().join(format!("client{i}.json"))).collect();
    let mut runs: Vec<Child> = clients
        .iter()
        .zip(&jsons)
        .map(|(c, json)| {
            c.command(SPIDEY)
                .args(["bench", &url, "-n", &n.to_string(), "-c", "4", "-t", "1", "--json"])
                .arg(json)
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn spidey bench in a client namespace")
        })
        .collect();
    for r in &mut runs {
        assert!(r.wait().unwrap().success(), "spidey bench in a client namespace failed");
    }
    let merged = dir.path().join("merged.json");
    let out = Command::new(SPIDEY).args(["bench", "merge"]).args(&jsons).arg("--json").arg(&merged).output().unwrap();
    assert!(out.status.success(), "merge: {}", String::from_utf8_lossy(&out.stderr));
    let parts: Vec<BenchResult> = jsons.iter().map(|j| read(j)).collect();
    let m = read(&merged);
    assert_eq!(m.requests, parts.iter().map(|p| p.requests).sum::<u64>());
    assert_eq!(m.requests, n * clients.len() as u64);
    assert_eq!(m.responses, m.requests, "every request answered: {:?}", m.errors);
    let log = by_client(&server.stop());
    let want: BTreeMap<String, u64> =
        clients.iter().zip(&parts).map(|(c, p)| (c.ip.to_string(), p.responses)).collect();
    assert_eq!(log, want, "the server saw each client host's address, once per response");
}

/// One experiment, one point: 800 requests of a 1 KiB file over 4 connections.
const EXPERIMENT: &str = r#"
id = "900-hosts"
title = "Across hosts"
seed = "none"
question = "Does the lab run across hosts?"
workloads = [{ name = "1 KB", kind = "file", size = "1KB" }]

[[sweeps]]
name = "hosts"
title = "Across hosts"
servers = [{ label = "event", mode = "event" }]
workloads = ["1 KB"]
clients = [{ c = 4, n = 800 }]
table.dims = ["server"]
table.columns = [{ header = "Requests/s", metric = "rps" }]
"#;

#[test]
fn lab_runs_the_server_and_two_clients_on_their_own_hosts_and_merges_the_load() {
    let Some(net) = net_or_skip("lab_runs_the_server_and_two_clients_on_their_own_hosts_and_merges_the_load", 4) else {
        return;
    };
    // Host 0 runs the lab (the controller), host 1 the server, hosts 2 and 3 the load.
    let (control, server, clients) = (&net.hosts[0], &net.hosts[1], &net.hosts[2..]);
    let dir = tempfile::tempdir().unwrap();
    let exps = dir.path().join("experiments");
    std::fs::create_dir_all(&exps).unwrap();
    std::fs::write(exps.join("900-hosts.toml"), EXPERIMENT).unwrap();
    let out_dir = dir.path().join("out");
    let mut lab = control.command(SPIDEY);
    lab.current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .args(["lab", "900", "--quick", "--experiments-dir"])
        .arg(&exps)
        .arg("--out")
        .arg(&out_dir)
        .args(["--server-via", &server.prefix(), "--server-addr", &server.ip.to_string()]);
    for c in clients {
        lab.args(["--client-via", &c.prefix()]);
    }
    let out = lab.output().expect("run spidey lab in the control namespace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "spidey lab: {stderr}");
    // A namespace shares this filesystem: the server uses the document root in place.
    assert!(stderr.contains("the server host sees the document root at"), "{stderr}");
    assert!(!stderr.contains("copied the document root"), "{stderr}");
    let journal = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = journal.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // `--quick` measures each point three times (repeats, rotated servers).
    assert_eq!(records.len(), 3, "{journal}");
    for record in &records {
        let raw: BenchResult = serde_json::from_value(record["raw"].clone()).expect("the point's merged result");
        // A point lasts at least the lab's minimum: the seed's 800 requests, repeated in
        // whole batches until then.
        let batches = record["measurement"]["batches"].as_u64().expect("the point's batch count");
        assert_eq!(raw.requests, 800 * batches, "{journal}");
        assert_eq!(raw.status.get(&200), Some(&(800 * batches)), "every request answered: {:?}", raw.errors);
        assert_eq!(raw.connections, 4);
        assert_eq!(raw.threads, clients.len(), "one bench per client host, merged");
        let want_url = format!("http://{}:", server.ip);
        assert!(raw.urls.iter().all(|u| u.starts_with(&want_url)), "loaded the server host: {:?}", raw.urls);
    }
}
