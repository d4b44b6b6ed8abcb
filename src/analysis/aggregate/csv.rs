//! `summary.csv`: one row per group, every figure of the summary as a column.

use std::fs::File;
use std::path::Path;

use anyhow::Context as _;
use polars::prelude::*;

use crate::analysis::summary::{protocol_rates, Group, Summary, LAYERS};

/// Writes the per-group summary as CSV (one row per scenario × mode × model).
pub fn write_summary_csv(summary: &Summary, path: &Path) -> anyhow::Result<()> {
    let gs = &summary.groups;
    let s = |f: &dyn Fn(&Group) -> String| gs.iter().map(f).collect::<Vec<String>>();
    let f = |f: &dyn Fn(&Group) -> f64| gs.iter().map(f).collect::<Vec<f64>>();
    let o = |f: &dyn Fn(&Group) -> Option<f64>| gs.iter().map(f).collect::<Vec<Option<f64>>>();
    let mut cols = vec![
        Column::new("scenario".into(), s(&|g| g.scenario.clone())),
        Column::new("mode".into(), s(&|g| g.mode.clone())),
        Column::new("model".into(), s(&|g| g.model.clone())),
        Column::new("n".into(), gs.iter().map(|g| g.n).collect::<Vec<u64>>()),
        Column::new(
            "infra_errors".into(),
            gs.iter().map(|g| g.infra_errors).collect::<Vec<u64>>(),
        ),
        Column::new(
            "catalog_size".into(),
            gs.iter().map(|g| g.catalog_size).collect::<Vec<u64>>(),
        ),
        Column::new("exact".into(), f(&|g| g.exact.rate)),
        Column::new("exact_lo".into(), f(&|g| g.exact.lo)),
        Column::new("exact_hi".into(), f(&|g| g.exact.hi)),
        Column::new("precision".into(), f(&|g| g.precision)),
        Column::new("recall".into(), f(&|g| g.recall)),
        Column::new("f1".into(), f(&|g| g.f1)),
        Column::new(
            "first_call_correct".into(),
            f(&|g| g.first_call_correct.rate),
        ),
        Column::new("abstain".into(), o(&|g| g.abstain.map(|r| r.rate))),
        Column::new("args_ok".into(), o(&|g| g.args_ok.map(|r| r.rate))),
        Column::new(
            "schema_valid".into(),
            o(&|g| g.schema_valid.map(|r| r.rate)),
        ),
        Column::new("forbidden_hit".into(), f(&|g| g.forbidden_hit.rate)),
        Column::new("protocol_error".into(), f(&|g| g.protocol_error.rate)),
        Column::new("protocol_error_lo".into(), f(&|g| g.protocol_error.lo)),
        Column::new("protocol_error_hi".into(), f(&|g| g.protocol_error.hi)),
    ];
    // Optional columns: a summary read from an older summary.json has no such rates.
    for c in protocol_rates() {
        let r = |g: &Group| g.protocol_rates.get(c).copied();
        cols.push(Column::new(
            format!("{c}_rate").into(),
            o(&|g| r(g).map(|x| x.rate)),
        ));
        cols.push(Column::new(
            format!("{c}_rate_lo").into(),
            o(&|g| r(g).map(|x| x.lo)),
        ));
        cols.push(Column::new(
            format!("{c}_rate_hi").into(),
            o(&|g| r(g).map(|x| x.hi)),
        ));
    }
    // Provider usage and cost: empty for runs whose models report none (mock models).
    for (name, get) in [
        (
            "provider_input",
            &(|g: &Group| g.provider_usage.map(|u| u.input as f64))
                as &dyn Fn(&Group) -> Option<f64>,
        ),
        ("provider_output", &|g: &Group| {
            g.provider_usage.map(|u| u.output as f64)
        }),
        ("provider_counted_input", &|g: &Group| {
            g.provider_usage.map(|u| u.counted_input as f64)
        }),
        ("provider_ratio", &|g: &Group| {
            g.provider_usage.map(|u| u.ratio)
        }),
        ("cost_usd_total", &|g: &Group| g.cost_usd.map(|c| c.total)),
        ("cost_usd_mean", &|g: &Group| g.cost_usd.map(|c| c.mean)),
        // The provider's prompt cache beside the prediction (providers that report it).
        ("cache_read", &|g: &Group| g.cache.map(|c| c.read as f64)),
        ("cache_predicted", &|g: &Group| {
            g.cache.map(|c| c.predicted as f64)
        }),
        ("cache_written", &|g: &Group| {
            g.cache.map(|c| c.written as f64)
        }),
        ("cache_ratio", &|g: &Group| g.cache.map(|c| c.ratio)),
        ("cache_cost_reported", &|g: &Group| {
            g.cache.and_then(|c| c.cost_reported)
        }),
        ("cache_cost_predicted", &|g: &Group| {
            g.cache.and_then(|c| c.cost_predicted)
        }),
    ] {
        cols.push(Column::new(name.into(), o(get)));
    }
    for layer in LAYERS {
        cols.push(Column::new(
            format!("{layer}_median").into(),
            f(&|g| g.tokens[layer].median),
        ));
        cols.push(Column::new(
            format!("{layer}_p95").into(),
            f(&|g| g.tokens[layer].p95),
        ));
    }
    cols.push(Column::new(
        "savings_first_request".into(),
        o(&|g| g.savings_first_request),
    ));
    cols.push(Column::new(
        "savings_billed".into(),
        o(&|g| g.savings_billed),
    ));
    cols.push(Column::new(
        "savings_all_tools_first_request".into(),
        o(&|g| g.savings_all_tools.and_then(|s| s.first_request)),
    ));
    cols.push(Column::new(
        "savings_all_tools_billed".into(),
        o(&|g| g.savings_all_tools.and_then(|s| s.billed)),
    ));
    cols.push(Column::new(
        "pass_k".into(),
        gs.iter().map(|g| g.pass.k).collect::<Vec<u64>>(),
    ));
    cols.push(Column::new("pass_at_k".into(), f(&|g| g.pass.pass_at_k)));
    cols.push(Column::new("pass_hat_k".into(), f(&|g| g.pass.pass_hat_k)));
    let mut df = DataFrame::new(gs.len(), cols)?;
    let mut file =
        File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    CsvWriter::new(&mut file).finish(&mut df)?;
    Ok(())
}

/// Writes `outcomes.csv` from the run's `outcomes.parquet`: the same flat rows (one per
/// outcome, one per turn of a conversation), in slices of [`CSV_SLICE`] rows, so that
/// memory stays that of a slice however large the run.
pub fn write_outcomes_csv(parquet: &Path, path: &Path) -> anyhow::Result<()> {
    // Slice after slice, polars frees and allocates large buffers.
    let _frugal = crate::memory::frugal();
    let rows = super::frame::collect(super::frame::scan(parquet)?.select([len().alias("n")]))?;
    let n = super::frame::nums(&rows, "n")?
        .first()
        .copied()
        .unwrap_or(0.0) as i64;
    let mut file =
        File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut offset = 0i64;
    loop {
        let mut df = super::frame::collect(
            super::frame::scan(parquet)?.slice(offset, CSV_SLICE as IdxSize),
        )?;
        CsvWriter::new(&mut file)
            .include_header(offset == 0)
            .finish(&mut df)?;
        offset += CSV_SLICE as i64;
        if offset >= n {
            return Ok(());
        }
    }
}

/// Rows per slice of [`write_outcomes_csv`].
const CSV_SLICE: usize = 100_000;
