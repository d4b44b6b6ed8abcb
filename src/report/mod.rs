//! Reports: everything a run shows its reader, computed from `outcomes.jsonl` alone
//! (DESIGN §9). One [`Exporter`] per format, one file each; [`write_all`] flattens
//! the outcomes to Parquet, aggregates them, and runs every exporter. Each file is
//! written to a temporary name and renamed, so a failure never leaves half a file.

pub mod explorer;
pub mod exporter;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod plots;
pub mod table;
pub mod text;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

pub use exporter::{write_atomic, Exporter, ReportCx};
pub use text::pct;

use crate::analysis::aggregate;
use crate::analysis::compare::Comparison;
use crate::analysis::summary::Summary;

/// Every exporter, in the order they run (the HTML page embeds the plots).
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(json::SummaryJson),
        Box::new(CsvExport),
        Box::new(markdown::SummaryMd),
        Box::new(junit::Junit),
        Box::new(plots::Plots),
        Box::new(html::Html),
    ]
}

/// `summary.csv`, written by the aggregation module (it owns the DataFrames).
struct CsvExport;

impl Exporter for CsvExport {
    fn name(&self) -> &'static str {
        "summary.csv"
    }
    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        let tmp = dir.join("summary.csv.partial");
        aggregate::write_summary_csv(cx.summary, &tmp)?;
        std::fs::rename(&tmp, dir.join("summary.csv")).context("cannot write summary.csv")
    }
}

/// Writes every report file into the run directory.
pub fn write_all(
    dir: &Path,
    summary: &Summary,
    comparison: Option<&Comparison>,
) -> anyhow::Result<Vec<PathBuf>> {
    let cx = ReportCx {
        summary,
        outcomes: &dir.join("outcomes.jsonl"),
        comparison,
    };
    let mut written = Vec::new();
    for e in exporters() {
        e.write(&cx, dir)
            .with_context(|| format!("writing {}", e.name()))?;
        written.push(dir.join(e.name()));
    }
    Ok(written)
}
