//! The selection step, as the seed system (FIM One) runs it.
//!
//! It runs whenever the assembled tool list is longer than a threshold (12), in every
//! mode. First a keyword shortcut, with no model call: the query's words against each
//! tool's name and description; a clear winner (score at least 2 and more than twice
//! the runner-up) is kept directly. Otherwise the model is asked, with a short system
//! message and a user message carrying the query and a compact catalog (one line per
//! tool, description flattened and cut to 80 characters), to answer
//! `{"tools": [...]}` — by a forced call of a `select_tools` function, else in JSON
//! mode when the model has one, else as plain text (each text level retried once with
//! a request to answer JSON only). A level whose request is rejected (a 4xx, an
//! answer that cannot be decoded) gives way to the next. The answer is capped to
//! `max` names before unknown names are dropped; `read_skill` and `web_search` stay
//! loaded whatever was picked; an empty or unusable answer keeps every tool.
//!
//! When the step filtered the list, `request_tools(tool_names)` is offered: its
//! description lists each tool not loaded with the first 80 characters of its
//! description (no ellipsis), and it stays offered once everything is loaded.

use serde::Serialize;
use serde_json::{json, Value};

use super::config::SelectionConfig;
use super::protocol::{ProtocolError, Resolution, State};
use super::templates::{TemplateError, Templates};
use crate::hash::FastSet;
use crate::wire::{Context, Message, Response, ToolDef};

pub const REQUEST_TOOLS: &str = "request_tools";
/// The function the selection answer is forced through.
pub const SELECT_TOOLS: &str = "select_tools";
/// Characters of each description in `request_tools` (cut, no ellipsis).
pub const REQUEST_TOOLS_CHARS: usize = 80;
/// Characters of each description in the selection catalog, `...` included.
pub const CATALOG_CHARS: usize = 80;
/// Tools that stay loaded whatever the selection picked, when they exist.
pub const PINNED: [&str; 2] = ["read_skill", "web_search"];

/// Words that never count in the keyword shortcut: the seed system's list of
/// English function words (plus `use`, `get`, `set`, `make`), reproduced as data.
const STOP_WORDS: [&str; 113] = [
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had",
    "do", "does", "did", "will", "would", "could", "should", "may", "might", "shall", "can", "to",
    "of", "in", "for", "on", "with", "at", "by", "from", "as", "into", "about", "between",
    "through", "during", "before", "after", "above", "below", "up", "down", "out", "off", "over",
    "under", "and", "but", "or", "nor", "not", "so", "yet", "both", "either", "neither", "each",
    "every", "all", "any", "few", "more", "most", "other", "some", "such", "no", "only", "own",
    "same", "than", "too", "very", "just", "because", "if", "when", "while", "how", "what",
    "which", "who", "whom", "this", "that", "these", "those", "i", "me", "my", "we", "our", "you",
    "your", "he", "him", "his", "she", "her", "it", "its", "they", "them", "their", "use", "using",
    "used", "get", "set", "make",
];

static STOP_SET: std::sync::LazyLock<FastSet<&'static str>> =
    std::sync::LazyLock::new(|| STOP_WORDS.into_iter().collect());

/// Lower-cased ASCII letter-and-digit runs longer than one character, stop words out.
fn keywords(text: &str) -> FastSet<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|w| w.len() > 1 && !STOP_SET.contains(w))
        .map(str::to_string)
        .collect()
}

/// Each tool's keywords (name and description), in tool order: what the shortcut
/// matches queries against, made once per scenario × mode.
pub fn tool_keywords(tools: &[ToolDef]) -> Vec<FastSet<String>> {
    tools
        .iter()
        .map(|t| {
            let mut words = keywords(&t.name);
            words.extend(keywords(&t.description));
            words
        })
        .collect()
}

/// The keyword shortcut: the tools sharing the top overlap score with the query, at
/// most `max`, when that score is at least 2 and more than twice the runner-up's;
/// `None` (ask the model) otherwise. `words` is [`tool_keywords`] of `tools`.
pub fn keyword_shortcut(
    tools: &[ToolDef],
    words: &[FastSet<String>],
    query: &str,
    max: usize,
) -> Option<Vec<String>> {
    let q = keywords(query);
    if q.is_empty() {
        return None;
    }
    let mut scores: Vec<(&str, usize)> = tools
        .iter()
        .zip(words)
        .filter_map(|(t, words)| {
            let overlap = q.iter().filter(|w| words.contains(*w)).count();
            (overlap > 0).then_some((t.name.as_str(), overlap))
        })
        .collect();
    // Stable: ties keep the tool order.
    scores.sort_by_key(|s| std::cmp::Reverse(s.1));
    let top = scores.first()?.1;
    let second = scores.get(1).map_or(0, |s| s.1);
    if top < 2 || (second > 0 && top <= 2 * second) {
        return None;
    }
    Some(
        scores
            .iter()
            .filter(|s| s.1 == top)
            .take(max)
            .map(|s| s.0.to_string())
            .collect(),
    )
}

/// `- name: description` per tool, the description's newlines made spaces and cut to
/// [`CATALOG_CHARS`] characters (`...` included).
pub fn compact_catalog(tools: &[ToolDef]) -> String {
    tools
        .iter()
        .map(|t| {
            let d = flatten(&t.description);
            let d = if d.chars().count() > CATALOG_CHARS {
                let cut: String = d.chars().take(CATALOG_CHARS - 3).collect();
                format!("{cut}...")
            } else {
                d
            };
            format!("- {}: {d}", t.name)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Newlines to spaces, surrounding whitespace trimmed.
fn flatten(s: &str) -> String {
    s.replace('\n', " ").trim().to_string()
}

/// The `select_tools` function the answer is forced through.
pub fn select_tools_def(t: &Templates) -> Result<ToolDef, TemplateError> {
    Ok(ToolDef {
        name: SELECT_TOOLS.into(),
        description: t.render("select_tools.j2", ())?,
        parameters: json!({
            "type": "object",
            "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
            "required": ["tools"]
        }),
    })
}

/// How the selection request is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A forced call of [`SELECT_TOOLS`].
    Forced,
    /// A JSON object asked for in JSON mode (models that have one), no tools.
    Json,
    /// Plain text, no tools.
    Text,
}

/// The selection request at one level; `catalog` is [`compact_catalog`] of the tools.
pub fn context(
    catalog: &str,
    query: &str,
    cfg: SelectionConfig,
    level: Level,
    t: &Templates,
) -> Result<Context, TemplateError> {
    let system = t.render("selection_system.j2", ())?;
    let user = t.render(
        "selection.j2",
        json!({"query": query, "catalog": catalog, "max": cfg.max}),
    )?;
    let (tools, tool_choice) = match level {
        Level::Forced => (
            vec![select_tools_def(t)?].into(),
            Some(SELECT_TOOLS.to_string()),
        ),
        Level::Json | Level::Text => (Default::default(), None),
    };
    Ok(Context {
        system,
        tools,
        tool_choice,
        json_mode: level == Level::Json,
        messages: vec![Message::User { content: user }],
        allowed: None,
        native: None,
        groups: None,
    })
}

/// The plain-text request asked again after an answer that held no JSON object.
pub fn retry_context(cx: &Context, answer: &str, t: &Templates) -> Result<Context, TemplateError> {
    let mut cx = cx.clone();
    cx.messages
        .push(Message::assistant(Some(answer.to_string()), Vec::new()));
    cx.messages.push(Message::User {
        content: t.render("selection_reformat.j2", ())?,
    });
    Ok(cx)
}

/// The JSON object an answer carries: the arguments of its first call, else the one in
/// its text (see [`object_in`]). `None` when there is none (the next level is tried).
pub fn answer_object(r: &Response) -> Option<serde_json::Map<String, Value>> {
    if let Some(c) = r.calls.first() {
        if let Ok(Value::Object(o)) = serde_json::from_str(&c.arguments) {
            return Some(o);
        }
    }
    object_in(r.text.as_deref()?)
}

/// The JSON object in a model's text, found as FIM One looks for it: the whole text;
/// else a fenced block (to the last fence, then to the first); else the first `{…}`
/// balanced outside strings that parses, trying each `{` in turn. A JSON value that
/// is found but is not an object (a bare list) is no object.
pub fn object_in(text: &str) -> Option<serde_json::Map<String, Value>> {
    let object = |v: Value| match v {
        Value::Object(o) => Some(o),
        _ => None,
    };
    let t = text.trim();
    if let Ok(v) = serde_json::from_str::<Value>(t) {
        return object(v);
    }
    if let Some(open) = t.find("```") {
        let body = &t[open + 3..];
        let body = body.strip_prefix("json").unwrap_or(body);
        for close in [body.rfind("```"), body.find("```")].into_iter().flatten() {
            if let Ok(v) = serde_json::from_str::<Value>(body[..close].trim()) {
                return object(v);
            }
        }
    }
    let bytes = t.as_bytes();
    let mut start = t.find('{');
    while let Some(s) = start {
        let (mut depth, mut in_string, mut i) = (0usize, false, s);
        while i < bytes.len() {
            match (in_string, bytes[i]) {
                (true, b'\\') => i += 1,
                (true, b'"') => in_string = false,
                (false, b'"') => in_string = true,
                (false, b'{') => depth += 1,
                (false, b'}') => {
                    depth -= 1;
                    if depth == 0 {
                        if let Ok(Value::Object(o)) = serde_json::from_str(&t[s..=i]) {
                            return Some(o);
                        }
                        break;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        start = t[s + 1..].find('{').map(|x| x + s + 1);
    }
    None
}

/// The names an answer object picks, as given: `tools` when it is a list (non-string
/// items written as JSON); empty otherwise.
pub fn names_in(o: &serde_json::Map<String, Value>) -> Vec<String> {
    match o.get("tools") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The tools loaded for picked names: of the first `max` names, the known ones in
/// catalog order, then the pinned tools that exist and were not picked (FIM One
/// appends them after the selection). `None` (every tool stays loaded) when no known
/// name is left.
pub fn loaded_for(picked: &[String], tools: &[ToolDef], max: usize) -> Option<Vec<String>> {
    let first: Vec<&String> = picked.iter().take(max).collect();
    let mut loaded: Vec<String> = tools
        .iter()
        .filter(|t| first.contains(&&t.name))
        .map(|t| t.name.clone())
        .collect();
    if loaded.is_empty() {
        return None;
    }
    for p in PINNED {
        if tools.iter().any(|t| t.name == p) && !loaded.iter().any(|n| n == p) {
            loaded.push(p.to_string());
        }
    }
    Some(loaded)
}

/// The `request_tools` definition, listing the tools not loaded.
pub fn request_tools_def(
    tools: &[ToolDef],
    active: &[String],
    t: &Templates,
) -> Result<ToolDef, TemplateError> {
    request_tools_def_with(tools, &request_tools_shorts(tools), active, t)
}

/// The start of each tool's description as `request_tools` lists it (one line, cut,
/// no ellipsis), in tool order: made once per mode, as every loaded set lists them.
pub fn request_tools_shorts(tools: &[ToolDef]) -> Vec<String> {
    tools
        .iter()
        .map(|x| {
            flatten(&x.description)
                .chars()
                .take(REQUEST_TOOLS_CHARS)
                .collect()
        })
        .collect()
}

/// [`request_tools_def`] with the descriptions' starts made before
/// ([`request_tools_shorts`] of the same tools).
pub fn request_tools_def_with(
    tools: &[ToolDef],
    shorts: &[String],
    active: &[String],
    t: &Templates,
) -> Result<ToolDef, TemplateError> {
    #[derive(Serialize)]
    struct Entry<'a> {
        name: &'a str,
        short: &'a str,
    }
    #[derive(Serialize)]
    struct Listed<'a> {
        tools: Vec<Entry<'a>>,
    }
    let list: Vec<Entry> = tools
        .iter()
        .zip(shorts)
        .filter(|(x, _)| !active.contains(&x.name))
        .map(|(x, short)| Entry {
            name: &x.name,
            short,
        })
        .collect();
    Ok(ToolDef {
        name: REQUEST_TOOLS.into(),
        description: t.render("request_tools.j2", Listed { tools: list })?,
        parameters: json!({
            "type": "object",
            "properties": {"tool_names": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Which tools to add, by name."
            }},
            "required": ["tool_names"]
        }),
    })
}

/// Loads the named tools from the next turn on. Partial success: the answer says
/// which were loaded, which already were, and which do not exist. A call that names
/// nothing that exists is an `unknown_target` error.
pub fn resolve(tools: &[ToolDef], args: &Value, state: &mut State) -> Resolution {
    let Some(names) = args.get("tool_names").and_then(Value::as_array) else {
        return Resolution::error(
            ProtocolError::SchemaViolation,
            "`request_tools` needs `tool_names`, a list of tool names",
        );
    };
    let active = state.active.get_or_insert_with(Vec::new);
    let (mut loaded, mut already, mut unknown) = (Vec::new(), Vec::new(), Vec::new());
    for n in names {
        let n = match n {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if n == REQUEST_TOOLS || active.contains(&n) {
            already.push(n);
        } else if tools.iter().any(|t| t.name == n) {
            active.push(n.clone());
            loaded.push(n);
        } else {
            unknown.push(n);
        }
    }
    let mut parts = Vec::new();
    for (label, list) in [
        ("Loaded", &loaded),
        ("Already loaded", &already),
        ("Not found", &unknown),
    ] {
        if !list.is_empty() {
            parts.push(format!("{label}: {}", list.join(", ")));
        }
    }
    let content = if parts.is_empty() {
        "No tool names given.".to_string()
    } else {
        parts.join(". ")
    };
    if loaded.is_empty() && already.is_empty() && !unknown.is_empty() {
        return Resolution {
            content,
            effect: super::protocol::Effect::Error {
                error: ProtocolError::UnknownTarget,
                malformed: false,
            },
        };
    }
    Resolution::fetched(content, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn the_shortcut_keeps_a_clear_winner_only() {
        let tools = [
            tool("jira__get_issue", "Get a Jira issue by key."),
            tool("slack__post_message", "Post a message to a Slack channel."),
            tool("calculator", "Evaluate arithmetic."),
        ];
        // "slack", "post", "message", "channel" against the Slack tool: 4 vs 0.
        assert_eq!(
            keyword_shortcut(
                &tools,
                &tool_keywords(&tools),
                "Post a message in the Slack channel",
                6
            ),
            Some(vec!["slack__post_message".to_string()])
        );
        // One shared word is not enough.
        assert_eq!(
            keyword_shortcut(&tools, &tool_keywords(&tools), "Open jira", 6),
            None
        );
        // 2 vs 1: not more than twice the runner-up.
        assert_eq!(
            keyword_shortcut(&tools, &tool_keywords(&tools), "jira issue message", 6),
            None,
            "2 (jira, issue) against 1 (message) is not a clear winner"
        );
        // Stop words and one-letter words do not count.
        assert_eq!(
            keyword_shortcut(&tools, &tool_keywords(&tools), "the a of and get", 6),
            None
        );
    }

    #[test]
    fn the_catalog_cuts_at_80_characters_with_the_ellipsis_inside() {
        let long = "x".repeat(100);
        let c = compact_catalog(&[tool("t", &format!("line one\nline {long}"))]);
        let d = c.strip_prefix("- t: ").unwrap();
        assert_eq!(d.chars().count(), 80);
        assert!(
            d.starts_with("line one line xx") && d.ends_with("x..."),
            "{d}"
        );
    }

    #[test]
    fn the_cap_comes_before_unknown_names_are_dropped_and_pins_stay() {
        let tools = [
            tool("a", ""),
            tool("b", ""),
            tool("read_skill", ""),
            tool("web_search", ""),
        ];
        let picked: Vec<String> = ["zz", "a", "b"].map(String::from).to_vec();
        // Pinned tools come after the selected ones.
        assert_eq!(
            loaded_for(&picked, &tools, 2).unwrap(),
            ["a", "read_skill", "web_search"]
        );
        let picked: Vec<String> = ["web_search", "b", "a"].map(String::from).to_vec();
        assert_eq!(
            loaded_for(&picked, &tools, 6).unwrap(),
            ["a", "b", "web_search", "read_skill"],
            "catalog order, then the pins not picked"
        );
        assert_eq!(loaded_for(&[], &tools, 6), None);
        assert_eq!(loaded_for(&["zz".into()], &tools, 6), None);
    }

    #[test]
    fn answers_are_read_from_the_call_or_the_text() {
        let r = Response::call(vec![crate::wire::ToolCall::new(
            "1",
            SELECT_TOOLS,
            &json!({"tools": ["a", 3]}),
        )]);
        assert_eq!(names_in(&answer_object(&r).unwrap()), ["a", "3"]);
        let r = Response::say("Sure: {\"tools\": [\"b\"]} done");
        assert_eq!(names_in(&answer_object(&r).unwrap()), ["b"]);
        assert!(answer_object(&Response::say("[\"b\"]")).is_none());
        // Two objects in prose: the first balanced one that parses, as FIM One reads it.
        let two = "Either {\"tools\": [\"a\"]} or {\"tools\": [\"b\"]}";
        assert_eq!(names_in(&object_in(two).unwrap()), ["a"]);
        // Braces inside strings do not count; a broken candidate is skipped.
        let tricky = "{oops} then {\"tools\": [\"a}\"]}";
        assert_eq!(names_in(&object_in(tricky).unwrap()), ["a}"]);
        let fenced = "Here:\n```json\n{\"tools\": [\"c\"]}\n```";
        assert_eq!(names_in(&object_in(fenced).unwrap()), ["c"]);
        assert!(names_in(&answer_object(&Response::say("{\"tools\": \"b\"}")).unwrap()).is_empty());
    }

    #[test]
    fn request_tools_succeeds_in_part() {
        let tools = [tool("a", ""), tool("b", "")];
        let mut st = State {
            active: Some(vec!["a".to_string()]),
            ..State::default()
        };
        let r = resolve(&tools, &json!({"tool_names": ["a", "b", "c"]}), &mut st);
        assert_eq!(r.content, "Loaded: b. Already loaded: a. Not found: c");
        assert!(matches!(
            r.effect,
            super::super::protocol::Effect::Fetched { .. }
        ));
        assert_eq!(st.active.as_ref().unwrap(), &["a", "b"]);
        let r = resolve(&tools, &json!({"tool_names": ["c"]}), &mut st);
        assert!(matches!(
            r.effect,
            super::super::protocol::Effect::Error {
                error: ProtocolError::UnknownTarget,
                ..
            }
        ));
    }

    #[test]
    fn request_tools_lists_80_characters_without_ellipsis() {
        let t = Templates::builtin();
        let tools = [tool("a", &"y".repeat(120)), tool("b", "short")];
        let def = request_tools_def(&tools, &["b".to_string()], &t).unwrap();
        assert!(
            def.description
                .contains(&format!("- a: {}\n", "y".repeat(80)))
                || def
                    .description
                    .ends_with(&format!("- a: {}", "y".repeat(80)))
        );
        assert!(!def.description.contains("..."));
        assert!(!def.description.contains("- b:"));
        assert!(def.parameters["properties"]["tool_names"]["items"]
            .get("enum")
            .is_none());
        // Everything loaded: still offered, saying so.
        let all = request_tools_def(&tools, &["a".into(), "b".into()], &t).unwrap();
        assert!(!all.description.contains("- "), "{}", all.description);
    }
}
