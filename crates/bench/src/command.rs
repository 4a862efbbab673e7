//! `spidey bench`, the command: flags → [`run_bench_protocol`], a progress bar on stderr when
//! it is a terminal, the human report on stdout, the JSON file on request; `spidey bench
//! merge` goes to [`super::merge`].

use super::args::BenchAction;
use super::report::{headline, human_report};
use super::threshold::{self, Check, Threshold};
use super::{run_bench_protocol, BenchArgs, BenchResult, Progress, Stop};
use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use spidey_config::ConfigError;
use std::io::IsTerminal;
use std::time::Duration;

/// `spidey bench`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(BenchAction::Merge { files, json }) = &args.action {
        return super::merge::run(files, json.as_ref());
    }
    let cfg = args.config()?;
    // A threshold that does not parse is refused before the load, in one line (exit 2).
    let thresholds =
        args.fail_on.iter().map(|t| threshold::parse(t)).collect::<Result<Vec<Threshold>, _>>().map_err(ConfigError)?;
    if let Some(ms) = args.start_at {
        wait_until(ms);
    }
    let bar = std::io::stderr().is_terminal().then(|| progress_bar(cfg.stop, cfg.warmup));
    let result = run_bench_protocol(&cfg, args.protocol(), &args.tls_options(), &mut |p| {
        if let Some(bar) = &bar {
            update(bar, cfg.stop, cfg.warmup, p);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match &args.json {
        // `--json -`: the JSON on stdout (for a lab collecting it through ssh), the report on stderr.
        Some(path) if path.as_os_str() == "-" => {
            eprint!("{}", human_report(&result));
            println!("{}", serde_json::to_string(&result)?);
        }
        Some(path) => {
            print!("{}", human_report(&result));
            let json = serde_json::to_string_pretty(&result)?;
            std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
        }
        None => print!("{}", human_report(&result)),
    }
    let checks: Vec<Check> = thresholds.iter().map(|t| t.check(&result)).collect();
    let lines: String = checks.iter().map(|c| format!("  Fail-on:      {c}\n")).collect();
    match &args.json {
        Some(path) if path.as_os_str() == "-" => eprint!("{lines}"),
        _ => print!("{lines}"),
    }
    verdict(&result, &checks)
}

/// Whether the run passed: some request was answered and no `--fail-on` threshold was
/// crossed; otherwise an error (exit status 1) saying why.
fn verdict(r: &BenchResult, checks: &[Check]) -> anyhow::Result<()> {
    if r.responses == 0 {
        anyhow::bail!("no request was answered: {}", headline(r).unwrap_or_else(|| "none was sent".into()));
    }
    let crossed: Vec<String> = checks.iter().filter(|c| c.crossed).map(|c| c.to_string()).collect();
    anyhow::ensure!(crossed.is_empty(), "--fail-on {}", crossed.join("; "));
    Ok(())
}

/// Sleeps until `unix_ms` on the wall clock; a time already past returns at once, with a
/// note on stderr saying how late this run starts.
fn wait_until(unix_ms: u64) {
    let at = std::time::UNIX_EPOCH + Duration::from_millis(unix_ms);
    match at.duration_since(std::time::SystemTime::now()) {
        Ok(wait) => std::thread::sleep(wait),
        Err(past) => eprintln!("spidey bench: --start-at was {:?} ago; starting now", past.duration()),
    }
}

fn progress_bar(stop: Stop, warmup: Duration) -> ProgressBar {
    let (len, template) = match stop {
        Stop::Requests(n) => (n, "{spinner} {msg} [{bar:40}] {pos}/{len} requests"),
        Stop::Duration(d) => ((warmup + d).as_millis() as u64, "{spinner} {msg} [{bar:40}] {elapsed}"),
    };
    let bar = ProgressBar::new(len);
    bar.set_style(ProgressStyle::with_template(template).expect("valid template").progress_chars("=> "));
    bar
}

fn update(bar: &ProgressBar, stop: Stop, warmup: Duration, p: Progress) {
    bar.set_message(if p.elapsed < warmup { "warming up" } else { "measuring" });
    match stop {
        Stop::Requests(_) => bar.set_position(p.done),
        Stop::Duration(_) => bar.set_position(p.elapsed.as_millis() as u64),
    }
}
