//! Models: what answers a context with text and/or tool calls (DESIGN §6).
//!
//! A [`Backend`] is built once per `--model` and shared by every task of a run
//! (`Send + Sync`); it opens a [`Session`] per episode, which answers [`Request`]s
//! asynchronously with an [`Answer`] (the response, plus the provider's usage and the
//! latency when it has them) or a typed [`ModelError`]. One file per backend:
//! [`oracle`] knows the expectation — it alone is handed the [`GroundTruth`] when its
//! session opens — and walks each strategy's protocol by the shortest route;
//! [`lexical`] sees only the context and ranks what it shows with BM25. Both are
//! deterministic and never fail.

pub mod anthropic;
pub mod bm25;
pub mod http;
pub mod lexical;
pub mod limit;
pub mod models_file;
pub mod openai;
pub mod oracle;
pub mod replay;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::record::Usage;
use crate::scenario::Expect;
use crate::strategy::{Composite, State};
use crate::wire::{Context, Response};

/// Why the model is being asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The selection step: answer with a JSON array of at most `max` tool names.
    Select { max: usize },
    /// A turn of the agent loop.
    Act,
}

/// How a mock model answers the selection step: a call of the forced function when
/// the request forces one, else the JSON object as text.
pub(crate) fn selection_answer(cx: &Context, names: &[String]) -> crate::wire::Response {
    let args = serde_json::json!({ "tools": names });
    match &cx.tool_choice {
        Some(f) => {
            crate::wire::Response::call(vec![crate::wire::ToolCall::new("call_select", f, &args)])
        }
        None => crate::wire::Response::say(args.to_string()),
    }
}

/// One request to a model: nothing but what a real model would be sent.
pub struct Request<'a> {
    pub purpose: Purpose,
    pub context: &'a Context,
}

/// A model's answer to one request.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub response: Response,
    /// What the provider reported it billed, when it reports it.
    pub usage: Option<Usage>,
    /// How long the answer took, when the backend measures it.
    pub latency: Option<Duration>,
    /// The answer was cut by the output token limit.
    pub truncated: bool,
    /// The provider marked the answer as a refusal (with its text, if any).
    pub refusal: Option<String>,
}

impl From<Response> for Answer {
    fn from(response: Response) -> Answer {
        Answer {
            response,
            usage: None,
            latency: None,
            truncated: false,
            refusal: None,
        }
    }
}

/// Why a request got no answer. None of these is the model's fault: after the
/// retries the runner allows, the outcome is recorded as an infra error and is never
/// counted as a wrong answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("rate limited{}", retry_after.map(|d| format!(" (retry after {} ms)", d.as_millis())).unwrap_or_default())]
    RateLimited { retry_after: Option<Duration> },
    #[error("timed out")]
    Timeout,
    #[error("server error (HTTP {status})")]
    Server { status: u16 },
    #[error("request rejected (HTTP {status}): {message}")]
    Rejected { status: u16, message: String },
    #[error("authentication failed: {0}")]
    Authentication(String),
    #[error("the answer could not be decoded: {0}")]
    Undecodable(String),
    /// The connection failed or was reset, or the answer was cut off mid-way.
    #[error("connection failed: {0}")]
    Connection(String),
    /// A replayed request that the recording does not hold.
    #[error("{0}")]
    Replay(String),
}

impl ModelError {
    /// Whether trying again may help.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Timeout
                | ModelError::Server { .. }
                | ModelError::Connection(_)
        )
    }

    /// The wait the provider asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after } => *retry_after,
            _ => None,
        }
    }
}

/// The episode state, shared with the one backend allowed to see it (the oracle).
/// The runner locks it only while it resolves calls, never across a model call.
pub type StateView = Arc<Mutex<State>>;

/// What the oracle is told when its session opens: the expectation and the
/// strategy's protocol, with a view of the episode state. Requests never carry it.
#[derive(Clone)]
pub struct GroundTruth {
    pub expect: Expect,
    pub protocol: Arc<Composite>,
    pub state: StateView,
}

/// One model endpoint (or mock), shared across the tasks of a run.
pub trait Backend: Send + Sync {
    /// The name outcomes carry, e.g. `oracle`.
    fn name(&self) -> &str;
    /// Whether its sessions must be handed the [`GroundTruth`] (the oracle only).
    fn wants_ground_truth(&self) -> bool {
        false
    }
    /// The sampling parameters every request carries (part of a recording's key);
    /// `null` for mock models.
    fn parameters(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// Prices in US dollars per million tokens, when known (cost reports).
    fn prices(&self) -> Option<models_file::Prices> {
        None
    }
    /// Whether it can be asked for a JSON object (OpenAI's JSON mode): the selection
    /// step then tries that between the forced call and plain text, as FIM One does.
    fn json_mode(&self) -> bool {
        false
    }
    /// A session for one episode, the work item `key` (recorders key on it).
    fn open(&self, key: &crate::record::OutcomeKey, truth: Option<GroundTruth>)
        -> Box<dyn Session>;
}

/// One episode's conversation with a model.
#[async_trait::async_trait]
pub trait Session: Send {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError>;
}

/// The mock model names `--model` accepts (besides `openai:<model>`,
/// `anthropic:<model>` and the entries of a `--models` file).
pub const MODELS: [&str; 2] = ["oracle", "lexical"];

/// A `--model` value that names no backend, or one that cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownModel {
    #[error("unknown model `{0}`; available: oracle, lexical, openai:<model>, anthropic:<model>, or a name from --models")]
    Name(String),
    #[error("model `{name}`: {message}")]
    Setup { name: String, message: String },
}

/// Where the HTTP backends get what `--model` does not say.
pub struct ModelOptions<'a> {
    pub models_file: Option<&'a models_file::ModelsFile>,
    /// `--openai-base-url`, else `OPENAI_BASE_URL`, else OpenAI's.
    pub openai_base_url: Option<String>,
    /// `--anthropic-base-url`, else `ANTHROPIC_BASE_URL`, else Anthropic's.
    pub anthropic_base_url: Option<String>,
    pub timeout: Duration,
    pub sampling: http::Sampling,
    /// Rate limits for every HTTP model (a models-file entry's own win).
    pub limits: limit::Limits,
    /// Reads an environment variable (keys are read from the environment only).
    pub env: &'a (dyn Fn(&str) -> Option<String> + Sync),
}

fn no_env(_: &str) -> Option<String> {
    None
}

impl Default for ModelOptions<'_> {
    fn default() -> Self {
        ModelOptions {
            models_file: None,
            openai_base_url: None,
            anthropic_base_url: None,
            timeout: http::DEFAULT_TIMEOUT,
            sampling: http::Sampling::default(),
            limits: limit::Limits::default(),
            env: &no_env,
        }
    }
}

/// Builds a mock backend from its CLI name (`oracle`, `lexical`).
pub fn build(spec: &str) -> Result<Arc<dyn Backend>, UnknownModel> {
    build_with(spec, &ModelOptions::default())
}

/// Builds a backend from a `--model` value: a mock, `openai:<model>`,
/// `anthropic:<model>`, or the name of a `--models` file entry.
pub fn build_with(spec: &str, o: &ModelOptions) -> Result<Arc<dyn Backend>, UnknownModel> {
    let setup = |message: String| UnknownModel::Setup {
        name: spec.to_string(),
        message,
    };
    if let Some(entry) = o.models_file.and_then(|f| f.get(spec)) {
        return entry.backend(o).map_err(setup);
    }
    match spec.split_once(':') {
        None if spec == "oracle" => Ok(Arc::new(oracle::Oracle)),
        None if spec == "lexical" => Ok(Arc::new(lexical::Lexical)),
        Some((p @ ("openai" | "anthropic"), model)) if !model.is_empty() => {
            let entry = models_file::Entry::direct(spec, p, model, o);
            entry.backend(o).map_err(setup)
        }
        _ => Err(UnknownModel::Name(spec.to_string())),
    }
}

/// A schema-valid placeholder for a value of `schema`: its default, first enum value,
/// first example or const, else a value of its type (required object properties filled
/// recursively).
pub fn placeholder(schema: &Value) -> Value {
    if let Some(v) = schema.get("default").or_else(|| schema.get("const")) {
        return v.clone();
    }
    if let Some(v) = schema.get("enum").and_then(|e| e.get(0)) {
        return v.clone();
    }
    if let Some(v) = schema.get("examples").and_then(|e| e.get(0)) {
        return v.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema.get(key).and_then(|a| a.as_array()).and_then(|a| {
            a.iter()
                .find(|s| s.get("type").and_then(Value::as_str) != Some("null"))
        }) {
            return placeholder(first);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ => {
            if schema.get("properties").is_some() {
                "object"
            } else {
                "string"
            }
        }
    };
    match ty {
        "integer" => json!(schema
            .get("minimum")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(1)),
        "number" => json!(schema
            .get("minimum")
            .and_then(Value::as_f64)
            .unwrap_or(1.0)
            .max(1.0)),
        "boolean" => json!(false),
        "null" => Value::Null,
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema
                .get("items")
                .map(placeholder)
                .unwrap_or(json!("example"));
            Value::Array((0..n).map(|_| item.clone()).collect())
        }
        "object" => fill_required(schema, &Map::new()),
        _ => json!(match schema.get("format").and_then(Value::as_str) {
            Some("date") => "2026-01-01",
            Some("date-time") => "2026-01-01T00:00:00Z",
            Some("email") => "user@example.com",
            Some("uri") | Some("url") => "https://example.com",
            _ => "example",
        }),
    }
}

/// An argument object: the `given` values, plus a placeholder for every other
/// required property.
pub fn fill_required(schema: &Value, given: &Map<String, Value>) -> Value {
    let mut out = given.clone();
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(req) = schema.get("required").and_then(Value::as_array) {
        for r in req.iter().filter_map(Value::as_str) {
            if !out.contains_key(r) {
                let sub = props.and_then(|p| p.get(r)).cloned().unwrap_or(json!({}));
                out.insert(r.to_string(), placeholder(&sub));
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_schema_valid() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 5},
                "when": {"type": "string", "format": "date"},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "opt": {"type": ["string", "null"]},
                "inner": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}
            },
            "required": ["n", "when", "kind", "tags", "inner"]
        });
        let v = fill_required(&schema, &Map::new());
        assert!(
            crate::strategy::schema_errors(&schema, &v).is_empty(),
            "{v}"
        );
        assert_eq!(v["n"], json!(5));
        assert!(v.get("opt").is_none());
    }
}
