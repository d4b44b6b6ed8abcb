//! The vocabulary every strategy speaks: what it adds to the context ([`Rendered`]),
//! what the model has been shown and done in one episode ([`State`]), the answer to a
//! call and what it meant ([`Resolution`], [`Effect`], [`ProtocolError`]), and the
//! [`Strategy`] trait itself.

use std::collections::{BTreeSet, HashSet};

use serde::Serialize;
use serde_json::{json, Value};

use crate::catalog::{Address, Catalog, Kind};
use crate::environment::{Databases, QueryError, QueryResult};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

use super::config::ProtocolConfig;

/// What one strategy adds to the context.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// A system-prompt section (empty for none).
    pub section: String,
    pub tools: Vec<ToolDef>,
}

/// What the model has been shown and done so far in one episode.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Addresses whose full definition is (or was) in the context.
    pub shown: HashSet<Address>,
    /// Skills whose full text is in the context.
    pub loaded_skills: BTreeSet<String>,
    /// Tool names loaded, in the order the model is sent them: those the selection
    /// step kept (catalog order, then the pinned ones), then those `request_tools`
    /// loaded (in the order asked for); `None` = all.
    pub active: Option<Vec<String>>,
    /// How many of `active` the selection step loaded: `request_tools` comes after
    /// them, and the tools it loads after it.
    pub selected: usize,
    /// Addresses fetched through meta-tools, in order, for the overfetch counter.
    pub fetched: Vec<Address>,
    /// Addresses executed so far, in order.
    pub executed: Vec<Address>,
}

/// A protocol error: the call was not understood or not allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtocolError {
    /// A tool, connector, action, server, database or skill name not in the catalog.
    UnknownTarget,
    /// A meta-tool subcommand that does not exist.
    BadSubcommand,
    /// Arguments that are not JSON, or miss what the (meta-)tool requires.
    SchemaViolation,
    /// A tool that exists but is not loaded (selection step).
    NotLoaded,
}

impl ProtocolError {
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolError::UnknownTarget => "unknown_target",
            ProtocolError::BadSubcommand => "bad_subcommand",
            ProtocolError::SchemaViolation => "schema_violation",
            ProtocolError::NotLoaded => "not_loaded",
        }
    }
}

/// The effect of one call, for scoring.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Protocol: definitions (or catalog listings) entered the context.
    Fetched {
        addresses: Vec<Address>,
    },
    /// A real call, with the arguments it was made with.
    Executed {
        address: Address,
        args: Value,
        /// JSON Schema violations of `args` (empty = valid).
        schema_errors: Vec<String>,
        /// Whether the definition of `address` had been shown before the call.
        blind: bool,
        #[serde(skip)]
        sql_result: Option<Result<QueryResult, QueryError>>,
    },
    Error {
        error: ProtocolError,
    },
}

/// The answer to one call: the text returned to the model, and what it meant.
#[derive(Debug, Clone)]
pub struct Resolution {
    pub content: String,
    pub effect: Effect,
}

impl Resolution {
    pub fn error(error: ProtocolError, message: impl Into<String>) -> Resolution {
        Resolution {
            content: json!({"error": message.into()}).to_string(),
            effect: Effect::Error { error },
        }
    }

    pub fn fetched(content: String, addresses: Vec<Address>) -> Resolution {
        Resolution {
            content,
            effect: Effect::Fetched { addresses },
        }
    }
}

/// What a strategy may use while answering a call.
pub struct Env<'a> {
    pub catalog: &'a Catalog,
    pub databases: &'a Databases,
    pub config: &'a ProtocolConfig,
}

/// One way of disclosing one kind of resource. Strategies are built once per
/// scenario × mode and shared read-only by every episode in flight.
pub trait Strategy: Send + Sync {
    /// The kind it discloses; `None` for built-in tools.
    fn kind(&self) -> Option<Kind>;
    /// Its system-prompt section and tool definitions.
    fn render(&self) -> &Rendered;
    /// Addresses whose definitions are in the context from the first turn.
    fn shown_up_front(&self) -> Vec<Address>;
    /// Answers a call to one of its tools (`tool` is one of `render().tools`).
    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution;
    /// The next call (tool name, arguments) on the shortest route to `target` that
    /// never calls something whose definition was not shown; `None` when nothing is
    /// left to do (a skill already in context).
    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)>;
}

/// `"names: a, b, c"` for error messages that list valid values.
pub(crate) fn valid(what: &str, names: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let v: Vec<String> = names.into_iter().map(|s| s.as_ref().to_string()).collect();
    format!("valid {what}: {}", v.join(", "))
}

/// A meta-tool's `parameters` argument as FIM One reads it (`parameters or {}`): any
/// value Python counts as false — missing, `null`, `false`, `0`, `""`, `[]`, `{}` —
/// is no parameters.
pub(crate) fn parameters_arg(args: &Value) -> Value {
    match args.get("parameters") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => json!({}),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => json!({}),
        Some(Value::String(s)) if s.is_empty() => json!({}),
        Some(Value::Array(a)) if a.is_empty() => json!({}),
        Some(v) => v.clone(),
    }
}

/// A string argument, or a protocol error naming it.
// The error is the reply to the model, made at most once per call: size does not matter.
#[allow(clippy::result_large_err)]
pub(crate) fn arg_str<'v>(args: &'v Value, key: &str, tool: &str) -> Result<&'v str, Resolution> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            Resolution::error(
                ProtocolError::SchemaViolation,
                format!("`{tool}` needs a string `{key}`"),
            )
        })
}
