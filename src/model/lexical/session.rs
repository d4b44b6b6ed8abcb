//! The lexical model: sees only the context. It ranks every visible option — direct
//! tools, and the stubs that meta-tools and the system prompt list (skills, connectors,
//! databases, MCP servers, tools not loaded yet) — against the query with BM25, picks
//! the best, follows the protocol (stub → discover → pick an action → call), and fills
//! arguments from values found in the query or the schema's defaults. Stub quality and
//! distractors change its accuracy, so it catches disclosure regressions
//! deterministically. It recognises meta-tools by the names of their name-enum
//! parameters, and reads the stub line that names each option as that option's text.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::fill::fill_from_query;
use super::reading::*;
use crate::bm25;
use crate::model::backend::{Answer, Backend, GroundTruth, ModelError, Purpose, Request, Session};
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

#[async_trait::async_trait]
impl Session for LexicalSession {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError> {
        let cx = request.context;
        let query = cx.query().to_string();
        if let Purpose::Select { max } = request.purpose {
            let names = select(cx, max);
            return Ok(crate::model::mock::selection_answer(cx, &names).into());
        }
        // A user's message answers nothing yet: a new turn starts (what the earlier
        // turns did is history; the lexical model reads the current turn's text).
        let new_turn = matches!(cx.messages.last(), Some(Message::User { .. }) | None);
        let calls = if new_turn {
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
        let ranked = ranked(cx);
        let (options, index) = &*ranked;
        let scores = index.scores(query);
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
