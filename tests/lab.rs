//! `spidey lab --quick` end to end: the report's tables carry numbers, the HTML stands
//! alone with its SVG plots, results.jsonl parses, --resume reruns only what is missing, and
//! a SIGKILLed lab's scratch directory is removed by the next lab.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Experiments the test runs: they need only what every build has (single mode).
const EXPERIMENTS: [&str; 2] = ["000", "001"];

/// Runs the lab with `tmp` as its temporary directory (where its scratch directory goes),
/// from `tmp` as its current directory too: the experiments are built into the binary.
/// With --keep-disturbed: this test checks the report's shape, which a busy test machine
/// (every point disturbed, excluded after three tries) would empty of intervals.
fn lab(out: &Path, tmp: &Path, extra: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .current_dir(tmp)
        .env("TMPDIR", tmp)
        .args(["lab", "--quick", "--keep-disturbed", "--out"])
        .arg(out)
        .args(EXPERIMENTS)
        .args(extra)
        .output()
        .expect("run spidey lab");
    assert!(out.status.success(), "spidey lab failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Writes experiment `text` as DIR/exps/FILE, runs `spidey lab --quick --keep-disturbed` on
/// that directory (only the experiments `ids`, or all of it) into DIR/out, and returns
/// DIR/out; the test fails if the run does.
fn run_experiment_file(dir: &Path, file: &str, text: &str, ids: &[&str]) -> std::path::PathBuf {
    let exps = dir.join("exps");
    std::fs::create_dir_all(&exps).unwrap();
    std::fs::write(exps.join(file), text).unwrap();
    let out = dir.join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .current_dir(dir)
        .env("TMPDIR", dir)
        .args(["lab", "--quick", "--keep-disturbed", "--experiments-dir"])
        .arg(&exps)
        .arg("--out")
        .arg(&out)
        .args(ids)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    out
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}"))).collect()
}

fn id(v: &serde_json::Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[test]
fn quick_run_reports_every_experiment_and_resume_reruns_only_missing_points() {
    let dir = tempfile::tempdir().unwrap();
    // The temporary directory holds the scratch directory of a lab killed with SIGKILL (its
    // pid, pid_max, is no process's): the lab removes it, says so, and leaves none of its own.
    let tmp = tempfile::tempdir().unwrap();
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap();
    let stale = tmp.path().join(format!("spidey-lab-{}-xYz123", pid_max.trim()));
    std::fs::create_dir_all(stale.join("root")).unwrap();
    let out = lab(dir.path(), tmp.path(), &[]);
    assert!(!stale.exists(), "stale scratch directory removed");
    let said = format!("spidey lab: removed stale scratch directory {} (its lab, pid", stale.display());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&said), "stderr says {said}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "the lab left {left:?} in its temporary directory");

    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    for (heading, table_header) in [
        ("## 000-fork:", "| Workload | Server | Connections | Time (ms) (here) | Time (ms) (seed) |"),
        ("## 001-delay:", "| Clients × requests | Server | Time (s) (here) |"),
    ] {
        assert!(md.contains(heading), "report.md lacks {heading}");
        assert!(md.contains(table_header), "report.md lacks the table {table_header}");
    }
    // A measured row: the single server's static file at one connection has a number here
    // and the seed's 0.006 s beside it, in ms.
    // Tables wider than a laptop screen are split, each part repeating the point's columns:
    // the point's row is its lines in every part, joined.
    let joined = |prefix: &str| md.lines().filter(|l| l.starts_with(prefix)).collect::<Vec<_>>().join("");
    let row = joined("| static | single | 1 |");
    assert!(!row.is_empty(), "static/single/1 row");
    // The median and its interval from three repeats, [min, max], with its real coverage:
    // `0.2061 [0.1959–0.2164, 75%]` (milliseconds: every time in the column is under a second).
    let cell = row.split('|').nth(4).unwrap().trim();
    let here: f64 = cell.split(' ').next().unwrap().parse().expect("a measured number");
    assert!(cell.contains(" [") && cell.ends_with(", 75%]"), "an interval labelled 75%: {row}");
    assert!(here > 0.0, "{row}");
    assert!(row.contains("| 6.000 |"), "the seed's 0.006 s in ms: {row}");
    // Shapes: each row divided by its baseline (single at one client), ours and the seed's.
    assert!(md.contains("| Time (ms) ÷ baseline (here) | Time (ms) ÷ baseline (seed) |"), "normalised columns");
    assert!(row.contains("| 1.00× | 1.00× |"), "the baseline row is 1 for both: {row}");
    let cgi4 = joined("| cgi | fork | 4 |");
    assert!(cgi4.contains("| 2.37× |"), "the seed's 0.0344 / 0.0145: {cgi4}");
    // The verdict table: a verdict for every claim of the two experiments.
    assert!(md.contains("## Verdicts on the seeds' claims"), "verdict table");
    let verdicts = md.lines().filter(|l| l.starts_with("| 000 |") || l.starts_with("| 001 |")).count();
    assert_eq!(verdicts, 11, "one row per claim");
    let svg = std::fs::read_to_string(dir.path().join("plots/001-delay-pool-1.svg")).unwrap();
    assert!(svg.contains("the seed"), "the seed's series named in the legend");
    assert!(md.contains("| Pinning |"), "the machine table records the pinning");
    assert!(md.contains("## Appendix: machine") && md.contains("| Cores |"), "machine section");
    assert!(md.contains("- Finding: "), "findings");

    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("<svg"), "report.html has inline SVG plots");
    for external in ["<img", "<link", "<script", "src=\""] {
        assert!(!html.contains(external), "report.html refers to something outside it: {external}");
    }

    let results = dir.path().join("results.jsonl");
    let first = lines(&results);
    assert!(first.iter().any(|v| v["outcome"] == "measured"), "some point measured");
    // The server's CPU, reaped children included: fork's CGI points cost CPU time in
    // processes the server has reaped by the end of the point.
    let cgi_fork_cpu: f64 = first
        .iter()
        .filter(|v| v["server"] == "fork" && v["workload"] == "cgi" && v["outcome"] == "measured")
        .map(|v| v["measurement"]["cpu"]["server_cpu_us"].as_f64().unwrap())
        .sum();
    assert!(cgi_fork_cpu > 0.0, "fork's CGI children's CPU time is counted");
    for v in first.iter().filter(|v| v["outcome"] == "measured") {
        let (m, cpu) = (&v["measurement"], &v["measurement"]["cpu"]);
        assert!(cpu["load1"].is_f64() && cpu["steal_pct"].is_f64() && cpu["disturbed"].is_boolean(), "{cpu}");
        // Nanosecond clocks, the load generator's own CPU, and the quick run's minimum
        // duration of 0.1 s reached by repeating the batch.
        assert_eq!(cpu["fine_clock"], true, "{cpu}");
        assert!(cpu["client_cpu_us"].as_f64().unwrap() > 0.0, "the load generator's CPU: {cpu}");
        let batches = m["batches"].as_u64().unwrap();
        assert!(m["duration_s"].as_f64().unwrap() >= 0.1 && batches >= 1, "{}: {m}", id(v));
        assert_eq!(m["responses"].as_u64().unwrap() % batches, 0, "whole batches: {}", id(v));
        assert_eq!((m["tries"].as_u64(), &m["excluded"]), (Some(1), &false.into()), "--keep-disturbed: one try");
        assert!(v["position"].is_u64() && v["order_seed"].is_u64(), "the point's place in its run: {v}");
    }
    let short = first.iter().filter(|v| v["measurement"]["batches"].as_u64().is_some_and(|b| b > 1)).count();
    assert!(short > 0, "some quick point's batch is shorter than 0.1 s and was repeated");
    assert!(md.contains("| Load generator busy (% of its CPUs) |"), "the load generator's CPU in the tables");
    let ids: BTreeSet<String> = first.iter().map(id).collect();
    assert_eq!(ids.len(), first.len(), "one line per point");

    // Drop the last three measured points; --resume must rerun exactly those (and retry
    // any point that was skipped or failed), appending after the lines it keeps.
    let measured: Vec<usize> = (0..first.len()).filter(|&i| first[i]["outcome"] == "measured").collect();
    let dropped: Vec<usize> = measured[measured.len() - 3..].to_vec();
    let kept: Vec<&serde_json::Value> = (0..first.len()).filter(|i| !dropped.contains(i)).map(|i| &first[i]).collect();
    let kept_text: String = kept.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(&results, &kept_text).unwrap();
    lab(dir.path(), tmp.path(), &["--resume"]);

    let second = lines(&results);
    assert_eq!(
        &second[..kept.len()],
        &kept.iter().map(|v| (*v).clone()).collect::<Vec<_>>()[..],
        "kept lines unchanged"
    );
    let rerun: BTreeSet<String> = second[kept.len()..].iter().map(id).collect();
    let mut want: BTreeSet<String> = dropped.iter().map(|&i| id(&first[i])).collect();
    want.extend(kept.iter().filter(|v| v["outcome"] != "measured").map(|v| id(v)));
    assert_eq!(rerun, want, "--resume reran exactly the missing points");
}

/// Regression: `spidey lab` read `experiments/` from the current directory. From an empty
/// one it must still find (and here, with a bad id, refuse) the built-in experiments, and
/// `--experiments-dir` must still read a directory of its own.
#[test]
fn experiments_are_built_in_and_a_directory_overrides_them() {
    let cwd = tempfile::tempdir().unwrap();
    let run =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_spidey")).current_dir(cwd.path()).args(args).output().unwrap();
    // A prefix only the built-in set has: matched (the lab then fails on the bad --out).
    let out = run(&["lab", "--quick", "--out", "/proc/no-such-dir/lab-out", "003"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("no experiment matches"), "built-in 003 not found: {stderr}");
    assert!(stderr.contains("cannot create /proc/no-such-dir/lab-out"), "{stderr}");
    // A directory of our own replaces them: 003 is not in it.
    let dir = cwd.path().join("mine");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/001-delay.toml"), dir.join("900-mine.toml"))
        .unwrap();
    let dir_s = dir.to_str().unwrap();
    let out = run(&["lab", "--quick", "--experiments-dir", dir_s, "--out", "/proc/no-such-dir/x", "003"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no experiment matches '003'"));
    let out = run(&["lab", "--quick", "--experiments-dir", dir_s, "--out", "/proc/no-such-dir/x", "900"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot create /proc/no-such-dir/x"));
}

/// A one-point experiment `id`: one `single` server, prepared by the command `prepare` (a
/// TOML array), fetching a 1 KB file once per batch; a quick run of it takes a few seconds.
fn one_point_experiment(id: &str, prepare: &str) -> String {
    format!(
        "id = \"{id}\"\ntitle = \"one point\"\nseed = \"none\"\nquestion = \"one point?\"\n\
         workloads = [{{ name = \"file\", kind = \"file\", size = \"1KB\" }}]\n\
         [[sweeps]]\nname = \"one\"\ntitle = \"one\"\nwarmup = 0\n\
         servers = [{{ label = \"single\", mode = \"single\", prepare = {prepare} }}]\nworkloads = [\"file\"]\n\
         clients = [{{ c = 1, n = 1 }}]\n\
         table.dims = [\"server\"]\ntable.columns = [{{ header = \"ms\", metric = \"mean_ms\" }}]\n"
    )
}

/// The one-point experiment with a second sweep that runs in full runs only, and a claim
/// on it: a quick run cannot measure the claim.
fn one_point_and_a_full_only_claim(id: &str) -> String {
    one_point_experiment(id, "[]")
        + "\n[[sweeps]]\nname = \"later\"\ntitle = \"later\"\nwarmup = 0\nfull_only = true\n\
           servers = [{ label = \"single\", mode = \"single\" }, { label = \"fork\", mode = \"fork\" }]\n\
           workloads = [\"file\"]\nclients = [{ c = 2, n = 10 }]\n\
           table.dims = [\"server\"]\ntable.columns = [{ header = \"ms\", metric = \"mean_ms\" }]\n\
           \n[[claims]]\nkind = \"beats\"\ntext = \"fork beats single\"\nsource = \"000:1\"\nquote = \"fork wins\"\n\
           sweep = \"later\"\nmetric = \"mean_ms\"\na = { server = \"fork\" }\nb = { server = \"single\" }\n"
}

/// A quick run says in the terminal, as its report does, how many claims it did not
/// measure, why, and what to do. Before, it said nothing of them: the report listed the
/// claim as "not measured" with no word of why.
#[test]
fn a_quick_run_says_what_it_did_not_measure_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let exps = dir.path().join("exps");
    std::fs::create_dir_all(&exps).unwrap();
    std::fs::write(exps.join("090-later.toml"), one_point_and_a_full_only_claim("090-later")).unwrap();
    let out = dir.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .args(["lab", "--quick", "--experiments-dir"])
        .arg(&exps)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let says =
        "spidey lab: This quick run did not measure 1 claim of 1 experiment: 1 in sweep only a full run measures";
    assert!(stderr.contains(says), "stderr lacks {says:?}: {stderr}");
    assert!(stderr.contains("measured by a full run (`spidey lab --all`"), "what to do: {stderr}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("- 090-later: 1 claim not measured: 1 in sweep only a full run measures."), "{md}");
    assert!(!md.contains("| not measured |"), "the claim is folded, not listed: {md}");
}

/// Regression (audit M4): `spidey lab 000` ran a file `./000` of the current directory, its
/// `prepare` commands included, in place of the installed experiment 000: from a shared
/// directory such as `/tmp`, anyone's file, often as root. An argument without a `/` is an
/// id in the installed set (here `--experiments-dir`); one with a `/` is a file, run as
/// asked. The planted file's `prepare` touches a marker: it ran only when named as a path.
#[test]
fn a_file_of_the_current_directory_runs_only_when_named_as_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("planted-prepare-ran");
    let touch = format!("[\"touch\", \"{}\"]", marker.display());
    std::fs::write(dir.path().join("000"), one_point_experiment("000-planted", &touch)).unwrap();
    let installed = dir.path().join("installed");
    std::fs::create_dir(&installed).unwrap();
    std::fs::write(installed.join("000-installed.toml"), one_point_experiment("000-installed", "[]")).unwrap();
    // (the argument, the experiment that ran, whether the planted file's prepare ran)
    let cases = [("000", "000-installed", false), ("./000", "000-planted", true)];
    for (i, (arg, ran, planted)) in cases.into_iter().enumerate() {
        let out = dir.path().join(format!("out-{i}"));
        let run = Command::new(env!("CARGO_BIN_EXE_spidey"))
            .current_dir(dir.path())
            .env("TMPDIR", dir.path())
            .args(["lab", "--quick", "--keep-disturbed", "--experiments-dir"])
            .arg(&installed)
            .arg("--out")
            .arg(&out)
            .arg(arg)
            .output()
            .unwrap();
        assert!(run.status.success(), "spidey lab {arg}: {}", String::from_utf8_lossy(&run.stderr));
        let experiments: BTreeSet<String> =
            lines(&out.join("results.jsonl")).iter().map(|v| v["experiment"].as_str().unwrap().to_string()).collect();
        assert_eq!(experiments, BTreeSet::from([ran.to_string()]), "spidey lab {arg}");
        assert_eq!(marker.exists(), planted, "spidey lab {arg}: the planted prepare ran: {}", marker.exists());
    }
}

/// A run to report on, without measuring: DIR/run/results.jsonl (empty) with the committed
/// full run's robustness journal beside it, so `--report` writes the robustness section's
/// files too. Its results file.
fn results_to_report(dir: &Path) -> std::path::PathBuf {
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/runs/lab-full-c69ce8d/robustness.jsonl");
    std::fs::copy(committed, run.join("robustness.jsonl")).unwrap();
    std::fs::write(run.join("results.jsonl"), "").unwrap();
    run.join("results.jsonl")
}

/// `spidey lab ARGS --out OUT` from `dir`, with `dir` as its temporary directory.
fn lab_into(dir: &Path, out: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_spidey"))
        .current_dir(dir)
        .env("TMPDIR", dir)
        .arg("lab")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

/// Regression (audit M4): the lab wrote its files by path, so a link planted in `--out`
/// (made by someone else, in a shared directory) had the report, the results or
/// machine.json written over the file it pointed at, anywhere the lab's user may write.
/// Now a file written afresh replaces a link in its place, a link where `plots/` goes is
/// replaced by a directory, and a file kept for appending (`results.jsonl` with --resume)
/// that is a link is refused (exit 2, one line). The files the links point at are never
/// written.
#[test]
fn links_planted_in_out_are_replaced_or_refused_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let results = results_to_report(dir.path());
    let installed = dir.path().join("installed");
    std::fs::create_dir(&installed).unwrap();
    std::fs::write(installed.join("900-one.toml"), one_point_experiment("900-one", "[]")).unwrap();
    let run = |extra: &str| {
        let mut args = vec!["--quick", "--keep-disturbed", extra, "--experiments-dir"]
            .into_iter()
            .map(std::ffi::OsString::from)
            .collect::<Vec<_>>();
        args.extend([installed.clone().into_os_string(), "900".into()]);
        args
    };
    let report: Vec<std::ffi::OsString> = vec!["--report".into(), results.into_os_string()];
    // (what runs, the links planted in OUT, whether the run is refused)
    let cases = [
        ("--report", report, &["report.html", "report.md", "robustness.md", "robustness-idle.svg", "plots"][..], false),
        ("a run afresh", run("--force"), &["results.jsonl", "machine.json", "report.html", "plots"][..], false),
        ("a resumed run", run("--resume"), &["results.jsonl"][..], true),
    ];
    for (i, (what, args, planted, refused)) in cases.into_iter().enumerate() {
        let (out, outside) = (dir.path().join(format!("out-{i}")), dir.path().join(format!("outside-{i}")));
        std::fs::create_dir(&out).unwrap();
        std::fs::create_dir(&outside).unwrap();
        for name in planted {
            if *name == "plots" {
                std::fs::create_dir(outside.join(name)).unwrap();
            } else {
                std::fs::write(outside.join(name), "keep me").unwrap();
            }
            std::os::unix::fs::symlink(outside.join(name), out.join(name)).unwrap();
        }
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let ran = lab_into(dir.path(), &out, &args);
        let stderr = String::from_utf8_lossy(&ran.stderr);
        for name in planted {
            let target = outside.join(name);
            if target.is_dir() {
                assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "{what}: written through {name}");
            } else {
                assert!(std::fs::read_to_string(&target).unwrap() == "keep me", "{what}: written through {name}");
            }
        }
        if refused {
            assert_eq!(ran.status.code(), Some(2), "{what}: {stderr}");
            assert!(stderr.contains("results.jsonl is a symbolic link: refused"), "{what}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{what}: one line: {stderr}");
        } else {
            assert!(ran.status.success(), "{what}: {stderr}");
            for name in planted {
                let kind = out.join(name).symlink_metadata().unwrap().file_type();
                assert!(!kind.is_symlink(), "{what}: {name} is still a link");
            }
        }
    }
}

/// Regression (audit M4): `--out` in a shared directory (the help suggested
/// `/tmp/lab-quick`) was used whoever had made it. An `--out` that is a link (with or
/// without a trailing slash), a directory every user may write to, or another user's
/// directory is refused, one line and exit 2, before anything is measured or written, by a
/// run as by `--report`.
#[test]
fn an_out_someone_else_controls_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let results = results_to_report(dir.path());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.path().join("link")).unwrap();
    let mut cases = vec![
        (dir.path().join("link"), "link is a symbolic link: refused"),
        (dir.path().join("link/"), "link is a symbolic link: refused"),
        (shared.clone(), "shared is writable by every user: refused"),
    ];
    // Only root can give a directory to another user (65534, nobody).
    if rustix::process::geteuid().is_root() {
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        cases.push((theirs, "theirs belongs to uid 65534, not to this user (uid 0): refused"));
    }
    let runs: [&[&str]; 2] = [&["--report", results.to_str().unwrap()], &["--quick", "001"]];
    for (out, want) in &cases {
        for args in runs {
            let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
            let ran = lab_into(dir.path(), out, &args);
            let stderr = String::from_utf8_lossy(&ran.stderr);
            assert_eq!(ran.status.code(), Some(2), "{} {args:?}: {stderr}", out.display());
            assert!(stderr.contains(want) && stderr.lines().count() == 1, "{} {args:?}: {stderr}", out.display());
        }
    }
    for written in [&elsewhere, &shared] {
        assert_eq!(std::fs::read_dir(written).unwrap().count(), 0, "{} written into", written.display());
    }
}

#[test]
fn unknown_experiment_is_a_configuration_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["lab", "--quick", "--out", "/nonexistent-lab-out", "no-such-experiment"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no experiment matches 'no-such-experiment'; the experiments are 000-fork,"), "{stderr}");
    assert!(stderr.contains("007-tls") && stderr.lines().count() == 1, "one line naming every id: {stderr}");
}

/// `spidey lab ARGS` from a scratch directory: exit code, stdout, stderr.
fn lab_status(args: &[&str]) -> (Option<i32>, String, String) {
    let cwd = tempfile::tempdir().unwrap();
    let out =
        Command::new(env!("CARGO_BIN_EXE_spidey")).current_dir(cwd.path()).arg("lab").args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn list_shows_every_experiment_with_its_quick_and_full_time() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = lab_status(&["--list", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stdout}");
    for id in ["000-fork", "003-cgi", "006-robustness", "007-tls"] {
        let row = stdout.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("no {id} in {stdout}"));
        assert_eq!(row.matches("(estimate)").count(), 2, "quick and full, estimated: {row}");
    }
    assert!(stdout.contains("How forking affects latency and throughput"), "each title: {stdout}");
    let all = stdout.lines().find(|l| l.starts_with("all ")).expect("a total");
    let quick = all.split_whitespace().nth(1).unwrap();
    assert!(quick.ends_with('m') || quick.ends_with('s'), "{all}");
    assert!(!dir.path().join("results.jsonl").exists(), "--list runs nothing");
}

#[test]
fn plain_lab_prints_the_plan_and_asks_for_all() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = lab_status(&["--out", dir.path().to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("005-modes") && stdout.contains("(estimate)"), "the plan: {stdout}");
    assert!(stderr.contains("pass --all to start it, --quick for the smoke test"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing started");
}

#[test]
fn an_existing_results_file_is_kept_without_resume_or_force() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    std::fs::write(&results, "{\"an\": \"earlier run\"}\n").unwrap();
    let out = dir.path().to_str().unwrap();
    let (code, _, stderr) = lab_status(&["--quick", "--out", out, "000"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("holds an earlier run's results: pass --resume to continue it or --force"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(std::fs::read_to_string(&results).unwrap(), "{\"an\": \"earlier run\"}\n", "untouched");
    // --force and --resume together make no sense.
    let (code, _, stderr) = lab_status(&["--quick", "--force", "--resume", "--out", out, "000"]);
    assert_eq!(code, Some(2), "{stderr}");
}

/// The lab starts spidey with `--metrics` and scrapes it around every point: a closed-loop
/// point without errors has the server count exactly the answers and body bytes the client
/// counted, and the report shows both.
#[test]
fn points_carry_the_servers_own_count_beside_the_clients() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .args(["lab", "--quick", "--out"])
        .arg(&out)
        .arg("001")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let mut checked = 0;
    for point in lines(&out.join("results.jsonl")) {
        let (m, raw) = (&point["measurement"], &point["raw"]);
        // Without --keep-disturbed: a point is kept at its first undisturbed try, or at its
        // third, excluded if that one is disturbed too (whichever this machine's load makes).
        if !m.is_null() {
            let (tries, disturbed) = (m["tries"].as_u64().unwrap(), m["cpu"]["disturbed"] == true);
            assert!((1..=3).contains(&tries) && (!disturbed || tries == 3), "{}: {m}", id(&point));
            assert_eq!(m["excluded"] == true, disturbed, "{}: {m}", id(&point));
        }
        if m.is_null() || m["errors"] != 0 {
            continue;
        }
        let server = &m["server"];
        let answered: u64 = server["responses"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
        assert_eq!(answered, m["responses"].as_u64().unwrap(), "{}", id(&point));
        assert_eq!(server["body_bytes"], raw["body_bytes"], "{}", id(&point));
        checked += 1;
    }
    assert!(checked > 0, "no error-free point measured");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("Answered: client / server (--metrics)"), "the report's tables show both counts");
}

/// Experiment 007 (the cost of TLS) end to end, cut to two modes: the lab makes a
/// certificate, starts each `X tls` server with it and loads it over https, and the report
/// pairs every TLS server with its plain twin (`TLS ÷ plain` with an interval) in each of
/// the three connection uses. The handshakes the client counted show which use is which:
/// one per connection with keep-alive (and per reconnection after the server's
/// `--max-requests`), all full with `resume = false`, resumed otherwise.
#[test]
fn tls_experiment_reports_tls_against_plain_per_mode() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/007-tls.toml")).unwrap();
    let line = text.lines().find(|l| l.starts_with("quick.servers = ")).expect("007-tls.toml has a quick.servers line");
    let servers = r#"quick.servers = ["fork", "fork tls", "event", "event tls"]"#;
    let out = run_experiment_file(dir.path(), "007-tls.toml", &text.replacen(line, servers, 1), &[]);

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## 007-tls: The cost of TLS per architecture"), "{md}");
    // The versus table, split to fit a laptop screen: req/s in one part, the server's CPU
    // in the next, each repeating the point's columns.
    let part = |header: &str| -> Vec<&str> {
        let at = md.find(header).unwrap_or_else(|| panic!("no table {header}:\n{md}"));
        md[at..].lines().take_while(|l| l.starts_with('|')).collect()
    };
    let rate = part("| Server | Workload | Connection | req/s (plain) | req/s (tls) | req/s: TLS ÷ plain |\n");
    let cpu = part("| Server | Workload | Connection | server CPU per request (µs) (plain) | server CPU per request (µs) (tls) | server CPU per request (µs): TLS ÷ plain | Disturbed repeats (both) |\n");
    let uses = ["keep-alive", "new per request (TLS: resumed)", "new per request (TLS: full handshake)"];
    for mode in ["fork", "event"] {
        for used in uses {
            let start = format!("| {mode} | 1 KB | {used} |");
            for table in [&rate, &cpu] {
                let row =
                    table.iter().find(|l| l.starts_with(&start)).unwrap_or_else(|| panic!("no row {start}:\n{md}"));
                let cells: Vec<&str> = row.split('|').map(str::trim).collect();
                // The TLS ÷ plain ratio: `0.62× [0.55–0.70, 75%]`, a measured per-round
                // ratio with its interval and that interval's coverage (three repeats: 75%).
                let ratio = cells[6];
                let x: f64 = ratio.split('×').next().unwrap().parse().unwrap_or_else(|_| panic!("{row}"));
                assert!(
                    x > 0.0 && ratio.contains(" [") && ratio.ends_with(", 75%]"),
                    "a ratio with its interval: {row}"
                );
            }
        }
    }

    let mut seen = 0;
    for point in lines(&out.join("results.jsonl")) {
        let server = point["server"].as_str().unwrap();
        assert_eq!(point["outcome"], "measured", "{}: {}", id(&point), point["note"]);
        let (m, raw) = (&point["measurement"], &point["raw"]);
        assert!(m["responses"].as_u64().unwrap() > 0 && m["errors"] == 0, "{}: {m}", id(&point));
        let shakes = &raw["handshakes"];
        if !server.ends_with(" tls") {
            assert!(shakes.is_null(), "{}: plain http did handshakes: {shakes}", id(&point));
            continue;
        }
        let (full, resumed) = (shakes["full"].as_u64().unwrap(), shakes["resumed"].as_u64().unwrap());
        let client = point["client"]["keepalive"].as_bool().unwrap_or(true);
        let resume = point["client"]["resume"].as_bool().unwrap_or(true);
        match (client, resume) {
            // Keep-alive: a handshake per connection, and a reconnection (resumed) each time
            // the server closes one after its 1000 requests (`--max-requests`' default):
            // a fast machine does 4000 and more in the 300 ms.
            (true, _) => {
                let opened = 4 + m["responses"].as_u64().unwrap() / 1000;
                let ok = full <= 4 && full + resumed <= opened;
                assert!(ok, "{}: keep-alive, {full}+{resumed} handshakes for {m}", id(&point));
            }
            (false, false) => assert!(full > 4 && resumed == 0, "{}: {full} full, {resumed} resumed", id(&point)),
            (false, true) => assert!(resumed > full, "{}: {full} full, {resumed} resumed", id(&point)),
        }
        seen += 1;
    }
    assert_eq!(seen, 2 * 3 * 3, "two TLS servers × three connection uses × three repeats");
}

/// `spidey lab --verdicts RESULTS` measures nothing and prints the verdict table of a
/// results file (gzipped here): on the committed full run, the committed docs/lab-verdicts.md.
#[test]
fn verdicts_prints_the_table_of_a_results_file() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let run = |results: &Path| {
        Command::new(env!("CARGO_BIN_EXE_spidey")).arg("lab").arg("--verdicts").arg(results).output().unwrap()
    };
    let out = run(&repo.join("docs/runs/lab-full-4119505/results.jsonl.gz"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let want = std::fs::read_to_string(repo.join("docs/lab-verdicts.md")).unwrap();
    assert!(String::from_utf8_lossy(&out.stdout) == want, "the printed table is docs/lab-verdicts.md");
    let out = run(Path::new("/nonexistent/results.jsonl"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no results file /nonexistent/results.jsonl"));
}

/// A sweep with `cold = "files"` measures each point as one batch, the document root's
/// files evicted from the page cache first, and each record says so; a sweep without
/// `cold` says nothing of the kind and runs its batches until the minimum duration. (`cold = "machine"`, drop_caches as root, is left out: it
/// would empty the page cache of a machine shared with other builds.)
#[test]
fn a_cold_sweep_measures_one_batch_after_evicting_the_served_files() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = |name: &str, cold: &str| {
        format!(
            "[[sweeps]]\nname = \"{name}\"\ntitle = \"{name}\"\n{cold}\nwarmup = 0\n\
             servers = [{{ label = \"single\", mode = \"single\" }}]\nworkloads = [\"file\"]\n\
             clients = [{{ c = 1, n = 1, keepalive = false }}]\n\
             table.dims = [\"server\"]\ntable.columns = [{{ header = \"ms\", metric = \"mean_ms\" }}]\n"
        )
    };
    let text = format!(
        "id = \"900-cold\"\ntitle = \"cold\"\nseed = \"none\"\nquestion = \"cold?\"\n\
         workloads = [{{ name = \"file\", kind = \"file\", size = \"4KB\" }}]\n{}{}",
        sweep("cold", "cold = \"files\""),
        sweep("warm", "")
    );
    let out = run_experiment_file(dir.path(), "900-cold.toml", &text, &["900"]);
    let mut seen = [0, 0];
    for point in lines(&out.join("results.jsonl")) {
        assert_eq!(point["outcome"], "measured", "{}: {}", id(&point), point["note"]);
        let m = &point["measurement"];
        assert!(m["responses"].as_u64().unwrap() >= 1 && m["errors"] == 0, "{}: {m}", id(&point));
        let note = point["note"].as_str().unwrap_or_default();
        let cold = point["sweep"] == "cold";
        assert_eq!(
            note.starts_with("cold: one batch after the document root's files"),
            cold,
            "{}: {note:?}",
            id(&point)
        );
        let batches = m["batches"].as_u64().unwrap();
        assert!(
            if cold { batches == 1 } else { batches > 1 },
            "{}: {batches} batches of one request (at least 100 ms warm)",
            id(&point)
        );
        seen[usize::from(cold)] += 1;
    }
    assert_eq!(seen, [3, 3], "three repeats of each sweep's one point");
}

/// A client given as a share of capacity (`capacity = 0.5`) runs at that share of the
/// rate the server answered in a closed loop measured when it started: the load's rate is
/// the share times the capacity the record keeps, per repeat, and the note says so.
#[test]
fn a_capacity_share_runs_at_that_share_of_the_measured_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let client = |x: f64| {
        format!("{{ c = 1, duration = \"200ms\", capacity = {x}, keepalive = false, model = \"per_request\" }}")
    };
    let text = format!(
        "id = \"900-share\"\ntitle = \"share\"\nseed = \"none\"\nquestion = \"share?\"\n\
         workloads = [{{ name = \"file\", kind = \"file\", size = \"1KB\" }}]\n\
         [[sweeps]]\nname = \"scaled\"\ntitle = \"scaled\"\n\
         servers = [{{ label = \"single\", mode = \"single\" }}]\nworkloads = [\"file\"]\n\
         clients = [{}, {}]\ntable.dims = [\"share\", \"server\"]\n\
         table.columns = [{{ header = \"req/s\", metric = \"rps\" }}]\n",
        client(0.25),
        client(0.5)
    );
    let out = run_experiment_file(dir.path(), "900-share.toml", &text, &["900"]);
    let mut capacities = std::collections::BTreeMap::new();
    for point in lines(&out.join("results.jsonl")) {
        assert_eq!(point["outcome"], "measured", "{}: {}", id(&point), point["note"]);
        let share = point["client"]["capacity"].as_f64().unwrap();
        let capacity = point["measurement"]["capacity_rps"].as_f64().unwrap();
        assert!(capacity > 50.0, "{}: a single server on loopback answers more than {capacity} req/s", id(&point));
        let rate = point["raw"]["rate"].as_f64().unwrap();
        assert!((rate - share * capacity).abs() < 1e-6 * rate, "{}: rate {rate} for {share} × {capacity}", id(&point));
        let note = point["note"].as_str().unwrap();
        assert!(note.starts_with(&format!("offered {share} × {capacity:.0} req/s")), "{}: {note}", id(&point));
        // The capacity is the server run's: both points of a repeat share it.
        let repeat = point["repeat"].as_u64().unwrap();
        assert_eq!(*capacities.entry(repeat).or_insert(capacity), capacity, "{}", id(&point));
    }
    assert_eq!(capacities.len(), 3, "three repeats");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Rate (× capacity)") && md.contains("| 0.25× |"), "the table's share column:\n{md}");
}

/// A sweep with `fresh_clients = true` sends each point's requests from fresh `spidey
/// bench` processes, one per connection (their results merged: two processes of one
/// thread each), as one batch; `one_batch = true` alone keeps the load in-process (one
/// thread) and also measures one batch.
#[test]
fn fresh_clients_are_processes_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = |name: &str, key: &str| {
        format!(
            "[[sweeps]]\nname = \"{name}\"\ntitle = \"{name}\"\n{key} = true\nwarmup = 0\n\
             servers = [{{ label = \"single\", mode = \"single\" }}]\nworkloads = [\"file\"]\n\
             clients = [{{ c = 2, n = 4, keepalive = false }}]\n\
             table.dims = [\"server\"]\ntable.columns = [{{ header = \"ms\", metric = \"mean_ms\" }}]\n"
        )
    };
    let text = format!(
        "id = \"900-fresh\"\ntitle = \"fresh\"\nseed = \"none\"\nquestion = \"fresh?\"\n\
         workloads = [{{ name = \"file\", kind = \"file\", size = \"1KB\" }}]\n{}{}",
        sweep("fresh", "fresh_clients"),
        sweep("in-process", "one_batch")
    );
    let out = run_experiment_file(dir.path(), "900-fresh.toml", &text, &["900"]);
    let mut seen = [0, 0];
    for point in lines(&out.join("results.jsonl")) {
        assert_eq!(point["outcome"], "measured", "{}: {}", id(&point), point["note"]);
        let (m, raw) = (&point["measurement"], &point["raw"]);
        assert_eq!((m["responses"].as_u64(), m["errors"].as_u64()), (Some(4), Some(0)), "{}: {m}", id(&point));
        assert_eq!(m["batches"], 1, "{}: one batch", id(&point));
        let fresh = point["sweep"] == "fresh";
        assert_eq!(
            raw["threads"],
            if fresh { 2 } else { 1 },
            "{}: the load's threads, summed over processes",
            id(&point)
        );
        let note = point["note"].as_str().unwrap_or_default();
        assert_eq!(note.starts_with("fresh clients: 2 spidey bench processes"), fresh, "{}: {note:?}", id(&point));
        seen[usize::from(fresh)] += 1;
    }
    assert_eq!(seen, [3, 3], "three repeats of each sweep's one point");
}
