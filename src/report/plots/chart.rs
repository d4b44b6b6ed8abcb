//! What every chart shares: the vendored font, the text sizes, the [`Chart`] trait drawn
//! once as SVG and once as PNG, the bar-chart frame, colours, markers and axis labels.
//!
//! Text sizes: plotters' SVG backend writes a text's size divided by 1.24 (its
//! points-to-pixels convention), so [`LABEL`] = 16 is `font-size="12.9"`. The page shows
//! every plot at its natural size (one SVG unit = one CSS pixel), so no chart text is
//! under 12 px at 100% zoom; a paper that scales a 960-pixel PNG to a column keeps the
//! labels legible too. Bar charts are horizontal, so the `mode · model` labels sit on
//! the y axis, one per line, and never collide however many groups a scenario has.

use std::path::Path;
use std::sync::Once;

use plotters::chart::SeriesAnno;
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::analysis::summary::Group;
use crate::report::exporter::write_atomic;

pub const WIDTH: u32 = 960;
pub const HEIGHT: u32 = 540;
pub const FONT: &str = "sans-serif";
/// Tick labels, legends and values on the bars (12.9 px in the SVG).
pub const LABEL: u32 = 16;
/// Axis titles (14.5 px).
pub const AXIS: u32 = 18;
/// Chart titles (19.4 px).
pub const CAPTION: u32 = 24;
/// The smallest text size any chart writes, in SVG pixels (what the tests hold to).
pub const MIN_TEXT_PX: f64 = LABEL as f64 / 1.24;
/// Pixels per bar band of a horizontal bar chart.
const BAND: u32 = 34;

static FONT_BYTES: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

/// Registers the vendored font once per process.
pub fn register_font() {
    REGISTER.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            let _ = plotters::style::register_font(FONT, style, FONT_BYTES);
        }
    });
}

/// A chart that could not be drawn (plotters' error, as text: its types are generic
/// over the backend).
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot draw the chart: {0}")]
pub struct PlotError(pub String);

/// A chart that can draw itself on any backend.
pub trait Chart {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError>;

    /// Width and height in pixels.
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }
}

/// Maps a plotters error to a [`PlotError`].
pub fn err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError(format!("{e:?}"))
}

/// Draws `chart` to `plots/<stem>.svg` and `plots/<stem>.png`.
pub fn render<C: Chart>(chart: &C, dir: &Path, stem: &str) -> anyhow::Result<()> {
    register_font();
    let size = chart.size();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        chart.draw(&area)?;
        area.present().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    write_atomic(&dir.join(format!("{stem}.svg")), svg.as_bytes())?;
    let png = dir.join(format!("{stem}.png"));
    let tmp = dir.join(format!("{stem}.partial.png"));
    {
        let area = BitMapBackend::new(&tmp, size).into_drawing_area();
        chart.draw(&area)?;
        area.present().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    std::fs::rename(&tmp, &png)?;
    Ok(())
}

/// A horizontal bar chart: one band per label along y, values along x.
pub type BarChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, SegmentedCoord<RangedCoordusize>>>;

/// The height of a horizontal bar chart of `n` bars: room for a band each.
pub fn bar_chart_height(n: usize) -> u32 {
    HEIGHT.max(150 + BAND * n as u32)
}

/// The band of the `i`-th of `n` bars: the first on top.
pub fn band(i: usize, n: usize) -> usize {
    n.saturating_sub(1).saturating_sub(i)
}

/// The width a text takes at a plotters size (DejaVu Sans averages about 0.6 em a
/// character; a little more is kept so that nothing is cut).
pub fn text_width(text: &str, size: u32) -> u32 {
    (text.chars().count() as f64 * size as f64 / 1.24 * 0.62).ceil() as u32
}

/// The frame both bar charts share: caption, one band per label (the first on top,
/// the label on the y axis), an x axis from 0 to `xmax` labelled by `xfmt`, and the
/// mesh drawn.
pub fn bar_frame<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: String,
    labels: &[String],
    xmax: f64,
    xdesc: &str,
    xfmt: &dyn Fn(&f64) -> String,
) -> Result<BarChart<'a, DB>, PlotError> {
    let n = labels.len();
    let widest = labels
        .iter()
        .map(|l| text_width(l, LABEL))
        .max()
        .unwrap_or(0);
    // Integer ranges are inclusive in plotters: 0..n-1 gives n segments.
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, CAPTION))
        .margin(16)
        .x_label_area_size(64)
        .y_label_area_size((widest + 20).clamp(60, WIDTH / 2))
        .build_cartesian_2d(0f64..xmax, (0..n.saturating_sub(1)).into_segmented())
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(b) => labels.get(band(*b, n)).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc(xdesc)
        .x_label_formatter(xfmt)
        .label_style((FONT, LABEL))
        .axis_desc_style((FONT, AXIS))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// A bar across band `b` from `from` to `to`, inset from the band's edges.
pub fn bar(
    from: f64,
    to: f64,
    b: usize,
    style: ShapeStyle,
) -> Rectangle<(f64, SegmentValue<usize>)> {
    let mut r = Rectangle::new(
        [
            (from, SegmentValue::Exact(b)),
            (to, SegmentValue::Exact(b + 1)),
        ],
        style,
    );
    r.set_margin(5, 5, 0, 0);
    r
}

/// A chart with two numeric axes.
pub type XyChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws a marker of one of four shapes (circle, square, triangle, diamond: one per
/// model, as in the page's chart) centred on `at`, `s` pixels from centre to edge.
/// (Each shape is its own element type, hence a draw per shape rather than a value.)
pub fn draw_marker<DB: DrawingBackend>(
    chart: &mut XyChart<DB>,
    at: (f64, f64),
    shape: usize,
    s: i32,
    style: ShapeStyle,
) -> Result<(), PlotError> {
    let e = EmptyElement::at(at);
    match shape % 4 {
        0 => chart
            .draw_series([e + Circle::new((0, 0), s, style)])
            .map(|_| ()),
        1 => chart
            .draw_series([e + Rectangle::new([(1 - s, 1 - s), (s - 1, s - 1)], style)])
            .map(|_| ()),
        2 => chart
            .draw_series([e + Polygon::new(vec![(0, -s - 1), (s + 1, s), (-s - 1, s)], style)])
            .map(|_| ()),
        _ => chart
            .draw_series([e + Polygon::new(
                vec![(0, -s - 1), (s + 1, 0), (0, s + 1), (-s - 1, 0)],
                style,
            )])
            .map(|_| ()),
    }
    .map_err(err)
}

/// Gives a legend entry the marker of [`draw_marker`].
pub fn legend_marker<'a, DB: DrawingBackend + 'a>(
    anno: &mut SeriesAnno<'a, DB>,
    shape: usize,
    s: i32,
    style: ShapeStyle,
) {
    let at = |(x, y): (i32, i32)| EmptyElement::at((x + 8, y));
    match shape % 4 {
        0 => anno.legend(move |p| at(p) + Circle::new((0, 0), s, style)),
        1 => anno.legend(move |p| at(p) + Rectangle::new([(1 - s, 1 - s), (s - 1, s - 1)], style)),
        2 => anno.legend(move |p| {
            at(p) + Polygon::new(vec![(0, -s - 1), (s + 1, s), (-s - 1, s)], style)
        }),
        _ => anno.legend(move |p| {
            at(p)
                + Polygon::new(
                    vec![(0, -s - 1), (s + 1, 0), (0, s + 1), (-s - 1, 0)],
                    style,
                )
        }),
    };
}

/// The index of `name` in `list` (0 when absent): a mode's colour, a model's shape,
/// the same in every chart of a run.
pub fn index_of(list: &[String], name: &str) -> usize {
    list.iter().position(|x| x == name).unwrap_or(0)
}

/// A colour per series, stable by index.
pub fn color(i: usize) -> RGBColor {
    const P: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    P[i % P.len()]
}

/// The label of a group on an axis.
pub fn label(g: &Group) -> String {
    format!("{} · {}", g.mode, g.model)
}
