//! The vocabulary every strategy speaks: what it adds to the context ([`Rendered`]),
//! what the model has been shown and done in one episode ([`State`]), the answer to a
//! call and what it meant ([`Resolution`], [`Effect`], with the refusals and events of
//! [`crate::events`]), and the [`Strategy`] trait itself.
//!
//! # Episode state
//!
//! [`State`] holds what every strategy shares: the definitions shown, the skills
//! loaded, what was fetched and executed, what the result budget cut, and the tool
//! list the composite sends (the selection step's loaded set, or the tools tool search
//! and retrieval have surfaced). Nothing in it belongs to one strategy. A strategy
//! that needs state of its own (what `mcp-resource` has authorized, say) defines a
//! type in its own file — `Clone + Default + Debug + Send + Sync + 'static` — and reads
//! and writes it with [`State::own`] and [`State::own_mut`]: one value per type and
//! episode, made on first use, cloned with the state (the oracle plans on clones), and
//! never shared between episodes.
//!
//! # Events
//!
//! A strategy counts what its protocol defines through one path: a refusal is
//! `Effect::Error` with [`ProtocolError::Defined`], an event that is not a refusal (a
//! search, a resource read) is the `event` of `Effect::Fetched`, each named by an
//! [`EventKind`] declared in the strategy's file and listed in [`super::defined`]. The
//! record counts each under its name; the reports show it by that name.

use std::any::{Any, TypeId};
use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{json, Value};

pub use crate::events::{Event, EventKind, ProtocolError};

use crate::catalog::{Address, Catalog};
use crate::environment::{Databases, QueryError, QueryResult};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

use super::config::ProtocolConfig;
use crate::hash::FastSet;

/// What one strategy adds to the context.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// A system-prompt section (empty for none).
    pub section: String,
    pub tools: Vec<ToolDef>,
}

impl Rendered {
    /// Tool definitions and no system-prompt section (every legacy, built-in and
    /// held-back list).
    pub fn tools(tools: Vec<ToolDef>) -> Rendered {
        Rendered {
            section: String::new(),
            tools,
        }
    }
}

/// What the model has been shown and done so far in one episode.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Addresses whose full definition is (or was) in the context.
    pub shown: FastSet<Address>,
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
    /// Addresses the last call showed for the first time (so that a definition the
    /// result budget then cut can be taken back without touching earlier ones).
    pub newly_shown: Vec<Address>,
    /// Addresses whose definitions were fetched but cut from the answer by the result
    /// budget: never shown whole. A model that calls them calls blind.
    pub cut: BTreeSet<Address>,
    /// Each strategy's own state of this episode, by type ([`State::own`]).
    pub own: OwnStates,
    /// The user turn being answered (0-based; a single query has only turn 0).
    pub turn: usize,
    /// Where in `executed` the current turn's calls begin.
    pub turn_start: usize,
    /// The last filtered tool list a composite built for this state.
    pub visible: VisibleMemo,
}

/// The last filtered tool list a composite built for an episode, with what it was
/// built from (the composite, the loaded names, how many the selection step loaded).
/// The requests of one episode mostly send the same list: they share one, which lets
/// the runner reuse its counted texts, instead of cloning every definition (and
/// rendering `request_tools`' key) per request. A clone of the state starts empty,
/// so nothing built for one episode reaches another.
#[derive(Default)]
pub struct VisibleMemo(std::sync::Mutex<Option<VisibleKey>>);

struct VisibleKey {
    composite: u64,
    active: Vec<String>,
    selected: usize,
    tools: std::sync::Arc<[ToolDef]>,
}

impl VisibleMemo {
    /// The list built last, if it was built by `composite` from these names.
    pub fn get(
        &self,
        composite: u64,
        active: &[String],
        selected: usize,
    ) -> Option<std::sync::Arc<[ToolDef]>> {
        let held = self.0.lock().expect("visible memo lock");
        held.as_ref()
            .filter(|k| k.composite == composite && k.selected == selected && k.active == active)
            .map(|k| k.tools.clone())
    }

    /// Keeps `tools` as the list built by `composite` from these names.
    pub fn put(
        &self,
        composite: u64,
        active: &[String],
        selected: usize,
        tools: std::sync::Arc<[ToolDef]>,
    ) {
        *self.0.lock().expect("visible memo lock") = Some(VisibleKey {
            composite,
            active: active.to_vec(),
            selected,
            tools,
        });
    }
}

impl Clone for VisibleMemo {
    fn clone(&self) -> Self {
        VisibleMemo::default()
    }
}

impl std::fmt::Debug for VisibleMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VisibleMemo")
    }
}

impl State {
    /// This episode's state of type `T`, if a strategy made one.
    pub fn own<T: PartState + Clone + Default>(&self) -> Option<&T> {
        self.own
            .0
            .iter()
            .find(|(id, _)| *id == TypeId::of::<T>())
            .and_then(|(_, s)| (**s).as_any().downcast_ref::<T>())
    }

    /// This episode's state of type `T`, made (`T::default()`) on first use.
    pub fn own_mut<T: PartState + Clone + Default>(&mut self) -> &mut T {
        let id = TypeId::of::<T>();
        let at = match self.own.0.iter().position(|(i, _)| *i == id) {
            Some(at) => at,
            None => {
                self.own.0.push((id, Box::new(T::default())));
                self.own.0.len() - 1
            }
        };
        (*self.own.0[at].1)
            .as_any_mut()
            .downcast_mut::<T>()
            .expect("a state is stored under its own type")
    }
}

/// A strategy's own episode state: any `Clone + Debug + Send + Sync` type of its file.
pub trait PartState: Any + Send + Sync + std::fmt::Debug {
    fn clone_box(&self) -> Box<dyn PartState>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Send + Sync + std::fmt::Debug> PartState for T {
    fn clone_box(&self) -> Box<dyn PartState> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The strategies' own states of one episode, one per type (read and written through
/// [`State::own`] and [`State::own_mut`]).
#[derive(Debug, Default)]
pub struct OwnStates(Vec<(TypeId, Box<dyn PartState>)>);

impl Clone for OwnStates {
    fn clone(&self) -> OwnStates {
        OwnStates(
            self.0
                .iter()
                .map(|(id, s)| (*id, (**s).clone_box()))
                .collect(),
        )
    }
}

/// The effect of one call, for scoring.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// Protocol: definitions (or catalog listings) entered the context.
    Fetched {
        addresses: Vec<Address>,
        /// Whether the answer ranks what it shows, best first (a search's results).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        ranked: bool,
        /// The event the strategy counts for this call (a search, a resource read).
        #[serde(skip_serializing_if = "Option::is_none")]
        event: Option<Event>,
        /// Top-level tools that join the visible tool list from the next request on
        /// (tool search); empty for definitions returned as text.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        join: Vec<String>,
        /// For definitions returned as text: where each address's definition ends in
        /// the answer (a byte offset, in the order of `addresses`), so that a result
        /// cut by the budget shows only the definitions it still holds whole. Empty
        /// when the answer has no per-address parts (a skill's text, a schema listing).
        #[serde(skip)]
        ends: Vec<usize>,
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
    /// A program ran (code mode): the calls it made, in the order it made them, and
    /// its error when it ended with one.
    Program {
        calls: Vec<ProgramCall>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    Error {
        error: ProtocolError,
        /// The model tried to act on something that does not exist, or wrote arguments
        /// that do not parse: a call to an unknown tool (or an `execute` / `call` /
        /// `query` of an unknown connector, action, server, tool or database), or
        /// arguments that are not a JSON object. Such a call is an attempt, not an
        /// abstention, whatever it would have done.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        malformed: bool,
    },
}

/// One call a program made: the function (`api.<group>.<function>`) and its effect (an
/// `Executed` effect, as any call's).
#[derive(Debug, Clone, Serialize)]
pub struct ProgramCall {
    pub function: String,
    pub effect: Effect,
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
            effect: Effect::Error {
                error,
                malformed: false,
            },
        }
    }

    /// A protocol error on a call the model tried to make (see `Effect::Error`'s
    /// `malformed`): an unknown tool or target of an execution, arguments that do not
    /// parse.
    pub fn malformed(error: ProtocolError, message: impl Into<String>) -> Resolution {
        Resolution {
            content: json!({"error": message.into()}).to_string(),
            effect: Effect::Error {
                error,
                malformed: true,
            },
        }
    }

    pub fn fetched(content: String, addresses: Vec<Address>) -> Resolution {
        Resolution::fetched_at(content, addresses, Vec::new())
    }

    /// Definitions returned as text, each ending at its offset in `ends`.
    pub fn fetched_at(content: String, addresses: Vec<Address>, ends: Vec<usize>) -> Resolution {
        assert!(ends.is_empty() || ends.len() == addresses.len());
        Resolution {
            content,
            effect: Effect::Fetched {
                addresses,
                ranked: false,
                event: None,
                join: Vec::new(),
                ends,
            },
        }
    }

    /// This answer, counted as `event` (a search, a resource read).
    pub fn counted(mut self, kind: EventKind) -> Resolution {
        if let Effect::Fetched { event, .. } = &mut self.effect {
            *event = Some(kind.event());
        }
        self
    }

    /// This error, on a call the model tried to make when `attempt` holds.
    pub fn malformed_if(mut self, attempt: bool) -> Resolution {
        if let Effect::Error { malformed, .. } = &mut self.effect {
            *malformed |= attempt;
        }
        self
    }

    /// A protocol error whose answer is a structured JSON document (the MCP
    /// Progressive Disclosure extension's `{"error": {"code": …}}`).
    pub fn error_json(error: ProtocolError, body: Value) -> Resolution {
        Resolution {
            content: body.to_string(),
            effect: Effect::Error {
                error,
                malformed: false,
            },
        }
    }
}

/// What a strategy may use while answering a call.
pub struct Env<'a> {
    pub catalog: &'a Catalog,
    pub databases: &'a Databases,
    pub config: &'a ProtocolConfig,
    /// The conversation's live MCP servers, when the scenario has any: they answer
    /// calls to their tools instead of the fixtures.
    pub live: Option<&'a dyn crate::environment::live::LiveCalls>,
}

/// What a strategy retrieved for a query before the model was asked (retrieval).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Retrieved {
    /// The tool shown.
    pub tool: String,
    pub address: Address,
    /// Its retrieval score.
    pub score: f64,
    /// 1 = best.
    pub rank: usize,
}

/// One way of disclosing resources: one kind, several kinds (tool search and
/// retrieval span every kind held back), or the built-in tools. Strategies are built
/// once per scenario × mode and shared read-only by every episode in flight.
pub trait Strategy: Send + Sync {
    /// Whether calls to `address` go through this strategy.
    fn owns(&self, address: &Address) -> bool;
    /// Its place in the tool list, in FIM One's registry order: built-ins 0, API
    /// connectors 1, databases 2, skills 3, MCP 4, strategies spanning kinds 5.
    fn order(&self) -> u8;
    /// Its system-prompt section and tool definitions.
    fn render(&self) -> &Rendered;
    /// The tools of `render()` visible at the first request, when it holds the others
    /// back until a search or retrieval surfaces them; `None` = all of them.
    fn held_back(&self) -> Option<Vec<String>> {
        None
    }
    /// The address one of its tools executes, for tools that execute one address
    /// (legacy tools and built-ins); `None` for meta-tools.
    fn address_of(&self, _tool: &str) -> Option<Address> {
        None
    }
    /// Acts on the query before the model is asked (retrieval): the tools to show.
    fn at_query(&self, _query: &str) -> Vec<Retrieved> {
        Vec::new()
    }
    /// Whether it ranks what it shows (a search's or a retrieval's results, best
    /// first), so that recall@k and MRR mean something for it.
    fn ranks(&self) -> bool {
        false
    }
    /// The events it defines (refusals and others), declared in its file and listed in
    /// [`super::defined::DEFINED`].
    fn events(&self) -> &'static [EventKind] {
        &[]
    }
    /// Addresses whose definitions are in the context from the first request.
    fn shown_up_front(&self) -> Vec<Address>;
    /// Answers a call to one of its tools (`tool` is one of `render().tools`).
    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution;
    /// The next call (tool name, arguments) on the shortest route to `target` that
    /// never calls something whose definition was not shown; `None` when nothing is
    /// left to do (a skill already in context).
    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)>;
    /// Code mode: a program making `calls` (address and arguments) in order, where
    /// `results` are what each would return and `query` is the user's text (the
    /// oracle's program); `None` for a strategy that runs no programs.
    fn program(
        &self,
        _calls: &[(Address, Value)],
        _results: &[Value],
        _query: &str,
    ) -> Option<String> {
        None
    }
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

/// A progressive meta-tool's two leading arguments: its `subcommand` and the container
/// it names (`connector`, `database`, `server`), or the protocol error of the first one
/// missing.
#[allow(clippy::result_large_err)]
pub(crate) fn meta_args<'v>(
    args: &'v Value,
    container: &str,
    tool: &str,
) -> Result<(&'v str, &'v str), Resolution> {
    match (
        arg_str(args, "subcommand", tool),
        arg_str(args, container, tool),
    ) {
        (Ok(s), Ok(n)) => Ok((s, n)),
        (Err(r), _) | (_, Err(r)) => Err(r),
    }
}

/// The answer to a progressive meta-tool naming a container that does not exist: an
/// unknown target, and a malformed call when the subcommand would have acted
/// (`execute`, `query`, `call`) rather than looked (`discover`, `list_tables`).
pub(crate) fn no_container(what: &str, name: &str, valid_names: String, acted: bool) -> Resolution {
    Resolution::error(
        ProtocolError::UnknownTarget,
        format!("no {what} `{name}`; {valid_names}"),
    )
    .malformed_if(acted)
}
