//! A conversation scenario's cost over turns: for each mode × model, the median
//! cumulative billed input through each turn, solid, and the same with every cacheable
//! prefix billed as a cache hit, dashed; each point of the solid line is labelled with
//! the conversations that reached that turn (the median is over them alone, so a
//! line's late points rest on few conversations).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::{color, err, index_of, label, Chart, PlotError, AXIS, CAPTION, FONT, LABEL};
use crate::analysis::summary::Group;

pub struct CostOverTurns<'a> {
    pub scenario: &'a str,
    /// The groups with conversations.
    pub groups: &'a [&'a Group],
    /// Every mode of the run, in order: a mode's colour.
    pub modes: &'a [String],
}

/// A group's points by turn (none without conversations).
fn points(g: &Group) -> &[crate::analysis::summary::TurnPoint] {
    g.conversations.as_ref().map_or(&[][..], |c| &c.by_turn[..])
}

impl Chart for CostOverTurns<'_> {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(err)?;
        let last = (self.groups.iter())
            .flat_map(|g| points(g).iter().map(|p| p.turn))
            .max()
            .unwrap_or(1) as f64;
        let ymax = (self.groups.iter())
            .flat_map(|g| points(g).iter().map(|p| p.cum_billed))
            .filter(|v| v.is_finite())
            .fold(1.0, f64::max)
            * 1.12;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{}: billed input over turns", self.scenario),
                (FONT, CAPTION),
            )
            .margin(16)
            .x_label_area_size(64)
            .y_label_area_size(90)
            .build_cartesian_2d(0.7f64..last + 0.3, 0f64..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("turn (labels: conversations that reached it)")
            .y_desc("median billed input so far (tokens); dashed: prefix cached")
            .x_labels(last as usize)
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-9 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, LABEL))
            .axis_desc_style((FONT, AXIS))
            .draw()
            .map_err(err)?;
        for g in self.groups {
            let c = color(index_of(self.modes, &g.mode));
            let pts = points(g);
            let solid: Vec<(f64, f64)> = (pts.iter())
                .filter(|p| p.cum_billed.is_finite())
                .map(|p| (p.turn as f64, p.cum_billed))
                .collect();
            let dashed: Vec<(f64, f64)> = (pts.iter())
                .filter(|p| p.cum_billed_cached.is_finite())
                .map(|p| (p.turn as f64, p.cum_billed_cached))
                .collect();
            chart
                .draw_series(LineSeries::new(solid.clone(), c.stroke_width(2)).point_size(4))
                .map_err(err)?
                .label(label(g))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
            chart
                .draw_series(DashedLineSeries::new(dashed, 6, 4, c.stroke_width(2)))
                .map_err(err)?;
            chart
                .draw_series(pts.iter().filter(|p| p.cum_billed.is_finite()).map(|p| {
                    let style = TextStyle::from((FONT, LABEL).into_font())
                        .color(&c)
                        .pos(Pos::new(HPos::Center, VPos::Bottom));
                    EmptyElement::at((p.turn as f64, p.cum_billed))
                        + Text::new(format!("n={}", p.n), (0, -8), style)
                }))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, LABEL))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(err)?;
        Ok(())
    }
}
