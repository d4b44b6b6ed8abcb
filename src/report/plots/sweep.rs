//! A sweep's curves (`discbench sweep`): per swept scenario and model, exact match,
//! recall@5, first-request tokens and billed input against catalog size (log scale), one
//! line per mode, each with its 95% confidence band — Wilson's interval for exact
//! match, the normal interval of the mean for recall@5, and the distribution-free
//! interval of the median (binomial order statistics) for tokens. Every point is the
//! same queries at another size, so a slope is the effect of size alone. Only sweeps
//! are drawn against size: scenarios that merely differ in size are not joined.

use std::collections::BTreeMap;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use serde::Deserialize;

use super::chart::{color, err, Chart, PlotError, AXIS, CAPTION, FONT, LABEL};
use crate::analysis::stats::wilson;
use crate::analysis::summary::Summary;
use crate::record::reader;
use crate::scenario::sweep::split_point;

/// The metrics drawn, with their file-name part, title and axis.
pub const METRICS: [(&str, &str, &str); 4] = [
    ("exact", "exact match", "exact match (%), 95% Wilson band"),
    ("recall", "recall@5", "recall@5 (%), ranked modes, 95% band"),
    (
        "first-request",
        "first-request tokens",
        "first-request tokens (median), 95% band",
    ),
    (
        "billed",
        "billed input tokens",
        "billed input tokens (median), 95% band",
    ),
];

/// The swept scenarios of a summary (at least two sizes each), with their models.
pub fn sweeps(s: &Summary) -> Vec<(String, Vec<String>)> {
    let mut by: BTreeMap<String, (Vec<usize>, Vec<String>)> = BTreeMap::new();
    for g in s.groups.iter().filter(|g| g.n > 0) {
        if let Some((base, size)) = split_point(&g.scenario) {
            let e = by.entry(base.to_string()).or_default();
            if !e.0.contains(&size) {
                e.0.push(size);
            }
            if !e.1.contains(&g.model) {
                e.1.push(g.model.clone());
            }
        }
    }
    by.into_iter()
        .filter(|(_, (sizes, _))| sizes.len() >= 2)
        .map(|(b, (_, models))| (b, models))
        .collect()
}

/// One point of a curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub size: usize,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
}

/// What a sweep chart reads of an outcome.
#[derive(Deserialize)]
struct Line {
    scenario: String,
    mode: String,
    #[serde(default)]
    mode_spec: String,
    model: String,
    infra_error: Option<String>,
    score: LineScore,
    #[serde(default)]
    surfacing: Option<LineSurfacing>,
    tokens: LineTokens,
}

#[derive(Deserialize)]
struct LineScore {
    exact: bool,
}

#[derive(Deserialize)]
struct LineSurfacing {
    /// Absent where the mode ranks nothing.
    #[serde(default)]
    recall_at_k: Option<f64>,
}

#[derive(Deserialize)]
struct LineTokens {
    first_request: u64,
    billed_input: u64,
}

/// Per outcome group (base, model, mode, size): what the curves are made of.
#[derive(Default)]
struct Values {
    exact: Vec<bool>,
    recall: Vec<f64>,
    first_request: Vec<u64>,
    billed: Vec<u64>,
}

type Key = (String, String, String, usize);

/// The curves of every sweep in a run: (base, model, metric) → mode → points.
pub type Curves = BTreeMap<(String, String, &'static str), BTreeMap<String, Vec<Point>>>;

/// Reads the sweep outcomes of a run (infra errors left out, as everywhere).
pub fn curves(outcomes: &Path) -> anyhow::Result<Curves> {
    let mut by: BTreeMap<Key, Values> = BTreeMap::new();
    let mut labels = crate::record::ModeLabels::default();
    reader::read::<Line>(outcomes, |_, l| {
        let Some((base, size)) = split_point(&l.scenario) else {
            return Ok(());
        };
        if l.infra_error.is_some() {
            return Ok(());
        }
        let mode = labels.label(&l.mode, &l.mode_spec).to_string();
        let v = by
            .entry((base.to_string(), l.model, mode, size))
            .or_default();
        v.exact.push(l.score.exact);
        if let Some(r) = l.surfacing.and_then(|s| s.recall_at_k) {
            v.recall.push(r);
        }
        v.first_request.push(l.tokens.first_request);
        v.billed.push(l.tokens.billed_input);
        Ok(())
    })?;
    let mut out: Curves = BTreeMap::new();
    for ((base, model, mode, size), v) in by {
        let n = v.exact.len() as u64;
        let k = v.exact.iter().filter(|e| **e).count() as u64;
        let (lo, hi) = wilson(k, n);
        let mut put = |metric: &'static str, p: Option<Point>| {
            if let Some(p) = p {
                out.entry((base.clone(), model.clone(), metric))
                    .or_default()
                    .entry(mode.clone())
                    .or_default()
                    .push(p);
            }
        };
        put(
            "exact",
            (n > 0).then(|| Point {
                size,
                y: 100.0 * k as f64 / n as f64,
                lo: 100.0 * lo,
                hi: 100.0 * hi,
            }),
        );
        put(
            "recall",
            mean_band(&v.recall).map(|(y, lo, hi)| Point {
                size,
                y: 100.0 * y,
                lo: 100.0 * lo,
                hi: 100.0 * hi,
            }),
        );
        put(
            "first-request",
            median_band(v.first_request).map(|(y, lo, hi)| Point { size, y, lo, hi }),
        );
        put(
            "billed",
            median_band(v.billed).map(|(y, lo, hi)| Point { size, y, lo, hi }),
        );
    }
    for modes in out.values_mut() {
        for pts in modes.values_mut() {
            pts.sort_by_key(|p| p.size);
        }
    }
    Ok(out)
}

/// The mean of values in [0, 1] and its normal 95% interval, clamped to [0, 1].
pub fn mean_band(v: &[f64]) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return Some((mean, mean, mean));
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let half = 1.96 * (var / n).sqrt();
    Some((mean, (mean - half).max(0.0), (mean + half).min(1.0)))
}

/// The median and its distribution-free 95% interval: the order statistics at ranks
/// ⌊n/2 − 1.96·√n/2⌋ and ⌈1 + n/2 + 1.96·√n/2⌉ (the normal approximation of the
/// binomial), clamped to the data.
pub fn median_band(mut v: Vec<u64>) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
    };
    let half = 1.96 * (n as f64).sqrt() / 2.0;
    let lo = ((n as f64 / 2.0 - half).floor().max(1.0) as usize).min(n) - 1;
    let hi = ((1.0 + n as f64 / 2.0 + half).ceil() as usize).clamp(1, n) - 1;
    Some((median, v[lo] as f64, v[hi] as f64))
}

/// One chart: a metric against catalog size for one sweep and model, a line per mode.
pub struct SweepChart<'a> {
    pub title: String,
    pub ydesc: &'a str,
    pub percent: bool,
    pub series: &'a BTreeMap<String, Vec<Point>>,
}

impl Chart for SweepChart<'_> {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        area.fill(&WHITE).map_err(err)?;
        let pts = || self.series.values().flatten();
        let xmin = pts().map(|p| p.size).min().unwrap_or(1).max(1) as f64;
        let xmax = pts().map(|p| p.size).max().unwrap_or(10) as f64;
        let ymax = if self.percent {
            105.0
        } else {
            pts().map(|p| p.hi.max(p.y)).fold(1.0, f64::max) * 1.12
        };
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT, CAPTION))
            .margin(16)
            .x_label_area_size(64)
            .y_label_area_size(90)
            .build_cartesian_2d((xmin / 1.25..xmax * 1.25).log_scale(), 0f64..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("catalog size (callable addresses per query, log scale)")
            .y_desc(self.ydesc)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, LABEL))
            .axis_desc_style((FONT, AXIS))
            .draw()
            .map_err(err)?;
        for (i, (mode, pts)) in self.series.iter().enumerate() {
            let c = color(i);
            if pts.len() >= 2 {
                let band: Vec<(f64, f64)> = pts
                    .iter()
                    .map(|p| (p.size as f64, p.hi))
                    .chain(pts.iter().rev().map(|p| (p.size as f64, p.lo)))
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(band, c.mix(0.12).filled())))
                    .map_err(err)?;
            }
            chart
                .draw_series(
                    LineSeries::new(pts.iter().map(|p| (p.size as f64, p.y)), c.stroke_width(2))
                        .point_size(4),
                )
                .map_err(err)?
                .label(mode.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, LABEL))
            .position(if self.percent {
                SeriesLabelPosition::LowerLeft
            } else {
                SeriesLabelPosition::UpperLeft
            })
            .draw()
            .map_err(err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_band_brackets_the_median_within_the_data() {
        let (m, lo, hi) = median_band((1..=100).collect()).unwrap();
        assert_eq!(m, 50.5);
        // Ranks ⌊50 − 9.8⌋ and ⌈51 + 9.8⌉: the 40th and the 61st values.
        assert_eq!((lo, hi), (40.0, 61.0));
        assert_eq!(median_band(vec![7]).unwrap(), (7.0, 7.0, 7.0));
        assert!(median_band(Vec::new()).is_none());
    }

    #[test]
    fn the_mean_band_stays_in_zero_to_one() {
        let (m, lo, hi) = mean_band(&[1.0, 1.0, 1.0, 0.0]).unwrap();
        assert_eq!(m, 0.75);
        assert!(lo < m && hi <= 1.0 && lo >= 0.0);
        assert_eq!(mean_band(&[1.0, 1.0]).unwrap(), (1.0, 1.0, 1.0));
    }
}
