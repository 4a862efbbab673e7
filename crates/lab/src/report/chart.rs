//! The one frame every lab chart is drawn in (plotters, SVG): the caption, two axes whose
//! ticks each read in one format (the same decimals on every label; a log axis ticked at
//! every power of ten in range, and at 2 and 5 × 10ⁿ (or every digit) where it has room or
//! where most of the data would otherwise fall between two ticks), the plot filling the
//! canvas, and the legend in a column of its own to the right, off the data.

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
    /// The axis runs over log10 of the values, labelled with the values; ticked as
    /// [`log_ticks`] says, around the data it holds (positions in log10 units: where the
    /// reader must be able to read a value).
    Log10(Vec<f64>),
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

    /// An axis over log10 of `lo..hi` (values, both above 0), holding `data` (values).
    pub fn log10(lo: f64, hi: f64, data: impl IntoIterator<Item = f64>) -> Axis {
        let data = data.into_iter().filter(|v| *v > 0.0).map(f64::log10).collect();
        Axis { range: lo.log10()..hi.log10(), ticks: Ticks::Log10(data) }
    }

    /// The tick positions, at most `max` of them (but two).
    fn positions(&self, max: usize) -> Vec<f64> {
        let (lo, hi) = (self.range.start, self.range.end);
        match &self.ticks {
            Ticks::Linear => RangedCoordf64::from(self.range.clone()).key_points(max),
            Ticks::At(ticks) => ticks.iter().map(|t| t.0).collect(),
            Ticks::Log10(data) => log_ticks(lo..hi, data, max),
        }
    }

    /// The value a position stands for.
    fn value(&self, v: f64) -> f64 {
        match self.ticks {
            Ticks::Log10(_) => 10f64.powf(v),
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

/// The mantissas a log axis is ticked at, sparsest last: every set holds 1, so every power
/// of ten in range is always ticked.
const MANTISSAS: [&[f64]; 3] = [&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], &[1.0, 2.0, 5.0], &[1.0]];

/// The ticks of a log axis over `range` (log10 units) holding `data` (log10 units): the
/// densest of [`MANTISSAS`] with at most `max` ticks (but two), and never fewer than the
/// powers of ten; then, while more than half the data lie between two neighbouring ticks
/// (or a tick and the axis' end), that stretch gets the next denser set's ticks (2 and 5,
/// then every digit), so the reader has a tick where the data are.
pub(crate) fn log_ticks(range: Range<f64>, data: &[f64], max: usize) -> Vec<f64> {
    let (lo, hi) = (range.start, range.end);
    let within = |mantissas: &[f64], from: f64, to: f64| -> Vec<f64> {
        let decades = (from.floor() as i32)..=(to.ceil() as i32);
        decades
            .flat_map(|d| mantissas.iter().map(move |m| f64::from(d) + m.log10()))
            .filter(|v| *v >= from - 1e-9 && *v <= to + 1e-9)
            .collect()
    };
    let fits = MANTISSAS.iter().position(|m| within(m, lo, hi).len() <= max.max(2));
    let mut set = fits.unwrap_or(MANTISSAS.len() - 1);
    let mut ticks = within(MANTISSAS[set], lo, hi);
    let data: Vec<f64> = data.iter().copied().filter(|v| v.is_finite() && *v >= lo && *v <= hi).collect();
    while set > 0 {
        let mut edges = vec![lo];
        edges.extend(ticks.iter().copied());
        edges.push(hi);
        let crowded = edges.windows(2).find(|w| {
            let between = data.iter().filter(|v| **v > w[0] + 1e-9 && **v < w[1] - 1e-9).count();
            2 * between > data.len()
        });
        let Some(gap) = crowded else { break };
        set -= 1;
        ticks.extend(within(MANTISSAS[set], gap[0], gap[1]));
        ticks.sort_by(f64::total_cmp);
        ticks.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    }
    ticks
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
        let axes = [
            Axis::linear(0.0..0.0126),
            Axis::linear(0.0..5200.0),
            Axis::log10(1.0, 1000.0, []),
            Axis::log10(0.05, 80.0, []),
        ];
        for axis in axes {
            let label = axis.labeller();
            let labels: Vec<String> = axis.positions(10).iter().map(&label).collect();
            assert!(labels.len() >= 2, "{axis:?}: {labels:?}");
            let places = |s: &String| s.split_once('.').map_or(0, |(_, d)| d.len());
            assert!(labels.iter().all(|l| places(l) == places(&labels[0])), "{axis:?}: {labels:?}");
        }
        let log = Axis::log10(1.0, 1000.0, []);
        let label = log.labeller();
        let labels: Vec<String> = log.positions(10).iter().map(&label).collect();
        assert_eq!(labels, ["1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"]);
    }

    /// The ticks of a log axis as values.
    fn log_labels(lo: f64, hi: f64, data: &[f64], max: usize) -> Vec<String> {
        let axis = Axis::log10(lo, hi, data.iter().copied());
        let label = axis.labeller();
        axis.positions(max).iter().map(&label).collect()
    }

    /// Regression (issue 45): a latency distribution over seven decades was ticked at the
    /// powers of ten alone, and the half of its requests answered in 0.2-0.4 ms fell between
    /// the ticks at 0.1 and 1. Every power of ten is ticked; where most data lie between two
    /// ticks, 2 and 5 (then every digit) are ticked there; an axis spanning less than a
    /// decade is ticked inside it.
    #[test]
    fn a_log_axis_has_a_tick_where_most_data_lie() {
        let spread: Vec<f64> = (0..40).map(|i| 0.2 + 0.005 * f64::from(i)).chain([0.002, 30.0, 900.0]).collect();
        assert_eq!(
            log_labels(0.001, 10_000.0, &spread, 10),
            [
                "0.001",
                "0.010",
                "0.100",
                "0.200",
                "0.300",
                "0.400",
                "0.500",
                "1.000",
                "10.000",
                "100.000",
                "1000.000",
                "10000.000"
            ],
            "the powers of ten, and the stretch 0.1-1 where most requests are read at every digit",
        );
        // Without data there: the powers of ten only, however little room there is.
        let powers = log_labels(0.001, 10_000.0, &[0.002, 3000.0], 3);
        assert_eq!(powers, ["0.001", "0.010", "0.100", "1.000", "10.000", "100.000", "1000.000", "10000.000"]);
        // Less than a decade, no power of ten inside: ticks inside, at the data.
        assert_eq!(log_labels(0.25, 0.9, &[0.3, 0.35, 0.4], 10), ["0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"]);
        assert_eq!(log_labels(0.25, 0.9, &[0.3, 0.35, 0.4], 2), ["0.3", "0.4", "0.5"]);
        // Half the data between 100 and 1000 connections: 200 and 500 ticked.
        let conns = [1.0, 10.0, 200.0, 300.0, 400.0, 600.0];
        assert_eq!(log_labels(1.0, 1000.0, &conns, 3), ["1", "10", "100", "200", "500", "1000"]);
        // Room for 1, 2, 5: as before, whatever the data.
        assert_eq!(log_labels(1.0, 1000.0, &conns, 10), ["1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"]);
    }
}
