//! A run directory's summary: its outcomes flattened and aggregated, and how many of
//! the work items its `run.json` planned it holds.

use std::path::Path;

use anyhow::Context as _;

use super::aggregate;
use super::summary::Summary;
use crate::record::manifest::Manifest;

/// Flattens and aggregates a run directory's outcomes (writing `outcomes.parquet`).
/// When the directory has a `run.json`, the summary says how many of its planned
/// work items have an outcome.
pub fn summarize_run(dir: &Path) -> anyhow::Result<Summary> {
    let jsonl = dir.join("outcomes.jsonl");
    if !jsonl.is_file() {
        anyhow::bail!("{} has no outcomes.jsonl", dir.display());
    }
    aggregate::flatten(&jsonl, &dir.join("outcomes.parquet"))?;
    let mut s = aggregate::summarize(&dir.join("outcomes.parquet"))?;
    add_completeness(dir, &mut s)?;
    Ok(s)
}

/// Aggregates a run directory's outcomes without writing into it (for reading a
/// baseline): the Parquet file goes to a temporary directory.
pub fn summarize_read_only(dir: &Path) -> anyhow::Result<Summary> {
    let jsonl = dir.join("outcomes.jsonl");
    let tmp = tempfile::tempdir().context("cannot make a temporary directory")?;
    let parquet = tmp.path().join("outcomes.parquet");
    aggregate::flatten(&jsonl, &parquet)?;
    let mut s = aggregate::summarize(&parquet)?;
    add_completeness(dir, &mut s)?;
    Ok(s)
}

/// Records in the summary how many planned work items the directory holds.
fn add_completeness(dir: &Path, s: &mut Summary) -> anyhow::Result<()> {
    if let Some(m) = Manifest::load_if_present(dir)? {
        s.planned = Some(m.assigned as u64);
    }
    Ok(())
}
