//! Accuracy against first-request tokens: one point per mode × model (colour: mode, shape:
//! model, as in the page's chart), the Pareto front (no other point is both cheaper and
//! at least as accurate) drawn as a line and ringed. The legend names modes and models
//! apart (a dozen `mode · model` entries would cover the points) and goes to the corner
//! with the fewest points under it.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::chart::{
    color, draw_marker, err, index_of, legend_marker, text_width, Chart, PlotError, AXIS, CAPTION,
    FONT, HEIGHT, LABEL, WIDTH,
};
use crate::analysis::summary::Group;

pub struct Pareto<'a> {
    pub scenario: &'a str,
    pub groups: &'a [&'a Group],
    /// Every mode of the run, in order: a mode's colour.
    pub modes: &'a [String],
    /// Every model of the run, in order: a model's marker.
    pub models: &'a [String],
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

/// Of the four corners of the plot, the one whose legend-sized box (`w` × `h`, as
/// shares of the plot) holds the fewest points (shares of the axes, y up); ties go to
/// the first of lower right, upper right, lower left, upper left.
fn legend_corner(points: &[(f64, f64)], w: f64, h: f64) -> SeriesLabelPosition {
    let corners = [
        (SeriesLabelPosition::LowerRight, 1.0 - w, 1.0, 0.0, h),
        (SeriesLabelPosition::UpperRight, 1.0 - w, 1.0, 1.0 - h, 1.0),
        (SeriesLabelPosition::LowerLeft, 0.0, w, 0.0, h),
        (SeriesLabelPosition::UpperLeft, 0.0, w, 1.0 - h, 1.0),
    ];
    corners
        .into_iter()
        .min_by_key(|(_, x0, x1, y0, y1)| {
            points
                .iter()
                .filter(|(x, y)| {
                    *x >= x0 - 0.03 && *x <= x1 + 0.03 && *y >= y0 - 0.05 && *y <= y1 + 0.05
                })
                .count()
        })
        .map(|c| c.0)
        .unwrap_or(SeriesLabelPosition::LowerRight)
}

impl Chart for Pareto<'_> {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(err)?;
        let pts: Vec<(f64, f64)> = self
            .groups
            .iter()
            .map(|g| (g.tokens["first_request"].median, g.exact.rate * 100.0))
            .collect();
        let xmax = pts.iter().map(|p| p.0).fold(1.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{}: accuracy vs first-request tokens", self.scenario),
                (FONT, CAPTION),
            )
            .margin(16)
            .x_label_area_size(64)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..xmax, 0f64..105f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("first-request context tokens (median)")
            .y_desc("exact match (%)")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, LABEL))
            .axis_desc_style((FONT, AXIS))
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
            let c = color(index_of(self.modes, &g.mode));
            let shape = index_of(self.models, &g.model);
            draw_marker(&mut chart, *p, shape, 7, c.filled())?;
            if f.contains(&i) {
                chart
                    .draw_series([Circle::new(*p, 12, BLACK.stroke_width(2))])
                    .map_err(err)?;
            }
        }
        // The legend: a coloured dot per mode and, with more than one model, a grey
        // marker per model (those of this scenario, in the run's order).
        let mut entries: Vec<String> = vec!["Pareto front".into()];
        for m in self.modes {
            if self.groups.iter().any(|g| &g.mode == m) {
                let c = color(index_of(self.modes, m));
                chart
                    .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                    .map_err(err)?
                    .label(format!("mode {m}"))
                    .legend(move |(x, y)| Circle::new((x + 8, y), 6, c.filled()));
                entries.push(format!("mode {m}"));
            }
        }
        let models: Vec<&String> = self
            .models
            .iter()
            .filter(|m| self.groups.iter().any(|g| &g.model == *m))
            .collect();
        if models.len() > 1 {
            for m in models {
                let shape = index_of(self.models, m);
                let anno = chart
                    .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                    .map_err(err)?;
                anno.label(format!("model {m}"));
                legend_marker(anno, shape, 6, BLACK.mix(0.6).filled());
                entries.push(format!("model {m}"));
            }
        }
        // The legend's size as shares of the plot, to find it a corner.
        let (w, h) = (WIDTH as f64 - 130.0, HEIGHT as f64 - 130.0);
        let lw = entries
            .iter()
            .map(|e| text_width(e, LABEL))
            .max()
            .unwrap_or(0) as f64
            + 50.0;
        let lh = entries.len() as f64 * (LABEL as f64 / 1.24 + 9.0) + 12.0;
        let shares: Vec<(f64, f64)> = pts.iter().map(|(x, y)| (x / xmax, y / 105.0)).collect();
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, LABEL))
            .position(legend_corner(&shares, lw / w, lh / h))
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

    #[test]
    fn the_legend_goes_where_no_point_is() {
        use super::legend_corner;
        use plotters::prelude::SeriesLabelPosition as P;
        let lower_right = [(0.9, 0.1), (0.8, 0.2)];
        assert!(matches!(
            legend_corner(&lower_right, 0.3, 0.4),
            P::UpperRight
        ));
        let both_right = [(0.9, 0.1), (0.9, 0.9)];
        assert!(matches!(legend_corner(&both_right, 0.3, 0.4), P::LowerLeft));
        assert!(matches!(legend_corner(&[], 0.3, 0.4), P::LowerRight));
    }
}
