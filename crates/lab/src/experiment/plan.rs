//! Expands experiments into points: every server × workload × client × repeat of each
//! sweep, in run order: repeat by repeat, and within a repeat server by server in an order
//! rotated by one each repeat (as `bench/vs-peers.sh` does), so a slow drift of the machine
//! does not always fall on the same server. Each server starts afresh for each repeat, and
//! measures its points in a shuffled order, seeded from [`ORDER_SEED`] and the server run's
//! place (experiment, sweep, server, repeat), so a point's position in the run is not tied
//! to the swept variable; each record keeps its seed and position. A sweep with
//! `server_per_point` starts its server afresh for every point, in that same order.

use crate::experiment::{ClientSpec, Experiment, ServerSpec, Sweep};

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
    /// Where the point ran within its server run (0: first after the warm-up).
    pub position: u32,
    /// The seed that shuffled its server run ([`order_seed`]).
    pub order_seed: u64,
}

/// The points of one server configuration within one repeat of a sweep.
#[derive(Debug, Clone)]
pub(crate) struct ServerRun {
    pub server: ServerSpec,
    pub warmup: u64,
    /// The round trip its sweep runs across (`Sweep::rtt`), if any.
    pub rtt: Option<std::time::Duration>,
    /// How its sweep's caches are made cold before each point (`Sweep::cold`), if they are.
    pub cold: Option<crate::experiment::Cold>,
    /// Its load comes from fresh client processes (`Sweep::fresh_clients`).
    pub fresh_clients: bool,
    /// Each point is one batch (`Sweep::one_batch`, and always with `cold` or
    /// `fresh_clients`).
    pub one_batch: bool,
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
    let repeats = if quick { q.repeats.unwrap_or(crate::experiment::QUICK_REPEATS) } else { sweep.repeats };
    Active { sweep, servers, workloads: pick(&q.workloads), clients, repeats }
}

/// The server runs of one experiment, in order: per sweep, per repeat, servers rotated.
pub(crate) fn server_runs(exp: &Experiment, quick: bool) -> Vec<ServerRun> {
    let mut runs = Vec::new();
    for a in active(exp, quick) {
        for repeat in 0..a.repeats {
            for server in rotated(&a.servers, repeat) {
                let points = points_of(exp, &a, server, quick, repeat);
                if !points.is_empty() {
                    let rtt = a.sweep.rtt().ok().flatten();
                    let (warmup, cold, fresh_clients) = (a.sweep.warmup, a.sweep.cold, a.sweep.fresh_clients);
                    let one_batch = a.sweep.one_batch || cold.is_some() || fresh_clients;
                    let run = |points| ServerRun {
                        server: server.clone(),
                        warmup,
                        rtt,
                        cold,
                        fresh_clients,
                        one_batch,
                        points,
                    };
                    if a.sweep.server_per_point {
                        runs.extend(points.into_iter().map(|p| run(vec![p])));
                    } else {
                        runs.push(run(points));
                    }
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

/// The base of every server run's shuffle seed.
pub(crate) const ORDER_SEED: u64 = 0x5eed_0d3e;

/// The seed of one server run's order: FNV-1a over [`ORDER_SEED`] and its place, stable
/// across builds and platforms.
pub(crate) fn order_seed(exp: &str, sweep: &str, server: &str, repeat: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ ORDER_SEED;
    let place = format!("{exp}\0{sweep}\0{server}\0{repeat}");
    for b in place.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `points` shuffled by `seed`, each told its position and the seed.
fn shuffled(mut points: Vec<Point>, seed: u64) -> Vec<Point> {
    fastrand::Rng::with_seed(seed).shuffle(&mut points);
    for (i, p) in points.iter_mut().enumerate() {
        p.position = i as u32;
        p.order_seed = seed;
    }
    points
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
                position: 0,
                order_seed: 0,
            });
        }
    }
    shuffled(points, order_seed(&exp.id, &a.sweep.name, &server.label, repeat))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::sources;

    fn experiment(id: &str) -> Experiment {
        let source = sources::find(None, &[id.to_string()]).unwrap().remove(0);
        Experiment::parse(&source).unwrap()
    }

    /// The points of each server run, as (sweep, server, repeat) → point ids without their
    /// repeat, in run order.
    fn orders(runs: &[ServerRun]) -> Vec<((String, String, u32), Vec<String>)> {
        let strip = |id: &str| id.rsplit_once('/').map(|(head, _)| head.to_string()).unwrap_or_default();
        runs.iter()
            .map(|r| {
                let p = &r.points[0];
                ((p.sweep.clone(), p.server.clone(), p.repeat), r.points.iter().map(|p| strip(&p.id)).collect())
            })
            .collect()
    }

    /// Within a server run the points come shuffled: not in the ascending order of the
    /// sweep, differently in each repeat, and the same again from the same seed; each point
    /// records its position and its run's seed.
    #[test]
    fn points_run_in_a_seeded_order_of_their_own_each_repeat() {
        let exp = experiment("003");
        let runs = server_runs(&exp, false);
        let by = orders(&runs);
        let (ascending, shuffled_runs) = runs.iter().fold((0, 0), |(a, n), r| {
            let rates: Vec<f64> = r.points.iter().map(|p| p.client.rate.unwrap_or(0.0)).collect();
            (a + usize::from(rates.windows(2).all(|w| w[0] <= w[1])), n + usize::from(rates.len() > 3))
        });
        assert!(shuffled_runs > 0 && ascending < shuffled_runs / 4, "{ascending} of {shuffled_runs} in sweep order");
        // Two repeats of the same server and sweep: the same points, in different orders.
        let (first, second) = (&by[0], by.iter().find(|o| o.0 .0 == by[0].0 .0 && o.0 .1 == by[0].0 .1 && o.0 .2 == 1));
        let second = second.expect("a second repeat of the first server run");
        assert!(first.1.len() > 3, "enough points to shuffle: {first:?}");
        assert_ne!(first.1, second.1, "repeats 0 and 1 in the same order");
        let (mut a, mut b) = (first.1.clone(), second.1.clone());
        a.sort();
        b.sort();
        assert_eq!(a, b, "the same points");
        // The seed reproduces the order.
        assert_eq!(orders(&server_runs(&exp, false)), by);
        for r in &runs {
            let p = &r.points[0];
            let seed = order_seed(&exp.id, &p.sweep, &p.server, p.repeat);
            assert!(r.points.iter().enumerate().all(|(i, p)| p.position == i as u32 && p.order_seed == seed));
        }
    }

    /// `server_per_point`: every point is a server run of its own, in the order the points
    /// of its server and repeat would have run in one; without it, one run per server and
    /// repeat holds them all.
    #[test]
    fn a_server_per_point_splits_each_run_in_its_order() {
        let mut exp = experiment("011");
        exp.sweeps.retain(|s| s.name == "unbounded");
        assert!(
            exp.sweeps.len() == 1 && exp.sweeps[0].server_per_point,
            "011's unbounded sweep starts a server per point"
        );
        let split = server_runs(&exp, false);
        exp.sweeps[0].server_per_point = false;
        let whole = server_runs(&exp, false);
        let (servers, repeats) = (exp.sweeps[0].servers.len(), exp.sweeps[0].repeats as usize);
        assert_eq!(whole.len(), servers * repeats, "one run per server and repeat");
        assert!(split.iter().all(|r| r.points.len() == 1), "one point per run");
        let ids =
            |runs: &[ServerRun]| runs.iter().flat_map(|r| r.points.iter().map(|p| p.id.clone())).collect::<Vec<_>>();
        assert_eq!(ids(&split), ids(&whole), "the same points in the same order");
        assert_eq!(split.len(), ids(&whole).len());
    }

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
