//! The aggregation pipeline with polars: the only module that touches DataFrames
//! (DESIGN §8).
//!
//! [`flatten`] streams `outcomes.jsonl` line by line into `outcomes.parquet` (one flat
//! row per outcome, written in batches), and [`summarize`] scans that file lazily to
//! build the [`Summary`]: per scenario × mode × model rates with Wilson 95% intervals,
//! token medians and p95 per ledger layer, savings against `legacy`, pass@k and pass^k
//! over repeats, and paired McNemar tests between modes. Memory stays bounded by the
//! batch size and the number of groups, not by the number of outcomes.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use anyhow::{bail, Context as _};
use polars::prelude::*;

use serde::Deserialize;

use super::stats::{mcnemar_exact, pass_k, stable, PassK, Rate};
use super::summary::{
    Cost, Group, Pair, ProviderUsage, QueryRow, Stat, Summary, SurfacingStat, LAYERS,
    PROTOCOL_RATES,
};
use crate::record;
use crate::scenario::sweep::order_key;

/// Rows per Parquet batch while flattening.
const BATCH: usize = 65_536;

/// The part of an outcome line that aggregation reads; everything else is ignored.
#[derive(Deserialize)]
struct Line {
    run_id: String,
    scenario: String,
    query_id: String,
    mode: String,
    mode_spec: String,
    model: String,
    repeat: u32,
    tokenizer: String,
    #[serde(default)]
    catalog_size: u32,
    score: LineScore,
    protocol: LineProtocol,
    tokens: BTreeMap<String, u64>,
    infra_error: Option<String>,
    #[serde(default)]
    usage: Option<crate::record::Usage>,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    surfacing: Option<LineSurfacing>,
}

#[derive(Deserialize)]
struct LineSurfacing {
    recall_at_k: f64,
    recall: f64,
    mrr: f64,
}

#[derive(Deserialize)]
struct LineScore {
    exact: bool,
    precision: f64,
    recall: f64,
    f1: f64,
    first_call_correct: bool,
    abstain_ok: Option<bool>,
    forbidden_hit: bool,
    args_ok: Option<bool>,
    schema_valid: Option<bool>,
}

/// Counters at zero are absent from format-3 lines.
#[derive(Deserialize)]
#[serde(default)]
#[derive(Default)]
struct LineProtocol {
    discovery_calls: u32,
    blind_calls: u32,
    unknown_target: u32,
    bad_subcommand: u32,
    schema_violation: u32,
    not_loaded: u32,
    not_surfaced: u32,
    missing_tool_selection: u32,
    description_required: u32,
    searches: u32,
    resource_reads: u32,
    unloaded_calls: u32,
    repeat_call: u32,
    overfetch: u32,
    turns: u32,
    hit_max_turns: bool,
    empty_answers: u32,
    text_calls: u32,
    refusals: u32,
    truncated: u32,
}

/// Column buffers for one batch.
#[derive(Default)]
struct Batch {
    s: BTreeMap<&'static str, Vec<String>>,
    u: BTreeMap<&'static str, Vec<u64>>,
    f: BTreeMap<&'static str, Vec<f64>>,
    b: BTreeMap<&'static str, Vec<bool>>,
    ob: BTreeMap<&'static str, Vec<Option<bool>>>,
    of: BTreeMap<&'static str, Vec<Option<f64>>>,
    len: usize,
}

impl Batch {
    fn push(&mut self, l: Line) {
        let s = &mut self.s;
        for (k, v) in [
            ("run_id", l.run_id),
            ("scenario", l.scenario),
            ("query_id", l.query_id),
            ("mode", l.mode),
            ("mode_spec", l.mode_spec),
            ("model", l.model),
            ("tokenizer", l.tokenizer),
        ] {
            s.entry(k).or_default().push(v);
        }
        let p = &l.protocol;
        let errors = p.unknown_target
            + p.bad_subcommand
            + p.schema_violation
            + p.not_loaded
            + p.not_surfaced
            + p.missing_tool_selection
            + p.description_required
            + p.empty_answers
            + p.text_calls
            + p.refusals
            + p.truncated;
        for (k, v) in [
            ("repeat", l.repeat),
            ("catalog_size", l.catalog_size),
            ("discovery_calls", p.discovery_calls),
            ("blind_calls", p.blind_calls),
            ("unknown_target", p.unknown_target),
            ("bad_subcommand", p.bad_subcommand),
            ("schema_violation", p.schema_violation),
            ("not_loaded", p.not_loaded),
            ("not_surfaced", p.not_surfaced),
            ("missing_tool_selection", p.missing_tool_selection),
            ("description_required", p.description_required),
            ("searches", p.searches),
            ("resource_reads", p.resource_reads),
            ("unloaded_calls", p.unloaded_calls),
            ("repeat_call", p.repeat_call),
            ("overfetch", p.overfetch),
            ("turns", p.turns),
            ("empty_answers", p.empty_answers),
            ("text_calls", p.text_calls),
            ("refusals", p.refusals),
            ("truncated", p.truncated),
            ("protocol_errors", errors),
        ] {
            self.u.entry(k).or_default().push(v as u64);
        }
        for layer in LAYERS {
            self.u
                .entry(layer)
                .or_default()
                .push(l.tokens.get(layer).copied().unwrap_or(0));
        }
        let usage = l.usage.unwrap_or_default();
        let billed = l.tokens.get("billed_input").copied().unwrap_or(0);
        for (k, v) in [
            ("provider_input", usage.input),
            ("provider_output", usage.output),
            ("provider_cached", usage.cached_input.unwrap_or(0)),
            (
                "counted_with_usage",
                if l.usage.is_some() { billed } else { 0 },
            ),
        ] {
            self.u.entry(k).or_default().push(v);
        }
        self.f
            .entry("cost_usd")
            .or_default()
            .push(l.cost_usd.unwrap_or(0.0));
        let sc = &l.score;
        for (k, v) in [
            ("precision", sc.precision),
            ("recall", sc.recall),
            ("f1", sc.f1),
        ] {
            self.f.entry(k).or_default().push(v);
        }
        for (k, v) in [
            ("exact", sc.exact),
            ("first_call_correct", sc.first_call_correct),
            ("forbidden_hit", sc.forbidden_hit),
            ("hit_max_turns", p.hit_max_turns),
            ("infra", l.infra_error.is_some()),
            ("has_usage", l.usage.is_some()),
            ("has_cost", l.cost_usd.is_some()),
        ] {
            self.b.entry(k).or_default().push(v);
        }
        let sf = l.surfacing.as_ref();
        for (k, v) in [
            ("surfacing_recall_at_k", sf.map(|x| x.recall_at_k)),
            ("surfacing_recall", sf.map(|x| x.recall)),
            ("surfacing_mrr", sf.map(|x| x.mrr)),
        ] {
            self.of.entry(k).or_default().push(v);
        }
        for (k, v) in [
            ("abstain_ok", sc.abstain_ok),
            ("args_ok", sc.args_ok),
            ("schema_valid", sc.schema_valid),
        ] {
            self.ob.entry(k).or_default().push(v);
        }
        self.len += 1;
    }

    fn take(&mut self) -> PolarsResult<DataFrame> {
        let mut cols: Vec<Column> = Vec::new();
        for (k, v) in std::mem::take(&mut self.s) {
            cols.push(Column::new(k.into(), v));
        }
        for (k, v) in std::mem::take(&mut self.u) {
            cols.push(Column::new(k.into(), v));
        }
        for (k, v) in std::mem::take(&mut self.f) {
            cols.push(Column::new(k.into(), v));
        }
        for (k, v) in std::mem::take(&mut self.b) {
            cols.push(Column::new(k.into(), v));
        }
        for (k, v) in std::mem::take(&mut self.ob) {
            cols.push(Column::new(k.into(), v));
        }
        for (k, v) in std::mem::take(&mut self.of) {
            cols.push(Column::new(k.into(), v));
        }
        let n = std::mem::take(&mut self.len);
        DataFrame::new(n, cols)
    }
}

/// Streams `outcomes.jsonl` into `outcomes.parquet`, one flat row per outcome.
/// Returns the number of outcomes. A line that is not an outcome is a
/// [`record::reader::RecordError`] naming its line number; a torn last line is left
/// out with a warning. The Parquet file is written
/// under a temporary name and renamed; on any error the temporary file is removed.
pub fn flatten(jsonl: &Path, parquet: &Path) -> anyhow::Result<usize> {
    let tmp = parquet.with_extension("parquet.partial");
    // The writer and its file are dropped inside `flatten_into`, before the rename or
    // the removal.
    let written = flatten_into(jsonl, &tmp).and_then(|total| {
        std::fs::rename(&tmp, parquet)
            .with_context(|| format!("cannot write {}", parquet.display()))?;
        Ok(total)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The body of [`flatten`]: writes every outcome of `f` to `tmp`.
fn flatten_into(jsonl: &Path, tmp: &Path) -> anyhow::Result<usize> {
    let out = File::create(tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    let mut writer: Option<polars::io::parquet::write::BatchedWriter<File>> = None;
    let mut pending = Some(out);
    let mut batch = Batch::default();
    let mut total = 0;
    let mut flush = |batch: &mut Batch,
                     writer: &mut Option<polars::io::parquet::write::BatchedWriter<File>>|
     -> anyhow::Result<()> {
        let df = batch.take()?;
        if writer.is_none() {
            let file = pending.take().expect("file opened once");
            *writer = Some(ParquetWriter::new(file).batched(df.schema())?);
        }
        writer.as_mut().expect("set above").write_batch(&df)?;
        Ok(())
    };
    let stats = record::reader::read::<Line>(jsonl, |_, l| {
        batch.push(l);
        total += 1;
        if batch.len == BATCH {
            flush(&mut batch, &mut writer)?;
        }
        Ok(())
    })?;
    if let Some(t) = &stats.torn {
        eprintln!(
            "warning: {}:{}: a torn last line (the run was interrupted mid-write) is not counted; `discbench run --resume` runs its work item again",
            jsonl.display(),
            t.line
        );
    }
    if total == 0 {
        bail!("{} holds no outcomes", jsonl.display());
    }
    if batch.len > 0 {
        flush(&mut batch, &mut writer)?;
    }
    writer.expect("at least one batch").finish()?;
    Ok(total)
}

type Spend = BTreeMap<(String, String, String), (Option<ProviderUsage>, Option<Cost>)>;

/// Per group: its provider usage and cost, from the per-group sums.
fn spend_map(df: &DataFrame) -> anyhow::Result<Spend> {
    let (s, m, mo) = (strs(df, "scenario")?, strs(df, "mode")?, strs(df, "model")?);
    let n = |c: &str| nums(df, c);
    let (un, pi, po, pc, cw, cn, cu) = (
        n("usage_n")?,
        n("provider_input")?,
        n("provider_output")?,
        n("provider_cached")?,
        n("counted_with_usage")?,
        n("cost_n")?,
        n("cost_usd")?,
    );
    Ok((0..s.len())
        .map(|i| {
            let usage = (un[i] > 0.0).then(|| ProviderUsage {
                outcomes: un[i] as u64,
                input: pi[i] as u64,
                output: po[i] as u64,
                cached_input: pc[i] as u64,
                counted_input: cw[i] as u64,
                ratio: if cw[i] > 0.0 { pi[i] / cw[i] } else { 0.0 },
            });
            let cost = (cn[i] > 0.0).then(|| Cost {
                outcomes: cn[i] as u64,
                total: stable(cu[i]),
                mean: stable(cu[i] / cn[i]),
            });
            ((s[i].clone(), m[i].clone(), mo[i].clone()), (usage, cost))
        })
        .collect())
}

fn scan(parquet: &Path) -> PolarsResult<LazyFrame> {
    let p = parquet.to_string_lossy().into_owned();
    LazyFrame::scan_parquet(PlRefPath::new(p.as_str()), ScanArgsParquet::default())
}

fn collect(lf: LazyFrame) -> PolarsResult<DataFrame> {
    Ok(lf.collect_with_engine(Engine::Streaming)?.unwrap_single())
}

fn strs(df: &DataFrame, name: &str) -> PolarsResult<Vec<String>> {
    Ok(df
        .column(name)?
        .str()?
        .iter()
        .map(|s| s.unwrap_or_default().to_string())
        .collect())
}

fn nums(df: &DataFrame, name: &str) -> PolarsResult<Vec<f64>> {
    let c = df.column(name)?.cast(&DataType::Float64)?;
    Ok(c.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
}

/// Computes the summary from a flattened outcomes file.
pub fn summarize(parquet: &Path) -> anyhow::Result<Summary> {
    let base = scan(parquet)?;
    let meta = collect(base.clone().select([
        col("run_id").first(),
        col("tokenizer").first(),
        len().alias("n"),
    ]))?;
    let run_id = strs(&meta, "run_id")?.pop().unwrap_or_default();
    let tokenizer = strs(&meta, "tokenizer")?.pop().unwrap_or_default();
    let outcomes = nums(&meta, "n")?.first().copied().unwrap_or(0.0) as u64;

    let keys = [col("scenario"), col("mode"), col("model")];
    let u = |e: Expr| e.cast(DataType::UInt64).sum();
    // Infra errors, provider usage and cost count every outcome: a request that
    // failed later was still billed.
    let infra = collect(base.clone().group_by(keys.clone()).agg([
        u(col("infra")).alias("infra"),
        u(col("has_usage")).alias("usage_n"),
        u(col("provider_input")).alias("provider_input"),
        u(col("provider_output")).alias("provider_output"),
        u(col("provider_cached")).alias("provider_cached"),
        u(col("counted_with_usage")).alias("counted_with_usage"),
        u(col("has_cost")).alias("cost_n"),
        col("cost_usd").sum().alias("cost_usd"),
    ]))?;
    let spend = spend_map(&infra)?;
    let ok = base.clone().filter(col("infra").not());
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
        u(col("surfacing_mrr").is_not_null()).alias("surfacing_n"),
        col("surfacing_recall_at_k")
            .mean()
            .alias("surfacing_recall_at_k"),
        col("surfacing_recall").mean().alias("surfacing_recall"),
        col("surfacing_mrr").mean().alias("surfacing_mrr"),
    ];
    for c in PROTOCOL_RATES {
        let fired = if c == "hit_max_turns" {
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
    for layer in LAYERS {
        aggs.push(
            col(layer)
                .cast(DataType::Float64)
                .median()
                .alias(format!("{layer}_median")),
        );
        aggs.push(
            col(layer)
                .cast(DataType::Float64)
                .quantile(lit(0.95), QuantileMethod::Linear)
                .alias(format!("{layer}_p95")),
        );
    }
    let g = collect(
        ok.clone()
            .group_by(keys.clone())
            .agg(aggs)
            .sort(["scenario", "mode", "model"], Default::default()),
    )?;

    let per_query = collect(
        ok.clone()
            .group_by([col("scenario"), col("mode"), col("model"), col("query_id")])
            .agg([
                len().alias("n"),
                u(col("exact")).alias("exact"),
                col("first_turn")
                    .cast(DataType::Float64)
                    .median()
                    .alias("first_turn"),
            ])
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
        let (n, e, ft) = (
            nums(&per_query, "n")?,
            nums(&per_query, "exact")?,
            nums(&per_query, "first_turn")?,
        );
        (0..s.len())
            .map(|i| QueryRow {
                scenario: s[i].clone(),
                mode: m[i].clone(),
                model: mo[i].clone(),
                query_id: q[i].clone(),
                n: n[i] as u64,
                exact: e[i] as u64,
                first_turn: ft[i],
                infra: 0,
            })
            .collect()
    };
    add_query_infra(&base, &mut queries)?;

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
        for layer in LAYERS {
            tokens.insert(
                layer.to_string(),
                Stat {
                    median: get(&format!("{layer}_median"))?,
                    p95: get(&format!("{layer}_p95"))?,
                },
            );
        }
        let mut protocol_rates = BTreeMap::new();
        for c in PROTOCOL_RATES {
            protocol_rates.insert(c.to_string(), rate(&format!("{c}_k"), n[i])?);
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
            protocol_rates,
            abstain: opt("abstain_ok")?,
            args_ok: opt("args_ok")?,
            schema_valid: opt("schema_valid")?,
            precision: stable(get("precision")?),
            recall: stable(get("recall")?),
            f1: stable(get("f1")?),
            tokens,
            savings_first_turn: None,
            savings_billed: None,
            pass: pass_k(&qs),
            surfacing: match get("surfacing_n")? as u64 {
                0 => None,
                n => Some(SurfacingStat {
                    n,
                    k: crate::score::surfacing::K,
                    recall_at_k: stable(get("surfacing_recall_at_k")?),
                    recall: stable(get("surfacing_recall")?),
                    mrr: stable(get("surfacing_mrr")?),
                }),
            },
            provider_usage: spend.get(&key).and_then(|s| s.0),
            cost_usd: spend.get(&key).and_then(|s| s.1),
        });
    }
    // Groups whose outcomes were all infra errors still get a row.
    for (key, count) in &infra_map {
        if !groups
            .iter()
            .any(|g| (&g.scenario, &g.mode, &g.model) == (&key.0, &key.1, &key.2))
        {
            let mut g = empty_group(key, *count);
            if let Some((u, c)) = spend.get(key) {
                g.provider_usage = *u;
                g.cost_usd = *c;
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
    for g in &mut groups {
        // A group without a scored outcome has no token medians to compare.
        if g.n == 0 {
            continue;
        }
        if let Some(l) = snapshot.iter().find(|l| {
            l.scenario == g.scenario && l.model == g.model && l.mode == "legacy" && l.n > 0
        }) {
            let save = |layer: &str| {
                let base = l.tokens[layer].median;
                (base > 0.0).then(|| 1.0 - g.tokens[layer].median / base)
            };
            g.savings_first_turn = save("first_turn");
            g.savings_billed = save("billed_input");
        }
    }

    let mut pairs = mcnemar_pairs(&ok)?;
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
    })
}

/// Counts each query's infra errors into `queries`, adding a row with `n == 0` for a
/// query whose outcomes were all infra errors (so `compare` can tell a query that
/// failed to run from one that was dropped).
fn add_query_infra(base: &LazyFrame, queries: &mut Vec<QueryRow>) -> anyhow::Result<()> {
    let df = collect(
        base.clone()
            .filter(col("infra"))
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
                first_turn: 0.0,
                infra: infra[i] as u64,
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
        protocol_rates: PROTOCOL_RATES
            .iter()
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
        savings_first_turn: None,
        savings_billed: None,
        surfacing: None,
        pass: PassK {
            k: 0,
            pass_at_k: 0.0,
            pass_hat_k: 0.0,
        },
        provider_usage: None,
        cost_usd: None,
    }
}

fn mcnemar_pairs(ok: &LazyFrame) -> anyhow::Result<Vec<Pair>> {
    let left = ok.clone().select([
        col("scenario"),
        col("model"),
        col("query_id"),
        col("repeat"),
        col("mode"),
        col("exact"),
    ]);
    let right = left.clone().select([
        col("scenario"),
        col("model"),
        col("query_id"),
        col("repeat"),
        col("mode").alias("mode_b"),
        col("exact").alias("exact_b"),
    ]);
    let on = [
        col("scenario"),
        col("model"),
        col("query_id"),
        col("repeat"),
    ];
    let joined = left
        .join(right, on.clone(), on, JoinArgs::new(JoinType::Inner))
        .filter(col("mode").lt(col("mode_b")))
        .group_by([col("scenario"), col("model"), col("mode"), col("mode_b")])
        .agg([
            len().alias("n"),
            (col("exact").and(col("exact_b").not()))
                .cast(DataType::UInt64)
                .sum()
                .alias("a_only"),
            (col("exact").not().and(col("exact_b")))
                .cast(DataType::UInt64)
                .sum()
                .alias("b_only"),
        ])
        .sort(["scenario", "model", "mode", "mode_b"], Default::default());
    let df = collect(joined)?;
    let (s, m, a, b) = (
        strs(&df, "scenario")?,
        strs(&df, "model")?,
        strs(&df, "mode")?,
        strs(&df, "mode_b")?,
    );
    let (n, x, y) = (nums(&df, "n")?, nums(&df, "a_only")?, nums(&df, "b_only")?);
    Ok((0..s.len())
        .map(|i| Pair {
            scenario: s[i].clone(),
            model: m[i].clone(),
            mode_a: a[i].clone(),
            mode_b: b[i].clone(),
            n: n[i] as u64,
            a_only: x[i] as u64,
            b_only: y[i] as u64,
            p_value: mcnemar_exact(x[i] as u64, y[i] as u64),
        })
        .collect())
}

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
    for c in PROTOCOL_RATES {
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
        "savings_first_turn".into(),
        o(&|g| g.savings_first_turn),
    ));
    cols.push(Column::new(
        "savings_billed".into(),
        o(&|g| g.savings_billed),
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
