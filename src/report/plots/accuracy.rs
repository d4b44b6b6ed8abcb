//! Accuracy by mode: exact-match rate per mode × model with Wilson 95% whiskers.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::{bar_frame, color, err, label, Chart, PlotError, FONT};
use crate::analysis::summary::Group;

pub struct AccuracyByMode<'a> {
    pub scenario: &'a str,
    pub groups: &'a [&'a Group],
}

impl Chart for AccuracyByMode<'_> {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(err)?;
        let labels: Vec<String> = self.groups.iter().map(|g| label(g)).collect();
        let mut chart = bar_frame(
            area,
            format!("{}: exact match with 95% intervals", self.scenario),
            &labels,
            100.0,
            "exact match (%)",
        )?;
        chart
            .draw_series(self.groups.iter().enumerate().map(|(i, g)| {
                Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), g.exact.rate * 100.0),
                    ],
                    color(i).mix(0.8).filled(),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(self.groups.iter().enumerate().map(|(i, g)| {
                PathElement::new(
                    vec![
                        (SegmentValue::CenterOf(i), g.exact.lo * 100.0),
                        (SegmentValue::CenterOf(i), g.exact.hi * 100.0),
                    ],
                    BLACK.stroke_width(2),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(self.groups.iter().enumerate().map(|(i, g)| {
                // Below the whisker's lower end, inside the bar, centred.
                let style = TextStyle::from((FONT, 14).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Center));
                Text::new(
                    format!("{:.1}%", g.exact.rate * 100.0),
                    (
                        SegmentValue::CenterOf(i),
                        (g.exact.lo * 100.0 - 6.0).max(3.0),
                    ),
                    style,
                )
            }))
            .map_err(err)?;
        Ok(())
    }
}
