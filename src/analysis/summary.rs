//! The summary of a run: per scenario × mode × model groups, per query rows and paired
//! tests — what every report and the CI gate read, as `summary.json` holds it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::{PassK, Rate};

/// Protocol counters whose rate (share of outcomes where the counter is above zero)
/// is reported, each with its Wilson interval: the common ones, with the counters
/// strategies define ([`crate::strategy::defined::DEFINED`]) after `not_surfaced`.
pub fn protocol_rates() -> Vec<&'static str> {
    const BEFORE: [&str; 7] = [
        "blind_calls",
        "unknown_target",
        "bad_subcommand",
        "schema_violation",
        "not_loaded",
        "not_surfaced",
        "not_allowed",
    ];
    const AFTER: [&str; 9] = [
        "unloaded_calls",
        "repeat_call",
        "overfetch",
        "hit_max_requests",
        "empty_answers",
        "text_calls",
        "refusals",
        "truncated",
        "context_overflow",
    ];
    BEFORE
        .into_iter()
        .chain(crate::strategy::defined::DEFINED.iter().map(|k| k.name))
        .chain(AFTER)
        .collect()
}

/// The ledger layers, in report order.
pub const LAYERS: [&str; 11] = [
    "system",
    "tool_defs",
    "fetched",
    "results",
    "output",
    "selection",
    "first_request",
    "billed_input",
    "peak_context",
    "cached_prefix",
    "billed_cached",
];

/// Median and 95th percentile (linear interpolation) of one token layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub median: f64,
    pub p95: f64,
}

/// One scenario × mode × model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub scenario: String,
    pub mode: String,
    pub model: String,
    /// Outcomes scored (infra errors excluded).
    pub n: u64,
    pub infra_errors: u64,
    pub catalog_size: u64,
    pub exact: Rate,
    pub first_call_correct: Rate,
    pub forbidden_hit: Rate,
    /// Share of outcomes with at least one protocol error.
    pub protocol_error: Rate,
    /// Per protocol counter ([`protocol_rates`]), the share of outcomes where it
    /// fired. Empty in summaries written before it existed.
    #[serde(default)]
    pub protocol_rates: BTreeMap<String, Rate>,
    pub abstain: Option<Rate>,
    pub args_ok: Option<Rate>,
    pub schema_valid: Option<Rate>,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub tokens: BTreeMap<String, Stat>,
    /// `1 - median(first_request) / median(first_request of the reference)`, same scenario
    /// and model; the reference is `legacy` (FIM One's framing) unless the run names
    /// another ([`Summary::savings_reference`]).
    #[serde(alias = "savings_first_turn")]
    pub savings_first_request: Option<f64>,
    /// The same for billed input tokens.
    pub savings_billed: Option<f64>,
    /// The same two against `all-tools` (every definition in every request, no
    /// selection step), when the run holds it and it is not the reference: what a
    /// strategy saves against loading everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savings_all_tools: Option<Savings>,
    pub pass: PassK,
    /// Recall@k and MRR of the expected addresses among what was surfaced to the
    /// model, over the outcomes that expect a call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surfacing: Option<SurfacingStat>,
    /// What the provider reported it billed, summed over the group's outcomes that
    /// carry usage (real models only), beside discbench's own count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_usage: Option<ProviderUsage>,
    /// What the group cost, when its model has prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<Cost>,
    /// The provider's prompt cache beside discbench's prediction, when the provider
    /// reported cache figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheStat>,
    /// Conversations (queries of several user turns): the conversation-level figures.
    /// The group's own figures are then per turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<ConvStat>,
}

/// The conversation-level figures of a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvStat {
    /// Conversations scored (infra errors apart).
    pub n: u64,
    /// Conversations exact: every turn exact.
    pub exact: Rate,
    /// A conversation's billed input, whole, and the same with every cacheable prefix
    /// a cache hit.
    pub billed_input: Stat,
    pub billed_cached: Stat,
    /// By turn index (from 1).
    pub by_turn: Vec<TurnPoint>,
    /// (turn, conversations whose first failing turn it is), by turn.
    pub first_failing: Vec<(u64, u64)>,
}

/// The turns at one index of a group's conversations.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TurnPoint {
    pub turn: u64,
    /// Conversations that reached this turn.
    pub n: u64,
    pub exact: Rate,
    /// Median billed input through this turn (cumulative), and with the cache.
    pub cum_billed: f64,
    pub cum_billed_cached: f64,
}

/// The surfacing measures of a group: means over its outcomes that expect a call.
/// Recall@k and MRR are means over the outcomes whose mode ranks what it shows, and
/// absent when none does (see [`crate::score::surfacing`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SurfacingStat {
    /// Outcomes measured.
    pub n: u64,
    pub k: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_at_k: Option<f64>,
    pub recall: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mrr: Option<f64>,
    /// Outcomes recall@k and MRR are measured on (those with an expected address the
    /// mode ranks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranked_n: Option<u64>,
}

/// What a group saves against another mode of its scenario and model, of medians.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Savings {
    #[serde(alias = "first_turn")]
    pub first_request: Option<f64>,
    pub billed: Option<f64>,
}

/// The mode savings are measured against unless a run names another.
pub const DEFAULT_SAVINGS_REFERENCE: &str = "legacy";

/// The mode that `savings_all_tools` is measured against.
pub const ALL_TOOLS: &str = "all-tools";

/// Provider usage of a group, summed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProviderUsage {
    /// Outcomes that carry usage.
    pub outcomes: u64,
    pub input: u64,
    pub output: u64,
    pub cached_input: u64,
    /// discbench's `billed_input` (tiktoken) summed over the same outcomes.
    pub counted_input: u64,
    /// `input / counted_input`: how far the bill is from the count of the sent text
    /// (providers render tool definitions their own way and add framing).
    pub ratio: f64,
}

/// The provider's prompt cache in a group, beside what discbench predicted, summed
/// over the agent-loop requests that reported cache figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CacheStat {
    /// Outcomes with such requests.
    pub outcomes: u64,
    pub requests: u64,
    /// discbench's predicted cacheable prefix (its tokenizer).
    pub predicted: u64,
    /// The provider's cache reads (its tokenizer).
    pub read: u64,
    /// The provider's cache writes.
    pub written: u64,
    /// `read / predicted` (0 when nothing was predicted).
    pub ratio: f64,
    /// Those requests priced with the provider's own figures, and with discbench's
    /// prediction (US dollars; absent without prices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_reported: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_predicted: Option<f64>,
}

/// The cost of a group in US dollars.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub outcomes: u64,
    pub total: f64,
    /// Per outcome.
    pub mean: f64,
}

/// A paired McNemar test of exact match between two modes on the same queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub scenario: String,
    pub model: String,
    pub mode_a: String,
    pub mode_b: String,
    /// Paired items (query × repeat) present under both modes.
    pub n: u64,
    /// Right under `mode_a` only.
    pub a_only: u64,
    /// Right under `mode_b` only.
    pub b_only: u64,
    /// Exact two-sided binomial p-value of the discordant pairs.
    pub p_value: f64,
}

/// One query × mode × model, for `compare` and the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRow {
    pub scenario: String,
    pub mode: String,
    pub model: String,
    pub query_id: String,
    /// Outcomes scored (infra errors excluded); 0 when every outcome of the query
    /// was an infra error.
    pub n: u64,
    pub exact: u64,
    #[serde(alias = "first_turn")]
    pub first_request: f64,
    /// Outcomes of this query that were infra errors (not in `n`).
    #[serde(default)]
    pub infra: u64,
    /// A conversation's turns: how many of its `n` outcomes had each turn exact (turn
    /// 1 first); empty for a single query.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<u64>,
}

/// Everything a report shows, computed from the outcomes alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub run_id: String,
    pub tokenizer: String,
    pub outcomes: u64,
    pub groups: Vec<Group>,
    pub pairs: Vec<Pair>,
    pub queries: Vec<QueryRow>,
    /// The work items the run directory was planned to hold (from its `run.json`);
    /// when more than `outcomes`, the run is incomplete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<u64>,
    /// The mode savings are measured against, when it is not `legacy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub savings_reference: Option<String>,
    /// The queries the run kept (`--query` / `--tag`), when it did not keep all: a
    /// comparison then judges only those queries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
}

impl Summary {
    /// A summary written before format 4 in today's words: the layer `first_turn` is
    /// `first_request`, the rate `hit_max_turns` is `hit_max_requests` (a baseline
    /// committed by an older discbench compares as it was meant).
    pub fn upgrade(&mut self) {
        for g in &mut self.groups {
            if let Some(s) = g.tokens.remove("first_turn") {
                g.tokens.entry("first_request".into()).or_insert(s);
            }
            if let Some(r) = g.protocol_rates.remove("hit_max_turns") {
                g.protocol_rates
                    .entry("hit_max_requests".into())
                    .or_insert(r);
            }
        }
    }

    /// The mode `savings_first_request` and `savings_billed` are measured against.
    pub fn savings_reference(&self) -> &str {
        self.savings_reference
            .as_deref()
            .unwrap_or(DEFAULT_SAVINGS_REFERENCE)
    }

    /// `(done, planned)` when the run holds fewer outcomes than it planned.
    pub fn incomplete(&self) -> Option<(u64, u64)> {
        self.planned
            .filter(|p| self.outcomes < *p)
            .map(|p| (self.outcomes, p))
    }
}
