//! The robustness experiment end to end (`spidey lab` with a `[robustness]` table): a
//! slowloris crowd of 16 connections must break `single` (one connection at a time, each
//! stalled head holds it until the head timeout) and must not break `event`. If the
//! crowd, the legitimate client or the verdicts were wrong, one of the two would flip.

use std::process::Command;

const EXPERIMENT: &str = r#"
id = "006-robustness-mini"
title = "robustness, two modes"
seed = "none"
question = "does the slowloris crowd break single and not event?"
workloads = [
  { name = "small", kind = "file", size = "1KB" },
  { name = "large", kind = "file", size = "1MB" },
]
[robustness]
attacks = ["slowloris"]
crowd = [16]
small = "small"
large = "large"
legit = { rate = 50.0, duration = "2s", timeout = "1s" }
servers = [{ label = "single", mode = "single" }, { label = "event", mode = "event" }]
"#;

#[test]
fn slowloris_breaks_single_and_not_event() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("006-mini.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["lab", "--quick", "--out"])
        .arg(&out_dir)
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "spidey lab failed: {}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(out_dir.join("robustness.md")).unwrap();
    let row = |mode: &str| md.lines().find(|l| l.starts_with(&format!("| {mode} |"))).unwrap_or_else(|| panic!("{md}"));
    assert!(row("single").ends_with("| **breaks at N = 16** |"), "{md}");
    assert!(row("event").ends_with("| keeps serving (up to N = 16) |"), "{md}");
    assert!(md.contains("single N=16: ") && md.contains(" timeout"), "the failures are named: {md}");
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("## What breaks each architecture"), "report.md carries the section");
    let svg = std::fs::read_to_string(out_dir.join("robustness-slowloris.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("single") && svg.contains("event"));
    let journal = std::fs::read_to_string(out_dir.join("robustness.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), 4, "baseline and N = 16 for each mode: {journal}");
}

/// `--resume` keeps what the interrupted run measured: the robustness journal's points are
/// kept, not measured again (a server added since is measured and appended), and
/// `machine.json` still names the machine the run began on. Before, a resumed run removed
/// the journal, measured everything again, and described the machine anew.
#[test]
fn a_resumed_run_keeps_the_robustness_journal_and_the_machine() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("006-mini.toml");
    let out_dir = dir.path().join("out");
    let lab = |text: &str, resume: bool| {
        std::fs::write(&file, text).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_spidey"));
        command.current_dir(env!("CARGO_MANIFEST_DIR")).args(["lab", "--quick", "--out"]).arg(&out_dir).arg(&file);
        if resume {
            command.arg("--resume");
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "spidey lab failed: {}", String::from_utf8_lossy(&out.stderr));
    };
    let event_only = EXPERIMENT.replace(r#"{ label = "single", mode = "single" }, "#, "");
    lab(&event_only, false);
    let first = std::fs::read_to_string(out_dir.join("robustness.jsonl")).unwrap();
    assert_eq!(first.lines().count(), 2, "{first}");
    let machine = out_dir.join("machine.json");
    let began_on = std::fs::read_to_string(&machine).unwrap().replacen("\"cpu\": \"", "\"cpu\": \"<the first> ", 1);
    std::fs::write(&machine, &began_on).unwrap();
    lab(EXPERIMENT, true);
    let resumed = std::fs::read_to_string(out_dir.join("robustness.jsonl")).unwrap();
    assert!(resumed.starts_with(&first), "the measured points are kept as they were:\n{first}\n---\n{resumed}");
    assert_eq!(resumed.lines().count(), 4, "single's two points appended: {resumed}");
    assert_eq!(std::fs::read_to_string(&machine).unwrap(), began_on, "machine.json is the first run's");
    let md = std::fs::read_to_string(out_dir.join("robustness.md")).unwrap();
    assert!(md.contains("| single |") && md.contains("| event |"), "both in the section: {md}");
}

/// 006 shows its progress as the other experiments do: on a terminal (a pseudo-terminal
/// from util-linux's `script`, 160 columns), the bar counts the robustness points and names the point
/// being measured. Before, the bar ended "0/0 done" before 006 began and 006 printed only a
/// line per finished point.
#[test]
fn the_robustness_table_shows_progress_on_a_terminal() {
    let script = std::path::Path::new("/usr/bin/script");
    if !script.is_file() {
        eprintln!("SKIPPED the_robustness_table_shows_progress_on_a_terminal: no {} (util-linux)", script.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("006-mini.toml");
    let event_only = EXPERIMENT.replace(r#"{ label = "single", mode = "single" }, "#, "");
    std::fs::write(&file, event_only).unwrap();
    let run = |cols: u32, out: &str| {
        let lab = format!(
            "stty rows 40 cols {cols}; {} lab --quick --out {} {}",
            env!("CARGO_BIN_EXE_spidey"),
            dir.path().join(out).display(),
            file.display()
        );
        let out = Command::new(script).args(["-qec", &lab, "/dev/null"]).output().unwrap();
        let tty = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{tty}");
        tty
    };
    let tty = run(160, "out");
    for drawn in ["] 0/2 ", "] 1/2 ", "] 2/2 ", "006-robustness-mini: event slowloris N=16"] {
        assert!(tty.contains(drawn), "the terminal never showed {drawn:?}:\n{tty}");
    }
    // On a terminal too narrow for the point's name beside the bar, the name is cut and
    // the bar keeps its 30 cells (a bar as wide as the room left once collapsed to `[]`).
    let tty = run(72, "out-narrow");
    let whole_bar = tty.match_indices("] 2/2 ").any(|(at, _)| {
        let before: Vec<char> = tty[..at].chars().rev().take(31).collect();
        before.len() == 31 && before[30] == '['
    });
    assert!(whole_bar, "no 30-cell bar at 72 columns:\n{tty}");
}
