//! Reports: everything a run shows its reader, computed from `outcomes.jsonl` alone
//! (DESIGN §9). One [`Exporter`] per format, one file each; [`write_all`] flattens
//! the outcomes to Parquet, aggregates them, and runs every exporter. Each file is
//! written to a temporary name and renamed, so a failure never leaves half a file.

pub mod cases;
pub mod early;
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

pub use exporter::{write_atomic, Exporter, ReportCx, Started};
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

/// `summary.csv` (one row per group) and `outcomes.csv` (the rows of
/// `outcomes.parquet`: one per outcome, one per turn of a conversation), written by the
/// aggregation module (it owns the DataFrames).
struct CsvExport;

impl Exporter for CsvExport {
    fn name(&self) -> &'static str {
        "summary.csv"
    }
    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        let tmp = dir.join("summary.csv.partial");
        aggregate::write_summary_csv(cx.summary, &tmp)?;
        std::fs::rename(&tmp, dir.join("summary.csv")).context("cannot write summary.csv")?;
        let parquet = dir.join("outcomes.parquet");
        if parquet.is_file() {
            let tmp = dir.join("outcomes.csv.partial");
            aggregate::write_outcomes_csv(&parquet, &tmp)?;
            std::fs::rename(&tmp, dir.join("outcomes.csv")).context("cannot write outcomes.csv")?;
        }
        Ok(())
    }
}

/// Writes every report file into the run directory. The exporters run on two
/// threads: the plots and then the page that embeds them on one, every other format
/// on the other (each reads the run on its own, and the files do not depend on each
/// other otherwise).
pub fn write_all(
    dir: &Path,
    summary: &Summary,
    comparison: Option<&Comparison>,
) -> anyhow::Result<Vec<PathBuf>> {
    write_all_with(dir, summary, comparison, &Started::none())
}

/// [`write_all`], with the page's explorer and the JUnit cases started before the
/// summary was computed ([`Started::start`]).
pub fn write_all_with(
    dir: &Path,
    summary: &Summary,
    comparison: Option<&Comparison>,
    started: &Started,
) -> anyhow::Result<Vec<PathBuf>> {
    let cx = ReportCx {
        summary,
        outcomes: &dir.join("outcomes.jsonl"),
        comparison,
        started,
    };
    let all = exporters();
    let (page, rest): (Vec<&dyn Exporter>, Vec<&dyn Exporter>) = all
        .iter()
        .map(|e| e.as_ref())
        .partition(|e| matches!(e.name(), "plots" | "index.html"));
    let run = |list: &[&dyn Exporter]| -> anyhow::Result<()> {
        for e in list {
            e.write(&cx, dir)
                .with_context(|| format!("writing {}", e.name()))?;
        }
        Ok(())
    };
    let (a, b) = std::thread::scope(|s| {
        let page = s.spawn(|| run(&page));
        let rest = run(&rest);
        (rest, page.join())
    });
    a?;
    b.map_err(|_| anyhow::anyhow!("a report exporter panicked"))??;
    Ok(all.iter().map(|e| dir.join(e.name())).collect())
}
