//! `openai-responses:<model>`: OpenAI's Responses API, beside Chat Completions (which
//! stays the wire of every other OpenAI-compatible server).
//!
//! Wire shapes from the API reference and the SDK's types (openai-python 3.3.1,
//! `types/responses/`, read 2026-11-25). The context becomes `instructions` (the
//! system prompt), `input` items — the user's message, each earlier answer as an
//! assistant `message` with `output_text` and its `function_call` items, each tool
//! result as a `function_call_output` — and flat `function` tools. `store` is off, so
//! each request carries the whole conversation, as discbench counts it; the
//! conversation's `prompt_cache_key` (a hash of its system prompt and query) keeps its
//! requests on one cache. The selection step forces `{"type": "function"}`, or asks for
//! a JSON object (`text.format`). When a strategy limits what may be called without
//! changing the tool list, `tool_choice` is `allowed_tools`.
//!
//! Read back: `output_text` and `refusal` parts, `function_call` items (their
//! `arguments` kept as written), `status: incomplete` for the output limit, and
//! `usage` — `input_tokens` (cached tokens included), `cached_tokens` and, where the
//! model reports them, `cache_write_tokens`.

use serde_json::{json, Map, Value};

use super::backend::{Answer, ModelError, Purpose};
use super::http::{Api, Endpoint, HttpBackend};
use crate::record::Usage;
use crate::wire::{
    Context, Execution, Message, NativeSearch, NativeTools, Response, ToolCall, ToolDef,
};

/// The Responses wire format.
pub struct Responses;

/// A model behind the Responses API.
pub type OpenAiResponses = HttpBackend<Responses>;

impl Api for Responses {
    fn request(
        &self,
        client: &reqwest::Client,
        e: &Endpoint,
        purpose: Purpose,
        cx: &Context,
    ) -> reqwest::RequestBuilder {
        let mut req = client
            .post(format!("{}/responses", e.base_url))
            .header("content-type", "application/json")
            .body(body(e, purpose, cx).to_string());
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

/// The cache key of a conversation: its system prompt and query, hashed.
pub fn cache_key(cx: &Context) -> String {
    let h = crate::hash::content_hash(format!("{}\u{0}{}", cx.system, cx.query()).as_bytes());
    format!("discbench-{}", &h[..h.len().min(24)])
}

/// The request body for a context.
pub fn body(endpoint: &Endpoint, purpose: Purpose, cx: &Context) -> Value {
    let native = cx.native.as_deref();
    let client = native.filter(|n| n.execution == Execution::Client);
    let mut input: Vec<Value> = Vec::new();
    for m in &cx.messages {
        match m {
            Message::User { content } => input.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
                searches,
            } => {
                if let Some(t) = content.as_deref().filter(|t| !t.is_empty()) {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": t}],
                    }));
                }
                // The hosted search's own items go back as the API sent them.
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
                    input.push(json!({
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": c.arguments,
                    }));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
                references,
                ..
            } => match client {
                // What discbench's search found, as the definitions the API loads.
                Some(n) if !references.is_empty() => input.push(json!({
                    "type": "tool_search_output",
                    "call_id": tool_call_id,
                    "execution": "client",
                    "status": "completed",
                    "tools": references
                        .iter()
                        .filter_map(|r| n.deferred.iter().find(|t| &t.name == r))
                        .map(deferred_function)
                        .collect::<Vec<_>>(),
                })),
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
        b.insert("prompt_cache_key".into(), json!(cache_key(cx)));
    }
    if !cx.tools.is_empty() {
        let mut tools: Vec<Value> = Vec::new();
        for t in cx.tools.iter() {
            match native {
                // Deferred tools go at the end, all of them, in every request.
                Some(n) if n.defers(&t.name) => {}
                Some(n) if t.name == n.search_tool => tools.push(match n.execution {
                    Execution::Server => json!({"type": "tool_search"}),
                    Execution::Client => json!({
                        "type": "tool_search",
                        "execution": "client",
                        "description": t.description,
                        "parameters": t.parameters,
                    }),
                }),
                _ => tools.push(function(t)),
            }
        }
        if let Some(n) = native {
            tools.extend(n.deferred.iter().map(deferred_function));
        }
        b.insert("tools".into(), Value::Array(tools));
        let choice = match (&cx.tool_choice, &cx.allowed) {
            (Some(f), _) => json!({"type": "function", "name": f}),
            (None, Some(allowed)) => json!({
                "type": "allowed_tools",
                "mode": "auto",
                "tools": allowed.iter().map(|n| json!({"type": "function", "name": n})).collect::<Vec<_>>(),
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

/// A function tool.
fn function(t: &ToolDef) -> Value {
    json!({"type": "function", "name": t.name, "description": t.description,
           "parameters": t.parameters})
}

/// A function tool the API loads only when a search finds it.
fn deferred_function(t: &ToolDef) -> Value {
    let mut f = function(t);
    f["defer_loading"] = json!(true);
    f
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
    let raw: Vec<Value> = call.into_iter().chain(output.cloned()).collect();
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
