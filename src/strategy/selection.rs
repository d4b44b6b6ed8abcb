//! The selection step (FIM One's runtime selection): when a mode offers more tools
//! than a threshold, the model under test first picks at most `max` of them for the
//! query; the rest stay reachable through `request_tools(tool_names)`, whose
//! description lists each unloaded tool with the first 80 characters of its
//! description. If the selection answer is unusable, every tool stays loaded.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::templates::shorten;
use super::templates::TemplateError;
use super::{valid, ProtocolError, Resolution, State, Templates};
use crate::wire::{Context, Message, ToolDef};

pub const REQUEST_TOOLS: &str = "request_tools";
/// Characters of each description shown in `request_tools`.
pub const REQUEST_TOOLS_CHARS: usize = 80;
/// Characters of each description shown to the selection call.
pub const SELECTION_CHARS: usize = 120;

/// When the selection step runs and how many tools it may pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SelectionConfig {
    /// The step runs when the tool count exceeds this.
    pub threshold: usize,
    /// At most this many tools are selected.
    pub max: usize,
}

impl Default for SelectionConfig {
    fn default() -> Self {
        SelectionConfig {
            threshold: 12,
            max: 6,
        }
    }
}

/// The selection request: every tool with a short description, then the query.
pub fn context(
    tools: &[ToolDef],
    query: &str,
    cfg: SelectionConfig,
    t: &Templates,
) -> Result<Context, TemplateError> {
    let list: Vec<Value> = tools
        .iter()
        .map(|x| json!({"name": x.name, "short": shorten(first_line(&x.description), SELECTION_CHARS)}))
        .collect();
    let system = t.render("selection.j2", json!({"tools": list, "max": cfg.max}))?;
    Ok(Context {
        system,
        tools: Default::default(),
        messages: vec![Message::User {
            content: query.to_string(),
        }],
    })
}

fn first_line(s: &str) -> &str {
    s.trim().lines().next().unwrap_or("")
}

/// The tool names in a selection answer: the first JSON array of strings in the text,
/// known names only, at most `max`. `None` when there is no usable array, or when it
/// names tools but none that exists (a garbled answer must not unload everything);
/// `[]` is a usable answer: the query needs no tool.
pub fn parse_answer(answer: &str, tools: &[ToolDef], max: usize) -> Option<Vec<String>> {
    let start = answer.find('[')?;
    let end = answer.rfind(']')?;
    if end < start {
        return None;
    }
    let names: Vec<String> = serde_json::from_str(&answer[start..=end]).ok()?;
    if !names.is_empty() && !names.iter().any(|n| tools.iter().any(|t| &t.name == n)) {
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if tools.iter().any(|t| t.name == n) && !out.contains(&n) && out.len() < max {
            out.push(n);
        }
    }
    Some(out)
}

/// The `request_tools` definition listing the tools not loaded; `None` when all are.
pub fn request_tools_def(
    tools: &[ToolDef],
    active: &BTreeSet<String>,
    t: &Templates,
) -> Result<Option<ToolDef>, TemplateError> {
    let unloaded: Vec<&ToolDef> = tools.iter().filter(|x| !active.contains(&x.name)).collect();
    if unloaded.is_empty() {
        return Ok(None);
    }
    let list: Vec<Value> = unloaded
        .iter()
        .map(|x| json!({"name": x.name, "short": shorten(first_line(&x.description), REQUEST_TOOLS_CHARS)}))
        .collect();
    let names: Vec<&str> = unloaded.iter().map(|x| x.name.as_str()).collect();
    let description = t.render("request_tools.j2", json!({"tools": list}))?;
    Ok(Some(ToolDef {
        name: REQUEST_TOOLS.into(),
        description,
        parameters: json!({
            "type": "object",
            "properties": {"tool_names": {"type": "array", "items": {"type": "string", "enum": names}, "minItems": 1}},
            "required": ["tool_names"]
        }),
    }))
}

/// Loads the named tools from the next turn on.
pub fn resolve(tools: &[ToolDef], args: &Value, state: &mut State) -> Resolution {
    let Some(names) = args.get("tool_names").and_then(Value::as_array) else {
        return Resolution::error(
            ProtocolError::SchemaViolation,
            "`request_tools` needs `tool_names`, a list of tool names",
        );
    };
    let active = state.active.get_or_insert_with(BTreeSet::new);
    // Every name is checked before any is loaded: a refused call changes nothing.
    let mut wanted = Vec::new();
    for n in names {
        let Some(n) = n.as_str() else {
            return Resolution::error(
                ProtocolError::SchemaViolation,
                "`tool_names` must be strings",
            );
        };
        if !tools.iter().any(|t| t.name == n) {
            let unloaded = tools
                .iter()
                .filter(|t| !active.contains(&t.name))
                .map(|t| &t.name);
            return Resolution::error(
                ProtocolError::UnknownTarget,
                format!("no tool `{n}`; {}", valid("tools", unloaded)),
            );
        }
        wanted.push(n);
    }
    let mut loaded = Vec::new();
    for n in wanted {
        if active.insert(n.to_string()) {
            loaded.push(n);
        }
    }
    Resolution::fetched(
        json!({"loaded": loaded, "note": "The tools are available from your next turn on."})
            .to_string(),
        Vec::new(),
    )
}
