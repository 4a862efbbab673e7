//! SVG line charts (plotters): a metric against concurrency or rate, one line per server
//! (and per metric when a chart shows two, like p50 and p99), through the medians of the
//! repeats, with each median's order-statistic interval as an error bar, and the seed's
//! published series for the same server and metric dashed in the same colour on the same axes.
//! [`svg_chart`] is the one frame (size, caption, axes, legend) every lab chart is drawn in,
//! the robustness report's included.

use crate::lab::experiment::{PlotSpec, Sweep};
use crate::lab::table::{dim_header, Sample};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::ops::Range;

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

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
pub(crate) fn svg(spec: &PlotSpec, samples: &[Sample], sweep: &Sweep) -> Option<String> {
    let series = series(spec, samples, sweep);
    if series.iter().all(|s| s.points.is_empty()) {
        return None;
    }
    draw(spec, &series)
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
                out.push(Series { name: format!("{name} (seed)"), color, bold: j == 0, seed: true, points: seed });
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
    metric: crate::lab::metric::Metric,
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
        .map(|r| (x_of(spec, crate::lab::claim::seed_coord(r, spec.x)), r.values[col], f64::NAN, f64::NAN))
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

/// A chart's frame: its caption, axes and how their labels read.
pub(crate) struct Frame<'f> {
    pub title: &'f str,
    pub x_desc: &'f str,
    pub y_desc: &'f str,
    pub x: Range<f64>,
    pub y: Range<f64>,
    /// Room for the y labels, in pixels.
    pub y_label_area: u32,
    pub x_label: &'f dyn Fn(&f64) -> String,
    /// plotters' own y labels when None.
    pub y_label: Option<&'f dyn Fn(&f64) -> String>,
}

/// The drawing context a chart's lines are drawn on.
pub(crate) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Every chart of the lab's reports as an SVG document (760×420): `frame`, then the lines
/// `lines` draws, then their legend; None if plotters failed.
pub(crate) fn svg_chart(frame: &Frame<'_>, lines: impl FnOnce(&mut Chart<'_, '_>) -> DrawResult) -> Option<String> {
    let mut out = String::new();
    draw_chart(frame, lines, &mut out).ok()?;
    Some(out)
}

fn draw_chart(frame: &Frame<'_>, lines: impl FnOnce(&mut Chart<'_, '_>) -> DrawResult, out: &mut String) -> DrawResult {
    let root = SVGBackend::with_string(out, (760, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(frame.title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(frame.y_label_area)
        .build_cartesian_2d(frame.x.clone(), frame.y.clone())?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(frame.x_desc).y_desc(frame.y_desc).x_label_formatter(frame.x_label);
    if let Some(y_label) = frame.y_label {
        mesh.y_label_formatter(y_label);
    }
    mesh.draw()?;
    lines(&mut chart)?;
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

/// The series of a seed-study chart: medians with error bars, the seed's dashed.
fn draw(spec: &PlotSpec, series: &[Series]) -> Option<String> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = all().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    let y1 = all().fold(0.0f64, |hi, p| hi.max(p.1).max(if p.3.is_finite() { p.3 } else { 0.0 })) * 1.1;
    let (x0, x1) = if x1 > x0 { (x0, x1) } else { (x0 - 1.0, x0 + 1.0) };
    let y1 = if y1 > 0.0 { y1 } else { 1.0 };
    let log = spec.log_x;
    let x_fmt = move |v: &f64| if log { format!("{}", 10f64.powf(*v).round()) } else { format!("{v}") };
    let y_name = spec.y.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ");
    let frame = Frame {
        title: &spec.title,
        x_desc: dim_header(spec.x),
        y_desc: &y_name,
        x: x0..x1,
        y: 0.0..y1,
        y_label_area: 70,
        x_label: &x_fmt,
        y_label: Some(&|v| crate::lab::metric::format(*v)),
    };
    svg_chart(&frame, |chart| {
        for s in series.iter().filter(|s| !s.points.is_empty()) {
            let style = ShapeStyle { color: s.color.to_rgba(), filled: true, stroke_width: if s.bold { 2 } else { 1 } };
            let line = s.points.iter().map(|p| (p.0, p.1));
            if s.seed {
                let dashed = ShapeStyle { stroke_width: 1, ..style };
                chart
                    .draw_series(DashedLineSeries::new(line, 6, 4, dashed))?
                    .label(s.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 6, y)], dashed));
                continue;
            }
            chart
                .draw_series(LineSeries::new(line, style).point_size(if s.bold { 3 } else { 2 }))?
                .label(s.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
            let bars = s.points.iter().filter(|p| p.2.is_finite() && p.3.is_finite());
            let thin = ShapeStyle { stroke_width: 1, ..style };
            chart.draw_series(bars.map(|p| ErrorBar::new_vertical(p.0, p.2, p.1, p.3, thin, 8)))?;
        }
        Ok(())
    })
}
