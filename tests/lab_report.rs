//! `spidey lab --report RESULTS`: the report of a committed run, rendered without measuring.
//!
//! - Over the committed full run: the report opens with a summary whose counts are those of
//!   its own verdict table, every table fits a laptop screen (at most 7 columns), titles say
//!   the run's sizes, latency distributions are drawn, the machine is the run's, and the
//!   HTML has no literal Markdown left in it.
//! - Change a result (swap two servers' numbers in one experiment) and the summary and the
//!   verdicts change with it: the text comes from the data.
//! - Headless Chromium parses the HTML into the same tables, figures and anchors, and
//!   photographs each kind of plot (a sweep, a latency distribution, the robustness chart).
//!
//! Chromium as in tests/browser.rs: with SPIDEY_REQUIRE_CHROMIUM=1 (scripts/test.sh) a
//! missing browser fails the test; otherwise that test prints SKIPPED and passes.

use flate2::read::GzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

const RUN: &str = "docs/runs/lab-full-c69ce8d";
const CHROMIUM: &str = "/usr/bin/chromium";
static ONE_BROWSER_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The committed run's records, one JSON value a line.
fn committed_records() -> Vec<serde_json::Value> {
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(repo().join(RUN).join("results.jsonl.gz")).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// `spidey lab --report results --out out`; its report.md.
fn report(results: &Path, out: &Path) -> String {
    let run = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(["lab", "--report"])
        .arg(results)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(run.status.success(), "spidey lab --report: {}", String::from_utf8_lossy(&run.stderr));
    assert!(out.join("report.html").is_file(), "report.html written");
    std::fs::read_to_string(out.join("report.md")).unwrap()
}

/// The cells of a Markdown table line (`\|` inside a cell is not a separator).
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.replace("\\|", "\u{1}").split('|').map(|c| c.trim().replace('\u{1}', "|")).collect()
}

/// The Markdown tables of a document: each as its lines.
fn tables(md: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    let mut open = false;
    for line in md.lines() {
        if line.starts_with('|') {
            if !open {
                out.push(Vec::new());
            }
            out.last_mut().unwrap().push(line);
        }
        open = line.starts_with('|');
    }
    out
}

/// The summary paragraph (the first after the title) and the opening verdict table's
/// verdicts (its last column).
fn summary_and_verdicts(md: &str) -> (String, Vec<String>) {
    let summary = md.split("\n\n").nth(1).unwrap().to_string();
    let at = md.find("## Verdicts on the seeds' claims").expect("the verdict table");
    let table = &tables(&md[at..])[0];
    let verdicts = table[2..].iter().map(|l| cells(l).last().unwrap().clone()).collect();
    (summary, verdicts)
}

/// The summary states the verdict table's own counts.
fn assert_summary_counts(summary: &str, verdicts: &[String]) {
    assert!(summary.contains(&format!("checked {} claims", verdicts.len())), "{summary}");
    let n = |pred: &dyn Fn(&str) -> bool| verdicts.iter().filter(|v| pred(v)).count();
    let counts = [
        (n(&|v| v == "reproduced"), "reproduced"),
        (n(&|v| v == "direction reproduced, size not"), "reproduced in direction but not in size"),
        (n(&|v| v == "not reproduced"), "not reproduced"),
        (n(&|v| v == "level (no difference)"), "level (evidence of no difference)"),
        (n(&|v| v == "inconclusive"), "inconclusive"),
        (n(&|v| v.starts_with("by construction")), "true by construction"),
        (n(&|v| v.starts_with("client-bound")), "client-bound (the load generator was the limit)"),
        (n(&|v| v == "not testable here"), "not testable here"),
        (n(&|v| v.starts_with("not testable by this method")), "not testable by this method"),
    ];
    for (count, words) in counts {
        if count > 0 {
            assert!(summary.contains(&format!(" {count} {words}")), "the summary says {count} {words}: {summary}");
        }
    }
}

#[test]
fn report_of_the_committed_run_is_rendered_from_its_results() {
    let out = tempfile::tempdir().unwrap();
    let md = report(&repo().join(RUN).join("results.jsonl.gz"), out.path());
    assert!(md.starts_with("# Spidey lab report\n\nThis run checked "), "opens with the summary:\n{}", &md[..300]);
    let (summary, verdicts) = summary_and_verdicts(&md);
    assert!(verdicts.len() >= 30, "a verdict per claim: {verdicts:?}");
    assert_summary_counts(&summary, &verdicts);
    assert!(summary.contains("Seed by seed: [000](#000-fork-"), "each seed linked to its section: {summary}");

    for table in tables(&md) {
        let width = cells(table[0]).len();
        assert!(width <= 7, "a table of {width} columns: {}", table[0]);
    }
    // The titles say the full run's sizes.
    for title in [
        "### Average latency, 100 requests per client",
        "### 100 requests against the iterative server",
        "### Average response time (ms), 10 clients, N = 10 to 100,000 requests",
    ] {
        assert!(md.contains(title), "report.md lacks {title}");
    }
    // Latency distributions, where a claim is about latency.
    assert!(md.contains("![Latency distribution"), "a latency distribution");
    let cdfs = std::fs::read_dir(out.path().join("plots")).unwrap().flatten();
    assert!(cdfs.map(|e| e.file_name().to_string_lossy().into_owned()).any(|n| n.contains("-cdf-")));
    // The method comes after the experiments; the machine is the run's (its report.md).
    let (method, first) = (md.find("## Appendix: method").unwrap(), md.find("## 000-fork").unwrap());
    assert!(method > first, "the method is an appendix");
    assert!(md.contains("| CPU | AMD EPYC |"), "the run's machine");
    // The robustness section (from robustness.jsonl) under experiment 006's heading.
    let section = md.find("### What breaks each architecture").expect("the robustness section");
    assert!(md.find("## 006-robustness").unwrap() < section && section < md.find("## 007-tls").unwrap());

    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(!html.contains('`'), "Markdown code spans are rendered, not left as backticks");
    assert!(html.contains("<code>--metrics</code>"), "as <code>");
    for external in ["<img", "<link", "<script", "src=\""] {
        assert!(!html.contains(external), "report.html refers to something outside it: {external}");
    }
    // Each verdict coloured, in the opening table and in the appendix's.
    assert_eq!(html.matches("<td class=\"v-").count(), 2 * verdicts.len());

    let missing = Command::new(env!("CARGO_BIN_EXE_spidey"))
        .args(["lab", "--report", "/nonexistent/results.jsonl", "--out"])
        .arg(out.path().join("none"))
        .output()
        .unwrap();
    assert!(!missing.status.success() && !out.path().join("none").exists());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no results file /nonexistent/results.jsonl"));
}

/// Swapping fork's and single's numbers in 000 turns "fork beats single" around: the
/// verdict, its numbers and the summary's counts all follow the data.
#[test]
fn changing_a_result_changes_the_summary_and_the_verdicts() {
    let swap = |v: &serde_json::Value| {
        let mut v = v.clone();
        let other = |s: &str| match s {
            "single" => "fork".to_string(),
            "fork" => "single".to_string(),
            s => s.to_string(),
        };
        let server = other(v["server"].as_str().unwrap());
        let mut id: Vec<String> = v["id"].as_str().unwrap().split('/').map(String::from).collect();
        id[2] = other(&id[2]);
        v["server"] = server.into();
        v["id"] = id.join("/").into();
        v
    };
    let fork: Vec<serde_json::Value> =
        committed_records().into_iter().filter(|v| v["experiment"] == "000-fork").collect();
    let dir = tempfile::tempdir().unwrap();
    let mut reports = Vec::new();
    for (name, records) in [("asis", fork.clone()), ("swapped", fork.iter().map(swap).collect())] {
        let results: PathBuf = dir.path().join(format!("{name}.jsonl"));
        let lines: Vec<String> = records.iter().map(|v| v.to_string()).collect();
        std::fs::write(&results, lines.join("\n") + "\n").unwrap();
        reports.push(report(&results, &dir.path().join(name)));
    }
    let claim = "fork beats single on mean latency at 2 and 4 clients for a directory and a static file";
    let row = |md: &str| {
        let at = md.find("## Verdicts on the seeds' claims").unwrap();
        tables(&md[at..])[0].iter().find(|l| l.contains(claim)).map(|l| cells(l)).expect("the claim's row")
    };
    let (asis, swapped) = (row(&reports[0]), row(&reports[1]));
    assert_eq!(asis.last().unwrap(), "not reproduced", "{asis:?}");
    let turned = ["reproduced", "direction reproduced, size not"];
    assert!(turned.contains(&swapped.last().unwrap().as_str()), "{swapped:?}");
    assert_ne!(asis[3], swapped[3], "this run's number follows the data");
    let (s0, v0) = summary_and_verdicts(&reports[0]);
    let (s1, v1) = summary_and_verdicts(&reports[1]);
    assert_summary_counts(&s0, &v0);
    assert_summary_counts(&s1, &v1);
    assert_ne!(s0, s1, "the summary follows the data");
}

/// Text a results file or a machine.json could carry to run in a browser, or to become a
/// link, were it written into a report as markup.
const HOSTILE: [&str; 8] = [
    "<script>alert(1)</script>",
    "\" onmouseover=\"x",
    "javascript:alert(1)",
    "[click](javascript:alert(1))",
    "](javascript:x)",
    "<img src=x onerror=y>",
    "<javascript:alert(2)>",
    "a line\n\n<script>alert(3)</script>",
];

/// The tags of an HTML page that could run something: `<script>`, an event handler
/// attribute (`onerror=`), a `javascript:` address.
fn active_tags(html: &str) -> Vec<String> {
    let handler = |attr: &str| {
        attr.split_once('=').is_some_and(|(name, _)| {
            name.len() > 2 && name.starts_with("on") && name.chars().all(|c| c.is_ascii_alphabetic())
        })
    };
    html.split('<')
        .skip(1)
        .map(|piece| piece.split('>').next().unwrap_or_default().to_ascii_lowercase())
        .filter(|tag| tag.starts_with("script") || tag.contains("javascript:") || tag.split_whitespace().any(handler))
        .map(|tag| format!("<{tag}>"))
        .collect()
}

/// Regression (audit M5): the notes of results.jsonl and the fields of machine.json went
/// into report.html as markup, so a `<script>`, an event handler or a `javascript:` link in
/// them ran when the report was opened; report.md carried them as raw HTML and link syntax.
/// With hostile notes and machine fields, neither report.html nor report.md (rendered as
/// Markdown renderers do, raw HTML kept) has an active tag, and each page shows the text.
#[test]
fn notes_and_machine_fields_are_text_in_both_reports() {
    let dir = tempfile::tempdir().unwrap();
    let mut records: Vec<serde_json::Value> =
        committed_records().into_iter().filter(|v| v["experiment"] == "000-fork").collect();
    for (record, note) in records.iter_mut().zip(HOSTILE) {
        record["outcome"] = "failed".into();
        record["note"] = note.into();
    }
    let lines: Vec<String> = records.iter().map(|v| v.to_string()).collect();
    std::fs::write(dir.path().join("results.jsonl"), lines.join("\n") + "\n").unwrap();
    let fields = ["cpu", "memory", "kernel", "build", "spidey", "rustc", "nginx", "load", "pinning", "network"];
    let mut machine: serde_json::Map<String, serde_json::Value> =
        fields.iter().zip(HOSTILE.iter().cycle()).map(|(k, v)| (k.to_string(), (*v).into())).collect();
    machine.insert("cores".into(), 2.into());
    std::fs::write(dir.path().join("machine.json"), serde_json::Value::from(machine).to_string()).unwrap();

    let out = dir.path().join("out");
    let md = report(&dir.path().join("results.jsonl"), &out);
    let mut md_html = String::new();
    let options = pulldown_cmark::Options::ENABLE_TABLES | pulldown_cmark::Options::ENABLE_STRIKETHROUGH;
    pulldown_cmark::html::push_html(&mut md_html, pulldown_cmark::Parser::new_ext(&md, options));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for (page, text) in [("report.html", &html), ("report.md, rendered", &md_html)] {
        assert_eq!(active_tags(text), Vec::<String>::new(), "{page}: tags from the data");
        for shown in
            ["&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=y&gt;", "[click](javascript:alert(1))"]
        {
            assert!(text.contains(shown), "{page} shows {shown} as text");
        }
    }
}

/// The browser, or None (with a SKIPPED line) where it is missing and not required.
fn chromium(test: &str) -> Option<PathBuf> {
    let browser = PathBuf::from(std::env::var_os("SPIDEY_CHROMIUM").unwrap_or_else(|| CHROMIUM.into()));
    if browser.exists() {
        return Some(browser);
    }
    let required = std::env::var("SPIDEY_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
    assert!(!required, "SPIDEY_REQUIRE_CHROMIUM=1 but {} is missing", browser.display());
    eprintln!("SKIPPED {test}: {} not found", browser.display());
    None
}

/// Headless Chromium on a file with `action` (`--dump-dom`, `--screenshot=PNG`), in a fresh
/// profile; its stdout.
fn browse(browser: &Path, action: &str, file: &Path) -> String {
    browse_at(browser, action, file, "960,460")
}

/// [`browse`] in a window of `size` (`WIDTH,HEIGHT`).
fn browse_at(browser: &Path, action: &str, file: &Path, size: &str) -> String {
    // One browser at a time, as in tests/browser.rs: a small machine runs these tests.
    let _one = ONE_BROWSER_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let profile = tempfile::tempdir().unwrap();
    let run = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--hide-scrollbars", "--allow-file-access-from-files"])
        .arg(format!("--window-size={size}"))
        .args(["--timeout=20000", action])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", file.display()))
        .output()
        .unwrap();
    assert!(run.status.success(), "chromium {action}: {}", String::from_utf8_lossy(&run.stderr));
    String::from_utf8_lossy(&run.stdout).into_owned()
}

/// The report of experiments 000 and 001 of the committed run, with its robustness
/// journal beside the results (so 006's section too): its output directory.
fn small_report(dir: &Path) -> PathBuf {
    let some: Vec<String> = committed_records()
        .into_iter()
        .filter(|v| v["experiment"] == "000-fork" || v["experiment"] == "001-delay")
        .map(|v| v.to_string())
        .collect();
    let results = dir.join("results.jsonl");
    std::fs::write(&results, some.join("\n") + "\n").unwrap();
    std::fs::copy(repo().join(RUN).join("robustness.jsonl"), dir.join("robustness.jsonl")).unwrap();
    let out = dir.join("out");
    report(&results, &out);
    out
}

/// The browser's DOM of the report: the tables and figures it was written with, every
/// in-page link landing on an element with that id.
#[test]
fn the_report_opens_in_a_browser() {
    let Some(browser) = chromium("the_report_opens_in_a_browser") else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = small_report(dir.path());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let dom = browse(&browser, "--dump-dom", &out.join("report.html"));
    for tag in ["<table", "<figure", "<svg", "<h2", "<h3", "<ul"] {
        assert_eq!(dom.matches(tag).count(), html.matches(tag).count(), "the browser kept every {tag}");
    }
    assert!(dom.matches("<table").count() >= 5 && dom.matches("<svg").count() >= 3, "tables and plots");
    assert!(dom.contains("<table class=\"verdicts\">") && dom.contains("class=\"v-"), "coloured verdicts");
    let mut links = 0;
    for (at, _) in dom.match_indices("href=\"#") {
        let id = &dom[at + 7..at + 7 + dom[at + 7..].find('"').unwrap()];
        assert!(dom.contains(&format!("id=\"{id}\"")), "a link to #{id} lands nowhere");
        links += 1;
    }
    assert!(links >= 2, "the verdict table links each claim to its experiment");
}

/// On a phone's 400 px the page is no wider than the screen: a wide table scrolls in its
/// own box instead of pushing the page sideways. Headless Chromium's window is at least
/// 500 px wide, so the report is shown in a frame of each width, and the browser writes
/// the width of the report's page (`scrollWidth`, CSS px) into the DOM it dumps.
#[test]
fn at_400_px_nothing_runs_past_the_screen() {
    let Some(browser) = chromium("at_400_px_nothing_runs_past_the_screen") else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = small_report(dir.path());
    for width in [400, 960] {
        let frame = out.join(format!("frame-{width}.html"));
        let page = format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"f\" src=\"report.html\" \
             style=\"width:{width}px;height:800px;border:0\"></iframe><script>document.getElementById('f').onload=\
             function(){{document.body.dataset.width=this.contentDocument.documentElement.scrollWidth}}</script></body></html>"
        );
        std::fs::write(&frame, page).unwrap();
        let dom = browse_at(&browser, "--dump-dom", &frame, &format!("{},900", width.max(500) + 40));
        let at = dom.find("data-width=\"").expect("the probe ran") + 12;
        let seen: u32 = dom[at..at + dom[at..].find('"').unwrap()].parse().unwrap();
        assert!(seen <= width, "in {width} px the report is {seen} px wide");
    }
}

/// Each kind of plot, photographed by the browser: a PNG of the chart's size with
/// something drawn on it (a blank 960×460 page compresses to a few KB).
#[test]
fn each_kind_of_plot_renders_in_a_browser() {
    let Some(browser) = chromium("each_kind_of_plot_renders_in_a_browser") else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = small_report(dir.path());
    let kinds = [
        ("a sweep with the seed's series", out.join("plots/000-fork-latency-1.svg")),
        ("a latency distribution", out.join("plots/000-fork-latency-cdf-1.svg")),
        ("the robustness chart", out.join("robustness-idle.svg")),
    ];
    for (kind, svg) in kinds {
        assert!(svg.is_file(), "{kind}: {} written", svg.display());
        let png = dir.path().join("shot.png");
        browse(&browser, &format!("--screenshot={}", png.display()), &svg);
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{kind}: a PNG");
        let size = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!((size(16), size(20)), (960, 460), "{kind}: the IHDR's width and height");
        assert!(bytes.len() > 15_000, "{kind}: {} bytes, a blank page?", bytes.len());
        std::fs::remove_file(&png).unwrap();
    }
}

/// A run whose repeats were left out as disturbed says so, with the count, the reason and
/// what to do, in the verdicts' summary (`--verdicts`, and the report); a run with none
/// left out says nothing of it. Before, a busy machine's quick run ended with most claims
/// "not measured" and no word of why.
#[test]
fn repeats_left_out_as_disturbed_are_counted_and_explained() {
    let fork: Vec<serde_json::Value> =
        committed_records().into_iter().filter(|v| v["experiment"] == "000-fork").collect();
    let dir = tempfile::tempdir().unwrap();
    // (how many repeats to mark excluded, what the summary must say, or None)
    let cases: [(usize, Option<String>); 2] =
        [(0, None), (7, Some(format!("7 of {} measured repeats were left out as disturbed", fork.len())))];
    for (n, says) in cases {
        let mut records = fork.clone();
        for v in records.iter_mut().filter(|v| v["measurement"].is_object()).take(n) {
            v["measurement"]["excluded"] = true.into();
        }
        let results = dir.path().join(format!("excluded-{n}.jsonl"));
        let lines: Vec<String> = records.iter().map(|v| v.to_string()).collect();
        std::fs::write(&results, lines.join("\n") + "\n").unwrap();
        let out =
            Command::new(env!("CARGO_BIN_EXE_spidey")).args(["lab", "--verdicts"]).arg(&results).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        match &says {
            None => assert!(!text.contains("measured repeats were left out as disturbed"), "{n}: {text}"),
            Some(says) => {
                assert!(text.contains(says.as_str()), "{n}: {text}");
                assert!(text.contains("--keep-disturbed") && text.contains("quieter machine"), "what to do: {text}");
            }
        }
    }
}

/// A quick run lists what it measured and folds the rest: the committed quick run's 000
/// and 001, every repeat of 001 left out as disturbed, and a record of 008 (whose sweeps
/// all run in full runs only). Before, the verdict tables listed each of those claims as
/// "not measured" or "inconclusive (insufficient clean repeats …)", row after row, and the
/// summary did not say why or what to do.
#[test]
fn a_quick_report_folds_what_it_did_not_measure() {
    let text = std::fs::read_to_string(repo().join("docs/runs/lab-quick-6b992ad/results.jsonl")).unwrap();
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        match v["experiment"].as_str() {
            Some("000-fork") => {}
            Some("001-delay") if v["measurement"].is_object() => v["measurement"]["excluded"] = true.into(),
            _ => continue,
        }
        lines.push(v.to_string());
    }
    let repeats_001 = lines.iter().filter(|l| l.contains("\"001-delay\"")).count();
    lines.push(
        serde_json::json!({
            "id": "quick/008-explain-000-rtt/rtt 0/single/static/c1-n1-close/r0", "experiment": "008-explain-000-rtt",
            "sweep": "rtt 0", "server": "single", "workload": "static",
            "client": { "c": 1, "n": 1, "duration": null, "rate": null, "keepalive": false },
            "repeat": 0, "outcome": "skipped", "note": "this sweep runs in full runs only", "finished_at": 0
        })
        .to_string(),
    );
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    std::fs::write(&results, lines.join("\n") + "\n").unwrap();
    let md = report(&results, &dir.path().join("out"));
    let (summary, verdicts) = summary_and_verdicts(&md);
    assert!(!verdicts.is_empty(), "the claims measured are listed: {md}");
    for v in &verdicts {
        assert!(!v.contains("not measured"), "a claim not measured in the table: {v}");
    }
    for table in tables(&md) {
        for row in table {
            assert!(!row.contains("insufficient clean repeats"), "a claim without clean repeats in a table: {row}");
            assert!(!row.starts_with("| [001]") && !row.starts_with("| 001 |"), "001 measured nothing clean: {row}");
        }
    }
    assert_summary_counts(&summary, &verdicts);
    // One line per experiment with what it did not measure, how many and why.
    for line in [
        format!("- 001-delay: 4 claims not measured: 4 with too few clean repeats, the others left out as disturbed ({repeats_001} of {repeats_001} repeats)."),
        "- 008-explain-000-rtt: 4 claims not measured: 4 in sweeps only a full run measures.".to_string(),
    ] {
        assert!(md.lines().any(|l| l == line), "report.md lacks {line:?}:\n{md}");
    }
    // The summary says it once, overall, and what to do.
    for says in [
        "This quick run did not measure 8 claims of 2 experiments: 4 in sweeps only a full run measures, 4 with too few clean repeats",
        "pass --keep-disturbed",
        "measured by a full run (`spidey lab --all`",
    ] {
        assert!(summary.contains(says), "the summary lacks {says:?}: {summary}");
    }
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(html.contains("<li>008-explain-000-rtt: 4 claims not measured"), "the HTML folds them too");
}
