//! `gemini:<model>`: Gemini's `generateContent` (the Gemini API, `v1beta`) with
//! function calling.
//!
//! The context becomes `systemInstruction`, `contents` (user turns; model turns with
//! `text` and `functionCall` parts; the tool results of one answer as
//! `functionResponse` parts of one user turn, in call order), `tools` with one
//! `functionDeclarations` list whose every schema goes as `parametersJsonSchema` (the
//! catalog's JSON Schema as discbench counts it, never converted: [`schema_notes`]
//! says per tool what Gemini documents it may not honour), `toolConfig` (the selection
//! step's forced call as mode `ANY` with that one name; `allowed-tools` as mode
//! `VALIDATED` with `allowedFunctionNames`, since `ANY` would force a call on every
//! request and an agent loop that ends on an answer could never end), and
//! `generationConfig` (temperature, `maxOutputTokens`, seed, and JSON output for the
//! selection step's JSON level). The key goes in the `x-goog-api-key` header, never
//! in the URL. A call the API could not make (`MALFORMED_FUNCTION_CALL`) goes back
//! as text, its error too: a `functionCall` the model never made would carry no
//! thought signature, which Gemini 3 refuses.
//!
//! An answer's parts are read back: text (thought summaries aside), function calls
//! (their `args` object as the call's arguments), and — when any part carries a
//! `thoughtSignature` — every part verbatim, which goes back in place of the model
//! turn discbench would rebuild, as the API asks. A `MALFORMED_FUNCTION_CALL` or
//! `UNEXPECTED_TOOL_CALL` finish is a call that does not parse (scored as a malformed
//! call, never as an abstention); `MAX_TOKENS` is a truncation; a safety finish or a
//! blocked prompt is a refusal. Usage: `promptTokenCount` is the whole input, cache
//! reads (`cachedContentTokenCount`) included; the output is `candidatesTokenCount`
//! plus `thoughtsTokenCount` (thinking is billed as output), the thinking kept apart.
//! Gemini caches on its own (implicit caching): nothing is asked for, and a request
//! whose usage names no cached tokens read none.

use serde_json::{json, Map, Value};

use super::backend::{Answer, ModelError, Purpose};
use super::http::{Api, Endpoint, HttpBackend};
use crate::record::Usage;
use crate::wire::{Context, Message, Response, ToolCall, ToolDef};

/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
/// The API version discbench speaks.
pub const API_VERSION: &str = "v1beta";
/// The prefix of a call id discbench made up (the API sent none): such ids are never
/// sent back, since the API pairs a response with its call by name and order then.
pub const MADE_UP_ID: &str = "discbench-";

/// The `generateContent` wire format.
pub struct GenerateContent;

/// A model behind the Gemini API.
pub type Gemini = HttpBackend<GenerateContent>;

impl Api for GenerateContent {
    fn names(&self) -> Option<crate::names::NameRule> {
        Some(crate::names::GEMINI)
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
            .post(url(&e.base_url, &e.model))
            .header("content-type", "application/json")
            .body(body(e, purpose, cx).to_string());
        if let Some(k) = &e.key {
            req = req.header("x-goog-api-key", k.expose());
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

/// `{base}/v1beta/models/{model}:generateContent` (a model id given as
/// `models/…` keeps its own prefix).
pub fn url(base: &str, model: &str) -> String {
    let model = model.strip_prefix("models/").unwrap_or(model);
    format!("{base}/{API_VERSION}/models/{model}:generateContent")
}

/// One function declaration: the schema as the catalog holds it, in
/// `parametersJsonSchema` (JSON Schema; `parameters` takes OpenAPI's subset instead,
/// and the two are mutually exclusive).
pub fn declaration(t: &ToolDef) -> Value {
    json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters})
}

/// The JSON Schema keywords Gemini documents as supported ("only the following
/// properties are supported", google-genai 3.6.1's `response_json_schema`, the one list
/// it publishes; `parametersJsonSchema` is documented as JSON Schema without one of its
/// own). Any other keyword is sent as written, and the model may not honour it
/// ([`schema_notes`]).
pub const SUPPORTED_KEYWORDS: [&str; 21] = [
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
];

/// Keywords that constrain nothing (annotations), never noted.
const ANNOTATIONS: [&str; 5] = ["default", "examples", "example", "$comment", "$schema"];

/// What Gemini may not take as discbench sends it, per tool: a schema that does not
/// describe an object (the API requires one), and every keyword outside
/// [`SUPPORTED_KEYWORDS`] with where it stands. Nothing is dropped or converted — the
/// schema goes as counted — so this is said, not fixed.
pub fn schema_notes(t: &ToolDef) -> Vec<String> {
    let mut notes = Vec::new();
    let p = &t.parameters;
    let object = p.get("type").and_then(Value::as_str) == Some("object")
        || (p.get("type").is_none() && p.get("properties").is_some());
    if !object {
        notes.push("its parameters are not an object schema".to_string());
    }
    let mut unknown = std::collections::BTreeMap::<String, String>::new();
    keywords(p, "", &mut unknown);
    if !unknown.is_empty() {
        let list: Vec<String> = unknown
            .iter()
            .map(|(k, at)| format!("`{k}` at {at}"))
            .collect();
        notes.push(format!(
            "keywords outside Gemini's documented subset: {}",
            list.join(", ")
        ));
    }
    notes
}

/// Collects the keywords of schema `s` (at `at`) outside the supported list: the
/// first place each is met.
fn keywords(s: &Value, at: &str, out: &mut std::collections::BTreeMap<String, String>) {
    let Some(o) = s.as_object() else {
        return;
    };
    let here = if at.is_empty() { "/" } else { at };
    for (k, v) in o {
        match k.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                if k != "properties" && k != "$defs" {
                    out.entry(k.clone()).or_insert_with(|| here.to_string());
                }
                for (name, sub) in v.as_object().into_iter().flatten() {
                    keywords(sub, &format!("{at}/{k}/{name}"), out);
                }
            }
            "items" | "additionalProperties" | "not" => {
                if k == "not" {
                    out.entry(k.clone()).or_insert_with(|| here.to_string());
                }
                match v {
                    Value::Array(xs) => {
                        for (i, x) in xs.iter().enumerate() {
                            keywords(x, &format!("{at}/{k}/{i}"), out);
                        }
                    }
                    x => keywords(x, &format!("{at}/{k}"), out),
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if k == "allOf" {
                    out.entry(k.clone()).or_insert_with(|| here.to_string());
                }
                for (i, x) in v.as_array().into_iter().flatten().enumerate() {
                    keywords(x, &format!("{at}/{k}/{i}"), out);
                }
            }
            other if SUPPORTED_KEYWORDS.contains(&other) || ANNOTATIONS.contains(&other) => {}
            other => {
                out.entry(other.to_string())
                    .or_insert_with(|| here.to_string());
            }
        }
    }
}

/// Whether a call id came from the API (and so goes back with its response).
fn from_api(id: &str) -> bool {
    !id.starts_with(MADE_UP_ID)
}

/// The id prefix of a call the API could not make (a malformed or unexpected call):
/// it goes back as text, never as a `functionCall` the model did not make.
const MALFORMED_ID: &str = "discbench-malformed-";

/// A call as a `functionCall` part: its arguments as the object the API takes (an
/// answer that was not one goes back as `{}`: the error was already answered).
fn call_part(c: &ToolCall) -> Value {
    let args = match serde_json::from_str::<Value>(&c.arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    };
    let mut f = Map::new();
    if from_api(&c.id) {
        f.insert("id".into(), json!(c.id));
    }
    f.insert("name".into(), json!(c.name));
    f.insert("args".into(), args);
    json!({ "functionCall": f })
}

/// The request body for a context.
pub fn body(endpoint: &Endpoint, _purpose: Purpose, cx: &Context) -> Value {
    let mut contents: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    let flush = |contents: &mut Vec<Value>, results: &mut Vec<Value>| {
        if !results.is_empty() {
            contents.push(json!({"role": "user", "parts": std::mem::take(results)}));
        }
    };
    for m in &cx.messages {
        match m {
            Message::User { content } => {
                flush(&mut contents, &mut results);
                contents.push(json!({"role": "user", "parts": [{"text": content}]}));
            }
            Message::Assistant {
                content,
                tool_calls,
                echo,
                ..
            } => {
                flush(&mut contents, &mut results);
                // The API's own parts, signatures and all, as it sent them.
                let echoed = echo
                    .as_deref()
                    .and_then(|e| serde_json::from_str::<Value>(e).ok())
                    .filter(|p| p.as_array().is_some_and(|a| !a.is_empty()));
                let parts = echoed.unwrap_or_else(|| {
                    let mut parts: Vec<Value> = Vec::new();
                    if let Some(t) = content.as_deref().filter(|t| !t.is_empty()) {
                        parts.push(json!({"text": t}));
                    }
                    parts.extend(tool_calls.iter().map(|c| {
                        if c.id.starts_with(MALFORMED_ID) {
                            // What the API said of the call it could not make.
                            json!({ "text": c.arguments })
                        } else {
                            call_part(c)
                        }
                    }));
                    if parts.is_empty() {
                        // A turn holds at least one part: an empty answer is empty text.
                        parts.push(json!({"text": ""}));
                    }
                    Value::Array(parts)
                });
                contents.push(json!({"role": "model", "parts": parts}));
            }
            Message::Tool {
                tool_call_id,
                name,
                content,
                ..
            } => {
                if tool_call_id.starts_with(MALFORMED_ID) {
                    // The error answered to a call the API could not make, as text.
                    results.push(json!({ "text": content }));
                    continue;
                }
                let mut f = Map::new();
                if from_api(tool_call_id) {
                    f.insert("id".into(), json!(tool_call_id));
                }
                f.insert("name".into(), json!(name));
                f.insert("response".into(), json!({ "output": content }));
                results.push(json!({ "functionResponse": f }));
            }
        }
    }
    flush(&mut contents, &mut results);
    let mut b = Map::new();
    if !cx.system.is_empty() {
        b.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": cx.system}]}),
        );
    }
    b.insert("contents".into(), Value::Array(contents));
    if !cx.tools.is_empty() {
        b.insert(
            "tools".into(),
            json!([{"functionDeclarations": cx.tools.iter().map(declaration).collect::<Vec<_>>()}]),
        );
        let config = match (&cx.tool_choice, &cx.allowed) {
            (Some(f), _) => json!({"mode": "ANY", "allowedFunctionNames": [f]}),
            // VALIDATED holds calls to the allowed names and lets the model answer in
            // text; ANY would force a call on every request.
            (None, Some(allowed)) => {
                json!({"mode": "VALIDATED", "allowedFunctionNames": allowed})
            }
            (None, None) => json!({"mode": "AUTO"}),
        };
        b.insert(
            "toolConfig".into(),
            json!({ "functionCallingConfig": config }),
        );
    }
    let s = &endpoint.sampling;
    let mut g = Map::new();
    if let Some(t) = s.temperature {
        g.insert("temperature".into(), json!(t));
    }
    if let Some(m) = s.max_tokens {
        g.insert("maxOutputTokens".into(), json!(m));
    }
    if let Some(seed) = s.seed {
        g.insert("seed".into(), json!(seed));
    }
    if cx.json_mode {
        g.insert("responseMimeType".into(), json!("application/json"));
    }
    if !g.is_empty() {
        b.insert("generationConfig".into(), Value::Object(g));
    }
    Value::Object(b)
}

/// Finish reasons that mean the answer was withheld for its content (`LANGUAGE`, a
/// language the model does not support, is not one: its answer is empty).
const REFUSALS: [&str; 6] = [
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
];

/// The name a malformed call's message shows, if any: the function after
/// `default_api.` (Gemini writes the attempted call as Python,
/// `print(default_api.NAME(…))`), else the first `NAME(`.
fn malformed_name(message: &str) -> Option<String> {
    let name_char = |c: char| c.is_ascii_alphanumeric() || "_.:-".contains(c);
    if let Some(i) = message.find("default_api.") {
        let rest = &message[i + "default_api.".len()..];
        let name: String = rest.chars().take_while(|&c| name_char(c)).collect();
        return (!name.is_empty()).then_some(name);
    }
    let open = message.find('(')?;
    let head = &message[..open];
    let start = head.rfind(|c: char| !name_char(c)).map_or(0, |i| i + 1);
    let name = &head[start..];
    (!name.is_empty()).then(|| name.to_string())
}

/// Reads a `generateContent` answer.
pub fn parse(v: &Value) -> Result<Answer, ModelError> {
    let usage = v.get("usageMetadata").map(|u| {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        let thinking = n("thoughtsTokenCount");
        Usage {
            input: n("promptTokenCount").unwrap_or(0) + n("toolUsePromptTokenCount").unwrap_or(0),
            output: n("candidatesTokenCount").unwrap_or(0) + thinking.unwrap_or(0),
            // Left out when nothing was read: a request always reports its reads.
            cached_input: Some(n("cachedContentTokenCount").unwrap_or(0)),
            cache_write: None,
            thinking,
        }
    });
    let Some(candidate) = v
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        // No candidate: the prompt was blocked, or the answer holds nothing.
        return match v
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            Some(reason) => Ok(Answer {
                response: Response::default(),
                usage,
                latency: None,
                truncated: false,
                refusal: Some(format!("the prompt was blocked: {reason}")),
            }),
            None => Err(ModelError::Undecodable("no candidates".into())),
        };
    };
    let finish = candidate
        .get("finishReason")
        .and_then(Value::as_str)
        .unwrap_or("");
    let message = candidate
        .get("finishMessage")
        .and_then(Value::as_str)
        .unwrap_or("");
    let parts: &[Value] = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut signed = false;
    for (k, p) in parts.iter().enumerate() {
        signed |= p.get("thoughtSignature").is_some();
        if p.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            text.push_str(t);
        }
        if let Some(f) = p.get("functionCall") {
            calls.push(ToolCall {
                id: f
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|id| !id.is_empty())
                    .map_or_else(|| format!("{MADE_UP_ID}call-{k}"), str::to_string),
                name: f
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                arguments: f.get("args").map_or_else(|| "{}".into(), Value::to_string),
            });
        }
    }
    let malformed = matches!(finish, "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL");
    if malformed {
        // The call the model tried, as text that does not parse: scored as a
        // malformed call. Its parts are not sent back (they hold no such call).
        calls.push(ToolCall {
            id: format!("{MALFORMED_ID}{}", parts.len()),
            name: malformed_name(message).unwrap_or_default(),
            arguments: if message.is_empty() {
                finish.to_string()
            } else {
                message.to_string()
            },
        });
    }
    let refusal = REFUSALS.contains(&finish).then(|| {
        if message.is_empty() {
            finish.to_string()
        } else {
            format!("{finish}: {message}")
        }
    });
    Ok(Answer {
        response: Response {
            text: (!text.is_empty()).then_some(text),
            calls,
            searches: Vec::new(),
            echo: (signed && !malformed).then(|| Value::Array(parts.to_vec()).to_string()),
        },
        usage,
        latency: None,
        truncated: finish == "MAX_TOKENS",
        refusal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Endpoint {
        Endpoint {
            name: "gemini:m".into(),
            model: "m".into(),
            base_url: "http://127.0.0.1:1".into(),
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
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        }
    }

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall::new(id, name, &json!({"q": id}))
    }

    fn context() -> Context {
        Context {
            system: "Be brief.".into(),
            tools: vec![tool("a"), tool("b")].into(),
            messages: vec![
                Message::User {
                    content: "Do it.".into(),
                },
                Message::assistant(
                    Some("Looking.".into()),
                    vec![call("fc-1", "a"), call(&format!("{MADE_UP_ID}call-1"), "b")],
                ),
                Message::Tool {
                    tool_call_id: "fc-1".into(),
                    name: "a".into(),
                    content: "A done".into(),
                    references: Vec::new(),
                },
                Message::Tool {
                    tool_call_id: format!("{MADE_UP_ID}call-1"),
                    name: "b".into(),
                    content: "B done".into(),
                    references: Vec::new(),
                },
            ],
            ..Context::default()
        }
    }

    #[test]
    fn a_context_becomes_contents_declarations_and_a_tool_config() {
        let b = body(&endpoint(), Purpose::Act, &context());
        assert_eq!(
            b["systemInstruction"],
            json!({"parts": [{"text": "Be brief."}]})
        );
        assert_eq!(
            b["tools"][0]["functionDeclarations"][0],
            json!({"name": "a", "description": "a does it.",
                   "parametersJsonSchema": {"type": "object", "properties": {"q": {"type": "string"}}}})
        );
        assert_eq!(
            b["toolConfig"],
            json!({"functionCallingConfig": {"mode": "AUTO"}})
        );
        assert!(
            b.get("generationConfig").is_none(),
            "nothing set, nothing sent"
        );
        let contents = b["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 3);
        assert_eq!(
            contents[0],
            json!({"role": "user", "parts": [{"text": "Do it."}]})
        );
        // The API's id goes back; one discbench made up does not.
        assert_eq!(
            contents[1],
            json!({"role": "model", "parts": [
                {"text": "Looking."},
                {"functionCall": {"id": "fc-1", "name": "a", "args": {"q": "fc-1"}}},
                {"functionCall": {"name": "b", "args": {"q": format!("{MADE_UP_ID}call-1")}}}]})
        );
        // Both results in one user turn, in call order.
        assert_eq!(
            contents[2],
            json!({"role": "user", "parts": [
                {"functionResponse": {"id": "fc-1", "name": "a", "response": {"output": "A done"}}},
                {"functionResponse": {"name": "b", "response": {"output": "B done"}}}]})
        );
    }

    #[test]
    fn forced_allowed_json_and_sampling_each_have_their_field() {
        let mut cx = context();
        cx.tool_choice = Some("a".into());
        let b = body(&endpoint(), Purpose::Select { max: 3 }, &cx);
        assert_eq!(
            b["toolConfig"]["functionCallingConfig"],
            json!({"mode": "ANY", "allowedFunctionNames": ["a"]})
        );
        cx.tool_choice = None;
        cx.allowed = Some(vec!["b".into()]);
        let b = body(&endpoint(), Purpose::Act, &cx);
        assert_eq!(
            b["toolConfig"]["functionCallingConfig"],
            json!({"mode": "VALIDATED", "allowedFunctionNames": ["b"]})
        );
        let mut e = endpoint();
        e.sampling.temperature = Some(0.0);
        e.sampling.max_tokens = Some(99);
        e.sampling.seed = Some(7);
        let json_cx = Context {
            system: String::new(),
            json_mode: true,
            messages: vec![Message::User {
                content: "Pick.".into(),
            }],
            ..Context::default()
        };
        let b = body(&e, Purpose::Select { max: 3 }, &json_cx);
        assert_eq!(
            b["generationConfig"],
            json!({"temperature": 0.0, "maxOutputTokens": 99, "seed": 7,
                   "responseMimeType": "application/json"})
        );
        assert!(b.get("systemInstruction").is_none());
        assert!(b.get("tools").is_none() && b.get("toolConfig").is_none());
        assert_eq!(
            url("https://x.test", "models/gemini-2.5-pro"),
            "https://x.test/v1beta/models/gemini-2.5-pro:generateContent"
        );
    }

    #[test]
    fn signed_parts_are_read_and_sent_back_as_received() {
        let parts = json!([
            {"text": "Thinking it over", "thought": true},
            {"text": "Calling."},
            {"functionCall": {"name": "a", "args": {"q": "x"}}, "thoughtSignature": "c2ln"},
            {"functionCall": {"name": "b", "args": {}}}
        ]);
        let a = parse(&json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 1000, "cachedContentTokenCount": 600,
                              "candidatesTokenCount": 20, "thoughtsTokenCount": 80}
        }))
        .unwrap();
        assert_eq!(
            a.response.text.as_deref(),
            Some("Calling."),
            "thoughts are not the answer"
        );
        assert_eq!(a.response.calls.len(), 2);
        assert_eq!(a.response.calls[0].arguments, r#"{"q":"x"}"#);
        assert!(a.response.calls[0].id.starts_with(MADE_UP_ID));
        assert_ne!(a.response.calls[0].id, a.response.calls[1].id);
        let u = a.usage.unwrap();
        assert_eq!(
            (u.input, u.cached_input, u.output, u.thinking),
            (1000, Some(600), 100, Some(80))
        );
        // The next request sends the parts as they came, signature and thought included.
        let mut cx = context();
        cx.messages.truncate(1);
        cx.messages.push(Message::Assistant {
            content: a.response.text.clone(),
            tool_calls: a.response.calls.clone(),
            searches: Vec::new(),
            echo: a.response.echo.clone(),
        });
        let b = body(&endpoint(), Purpose::Act, &cx);
        assert_eq!(b["contents"][1]["parts"], parts);
        // Unsigned parts are not kept: discbench rebuilds the turn.
        let a = parse(&json!({"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]})).unwrap();
        assert_eq!(a.response.echo, None);
        assert_eq!(a.usage, None);
    }

    #[test]
    fn finishes_that_are_not_answers() {
        let finish = |reason: &str, message: &str| {
            parse(&json!({"candidates": [{"content": {"parts": []},
                "finishReason": reason, "finishMessage": message}],
                "usageMetadata": {"promptTokenCount": 10}}))
            .unwrap()
        };
        let m = finish(
            "MALFORMED_FUNCTION_CALL",
            "Malformed function call: print(default_api.a(q=))",
        );
        assert_eq!(m.response.calls.len(), 1);
        assert_eq!(m.response.calls[0].name, "a");
        assert!(serde_json::from_str::<Value>(&m.response.calls[0].arguments).is_err());
        assert_eq!(m.response.echo, None);
        // Nothing was read from the cache: the request says so all the same.
        assert_eq!(m.usage.unwrap().cached_input, Some(0));
        // Sent back: the API's words as text, and the error as text, no call.
        let cx = Context {
            messages: vec![
                Message::User {
                    content: "Hi".into(),
                },
                Message::assistant(None, m.response.calls.clone()),
                Message::Tool {
                    tool_call_id: m.response.calls[0].id.clone(),
                    name: "a".into(),
                    content: "arguments are not JSON".into(),
                    references: Vec::new(),
                },
            ],
            ..Context::default()
        };
        let b = body(&endpoint(), Purpose::Act, &cx);
        assert_eq!(
            b["contents"][1]["parts"],
            json!([{"text": "Malformed function call: print(default_api.a(q=))"}])
        );
        assert_eq!(
            b["contents"][2],
            json!({"role": "user", "parts": [{"text": "arguments are not JSON"}]})
        );
        let u = finish("UNEXPECTED_TOOL_CALL", "");
        assert_eq!(u.response.calls[0].arguments, "UNEXPECTED_TOOL_CALL");
        assert!(finish("MAX_TOKENS", "").truncated);
        assert_eq!(finish("SAFETY", "").refusal.as_deref(), Some("SAFETY"));
        assert_eq!(finish("LANGUAGE", "").refusal, None);
        assert_eq!(finish("STOP", "").refusal, None);
        let blocked =
            parse(&json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})).unwrap();
        assert!(blocked.refusal.unwrap().contains("PROHIBITED_CONTENT"));
        assert!(matches!(parse(&json!({})), Err(ModelError::Undecodable(_))));
    }

    #[test]
    fn schema_notes_say_what_gemini_does_not_document() {
        assert!(schema_notes(&tool("a")).is_empty());
        let t = ToolDef {
            name: "t".into(),
            description: String::new(),
            parameters: json!({"type": "object", "default": {}, "properties": {
                "code": {"type": "string", "pattern": "^[A-Z]+$", "description": "d"},
                "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
                "kind": {"const": "x"}}}),
        };
        let notes = schema_notes(&t);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(
            notes[0],
            "keywords outside Gemini's documented subset: `const` at /properties/kind, \
             `minLength` at /properties/tags/items, `pattern` at /properties/code"
        );
        let scalar = ToolDef {
            parameters: json!({"type": "string"}),
            ..t
        };
        assert_eq!(
            schema_notes(&scalar),
            vec!["its parameters are not an object schema"]
        );
    }

    #[test]
    fn a_malformed_call_s_name_is_read_from_the_message() {
        assert_eq!(
            malformed_name("Malformed function call: print(default_api.get_weather(city='Paris'))")
                .as_deref(),
            Some("get_weather")
        );
        assert_eq!(malformed_name("call git__log(x=1"), Some("git__log".into()));
        assert_eq!(malformed_name("no call here"), None);
    }
}
