//! BFCL's four multi-turn categories (`multi_turn_base`, `_miss_func`, `_miss_param`,
//! `_long_context`) as conversation scenarios judged by state.
//!
//! Each entry becomes one MCP server named by its id — the functions of its involved
//! classes, in BFCL's order (`involved_classes`, then each class's file), under their
//! own names, converted as the single-turn importer converts them — and one
//! conversation scoped to it, with `judge: bfcl`: a turn per BFCL turn, the user's
//! message as its text, and BFCL's ground-truth calls as its `reference` (parsed
//! from BFCL's call strings; a positional argument is the parameter at its position).
//! miss_func's held-back functions come at the end of the server's tools and arrive
//! with `adds` on the turn BFCL adds them, whose text is BFCL's own follow-up message;
//! their descriptions lack the Python hint, as BFCL's do. The servers are live: the
//! project's bridge (`bfcl-bridge.py`, written beside the scenario) serves BFCL's own
//! classes from the installed bfcl-eval, over Streamable HTTP, one process per run and
//! a session per conversation, with the state resource the judge compares.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::convert::{questions_of, read_lines, tool_with, ConvertError, Excluded};
use super::pycall::parse_call;

/// The multi-turn categories.
pub const MULTI_TURN: [&str; 4] = [
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
];

/// BFCL's follow-up user message for the turn that brings held-back functions
/// (`DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC`, bfcl-eval 2026.3.23; data of the
/// leaderboard, Apache-2.0).
pub const MORE_FUNCTIONS: &str =
    "I have updated some more functions you can choose from. What about now?";

/// Model requests per user turn: BFCL's `MAXIMUM_STEP_LIMIT` is 20 steps after the
/// first request of a turn, so a turn holds at most 21 requests, and a 21st that still
/// calls ends the conversation (`force_terminated`).
pub const MAX_REQUESTS: u32 = 21;

/// Each class's function documentation file (`MULTI_TURN_FUNC_DOC_FILE_MAPPING`).
const DOC_FILES: [(&str, &str); 8] = [
    ("GorillaFileSystem", "gorilla_file_system.json"),
    ("MathAPI", "math_api.json"),
    ("MessageAPI", "message_api.json"),
    ("TwitterAPI", "posting_api.json"),
    ("TicketAPI", "ticket_api.json"),
    ("TradingBot", "trading_bot.json"),
    ("TravelAPI", "travel_booking.json"),
    ("VehicleControlAPI", "vehicle_control.json"),
];

/// The bridge the scenarios run, written beside them.
pub const BRIDGE: &str = include_str!("../../scripts/bfcl/bridge.py");
/// Its file name beside the scenarios.
pub const BRIDGE_FILE: &str = "bfcl-bridge.py";

/// One converted multi-turn category.
#[derive(Debug, Clone)]
pub struct MultiConverted {
    pub category: String,
    pub file: String,
    /// The scenario (JSON), which includes `catalog`.
    pub scenario: Value,
    /// The catalog fragment, one MCP server per entry: written as
    /// `catalog_file`, included by the scenario and served by the bridge.
    pub catalog: Value,
    pub catalog_file: String,
    pub entries: usize,
    pub kept: usize,
    pub excluded: Vec<Excluded>,
    pub turns: usize,
    /// Reference calls in all.
    pub calls: usize,
}

/// Converts one multi-turn category of a BFCL data directory. `python` is the
/// interpreter the bridge runs with (one with bfcl-eval installed).
pub fn convert_multi_turn(
    dir: &Path,
    category: &str,
    source: &str,
    python: &str,
) -> Result<MultiConverted, ConvertError> {
    let (qfile, file, questions) = questions_of(dir, category)?;
    let answers: BTreeMap<String, Value> = read_lines(&dir.join("possible_answer").join(&file))?
        .into_iter()
        .filter_map(|a| Some((a.get("id")?.as_str()?.to_string(), a)))
        .collect();
    let mut docs: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for (class, f) in DOC_FILES {
        let path = dir.join("multi_turn_func_doc").join(f);
        docs.insert(class, read_lines(&path)?);
    }
    let mut servers = Vec::new();
    let mut queries = Vec::new();
    let mut excluded = Vec::new();
    let (mut turns, mut calls) = (0, 0);
    for (line, q) in questions.iter().enumerate() {
        let Some(id) = q.get("id").and_then(Value::as_str) else {
            return Err(ConvertError::Bad(
                qfile.clone(),
                line + 1,
                "an entry without `id`".into(),
            ));
        };
        let answer = answers.get(id).and_then(|a| a.get("ground_truth"));
        match entry(id, q, answer, &docs, category) {
            Ok(e) => {
                turns += e.turns;
                calls += e.calls;
                servers.push(e.server);
                queries.push(e.query);
            }
            Err(reason) => excluded.push(Excluded {
                id: id.to_string(),
                reason,
            }),
        }
    }
    let kept = queries.len();
    let catalog_file = format!("bfcl-{category}.catalog.json");
    let scenario = json!({
        "name": format!("bfcl-{category}"),
        "description": format!(
            "BFCL {category} ({file}, {source}), converted by `discbench import bfcl`: \
             {kept} of {} entries ({} excluded), {turns} turns judged by state on BFCL's own \
             classes (bfcl-bridge.py). Data: Berkeley Function Calling Leaderboard, Apache-2.0.",
            questions.len(),
            excluded.len()
        ),
        "catalog": {"include": [{
            "path": catalog_file,
            "live": {
                "command": [python, format!("{{dir}}/{BRIDGE_FILE}"), "--catalog", format!("{{dir}}/{catalog_file}")],
                "transport": "http",
                "state": "bfcl://state",
                "timeout": 60,
            },
        }]},
        "agent": {"max_requests": MAX_REQUESTS},
        "queries": queries,
    });
    Ok(MultiConverted {
        category: category.to_string(),
        file,
        scenario,
        catalog: json!({"mcp_servers": servers}),
        catalog_file,
        entries: questions.len(),
        kept,
        excluded,
        turns,
        calls,
    })
}

struct Entry {
    server: Value,
    query: Value,
    turns: usize,
    calls: usize,
}

fn entry(
    id: &str,
    q: &Value,
    answer: Option<&Value>,
    docs: &BTreeMap<&str, Vec<Value>>,
    category: &str,
) -> Result<Entry, String> {
    let classes: Vec<&str> = q
        .get("involved_classes")
        .and_then(Value::as_array)
        .ok_or("the entry has no involved_classes")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // Held-back functions, by the turn that brings them.
    let mut held: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    if let Some(m) = q.get("missed_function").and_then(Value::as_object) {
        for (turn, names) in m {
            let t: usize = turn
                .parse()
                .map_err(|_| format!("missed_function has the turn `{turn}`"))?;
            let names: Vec<String> = names
                .as_array()
                .ok_or("missed_function lists no names")?
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect();
            held.insert(t, names);
        }
    }
    let is_held = |n: &str| held.values().any(|v| v.iter().any(|h| h == n));
    let mut shown = Vec::new();
    let mut late = Vec::new();
    let mut order: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for class in &classes {
        let functions = docs
            .get(class)
            .ok_or_else(|| format!("no function docs for the class `{class}`"))?;
        for f in functions {
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
            let held_back = is_held(name);
            let (tool, schema) = tool_with(f, !held_back)?;
            let params: Vec<String> = schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            if order.insert(name.to_string(), params).is_some() {
                return Err(format!("two functions are named `{name}`"));
            }
            if held_back {
                late.push((name.to_string(), tool));
            } else {
                shown.push(tool);
            }
        }
    }
    // Held-back functions at the end, in the order BFCL adds them (by turn, then as
    // listed), as its tool list has them once added.
    let mut tools = shown;
    for names in held.values() {
        for n in names {
            let (_, t) = late
                .iter()
                .find(|(name, _)| name == n)
                .ok_or_else(|| format!("the held-back function `{n}` is not offered"))?;
            tools.push(t.clone());
        }
    }
    let question = q
        .get("question")
        .and_then(Value::as_array)
        .ok_or("the entry has no question")?;
    let truth = answer
        .and_then(Value::as_array)
        .ok_or("the entry has no ground truth")?;
    if truth.len() != question.len() {
        return Err(format!(
            "{} question turns and {} ground-truth turns",
            question.len(),
            truth.len()
        ));
    }
    let mut turns = Vec::new();
    let mut calls = 0;
    for (t, (messages, gt)) in question.iter().zip(truth).enumerate() {
        let messages = messages
            .as_array()
            .ok_or("a turn is not a list of messages")?;
        let mut turn = Map::new();
        match (messages.as_slice(), held.get(&t)) {
            ([], Some(names)) => {
                turn.insert(
                    "adds".into(),
                    json!(names
                        .iter()
                        .map(|n| format!("mcp:{id}/{n}"))
                        .collect::<Vec<_>>()),
                );
                turn.insert("text".into(), json!(MORE_FUNCTIONS));
            }
            ([m], None) if m.get("role").and_then(Value::as_str) == Some("user") => {
                let text = m
                    .get("content")
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .ok_or_else(|| format!("turn {} has an empty user message", t + 1))?;
                turn.insert("text".into(), json!(text));
            }
            _ => {
                return Err(format!(
                    "turn {} is not one user message (nor a turn that adds functions)",
                    t + 1
                ))
            }
        }
        let mut reference = Vec::new();
        for c in gt.as_array().ok_or("a ground-truth turn is not a list")? {
            let s = c.as_str().ok_or("a ground-truth call is not a string")?;
            let call = parse_call(s)?;
            let params = order.get(&call.name).ok_or_else(|| {
                format!(
                    "the ground truth calls `{}`, which is not offered",
                    call.name
                )
            })?;
            let mut args = Map::new();
            for (i, v) in call.positional.into_iter().enumerate() {
                let p = params.get(i).ok_or_else(|| {
                    format!(
                        "`{s}`: more positional arguments than `{}` has parameters",
                        call.name
                    )
                })?;
                args.insert(p.clone(), v);
            }
            for (k, v) in call.keywords {
                if args.insert(k.clone(), v).is_some() {
                    return Err(format!("`{s}`: `{k}` is given twice"));
                }
            }
            reference.push(json!({"address": format!("mcp:{id}/{}", call.name), "args": args}));
        }
        calls += reference.len();
        turn.insert("expect".into(), json!({"reference": reference}));
        turns.push(Value::Object(turn));
    }
    let n = turns.len();
    Ok(Entry {
        server: json!({
            "name": id,
            "description": format!("BFCL entry {id}: {}", classes.join(", ")),
            "tools": tools,
        }),
        query: json!({
            "id": id,
            "scope": [format!("mcp:{id}")],
            "judge": "bfcl",
            "tags": [category],
            "turns": turns,
        }),
        turns: n,
        calls,
    })
}
