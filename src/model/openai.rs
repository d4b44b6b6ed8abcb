//! `openai:<model>`: any OpenAI-compatible Chat Completions endpoint with native tool
//! calling (OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio, OpenRouter…).
//!
//! The context becomes `messages` (system first), `tools` (function tools, exactly the
//! definitions discbench counts), `tool_choice` (`"auto"`, or the forced function of
//! the selection step) and, for agent-loop requests, `parallel_tool_calls`;
//! temperature, `max_tokens` and seed when set. The answer's text, tool calls (their
//! `arguments` kept as the raw string the model wrote, valid JSON or not), finish
//! reason and `usage` (prompt, completion, cached prompt tokens) are read back.

use serde_json::{json, Map, Value};

use super::backend::{Answer, ModelError, Purpose};
use super::http::{Api, Endpoint, HttpBackend};
use crate::record::Usage;
use crate::wire::{Context, Message, Response, ToolCall};

/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The Chat Completions wire format.
pub struct ChatCompletions;

/// An OpenAI-compatible model.
pub type OpenAi = HttpBackend<ChatCompletions>;

impl Api for ChatCompletions {
    fn names(&self) -> Option<crate::names::NameRule> {
        Some(crate::names::OPENAI)
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
            .post(format!("{}/chat/completions", e.base_url))
            .header("content-type", "application/json")
            .body(body(e, purpose, cx).to_string());
        if let Some(k) = &e.key {
            req = req.bearer_auth(k.expose());
        }
        req
    }

    fn parse(&self, v: &Value, _cx: &Context) -> Result<Answer, ModelError> {
        parse(v)
    }

    fn json_mode(&self) -> bool {
        true
    }
}

/// The request body for a context.
pub fn body(endpoint: &Endpoint, purpose: Purpose, cx: &Context) -> Value {
    let mut messages = vec![json!({"role": "system", "content": cx.system})];
    for m in &cx.messages {
        messages.push(match m {
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let mut o = Map::new();
                o.insert("role".into(), json!("assistant"));
                o.insert("content".into(), json!(content));
                if !tool_calls.is_empty() {
                    o.insert(
                        "tool_calls".into(),
                        tool_calls
                            .iter()
                            .map(|c| {
                                json!({"id": c.id, "type": "function",
                                       "function": {"name": c.name, "arguments": c.arguments}})
                            })
                            .collect(),
                    );
                }
                Value::Object(o)
            }
            Message::Tool {
                tool_call_id,
                content,
                ..
            } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
        });
    }
    let mut b = Map::new();
    b.insert("model".into(), json!(endpoint.model));
    b.insert("messages".into(), Value::Array(messages));
    if !cx.tools.is_empty() {
        b.insert(
            "tools".into(),
            cx.tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                        "strict": endpoint.sampling.strict()}})
                })
                .collect(),
        );
        match &cx.tool_choice {
            Some(f) => {
                b.insert(
                    "tool_choice".into(),
                    json!({"type": "function", "function": {"name": f}}),
                );
            }
            None => {
                b.insert("tool_choice".into(), json!("auto"));
            }
        }
        if purpose == Purpose::Act {
            b.insert("parallel_tool_calls".into(), json!(true));
        }
    }
    if cx.json_mode {
        b.insert("response_format".into(), json!({"type": "json_object"}));
    }
    let s = &endpoint.sampling;
    if let Some(t) = s.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if let Some(m) = s.max_tokens {
        b.insert("max_tokens".into(), json!(m));
    }
    if let Some(seed) = s.seed {
        b.insert("seed".into(), json!(seed));
    }
    Value::Object(b)
}

/// Reads a Chat Completions answer.
pub fn parse(v: &Value) -> Result<Answer, ModelError> {
    let undecodable = |what: &str| ModelError::Undecodable(format!("{what} in {}", clip(v)));
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| undecodable("no choices[0]"))?;
    let msg = choice
        .get("message")
        .ok_or_else(|| undecodable("no choices[0].message"))?;
    let text = msg
        .get("content")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let mut calls = Vec::new();
    for (i, c) in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let f = c.get("function").unwrap_or(&Value::Null);
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // The model's own text, kept as written: invalid JSON is the model's error and
        // is scored as one, not repaired here.
        let arguments = match f.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("call_{i}"));
        calls.push(ToolCall {
            id,
            name,
            arguments,
        });
    }
    let usage = v.get("usage").map(|u| Usage {
        input: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        output: u
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        cached_input: u
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64),
        cache_write: None,
        thinking: None,
    });
    Ok(Answer {
        response: Response {
            text,
            calls,
            searches: Vec::new(),
            echo: None,
        },
        usage,
        latency: None,
        truncated: choice.get("finish_reason").and_then(Value::as_str) == Some("length"),
        refusal: msg
            .get("refusal")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

fn clip(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}
