//! The robustness experiment's report: per attack a table (availability and p99 of the
//! legitimate client at each crowd size, one row per mode) with a verdict per mode, and an
//! SVG chart of availability against N; then the mixed load's table and its goal check.

use crate::experiment::robustness_spec::AttackName;
use crate::report::chart::{svg_chart, Axis, Frame, Legend, Ticks, PALETTE};
use crate::report::render;
use crate::report::Section;
use crate::run::out_dir::OutDir;
use crate::run::robustness::{attack_label, Point, AVAILABLE, P99_LIMIT};
use plotters::prelude::*;
use std::fmt::Write;

/// What a mode did under one attack.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Served at every crowd size measured, up to the largest.
    KeepsServing { up_to: usize },
    /// First failed at this crowd size.
    BreaksAt(usize),
    /// Failed even without a crowd (the baseline): the point says nothing about attacks.
    FailsAlone,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::KeepsServing { up_to } => write!(f, "keeps serving (up to N = {up_to})"),
            Verdict::BreaksAt(n) => write!(f, "**breaks at N = {n}**"),
            Verdict::FailsAlone => write!(f, "fails without a crowd"),
        }
    }
}

/// The verdict for one server under one attack; the baseline (N = 0) is shared by all attacks.
pub(crate) fn verdict(points: &[Point], server: &str, attack: AttackName) -> Verdict {
    let baseline = points.iter().find(|p| p.server == server && p.attack.is_some() && p.crowd == 0);
    if baseline.is_some_and(|b| !b.served()) {
        return Verdict::FailsAlone;
    }
    let mut mine: Vec<&Point> =
        points.iter().filter(|p| p.server == server && p.attack == Some(attack) && p.crowd > 0).collect();
    mine.sort_by_key(|p| p.crowd);
    match mine.iter().find(|p| !p.served()) {
        Some(p) => Verdict::BreaksAt(p.crowd),
        None => Verdict::KeepsServing { up_to: mine.last().map_or(0, |p| p.crowd) },
    }
}

/// Writes `robustness.md` and one SVG per attack into `out`; returns them as the report's
/// section.
pub(crate) fn write(out: &OutDir, attacks: &[AttackName], points: &[Point]) -> anyhow::Result<Section> {
    let mut md = String::new();
    let mut svgs = Vec::new();
    let servers = servers(points);
    let _ = writeln!(md, "## What breaks each architecture (006-robustness)\n");
    let _ = writeln!(
        md,
        "A legitimate client opens a new connection per request at a fixed rate while a crowd of N \
         connections attacks; a cell is the share of its requests answered 2xx and their p99. A mode \
         *keeps serving* if every point has at least {:.0}% answered and p99 under {:.0} s.\n",
        AVAILABLE * 100.0,
        P99_LIMIT / 1e6
    );
    for &attack in attacks {
        let mut sizes: Vec<usize> = points.iter().filter(|p| p.attack == Some(attack)).map(|p| p.crowd).collect();
        sizes.insert(0, 0);
        sizes.sort_unstable();
        sizes.dedup();
        let _ = writeln!(md, "### {}\n", attack.attack().name());
        let head: Vec<String> = sizes.iter().map(|n| format!("N = {n}")).collect();
        let _ = writeln!(md, "| mode | {} | verdict |", head.join(" | "));
        let _ = writeln!(md, "| --- |{} --- |", " ---: |".repeat(sizes.len()));
        for server in &servers {
            let cells: Vec<String> = sizes.iter().map(|&n| cell(find(points, server, attack, n))).collect();
            let _ =
                writeln!(md, "| {} | {} | {} |", mode_cell(server), cells.join(" | "), verdict(points, server, attack));
        }
        let _ = writeln!(md, "\nFailed legitimate requests by class, where any failed: {}", failures(points, attack));
        let name = format!("robustness-{}.svg", slug(attack));
        if let Some(svg) = chart(attack, &servers, points) {
            out.write(&name, &svg)?;
            let _ = writeln!(md, "\n![{}](./{name})\n", attack.attack().name());
            svgs.push((name, svg));
        }
        let _ = writeln!(md);
    }
    mixed(&mut md, points);
    out.write("robustness.md", &md)?;
    Ok(Section { markdown: md, svgs })
}

fn mixed(md: &mut String, points: &[Point]) {
    let rows: Vec<&Point> = points.iter().filter(|p| p.attack.is_none()).collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(md, "### {}\n", attack_label(None));
    let _ = writeln!(
        md,
        "Keep-alive, open loop: a tenth of the requests burn CPU in a handler (`?burn=`), the rest \
         fetch a small static file; the static requests' latency is the question.\n"
    );
    let _ = writeln!(md, "| mode | static answered | static p50 (ms) | static p99 (ms) | burn p99 (ms) | req/s |");
    let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | ---: |");
    for p in &rows {
        let _ = writeln!(
            md,
            "| {} | {:.1}% | {:.2} | {:.2} | {:.2} | {:.0} |",
            mode_cell(&p.server),
            p.availability() * 100.0,
            p.p50_us / 1e3,
            p.p99_us / 1e3,
            p.burn_p99_us.unwrap_or(f64::NAN) / 1e3,
            p.rps
        );
    }
    let p99 = |name: &str| rows.iter().find(|p| p.server == name).map(|p| p.p99_us);
    if let (Some(h), Some(e)) = (p99("hybrid"), p99("event")) {
        let ok = h <= e / 5.0;
        let _ = writeln!(
            md,
            "\nGoal, hybrid's static p99 at most a fifth of event's: {} ({:.2} ms against {:.2} ms, ratio {:.2}).\n",
            if ok { "met" } else { "**not met**" },
            h / 1e3,
            e / 1e3,
            h / e
        );
    }
}

/// `server N=n: 12 timeout, 3 connect; …` for every point of `attack` with failures.
fn failures(points: &[Point], attack: AttackName) -> String {
    let mut parts = Vec::new();
    for p in points.iter().filter(|p| p.attack == Some(attack) || (p.attack.is_some() && p.crowd == 0)) {
        let e = serde_json::to_value(&p.errors).unwrap_or_default();
        let classes: Vec<String> = e
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| *k != "late" && v.as_u64().unwrap_or(0) > 0)
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        if !classes.is_empty() {
            parts.push(format!("{} N={}: {}", render::literal(&p.server), p.crowd, classes.join(", ")));
        }
    }
    if parts.is_empty() {
        "none.".into()
    } else {
        format!("{}.", parts.join("; "))
    }
}

/// A mode's name from `robustness.jsonl` as a table's first cell: data, its `|` escaped.
fn mode_cell(server: &str) -> String {
    render::literal(server).replace('|', "\\|")
}

fn find<'a>(points: &'a [Point], server: &str, attack: AttackName, n: usize) -> Option<&'a Point> {
    // The baseline (N = 0) was measured once, under the first attack.
    points
        .iter()
        .find(|p| p.server == server && p.crowd == n && p.attack.is_some() && (n == 0 || p.attack == Some(attack)))
}

fn cell(p: Option<&Point>) -> String {
    match p {
        None => "–".into(),
        Some(p) => {
            let p99 = if p.ok == 0 { "–".to_string() } else { format!("{:.1} ms", p.p99_us / 1e3) };
            let text = format!("{:.0}% · {p99}", p.availability() * 100.0);
            if p.served() {
                text
            } else {
                format!("**{text}**")
            }
        }
    }
}

fn servers(points: &[Point]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in points {
        if !out.contains(&p.server) {
            out.push(p.server.clone());
        }
    }
    out
}

fn slug(a: AttackName) -> &'static str {
    match a {
        AttackName::Slowloris => "slowloris",
        AttackName::Idle => "idle",
        AttackName::SlowReader => "slow-reader",
    }
}

/// Availability (%) against log2(N + 1), one line per mode.
fn chart(attack: AttackName, servers: &[String], points: &[Point]) -> Option<String> {
    let x = |n: usize| ((n + 1) as f64).log2();
    let xmax = points.iter().filter(|p| p.attack == Some(attack)).map(|p| x(p.crowd)).fold(1.0, f64::max);
    let title = format!("Legitimate requests answered under {}", attack.attack().name());
    let mut sizes: Vec<usize> = points.iter().filter(|p| p.attack == Some(attack)).map(|p| p.crowd).collect();
    sizes.push(0);
    sizes.sort_unstable();
    sizes.dedup();
    let ticks = sizes.iter().map(|&n| (x(n), n.to_string())).collect();

    let frame = Frame {
        title: &title,
        x_desc: "crowd size N",
        y_desc: "answered (%)",
        x: Axis { range: -0.25..xmax + 0.25, ticks: Ticks::At(ticks) },
        y: Axis::linear(0.0..105.0),
    };
    let color = |i: usize| PALETTE[i % PALETTE.len()].to_rgba();
    let lines: Vec<Vec<(f64, f64)>> = servers
        .iter()
        .map(|server| {
            let mut line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.server == *server && p.attack.is_some() && (p.crowd == 0 || p.attack == Some(attack)))
                .map(|p| (x(p.crowd), p.availability() * 100.0))
                .collect();
            line.sort_by(|a, b| a.0.total_cmp(&b.0));
            line
        })
        .collect();
    // Lines that coincide hide each other: the legend says where each one ends.
    let legend: Vec<Legend> = servers
        .iter()
        .zip(&lines)
        .enumerate()
        .map(|(i, (s, line))| {
            let end = line.last().and_then(|(at, y)| sizes.iter().find(|&&n| x(n) == *at).map(|n| (n, y)));
            let name = match end {
                Some((n, y)) => format!("{s}: {y:.0}% at N = {n}"),
                None => s.clone(),
            };
            Legend { name, color: color(i), width: 2, dashed: false }
        })
        .collect();
    svg_chart(&frame, &legend, |chart| {
        for (i, line) in lines.into_iter().enumerate() {
            let style = ShapeStyle { color: color(i), filled: true, stroke_width: 2 };
            chart.draw_series(LineSeries::new(line, style).point_size(3))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(server: &str, attack: Option<AttackName>, crowd: usize, ok: u64, p99_ms: f64) -> Point {
        Point {
            server: server.into(),
            attack,
            crowd,
            crowd_open: crowd,
            crowd_cut: 0,
            requests: 100,
            ok,
            p50_us: 100.0,
            p99_us: p99_ms * 1e3,
            burn_p99_us: None,
            rps: 100.0,
            errors: Default::default(),
        }
    }

    #[test]
    fn verdicts_table() {
        use AttackName::*;
        let s = Some(Slowloris);
        let points = vec![
            point("event", s, 0, 100, 1.0),
            point("event", s, 16, 100, 1.0),
            point("event", s, 256, 100, 2.0),
            point("single", s, 0, 100, 1.0),
            point("single", s, 16, 0, 2000.0),
            point("single", s, 256, 0, 2000.0),
            point("pool", s, 0, 100, 1.0),
            point("pool", s, 16, 100, 5.0),
            point("pool", s, 256, 100, 1500.0),
            point("broken", s, 0, 50, 1.0),
        ];
        let cases = [
            ("event", Verdict::KeepsServing { up_to: 256 }),
            ("single", Verdict::BreaksAt(16)),
            ("pool", Verdict::BreaksAt(256)),
            ("broken", Verdict::FailsAlone),
        ];
        for (server, want) in cases {
            assert_eq!(verdict(&points, server, Slowloris), want, "{server}");
        }
        // The baseline is shared: another attack with no points of its own keeps serving "up to 0".
        assert_eq!(verdict(&points, "event", Idle), Verdict::KeepsServing { up_to: 0 });
    }
}
