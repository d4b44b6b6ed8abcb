//! What the lexical model reads of a context: the options it ranks (direct tools, the
//! stubs meta-tools and the system prompt list, tools not loaded yet, searches), what
//! a discover call or a search returned, code mode's declarations, and the text a
//! search is asked with.

use serde_json::{json, Map, Value};

use crate::bm25;
use crate::wire::Context;

#[derive(Debug, Clone)]
pub(super) enum Option_ {
    Direct(String),
    Skill(String),
    Stub {
        tool: String,
        param: String,
        name: String,
    },
    Unloaded(String),
    /// The `tool_search` tool: held-back tools are found by searching.
    Search,
    /// Code mode's `search_api`: the API's functions are found by searching.
    CodeSearch,
    /// Code files: a group's folder, named by the system prompt.
    Folder(String),
}

/// The items a `discover` answer lists, read from its text: per action or tool, its
/// name (a `  name:` line), description (`    description: …`) and parameter schema
/// (`    parameters: {…}` up to the blank line); per table, its name and description
/// (`  name -- description`).
pub(super) fn discovered(content: &str) -> Vec<(String, String, Value)> {
    let mut out: Vec<(String, String, Value)> = Vec::new();
    let mut json_lines: Option<Vec<&str>> = None;
    for line in content.lines() {
        if let Some(buf) = json_lines.as_mut() {
            if line.is_empty() {
                let text = std::mem::take(buf).join("\n");
                if let (Some(last), Ok(v)) = (out.last_mut(), serde_json::from_str(&text)) {
                    last.2 = v;
                }
                json_lines = None;
            } else {
                buf.push(line);
            }
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let body = line.trim();
        if indent == 2 && !body.is_empty() {
            let (name, desc) = match body.split_once(" -- ") {
                Some((n, d)) => (n, d),
                None => (body.trim_end_matches(':'), ""),
            };
            out.push((name.to_string(), desc.to_string(), json!({})));
        } else if indent == 4 {
            if let Some(d) = body.strip_prefix("description: ") {
                if let Some(last) = out.last_mut() {
                    last.1 = d.to_string();
                }
            } else if let Some(p) = body.strip_prefix("parameters: ") {
                if p.starts_with('{') {
                    json_lines = Some(vec![p]);
                }
            }
        }
    }
    if let (Some(buf), Some(last)) = (json_lines, out.last_mut()) {
        if let Ok(v) = serde_json::from_str(&buf.join("\n")) {
            last.2 = v;
        }
    }
    out
}

/// The options a context shows and their BM25 index.
pub(super) type Ranked = (Vec<(Option_, String)>, std::rc::Rc<bm25::Index>);

/// Tool lists (with their system prompt) whose options a thread keeps, and the
/// definitions they may hold together: a list is held beyond its view's life, and a
/// sweep's lists hold up to ten thousand definitions each. Episodes run in plan
/// order, so the next one mostly sends the list the last one did.
const RANKED_HELD: usize = 8;
const RANKED_TOOLS: usize = 20_000;

/// A tool list and system prompt ranked before, with what they showed.
type RankedFor = (
    std::sync::Arc<[crate::wire::ToolDef]>,
    String,
    std::rc::Rc<Ranked>,
);

thread_local! {
    /// The options of the tool lists a thread ranked last. Every episode of a mode
    /// that loads every tool sends the same list (one allocation, shared), so its
    /// options are read and indexed once per thread, not once per episode. The list is
    /// held, so its address cannot be reused for another while it is here.
    static RANKED: std::cell::RefCell<Vec<RankedFor>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// [`options`] of the context and their index, from this thread's memo when the same
/// tool list and system prompt were ranked before.
pub(super) fn ranked(cx: &Context) -> std::rc::Rc<Ranked> {
    let hit = RANKED.with(|m| {
        m.borrow()
            .iter()
            .find(|(tools, system, _)| {
                std::sync::Arc::ptr_eq(tools, &cx.tools) && *system == cx.system
            })
            .map(|(_, _, r)| r.clone())
    });
    if let Some(r) = hit {
        return r;
    }
    let options = options(cx);
    let docs: Vec<String> = options.iter().map(|(_, text)| text.clone()).collect();
    let made = std::rc::Rc::new((options, bm25::Index::cached(&docs)));
    RANKED.with(|m| {
        let mut m = m.borrow_mut();
        let mut held: usize = m.iter().map(|(tools, _, _)| tools.len()).sum();
        while !m.is_empty() && (m.len() >= RANKED_HELD || held + cx.tools.len() > RANKED_TOOLS) {
            held -= m.remove(0).0.len();
        }
        if cx.tools.len() <= RANKED_TOOLS {
            m.push((cx.tools.clone(), cx.system.clone(), made.clone()));
        }
    });
    made
}

/// Every option the context shows, with the text it is ranked by.
pub(super) fn options(cx: &Context) -> Vec<(Option_, String)> {
    let mut out = Vec::new();
    for t in cx.tools.iter() {
        let props = t.parameters.get("properties");
        let enum_of = |p: &str| -> Vec<String> {
            props
                .and_then(|x| x.get(p))
                .and_then(|x| {
                    x.get("enum")
                        .or_else(|| x.get("items").and_then(|i| i.get("enum")))
                })
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        match t.name.as_str() {
            // The skills are the system prompt's `- **name**` stub lines.
            "read_skill" => {
                for line in cx.system.lines() {
                    if let Some((name, _)) = line
                        .strip_prefix("- **")
                        .and_then(|rest| rest.split_once("**"))
                    {
                        out.push((Option_::Skill(name.to_string()), line.to_string()));
                    }
                }
            }
            // The tools not loaded are its description's `- name: description` lines.
            "request_tools" => {
                for line in t.description.lines() {
                    if let Some((name, desc)) = line
                        .strip_prefix("- ")
                        .and_then(|rest| rest.split_once(": "))
                    {
                        let text = format!("{} {desc}", name.replace('_', " "));
                        out.push((Option_::Unloaded(name.to_string()), text));
                    }
                }
            }
            TOOL_SEARCH => out.push((Option_::Search, t.description.clone())),
            SEARCH_API => out.push((Option_::CodeSearch, t.description.clone())),
            // Code files: the groups are the system prompt's `servers/<group>/` lines.
            READ_FILE => {
                for line in cx.system.lines() {
                    if let Some((g, _)) = line
                        .strip_prefix("- `servers/")
                        .and_then(|rest| rest.split_once("/`"))
                    {
                        let text = line.replace(['_', '`', '/'], " ");
                        out.push((Option_::Folder(g.to_string()), text));
                    }
                }
            }
            // Steps toward a function, never options themselves.
            RUN_CODE | LIST_FILES => {}
            // Reading resources is a step toward a tool, never an option itself.
            READ_RESOURCE => {}
            "connector" | "mcp" | "database" => {
                let param = match t.name.as_str() {
                    "connector" => "connector",
                    "mcp" => "server",
                    _ => "database",
                };
                for n in enum_of(param) {
                    let text = line_naming(&t.description, &format!("- {n}:"));
                    out.push((
                        Option_::Stub {
                            tool: t.name.clone(),
                            param: param.into(),
                            name: n,
                        },
                        text.replace('_', " "),
                    ));
                }
            }
            _ => out.push((
                Option_::Direct(t.name.clone()),
                format!("{} {}", t.name.replace('_', " "), t.description),
            )),
        }
    }
    out
}

pub(super) const TOOL_SEARCH: &str = "tool_search";
pub(super) const SEARCH_API: &str = "search_api";
pub(super) const RUN_CODE: &str = "run_code";
pub(super) const LIST_FILES: &str = "list_files";
pub(super) const READ_FILE: &str = "read_file";

/// One function declaration as code mode writes it.
pub(super) struct Declared {
    pub(super) group: String,
    pub(super) name: String,
    /// Its doc comment's text.
    pub(super) doc: String,
    /// Its parameters, read back into a JSON Schema (top level only).
    pub(super) schema: Value,
}

/// The declarations a text holds: each `declare namespace api.<group> {` block, its
/// doc comment, and its function's top-level parameters (`    key?: type;` lines).
pub(super) fn declarations(content: &str) -> Vec<Declared> {
    let mut out: Vec<Declared> = Vec::new();
    for block in content.split("declare namespace api.").skip(1) {
        let Some((group, body)) = block.split_once(" {") else {
            continue;
        };
        let Some(name) = body
            .lines()
            .find_map(|l| l.strip_prefix("  function "))
            .and_then(|r| r.split('(').next())
        else {
            continue;
        };
        let doc: Vec<&str> = body
            .lines()
            .filter_map(|l| l.strip_prefix("   * ").or_else(|| l.strip_prefix("   *")))
            .collect();
        let mut props = Map::new();
        let mut required = Vec::new();
        for l in body.lines() {
            let Some(rest) = l.strip_prefix("    ").filter(|r| !r.starts_with(' ')) else {
                continue;
            };
            let Some((key, ty)) = rest.split_once(": ") else {
                continue;
            };
            if key.starts_with("/**") {
                continue;
            }
            let (key, optional) = match key.strip_suffix('?') {
                Some(k) => (k, true),
                None => (key, false),
            };
            let key = key.trim_matches('"').to_string();
            let ty = ty.trim_end_matches(';').trim();
            let schema = if ty.starts_with('"') {
                let values: Vec<Value> = ty
                    .split(" | ")
                    .filter_map(|v| serde_json::from_str(v).ok())
                    .collect();
                json!({"type": "string", "enum": values})
            } else {
                let t = match ty.split(" | ").next().unwrap_or("") {
                    "string" => "string",
                    "number" => "number",
                    "boolean" => "boolean",
                    t if t.ends_with("[]") => "array",
                    _ => "object",
                };
                json!({ "type": t })
            };
            if !optional {
                required.push(Value::from(key.clone()));
            }
            props.insert(key, schema);
        }
        out.push(Declared {
            group: group.to_string(),
            name: name.to_string(),
            doc: doc.join(" "),
            schema: json!({"type": "object", "properties": props, "required": required}),
        });
    }
    out
}

/// The function a group's `index.ts` names that best matches the query
/// (`export { name } from "./name"; // summary` lines).
pub(super) fn best_export(content: &str, query: &str) -> Option<String> {
    let items: Vec<(String, String)> = content
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("export { ")?;
            let (name, tail) = rest.split_once(" }")?;
            let summary = tail.split_once("// ").map_or("", |(_, s)| s);
            Some((
                name.to_string(),
                format!("{} {summary}", name.replace('_', " ")),
            ))
        })
        .collect();
    let docs: Vec<String> = items.iter().map(|(_, d)| d.clone()).collect();
    let (i, _) = bm25::best(query, &docs)?;
    Some(items[i].0.clone())
}
pub(super) const READ_RESOURCE: &str = "read_resource";

/// Whether a tool is listed with an open schema and no parameters (`mcp-resource`).
pub(super) fn is_open(cx: &Context, tool: &str) -> bool {
    cx.tool(tool).is_some_and(|t| {
        t.parameters.get("additionalProperties") == Some(&Value::Bool(true))
            && t.parameters.get("properties").is_none()
    })
}

/// The resource the `read_resource` tool's description names (its first
/// `resource:///…` word, without a query).
pub(super) fn resource_base(cx: &Context) -> String {
    let text = cx
        .tool(READ_RESOURCE)
        .map(|t| t.description.as_str())
        .unwrap_or("");
    text.split_whitespace()
        .find(|w| w.starts_with("resource://"))
        .map(|w| w.split('?').next().unwrap_or(w))
        .map(|w| w.trim_end_matches(['.', ',', ')', ':']).to_string())
        .unwrap_or_else(|| "resource:///tool_descriptions".to_string())
}

/// A search for the query: its words; for a search tool that takes a regular
/// expression (its description says so), the words as alternatives, ignoring case.
pub(super) fn search_query(cx: &Context, query: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    for w in bm25::tokenize(query) {
        // The search takes up to 200 characters.
        if !words.contains(&w) && words.iter().map(|x| x.len() + 1).sum::<usize>() + w.len() < 180 {
            words.push(w);
        }
    }
    let regex = cx
        .tool(TOOL_SEARCH)
        .is_some_and(|t| t.description.contains("regular expression"));
    if regex {
        let alts: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
        format!("(?i)({})", alts.join("|"))
    } else {
        words.join(" ")
    }
}

/// The first line of `text` containing `needle`, or the needle itself.
pub(super) fn line_naming(text: &str, needle: &str) -> String {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or(needle)
        .to_string()
}
