//! Expands experiments into points: every server × workload × client × repeat of each
//! sweep, in run order: repeat by repeat, and within a repeat server by server in an order
//! rotated by one each repeat (as `bench/vs-peers.sh` does), so a slow drift of the machine
//! does not always fall on the same server. Each server starts afresh for each repeat.

use crate::lab::experiment::{ClientSpec, Experiment, ServerSpec, Sweep};

/// One measurement to make.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    /// Stable across runs: `[quick/]experiment/sweep/server/workload/client/rN`.
    pub id: String,
    pub sweep: String,
    pub server: String,
    pub workload: String,
    pub client: ClientSpec,
    pub repeat: u32,
}

/// The points of one server configuration within one repeat of a sweep.
#[derive(Debug, Clone)]
pub(crate) struct ServerRun {
    pub server: ServerSpec,
    pub warmup: u64,
    pub points: Vec<Point>,
}

/// A sweep as it will run: its servers, workloads and clients after `--quick`.
#[derive(Debug, Clone)]
pub(crate) struct Active<'a> {
    pub sweep: &'a Sweep,
    pub servers: Vec<&'a ServerSpec>,
    pub workloads: Vec<String>,
    pub clients: Vec<ClientSpec>,
    pub repeats: u32,
}

/// The sweeps that run (full-only ones dropped under --quick), with overrides applied.
pub(crate) fn active(exp: &Experiment, quick: bool) -> Vec<Active<'_>> {
    exp.sweeps.iter().filter(|s| !(quick && s.full_only)).map(|s| apply(s, quick)).collect()
}

fn apply(sweep: &Sweep, quick: bool) -> Active<'_> {
    let q = &sweep.quick;
    let servers = match (&q.servers, quick) {
        (Some(names), true) => sweep.servers.iter().filter(|s| names.contains(&s.label)).collect(),
        _ => sweep.servers.iter().collect(),
    };
    let pick = |over: &Option<Vec<String>>| match (over, quick) {
        (Some(v), true) => v.clone(),
        _ => sweep.workloads.clone(),
    };
    let clients = match (&q.clients, quick) {
        (Some(v), true) => v.clone(),
        _ => sweep.clients.clone(),
    };
    let repeats = if quick { q.repeats.unwrap_or(QUICK_REPEATS) } else { sweep.repeats };
    Active { sweep, servers, workloads: pick(&q.workloads), clients, repeats }
}

/// Repeats of each point in a quick run (a sweep's `quick.repeats` may ask for more).
pub(crate) const QUICK_REPEATS: u32 = 3;

/// The server runs of one experiment, in order: per sweep, per repeat, servers rotated.
pub(crate) fn server_runs(exp: &Experiment, quick: bool) -> Vec<ServerRun> {
    let mut runs = Vec::new();
    for a in active(exp, quick) {
        for repeat in 0..a.repeats {
            for server in rotated(&a.servers, repeat) {
                let points = points_of(exp, &a, server, quick, repeat);
                if !points.is_empty() {
                    runs.push(ServerRun { server: server.clone(), warmup: a.sweep.warmup, points });
                }
            }
        }
    }
    runs
}

/// `items` starting at `repeat` (mod its length), wrapping around.
pub(crate) fn rotated<T: Copy>(items: &[T], repeat: u32) -> Vec<T> {
    if items.is_empty() {
        return Vec::new();
    }
    let k = repeat as usize % items.len();
    items[k..].iter().chain(&items[..k]).copied().collect()
}

/// The stable id of a point. Quick points get their own (`quick/...`): their files may be smaller.
pub(crate) fn point_id(
    quick: bool,
    exp: &str,
    sweep: &str,
    server: &str,
    workload: &str,
    client: &ClientSpec,
    repeat: u32,
) -> String {
    let prefix = if quick { "quick/" } else { "" };
    format!("{prefix}{exp}/{sweep}/{server}/{workload}/{}/r{repeat}", client.label())
}

fn points_of(exp: &Experiment, a: &Active<'_>, server: &ServerSpec, quick: bool, repeat: u32) -> Vec<Point> {
    let mut points = Vec::new();
    for workload in a.workloads.iter().filter(|w| server.runs(w)) {
        for client in &a.clients {
            let id = point_id(quick, &exp.id, &a.sweep.name, &server.label, workload, client, repeat);
            points.push(Point {
                id,
                sweep: a.sweep.name.clone(),
                server: server.label.clone(),
                workload: workload.clone(),
                client: client.clone(),
                repeat,
            });
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::rotated;

    #[test]
    fn servers_rotate_by_one_each_repeat() {
        let servers = ["a", "b", "c"];
        let cases: [(u32, [&str; 3]); 4] =
            [(0, ["a", "b", "c"]), (1, ["b", "c", "a"]), (2, ["c", "a", "b"]), (3, ["a", "b", "c"])];
        for (repeat, want) in cases {
            assert_eq!(rotated(&servers, repeat), want, "repeat {repeat}");
        }
    }
}
