//! Flattening: `outcomes.jsonl` streamed line by line into `outcomes.parquet`, one
//! flat row per outcome written in batches, reading only the fields aggregation needs
//! (the outcome line's view: group keys, scores, protocol counters, token layers,
//! provider usage, cost and cache figures).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use anyhow::Context as _;
use polars::prelude::*;

use serde::Deserialize;

use crate::analysis::summary::LAYERS;
use crate::record;
use crate::strategy::defined::DEFINED;

/// Rows per Parquet batch while flattening.
const BATCH: usize = 65_536;

/// The part of an outcome line that aggregation reads; everything else is ignored.
#[derive(Deserialize, Clone)]
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
    /// A conversation's turns: one row each.
    #[serde(default)]
    conversation: Vec<LineTurn>,
}

/// One turn of a conversation, as aggregation reads it.
#[derive(Deserialize, Clone)]
struct LineTurn {
    turn: u32,
    score: LineScore,
    protocol: LineProtocol,
    tokens: BTreeMap<String, u64>,
    #[serde(default)]
    surfacing: Option<LineSurfacing>,
}

/// Where a row stands in its conversation (a single query: turn 1 of 1).
struct RowOf {
    turn: u64,
    turns: u64,
    /// The conversation is exact (every turn is).
    conv_exact: bool,
    /// This turn is the conversation's first that is not exact: counted by turn, the
    /// first failing turns need no grouping by outcome, whose memory would grow with
    /// the number of outcomes.
    first_failed: bool,
    /// The conversation's billed input, whole.
    conv_billed: u64,
    /// Billed input through this turn, and the same with the cache.
    cum_billed: u64,
    cum_billed_cached: u64,
}

#[derive(Deserialize, Clone)]
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

#[derive(Deserialize, Clone)]
struct LineSurfacing {
    /// Absent where the mode ranks nothing.
    #[serde(default)]
    recall_at_k: Option<f64>,
    recall: f64,
    #[serde(default)]
    mrr: Option<f64>,
}

#[derive(Deserialize, Clone)]
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
#[derive(Default, Clone)]
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
    requests: u32,
    hit_max_requests: bool,
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
                        // Lines before format 4 say `hit_max_turns` and `turns`.
                        "hit_max_requests" | "hit_max_turns" => {
                            p.hit_max_requests = map.next_value()?;
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
                        "requests" | "turns" => &mut p.requests,
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
    /// One outcome: one row, or one row per turn of a conversation (what the outcome
    /// carries as a whole — usage, cost, cache — on its first row alone, so that sums
    /// count it once).
    fn push(&mut self, mut l: Line) {
        // Lines before format 4 name the first request's layer `first_turn`.
        if let Some(v) = l.tokens.remove("first_turn") {
            l.tokens.entry("first_request".into()).or_insert(v);
        }
        let billed = |t: &BTreeMap<String, u64>| t.get("billed_input").copied().unwrap_or(0);
        let billed_cached =
            |t: &BTreeMap<String, u64>| t.get("billed_cached").copied().unwrap_or(0);
        if l.conversation.is_empty() {
            let row = RowOf {
                turn: 1,
                turns: 1,
                conv_exact: l.score.exact,
                first_failed: !l.score.exact,
                conv_billed: billed(&l.tokens),
                cum_billed: billed(&l.tokens),
                cum_billed_cached: billed_cached(&l.tokens),
            };
            return self.push_row(l, row);
        }
        let turns = std::mem::take(&mut l.conversation);
        let n = turns.len() as u64;
        let (conv_exact, conv_billed) = (l.score.exact, billed(&l.tokens));
        let first_failed = turns
            .iter()
            .filter(|t| !t.score.exact)
            .map(|t| t.turn)
            .min();
        let (mut cum, mut cum_cached) = (0, 0);
        for (i, t) in turns.into_iter().enumerate() {
            cum += billed(&t.tokens);
            cum_cached += billed_cached(&t.tokens);
            let mut row = l.clone();
            row.score = t.score;
            row.protocol = t.protocol;
            row.tokens = t.tokens;
            row.surfacing = t.surfacing;
            if i > 0 {
                row.usage = None;
                row.cost_usd = None;
                row.cache = None;
            }
            self.push_row(
                row,
                RowOf {
                    turn: t.turn as u64,
                    turns: n,
                    conv_exact,
                    first_failed: first_failed == Some(t.turn),
                    conv_billed,
                    cum_billed: cum,
                    cum_billed_cached: cum_cached,
                },
            );
        }
    }

    fn push_row(&mut self, l: Line, row: RowOf) {
        for (k, v) in [
            ("turn", row.turn),
            ("turns", row.turns),
            ("conv_billed", row.conv_billed),
            ("cum_billed", row.cum_billed),
            ("cum_billed_cached", row.cum_billed_cached),
        ] {
            self.u.entry(k).or_default().push(v);
        }
        self.b.entry("conv_exact").or_default().push(row.conv_exact);
        self.b
            .entry("first_failed")
            .or_default()
            .push(row.first_failed);
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
            ("requests", p.requests),
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
        // What the provider's usage covers: the whole outcome (a conversation's usage
        // sits on its first row, beside that turn's own tokens).
        let billed = row.conv_billed;
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
            ("hit_max_requests", p.hit_max_requests),
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
    let _frugal = crate::memory::frugal();
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
        if batch.len >= BATCH {
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
