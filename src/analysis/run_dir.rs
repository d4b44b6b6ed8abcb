//! A run directory's summary: its outcomes flattened and aggregated, and how many of
//! the work items its `run.json` planned it holds.

use std::path::Path;

use anyhow::Context as _;

use super::aggregate;
use super::summary::{Summary, DEFAULT_SAVINGS_REFERENCE};
use crate::record::manifest::Manifest;

/// Flattens and aggregates a run directory's outcomes (writing `outcomes.parquet`).
/// When the directory has a `run.json`, the summary says how many of its planned
/// work items have an outcome.
pub fn summarize_run(dir: &Path) -> anyhow::Result<Summary> {
    summarize_run_against(dir, None)
}

/// [`summarize_run`] with savings against `reference` (else what the run's
/// `run.json` names, else `legacy`).
pub fn summarize_run_against(dir: &Path, reference: Option<&str>) -> anyhow::Result<Summary> {
    let jsonl = dir.join("outcomes.jsonl");
    if !jsonl.is_file() {
        anyhow::bail!("{} has no outcomes.jsonl", dir.display());
    }
    aggregate::flatten(&jsonl, &dir.join("outcomes.parquet"))?;
    let manifest = Manifest::load_if_present(dir)?;
    let reference = reference.map(str::to_string).or_else(|| {
        manifest
            .as_ref()
            .and_then(|m| m.settings.savings_against.clone())
    });
    let mut s = aggregate::summarize_against(
        &dir.join("outcomes.parquet"),
        reference.as_deref().unwrap_or(DEFAULT_SAVINGS_REFERENCE),
    )?;
    add_manifest(manifest.as_ref(), &mut s);
    Ok(s)
}

/// Aggregates a run directory's outcomes without writing into it (for reading a
/// baseline): the Parquet file goes to a temporary directory.
pub fn summarize_read_only(dir: &Path) -> anyhow::Result<Summary> {
    let jsonl = dir.join("outcomes.jsonl");
    let tmp = tempfile::tempdir().context("cannot make a temporary directory")?;
    let parquet = tmp.path().join("outcomes.parquet");
    aggregate::flatten(&jsonl, &parquet)?;
    let manifest = Manifest::load_if_present(dir)?;
    let reference = manifest
        .as_ref()
        .and_then(|m| m.settings.savings_against.clone());
    let mut s = aggregate::summarize_against(
        &parquet,
        reference.as_deref().unwrap_or(DEFAULT_SAVINGS_REFERENCE),
    )?;
    add_manifest(manifest.as_ref(), &mut s);
    Ok(s)
}

/// Records in the summary what the directory's `run.json` says of it: how many work
/// items it planned, and which queries it kept.
fn add_manifest(m: Option<&Manifest>, s: &mut Summary) {
    if let Some(m) = m {
        s.planned = Some(m.assigned as u64);
        s.filter = m.settings.filter.as_ref().map(|f| f.describe());
    }
}
