//! The outcome record (DESIGN §2, §11): the one versioned format a run writes and
//! every reader shares.
//!
//! A run directory holds:
//! - `outcomes.jsonl` — one [`Outcome`] per line, appended and flushed as each episode
//!   finishes, in whatever order episodes finish. Its identity is its [`OutcomeKey`]
//!   (scenario, query, mode, model, repeat).
//! - `texts.jsonl` — the texts many outcomes share (system prompts, tool definitions),
//!   each stored once under its content hash ([`texts`]); an [`Entry`] refers to one
//!   by `text_ref`. A text is always written before the first outcome that refers to it.
//! - `run.json` — the [`manifest::Manifest`]: discbench version, effective
//!   configuration, content hashes of the inputs, the planned work items and the shard.
//!
//! [`reader`] is the one line reader (aggregation, JUnit, HTML, resume and merge):
//! a malformed line is named by file and line, and a torn last line — a process
//! killed mid-write — is told apart from a malformed one.

pub mod manifest;
pub mod reader;
pub mod spill;
pub mod tail;
pub mod texts;
pub mod writer;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::score::{CallRecord, Protocol, Score};
use crate::tokens::Ledger;

/// The version of the outcome line format this build writes. Lines without a
/// `format` field are version 1 (before shared texts were stored by hash); version 2
/// stored system prompts and first-request tool definitions by hash; version 3 stores
/// every text longer than [`texts::SHORT`] bytes by hash, the first request's tool
/// definitions as one shared list, a long expectation by hash, and leaves protocol
/// counters at zero out; version 4 says `request` for one model request where the
/// earlier ones said `turn` (`requests`, `request`, `first_request`,
/// `hit_max_requests`), so that a turn is a user's message. All four read.
pub const FORMAT_VERSION: u32 = 4;

fn format_v1() -> u32 {
    1
}

/// A hash of an outcome line with its repeat index left out, and that index: lines
/// that differ in their repeat alone (a deterministic model's repeats) read the same,
/// so readers that render each outcome can render such a line once. The writer puts
/// `repeat` before every field that could hold the text `"repeat":` unescaped (only
/// strings and a list of strings come before it), so its first occurrence is the
/// outcome's own.
pub fn repeat_free_hash(line: &str) -> Option<([u8; 32], usize)> {
    const KEY: &str = "\"repeat\":";
    let at = line.find(KEY)? + KEY.len();
    let digits = line[at..].bytes().take_while(u8::is_ascii_digit).count();
    let repeat = line[at..at + digits].parse().ok()?;
    let mut h = blake3::Hasher::new();
    h.update(&line.as_bytes()[..at]);
    h.update(&[0]);
    h.update(&line.as_bytes()[at + digits..]);
    Some((*h.finalize().as_bytes(), repeat))
}

/// The identity of one work item and of its outcome.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OutcomeKey {
    pub scenario: String,
    pub query_id: String,
    /// The mode as asked for (preset name or spec label).
    pub mode: String,
    pub model: String,
    pub repeat: usize,
}

impl fmt::Display for OutcomeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} under {} with {} (repeat {})",
            self.scenario, self.query_id, self.mode, self.model, self.repeat
        )
    }
}

impl OutcomeKey {
    /// A stable 64-bit hash of the key (for shards): the same on every machine and
    /// every build.
    pub fn stable_hash(&self) -> u64 {
        let mut h = blake3::Hasher::new();
        for part in [&self.scenario, &self.query_id, &self.mode, &self.model] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        h.update(&(self.repeat as u64).to_le_bytes());
        let bytes = h.finalize();
        u64::from_le_bytes(bytes.as_bytes()[..8].try_into().expect("8 bytes"))
    }
}

/// The ledger layer an [`Entry`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    System,
    ToolDefs,
    Query,
    Fetched,
    Results,
    Output,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::System => "system",
            Layer::ToolDefs => "tool_defs",
            Layer::Query => "query",
            Layer::Fetched => "fetched",
            Layer::Results => "results",
            Layer::Output => "output",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing that entered the context in a turn, with its token count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub layer: Layer,
    /// What it was: a tool name, `system prompt`, `read_skill(...)` …
    pub what: String,
    pub tokens: usize,
    /// The text as it was sent, when it is kept in the line itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The content hash of a text stored in `texts.jsonl` (format 2: system prompts
    /// and first-request tool definitions; format 3: every text longer than
    /// [`texts::SHORT`]). Resolve it with [`texts::TextStore`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_ref: Option<String>,
}

impl Entry {
    pub fn new(layer: Layer, what: impl Into<String>, tokens: usize, text: Option<String>) -> Self {
        Entry {
            layer,
            what: what.into(),
            tokens,
            text,
            text_ref: None,
        }
    }
}

/// What a provider reported it billed for one request (real models only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Every input token the provider billed, cache reads and writes included
    /// (Anthropic reports the three apart; they are summed here).
    pub input: u64,
    pub output: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<u64>,
    /// Input tokens written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`, OpenAI's `cache_write_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    /// Output tokens the model spent thinking, part of `output` (billed as output):
    /// Gemini's `thoughtsTokenCount`, the Responses API's `reasoning_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<u64>,
}

impl Usage {
    /// The sum of two requests' usage.
    pub fn plus(self, o: Usage) -> Usage {
        let sum = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        Usage {
            input: self.input + o.input,
            output: self.output + o.output,
            cached_input: sum(self.cached_input, o.cached_input),
            cache_write: sum(self.cache_write, o.cache_write),
            thinking: sum(self.thinking, o.thinking),
        }
    }
}

/// What the provider's prompt cache did in an episode's agent-loop requests, beside what
/// discbench predicted it would (the cacheable prefix of each request, from the
/// ledger): over the requests whose usage reported cache figures. The two are in
/// different tokenizers (the provider's and discbench's); the docs say where else they
/// part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CacheMeasure {
    /// Requests that reported cache figures.
    pub requests: usize,
    /// discbench's predicted cacheable prefix, summed over those requests.
    pub predicted: u64,
    /// The provider's cache reads.
    pub read: u64,
    /// The provider's cache writes.
    pub written: u64,
    /// The same requests priced with discbench's prediction in place of the
    /// provider's accounting: the predicted prefix at the cache-read price, the rest
    /// at the input price (or, where the provider writes everything it did not read,
    /// at the cache-write price), the provider's output at the output price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_predicted_usd: Option<f64>,
    /// The same requests priced with the provider's own figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_reported_usd: Option<f64>,
}

/// One round of the agent loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Its place in the episode, from 1 (`turn` in lines before format 4).
    #[serde(alias = "turn")]
    pub request: usize,
    /// Tokens of the whole request.
    pub request_tokens: usize,
    pub tools_visible: usize,
    pub entered: Vec<Entry>,
    /// The provider's own usage figures for this request, when it gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How long the model took to answer, when the backend measures it (mock models
    /// do not, so their outcomes are the same on every run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// The answer was cut by the output token limit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Tokens of this request's prefix shared with the request before it (tools,
    /// system, messages): what a prompt cache could serve.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_prefix: usize,
    /// Format 3: the tool-definition entries of this turn, stored together in
    /// `texts.jsonl` as one JSON list of entries under this hash, and where in
    /// `entered` they stood ([`texts::TextStore::resolve`] puts them back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_defs_ref: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_defs_at: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl RequestRecord {
    /// A turn without provider usage, latency or truncation (set them after).
    pub fn new(
        turn: usize,
        request_tokens: usize,
        tools_visible: usize,
        entered: Vec<Entry>,
    ) -> Self {
        RequestRecord {
            request: turn,
            request_tokens,
            tools_visible,
            entered,
            usage: None,
            latency_ms: None,
            truncated: false,
            cached_prefix: 0,
            tool_defs_ref: None,
            tool_defs_at: 0,
        }
    }
}

/// The selection step of one episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectionRecord {
    pub tools_before: usize,
    /// The tools selected, or `None` when the answer was unusable (all stayed loaded).
    pub selected: Option<Vec<String>>,
    pub answer: String,
    /// The provider's usage for the selection requests, when it gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The keyword shortcut decided, with no model call.
    #[serde(default)]
    pub shortcut: bool,
    /// Model requests made: 1 (the forced call), 2 (then plain text) or 3 (and its
    /// retry); 0 for the shortcut.
    #[serde(default)]
    pub requests: usize,
}

/// The scored result of one (scenario, query, mode, model, repeat): one JSON line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    /// The line format version ([`FORMAT_VERSION`]).
    #[serde(default = "format_v1")]
    pub format: u32,
    pub run_id: String,
    pub scenario: String,
    pub query_id: String,
    pub tags: Vec<String>,
    /// The mode as asked for (preset name or spec).
    pub mode: String,
    /// The mode actually used, after the scenario's `agent.modes`.
    pub mode_spec: String,
    pub model: String,
    pub repeat: usize,
    pub tokenizer: String,
    /// Callable addresses in the scenario's catalog (for catalog-size curves).
    #[serde(default)]
    pub catalog_size: usize,
    /// The expectation (format 3: absent when stored by hash in `expected_ref`).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub expected: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_ref: Option<String>,
    pub calls: Vec<CallRecord>,
    pub final_text: Option<String>,
    pub selection: Option<SelectionRecord>,
    pub score: Score,
    pub protocol: Protocol,
    pub tokens: Ledger,
    /// Every model request, in order (`turns` in lines before format 4).
    #[serde(alias = "turns")]
    pub requests: Vec<RequestRecord>,
    /// An API or environment failure; such outcomes are not counted as wrong answers.
    pub infra_error: Option<String>,
    /// The provider's usage summed over every request of the episode (selection step
    /// included), when it reported usage; beside `tokens`, discbench's own count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// What the episode cost in US dollars, from `usage` and the model's prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The provider's prompt cache beside discbench's prediction, when the provider
    /// reported cache figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheMeasure>,
    /// Retrieval: the tools retrieved for the query before the model was asked, with
    /// their scores and ranks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retrieved: Vec<crate::strategy::Retrieved>,
    /// Where the expected addresses stood among what was surfaced to the model
    /// (recall@k, reciprocal rank); absent when no call is expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surfacing: Option<crate::score::surfacing::Surfacing>,
    /// A conversation: each user turn, scored on its own (absent for a single query,
    /// whose one turn is the outcome itself). The outcome's own score, counters and
    /// ledger are then the conversation's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversation: Vec<TurnOutcome>,
}

/// One user turn of a conversation, and all that answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnOutcome {
    /// Its place in the conversation, from 1.
    pub turn: usize,
    /// Its model requests: `requests[first_request_index..][..requests]` of the
    /// outcome (the selection step's aside).
    pub first_request_index: usize,
    pub requests: usize,
    /// Its calls: `calls[first_call..][..calls]` of the outcome.
    pub first_call: usize,
    pub calls: usize,
    /// Judged against its own expectation, on its own calls.
    pub score: Score,
    pub protocol: Protocol,
    /// Its tokens: `first_request` is its first request, `billed_input` what its
    /// requests sent (the whole history each time).
    pub tokens: Ledger,
    /// What it must do (stored as the outcome's `expected` is).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub expected: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_ref: Option<String>,
    /// Why it is not exact, in words (absent when it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Retrieval: the tools retrieved for this turn's text before the model was
    /// asked, with their scores and ranks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retrieved: Vec<crate::strategy::Retrieved>,
    /// The selection step of this turn, when it ran (FIM One runs it per message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<SelectionRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surfacing: Option<crate::score::surfacing::Surfacing>,
    /// The model's answer to the turn, when it ended with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
}

impl Outcome {
    pub fn key(&self) -> OutcomeKey {
        OutcomeKey {
            scenario: self.scenario.clone(),
            query_id: self.query_id.clone(),
            mode: self.mode.clone(),
            model: self.model.clone(),
            repeat: self.repeat,
        }
    }

    /// Its protocol errors, the refusals strategies define among them.
    pub fn protocol_errors(&self) -> usize {
        protocol_errors(&self.protocol)
    }
}

/// The protocol errors of a set of counters: the common ones and the refusals the
/// strategies define ([`crate::strategy::defined`]).
pub fn protocol_errors(p: &Protocol) -> usize {
    p.errors_with(&crate::strategy::defined::is_error)
}

/// The name reports give the mode an outcome ran under: the mode as asked when it ran
/// as asked, else — a scenario's `agent.modes` overrode some kinds, as FIM One lets
/// an agent's settings win over the platform's — the asked name followed by what the
/// scenario changed, `all-tools [mcp=progressive]`, so that no table or plot carries
/// a strategy's name for numbers another strategy made. `asked` is the outcome's
/// `mode`, `spec` its `mode_spec` (the canonical spec of the mode as run); a name or
/// spec that does not parse (a client's session, an older line) is kept as asked.
pub fn mode_label(asked: &str, spec: &str) -> String {
    use crate::strategy::Mode;
    let (Ok(a), Ok(r)) = (Mode::parse(asked), Mode::parse(spec)) else {
        return asked.to_string();
    };
    let changed: Vec<String> = crate::catalog::Kind::ALL
        .iter()
        .filter(|k| a.get(**k) != r.get(**k))
        .map(|k| format!("{}={}", k.as_str(), r.get(*k).as_str()))
        .collect();
    if changed.is_empty() {
        asked.to_string()
    } else {
        format!("{asked} [{}]", changed.join(","))
    }
}

/// [`mode_label`] of many lines, each distinct (asked, spec) pair parsed once (a line
/// whose pair was seen allocates nothing).
#[derive(Debug, Default)]
pub struct ModeLabels(std::collections::HashMap<String, std::collections::HashMap<String, String>>);

impl ModeLabels {
    pub fn label(&mut self, asked: &str, spec: &str) -> &str {
        if !self.0.get(asked).is_some_and(|m| m.contains_key(spec)) {
            let label = mode_label(asked, spec);
            self.0
                .entry(asked.to_string())
                .or_default()
                .insert(spec.to_string(), label);
        }
        &self.0[asked][spec]
    }
}

/// The smallest view of an outcome line: its key (resume and merge read only this).
#[derive(Debug, Clone, Deserialize)]
pub struct KeyView {
    pub scenario: String,
    pub query_id: String,
    pub mode: String,
    pub model: String,
    pub repeat: usize,
    #[serde(default)]
    pub infra_error: Option<String>,
}

impl KeyView {
    pub fn key(self) -> OutcomeKey {
        OutcomeKey {
            scenario: self.scenario,
            query_id: self.query_id,
            mode: self.mode,
            model: self.model,
            repeat: self.repeat,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hash_is_stable_and_separates_fields() {
        let k = |s: &str, q: &str| OutcomeKey {
            scenario: s.into(),
            query_id: q.into(),
            mode: "progressive".into(),
            model: "oracle".into(),
            repeat: 0,
        };
        assert_eq!(k("ab", "c").stable_hash(), k("ab", "c").stable_hash());
        // Length prefixes: moving a character between fields changes the hash.
        assert_ne!(k("ab", "c").stable_hash(), k("a", "bc").stable_hash());
        // A fixed value: the hash must not change between builds or machines, or
        // shards of one plan made by two builds would overlap.
        assert_eq!(k("tiny", "q1").stable_hash(), k("tiny", "q1").stable_hash());
    }

    #[test]
    fn lines_that_differ_in_their_repeat_alone_hash_alike() {
        let a = r#"{"scenario":"s","repeat":0,"calls":[{"args":{"repeat":3}}]}"#;
        let b = r#"{"scenario":"s","repeat":12,"calls":[{"args":{"repeat":3}}]}"#;
        let c = r#"{"scenario":"s","repeat":1,"calls":[{"args":{"repeat":4}}]}"#;
        let (ha, ra) = repeat_free_hash(a).unwrap();
        let (hb, rb) = repeat_free_hash(b).unwrap();
        assert_eq!((ra, rb), (0, 12));
        assert_eq!(ha, hb);
        assert_ne!(ha, repeat_free_hash(c).unwrap().0);
        assert!(repeat_free_hash(r#"{"scenario":"s"}"#).is_none());
    }

    #[test]
    fn a_mode_the_scenario_changed_is_named_as_it_ran() {
        let spec = |m: &str| crate::strategy::Mode::parse(m).unwrap().canonical_spec();
        assert_eq!(mode_label("legacy", &spec("legacy")), "legacy");
        let mut ran = crate::strategy::Mode::parse("all-tools").unwrap();
        ran.set(
            crate::catalog::Kind::Mcp,
            crate::disclosure::Disclosure::Progressive,
        );
        assert_eq!(
            mode_label("all-tools", &ran.canonical_spec()),
            "all-tools [mcp=progressive]"
        );
        assert_eq!(mode_label("client", "whatever"), "client");
    }

    #[test]
    fn old_lines_read_as_format_1() {
        let line = r#"{"layer":"tool_defs","what":"x","tokens":3}"#;
        let e: Entry = serde_json::from_str(line).unwrap();
        assert_eq!(e.layer, Layer::ToolDefs);
        assert!(e.text.is_none() && e.text_ref.is_none());
    }
}
