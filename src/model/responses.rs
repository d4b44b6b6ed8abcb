//! `openai-responses:<model>`: OpenAI's Responses API, beside Chat Completions (which
//! stays the wire of every other OpenAI-compatible server).
//!
//! Wire shapes from the API reference and the SDK's types (openai-python 3.3.1,
//! `types/responses/`, read 2026-11-25). The context becomes `instructions` (the
//! system prompt), `input` items — the user's message, each earlier answer as an
//! assistant input `message` (its text as `content`) and its `function_call` items,
//! each tool
//! result as a `function_call_output` — and `function` tools: those of one connector,
//! database or MCP server go into a `namespace` with the resource's name and
//! description (each function keeping discbench's name for it, each call of one
//! naming its `namespace`), the others stand alone. `store` is off, so each request
//! carries the whole conversation, as discbench counts it; the conversation's
//! `prompt_cache_key` (one per conversation and repeat: a hash of its work item) keeps
//! its requests on one cache, whatever a strategy does to the system prompt. The selection step forces `{"type": "function"}`, or asks for
//! a JSON object (`text.format`). When a strategy limits what may be called without
//! changing the tool list, `tool_choice` is `allowed_tools`.
//!
//! Read back: `output_text` and `refusal` parts, `function_call` items (their
//! `arguments` kept as written), `status: incomplete` for the output limit, and
//! `usage` — `input_tokens` (cached tokens included), `cached_tokens` and, where the
//! model reports them, `cache_write_tokens`.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::backend::{Answer, ModelError, Purpose};
use super::http::{Api, Endpoint, HttpBackend};
use crate::record::Usage;
use crate::wire::{
    Context, Execution, Message, NativeSearch, NativeTools, Response, ToolCall, ToolDef, ToolGroup,
};

/// The Responses wire format.
pub struct Responses;

/// A model behind the Responses API.
pub type OpenAiResponses = HttpBackend<Responses>;

impl Api for Responses {
    fn names(&self) -> Option<crate::names::NameRule> {
        Some(crate::names::OPENAI)
    }

    fn request(
        &self,
        client: &reqwest::Client,
        e: &Endpoint,
        purpose: Purpose,
        cx: &Context,
        conversation: &str,
    ) -> reqwest::RequestBuilder {
        let mut req = client
            .post(format!("{}/responses", e.base_url))
            .header("content-type", "application/json")
            .body(body(e, purpose, cx, conversation).to_string());
        if let Some(k) = &e.key {
            req = req.bearer_auth(k.expose());
        }
        req
    }

    fn parse(&self, v: &Value, cx: &Context) -> Result<Answer, ModelError> {
        parse_for(v, cx.native.as_deref())
    }

    fn json_mode(&self) -> bool {
        true
    }
}

/// The request body for a context.
pub fn body(endpoint: &Endpoint, purpose: Purpose, cx: &Context, conversation: &str) -> Value {
    let native = cx.native.as_deref();
    let client = native.filter(|n| n.execution == Execution::Client);
    let strict = endpoint.sampling.strict();
    let groups = group_index(cx);
    let mut input: Vec<Value> = Vec::new();
    for m in &cx.messages {
        match m {
            Message::User { content } => input.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
                searches,
                ..
            } => {
                if let Some(t) = content.as_deref().filter(|t| !t.is_empty()) {
                    // An earlier answer as an input message: the output form would need
                    // the item's id, status and annotations.
                    input.push(json!({"type": "message", "role": "assistant", "content": t}));
                }
                // The hosted search's own items go back as the API sent them, in the
                // input shape they were kept in (see `hosted_search`).
                for s in searches {
                    if let Ok(Value::Array(raw)) = serde_json::from_str::<Value>(&s.raw) {
                        input.extend(raw);
                    }
                }
                for c in tool_calls {
                    if client.is_some_and(|n| n.search_tool == c.name) {
                        // `native=client`: the model asked discbench to search.
                        let arguments: Value =
                            serde_json::from_str(&c.arguments).unwrap_or(json!({}));
                        input.push(json!({
                            "type": "tool_search_call",
                            "call_id": c.id,
                            "execution": "client",
                            "arguments": arguments,
                            "status": "completed",
                        }));
                        continue;
                    }
                    input.push(with_namespace(
                        json!({
                            "type": "function_call",
                            "call_id": c.id,
                            "name": c.name,
                            "arguments": c.arguments,
                        }),
                        groups.get(c.name.as_str()).copied(),
                    ));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                references,
                ..
            } => match client {
                // What discbench's search found, as the definitions the API loads.
                Some(n) if !references.is_empty() => {
                    let mut found = Grouped::new(&groups);
                    for t in references
                        .iter()
                        .filter_map(|r| n.deferred.iter().find(|t| &t.name == r))
                    {
                        found.push(t, deferred_function(t, strict));
                    }
                    input.push(json!({
                        "type": "tool_search_output",
                        "call_id": tool_call_id,
                        "execution": "client",
                        "status": "completed",
                        "tools": found.list,
                    }))
                }
                _ => input.push(json!({
                    "type": "function_call_output",
                    "call_id": tool_call_id,
                    "output": content,
                })),
            },
        }
    }
    let mut b = Map::new();
    b.insert("model".into(), json!(endpoint.model));
    b.insert("instructions".into(), json!(cx.system));
    b.insert("input".into(), Value::Array(input));
    b.insert("store".into(), json!(false));
    if endpoint.cache.enabled {
        b.insert("prompt_cache_key".into(), json!(conversation));
    }
    if !cx.tools.is_empty() {
        let mut tools = Grouped::new(&groups);
        for t in cx.tools.iter() {
            match native {
                // Deferred tools come after the rest, all of them, in every request
                // (each into its namespace, where it has one).
                Some(n) if n.defers(&t.name) => {}
                Some(n) if t.name == n.search_tool => tools.push_flat(match n.execution {
                    Execution::Server => json!({"type": "tool_search"}),
                    Execution::Client => json!({
                        "type": "tool_search",
                        "execution": "client",
                        "description": t.description,
                        "parameters": t.parameters,
                    }),
                }),
                _ => tools.push(t, function(t, strict)),
            }
        }
        if let Some(n) = native {
            // With namespaces, a deferred function goes into its namespace: the API
            // defers the functions inside one, not the namespace itself.
            for t in n.deferred.iter() {
                tools.push(t, deferred_function(t, strict));
            }
        }
        b.insert("tools".into(), Value::Array(tools.list));
        let choice = match (&cx.tool_choice, &cx.allowed) {
            (Some(f), _) => json!({"type": "function", "name": f}),
            (None, Some(allowed)) => json!({
                "type": "allowed_tools",
                "mode": "auto",
                "tools": allowed.iter().map(|n| with_namespace(json!({"type": "function", "name": n}), groups.get(n.as_str()).copied())).collect::<Vec<_>>(),
            }),
            (None, None) => json!("auto"),
        };
        b.insert("tool_choice".into(), choice);
        if purpose == Purpose::Act {
            b.insert("parallel_tool_calls".into(), json!(true));
        }
    }
    if cx.json_mode {
        b.insert("text".into(), json!({"format": {"type": "json_object"}}));
    }
    if let Some(t) = endpoint.sampling.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if let Some(m) = endpoint.sampling.max_tokens {
        b.insert("max_output_tokens".into(), json!(m));
    }
    Value::Object(b)
}

/// Each grouped tool's group, by tool name.
fn group_index(cx: &Context) -> HashMap<&str, &ToolGroup> {
    let mut index = HashMap::new();
    for g in cx.groups.iter().flat_map(|g| g.iter()) {
        for t in &g.tools {
            index.insert(t.as_str(), g);
        }
    }
    index
}

/// An item naming a function, with the namespace it is in, if any.
fn with_namespace(mut item: Value, group: Option<&ToolGroup>) -> Value {
    if let Some(g) = group {
        item["namespace"] = json!(g.name);
    }
    item
}

/// A tool list in which the functions of one group (a connector, a database, an MCP
/// server) go into one `namespace` with the group's name and description, placed
/// where its first function comes; a function of no group stands alone.
struct Grouped<'a> {
    groups: &'a HashMap<&'a str, &'a ToolGroup>,
    /// Where each group's namespace is in `list`.
    at: HashMap<&'a str, usize>,
    list: Vec<Value>,
}

impl<'a> Grouped<'a> {
    fn new(groups: &'a HashMap<&'a str, &'a ToolGroup>) -> Self {
        Grouped {
            groups,
            at: HashMap::new(),
            list: Vec::new(),
        }
    }

    fn push_flat(&mut self, item: Value) {
        self.list.push(item);
    }

    /// `item`, the function tool of `t`, in its namespace if `t` has a group.
    fn push(&mut self, t: &ToolDef, item: Value) {
        let Some(g) = self.groups.get(t.name.as_str()).copied() else {
            return self.list.push(item);
        };
        let at = *self.at.entry(g.name.as_str()).or_insert_with(|| {
            self.list.push(json!({
                "type": "namespace",
                "name": g.name,
                "description": g.description,
                "tools": [],
            }));
            self.list.len() - 1
        });
        if let Some(Value::Array(fs)) = self.list[at].get_mut("tools") {
            fs.push(item);
        }
    }
}

/// A function tool, `strict` said explicitly: the Responses API makes a function
/// without it strict (every field required, no other property), which Chat
/// Completions does not, and the SDK's type requires the key on a top-level function.
fn function(t: &ToolDef, strict: bool) -> Value {
    json!({"type": "function", "name": t.name, "description": t.description,
           "parameters": t.parameters, "strict": strict})
}

/// A function tool the API loads only when a search finds it.
fn deferred_function(t: &ToolDef, strict: bool) -> Value {
    let mut f = function(t, strict);
    f["defer_loading"] = json!(true);
    f
}

/// An output item of the API's own (a hosted search's call or result) as the input
/// item it stands for: the same fields but `created_by`, which only output items carry.
fn as_input(mut item: Value) -> Value {
    if let Some(o) = item.as_object_mut() {
        o.remove("created_by");
    }
    item
}

/// Reads a Responses answer (no native tool search).
pub fn parse(v: &Value) -> Result<Answer, ModelError> {
    parse_for(v, None)
}

/// Reads a Responses answer to a request whose tool search was `native`: a hosted
/// search (`tool_search_call` and `tool_search_output`, executed by the server)
/// becomes a [`NativeSearch`], its items kept to go back verbatim; a client search
/// call is discbench's own search tool, called.
pub fn parse_for(v: &Value, native: Option<&NativeTools>) -> Result<Answer, ModelError> {
    let items = v
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::Undecodable("no output items".into()))?;
    let mut text = String::new();
    let mut refusal: Option<String> = None;
    let mut calls = Vec::new();
    let mut searches: Vec<NativeSearch> = Vec::new();
    let mut open: Option<Value> = None;
    for (i, item) in items.iter().enumerate() {
        let s = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_string);
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => {
                            text.push_str(part.get("text").and_then(Value::as_str).unwrap_or(""))
                        }
                        Some("refusal") => {
                            refusal.get_or_insert_with(String::new).push_str(
                                part.get("refusal").and_then(Value::as_str).unwrap_or(""),
                            );
                        }
                        _ => {}
                    }
                }
            }
            Some("tool_search_call") if s("execution").as_deref() == Some("client") => {
                calls.push(ToolCall {
                    id: s("call_id").unwrap_or_else(|| format!("call_{i}")),
                    name: native.map_or("tool_search".into(), |n| n.search_tool.clone()),
                    arguments: item
                        .get("arguments")
                        .map(Value::to_string)
                        .unwrap_or_default(),
                })
            }
            Some("tool_search_call") => {
                if let Some(unanswered) = open.replace(item.clone()) {
                    searches.push(hosted_search(Some(unanswered), None));
                }
            }
            Some("tool_search_output") => searches.push(hosted_search(open.take(), Some(item))),
            Some("function_call") => {
                calls.push(ToolCall {
                    id: s("call_id")
                        .or_else(|| s("id"))
                        .unwrap_or_else(|| format!("call_{i}")),
                    name: s("name").unwrap_or_default(),
                    arguments: s("arguments").unwrap_or_default(),
                });
            }
            // Reasoning carries nothing discbench scores.
            Some("reasoning") => {}
            other => searches.push(NativeSearch {
                raw: Value::Array(vec![item.clone()]).to_string(),
                malformed: Some(format!(
                    "an output item of type `{}` discbench does not read",
                    other.unwrap_or("(none)")
                )),
                ..NativeSearch::default()
            }),
        }
    }
    if let Some(unanswered) = open {
        searches.push(hosted_search(Some(unanswered), None));
    }
    let usage = v.get("usage").map(|u| {
        let details = u.get("input_tokens_details");
        let detail = |k: &str| details.and_then(|d| d.get(k)).and_then(Value::as_u64);
        Usage {
            input: u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
            output: u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
            cached_input: detail("cached_tokens"),
            cache_write: detail("cache_write_tokens"),
            thinking: (u.get("output_tokens_details"))
                .and_then(|d| d.get("reasoning_tokens"))
                .and_then(Value::as_u64),
        }
    });
    let truncated = v.get("status").and_then(Value::as_str) == Some("incomplete")
        && v.get("incomplete_details")
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str)
            == Some("max_output_tokens");
    Ok(Answer {
        response: Response {
            text: (!text.is_empty()).then_some(text),
            calls,
            searches,
            echo: None,
        },
        usage,
        latency: None,
        truncated,
        refusal,
    })
}

/// A hosted search: its call and output items, what it searched with, and the tools
/// the output loaded (functions, and the functions of the namespaces it loaded);
/// malformed without an output, or with one that holds no tool list.
fn hosted_search(call: Option<Value>, output: Option<&Value>) -> NativeSearch {
    let query = call
        .as_ref()
        .and_then(|c| c.get("arguments"))
        .map(Value::to_string)
        .unwrap_or_default();
    // Kept as they go back: in the input shape, what the ledger counts is what is sent.
    let raw: Vec<Value> = call
        .into_iter()
        .chain(output.cloned())
        .map(as_input)
        .collect();
    let tools = output
        .and_then(|o| o.get("tools"))
        .and_then(Value::as_array);
    let mut found = Vec::new();
    for t in tools.into_iter().flatten() {
        match t.get("type").and_then(Value::as_str) {
            Some("namespace") => found.extend(
                t.get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.get("name").and_then(Value::as_str))
                    .map(str::to_string),
            ),
            _ => found.extend(t.get("name").and_then(Value::as_str).map(str::to_string)),
        }
    }
    let malformed = match (output, tools) {
        (None, _) => Some("a tool search call with no output".to_string()),
        (Some(_), None) => Some("a tool search output without tools".to_string()),
        _ => None,
    };
    NativeSearch {
        raw: Value::Array(raw).to_string(),
        query,
        found,
        malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn endpoint() -> Endpoint {
        Endpoint {
            name: "openai-responses:m".into(),
            model: "m".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            key: None,
            sampling: Default::default(),
            timeout: std::time::Duration::from_secs(1),
            prices: None,
            cache: Default::default(),
        }
    }

    fn tool(name: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: format!("{name} does it."),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    /// Two groups (`git`, `time`) and a tool of none; `git__log` is deferred.
    fn grouped(native: Option<Execution>) -> Context {
        let tools: Vec<ToolDef> = ["git__status", "calc", "time__now", "git__diff"]
            .into_iter()
            .map(tool)
            .collect();
        let mut listed = tools.clone();
        let deferred = vec![tool("git__log")];
        if native.is_some() {
            listed.push(tool("tool_search"));
        }
        let group = |name: &str, tools: &[&str]| ToolGroup {
            name: name.into(),
            description: format!("The {name} server."),
            tools: tools.iter().map(|t| t.to_string()).collect(),
        };
        Context {
            system: "s".into(),
            tools: listed.into(),
            messages: vec![Message::User {
                content: "q".into(),
            }],
            native: native.map(|execution| {
                Arc::new(NativeTools {
                    execution,
                    variant: "bm25",
                    search_tool: "tool_search".into(),
                    deferred: deferred.into(),
                })
            }),
            groups: Some(
                vec![
                    group("git", &["git__status", "git__diff", "git__log"]),
                    group("time", &["time__now"]),
                ]
                .into(),
            ),
            ..Context::default()
        }
    }

    #[test]
    fn a_group_is_one_namespace_and_its_calls_name_it() {
        let mut cx = grouped(None);
        cx.messages.push(Message::assistant(
            None,
            vec![
                ToolCall::new("c1", "git__diff", &json!({})),
                ToolCall::new("c2", "calc", &json!({})),
            ],
        ));
        cx.allowed = Some(vec!["time__now".into(), "calc".into()]);
        let b = body(&endpoint(), Purpose::Act, &cx, "k");
        let tools = b["tools"].as_array().unwrap();
        let shape: Vec<(String, Vec<String>)> = tools
            .iter()
            .map(|t| {
                let names = t["tools"].as_array().into_iter().flatten();
                (
                    format!(
                        "{}:{}",
                        t["type"].as_str().unwrap(),
                        t["name"].as_str().unwrap()
                    ),
                    names
                        .map(|f| f["name"].as_str().unwrap().to_string())
                        .collect(),
                )
            })
            .collect();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shape,
            vec![
                (
                    "namespace:git".to_string(),
                    s(&["git__status", "git__diff"])
                ),
                ("function:calc".to_string(), s(&[])),
                ("namespace:time".to_string(), s(&["time__now"])),
            ],
            "a namespace stands where its first function came"
        );
        assert_eq!(tools[0]["description"], json!("The git server."));
        assert_eq!(tools[0]["tools"][1]["type"], json!("function"));
        assert!(tools[0]["tools"][1].get("defer_loading").is_none());
        let calls: Vec<&Value> = b["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "function_call")
            .collect();
        assert_eq!(calls[0]["namespace"], json!("git"));
        assert!(calls[1].get("namespace").is_none());
        assert_eq!(
            b["tool_choice"]["tools"],
            json!([{"type": "function", "name": "time__now", "namespace": "time"},
                   {"type": "function", "name": "calc"}])
        );
        // No groups: every function flat, as before.
        cx.groups = None;
        let flat = body(&endpoint(), Purpose::Act, &cx, "k");
        assert!(flat["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["type"] == "function"));
    }

    #[test]
    fn deferred_functions_are_deferred_inside_their_namespace() {
        let b = body(
            &endpoint(),
            Purpose::Act,
            &grouped(Some(Execution::Server)),
            "k",
        );
        let git = &b["tools"][0];
        assert_eq!(git["name"], json!("git"));
        assert!(git.get("defer_loading").is_none(), "never the namespace");
        let deferred: Vec<(&str, bool)> = git["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["name"].as_str().unwrap(),
                    f["defer_loading"] == json!(true),
                )
            })
            .collect();
        assert_eq!(
            deferred,
            vec![
                ("git__status", false),
                ("git__diff", false),
                ("git__log", true)
            ]
        );
        assert_eq!(
            b["tools"].as_array().unwrap().last().unwrap()["type"],
            json!("tool_search")
        );
        // A client search's answer loads what it found, in its namespace.
        let mut cx = grouped(Some(Execution::Client));
        cx.messages.push(Message::assistant(
            None,
            vec![ToolCall::new("s1", "tool_search", &json!({"query": "log"}))],
        ));
        cx.messages.push(Message::Tool {
            tool_call_id: "s1".into(),
            name: "tool_search".into(),
            content: "git__log".into(),
            references: vec!["git__log".into()],
        });
        let b = body(&endpoint(), Purpose::Act, &cx, "k");
        let out = b["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == "tool_search_output")
            .unwrap();
        assert_eq!(out["tools"][0]["type"], json!("namespace"));
        assert_eq!(out["tools"][0]["name"], json!("git"));
        assert_eq!(out["tools"][0]["tools"][0]["name"], json!("git__log"));
        assert_eq!(out["tools"][0]["tools"][0]["defer_loading"], json!(true));
    }

    #[test]
    fn a_namespaced_call_reads_back_by_its_name() {
        let a = parse(&json!({"status": "completed", "output": [
            {"type": "function_call", "call_id": "c", "namespace": "git",
             "name": "git__diff", "arguments": "{}"}
        ]}))
        .unwrap();
        assert_eq!(a.response.calls[0].name, "git__diff");
        assert!(a.response.searches.is_empty());
    }

    #[test]
    fn answers_read_back_text_calls_refusals_and_usage() {
        let a = parse(&json!({
            "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Checking."}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                 "name": "git_log", "arguments": "{\"max_count\":3"}
            ],
            "usage": {"input_tokens": 2006, "output_tokens": 30,
                      "input_tokens_details": {"cached_tokens": 1920},
                      "output_tokens_details": {"reasoning_tokens": 12}}
        }))
        .unwrap();
        assert_eq!(a.response.text.as_deref(), Some("Checking."));
        assert_eq!(a.response.calls[0].id, "call_1");
        assert_eq!(
            a.response.calls[0].arguments, "{\"max_count\":3",
            "kept as written"
        );
        let u = a.usage.unwrap();
        assert_eq!(
            (u.input, u.cached_input, u.cache_write),
            (2006, Some(1920), None)
        );
        assert!(!a.truncated);
        let r = parse(&json!({
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "content": [{"type": "refusal", "refusal": "No."}]}]
        }))
        .unwrap();
        assert!(r.truncated);
        assert_eq!(r.refusal.as_deref(), Some("No."));
        assert!(parse(&json!({"status": "completed"})).is_err());
    }
}
