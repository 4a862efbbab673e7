//! SVG line charts (plotters): a metric against concurrency or rate, one line per server
//! (and per metric when a chart shows two, like p50 and p99), through the medians of the
//! repeats, with each median's order-statistic interval as an error bar, and the seed's
//! published series for the same server and metric dashed in the same colour on the same axes
//! (named as the seed's in the legend). Drawn in [`crate::report::chart`]'s frame.

use crate::experiment::{PlotSpec, Sweep};
use crate::judge::sample::Sample;
use crate::report::chart::{svg_chart, Axis, Frame, Legend, Ticks, PALETTE};
use crate::report::table::dim_header;
use plotters::prelude::*;

/// One line of a chart.
struct Series {
    name: String,
    color: RGBColor,
    bold: bool,
    /// The seed's published numbers (dashed, no error bars).
    seed: bool,
    /// (x, median, low, high): the bounds are NaN without an interval.
    points: Vec<(f64, f64, f64, f64)>,
}

/// The chart as an SVG document, or None when nothing was measured for it.
pub(crate) fn svg(spec: &PlotSpec, title: &str, samples: &[Sample], sweep: &Sweep) -> Option<String> {
    let series = series(spec, samples, sweep);
    if series.iter().all(|s| s.points.is_empty()) {
        return None;
    }
    draw(spec, title, &series)
}

fn series(spec: &PlotSpec, samples: &[Sample], sweep: &Sweep) -> Vec<Series> {
    let chosen: Vec<&Sample> = samples
        .iter()
        .filter(|s| !s.runs.is_empty() && spec.workload.as_ref().map_or(true, |w| *w == s.workload))
        .collect();
    let mut servers: Vec<&str> = Vec::new();
    for s in &chosen {
        if !servers.contains(&s.server.as_str()) {
            servers.push(&s.server);
        }
    }
    let mut out = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        for (j, metric) in spec.y.iter().enumerate() {
            let mut points: Vec<(f64, f64, f64, f64)> = chosen
                .iter()
                .filter(|s| s.server == *server)
                .map(|s| {
                    let i = s.interval(*metric);
                    (x_of(spec, s.coord(spec.x)), i.median, i.lo, i.hi)
                })
                .filter(|p| p.0.is_finite() && p.1.is_finite())
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let name = if spec.y.len() > 1 { format!("{server} {}", metric.name()) } else { server.to_string() };
            let color = PALETTE[i % PALETTE.len()];
            let seed = seed_points(spec, sweep, server, *metric);
            out.push(Series { name: name.clone(), color, bold: j == 0, seed: false, points });
            if !seed.is_empty() {
                out.push(Series { name, color, bold: j == 0, seed: true, points: seed });
            }
        }
    }
    out
}

/// The seed's rows for `server` (and the plot's workload) in the table column of `metric`.
fn seed_points(
    spec: &PlotSpec,
    sweep: &Sweep,
    server: &str,
    metric: crate::experiment::metric::Metric,
) -> Vec<(f64, f64, f64, f64)> {
    let Some(col) = sweep.table.columns.iter().position(|c| c.metric == metric) else { return Vec::new() };
    let mut points: Vec<(f64, f64, f64, f64)> = sweep
        .seed_rows
        .iter()
        .filter(|r| r.server.as_deref().map_or(true, |s| s == server))
        .filter(|r| match (&spec.workload, &r.workload) {
            (Some(w), Some(rw)) => w == rw,
            _ => true,
        })
        .map(|r| (x_of(spec, crate::experiment::claim::seed_coord(r, spec.x)), r.values[col], f64::NAN, f64::NAN))
        .filter(|p| p.0.is_finite() && p.1.is_finite())
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// Log axes are drawn as linear axes over log10(x), labelled with x.
fn x_of(spec: &PlotSpec, x: f64) -> f64 {
    if spec.log_x {
        x.log10()
    } else {
        x
    }
}

/// Ticks at the measured values when they are a few whole numbers (1, 2 and 4 connections
/// read as 1, 2, 4, not 1.0, 1.5, …, 4.0); None otherwise.
fn counted_ticks(xs: impl Iterator<Item = f64>) -> Option<Ticks> {
    let mut xs: Vec<f64> = xs.collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let whole = xs.iter().all(|x| x.fract() == 0.0);
    (whole && (2..=12).contains(&xs.len())).then(|| Ticks::At(xs.iter().map(|x| (*x, format!("{x}"))).collect()))
}

/// How a series reads in the legend: the seed's is named as the seed's.
fn legend_name(s: &Series) -> String {
    if s.seed {
        format!("{}, the seed's numbers", s.name)
    } else {
        format!("{}, here", s.name)
    }
}

/// The series of a seed-study chart: medians with error bars, the seed's dashed.
fn draw(spec: &PlotSpec, title: &str, series: &[Series]) -> Option<String> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = all().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    let y1 = all().fold(0.0f64, |hi, p| hi.max(p.1).max(if p.3.is_finite() { p.3 } else { 0.0 })) * 1.05;
    let (x0, x1) = if x1 > x0 { (x0, x1) } else { (x0 - 1.0, x0 + 1.0) };
    // A little room either side, so the end points' markers and error bars show whole.
    let pad = (x1 - x0) * 0.03;
    let y1 = if y1 > 0.0 { y1 } else { 1.0 };
    let y_name = spec.y.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ");
    let x = if spec.log_x {
        Axis { range: x0 - pad..x1 + pad, ticks: Ticks::Log10(all().map(|p| p.0).collect()) }
    } else {
        Axis { range: x0 - pad..x1 + pad, ticks: counted_ticks(all().map(|p| p.0)).unwrap_or(Ticks::Linear) }
    };
    let frame = Frame { title, x_desc: dim_header(spec.x), y_desc: &y_name, x, y: Axis::linear(0.0..y1) };
    let shown: Vec<&Series> = series.iter().filter(|s| !s.points.is_empty()).collect();
    let legend: Vec<Legend> = shown
        .iter()
        .map(|s| Legend {
            name: legend_name(s),
            color: s.color.to_rgba(),
            width: if s.bold && !s.seed { 2 } else { 1 },
            dashed: s.seed,
        })
        .collect();
    svg_chart(&frame, &legend, |chart| {
        for s in shown {
            let style = ShapeStyle { color: s.color.to_rgba(), filled: true, stroke_width: if s.bold { 2 } else { 1 } };
            let line = s.points.iter().map(|p| (p.0, p.1));
            if s.seed {
                let dashed = ShapeStyle { stroke_width: 1, ..style };
                chart.draw_series(DashedLineSeries::new(line, 6, 4, dashed))?;
                continue;
            }
            chart.draw_series(LineSeries::new(line, style).point_size(if s.bold { 3 } else { 2 }))?;
            let bars = s.points.iter().filter(|p| p.2.is_finite() && p.3.is_finite());
            let thin = ShapeStyle { stroke_width: 1, ..style };
            chart.draw_series(bars.map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, thin, 8)))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::counted_ticks;
    use crate::report::chart::Ticks;

    #[test]
    fn a_few_whole_values_are_ticked_where_they_were_measured() {
        let labels = |xs: &[f64]| match counted_ticks(xs.iter().copied()) {
            Some(Ticks::At(t)) => Some(t.into_iter().map(|(_, l)| l).collect::<Vec<_>>()),
            _ => None,
        };
        assert_eq!(labels(&[4.0, 1.0, 2.0, 2.0]), Some(vec!["1".to_string(), "2".into(), "4".into()]));
        assert_eq!(labels(&[0.5, 1.0]), None, "not whole");
        assert_eq!(labels(&(1..=20).map(f64::from).collect::<Vec<_>>()), None, "too many");
        assert_eq!(labels(&[3.0]), None, "one value: the axis ticks itself");
    }
}
