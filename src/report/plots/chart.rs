//! What every chart shares: the vendored font, the [`Chart`] trait drawn once as SVG and
//! once as PNG, the bar-chart frame, colours and axis labels.

use std::path::Path;
use std::sync::Once;

use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::analysis::summary::Group;
use crate::report::exporter::write_atomic;

pub const WIDTH: u32 = 960;
pub const HEIGHT: u32 = 540;
pub const FONT: &str = "sans-serif";

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
}

/// Maps a plotters error to a [`PlotError`].
pub fn err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError(format!("{e:?}"))
}

/// Draws `chart` to `plots/<stem>.svg` and `plots/<stem>.png`.
pub fn render<C: Chart>(chart: &C, dir: &Path, stem: &str) -> anyhow::Result<()> {
    register_font();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&area)?;
        area.present().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    write_atomic(&dir.join(format!("{stem}.svg")), svg.as_bytes())?;
    let png = dir.join(format!("{stem}.png"));
    let tmp = dir.join(format!("{stem}.partial.png"));
    {
        let area = BitMapBackend::new(&tmp, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&area)?;
        area.present().map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    std::fs::rename(&tmp, &png)?;
    Ok(())
}

/// A bar chart with one segment per label along x.
pub type BarChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<SegmentedCoord<RangedCoordusize>, RangedCoordf64>>;

/// The frame both bar charts share: caption, one segment per label, a y axis from 0
/// to `ymax` with integer labels, and the mesh drawn.
pub fn bar_frame<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: String,
    labels: &[String],
    ymax: f64,
    ydesc: &str,
) -> Result<BarChart<'a, DB>, PlotError> {
    let n = labels.len();
    // Integer ranges are inclusive in plotters: 0..n-1 gives n segments.
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 22))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0f64..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .y_desc(ydesc)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(err)?;
    Ok(chart)
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
