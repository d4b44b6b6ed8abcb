//! A provider played locally: requests in a provider's documented wire shape are read
//! back into the context discbench sent, answered as discbench's oracle would answer
//! that context (the episode is replayed through the mode's own composite to rebuild
//! its state, so the oracle sees what it would have seen in-process), and billed as
//! the provider documents its prompt cache:
//!
//! - Anthropic (Messages API, Prompt caching page, read 2026-11-25): an entry is
//!   written only at a `cache_control` breakpoint, for a prefix of at least the
//!   model's minimum length; a breakpoint reads the longest earlier entry that ends
//!   at most 20 content blocks before it; `input_tokens` is the uncached rest,
//!   reported beside `cache_read_input_tokens` and `cache_creation_input_tokens`.
//! - OpenAI (Prompt caching guide, read 2026-11-25): automatic for a prompt of at
//!   least 1,024 tokens, in prefix order (tools, instructions, messages), hits in
//!   128-token increments; `input_tokens` includes `cached_tokens`.
//! - Gemini (Context caching page, implicit caching, read 2026-11-28): automatic for
//!   Gemini 2.5 and newer above a minimum per model (2,048 tokens for 2.5, 4,096 for
//!   3.x); the page documents no rule for when a request hits, so the emulation
//!   *assumes* one — the longest earlier prefix, at a piece boundary, once the prompt
//!   reaches the minimum (OpenAI's rule without its steps) — and its agreement with the
//!   prediction shows the two follow one rule, not that Gemini does; `promptTokenCount`
//!   includes `cachedContentTokenCount`, which is left out when nothing was read.
//!
//! Tokens are counted with discbench's own counter over the same pieces its ledger
//! counts (each tool's wire JSON, the system prompt, each message), so that where the
//! emulation follows a documented rule that discbench's prediction also follows, the
//! two must agree exactly; where a rule differs (a minimum length, the lookback, the
//! 128-token increments) the tests say so.

// Each test file uses part of it.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use discbench::environment::Databases;
use discbench::model::backend::{Backend, GroundTruth, Purpose, Request};
use discbench::model::oracle::Oracle;
use discbench::record::OutcomeKey;
use discbench::runner::tally::Tally;
use discbench::runner::{Plan, RunConfig};
use discbench::scenario::{self, Scenario};
use discbench::strategy::{selection, Composite, Level, Mode};
use discbench::tokens::{Counter, Encoding, Ledger};
use discbench::wire::{Context, Message, Response, ToolCall, ToolDef};

/// One unit of the plan: a scenario view under the mode.
struct Unit {
    composite: Arc<Composite>,
    scenario: Arc<Scenario>,
    databases: Arc<Databases>,
}

/// One query (a conversation of one turn or more) as the plan runs it: its unit, and
/// the unit each turn that grows the catalog moves to (indices into `units`).
struct Conv {
    unit: usize,
    stages: Vec<(usize, usize)>,
    query: usize,
}

impl Conv {
    /// The unit turn `t` (0-based) is answered under.
    fn unit_of(&self, t: usize) -> usize {
        self.stages
            .iter()
            .rev()
            .find(|(at, _)| *at <= t)
            .map_or(self.unit, |(_, u)| *u)
    }
}

/// The scenarios under one mode, as a run of them would render them.
pub struct World {
    units: Vec<Unit>,
    convs: Vec<Conv>,
    counter: Counter,
    mode: String,
    /// The selection request's user message → (conversation, turn), for each turn
    /// whose unit runs the selection step; `None` when two turns that expect different
    /// calls send the same one.
    selection: HashMap<String, Option<(usize, usize)>>,
}

impl World {
    /// `scenarios` (files) under `mode` (a preset or spec), rendered as a run with
    /// default settings renders them.
    pub fn new(scenarios: &[&str], mode: &str) -> World {
        let scs: Vec<Scenario> = scenarios
            .iter()
            .map(|p| scenario::load(Path::new(p)).unwrap_or_else(|e| panic!("{p}: {e}")))
            .collect();
        let counter = Counter::new(Encoding::O200kBase);
        let cfg = RunConfig::new(
            "provider",
            vec![Mode::parse(mode).unwrap()],
            vec!["oracle".into()],
        );
        let plan = Plan::build(&scs, &cfg, &counter).unwrap();
        let mut units: Vec<Unit> = Vec::new();
        let mut index: HashMap<usize, usize> = HashMap::new();
        let mut unit = |slot: usize, units: &mut Vec<Unit>| {
            *index.entry(slot).or_insert_with(|| {
                let u = plan.units[slot].get(&counter);
                let run = &plan.scenarios[u.scenario];
                units.push(Unit {
                    composite: u.composite.clone(),
                    scenario: run.scenario.clone(),
                    databases: run.databases.clone(),
                });
                units.len() - 1
            })
        };
        let mut convs = Vec::new();
        for item in &plan.items {
            let at = unit(item.unit, &mut units);
            let stages = (item.stages.iter())
                .map(|&(t, s)| (t, unit(s, &mut units)))
                .collect();
            convs.push(Conv {
                unit: at,
                stages,
                query: item.query,
            });
        }
        let mut selection: HashMap<String, Option<(usize, usize)>> = HashMap::new();
        for (c, conv) in convs.iter().enumerate() {
            let q = &units[conv.unit].scenario.queries[conv.query];
            for t in 0..q.n_turns() {
                let comp = &units[conv.unit_of(t)].composite;
                if !comp.selection_applies() {
                    continue;
                }
                let cx = comp
                    .selection_context(q.turn_text(t), Level::Forced)
                    .unwrap();
                // Two turns may send the same text ("Thanks!"): the answer is the
                // same when their expectations are.
                let expect = |(c, t): (usize, usize)| {
                    let conv: &Conv = &convs[c];
                    let q = &units[conv.unit].scenario.queries[conv.query];
                    serde_json::to_value(q.turn_expect(t)).unwrap()
                };
                let e = selection
                    .entry(user_text(&cx.messages))
                    .or_insert(Some((c, t)));
                if e.is_some_and(|was| expect(was) != expect((c, t))) {
                    *e = None;
                }
            }
        }
        World {
            units,
            convs,
            counter,
            mode: mode.to_string(),
            selection,
        }
    }

    pub fn counter(&self) -> &Counter {
        &self.counter
    }

    /// The conversation and turn a context belongs to: its first user message names
    /// the conversation, the number of user messages the turn, and the system prompt
    /// the unit of that turn.
    fn find(&self, cx: &Context, purpose: Purpose) -> (usize, usize) {
        if let Purpose::Select { .. } = purpose {
            let text = user_text(&cx.messages);
            return self
                .selection
                .get(&text)
                .expect("a selection request of a known turn")
                .unwrap_or_else(|| panic!("two turns send the selection request `{text}`"));
        }
        let first = user_text(&cx.messages);
        let t = (cx.messages.iter())
            .filter(|m| matches!(m, Message::User { .. }))
            .count()
            .saturating_sub(1);
        self.convs
            .iter()
            .enumerate()
            .find(|(_, c)| {
                let q = &self.units[c.unit].scenario.queries[c.query];
                q.n_turns() > t
                    && q.turn_text(0) == first
                    && self.units[c.unit_of(t)].composite.system() == cx.system
            })
            .map(|(i, _)| (i, t))
            .unwrap_or_else(|| panic!("no query `{first}` under this system prompt"))
    }

    /// What the oracle answers to `cx`: the episode so far replayed through the mode's
    /// composite (selection step, retrieval, every call in order, turn by turn), then
    /// the oracle asked with that state.
    pub fn answer(&self, cx: &Context, purpose: Purpose) -> Response {
        self.answer_with(cx, purpose, false).1
    }

    /// What the oracle answers to `cx`, with the provider running the tool search
    /// itself (`native=server`): each search the oracle would make is run here, on the
    /// provider's side, by the same search over the deferred tools, and the oracle is
    /// asked again with what it found, until it makes no more. Returns each search
    /// (what it searched with, what it found) and the answer that follows them.
    pub fn answer_native(
        &self,
        cx: &Context,
        purpose: Purpose,
    ) -> (Vec<(Value, Vec<String>)>, Response) {
        self.answer_with(cx, purpose, true)
    }

    /// The oracle's view of conversation `c` with `state`.
    fn oracle(&self, c: usize, state: Arc<Mutex<discbench::strategy::State>>) -> GroundTruth {
        let conv = &self.convs[c];
        let unit = &self.units[conv.unit];
        let query = &unit.scenario.queries[conv.query];
        GroundTruth {
            expect: query.expect.oracle_view(),
            protocol: unit.composite.clone(),
            state,
            later: (1..query.n_turns())
                .map(|t| {
                    let comp = self.units[conv.unit_of(t)].composite.clone();
                    (query.turn_expect(t).oracle_view(), comp)
                })
                .collect(),
        }
    }

    fn ask(
        &self,
        c: usize,
        state: Arc<Mutex<discbench::strategy::State>>,
        purpose: Purpose,
        cx: &Context,
    ) -> Response {
        let conv = &self.convs[c];
        let unit = &self.units[conv.unit];
        let key = OutcomeKey {
            scenario: unit.scenario.name.clone(),
            query_id: unit.scenario.queries[conv.query].id.clone(),
            mode: self.mode.clone(),
            model: "oracle".into(),
            repeat: 0,
        };
        let mut session = Oracle.open(&key, Some(self.oracle(c, state)));
        block_on(session.respond(&Request {
            purpose,
            context: cx,
        }))
        .unwrap()
        .response
    }

    fn answer_with(
        &self,
        cx: &Context,
        purpose: Purpose,
        server_search: bool,
    ) -> (Vec<(Value, Vec<String>)>, Response) {
        let (c, now) = self.find(cx, purpose);
        let conv = &self.convs[c];
        let first = &self.units[conv.unit];
        let query = &first.scenario.queries[conv.query];
        let mut state = first.composite.new_state();
        if let Purpose::Select { .. } = purpose {
            state.turn = now;
            return (
                Vec::new(),
                self.ask(c, Arc::new(Mutex::new(state)), purpose, cx),
            );
        }
        let mut request = 0;
        let search_call = |query: &Value| ToolCall {
            id: "search".into(),
            name: discbench::strategy::pool::TOOL_SEARCH.into(),
            arguments: query.to_string(),
        };
        let mut t = 0;
        let mut comp = &first.composite;
        let mut unit = first;
        let mut tally = Tally::new(comp);
        let mut ledger = Ledger::default();
        let mut users = 0;
        for m in &cx.messages {
            match m {
                Message::User { .. } => {
                    // A user turn begins: the catalog may grow, the selection step
                    // runs on its text, and retrieval acts on it, as in the episode.
                    t = users;
                    users += 1;
                    unit = &self.units[conv.unit_of(t)];
                    if t > 0 && conv.unit_of(t) != conv.unit_of(t - 1) {
                        unit.composite.grow(&mut state);
                    }
                    comp = &unit.composite;
                    state.turn = t;
                    state.turn_start = state.executed.len();
                    let text = query.turn_text(t);
                    if comp.selection_applies() {
                        if t > 0 {
                            comp.new_turn(&mut state);
                        }
                        let picked = match comp.selection_shortcut(text) {
                            Some(p) => Some(p),
                            None => {
                                let scx = comp.selection_context(text, Level::Forced).unwrap();
                                let mut st = comp.new_state();
                                st.turn = t;
                                let r = self.ask(
                                    c,
                                    Arc::new(Mutex::new(st)),
                                    Purpose::Select {
                                        max: comp.selection_config().max,
                                    },
                                    &scx,
                                );
                                selection::answer_object(&r).map(|o| selection::names_in(&o))
                            }
                        };
                        comp.apply_selection(&mut state, picked.as_deref());
                    }
                    comp.at_query(text, &mut state);
                    tally = Tally::new(comp);
                }
                Message::Assistant {
                    tool_calls,
                    searches,
                    ..
                } => {
                    request += 1;
                    // The provider's own searches of that answer came first.
                    for s in searches {
                        let query: Value = serde_json::from_str(&s.query).unwrap();
                        tally.call(
                            comp,
                            &mut state,
                            &unit.databases,
                            None,
                            &self.counter,
                            &mut ledger,
                            &search_call(&query),
                            request,
                            Vec::new(),
                        );
                    }
                    let seen: Vec<String> = state.loaded_skills.iter().cloned().collect();
                    for call in tool_calls {
                        tally.call(
                            comp,
                            &mut state,
                            &unit.databases,
                            None,
                            &self.counter,
                            &mut ledger,
                            call,
                            request,
                            seen.clone(),
                        );
                    }
                }
                _ => {}
            }
        }
        assert_eq!(t, now);
        let state = Arc::new(Mutex::new(state));
        let mut r = self.ask(c, state.clone(), purpose, cx);
        let mut searches = Vec::new();
        if server_search {
            let search = discbench::strategy::pool::TOOL_SEARCH;
            while r.calls.iter().any(|c| c.name == search) {
                for call in r.calls.iter().filter(|c| c.name == search) {
                    let query: Value = serde_json::from_str(&call.arguments).unwrap();
                    let a = tally.call(
                        comp,
                        &mut state.lock().unwrap(),
                        &unit.databases,
                        None,
                        &self.counter,
                        &mut ledger,
                        &search_call(&query),
                        request + 1,
                        Vec::new(),
                    );
                    let found = match a.effect {
                        discbench::strategy::Effect::Fetched { join, .. } => join,
                        other => panic!("a search the provider runs failed: {other:?}"),
                    };
                    searches.push((query, found));
                }
                r = self.ask(c, state.clone(), purpose, cx);
            }
        }
        // Ids unique in the conversation, as a provider's are.
        for (i, call) in r.calls.iter_mut().enumerate() {
            call.id = format!("toolu_{request}_{i}");
        }
        (searches, r)
    }
}

/// The text of the first user message.
fn user_text(messages: &[Message]) -> String {
    messages
        .iter()
        .find_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Runs a future to completion on this thread (the oracle never waits).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// The context a Messages API request carries, and why it was sent (a forced tool is
/// the selection step's).
pub fn anthropic_context(body: &Value) -> (Context, Purpose) {
    let system = match &body["system"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    // The tools in the prompt: deferred ones and the API's own search tool aside.
    let tools: Vec<ToolDef> = body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter(|t| t["defer_loading"] != json!(true))
                .filter(|t| {
                    !t["type"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("tool_search_tool")
                })
                .map(|t| ToolDef {
                    name: t["name"].as_str().unwrap().to_string(),
                    description: t["description"].as_str().unwrap_or("").to_string(),
                    parameters: t["input_schema"].clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    let forced = body["tool_choice"]["name"].as_str().map(str::to_string);
    let mut names: HashMap<String, String> = HashMap::new();
    let mut messages = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(b) => b.clone(),
            _ => Vec::new(),
        };
        if m["role"] == "assistant" {
            let text: String = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            // The API's own searches: each call block with its result.
            let mut searches = Vec::new();
            for b in blocks
                .iter()
                .filter(|b| b["type"] == "tool_search_tool_result")
            {
                let call = blocks
                    .iter()
                    .find(|c| c["type"] == "server_tool_use" && c["id"] == b["tool_use_id"])
                    .unwrap();
                searches.push(discbench::wire::NativeSearch {
                    raw: json!([call, b]).to_string(),
                    query: call["input"].to_string(),
                    found: b["content"]["tool_references"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r["tool_name"].as_str().unwrap().to_string())
                        .collect(),
                    malformed: None,
                });
            }
            let calls: Vec<ToolCall> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    let id = b["id"].as_str().unwrap().to_string();
                    let name = b["name"].as_str().unwrap().to_string();
                    names.insert(id.clone(), name.clone());
                    ToolCall {
                        id,
                        name,
                        arguments: b["input"].to_string(),
                    }
                })
                .collect();
            messages.push(Message::Assistant {
                content: (!text.is_empty()).then_some(text),
                tool_calls: calls,
                searches,
                echo: None,
            });
        } else {
            for b in &blocks {
                if b["type"] == "tool_result" {
                    let id = b["tool_use_id"].as_str().unwrap().to_string();
                    let (content, references) = match &b["content"] {
                        Value::String(s) => (s.clone(), Vec::new()),
                        other => (
                            other.to_string(),
                            other
                                .as_array()
                                .unwrap()
                                .iter()
                                .filter(|r| r["type"] == "tool_reference")
                                .map(|r| r["tool_name"].as_str().unwrap().to_string())
                                .collect(),
                        ),
                    };
                    messages.push(Message::Tool {
                        name: names.get(&id).cloned().unwrap_or_default(),
                        tool_call_id: id,
                        content,
                        references,
                    });
                } else if b["type"] == "text" {
                    messages.push(Message::User {
                        content: b["text"].as_str().unwrap().to_string(),
                    });
                }
            }
        }
    }
    let purpose = match &forced {
        Some(_) => Purpose::Select { max: 6 },
        None => Purpose::Act,
    };
    (
        Context {
            system,
            tools: tools.into(),
            tool_choice: forced,
            json_mode: false,
            messages,
            allowed: None,
            native: None,
            groups: None,
        },
        purpose,
    )
}

/// A Messages API answer for `r`, with `usage`.
pub fn anthropic_answer(r: &Response, usage: Value) -> Value {
    anthropic_answer_native(&[], "", r, usage)
}

/// A Messages API answer whose searches the API ran itself (`server_tool_use` and
/// `tool_search_tool_result` blocks of the `variant` tool), then `r`.
pub fn anthropic_answer_native(
    searches: &[(Value, Vec<String>)],
    variant: &str,
    r: &Response,
    usage: Value,
) -> Value {
    let mut content = Vec::new();
    for (k, (query, found)) in searches.iter().enumerate() {
        let id = format!("srvtoolu_{k}");
        content.push(json!({"type": "server_tool_use", "id": id,
                            "name": format!("tool_search_tool_{variant}"), "input": query}));
        content.push(json!({"type": "tool_search_tool_result", "tool_use_id": id,
                            "content": {"type": "tool_search_tool_search_result",
                                        "tool_references": found.iter()
                                            .map(|n| json!({"type": "tool_reference", "tool_name": n}))
                                            .collect::<Vec<_>>()}}));
    }
    if let Some(t) = &r.text {
        content.push(json!({"type": "text", "text": t}));
    }
    for c in &r.calls {
        let input: Value = serde_json::from_str(&c.arguments).unwrap_or(json!({}));
        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    json!({
        "id": "msg_local",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": if r.calls.is_empty() { "end_turn" } else { "tool_use" },
        "usage": usage,
    })
}

/// One piece of a request in cache order, with what the ledger counts of it.
#[derive(Debug, Clone)]
pub struct Piece {
    pub hash: u64,
    pub tokens: usize,
    /// Content blocks it is sent as.
    pub blocks: usize,
}

fn hash_of<T: Hash + ?Sized>(x: &T) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}

/// The pieces of `cx` in cache order (tools, system prompt, messages), counted as
/// discbench's ledger counts them.
pub fn pieces(cx: &Context, counter: &Counter) -> Vec<Piece> {
    let mut out: Vec<Piece> = cx
        .tools
        .iter()
        .map(|t| {
            let text = t.wire_json();
            Piece {
                hash: hash_of(&text),
                tokens: counter.count(&text),
                blocks: 1,
            }
        })
        .collect();
    out.push(Piece {
        hash: hash_of(&cx.system),
        tokens: counter.count(&cx.system),
        blocks: 1,
    });
    for m in &cx.messages {
        let blocks = match m {
            Message::Assistant {
                content,
                tool_calls,
                searches,
                ..
            } => usize::from(content.is_some()) + tool_calls.len() + 2 * searches.len(),
            _ => 1,
        };
        out.push(Piece {
            hash: hash_of(m),
            tokens: counter.message(m),
            blocks,
        });
    }
    out
}

/// What a provider's cache did with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Billed {
    /// Every input token.
    pub input: usize,
    pub read: usize,
    pub written: usize,
}

/// Anthropic's prompt cache, as its docs describe it.
pub struct AnthropicCache {
    /// The model's minimum cacheable prefix.
    pub min: usize,
    /// How many content blocks a breakpoint looks back for an earlier entry.
    pub lookback: usize,
    entries: Mutex<HashSet<u64>>,
}

impl AnthropicCache {
    pub fn new(min: usize) -> AnthropicCache {
        AnthropicCache {
            min,
            lookback: 20,
            entries: Mutex::new(HashSet::new()),
        }
    }

    /// Bills a request of `pieces` whose breakpoints end the pieces at `marks`.
    pub fn bill(&self, pieces: &[Piece], marks: &[usize]) -> Billed {
        let mut prefix = Vec::with_capacity(pieces.len());
        let (mut h, mut t) = (0u64, 0usize);
        for p in pieces {
            h = hash_of(&(h, p.hash));
            t += p.tokens;
            prefix.push((h, t));
        }
        let total = t;
        let mut entries = self.entries.lock().unwrap();
        let mut read = 0;
        for &b in marks {
            let mut blocks = 0;
            let mut j = b as isize;
            while j >= 0 && blocks <= self.lookback {
                let at = j as usize;
                if entries.contains(&prefix[at].0) {
                    read = read.max(prefix[at].1);
                    break;
                }
                blocks += pieces[at].blocks;
                j -= 1;
            }
        }
        let mut written = 0;
        for &b in marks {
            let (hash, tokens) = prefix[b];
            if tokens >= self.min && tokens > read && entries.insert(hash) {
                written = written.max(tokens - read);
            }
        }
        Billed {
            input: total,
            read,
            written,
        }
    }
}

/// The pieces a Messages request's breakpoints end: indices into [`pieces`].
pub fn anthropic_marks(body: &Value, cx: &Context) -> Vec<usize> {
    let mut marks = Vec::new();
    let tools = body["tools"].as_array().map_or(0, Vec::len);
    if let Some(ts) = body["tools"].as_array() {
        for (i, t) in ts.iter().enumerate() {
            if t.get("cache_control").is_some() {
                marks.push(i);
            }
        }
    }
    if body["system"]
        .as_array()
        .is_some_and(|b| b.iter().any(|x| x.get("cache_control").is_some()))
    {
        marks.push(tools);
    }
    // A mark on a message's block ends that message's pieces: find the discbench
    // message the marked block belongs to (messages are in order, one piece each).
    let mut piece = tools + 1;
    for m in body["messages"].as_array().unwrap() {
        let blocks: Vec<Value> = match &m["content"] {
            Value::Array(b) => b.clone(),
            other => vec![other.clone()],
        };
        if m["role"] == "assistant" {
            if blocks.iter().any(|b| b.get("cache_control").is_some()) {
                marks.push(piece);
            }
            piece += 1;
        } else {
            for b in &blocks {
                if b.get("cache_control").is_some() {
                    marks.push(piece);
                }
                piece += 1;
            }
        }
    }
    assert_eq!(piece, tools + 1 + cx.messages.len());
    marks
}

/// OpenAI's automatic prompt cache, as its docs describe it.
pub struct OpenAiCache {
    pub min: usize,
    pub increment: usize,
    seen: Mutex<HashSet<u64>>,
}

impl OpenAiCache {
    pub fn new() -> OpenAiCache {
        OpenAiCache::with(1024, 128)
    }

    /// A prefix cache with another minimum and step (Gemini's implicit cache is
    /// emulated as one with a step of 1 token).
    pub fn with(min: usize, increment: usize) -> OpenAiCache {
        OpenAiCache {
            min,
            increment,
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// Bills a request: the longest prefix (at a piece boundary) an earlier request
    /// held, when the prompt is long enough, in whole increments.
    pub fn bill(&self, pieces: &[Piece]) -> Billed {
        let mut seen = self.seen.lock().unwrap();
        let (mut h, mut t) = (0u64, 0usize);
        let mut read = 0;
        let mut prefixes = Vec::new();
        for p in pieces {
            h = hash_of(&(h, p.hash));
            t += p.tokens;
            if seen.contains(&h) {
                read = t;
            }
            prefixes.push(h);
        }
        seen.extend(prefixes);
        let read = if t >= self.min {
            read / self.increment * self.increment
        } else {
            0
        };
        Billed {
            input: t,
            read,
            written: 0,
        }
    }
}

impl Default for OpenAiCache {
    fn default() -> Self {
        OpenAiCache::new()
    }
}

/// A Chat Completions request's context.
pub fn chat_context(body: &Value) -> (Context, Purpose) {
    let msgs = body["messages"].as_array().unwrap();
    let system = msgs
        .iter()
        .find(|m| m["role"] == "system")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    let tools: Vec<ToolDef> = body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| ToolDef {
                    name: t["function"]["name"].as_str().unwrap().to_string(),
                    description: t["function"]["description"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                    parameters: t["function"]["parameters"].clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    let forced = body["tool_choice"]["function"]["name"]
        .as_str()
        .map(str::to_string);
    let messages = msgs
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| match m["role"].as_str().unwrap() {
            "user" => Message::User {
                content: m["content"].as_str().unwrap().to_string(),
            },
            "tool" => Message::Tool {
                tool_call_id: m["tool_call_id"].as_str().unwrap().to_string(),
                name: m["name"].as_str().unwrap_or("").to_string(),
                content: m["content"].as_str().unwrap().to_string(),
                references: Vec::new(),
            },
            _ => Message::Assistant {
                searches: Vec::new(),
                echo: None,
                content: m["content"].as_str().map(str::to_string),
                tool_calls: m["tool_calls"]
                    .as_array()
                    .map(|cs| {
                        cs.iter()
                            .map(|c| ToolCall {
                                id: c["id"].as_str().unwrap().to_string(),
                                name: c["function"]["name"].as_str().unwrap().to_string(),
                                arguments: c["function"]["arguments"].as_str().unwrap().to_string(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            },
        })
        .collect();
    let purpose = match &forced {
        Some(_) => Purpose::Select { max: 6 },
        None => Purpose::Act,
    };
    (
        Context {
            system,
            tools: tools.into(),
            tool_choice: forced,
            json_mode: false,
            messages,
            allowed: None,
            native: None,
            groups: None,
        },
        purpose,
    )
}

/// The functions of a tool list (`tools` of a request, or of a `tool_search_output`),
/// each with the namespace it is in: namespaces are opened, and every one is checked
/// to be whole (a name, a description, at least one function).
pub fn responses_functions(tools: &Value) -> Vec<(Option<&str>, &Value)> {
    let mut out = Vec::new();
    for t in tools.as_array().into_iter().flatten() {
        if t["type"] == "namespace" {
            let name = t["name"].as_str().expect("a namespace has a name");
            assert!(!name.is_empty());
            assert!(
                t["description"].as_str().is_some_and(|d| !d.is_empty()),
                "namespace `{name}` has no description"
            );
            let fs = t["tools"].as_array().expect("a namespace has tools");
            assert!(!fs.is_empty(), "namespace `{name}` is empty");
            for f in fs {
                assert_eq!(f["type"], "function", "{f}");
                out.push((Some(name), f));
            }
        } else if t["type"] == "function" {
            out.push((None, t));
        }
    }
    out
}

/// Every function a Responses request can name — its tools and what its searches
/// loaded — with its namespace.
pub fn responses_namespaces(body: &Value) -> HashMap<String, Option<String>> {
    let mut lists = vec![&body["tools"]];
    for item in body["input"].as_array().into_iter().flatten() {
        if item["type"] == "tool_search_output" {
            lists.push(&item["tools"]);
        }
    }
    let mut out = HashMap::new();
    for l in &lists {
        for (ns, f) in responses_functions(l) {
            let name = f["name"].as_str().unwrap().to_string();
            let ns = ns.map(str::to_string);
            let before = out.insert(name.clone(), ns.clone());
            assert!(
                before.is_none() || before == Some(ns),
                "`{name}` is in two namespaces"
            );
        }
    }
    out
}

/// A Responses API request's context (`store: false`: the whole conversation). Each
/// `function_call` sent back must name the namespace its function is in (and none
/// when it is in none).
pub fn responses_context(body: &Value) -> (Context, Purpose) {
    let tools: Vec<ToolDef> = responses_functions(&body["tools"])
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| t["defer_loading"] != json!(true))
        .map(|t| ToolDef {
            name: t["name"].as_str().unwrap().to_string(),
            description: t["description"].as_str().unwrap_or("").to_string(),
            parameters: t["parameters"].clone(),
        })
        .collect();
    let namespaces = responses_namespaces(body);
    let forced = (body["tool_choice"]["type"] == "function")
        .then(|| body["tool_choice"]["name"].as_str().unwrap().to_string());
    let allowed = (body["tool_choice"]["type"] == "allowed_tools").then(|| {
        body["tool_choice"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    });
    let mut names: HashMap<String, String> = HashMap::new();
    let mut messages: Vec<Message> = Vec::new();
    let mut open: Option<Value> = None;
    let search = discbench::strategy::pool::TOOL_SEARCH;
    for item in body["input"].as_array().unwrap() {
        match (item["type"].as_str(), item["role"].as_str()) {
            (Some("tool_search_call"), _) if item["execution"] == "client" => {
                let id = item["call_id"].as_str().unwrap().to_string();
                names.insert(id.clone(), search.to_string());
                let call = ToolCall {
                    id,
                    name: search.to_string(),
                    arguments: item["arguments"].to_string(),
                };
                match messages.last_mut() {
                    Some(Message::Assistant { tool_calls, .. }) => tool_calls.push(call),
                    _ => messages.push(Message::assistant(None, vec![call])),
                }
            }
            (Some("tool_search_output"), _) if item["execution"] == "client" => {
                let id = item["call_id"].as_str().unwrap().to_string();
                messages.push(Message::Tool {
                    name: search.to_string(),
                    tool_call_id: id,
                    content: item["tools"].to_string(),
                    references: responses_functions(&item["tools"])
                        .iter()
                        .map(|(_, t)| t["name"].as_str().unwrap().to_string())
                        .collect(),
                });
            }
            (Some("tool_search_call"), _) => open = Some(item.clone()),
            (Some("tool_search_output"), _) => {
                let call = open.take().unwrap();
                let s = discbench::wire::NativeSearch {
                    raw: json!([call, item]).to_string(),
                    query: call["arguments"].to_string(),
                    found: responses_functions(&item["tools"])
                        .iter()
                        .map(|(_, t)| t["name"].as_str().unwrap().to_string())
                        .collect(),
                    malformed: None,
                };
                match messages.last_mut() {
                    Some(Message::Assistant {
                        searches,
                        tool_calls,
                        ..
                    }) if tool_calls.is_empty() => searches.push(s),
                    _ => messages.push(Message::Assistant {
                        content: None,
                        tool_calls: Vec::new(),
                        searches: vec![s],
                        echo: None,
                    }),
                }
            }
            (Some("function_call"), _) => {
                let id = item["call_id"].as_str().unwrap().to_string();
                let name = item["name"].as_str().unwrap().to_string();
                if let Some(ns) = namespaces.get(&name) {
                    assert_eq!(
                        item["namespace"].as_str(),
                        ns.as_deref(),
                        "the namespace of a call of `{name}`"
                    );
                }
                names.insert(id.clone(), name.clone());
                let call = ToolCall {
                    id,
                    name,
                    arguments: item["arguments"].as_str().unwrap().to_string(),
                };
                // Calls after an assistant message (or after other calls of the same
                // answer) belong to it.
                match messages.last_mut() {
                    Some(Message::Assistant { tool_calls, .. }) => tool_calls.push(call),
                    _ => messages.push(Message::assistant(None, vec![call])),
                }
            }
            (Some("function_call_output"), _) => {
                let id = item["call_id"].as_str().unwrap().to_string();
                messages.push(Message::Tool {
                    name: names.get(&id).cloned().unwrap_or_default(),
                    tool_call_id: id,
                    content: item["output"].as_str().unwrap().to_string(),
                    references: Vec::new(),
                });
            }
            (_, Some("assistant")) => {
                // An input message: its text as `content` (the output form would need
                // the item's id, status and annotations).
                let text = item["content"]
                    .as_str()
                    .unwrap_or_else(|| panic!("an assistant message's content is text: {item}"));
                messages.push(Message::assistant(Some(text.to_string()), Vec::new()));
            }
            (_, Some("user")) => messages.push(Message::User {
                content: item["content"].as_str().unwrap().to_string(),
            }),
            other => panic!("an input item discbench does not send: {other:?} {item}"),
        }
    }
    let purpose = match &forced {
        Some(_) => Purpose::Select { max: 6 },
        None => Purpose::Act,
    };
    (
        Context {
            system: body["instructions"].as_str().unwrap_or("").to_string(),
            tools: tools.into(),
            tool_choice: forced,
            json_mode: body["text"]["format"]["type"] == "json_object",
            messages,
            allowed,
            native: None,
            groups: None,
        },
        purpose,
    )
}

/// A Responses API answer for `r`, with `usage`, to a request with `body`.
pub fn responses_answer(body: &Value, r: &Response, usage: Value) -> Value {
    responses_answer_native(&[], body, r, usage)
}

/// A Responses API answer whose searches the server ran (hosted `tool_search_call`
/// and `tool_search_output` items loading the definitions `body` deferred, each in
/// its namespace), then `r`; each call of a function in a namespace names it.
pub fn responses_answer_native(
    searches: &[(Value, Vec<String>)],
    body: &Value,
    r: &Response,
    usage: Value,
) -> Value {
    let functions = responses_functions(&body["tools"]);
    let namespace = |ns: &str| {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == "namespace" && t["name"] == ns)
            .unwrap()
            .clone()
    };
    let mut output = Vec::new();
    for (k, (query, found)) in searches.iter().enumerate() {
        output.push(
            json!({"type": "tool_search_call", "id": format!("tsc_{k}"), "call_id": null,
                           "execution": "server", "arguments": query, "status": "completed"}),
        );
        // What was found, each in its namespace (the namespace's first find places it).
        let mut tools: Vec<Value> = Vec::new();
        for n in found {
            let (ns, f) = functions
                .iter()
                .find(|(_, t)| t["name"] == json!(n) && t["defer_loading"] == json!(true))
                .unwrap_or_else(|| panic!("`{n}` was not deferred"));
            match ns {
                None => tools.push((*f).clone()),
                Some(ns) => {
                    let at = match tools.iter().position(|t| t["name"] == json!(ns)) {
                        Some(at) => at,
                        None => {
                            let mut wrapper = namespace(ns);
                            wrapper["tools"] = json!([]);
                            tools.push(wrapper);
                            tools.len() - 1
                        }
                    };
                    tools[at]["tools"]
                        .as_array_mut()
                        .unwrap()
                        .push((*f).clone());
                }
            }
        }
        output.push(
            json!({"type": "tool_search_output", "id": format!("tso_{k}"), "call_id": null,
                           "execution": "server", "status": "completed", "tools": tools}),
        );
    }
    if let Some(t) = &r.text {
        output.push(
            json!({"type": "message", "id": "msg_local", "role": "assistant",
                           "status": "completed",
                           "content": [{"type": "output_text", "text": t, "annotations": []}]}),
        );
    }
    for (i, c) in r.calls.iter().enumerate() {
        let mut item = json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": c.id,
                              "name": c.name, "arguments": c.arguments, "status": "completed"});
        if let Some((Some(ns), _)) = functions.iter().find(|(_, t)| t["name"] == json!(c.name)) {
            item["namespace"] = json!(ns);
        }
        output.push(item);
    }
    json!({"id": "resp_local", "object": "response", "status": "completed",
           "output": output, "usage": usage})
}

/// The context a `generateContent` request carries, and why it was sent (mode `ANY`
/// with one allowed name is the selection step's forced call). Function responses are
/// paired with the calls of the model turn before them by order (and by `id` where
/// the call had one); a call without an id gets one here.
pub fn gemini_context(body: &Value) -> (Context, Purpose) {
    let text_of = |c: &Value| -> String {
        (c["parts"].as_array().into_iter().flatten())
            .filter_map(|p| p["text"].as_str())
            .collect()
    };
    let system = text_of(&body["systemInstruction"]);
    let tools: Vec<ToolDef> = (body["tools"].as_array().into_iter().flatten())
        .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
        .map(|d| {
            assert!(
                d.get("parameters").is_none(),
                "parameters beside parametersJsonSchema"
            );
            ToolDef {
                name: d["name"].as_str().unwrap().to_string(),
                description: d["description"].as_str().unwrap_or("").to_string(),
                parameters: d["parametersJsonSchema"].clone(),
            }
        })
        .collect();
    let config = &body["toolConfig"]["functionCallingConfig"];
    let names = || -> Vec<String> {
        (config["allowedFunctionNames"]
            .as_array()
            .into_iter()
            .flatten())
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
    };
    let (forced, allowed) = match config["mode"].as_str() {
        Some("ANY") => {
            let n = names();
            assert_eq!(n.len(), 1, "ANY forces one named call here");
            (Some(n[0].clone()), None)
        }
        Some("VALIDATED") => (None, Some(names())),
        Some("AUTO") | None => {
            assert!(config.get("allowedFunctionNames").is_none());
            (None, None)
        }
        Some(other) => panic!("mode {other}"),
    };
    let mut messages = Vec::new();
    // The calls of the last model turn not yet answered: (id, name).
    let mut open: Vec<(String, String)> = Vec::new();
    for (i, c) in body["contents"].as_array().unwrap().iter().enumerate() {
        let parts = c["parts"].as_array().expect("a content has parts");
        assert!(!parts.is_empty(), "a content with no parts");
        if c["role"] == "model" {
            let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
            let calls: Vec<ToolCall> = (parts.iter())
                .filter_map(|p| p.get("functionCall"))
                .enumerate()
                .map(|(k, f)| ToolCall {
                    id: f["id"]
                        .as_str()
                        .map_or_else(|| format!("g{i}_{k}"), str::to_string),
                    name: f["name"].as_str().unwrap().to_string(),
                    arguments: f["args"].to_string(),
                })
                .collect();
            open = calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone()))
                .collect();
            open.reverse();
            messages.push(Message::Assistant {
                content: (!text.is_empty()).then_some(text),
                tool_calls: calls,
                searches: Vec::new(),
                echo: None,
            });
        } else {
            assert_eq!(c["role"], "user");
            for p in parts {
                if let Some(r) = p.get("functionResponse") {
                    let (id, name) = open.pop().expect("a response to a call");
                    assert_eq!(r["name"].as_str().unwrap(), name, "responses in call order");
                    if let Some(rid) = r["id"].as_str() {
                        assert_eq!(rid, id, "a response echoes its call's id");
                    }
                    messages.push(Message::Tool {
                        tool_call_id: id,
                        name,
                        content: r["response"]["output"].as_str().unwrap().to_string(),
                        references: Vec::new(),
                    });
                } else {
                    messages.push(Message::User {
                        content: p["text"].as_str().unwrap().to_string(),
                    });
                }
            }
        }
    }
    let json_mode = body["generationConfig"]["responseMimeType"] == "application/json";
    let purpose = match &forced {
        Some(_) => Purpose::Select { max: 6 },
        None if json_mode => Purpose::Select { max: 6 },
        None => Purpose::Act,
    };
    (
        Context {
            system,
            tools: tools.into(),
            tool_choice: forced,
            json_mode,
            messages,
            allowed,
            native: None,
            groups: None,
        },
        purpose,
    )
}

/// A `generateContent` answer for `r`: a text part, then a `functionCall` part per
/// call (with its `id` when `ids`), `signature` as the `thoughtSignature` of the first
/// call's part (of the last part when there is no call), as Gemini 3 places them.
pub fn gemini_answer(r: &Response, usage: Value, ids: bool, signature: Option<&str>) -> Value {
    let mut parts = Vec::new();
    if let Some(t) = &r.text {
        parts.push(json!({ "text": t }));
    }
    let first_call = parts.len();
    for c in &r.calls {
        let args: Value = serde_json::from_str(&c.arguments).unwrap_or(json!({}));
        let mut f = json!({"name": c.name, "args": args});
        if ids {
            f["id"] = json!(c.id);
        }
        parts.push(json!({ "functionCall": f }));
    }
    if parts.is_empty() {
        parts.push(json!({"text": ""}));
    }
    if let Some(sig) = signature {
        let at = if r.calls.is_empty() {
            parts.len() - 1
        } else {
            first_call
        };
        parts[at]["thoughtSignature"] = json!(sig);
    }
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": usage,
        "modelVersion": "gemini-test",
    })
}

/// The names `rule`'s provider is sent for every tool name the scenarios' catalogs
/// render, both ways: a local provider reads what it receives back into the names
/// discbench renders (and the oracle knows) with it.
pub fn rendered_names(
    scenarios: &[&str],
    rule: &discbench::names::NameRule,
) -> discbench::names::NameMap {
    let mut rendered: Vec<ToolDef> = Vec::new();
    for sc in scenarios {
        let catalog = scenario::load(Path::new(sc)).unwrap().catalog;
        for (name, _) in catalog.exposed_tool_names() {
            rendered.push(ToolDef {
                name,
                description: String::new(),
                parameters: json!({}),
            });
        }
    }
    discbench::names::NameMap::of(
        &Context {
            tools: rendered.into(),
            ..Default::default()
        },
        rule,
    )
    .unwrap_or_default()
}
