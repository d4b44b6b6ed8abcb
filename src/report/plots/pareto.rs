//! Accuracy against first-turn tokens: one point per mode × model, the Pareto front
//! (no other point is both cheaper and at least as accurate) drawn as a line and ringed.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::chart::{color, err, label, Chart, PlotError, FONT};
use crate::analysis::summary::Group;

pub struct Pareto<'a> {
    pub scenario: &'a str,
    pub groups: &'a [&'a Group],
}

/// Indices of the Pareto-optimal points (fewer tokens, higher accuracy), by tokens.
pub fn front(points: &[(f64, f64)]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..points.len()).collect();
    idx.sort_by(|a, b| {
        points[*a]
            .0
            .total_cmp(&points[*b].0)
            .then(points[*b].1.total_cmp(&points[*a].1))
    });
    let mut best = f64::NEG_INFINITY;
    let mut out = Vec::new();
    for i in idx {
        if points[i].1 > best {
            best = points[i].1;
            out.push(i);
        }
    }
    out
}

impl Chart for Pareto<'_> {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(err)?;
        let pts: Vec<(f64, f64)> = self
            .groups
            .iter()
            .map(|g| (g.tokens["first_turn"].median, g.exact.rate * 100.0))
            .collect();
        let xmax = pts.iter().map(|p| p.0).fold(1.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{}: accuracy vs first-turn tokens", self.scenario),
                (FONT, 22),
            )
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..xmax, 0f64..105f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("first-turn context tokens (median)")
            .y_desc("exact match (%)")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(err)?;
        let f = front(&pts);
        let line: Vec<(f64, f64)> = f.iter().map(|i| pts[*i]).collect();
        chart
            .draw_series(LineSeries::new(line, BLACK.mix(0.5).stroke_width(2)))
            .map_err(err)?
            .label("Pareto front")
            .legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.5).stroke_width(2))
            });
        for (i, (g, p)) in self.groups.iter().zip(&pts).enumerate() {
            let c = color(i);
            chart
                .draw_series([Circle::new(*p, 7, c.filled())])
                .map_err(err)?
                .label(label(g))
                .legend(move |(x, y)| Circle::new((x + 8, y), 5, c.filled()));
            if f.contains(&i) {
                chart
                    .draw_series([Circle::new(*p, 11, BLACK.stroke_width(2))])
                    .map_err(err)?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, 13))
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::front;

    #[test]
    fn pareto_front_keeps_undominated_points() {
        // (tokens, accuracy): b dominates c; a is cheapest; d is most accurate.
        let pts = [(100.0, 50.0), (500.0, 80.0), (600.0, 70.0), (900.0, 95.0)];
        assert_eq!(front(&pts), vec![0, 1, 3]);
    }
}
