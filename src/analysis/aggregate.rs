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

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use anyhow::Context as _;
use polars::prelude::*;

use serde::Deserialize;

use super::stats::{mcnemar_exact, pass_k, stable, PassK, Rate};
use super::summary::{
    protocol_rates, CacheStat, Cost, Group, Pair, ProviderUsage, QueryRow, Savings, Stat, Summary,
    SurfacingStat, ALL_TOOLS, DEFAULT_SAVINGS_REFERENCE, LAYERS,
};
use crate::record;
use crate::scenario::sweep::order_key;
use crate::strategy::defined::DEFINED;

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
    #[serde(default)]
    cache: Option<LineCache>,
}

#[derive(Deserialize)]
struct LineCache {
    requests: u64,
    predicted: u64,
    read: u64,
    written: u64,
    #[serde(default)]
    cost_predicted_usd: Option<f64>,
    #[serde(default)]
    cost_reported_usd: Option<f64>,
}

#[derive(Deserialize)]
struct LineSurfacing {
    /// Absent where the mode ranks nothing.
    #[serde(default)]
    recall_at_k: Option<f64>,
    recall: f64,
    #[serde(default)]
    mrr: Option<f64>,
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

/// Counters at zero are absent from format-3 lines. The counters strategies define
/// are read by the names [`DEFINED`] lists (others are left out).
#[derive(Default)]
struct LineProtocol {
    discovery_calls: u32,
    blind_calls: u32,
    unknown_target: u32,
    bad_subcommand: u32,
    schema_violation: u32,
    not_loaded: u32,
    not_surfaced: u32,
    not_allowed: u32,
    /// Per [`DEFINED`] event, in its order.
    defined: [u32; DEFINED.len()],
    unloaded_calls: u32,
    repeat_call: u32,
    overfetch: u32,
    turns: u32,
    hit_max_turns: bool,
    empty_answers: u32,
    text_calls: u32,
    refusals: u32,
    truncated: u32,
    context_overflow: u32,
}

impl<'de> Deserialize<'de> for LineProtocol {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<LineProtocol, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = LineProtocol;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an outcome's protocol counters")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<LineProtocol, A::Error> {
                let mut p = LineProtocol::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let slot = match key.as_ref() {
                        "hit_max_turns" => {
                            p.hit_max_turns = map.next_value()?;
                            continue;
                        }
                        "discovery_calls" => &mut p.discovery_calls,
                        "blind_calls" => &mut p.blind_calls,
                        "unknown_target" => &mut p.unknown_target,
                        "bad_subcommand" => &mut p.bad_subcommand,
                        "schema_violation" => &mut p.schema_violation,
                        "not_loaded" => &mut p.not_loaded,
                        "not_surfaced" => &mut p.not_surfaced,
                        "not_allowed" => &mut p.not_allowed,
                        "unloaded_calls" => &mut p.unloaded_calls,
                        "repeat_call" => &mut p.repeat_call,
                        "overfetch" => &mut p.overfetch,
                        "turns" => &mut p.turns,
                        "empty_answers" => &mut p.empty_answers,
                        "text_calls" => &mut p.text_calls,
                        "refusals" => &mut p.refusals,
                        "truncated" => &mut p.truncated,
                        "context_overflow" => &mut p.context_overflow,
                        other => match DEFINED.iter().position(|k| k.name == other) {
                            Some(i) => &mut p.defined[i],
                            None => {
                                map.next_value::<serde::de::IgnoredAny>()?;
                                continue;
                            }
                        },
                    };
                    *slot = map.next_value()?;
                }
                Ok(p)
            }
        }
        d.deserialize_map(V)
    }
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
    /// The mode each line ran under, by (asked, spec).
    labels: crate::record::ModeLabels,
}

impl Batch {
    fn push(&mut self, l: Line) {
        let s = &mut self.s;
        // Groups are named by the mode as it ran (a scenario's `agent.modes` may
        // have changed the one asked); the mode as asked stays in `mode_asked`.
        let label = self.labels.label(&l.mode, &l.mode_spec).to_string();
        for (k, v) in [
            ("run_id", l.run_id),
            ("scenario", l.scenario),
            ("query_id", l.query_id),
            ("mode", label),
            ("mode_asked", l.mode),
            ("mode_spec", l.mode_spec),
            ("model", l.model),
            ("tokenizer", l.tokenizer),
        ] {
            s.entry(k).or_default().push(v);
        }
        let p = &l.protocol;
        let defined_errors: u32 = DEFINED
            .iter()
            .zip(&p.defined)
            .filter(|(k, _)| k.error)
            .map(|(_, n)| n)
            .sum();
        let errors = p.unknown_target
            + p.bad_subcommand
            + p.schema_violation
            + p.not_loaded
            + p.not_surfaced
            + p.not_allowed
            + defined_errors
            + p.empty_answers
            + p.text_calls
            + p.refusals
            + p.truncated
            + p.context_overflow;
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
            ("not_allowed", p.not_allowed),
            ("unloaded_calls", p.unloaded_calls),
            ("repeat_call", p.repeat_call),
            ("overfetch", p.overfetch),
            ("turns", p.turns),
            ("empty_answers", p.empty_answers),
            ("text_calls", p.text_calls),
            ("refusals", p.refusals),
            ("truncated", p.truncated),
            ("context_overflow", p.context_overflow),
            ("protocol_errors", errors),
        ] {
            self.u.entry(k).or_default().push(v as u64);
        }
        for (k, v) in DEFINED.iter().zip(p.defined) {
            self.u.entry(k.name).or_default().push(v as u64);
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
        let c = l.cache.as_ref();
        for (k, v) in [
            ("cache_requests", c.map_or(0, |c| c.requests)),
            ("cache_predicted", c.map_or(0, |c| c.predicted)),
            ("cache_read", c.map_or(0, |c| c.read)),
            ("cache_written", c.map_or(0, |c| c.written)),
        ] {
            self.u.entry(k).or_default().push(v);
        }
        for (k, v) in [
            (
                "cache_cost_predicted",
                c.and_then(|c| c.cost_predicted_usd).unwrap_or(0.0),
            ),
            (
                "cache_cost_reported",
                c.and_then(|c| c.cost_reported_usd).unwrap_or(0.0),
            ),
        ] {
            self.f.entry(k).or_default().push(v);
        }
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
            ("has_cache", l.cache.is_some()),
            (
                "has_cache_cost",
                l.cache
                    .as_ref()
                    .is_some_and(|c| c.cost_reported_usd.is_some()),
            ),
        ] {
            self.b.entry(k).or_default().push(v);
        }
        let sf = l.surfacing.as_ref();
        for (k, v) in [
            ("surfacing_recall_at_k", sf.and_then(|x| x.recall_at_k)),
            ("surfacing_recall", sf.map(|x| x.recall)),
            ("surfacing_mrr", sf.and_then(|x| x.mrr)),
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
        return Err(crate::record::reader::RecordError::Empty {
            path: jsonl.to_path_buf(),
        }
        .into());
    }
    if batch.len > 0 {
        flush(&mut batch, &mut writer)?;
    }
    writer.expect("at least one batch").finish()?;
    Ok(total)
}

type Spend =
    BTreeMap<(String, String, String), (Option<ProviderUsage>, Option<Cost>, Option<CacheStat>)>;

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
    let (kn, kq, kp, kr, kw, kc, kcp, kcr) = (
        n("cache_n")?,
        n("cache_requests")?,
        n("cache_predicted")?,
        n("cache_read")?,
        n("cache_written")?,
        n("cache_cost_n")?,
        n("cache_cost_predicted")?,
        n("cache_cost_reported")?,
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
            let cache = (kn[i] > 0.0).then(|| CacheStat {
                outcomes: kn[i] as u64,
                requests: kq[i] as u64,
                predicted: kp[i] as u64,
                read: kr[i] as u64,
                written: kw[i] as u64,
                ratio: if kp[i] > 0.0 {
                    stable(kr[i] / kp[i])
                } else {
                    0.0
                },
                cost_reported: (kc[i] > 0.0).then(|| stable(kcr[i])),
                cost_predicted: (kc[i] > 0.0).then(|| stable(kcp[i])),
            });
            (
                (s[i].clone(), m[i].clone(), mo[i].clone()),
                (usage, cost, cache),
            )
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

/// Per group (its key columns' values): one quantile per asked-for level.
type Quantiles = BTreeMap<Vec<String>, Vec<f64>>;

/// The quantiles `qs` of `value` (nulls left out) in each group of `keys`, exactly as
/// polars' `quantile(q, Linear)` gives them (its `median()` is the 0.5 one), but
/// computed from the histogram of each group's values: polars collects only (group,
/// value, count) rows, so memory is bounded by the distinct values per group, not by
/// the number of outcomes. A group with no value has none, and the reader gives NaN,
/// as polars' null median did.
fn quantiles_by(
    lf: &LazyFrame,
    keys: &[&str],
    value: &str,
    qs: &[f64],
) -> anyhow::Result<Quantiles> {
    let by: Vec<Expr> = keys.iter().map(|k| col(*k)).collect();
    let df = collect(
        lf.clone()
            .select(
                by.iter()
                    .cloned()
                    .chain([col(value).cast(DataType::Float64).alias("v")])
                    .collect::<Vec<_>>(),
            )
            .filter(col("v").is_not_null())
            .group_by(by.into_iter().chain([col("v")]).collect::<Vec<_>>())
            .agg([len().alias("c")]),
    )?;
    let columns: Vec<Vec<String>> = keys
        .iter()
        .map(|k| strs(&df, k))
        .collect::<PolarsResult<_>>()?;
    let (v, c) = (nums(&df, "v")?, nums(&df, "c")?);
    let mut hist: BTreeMap<Vec<String>, Vec<(f64, u64)>> = BTreeMap::new();
    for i in 0..v.len() {
        let key = columns.iter().map(|col| col[i].clone()).collect();
        hist.entry(key).or_default().push((v[i], c[i] as u64));
    }
    Ok(hist
        .into_iter()
        .map(|(key, mut h)| {
            h.sort_by(|a, b| a.0.total_cmp(&b.0));
            let at = qs.iter().map(|&q| quantile_linear(&h, q)).collect();
            (key, at)
        })
        .collect())
}

/// The `q` quantile of the values a sorted histogram `(value, count)` holds, by
/// polars' linear method: index `(n - 1) q` into the sorted values, interpolating
/// between its floor and the next value (the same arithmetic, so the same bits).
fn quantile_linear(hist: &[(f64, u64)], q: f64) -> f64 {
    let n: u64 = hist.iter().map(|h| h.1).sum();
    if n == 0 {
        return f64::NAN;
    }
    // The value at 0-based position `i` of the sorted values.
    let nth = |i: u64| {
        let mut seen = 0;
        for &(v, c) in hist {
            seen += c;
            if i < seen {
                return v;
            }
        }
        hist[hist.len() - 1].0
    };
    let float_idx = (n - 1) as f64 * q;
    let idx = (float_idx as u64).min(n - 1);
    let lower = nth(idx);
    if float_idx.ceil() as u64 == idx {
        return lower;
    }
    let upper = nth(idx + 1);
    if lower == upper {
        lower
    } else {
        (float_idx - idx as f64) * (upper - lower) + lower
    }
}

/// Computes the summary from a flattened outcomes file, savings against `legacy`.
pub fn summarize(parquet: &Path) -> anyhow::Result<Summary> {
    summarize_against(parquet, DEFAULT_SAVINGS_REFERENCE)
}

/// Computes the summary from a flattened outcomes file, savings against the mode
/// `reference` (and against `all-tools` too, when the run holds it).
pub fn summarize_against(parquet: &Path, reference: &str) -> anyhow::Result<Summary> {
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
    let infra = collect(
        base.clone().group_by(keys.clone()).agg([
            u(col("infra")).alias("infra"),
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

    let query_first_turn = quantiles_by(
        &ok,
        &["scenario", "mode", "model", "query_id"],
        "first_turn",
        &[0.5],
    )?;
    let per_query = collect(
        ok.clone()
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
                    first_turn: query_first_turn
                        .get(key.as_slice())
                        .map_or(f64::NAN, |v| v[0]),
                    scenario: s[i].clone(),
                    mode: m[i].clone(),
                    model: mo[i].clone(),
                    query_id: q[i].clone(),
                    n: n[i] as u64,
                    exact: e[i] as u64,
                    infra: 0,
                }
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
            savings_first_turn: None,
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
            first_turn: save("first_turn"),
            billed: save("billed_input"),
        })
    };
    for g in &mut groups {
        // A group without a scored outcome has no token medians to compare.
        if g.n == 0 {
            continue;
        }
        if let Some(s) = against(g, reference) {
            g.savings_first_turn = s.first_turn;
            g.savings_billed = s.billed;
        }
        if reference != ALL_TOOLS {
            g.savings_all_tools = against(g, ALL_TOOLS);
        }
    }

    let passes = (outcomes as usize).div_ceil(PAIRING_PASS).max(1) as u32;
    let mut pairs = mcnemar_pairs(&ok, passes)?;
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
        savings_first_turn: None,
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
    }
}

/// Scenario, model, and the indices of two modes.
type PairKey = (String, String, usize, usize);

/// Outcomes whose pairing keys one pass of [`mcnemar_pairs`] holds at most.
const PAIRING_PASS: usize = 1 << 20;

/// McNemar pairs: for every two modes of a scenario and model, the outcomes of the
/// same query and repeat under both, and how many only one of the two got right.
///
/// Each (scenario, model, query, repeat) becomes two bit sets over the run's modes
/// (which modes ran it, which got it exact), and only the count of each distinct
/// (scenario, model, bit sets) is kept: the pairs of every two modes are counted from
/// those. The per-key step holds one row per query and repeat, so it runs in `passes`
/// passes over disjoint sets of repeats (`repeat % passes`), one per [`PAIRING_PASS`]
/// outcomes; memory stays bounded however many outcomes there are.
fn mcnemar_pairs(ok: &LazyFrame, passes: u32) -> anyhow::Result<Vec<Pair>> {
    let modes = collect(
        ok.clone()
            .select([col("mode").unique().sort(Default::default())]),
    )?;
    let modes = strs(&modes, "mode")?;
    if modes.len() < 2 {
        return Ok(Vec::new());
    }
    let words = modes.len().div_ceil(64);
    // Bit `i % 64` of word `i / 64` stands for mode `i` (in sorted order).
    let word = |w: usize, exact: bool| {
        let mut e = lit(0u64);
        for (i, m) in modes.iter().enumerate().filter(|(i, _)| i / 64 == w) {
            let bit = when(col("mode").eq(lit(m.as_str())))
                .then(lit(1u64 << (i % 64)))
                .otherwise(lit(0u64));
            e = e + if exact {
                bit * col("exact").cast(DataType::UInt64)
            } else {
                bit
            };
        }
        e
    };
    let names = |w: usize| (format!("ran{w}"), format!("exact{w}"));
    // Per scenario, model and pair of modes: (both ran, only the first exact, only the
    // second exact).
    let mut counts: BTreeMap<PairKey, (u64, u64, u64)> = BTreeMap::new();
    for pass in 0..passes {
        let mut bits = Vec::new();
        let mut by = vec![col("scenario"), col("model")];
        for w in 0..words {
            let (ran, exact) = names(w);
            bits.push(word(w, false).sum().alias(ran.as_str()));
            bits.push(word(w, true).sum().alias(exact.as_str()));
            by.push(col(ran.as_str()));
            by.push(col(exact.as_str()));
        }
        let df = collect(
            ok.clone()
                .filter((col("repeat") % lit(passes)).eq(lit(pass)))
                .group_by([
                    col("scenario"),
                    col("model"),
                    col("query_id"),
                    col("repeat"),
                ])
                .agg(bits)
                .group_by(by)
                .agg([len().alias("c")]),
        )?;
        let (s, m, c) = (strs(&df, "scenario")?, strs(&df, "model")?, u64s(&df, "c")?);
        let sets: Vec<(Vec<u64>, Vec<u64>)> = (0..words)
            .map(|w| {
                let (ran, exact) = names(w);
                Ok((u64s(&df, &ran)?, u64s(&df, &exact)?))
            })
            .collect::<PolarsResult<_>>()?;
        let bit =
            |set: &[u64], row: usize, i: usize| set[row * words + i / 64] >> (i % 64) & 1 == 1;
        // Per row, its bit sets word after word.
        let (ran, exact): (Vec<u64>, Vec<u64>) = (0..s.len())
            .flat_map(|row| sets.iter().map(move |(r, e)| (r[row], e[row])))
            .unzip();
        for row in 0..s.len() {
            for a in 0..modes.len() {
                if !bit(&ran, row, a) {
                    continue;
                }
                for b in a + 1..modes.len() {
                    if !bit(&ran, row, b) {
                        continue;
                    }
                    let e = counts
                        .entry((s[row].clone(), m[row].clone(), a, b))
                        .or_default();
                    e.0 += c[row];
                    match (bit(&exact, row, a), bit(&exact, row, b)) {
                        (true, false) => e.1 += c[row],
                        (false, true) => e.2 += c[row],
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(counts
        .into_iter()
        .map(|((scenario, model, a, b), (n, x, y))| Pair {
            scenario,
            model,
            mode_a: modes[a].clone(),
            mode_b: modes[b].clone(),
            n,
            a_only: x,
            b_only: y,
            p_value: mcnemar_exact(x, y),
        })
        .collect())
}

fn u64s(df: &DataFrame, name: &str) -> PolarsResult<Vec<u64>> {
    let c = df.column(name)?.cast(&DataType::UInt64)?;
    Ok(c.u64()?.iter().map(|v| v.unwrap_or(0)).collect())
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
        "savings_first_turn".into(),
        o(&|g| g.savings_first_turn),
    ));
    cols.push(Column::new(
        "savings_billed".into(),
        o(&|g| g.savings_billed),
    ));
    cols.push(Column::new(
        "savings_all_tools_first_turn".into(),
        o(&|g| g.savings_all_tools.and_then(|s| s.first_turn)),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Integer-valued samples with ties, of every length up to 40.
    fn samples() -> Vec<Vec<f64>> {
        (1..=40u64)
            .map(|n| {
                (0..n)
                    .map(|i| ((i * 7919 + n * 31) % 23) as f64 * 97.0)
                    .collect()
            })
            .collect()
    }

    #[test]
    fn histogram_quantiles_are_polars_quantiles_bit_for_bit() {
        for values in samples() {
            let mut hist: BTreeMap<u64, u64> = BTreeMap::new();
            for v in &values {
                *hist.entry(v.to_bits()).or_default() += 1;
            }
            let mut hist: Vec<(f64, u64)> = hist
                .into_iter()
                .map(|(b, c)| (f64::from_bits(b), c))
                .collect();
            hist.sort_by(|a, b| a.0.total_cmp(&b.0));
            let series = Series::new("v".into(), &values);
            let ca = series.f64().unwrap();
            for q in [0.5, 0.95, 0.0, 1.0, 0.33] {
                let polars = ca.quantile(q, QuantileMethod::Linear).unwrap().unwrap();
                assert_eq!(
                    quantile_linear(&hist, q).to_bits(),
                    polars.to_bits(),
                    "q {q} of {values:?}"
                );
            }
            assert_eq!(
                quantile_linear(&hist, 0.5).to_bits(),
                ca.median().unwrap().to_bits()
            );
        }
        assert!(quantile_linear(&[], 0.5).is_nan());
    }

    #[test]
    fn pairs_counted_in_passes_are_the_pairs_of_a_self_join() {
        // 3 queries × 5 repeats under 3 modes, one outcome missing, exactness varied.
        let modes = ["b-mode", "a-mode", "c-mode"];
        let (mut s, mut m, mut q, mut r, mut mo, mut e) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        for query in 0..3u32 {
            for repeat in 0..5u32 {
                for (i, mode) in modes.iter().enumerate() {
                    if (query, repeat, i) == (1, 2, 0) {
                        continue;
                    }
                    s.push("hub");
                    m.push("oracle");
                    q.push(format!("q{query}"));
                    r.push(repeat);
                    mo.push(*mode);
                    e.push(!(query + repeat * 2 + i as u32 * 3).is_multiple_of(4));
                }
            }
        }
        let df = df!(
            "scenario" => s.clone(), "model" => m, "query_id" => q.clone(),
            "repeat" => r.clone(), "mode" => mo.clone(), "exact" => e.clone()
        )
        .unwrap();
        // The self-join, by hand.
        let mut want: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
        for i in 0..s.len() {
            for j in 0..s.len() {
                if q[i] == q[j] && r[i] == r[j] && mo[i] < mo[j] {
                    let c = want
                        .entry((mo[i].to_string(), mo[j].to_string()))
                        .or_default();
                    c.0 += 1;
                    c.1 += (e[i] && !e[j]) as u64;
                    c.2 += (!e[i] && e[j]) as u64;
                }
            }
        }
        assert_eq!(want.len(), 3);
        for passes in [1, 2, 3, 7] {
            let got: BTreeMap<(String, String), (u64, u64, u64)> =
                mcnemar_pairs(&df.clone().lazy(), passes)
                    .unwrap()
                    .into_iter()
                    .map(|p| ((p.mode_a, p.mode_b), (p.n, p.a_only, p.b_only)))
                    .collect();
            assert_eq!(got, want, "{passes} passes");
        }
    }
}
