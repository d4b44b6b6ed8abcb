//! Tokens by mode: one horizontal stacked bar per mode × model (the first group on
//! top), split by ledger layer (medians per outcome).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::chart::{
    band, bar, bar_chart_height, bar_frame, color, err, label, Chart, PlotError, FONT, LABEL, WIDTH,
};
use crate::analysis::summary::Group;

/// The layers that make up what a run sends and receives.
pub const STACK: [&str; 6] = [
    "system",
    "tool_defs",
    "fetched",
    "results",
    "output",
    "selection",
];

pub struct TokensByMode<'a> {
    pub scenario: &'a str,
    pub groups: &'a [&'a Group],
}

impl Chart for TokensByMode<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH, bar_chart_height(self.groups.len()))
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(err)?;
        let n = self.groups.len();
        let totals: Vec<f64> = self
            .groups
            .iter()
            .map(|g| STACK.iter().map(|l| g.tokens[*l].median).sum())
            .collect();
        // Headroom for the six-entry legend in the upper right, so it never covers
        // the longest bar.
        let xmax = totals.iter().cloned().fold(1.0, f64::max) * 1.45;
        let labels: Vec<String> = self.groups.iter().map(|g| label(g)).collect();
        let mut chart = bar_frame(
            area,
            format!("{}: median tokens per outcome, by layer", self.scenario),
            &labels,
            xmax,
            "tokens (median per outcome)",
            &|v| format!("{v:.0}"),
        )?;
        let mut base = vec![0.0; n];
        for (li, layer) in STACK.iter().enumerate() {
            let c = color(li);
            let bars: Vec<_> = self
                .groups
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    let v = g.tokens[*layer].median;
                    let r = bar(base[i], base[i] + v, band(i, n), c.filled());
                    base[i] += v;
                    r
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(*layer)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, LABEL))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
        Ok(())
    }
}
