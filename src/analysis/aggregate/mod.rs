//! The aggregation pipeline with polars: the only module that touches DataFrames
//! (DESIGN §8).
//!
//! [`flatten`] streams `outcomes.jsonl` line by line into `outcomes.parquet` (one flat
//! row per outcome, written in batches), and [`summarize`] scans that file lazily to
//! build the [`Summary`]: per scenario × mode × model rates with Wilson 95% intervals,
//! token medians and p95 per ledger layer, savings against `legacy`, pass@k and pass^k
//! over repeats, and paired McNemar tests between modes. Memory stays bounded by the
//! batch size, the number of groups and the distinct values within them, not by the
//! number of outcomes: medians and quantiles come from per-group histograms, and the
//! McNemar pairing runs in passes over disjoint sets of repeats.
//!
//! The work is split along its seams: [`flatten`](mod@flatten) (outcome lines to
//! Parquet), `frame` (DataFrame helpers and histogram quantiles), `spend` (usage, cost
//! and cache figures per group), `pairs` (McNemar pairing) and `csv` (`summary.csv`);
//! this file computes the summary from them.

mod conversations;
mod csv;
mod flatten;
mod frame;
mod pairs;
mod spend;

pub use csv::{write_outcomes_csv, write_summary_csv};
pub use flatten::flatten;
pub use frame::bound_streaming_memory;

use frame::{collect, nums, quantiles_by, scan, strs, Quantiles};
use pairs::{mcnemar_pairs, PAIRING_PASS};
use spend::spend_map;
use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::*;

use crate::analysis::stats::{pass_k, stable, PassK, Rate};
use crate::analysis::summary::{
    protocol_rates, Group, QueryRow, Savings, Stat, Summary, SurfacingStat, ALL_TOOLS,
    DEFAULT_SAVINGS_REFERENCE, LAYERS,
};
use crate::scenario::sweep::order_key;

/// Computes the summary from a flattened outcomes file, savings against `legacy`.
pub fn summarize(parquet: &Path) -> anyhow::Result<Summary> {
    summarize_against(parquet, DEFAULT_SAVINGS_REFERENCE)
}

/// Computes the summary from a flattened outcomes file, savings against the mode
/// `reference` (and against `all-tools` too, when the run holds it).
pub fn summarize_against(parquet: &Path, reference: &str) -> anyhow::Result<Summary> {
    // Polars' threads free and allocate large buffers query after query.
    let _frugal = crate::memory::frugal();
    let base = scan(parquet)?;
    let meta = collect(
        base.clone().select([
            col("run_id").first(),
            col("tokenizer").first(),
            // Outcome lines: a conversation's turns are rows of one outcome.
            col("turn")
                .eq(lit(1))
                .cast(DataType::UInt64)
                .sum()
                .alias("n"),
        ]),
    )?;
    let run_id = strs(&meta, "run_id")?.pop().unwrap_or_default();
    let tokenizer = strs(&meta, "tokenizer")?.pop().unwrap_or_default();
    let outcomes = nums(&meta, "n")?.first().copied().unwrap_or(0.0) as u64;

    let keys = [col("scenario"), col("mode"), col("model")];
    let u = |e: Expr| e.cast(DataType::UInt64).sum();
    // Infra errors, provider usage and cost count every outcome: a request that
    // failed later was still billed.
    let infra = collect(
        base.clone().group_by(keys.clone()).agg([
            // One per outcome (a conversation's rows all carry its infra error).
            u(col("infra").and(col("turn").eq(lit(1)))).alias("infra"),
            u(col("has_usage")).alias("usage_n"),
            u(col("provider_input")).alias("provider_input"),
            u(col("provider_output")).alias("provider_output"),
            u(col("provider_cached")).alias("provider_cached"),
            u(col("counted_with_usage")).alias("counted_with_usage"),
            u(col("has_cost")).alias("cost_n"),
            col("cost_usd").sum().alias("cost_usd"),
            u(col("has_cache")).alias("cache_n"),
            u(col("cache_requests")).alias("cache_requests"),
            u(col("cache_predicted")).alias("cache_predicted"),
            u(col("cache_read")).alias("cache_read"),
            u(col("cache_written")).alias("cache_written"),
            u(col("has_cache_cost")).alias("cache_cost_n"),
            col("cache_cost_predicted")
                .sum()
                .alias("cache_cost_predicted"),
            col("cache_cost_reported")
                .sum()
                .alias("cache_cost_reported"),
        ]),
    )?;
    let spend = spend_map(&infra)?;
    let ok = base.clone().filter(col("infra").not());
    // One row per outcome (a conversation's first turn), exact when all its turns are:
    // what queries, pass^k and the paired tests are counted on.
    let whole = ok
        .clone()
        .filter(col("turn").eq(lit(1)))
        .with_column(col("conv_exact").alias("exact"));
    let mut aggs = vec![
        len().alias("n"),
        u(col("exact")).alias("exact_k"),
        u(col("first_call_correct")).alias("first_k"),
        u(col("forbidden_hit")).alias("forbidden_k"),
        u(col("protocol_errors").gt(lit(0))).alias("proto_k"),
        col("precision").mean().alias("precision"),
        col("recall").mean().alias("recall"),
        col("f1").mean().alias("f1"),
        col("catalog_size").max().alias("catalog_size"),
        u(col("surfacing_recall").is_not_null()).alias("surfacing_n"),
        u(col("surfacing_mrr").is_not_null()).alias("surfacing_ranked_n"),
        col("surfacing_recall_at_k")
            .mean()
            .alias("surfacing_recall_at_k"),
        col("surfacing_recall").mean().alias("surfacing_recall"),
        col("surfacing_mrr").mean().alias("surfacing_mrr"),
    ];
    for c in protocol_rates() {
        let fired = if c == "hit_max_requests" {
            col(c)
        } else {
            col(c).gt(lit(0))
        };
        aggs.push(u(fired).alias(format!("{c}_k")));
    }
    for opt in ["abstain_ok", "args_ok", "schema_valid"] {
        aggs.push(u(col(opt).is_not_null()).alias(format!("{opt}_n")));
        aggs.push(u(col(opt).fill_null(lit(false))).alias(format!("{opt}_k")));
    }
    // Medians and p95 come from histograms (below), not from `median()`, which would
    // hold every value of a group.
    let layer_stats: Vec<Quantiles> = LAYERS
        .iter()
        .map(|layer| quantiles_by(&ok, &["scenario", "mode", "model"], layer, &[0.5, 0.95]))
        .collect::<anyhow::Result<_>>()?;
    let g = collect(
        ok.clone()
            .group_by(keys.clone())
            .agg(aggs)
            .sort(["scenario", "mode", "model"], Default::default()),
    )?;

    let query_first_request = quantiles_by(
        &whole,
        &["scenario", "mode", "model", "query_id"],
        "first_request",
        &[0.5],
    )?;
    let per_query = collect(
        whole
            .clone()
            .group_by([col("scenario"), col("mode"), col("model"), col("query_id")])
            .agg([len().alias("n"), u(col("exact")).alias("exact")])
            .sort(
                ["scenario", "mode", "model", "query_id"],
                Default::default(),
            ),
    )?;
    let mut queries: Vec<QueryRow> = {
        let (s, m, mo, q) = (
            strs(&per_query, "scenario")?,
            strs(&per_query, "mode")?,
            strs(&per_query, "model")?,
            strs(&per_query, "query_id")?,
        );
        let (n, e) = (nums(&per_query, "n")?, nums(&per_query, "exact")?);
        (0..s.len())
            .map(|i| {
                let key = [s[i].clone(), m[i].clone(), mo[i].clone(), q[i].clone()];
                QueryRow {
                    first_request: query_first_request
                        .get(key.as_slice())
                        .map_or(f64::NAN, |v| v[0]),
                    scenario: s[i].clone(),
                    mode: m[i].clone(),
                    model: mo[i].clone(),
                    query_id: q[i].clone(),
                    n: n[i] as u64,
                    exact: e[i] as u64,
                    infra: 0,
                    turns: Vec::new(),
                }
            })
            .collect()
    };
    add_query_infra(&base, &mut queries)?;
    add_query_turns(&ok, &mut queries)?;

    let infra_map: BTreeMap<(String, String, String), u64> = {
        let (s, m, mo, n) = (
            strs(&infra, "scenario")?,
            strs(&infra, "mode")?,
            strs(&infra, "model")?,
            nums(&infra, "infra")?,
        );
        (0..s.len())
            .map(|i| ((s[i].clone(), m[i].clone(), mo[i].clone()), n[i] as u64))
            .collect()
    };
    let col_s = |n: &str| strs(&g, n);
    let col_n = |n: &str| nums(&g, n);
    let (sc, md, ml) = (col_s("scenario")?, col_s("mode")?, col_s("model")?);
    let n = col_n("n")?;
    let mut groups = Vec::new();
    for i in 0..sc.len() {
        let get = |name: &str| -> anyhow::Result<f64> { Ok(col_n(name)?[i]) };
        let rate =
            |k: &str, n_: f64| -> anyhow::Result<Rate> { Ok(Rate::new(get(k)? as u64, n_ as u64)) };
        let opt = |name: &str| -> anyhow::Result<Option<Rate>> {
            let nn = get(&format!("{name}_n"))?;
            Ok((nn > 0.0)
                .then(|| Rate::new(get(&format!("{name}_k")).unwrap_or(0.0) as u64, nn as u64)))
        };
        let mut tokens = BTreeMap::new();
        let key = [sc[i].clone(), md[i].clone(), ml[i].clone()];
        for (layer, stats) in LAYERS.iter().zip(&layer_stats) {
            let q = stats.get(key.as_slice());
            tokens.insert(
                layer.to_string(),
                Stat {
                    median: q.map_or(f64::NAN, |v| v[0]),
                    p95: q.map_or(f64::NAN, |v| v[1]),
                },
            );
        }
        let mut rates = BTreeMap::new();
        for c in protocol_rates() {
            rates.insert(c.to_string(), rate(&format!("{c}_k"), n[i])?);
        }
        let key = (sc[i].clone(), md[i].clone(), ml[i].clone());
        let qs: Vec<(u64, u64)> = queries
            .iter()
            .filter(|q| q.scenario == key.0 && q.mode == key.1 && q.model == key.2 && q.n > 0)
            .map(|q| (q.n, q.exact))
            .collect();
        groups.push(Group {
            scenario: key.0.clone(),
            mode: key.1.clone(),
            model: key.2.clone(),
            n: n[i] as u64,
            infra_errors: infra_map.get(&key).copied().unwrap_or(0),
            catalog_size: get("catalog_size")? as u64,
            exact: rate("exact_k", n[i])?,
            first_call_correct: rate("first_k", n[i])?,
            forbidden_hit: rate("forbidden_k", n[i])?,
            protocol_error: rate("proto_k", n[i])?,
            protocol_rates: rates,
            abstain: opt("abstain_ok")?,
            args_ok: opt("args_ok")?,
            schema_valid: opt("schema_valid")?,
            precision: stable(get("precision")?),
            recall: stable(get("recall")?),
            f1: stable(get("f1")?),
            tokens,
            savings_first_request: None,
            savings_billed: None,
            savings_all_tools: None,
            pass: pass_k(&qs),
            surfacing: match get("surfacing_n")? as u64 {
                0 => None,
                n => {
                    let ranked_n = get("surfacing_ranked_n")? as u64;
                    let ranked = ranked_n > 0;
                    Some(SurfacingStat {
                        n,
                        k: crate::score::surfacing::K,
                        recall_at_k: if ranked {
                            Some(stable(get("surfacing_recall_at_k")?))
                        } else {
                            None
                        },
                        recall: stable(get("surfacing_recall")?),
                        mrr: if ranked {
                            Some(stable(get("surfacing_mrr")?))
                        } else {
                            None
                        },
                        ranked_n: ranked.then_some(ranked_n),
                    })
                }
            },
            provider_usage: spend.get(&key).and_then(|s| s.0),
            cost_usd: spend.get(&key).and_then(|s| s.1),
            cache: spend.get(&key).and_then(|s| s.2),
            conversations: None,
        });
    }
    // Groups whose outcomes were all infra errors still get a row.
    for (key, count) in &infra_map {
        if !groups
            .iter()
            .any(|g| (&g.scenario, &g.mode, &g.model) == (&key.0, &key.1, &key.2))
        {
            let mut g = empty_group(key, *count);
            if let Some((u, c, k)) = spend.get(key) {
                g.provider_usage = *u;
                g.cost_usd = *c;
                g.cache = *k;
            }
            groups.push(g);
        }
    }
    // The empty groups were pushed after the sorted ones: sort again so that every
    // reader can rely on scenario, mode, model order (one section per scenario).
    // A sweep's sizes come in numeric order (`hub@30` before `hub@100`).
    groups.sort_by(|a, b| {
        (order_key(&a.scenario), &a.mode, &a.model).cmp(&(
            order_key(&b.scenario),
            &b.mode,
            &b.model,
        ))
    });
    let snapshot = groups.clone();
    // Savings of medians against another mode of the same scenario and model.
    let against = |g: &Group, reference: &str| {
        let l = snapshot.iter().find(|l| {
            l.scenario == g.scenario && l.model == g.model && l.mode == reference && l.n > 0
        })?;
        let save = |layer: &str| {
            let base = l.tokens[layer].median;
            (base > 0.0).then(|| 1.0 - g.tokens[layer].median / base)
        };
        Some(Savings {
            first_request: save("first_request"),
            billed: save("billed_input"),
        })
    };
    for g in &mut groups {
        // A group without a scored outcome has no token medians to compare.
        if g.n == 0 {
            continue;
        }
        if let Some(s) = against(g, reference) {
            g.savings_first_request = s.first_request;
            g.savings_billed = s.billed;
        }
        if reference != ALL_TOOLS {
            g.savings_all_tools = against(g, ALL_TOOLS);
        }
    }

    let passes = (outcomes as usize).div_ceil(PAIRING_PASS).max(1) as u32;
    let mut pairs = mcnemar_pairs(&whole, passes)?;
    conversations::add(&ok, &mut groups)?;
    pairs.sort_by(|a, b| {
        (order_key(&a.scenario), &a.model, &a.mode_a, &a.mode_b).cmp(&(
            order_key(&b.scenario),
            &b.model,
            &b.mode_a,
            &b.mode_b,
        ))
    });
    Ok(Summary {
        run_id,
        tokenizer,
        outcomes,
        groups,
        pairs,
        queries,
        planned: None,
        savings_reference: (reference != DEFAULT_SAVINGS_REFERENCE).then(|| reference.to_string()),
        filter: None,
    })
}

/// Counts each query's infra errors into `queries`, adding a row with `n == 0` for a
/// query whose outcomes were all infra errors (so `compare` can tell a query that
/// failed to run from one that was dropped).
/// Each conversation's turns exact, by turn (what `compare` names when a
/// conversation's result changed).
fn add_query_turns(ok: &LazyFrame, queries: &mut [QueryRow]) -> anyhow::Result<()> {
    let df = collect(
        ok.clone()
            .filter(col("turns").gt(lit(1)))
            .group_by([
                col("scenario"),
                col("mode"),
                col("model"),
                col("query_id"),
                col("turn"),
            ])
            .agg([col("exact").cast(DataType::UInt64).sum().alias("k")]),
    )?;
    let (s, m, mo, q) = (
        strs(&df, "scenario")?,
        strs(&df, "mode")?,
        strs(&df, "model")?,
        strs(&df, "query_id")?,
    );
    if s.is_empty() {
        return Ok(());
    }
    let (turn, k) = (nums(&df, "turn")?, nums(&df, "k")?);
    let mut by: BTreeMap<(String, String, String, String), Vec<u64>> = BTreeMap::new();
    for i in 0..s.len() {
        let v = by
            .entry((s[i].clone(), m[i].clone(), mo[i].clone(), q[i].clone()))
            .or_default();
        let t = turn[i] as usize;
        if v.len() < t {
            v.resize(t, 0);
        }
        v[t - 1] = k[i] as u64;
    }
    for r in queries.iter_mut() {
        let key = (
            r.scenario.clone(),
            r.mode.clone(),
            r.model.clone(),
            r.query_id.clone(),
        );
        if let Some(v) = by.remove(&key) {
            r.turns = v;
        }
    }
    Ok(())
}

fn add_query_infra(base: &LazyFrame, queries: &mut Vec<QueryRow>) -> anyhow::Result<()> {
    let df = collect(
        base.clone()
            .filter(col("infra").and(col("turn").eq(lit(1))))
            .group_by([col("scenario"), col("mode"), col("model"), col("query_id")])
            .agg([len().alias("infra")]),
    )?;
    let (s, m, mo, q) = (
        strs(&df, "scenario")?,
        strs(&df, "mode")?,
        strs(&df, "model")?,
        strs(&df, "query_id")?,
    );
    let infra = nums(&df, "infra")?;
    if s.is_empty() {
        return Ok(());
    }
    let index: BTreeMap<(String, String, String, String), usize> = queries
        .iter()
        .enumerate()
        .map(|(i, r)| {
            (
                (
                    r.scenario.clone(),
                    r.mode.clone(),
                    r.model.clone(),
                    r.query_id.clone(),
                ),
                i,
            )
        })
        .collect();
    for i in 0..s.len() {
        let key = (s[i].clone(), m[i].clone(), mo[i].clone(), q[i].clone());
        match index.get(&key) {
            Some(&j) => queries[j].infra = infra[i] as u64,
            None => queries.push(QueryRow {
                scenario: key.0,
                mode: key.1,
                model: key.2,
                query_id: key.3,
                n: 0,
                exact: 0,
                first_request: 0.0,
                infra: infra[i] as u64,
                turns: Vec::new(),
            }),
        }
    }
    queries.sort_by(|a, b| {
        (order_key(&a.scenario), &a.mode, &a.model, &a.query_id).cmp(&(
            order_key(&b.scenario),
            &b.mode,
            &b.model,
            &b.query_id,
        ))
    });
    Ok(())
}

fn empty_group(key: &(String, String, String), infra: u64) -> Group {
    let zero = Rate::new(0, 0);
    Group {
        scenario: key.0.clone(),
        mode: key.1.clone(),
        model: key.2.clone(),
        n: 0,
        infra_errors: infra,
        catalog_size: 0,
        exact: zero,
        first_call_correct: zero,
        forbidden_hit: zero,
        protocol_error: zero,
        protocol_rates: protocol_rates()
            .into_iter()
            .map(|c| (c.to_string(), zero))
            .collect(),
        abstain: None,
        args_ok: None,
        schema_valid: None,
        precision: 0.0,
        recall: 0.0,
        f1: 0.0,
        tokens: LAYERS
            .iter()
            .map(|l| {
                (
                    l.to_string(),
                    Stat {
                        median: 0.0,
                        p95: 0.0,
                    },
                )
            })
            .collect(),
        savings_first_request: None,
        savings_billed: None,
        savings_all_tools: None,
        surfacing: None,
        pass: PassK {
            k: 0,
            pass_at_k: 0.0,
            pass_hat_k: 0.0,
        },
        provider_usage: None,
        cost_usd: None,
        cache: None,
        conversations: None,
    }
}
