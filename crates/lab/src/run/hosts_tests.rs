//! Splitting a load among client hosts, and the `spidey bench` command line each one gets.

use super::*;
use clap::Parser;
use spidey_bench::{OpenModel, Target, LATE_AFTER};

fn config(connections: usize, stop: Stop, rate: Option<f64>) -> BenchConfig {
    let addr = "10.77.0.2:8080".parse().unwrap();
    BenchConfig {
        targets: vec![Target {
            url: "http://10.77.0.2:8080/a".into(),
            addr,
            host_header: "10.77.0.2:8080".into(),
            path: "/a".into(),
        }],
        connections,
        threads: 1,
        stop,
        rate,
        open_model: OpenModel::Pool,
        late_after: LATE_AFTER,
        keepalive: false,
        warmup: Duration::from_millis(250),
        timeout: Duration::from_secs(10),
        method: "GET".into(),
        headers: vec![("X-Lab".into(), "1".into())],
        body: None,
    }
}

#[test]
fn load_split_among_hosts_table() {
    let d = Stop::Duration(Duration::from_secs(2));
    // (connections, stop, rate, hosts) → each part's (connections, stop, rate)
    type Case = (usize, Stop, Option<f64>, usize, Vec<(usize, Stop, Option<f64>)>);
    let cases: Vec<Case> = vec![
        (4, Stop::Requests(1000), None, 2, vec![(2, Stop::Requests(500), None), (2, Stop::Requests(500), None)]),
        (5, Stop::Requests(101), None, 2, vec![(3, Stop::Requests(51), None), (2, Stop::Requests(50), None)]),
        (1, Stop::Requests(100), None, 3, vec![(1, Stop::Requests(100), None)]),
        (8, Stop::Requests(2), None, 3, vec![(4, Stop::Requests(1), None), (4, Stop::Requests(1), None)]),
        (4, d, Some(1000.0), 2, vec![(2, d, Some(500.0)), (2, d, Some(500.0))]),
        (3, d, Some(900.0), 2, vec![(2, d, Some(600.0)), (1, d, Some(300.0))]),
    ];
    for (c, stop, rate, hosts, want) in cases {
        let got: Vec<_> =
            split(&config(c, stop, rate), hosts).iter().map(|p| (p.connections, p.stop, p.rate)).collect();
        assert_eq!(got, want, "c={c} {stop:?} rate={rate:?} over {hosts} hosts");
    }
}

/// `spidey bench`'s command line, as the binary parses it (its other commands left out).
#[derive(Debug, clap::Parser)]
#[command(name = "spidey")]
enum BenchCommand {
    Bench(spidey_bench::BenchArgs),
}

/// What a client host runs, read back by spidey's own command-line parser, is the part.
#[test]
fn bench_command_line_reads_back_as_the_part() {
    for (stop, rate) in [(Stop::Requests(500), None), (Stop::Duration(Duration::from_millis(1500)), Some(250.0))] {
        let part = config(3, stop, rate);
        let mut argv = vec!["spidey".to_string()];
        argv.extend(bench_args(&part, 1_700_000_000_000));
        let BenchCommand::Bench(args) = BenchCommand::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        assert_eq!(args.start_at, Some(1_700_000_000_000));
        assert_eq!(args.json.as_deref(), Some(std::path::Path::new("-")));
        let got = args.config().unwrap();
        assert_eq!(got.targets, part.targets);
        let fields = |c: &BenchConfig| {
            (
                c.connections,
                c.threads,
                c.stop,
                c.rate,
                c.keepalive,
                c.warmup,
                c.timeout,
                c.late_after,
                c.headers.clone(),
            )
        };
        assert_eq!(fields(&got), fields(&part), "{argv:?}");
    }
}

#[test]
fn host_flags_table() {
    let args = |server: Option<&str>, clients: &[&str], addr: Option<&str>| HostArgs {
        server_via: server.map(String::from),
        client_via: clients.iter().map(|s| s.to_string()).collect(),
        server_addr: addr.map(|a| a.parse().unwrap()),
        remote_spidey: None,
        rtt: None,
        link_rate: None,
    };
    // (flags, accepted, all local)
    let cases = [
        (args(None, &[], None), true, true),
        (args(Some("ip netns exec s"), &["ip netns exec c"], Some("10.0.0.1")), true, false),
        (args(None, &["ssh a", "ssh b"], Some("192.0.2.1")), true, false),
        (args(Some("ssh s"), &[], None), false, false),
        (args(None, &["ssh a"], None), false, false),
        (args(Some("  "), &[], Some("10.0.0.1")), false, false),
    ];
    for (a, ok, local) in cases {
        let got = Hosts::from_args(&a);
        assert_eq!(got.is_ok(), ok, "{a:?}");
        if let Ok(h) = got {
            assert_eq!(h.is_local(), local, "{a:?}");
        }
    }
}

#[test]
fn a_delay_line_is_refused_beside_hosts_of_ones_own_before_it_starts() {
    let rtt = Some(Duration::from_millis(1));
    for (server_via, client_via, server_addr) in [
        (Some("ssh s".to_string()), vec![], None),
        (None, vec!["ssh c".to_string()], None),
        (None, vec![], Some("10.0.0.1".parse().unwrap())),
    ] {
        let a = HostArgs { server_via, client_via, server_addr, remote_spidey: None, rtt, link_rate: None };
        let err = a.delay_line(false).err().expect("refused");
        assert!(err.is::<spidey_config::ConfigError>(), "{err}");
    }
}

/// The prefix a byte stream goes through: an ssh without a terminal, others unchanged.
#[test]
fn untty_table() {
    let cases = [
        ("ssh -tt root@10.77.0.2", "ssh -T root@10.77.0.2"),
        ("ssh -t -i key -tt root@h", "ssh -T -i key root@h"),
        ("/usr/bin/ssh -o BatchMode=yes root@h", "/usr/bin/ssh -T -o BatchMode=yes root@h"),
        ("ssh -ttt -T h", "ssh -T -T h"),
        ("ip netns exec -t ns", "ip netns exec -t ns"),
        ("sshpass ssh -tt h", "sshpass ssh -tt h"),
    ];
    for (prefix, want) in cases {
        assert_eq!(Via::parse("--server-via", prefix).unwrap().untty().name(), want, "{prefix}");
    }
}
