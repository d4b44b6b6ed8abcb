//! `anthropic:<model>`: the Messages API with tools.
//!
//! The context becomes `system`, `messages` whose assistant turns carry `text` and
//! `tool_use` blocks and whose tool results go back as `tool_result` blocks in a user
//! turn (consecutive results together), `tools` with `input_schema`, and `max_tokens`
//! (required by the API: 4,096 unless set). The answer's text and `tool_use` blocks,
//! stop reason and `usage` are read back; the input is the sum of what the API
//! reports apart (`input_tokens`, the uncached rest, `cache_read_input_tokens` and
//! `cache_creation_input_tokens`), the cache reads and writes kept as well.
//!
//! Prompt caching ([`super::caching`], on unless `--prompt-cache off`): the API caches
//! only at `cache_control` breakpoints, so a request carries three, each
//! `{"type": "ephemeral", "ttl": …}`: on the last tool definition, on the system
//! prompt (sent as one text block for that) and on the last block of the newest
//! message — within the API's limit of four. The tools, the system prompt and the
//! conversation are cached in that order, so each request reads what the one before
//! it wrote and writes its own newest message.

use serde_json::{json, Map, Value};

use super::backend::{Answer, ModelError, Purpose};
use super::http::{Api, Endpoint, HttpBackend};
use crate::record::Usage;
use crate::wire::{Context, Execution, Message, NativeSearch, Response, ToolCall};

/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version header discbench speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the endpoint sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Messages wire format.
pub struct Messages;

/// A model behind the Messages API.
pub type Anthropic = HttpBackend<Messages>;

impl Api for Messages {
    fn names(&self) -> Option<crate::names::NameRule> {
        Some(crate::names::ANTHROPIC)
    }

    fn request(
        &self,
        client: &reqwest::Client,
        e: &Endpoint,
        purpose: Purpose,
        cx: &Context,
        _conversation: &str,
    ) -> reqwest::RequestBuilder {
        let mut req = client
            .post(format!("{}/v1/messages", e.base_url))
            .header("content-type", "application/json")
            .header("anthropic-version", API_VERSION)
            .body(body(e, purpose, cx).to_string());
        if let Some(k) = &e.key {
            req = req.header("x-api-key", k.expose());
        }
        req
    }

    // 529 (overloaded) is a server error that may pass: retried like any 5xx.
    fn parse(&self, v: &Value, _cx: &Context) -> Result<Answer, ModelError> {
        parse(v)
    }

    // With a breakpoint on the newest message, everything a request does not read
    // from the cache it writes to it.
    fn writes_cache(&self, e: &Endpoint) -> bool {
        e.cache.enabled
    }
}

/// The request body for a context.
pub fn body(endpoint: &Endpoint, _purpose: Purpose, cx: &Context) -> Value {
    let cache = endpoint.cache;
    let mark = json!({"type": "ephemeral", "ttl": cache.ttl.as_str()});
    let mut messages: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    let flush = |messages: &mut Vec<Value>, results: &mut Vec<Value>| {
        if !results.is_empty() {
            messages.push(json!({"role": "user", "content": std::mem::take(results)}));
        }
    };
    for m in &cx.messages {
        match m {
            Message::Tool {
                tool_call_id,
                content,
                references,
                ..
            } => results.push(if references.is_empty() {
                json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content})
            } else {
                // `native=client`: what discbench's search found, as references the
                // API expands into the definitions it deferred.
                json!({"type": "tool_result", "tool_use_id": tool_call_id,
                       "content": references.iter()
                           .map(|n| json!({"type": "tool_reference", "tool_name": n}))
                           .collect::<Vec<_>>()})
            }),
            Message::User { content } => {
                flush(&mut messages, &mut results);
                messages.push(json!({"role": "user", "content": content}));
            }
            Message::Assistant {
                content,
                tool_calls,
                searches,
                ..
            } => {
                flush(&mut messages, &mut results);
                let mut blocks = Vec::new();
                if let Some(t) = content.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": t}));
                }
                // The API's own searches go back as it sent them.
                for s in searches {
                    if let Ok(Value::Array(raw)) = serde_json::from_str::<Value>(&s.raw) {
                        blocks.extend(raw);
                    }
                }
                for c in tool_calls {
                    // The API takes an object; arguments that were not one are sent as
                    // an empty input (the error was already answered to the model).
                    let input = match serde_json::from_str::<Value>(&c.arguments) {
                        Ok(v @ Value::Object(_)) => v,
                        _ => json!({}),
                    };
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
        }
    }
    flush(&mut messages, &mut results);
    if cache.enabled {
        // The newest message's last block: its content becomes a list of blocks.
        if let Some(last) = messages.last_mut() {
            if let Some(text) = last["content"].as_str().map(str::to_string) {
                last["content"] = json!([{"type": "text", "text": text}]);
            }
            if let Some(block) = last["content"]
                .as_array_mut()
                .and_then(|blocks| blocks.last_mut())
            {
                block["cache_control"] = mark.clone();
            }
        }
    }
    let mut b = Map::new();
    b.insert("model".into(), json!(endpoint.model));
    b.insert(
        "max_tokens".into(),
        json!(endpoint.sampling.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if cache.enabled && !cx.system.is_empty() {
        b.insert(
            "system".into(),
            json!([{"type": "text", "text": cx.system, "cache_control": mark}]),
        );
    } else {
        b.insert("system".into(), json!(cx.system));
    }
    b.insert("messages".into(), Value::Array(messages));
    if !cx.tools.is_empty() {
        let def = |t: &crate::wire::ToolDef| json!({"name": t.name, "description": t.description, "input_schema": t.parameters});
        let native = cx.native.as_deref();
        let mut tools: Vec<Value> = Vec::new();
        for t in cx.tools.iter() {
            match native {
                // Deferred tools go at the end, all of them, in every request.
                Some(n) if n.defers(&t.name) => {}
                Some(n) if n.execution == Execution::Server && t.name == n.search_tool => {
                    tools.push(server_search_tool(n.variant))
                }
                _ => tools.push(def(t)),
            }
        }
        // The breakpoint closes the tools that are in the prompt; deferred ones are
        // not part of it (they are expanded where a search found them).
        if cache.enabled {
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = mark.clone();
            }
        }
        if let Some(n) = native {
            for t in n.deferred.iter() {
                let mut d = def(t);
                d["defer_loading"] = json!(true);
                tools.push(d);
            }
        }
        b.insert("tools".into(), Value::Array(tools));
        if let Some(f) = &cx.tool_choice {
            b.insert("tool_choice".into(), json!({"type": "tool", "name": f}));
        }
    }
    if let Some(t) = endpoint.sampling.temperature {
        b.insert("temperature".into(), json!(t));
    }
    Value::Object(b)
}

/// The API's own tool search tool, for discbench's `bm25` or `regex` search (Tool
/// search tool page and the SDK's `tool_search_tool_*_20251119` types; generally
/// available, no beta header, since 2026-02).
pub fn server_search_tool(variant: &str) -> Value {
    let name = format!("tool_search_tool_{variant}");
    json!({"type": format!("{name}_20251119"), "name": name})
}

fn text_of(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// Reads a Messages answer. A search the API ran itself (`server_tool_use` of a
/// `tool_search_tool_*` and its `tool_search_tool_result`) becomes a [`NativeSearch`]
/// (its blocks kept to go back verbatim); a block of a type discbench does not know is
/// kept as a malformed one, so that it is counted, never dropped in silence.
pub fn parse(v: &Value) -> Result<Answer, ModelError> {
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ModelError::Undecodable("no content blocks".into()))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut searches: Vec<NativeSearch> = Vec::new();
    // Open searches by their `server_tool_use` id: (its block, its input).
    let mut open: Vec<(String, Value)> = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => calls.push(ToolCall {
                id: b
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("toolu_{i}")),
                name: b
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                arguments: b.get("input").map(Value::to_string).unwrap_or_default(),
            }),
            Some("thinking" | "redacted_thinking") => {}
            Some("server_tool_use") => {
                let id = b
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                open.push((id, b.clone()));
            }
            Some("tool_search_tool_result") => {
                let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                let call = open
                    .iter()
                    .position(|(o, _)| o == id)
                    .map(|k| open.remove(k).1);
                searches.push(native_search(call, b));
            }
            other => searches.push(NativeSearch {
                raw: Value::Array(vec![b.clone()]).to_string(),
                malformed: Some(format!(
                    "a content block of type `{}` discbench does not read",
                    other.unwrap_or("(none)")
                )),
                ..NativeSearch::default()
            }),
        }
    }
    // A search call with no result.
    for (_, call) in open {
        searches.push(NativeSearch {
            query: call.get("input").map(Value::to_string).unwrap_or_default(),
            raw: Value::Array(vec![call]).to_string(),
            malformed: Some("a server tool call with no result".into()),
            ..NativeSearch::default()
        });
    }
    let usage = v.get("usage").map(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        let (read, write) = (
            n("cache_read_input_tokens"),
            n("cache_creation_input_tokens"),
        );
        Usage {
            input: n("input_tokens").unwrap_or(0) + read.unwrap_or(0) + write.unwrap_or(0),
            output: n("output_tokens").unwrap_or(0),
            cached_input: read,
            cache_write: write,
            thinking: None,
        }
    });
    Ok(Answer {
        response: Response {
            text: (!text.is_empty()).then_some(text),
            calls,
            searches,
            echo: None,
        },
        usage,
        latency: None,
        truncated: v.get("stop_reason").and_then(Value::as_str) == Some("max_tokens"),
        refusal: (v.get("stop_reason").and_then(Value::as_str) == Some("refusal"))
            .then(|| text_of(blocks)),
    })
}

/// A search the API ran: its call and result blocks, what it searched with and the
/// tools its `tool_reference`s name (malformed when the result holds none, or is the
/// API's error).
fn native_search(call: Option<Value>, result: &Value) -> NativeSearch {
    let query = call
        .as_ref()
        .and_then(|c| c.get("input"))
        .map(Value::to_string)
        .unwrap_or_default();
    let raw: Vec<Value> = call.into_iter().chain([result.clone()]).collect();
    let content = result.get("content");
    let refs = content
        .and_then(|c| c.get("tool_references"))
        .and_then(Value::as_array);
    let (found, malformed) = match refs {
        Some(r) => {
            let names: Vec<String> = r
                .iter()
                .filter_map(|x| x.get("tool_name").and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            if names.len() == r.len() {
                (names, None)
            } else {
                (
                    names,
                    Some("a tool reference without a tool name".to_string()),
                )
            }
        }
        None => (
            Vec::new(),
            Some(match content.and_then(|c| c.get("error_code")) {
                Some(code) => format!("the search failed: {code}"),
                None => "a search result without tool references".to_string(),
            }),
        ),
    };
    NativeSearch {
        raw: Value::Array(raw).to_string(),
        query,
        found,
        malformed,
    }
}
