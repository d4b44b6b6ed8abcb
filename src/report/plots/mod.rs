//! Plots with plotters, each chart one file, each drawn once as SVG and once as PNG
//! into `plots/`: tokens by mode stacked by ledger layer, accuracy by mode with
//! Wilson whiskers, accuracy against first-turn tokens with the Pareto front, and —
//! when the run holds several catalog sizes — accuracy and tokens against catalog
//! size. Text uses the vendored DejaVu Sans, so PNGs render on machines without fonts.

mod accuracy;
mod catalog_size;
pub mod chart;
mod pareto;
mod tokens;

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
            format!("{sc}: accuracy vs first-turn tokens"),
        ));
    }
    if catalog_size::applies(s) {
        v.push((
            "catalog-size-accuracy".into(),
            "accuracy vs catalog size".into(),
        ));
        v.push((
            "catalog-size-tokens".into(),
            "tokens vs catalog size".into(),
        ));
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
        for sc in scenarios(s) {
            let groups: Vec<&Group> = s
                .groups
                .iter()
                .filter(|g| g.scenario == sc && g.n > 0)
                .collect();
            if groups.is_empty() {
                continue;
            }
            let sl = slug(&sc);
            render(
                &tokens::TokensByMode {
                    scenario: &sc,
                    groups: &groups,
                },
                &out,
                &format!("tokens-{sl}"),
            )?;
            render(
                &accuracy::AccuracyByMode {
                    scenario: &sc,
                    groups: &groups,
                },
                &out,
                &format!("accuracy-{sl}"),
            )?;
            render(
                &pareto::Pareto {
                    scenario: &sc,
                    groups: &groups,
                },
                &out,
                &format!("pareto-{sl}"),
            )?;
        }
        if catalog_size::applies(s) {
            render(
                &catalog_size::BySize {
                    summary: s,
                    tokens: false,
                },
                &out,
                "catalog-size-accuracy",
            )?;
            render(
                &catalog_size::BySize {
                    summary: s,
                    tokens: true,
                },
                &out,
                "catalog-size-tokens",
            )?;
        }
        Ok(())
    }
}
