//! The lexical model: sees only the context. It ranks every visible option — direct
//! tools, and the stubs that meta-tools and the system prompt list (skills, connectors,
//! databases, MCP servers, tools not loaded yet) — against the query with BM25, picks
//! the best, follows the protocol (stub → discover → pick an action → call), and fills
//! arguments from values found in the query or the schema's defaults. Stub quality and
//! distractors change its accuracy, so it catches disclosure regressions
//! deterministically. It recognises meta-tools by the names of their name-enum
//! parameters, and reads the stub line that names each option as that option's text.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::backend::{Answer, Backend, GroundTruth, ModelError, Purpose, Request, Session};
use super::mock::fill_required;
use crate::bm25;
use crate::wire::{Context, Message, Response, ToolCall};

/// Below this BM25 score the model answers without a call.
const MIN_SCORE: f64 = 1.0;
/// A skill stub scoring this share of the best option is read as well.
const SKILL_SHARE: f64 = 0.6;

/// The lexical backend: sessions see only what each request shows.
pub struct Lexical;

impl Backend for Lexical {
    fn name(&self) -> &str {
        "lexical"
    }

    fn open(
        &self,
        _key: &crate::record::OutcomeKey,
        _truth: Option<GroundTruth>,
    ) -> Box<dyn Session> {
        Box::new(LexicalSession::default())
    }
}

/// One episode of the lexical model.
#[derive(Default)]
pub struct LexicalSession {
    /// What each call this episode was for, by call id.
    pending: HashMap<String, Step>,
    calls: usize,
}

#[derive(Debug, Clone)]
enum Step {
    /// A discover call on a meta-tool: pick from what it returns and call through `tool`.
    Discover {
        tool: String,
        container: String,
    },
    /// `request_tools` for a tool: call it once it is loaded.
    Load(String),
    /// A tool search: call the best of the tools it surfaced.
    Search,
    /// `read_resource` for a tool (`mcp-resource`): call it with the schema read.
    Read(String),
    /// A call of a tool: under `mcp-resource` a refusal names what to read first.
    Called(String),
    /// Code mode: a search of the API's declarations; a program calls the best.
    CodeSearch,
    /// Code files: a group's `index.ts`; read the best function's declaration.
    Index(String),
    /// Code files: a function's declaration; a program calls it.
    Declaration,
    Done,
}

#[derive(Debug, Clone)]
enum Option_ {
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

#[async_trait::async_trait]
impl Session for LexicalSession {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError> {
        let cx = request.context;
        let query = cx.query().to_string();
        if let Purpose::Select { max } = request.purpose {
            let names = select(cx, max);
            return Ok(super::mock::selection_answer(cx, &names).into());
        }
        let calls = if cx.messages.len() <= 1 {
            self.first(cx, &query)
        } else {
            self.follow_up(cx, &query)
        };
        Ok(if calls.is_empty() {
            Response::say("Done.")
        } else {
            Response::call(calls)
        }
        .into())
    }
}

/// The selection answer: the top tools by BM25 over name and description. The
/// selection request is read as a person would: the request follows the first
/// `Label: ` of a line, and the `- name: description` lines are the catalog.
fn select(cx: &Context, max: usize) -> Vec<String> {
    let prompt = cx.query();
    // The request: the first `Label: text` line that is not a catalog line, and the
    // lines after it up to a blank one.
    let mut lines = prompt.lines();
    let mut query = String::new();
    for l in lines.by_ref() {
        if let Some((_, q)) = l.split_once(": ").filter(|_| !l.starts_with("- ")) {
            query = q.to_string();
            break;
        }
    }
    for l in lines.take_while(|l| !l.trim().is_empty()) {
        query.push(' ');
        query.push_str(l);
    }
    let query = query.as_str();
    let lines: Vec<(&str, &str)> = prompt
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split_once(": "))
        .collect();
    let docs: Vec<String> = lines
        .iter()
        .map(|(n, d)| format!("{} {d}", n.replace('_', " ")))
        .collect();
    let scores = bm25::scores(query, &docs);
    let mut idx: Vec<usize> = (0..lines.len()).filter(|i| scores[*i] > 0.0).collect();
    idx.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
    idx.iter()
        .take(max)
        .map(|i| lines[*i].0.to_string())
        .collect()
}

impl LexicalSession {
    fn id(&mut self) -> String {
        self.calls += 1;
        format!("call_{}", self.calls)
    }

    fn first(&mut self, cx: &Context, query: &str) -> Vec<ToolCall> {
        let options = options(cx);
        let docs: Vec<String> = options.iter().map(|(_, text)| text.clone()).collect();
        let scores = bm25::scores(query, &docs);
        let search = options
            .iter()
            .position(|(o, _)| matches!(o, Option_::Search | Option_::CodeSearch));
        let top = (0..options.len())
            .filter(|i| Some(*i) != search)
            .max_by(|a, b| scores[*a].total_cmp(&scores[*b]).then(b.cmp(a)))
            .filter(|i| scores[*i] >= MIN_SCORE);
        // With a search tool, what is visible is only part of the catalog: unless a
        // visible tool matches, search (beside reading a matching skill).
        if let Some(si) = search {
            if !top.is_some_and(|i| matches!(options[i].0, Option_::Direct(_))) {
                let mut out = Vec::new();
                if let Some(i) = top {
                    out.push(self.act(cx, query, &options[i].0));
                }
                if !bm25::tokenize(query).is_empty() {
                    out.push(self.act(cx, query, &options[si].0));
                }
                return out;
            }
        }
        let Some(top) = top else {
            return Vec::new();
        };
        let mut chosen = vec![top];
        if !matches!(options[top].0, Option_::Skill(_)) {
            if let Some(s) = (0..options.len())
                .filter(|i| matches!(options[*i].0, Option_::Skill(_)))
                .max_by(|a, b| scores[*a].total_cmp(&scores[*b]).then(b.cmp(a)))
            {
                if scores[s] >= SKILL_SHARE * scores[top] {
                    chosen.insert(0, s);
                }
            }
        }
        chosen
            .into_iter()
            .map(|i| self.act(cx, query, &options[i].0))
            .collect()
    }

    fn act(&mut self, cx: &Context, query: &str, option: &Option_) -> ToolCall {
        let id = self.id();
        let (name, args, step) = match option {
            // A tool listed without its parameters (`mcp-resource`): read them first.
            Option_::Direct(t) if is_open(cx, t) && cx.tool(READ_RESOURCE).is_some() => (
                READ_RESOURCE.to_string(),
                json!({"resource_uri": format!("{}?tools={t}", resource_base(cx))}),
                Step::Read(t.clone()),
            ),
            Option_::Direct(t) => {
                let schema = cx
                    .tool(t)
                    .map(|d| d.parameters.clone())
                    .unwrap_or(json!({}));
                (
                    t.clone(),
                    fill_from_query(&schema, query),
                    Step::Called(t.clone()),
                )
            }
            Option_::Search => (
                TOOL_SEARCH.to_string(),
                json!({"query": search_query(cx, query)}),
                Step::Search,
            ),
            Option_::CodeSearch => (
                SEARCH_API.to_string(),
                json!({"query": search_query(cx, query)}),
                Step::CodeSearch,
            ),
            Option_::Folder(g) => (
                READ_FILE.to_string(),
                json!({"path": format!("servers/{g}/index.ts")}),
                Step::Index(g.clone()),
            ),
            Option_::Skill(s) => ("read_skill".to_string(), json!({"name": s}), Step::Done),
            Option_::Stub { tool, param, name } => {
                let args = json!({"subcommand": "discover", param.as_str(): name});
                (
                    tool.clone(),
                    args,
                    Step::Discover {
                        tool: tool.clone(),
                        container: name.clone(),
                    },
                )
            }
            Option_::Unloaded(t) => (
                "request_tools".to_string(),
                json!({"tool_names": [t]}),
                Step::Load(t.clone()),
            ),
        };
        self.pending.insert(id.clone(), step);
        ToolCall::new(id, name, &args)
    }

    /// Acts on the results of the previous turn's calls.
    fn follow_up(&mut self, cx: &Context, query: &str) -> Vec<ToolCall> {
        let results: Vec<(String, String)> = cx
            .messages
            .iter()
            .rev()
            .take_while(|m| matches!(m, Message::Tool { .. }))
            .filter_map(|m| match m {
                Message::Tool {
                    tool_call_id,
                    content,
                    ..
                } => Some((tool_call_id.clone(), content.clone())),
                _ => None,
            })
            .collect();
        let mut out = Vec::new();
        for (id, content) in results.into_iter().rev() {
            match self.pending.remove(&id) {
                Some(Step::Discover { tool, container }) => {
                    if let Some(call) = self.after_discover(&tool, &container, &content, query) {
                        out.push(call);
                    }
                }
                Some(Step::Search) => {
                    if let Some(call) = self.after_search(cx, &content, query) {
                        out.push(call);
                    }
                }
                Some(Step::Read(t)) => {
                    if let Some(schema) = serde_json::from_str::<Value>(&content)
                        .ok()
                        .and_then(|v| v.get(&t).and_then(|d| d.get("inputSchema")).cloned())
                    {
                        let id = self.id();
                        self.pending.insert(id.clone(), Step::Done);
                        out.push(ToolCall::new(id, t, &fill_from_query(&schema, query)));
                    }
                }
                // Refused until its description is read: read what the refusal names.
                Some(Step::Called(t)) => {
                    let uri = serde_json::from_str::<Value>(&content).ok().and_then(|v| {
                        v.pointer("/error/resource_uri")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    });
                    if let Some(uri) = uri.filter(|_| cx.tool(READ_RESOURCE).is_some()) {
                        let id = self.id();
                        self.pending.insert(id.clone(), Step::Read(t));
                        out.push(ToolCall::new(
                            id,
                            READ_RESOURCE,
                            &json!({"resource_uri": uri}),
                        ));
                    }
                }
                Some(Step::CodeSearch | Step::Declaration) => {
                    if let Some(call) = self.program_for(&content, query) {
                        out.push(call);
                    }
                }
                Some(Step::Index(g)) => {
                    if let Some(f) = best_export(&content, query) {
                        let id = self.id();
                        self.pending.insert(id.clone(), Step::Declaration);
                        out.push(ToolCall::new(
                            id,
                            READ_FILE,
                            &json!({"path": format!("servers/{g}/{f}.ts")}),
                        ));
                    }
                }
                Some(Step::Load(t)) if cx.tool(&t).is_some() => {
                    let id = self.id();
                    let schema = cx
                        .tool(&t)
                        .map(|d| d.parameters.clone())
                        .unwrap_or(json!({}));
                    self.pending.insert(id.clone(), Step::Done);
                    out.push(ToolCall::new(id, t, &fill_from_query(&schema, query)));
                }
                _ => {}
            }
        }
        out
    }

    /// After a search: the best by BM25 of the tools it surfaced (their definitions
    /// are now in the tool list), called with arguments from the query.
    fn after_search(&mut self, cx: &Context, content: &str, query: &str) -> Option<ToolCall> {
        let found: Vec<&crate::wire::ToolDef> = content
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- "))
            .filter_map(|l| l.split_once(": ").map(|(n, _)| n))
            .filter_map(|n| cx.tool(n))
            .collect();
        let docs: Vec<String> = found
            .iter()
            .map(|t| format!("{} {}", t.name.replace(['_', '-'], " "), t.description))
            .collect();
        let (i, _) = bm25::best(query, &docs)?;
        let t = found[i];
        let id = self.id();
        self.pending
            .insert(id.clone(), Step::Called(t.name.clone()));
        Some(ToolCall::new(
            id,
            t.name.clone(),
            &fill_from_query(&t.parameters, query),
        ))
    }

    /// Code mode: a one-call program for the best of the declarations `content`
    /// holds, with arguments from the query (for a database, the best table's rows).
    fn program_for(&mut self, content: &str, query: &str) -> Option<ToolCall> {
        let found = declarations(content);
        let docs: Vec<String> = found
            .iter()
            .map(|d| {
                format!(
                    "{} {} {}",
                    d.group.replace('_', " "),
                    d.name.replace('_', " "),
                    d.doc
                )
            })
            .collect();
        let (i, _) = bm25::best(query, &docs)?;
        let d = &found[i];
        let args = if let Some(tables) = d.doc.split("Tables: ").nth(1) {
            let names: Vec<&str> = tables
                .split("; ")
                .filter_map(|t| t.split('(').next())
                .map(str::trim)
                .collect();
            let table_docs: Vec<String> = names.iter().map(|n| n.replace('_', " ")).collect();
            let t = bm25::best(query, &table_docs).map_or(0, |(i, _)| i);
            json!({"sql": format!("SELECT * FROM {} LIMIT 20", names.get(t)?)})
        } else {
            fill_from_query(&d.schema, query)
        };
        let code = format!(
            "const r = api.{}.{}({args});\nconsole.log(JSON.stringify(r));",
            d.group, d.name
        );
        let id = self.id();
        self.pending.insert(id.clone(), Step::Done);
        Some(ToolCall::new(id, RUN_CODE, &json!({"code": code})))
    }

    fn after_discover(
        &mut self,
        tool: &str,
        container: &str,
        content: &str,
        query: &str,
    ) -> Option<ToolCall> {
        let (sub, name_key, container_key) = match tool {
            "connector" => ("execute", "action", "connector"),
            "mcp" => ("call", "tool", "server"),
            "database" => ("query", "", "database"),
            _ => return None,
        };
        let items = discovered(content);
        let docs: Vec<String> = items
            .iter()
            .map(|(name, desc, _)| format!("{} {desc}", name.replace(['_', '-'], " ")))
            .collect();
        let pick = bm25::best(query, &docs).map(|(i, _)| i).unwrap_or(0);
        let (name, _, schema) = items.get(pick)?;
        let name = name.as_str();
        let id = self.id();
        self.pending.insert(id.clone(), Step::Done);
        let args = if tool == "database" {
            json!({"subcommand": sub, container_key: container, "sql": format!("SELECT * FROM {name} LIMIT 20")})
        } else {
            json!({"subcommand": sub, container_key: container, name_key: name, "parameters": fill_from_query(schema, query)})
        };
        Some(ToolCall::new(id, tool, &args))
    }
}

/// The items a `discover` answer lists, read from its text: per action or tool, its
/// name (a `  name:` line), description (`    description: …`) and parameter schema
/// (`    parameters: {…}` up to the blank line); per table, its name and description
/// (`  name -- description`).
fn discovered(content: &str) -> Vec<(String, String, Value)> {
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

/// Every option the context shows, with the text it is ranked by.
fn options(cx: &Context) -> Vec<(Option_, String)> {
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

const TOOL_SEARCH: &str = "tool_search";
const SEARCH_API: &str = "search_api";
const RUN_CODE: &str = "run_code";
const LIST_FILES: &str = "list_files";
const READ_FILE: &str = "read_file";

/// One function declaration as code mode writes it.
struct Declared {
    group: String,
    name: String,
    /// Its doc comment's text.
    doc: String,
    /// Its parameters, read back into a JSON Schema (top level only).
    schema: Value,
}

/// The declarations a text holds: each `declare namespace api.<group> {` block, its
/// doc comment, and its function's top-level parameters (`    key?: type;` lines).
fn declarations(content: &str) -> Vec<Declared> {
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
fn best_export(content: &str, query: &str) -> Option<String> {
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
const READ_RESOURCE: &str = "read_resource";

/// Whether a tool is listed with an open schema and no parameters (`mcp-resource`).
fn is_open(cx: &Context, tool: &str) -> bool {
    cx.tool(tool).is_some_and(|t| {
        t.parameters.get("additionalProperties") == Some(&Value::Bool(true))
            && t.parameters.get("properties").is_none()
    })
}

/// The resource the `read_resource` tool's description names (its first
/// `resource:///…` word, without a query).
fn resource_base(cx: &Context) -> String {
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
fn search_query(cx: &Context, query: &str) -> String {
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
fn line_naming(text: &str, needle: &str) -> String {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or(needle)
        .to_string()
}

/// Arguments for `schema` from values found in the query; other required properties
/// get schema placeholders.
pub fn fill_from_query(schema: &Value, query: &str) -> Value {
    let mut given = Map::new();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return fill_required(schema, &given);
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let words: Vec<&str> = query
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| ",.;:!?()\"'".contains(c)))
        .collect();
    let numbers: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let ids: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| {
            w.chars().any(|c| c.is_ascii_digit())
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .collect();
    let find =
        |pred: &dyn Fn(&str) -> bool| words.iter().copied().find(|w| pred(w)).map(str::to_string);
    let quoted = query
        .split(['"', '\''])
        .nth(1)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string);
    for (name, p) in props {
        let n = name.to_lowercase();
        let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
        let req = required.contains(&name.as_str());
        let value: Option<Value> = if let Some(e) = p.get("enum").and_then(Value::as_array) {
            e.iter()
                .find(|v| {
                    v.as_str()
                        .is_some_and(|s| query.to_lowercase().contains(&s.to_lowercase()))
                })
                .cloned()
        } else if n.contains("email") {
            find(&|w| w.contains('@')).map(Value::from)
        } else if n.contains("url") || n.contains("uri") {
            find(&|w| w.starts_with("http")).map(Value::from)
        } else if n.contains("path") || n.contains("file") || n.contains("dir") {
            find(&|w| w.starts_with('/')).map(Value::from)
        } else if ty == "integer" || ty == "number" {
            numbers
                .first()
                .and_then(|s| s.parse::<i64>().ok())
                .map(Value::from)
        } else if n.contains("id") || n.contains("number") || n.contains("key") {
            ids.first().map(|s| Value::from(*s))
        } else if [
            "query",
            "q",
            "text",
            "message",
            "prompt",
            "content",
            "body",
            "expression",
            "search",
        ]
        .contains(&n.as_str())
            && req
        {
            Some(Value::from(
                quoted.clone().unwrap_or_else(|| query.to_string()),
            ))
        } else {
            None
        };
        if let Some(v) = value {
            given.insert(name.clone(), v);
        }
    }
    fill_required(schema, &given)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_ids_emails_and_numbers_from_the_query() {
        let schema = json!({
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "to": {"type": "string"},
                "email": {"type": "string"},
                "limit": {"type": "integer"}
            },
            "required": ["order_id", "to"]
        });
        let v = fill_from_query(&schema, "Refund order 9921 and mail ann@example.com");
        assert_eq!(v["order_id"], json!("9921"));
        assert_eq!(v["email"], json!("ann@example.com"));
        assert_eq!(v["limit"], json!(9921));
        assert_eq!(v["to"], json!("example"));
    }
}
