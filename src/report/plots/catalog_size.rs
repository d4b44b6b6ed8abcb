//! Accuracy and tokens against catalog size (callable addresses), one line per
//! mode × model — drawn when the run holds several catalog sizes (a sweep, or a suite
//! of scenarios of different sizes).

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::chart::{color, err, Chart, PlotError, FONT};
use crate::analysis::summary::Summary;

/// Whether the run holds at least two catalog sizes.
pub fn applies(s: &Summary) -> bool {
    let mut sizes: Vec<u64> = s
        .groups
        .iter()
        .filter(|g| g.n > 0)
        .map(|g| g.catalog_size)
        .collect();
    sizes.sort();
    sizes.dedup();
    sizes.len() >= 2
}

pub struct BySize<'a> {
    pub summary: &'a Summary,
    /// First-turn tokens when true, exact match when false.
    pub tokens: bool,
}

impl Chart for BySize<'_> {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(err)?;
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for g in self.summary.groups.iter().filter(|g| g.n > 0) {
            let y = if self.tokens {
                g.tokens["first_turn"].median
            } else {
                g.exact.rate * 100.0
            };
            series
                .entry(format!("{} · {}", g.mode, g.model))
                .or_default()
                .push((g.catalog_size as f64, y));
        }
        for v in series.values_mut() {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let xmax = series.values().flatten().map(|p| p.0).fold(1.0, f64::max) * 1.1;
        let ymax = if self.tokens {
            series.values().flatten().map(|p| p.1).fold(1.0, f64::max) * 1.15
        } else {
            105.0
        };
        let (title, ydesc) = if self.tokens {
            (
                "first-turn tokens vs catalog size",
                "first-turn context tokens (median)",
            )
        } else {
            ("exact match vs catalog size", "exact match (%)")
        };
        let mut chart = ChartBuilder::on(area)
            .caption(title, (FONT, 22))
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("catalog size (callable addresses)")
            .y_desc(ydesc)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        for (i, (name, pts)) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)).point_size(4))
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, 13))
            .position(if self.tokens {
                SeriesLabelPosition::UpperLeft
            } else {
                SeriesLabelPosition::LowerLeft
            })
            .draw()
            .map_err(err)?;
        Ok(())
    }
}
