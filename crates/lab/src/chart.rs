//! The one frame every lab chart is drawn in (plotters, SVG): the caption, two axes whose
//! ticks each read in one format (the same decimals on every label; a log axis ticked at
//! 1, 2, 5 × 10ⁿ), the plot filling the canvas, and the legend in a column of its own to
//! the right, off the data.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::ops::Range;

/// The colours of a chart's series, in order (matplotlib's "tab10", distinct on white).
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The canvas of every chart, in pixels.
pub(crate) const SIZE: (u32, u32) = (960, 460);

/// Where an axis puts its ticks.
#[derive(Debug, Clone)]
pub(crate) enum Ticks {
    /// Round numbers.
    Linear,
    /// The axis runs over log10 of the values; ticked at 1, 2, 5 × 10ⁿ, labelled with the values.
    Log10,
    /// At these positions, with these labels.
    At(Vec<(f64, String)>),
}

/// An axis: its range (in log10 units for [`Ticks::Log10`]) and its ticks.
#[derive(Debug, Clone)]
pub(crate) struct Axis {
    pub range: Range<f64>,
    pub ticks: Ticks,
}

impl Axis {
    pub fn linear(range: Range<f64>) -> Axis {
        Axis { range, ticks: Ticks::Linear }
    }

    /// An axis over log10 of `lo..hi` (values, both above 0).
    pub fn log10(lo: f64, hi: f64) -> Axis {
        Axis { range: lo.log10()..hi.log10(), ticks: Ticks::Log10 }
    }

    /// The tick positions, at most `max` of them (but two).
    fn positions(&self, max: usize) -> Vec<f64> {
        let (lo, hi) = (self.range.start, self.range.end);
        match &self.ticks {
            Ticks::Linear => RangedCoordf64::from(self.range.clone()).key_points(max),
            Ticks::At(ticks) => ticks.iter().map(|t| t.0).collect(),
            Ticks::Log10 => {
                let inside = |mantissas: &[f64]| -> Vec<f64> {
                    let decades = (lo.floor() as i32)..=(hi.ceil() as i32);
                    decades
                        .flat_map(|d| mantissas.iter().map(move |m| f64::from(d) + m.log10()))
                        .filter(|v| *v >= lo - 1e-9 && *v <= hi + 1e-9)
                        .collect()
                };
                let sets: [&[f64]; 4] =
                    [&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], &[1.0, 2.0, 5.0], &[1.0, 3.0], &[1.0]];
                sets.iter().map(|m| inside(m)).find(|t| t.len() <= max.max(2)).unwrap_or_default()
            }
        }
    }

    /// The value a position stands for.
    fn value(&self, v: f64) -> f64 {
        match self.ticks {
            Ticks::Log10 => 10f64.powf(v),
            _ => v,
        }
    }

    /// The tick labels' formatter: every label with the same number of decimals, the fewest
    /// that write each tick's value exactly.
    pub fn labeller(&self) -> impl Fn(&f64) -> String + '_ {
        let values: Vec<f64> = self.positions(12).into_iter().map(|p| self.value(p)).collect();
        let decimals = decimals(&values);
        move |v: &f64| match &self.ticks {
            Ticks::At(ticks) => ticks.iter().find(|t| (t.0 - v).abs() < 1e-9).map(|t| t.1.clone()).unwrap_or_default(),
            _ => format!("{:.*}", decimals, self.value(*v)),
        }
    }
}

/// The fewest decimals (up to 6) that write every value within a thousandth of its size.
pub(crate) fn decimals(values: &[f64]) -> usize {
    (0..=6)
        .find(|&d| {
            let scale = 10f64.powi(d as i32);
            values.iter().all(|v| ((v * scale).round() / scale - v).abs() <= v.abs() * 1e-3 + 1e-12)
        })
        .unwrap_or(6)
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.range.clone()).map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        self.positions(hint.max_num_points())
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// A chart's frame: its caption and axes.
pub(crate) struct Frame<'f> {
    pub title: &'f str,
    pub x_desc: &'f str,
    pub y_desc: &'f str,
    pub x: Axis,
    pub y: Axis,
}

/// One entry of the legend: a line in the series' style and its name.
#[derive(Debug, Clone)]
pub(crate) struct Legend {
    pub name: String,
    pub color: RGBAColor,
    pub width: u32,
    pub dashed: bool,
}

/// The drawing context a chart's lines are drawn on.
pub(crate) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>;

pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// A chart as an SVG document: `frame`, then the lines `lines` draws, then `legend` to the
/// right of the plot; None if plotters failed.
pub(crate) fn svg_chart(
    frame: &Frame<'_>,
    legend: &[Legend],
    lines: impl FnOnce(&mut Chart<'_, '_>) -> DrawResult,
) -> Option<String> {
    let mut out = String::new();
    draw_chart(frame, legend, lines, &mut out).ok()?;
    Some(out)
}

/// The legend column's width: room for its longest name at 13 px.
fn legend_width(legend: &[Legend]) -> u32 {
    let chars = legend.iter().map(|l| l.name.chars().count()).max().unwrap_or(0) as u32;
    if chars == 0 {
        0
    } else {
        (chars * 7 + 60).min(320)
    }
}

fn draw_chart(
    frame: &Frame<'_>,
    legend: &[Legend],
    lines: impl FnOnce(&mut Chart<'_, '_>) -> DrawResult,
    out: &mut String,
) -> DrawResult {
    let root = SVGBackend::with_string(out, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot, key) = root.split_horizontally(SIZE.0 - legend_width(legend));
    let x_label = frame.x.labeller();
    let y_label = frame.y.labeller();
    let y_width = frame.y.positions(12).iter().map(|v| y_label(v).chars().count()).max().unwrap_or(1) as u32;
    let mut chart = ChartBuilder::on(&plot)
        .caption(frame.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(y_width * 8 + 36)
        .build_cartesian_2d(frame.x.clone(), frame.y.clone())?;
    chart
        .configure_mesh()
        .x_desc(frame.x_desc)
        .y_desc(frame.y_desc)
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    lines(&mut chart)?;
    for (i, entry) in legend.iter().enumerate() {
        let y = 48 + 20 * i as i32;
        let style = ShapeStyle { color: entry.color, filled: true, stroke_width: entry.width };
        if entry.dashed {
            for k in 0..3 {
                key.draw(&PathElement::new(vec![(8 + 11 * k, y), (14 + 11 * k, y)], style))?;
            }
        } else {
            key.draw(&PathElement::new(vec![(8, y), (36, y)], style))?;
        }
        key.draw(&Text::new(entry.name.clone(), (44, y - 7), ("sans-serif", 13)))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_table() {
        let cases: [(&[f64], usize); 5] = [
            (&[0.0, 500.0, 1000.0], 0),
            (&[0.0, 0.5, 1.0, 1.5], 1),
            (&[0.0, 0.25, 0.5], 2),
            (&[0.001, 0.002, 0.005], 3),
            (&[1.0, 2.0, 5.0, 10.0], 0),
        ];
        for (values, want) in cases {
            assert_eq!(decimals(values), want, "{values:?}");
        }
    }

    /// Each axis reads in one format: every label has the same decimals.
    #[test]
    fn one_tick_format_per_axis() {
        let axes =
            [Axis::linear(0.0..0.0126), Axis::linear(0.0..5200.0), Axis::log10(1.0, 1000.0), Axis::log10(0.05, 80.0)];
        for axis in axes {
            let label = axis.labeller();
            let labels: Vec<String> = axis.positions(10).iter().map(&label).collect();
            assert!(labels.len() >= 2, "{axis:?}: {labels:?}");
            let places = |s: &String| s.split_once('.').map_or(0, |(_, d)| d.len());
            assert!(labels.iter().all(|l| places(l) == places(&labels[0])), "{axis:?}: {labels:?}");
        }
        let log = Axis::log10(1.0, 1000.0);
        let label = log.labeller();
        let labels: Vec<String> = log.positions(10).iter().map(&label).collect();
        assert_eq!(labels, ["1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"]);
    }
}
