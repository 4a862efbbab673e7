//! Spidey across hosts, on one machine: the server in one network namespace, clients in two
//! others, joined by veth pairs to a bridge ([`fixture`]). Needs root and iproute2
//! (`scripts/test.sh` installs it); elsewhere each test prints why it skipped.

mod common;
#[path = "netns/fixture.rs"]
mod fixture;

use common::{signal, wait_timeout, Fixture};
use fixture::{net_or_skip, Host};
use spidey::bench::BenchResult;
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
