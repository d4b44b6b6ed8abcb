//! The conversation-level figures of the groups whose queries are conversations:
//! conversations exact (every turn exact) with their Wilson interval, billed input per
//! conversation, and by turn index — turns exact, median cumulative billed input with
//! and without the cache, and the turn each failing conversation first failed at.
//! The turn-level figures are the group's own (one row per turn).

use std::collections::BTreeMap;

use polars::prelude::*;

use super::frame::{collect, nums, quantiles_by, strs};
use crate::analysis::stats::{stable, Rate};
use crate::analysis::summary::{ConvStat, Group, Stat, TurnPoint};

type Key = (String, String, String);

/// Adds the conversation figures to every group of `groups` that has conversations;
/// `ok` holds one row per turn (infra errors left out).
pub(super) fn add(ok: &LazyFrame, groups: &mut [Group]) -> anyhow::Result<()> {
    let keys = ["scenario", "mode", "model"];
    let by: Vec<Expr> = keys.iter().map(|k| col(*k)).collect();
    // Every outcome of a group (a single query is a conversation of one turn); the
    // figures go to the groups that hold a conversation of more than one turn.
    let has: std::collections::BTreeSet<Key> = {
        let df = collect(
            ok.clone()
                .filter(col("turns").gt(lit(1)))
                .group_by(by.clone())
                .agg([len().alias("n")]),
        )?;
        let (s, m, mo) = (
            strs(&df, "scenario")?,
            strs(&df, "mode")?,
            strs(&df, "model")?,
        );
        (0..s.len())
            .map(|i| (s[i].clone(), m[i].clone(), mo[i].clone()))
            .collect()
    };
    if has.is_empty() {
        return Ok(());
    }
    let conv = ok.clone();
    let whole = conv.clone().filter(col("turn").eq(lit(1)));
    let last = conv.clone().filter(col("turn").eq(col("turns")));
    let counts = collect(whole.clone().group_by(by.clone()).agg([
        len().alias("n"),
        col("conv_exact").cast(DataType::UInt64).sum().alias("k"),
    ]))?;
    let key_of = |df: &DataFrame| -> anyhow::Result<Vec<Key>> {
        let (s, m, mo) = (strs(df, "scenario")?, strs(df, "mode")?, strs(df, "model")?);
        Ok((0..s.len())
            .map(|i| (s[i].clone(), m[i].clone(), mo[i].clone()))
            .collect())
    };
    let mut stats: BTreeMap<Key, ConvStat> = BTreeMap::new();
    let (n, k) = (nums(&counts, "n")?, nums(&counts, "k")?);
    let billed = quantiles_by(&last, &keys, "cum_billed", &[0.5, 0.95])?;
    let cached = quantiles_by(&last, &keys, "cum_billed_cached", &[0.5, 0.95])?;
    let stat = |q: &BTreeMap<Vec<String>, Vec<f64>>, key: &Key| {
        let v = q
            .get(&vec![key.0.clone(), key.1.clone(), key.2.clone()])
            .cloned()
            .unwrap_or_else(|| vec![f64::NAN, f64::NAN]);
        Stat {
            median: stable(v[0]),
            p95: stable(v[1]),
        }
    };
    for (i, key) in key_of(&counts)?.into_iter().enumerate() {
        stats.insert(
            key.clone(),
            ConvStat {
                n: n[i] as u64,
                exact: Rate::new(k[i] as u64, n[i] as u64),
                billed_input: stat(&billed, &key),
                billed_cached: stat(&cached, &key),
                by_turn: Vec::new(),
                first_failing: Vec::new(),
            },
        );
    }
    // By turn index: the turns at each index, and the cumulative cost there.
    let indexed = conv.with_column(col("turn").cast(DataType::String).alias("turn_s"));
    let ikeys = ["scenario", "mode", "model", "turn_s"];
    let per = collect(
        indexed
            .clone()
            .group_by(ikeys.iter().map(|k| col(*k)).collect::<Vec<_>>())
            .agg([
                len().alias("n"),
                col("exact").cast(DataType::UInt64).sum().alias("k"),
            ]),
    )?;
    let cum = quantiles_by(&indexed, &ikeys, "cum_billed", &[0.5])?;
    let cum_cached = quantiles_by(&indexed, &ikeys, "cum_billed_cached", &[0.5])?;
    let (pn, pk, pt) = (nums(&per, "n")?, nums(&per, "k")?, strs(&per, "turn_s")?);
    for (i, key) in key_of(&per)?.into_iter().enumerate() {
        let q = vec![key.0.clone(), key.1.clone(), key.2.clone(), pt[i].clone()];
        let median =
            |m: &BTreeMap<Vec<String>, Vec<f64>>| stable(m.get(&q).map_or(f64::NAN, |v| v[0]));
        if let Some(s) = stats.get_mut(&key) {
            s.by_turn.push(TurnPoint {
                turn: pt[i].parse().unwrap_or(0),
                n: pn[i] as u64,
                exact: Rate::new(pk[i] as u64, pn[i] as u64),
                cum_billed: median(&cum),
                cum_billed_cached: median(&cum_cached),
            });
        }
    }
    // The turn each failing conversation first failed at: flattening marked it, so
    // the count is by turn, not by outcome (whose groups would grow with the run).
    let failing = collect(
        ok.clone()
            .filter(col("first_failed"))
            .group_by([col("scenario"), col("mode"), col("model"), col("turn")])
            .agg([len().alias("c")]),
    )?;
    let (ff, fc) = (nums(&failing, "turn")?, nums(&failing, "c")?);
    for (i, key) in key_of(&failing)?.into_iter().enumerate() {
        if let Some(s) = stats.get_mut(&key) {
            s.first_failing.push((ff[i] as u64, fc[i] as u64));
        }
    }
    for g in groups.iter_mut() {
        let key = (g.scenario.clone(), g.mode.clone(), g.model.clone());
        if !has.contains(&key) {
            continue;
        }
        if let Some(mut s) = stats.remove(&key) {
            s.by_turn.sort_by_key(|p| p.turn);
            s.first_failing.sort();
            g.conversations = Some(s);
        }
    }
    Ok(())
}
