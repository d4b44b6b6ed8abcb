//! Plots with plotters, each chart one file, each drawn once as SVG and once as PNG
//! into `plots/`: tokens by mode stacked by ledger layer, accuracy by mode with
//! Wilson whiskers, accuracy against first-request tokens with the Pareto front, and —
//! for a sweep — accuracy, recall@5 and tokens against catalog size with confidence
//! bands; for a scenario of conversations, billed input over turns. Text uses the vendored DejaVu Sans, so PNGs render on machines without fonts.
//! Every text is at least [`chart::MIN_TEXT_PX`] pixels in the SVG (see [`chart`]).
//!
//! [`answer`] is apart: the chart `index.html` leads with, written as SVG by hand so
//! that the page's script can make its points answer a hover.

mod accuracy;
pub mod answer;
pub mod chart;
mod pareto;
pub mod sweep;
mod tokens;
mod turns;

use std::path::Path;

use crate::analysis::summary::{Group, Summary};
use crate::report::exporter::{Exporter, ReportCx};
use chart::render;
pub use chart::{register_font, PlotError};

/// Scenario names in summary order.
pub fn scenarios(s: &Summary) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for g in &s.groups {
        if !v.contains(&g.scenario) {
            v.push(g.scenario.clone());
        }
    }
    v
}

/// Every mode of a summary in order of first appearance: a mode's colour in every
/// chart of the run.
pub fn modes(s: &Summary) -> Vec<String> {
    distinct(s.groups.iter().map(|g| &g.mode))
}

/// Every model of a summary in order of first appearance: a model's marker.
pub fn models(s: &Summary) -> Vec<String> {
    distinct(s.groups.iter().map(|g| &g.model))
}

fn distinct<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for n in names {
        if !v.contains(n) {
            v.push(n.clone());
        }
    }
    v
}

/// A file-name-safe form of a scenario name.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Every chart of a summary: (stem, title) pairs, in display order.
pub fn chart_list(s: &Summary) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for sc in scenarios(s) {
        let sl = slug(&sc);
        v.push((format!("tokens-{sl}"), format!("{sc}: tokens by mode")));
        v.push((format!("accuracy-{sl}"), format!("{sc}: accuracy by mode")));
        v.push((
            format!("pareto-{sl}"),
            format!("{sc}: accuracy vs first-request tokens"),
        ));
        if s.groups
            .iter()
            .any(|g| g.scenario == sc && g.conversations.is_some())
        {
            v.push((
                format!("turns-{sl}"),
                format!("{sc}: billed input over turns"),
            ));
        }
    }
    v.extend(
        sweep_charts(s)
            .into_iter()
            .map(|(stem, title, ..)| (stem, title)),
    );
    v
}

/// The charts of every sweep in a run: (stem, title, base, model, metric).
pub fn sweep_charts(s: &Summary) -> Vec<(String, String, String, String, &'static str)> {
    let mut v = Vec::new();
    for (base, models) in sweep::sweeps(s) {
        for model in models {
            for (metric, what, _) in sweep::METRICS {
                v.push((
                    format!("sweep-{}-{}-{metric}", slug(&base), slug(&model)),
                    format!("{base}: {what} vs catalog size, {model}"),
                    base.clone(),
                    model.clone(),
                    metric,
                ));
            }
        }
    }
    v
}

pub struct Plots;

impl Exporter for Plots {
    fn name(&self) -> &'static str {
        "plots"
    }

    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        let out = dir.join("plots");
        std::fs::create_dir_all(&out)?;
        let s = cx.summary;
        let (modes, models) = (modes(s), models(s));
        // Each scenario's charts drawn apart, on the cores there are (the files do not
        // depend on each other).
        use rayon::prelude::*;
        scenarios(s)
            .par_iter()
            .try_for_each(|sc| -> anyhow::Result<()> {
                let groups: Vec<&Group> = s
                    .groups
                    .iter()
                    .filter(|g| g.scenario == *sc && g.n > 0)
                    .collect();
                if groups.is_empty() {
                    return Ok(());
                }
                let sl = slug(sc);
                render(
                    &tokens::TokensByMode {
                        scenario: sc,
                        groups: &groups,
                    },
                    &out,
                    &format!("tokens-{sl}"),
                )?;
                render(
                    &accuracy::AccuracyByMode {
                        scenario: sc,
                        groups: &groups,
                        modes: &modes,
                    },
                    &out,
                    &format!("accuracy-{sl}"),
                )?;
                render(
                    &pareto::Pareto {
                        scenario: sc,
                        groups: &groups,
                        modes: &modes,
                        models: &models,
                    },
                    &out,
                    &format!("pareto-{sl}"),
                )?;
                let conversations: Vec<&Group> = (groups.iter().copied())
                    .filter(|g| g.conversations.is_some())
                    .collect();
                if !conversations.is_empty() {
                    render(
                        &turns::CostOverTurns {
                            scenario: sc,
                            groups: &conversations,
                            modes: &modes,
                        },
                        &out,
                        &format!("turns-{sl}"),
                    )?;
                }
                Ok(())
            })?;
        let charts = sweep_charts(s);
        if !charts.is_empty() {
            let curves = sweep::curves(cx.outcomes)?;
            let none = Default::default();
            charts
                .into_par_iter()
                .try_for_each(|(stem, title, base, model, metric)| {
                    let (_, _, ydesc) = sweep::METRICS
                        .iter()
                        .find(|m| m.0 == metric)
                        .expect("a listed metric");
                    render(
                        &sweep::SweepChart {
                            title,
                            ydesc,
                            percent: matches!(metric, "exact" | "recall"),
                            series: curves.get(&(base, model, metric)).unwrap_or(&none),
                        },
                        &out,
                        &stem,
                    )
                })?;
        }
        Ok(())
    }
}
