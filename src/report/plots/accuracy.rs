//! Accuracy by mode: exact-match rate per mode × model with Wilson 95% whiskers, as
//! horizontal bars (the first group on top), coloured by mode as in every chart of the
//! run, each bar's rate written beyond its whisker.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::{
    band, bar, bar_chart_height, bar_frame, color, err, index_of, label, Chart, PlotError, FONT,
    LABEL, WIDTH,
};
use crate::analysis::summary::Group;

pub struct AccuracyByMode<'a> {
    pub scenario: &'a str,
    pub groups: &'a [&'a Group],
    /// Every mode of the run, in order: a mode's colour.
    pub modes: &'a [String],
}

impl Chart for AccuracyByMode<'_> {
    fn size(&self) -> (u32, u32) {
        (WIDTH, bar_chart_height(self.groups.len()))
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(err)?;
        let n = self.groups.len();
        let labels: Vec<String> = self.groups.iter().map(|g| label(g)).collect();
        // Room right of 100% for the rate written beyond the whisker; no tick there.
        let mut chart = bar_frame(
            area,
            format!("{}: exact match with 95% intervals", self.scenario),
            &labels,
            116.0,
            "exact match (%), 95% Wilson interval",
            &|v| {
                if *v <= 100.0 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            },
        )?;
        chart
            .draw_series(self.groups.iter().enumerate().map(|(i, g)| {
                let c = color(index_of(self.modes, &g.mode));
                bar(0.0, g.exact.rate * 100.0, band(i, n), c.mix(0.85).filled())
            }))
            .map_err(err)?;
        let whisker = BLACK.stroke_width(2);
        let ends = |i: usize, g: &Group| {
            let b = SegmentValue::CenterOf(band(i, n));
            ((g.exact.lo * 100.0, b.clone()), (g.exact.hi * 100.0, b))
        };
        chart
            .draw_series(self.groups.iter().enumerate().map(|(i, g)| {
                let (lo, hi) = ends(i, g);
                PathElement::new(vec![lo, hi], whisker)
            }))
            .map_err(err)?;
        // The whiskers' caps, at both ends.
        for end in [0, 1] {
            chart
                .draw_series(self.groups.iter().enumerate().map(|(i, g)| {
                    let (lo, hi) = ends(i, g);
                    EmptyElement::at(if end == 0 { lo } else { hi })
                        + PathElement::new(vec![(0, -7), (0, 7)], whisker)
                }))
                .map_err(err)?;
        }
        chart
            .draw_series(self.groups.iter().enumerate().map(|(i, g)| {
                let style = TextStyle::from((FONT, LABEL).into_font())
                    .pos(Pos::new(HPos::Left, VPos::Center));
                Text::new(
                    format!("{:.1}%", g.exact.rate * 100.0),
                    (g.exact.hi * 100.0 + 1.5, SegmentValue::CenterOf(band(i, n))),
                    style,
                )
            }))
            .map_err(err)?;
        Ok(())
    }
}
