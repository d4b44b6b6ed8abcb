//! Strategies: how the catalog is disclosed to the model and how its calls are answered
//! (DESIGN §5).
//!
//! A [`Mode`] picks one [`Strategy`] per resource kind; each strategy is one file and
//! renders a system-prompt section plus tool definitions, answers calls to its tools,
//! and knows the shortest protocol route to an address (used by the oracle model).
//! [`Composite`] stacks the strategies of a mode, adds built-in tools, and runs the
//! selection step with `request_tools`.

pub mod config;
pub mod mode;
pub mod templates;

mod builtins;
mod connectors_legacy;
mod connectors_progressive;
mod databases_legacy;
mod databases_progressive;
mod mcp_legacy;
mod mcp_progressive;
pub mod results;
pub mod selection;
mod skills_inline;
mod skills_progressive;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};

use crate::catalog::{Address, Catalog, Kind};
use crate::environment::{fixture_response, Databases, QueryError, QueryResult};
use crate::scenario::ExpectedCall;
use crate::wire::{Context, Message, ToolCall, ToolDef};
pub use config::{Cut, ProtocolConfig, ResultLimits, UnloadedCalls};
pub use mode::{Disclosure, Mode};
pub use selection::{Level, SelectionConfig};
pub use templates::{TemplateError, Templates};

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

/// The strategies of one mode, stacked, plus built-ins and the selection step.
/// Rendered once per scenario × mode; `Send + Sync`, shared by all its episodes.
pub struct Composite {
    pub mode: Mode,
    catalog: Arc<Catalog>,
    parts: Vec<Box<dyn Strategy>>,
    system: String,
    tools: Arc<[ToolDef]>,
    owner: HashMap<String, usize>,
    config: ProtocolConfig,
    templates: Arc<Templates>,
    /// Each tool's words, for the selection step's keyword shortcut.
    tool_words: Vec<HashSet<String>>,
    /// The selection request's catalog of every tool.
    catalog_text: String,
    /// `request_tools` as rendered for each loaded set seen (sorted names): the turns of
    /// an episode, and episodes that loaded the same tools, share one rendering.
    request_tools: std::sync::Mutex<HashMap<Vec<String>, ToolDef>>,
}

/// Loaded sets whose `request_tools` rendering is kept (a bound on memory; past it,
/// renderings are simply made again).
const REQUEST_TOOLS_CACHE: usize = 4_096;

impl Composite {
    pub fn new(
        catalog: &Arc<Catalog>,
        instructions: Option<&str>,
        mode: Mode,
        templates: &Arc<Templates>,
        config: ProtocolConfig,
    ) -> Result<Composite, TemplateError> {
        let mut parts: Vec<Box<dyn Strategy>> = Vec::new();
        let t: &Templates = templates;
        if catalog.has(Kind::Skills) {
            parts.push(match mode.skills {
                Disclosure::Inline => Box::new(skills_inline::SkillsInline::new(catalog, t)?),
                _ => Box::new(skills_progressive::SkillsProgressive::new(
                    catalog,
                    t,
                    config.skill_stub_chars,
                )?),
            });
        }
        if catalog.has(Kind::Connectors) {
            parts.push(match mode.connectors {
                Disclosure::Legacy => Box::new(connectors_legacy::ConnectorsLegacy::new(catalog)),
                _ => Box::new(connectors_progressive::ConnectorsProgressive::new(
                    catalog, t,
                )?),
            });
        }
        if catalog.has(Kind::Databases) {
            parts.push(match mode.databases {
                Disclosure::Legacy => Box::new(databases_legacy::DatabasesLegacy::new(
                    catalog,
                    t,
                    config.row_limit,
                )?),
                _ => Box::new(databases_progressive::DatabasesProgressive::new(
                    catalog, t,
                )?),
            });
        }
        if catalog.has(Kind::Mcp) {
            parts.push(match mode.mcp {
                Disclosure::Legacy => Box::new(mcp_legacy::McpLegacy::new(catalog)),
                _ => Box::new(mcp_progressive::McpProgressive::new(catalog, t)?),
            });
        }
        if !catalog.builtins.is_empty() {
            parts.push(Box::new(builtins::Builtins::new(catalog)));
        }
        let instructions = match instructions {
            Some(i) => i.trim().to_string(),
            None => t.default_instructions()?,
        };
        let sections: Vec<&str> = parts
            .iter()
            .map(|p| p.render().section.as_str())
            .filter(|s| !s.is_empty())
            .collect();
        let system = t.render(
            "system.j2",
            json!({"instructions": instructions, "sections": sections}),
        )?;
        // The tool list in FIM One's registry order: built-ins, the connector section
        // (API connectors, then databases), `read_skill`, then MCP. Its order decides
        // the keyword shortcut's ties, the selection catalog and `request_tools`' list.
        let rank = |p: &dyn Strategy| match p.kind() {
            None => 0,
            Some(Kind::Connectors) => 1,
            Some(Kind::Databases) => 2,
            Some(Kind::Skills) => 3,
            Some(Kind::Mcp) => 4,
        };
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by_key(|&i| rank(parts[i].as_ref()));
        let mut tools = Vec::new();
        let mut owner = HashMap::new();
        for i in order {
            let p = &parts[i];
            for tool in &p.render().tools {
                owner.insert(tool.name.clone(), i);
                tools.push(tool.clone());
            }
        }
        let tool_words = selection::tool_keywords(&tools);
        let catalog_text = selection::compact_catalog(&tools);
        Ok(Composite {
            mode,
            catalog: catalog.clone(),
            parts,
            system,
            tools: tools.into(),
            owner,
            config,
            templates: templates.clone(),
            tool_words,
            catalog_text,
            request_tools: Default::default(),
        })
    }

    pub fn system(&self) -> &str {
        &self.system
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The JSON Schema of the arguments an executed call to `address` takes.
    pub fn catalog_schema(&self, address: &Address) -> Option<Value> {
        self.catalog.schema_of(address)
    }

    /// Every top-level tool, before any selection.
    pub fn all_tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// Whether the selection step runs for this mode and catalog: in every mode
    /// whose `selection` is on (all presets), when the tool list is longer than the
    /// threshold.
    pub fn selection_applies(&self) -> bool {
        self.mode.selection && self.tools.len() > self.config.selection.threshold
    }

    pub fn selection_config(&self) -> SelectionConfig {
        self.config.selection
    }

    pub fn config(&self) -> &ProtocolConfig {
        &self.config
    }

    /// Whether a call of `tool` finds it loaded (always, when nothing was filtered).
    pub fn is_loaded(&self, state: &State, tool: &str) -> bool {
        state
            .active
            .as_ref()
            .is_none_or(|a| a.iter().any(|n| n == tool))
            || tool == selection::REQUEST_TOOLS
    }

    /// A fresh episode: what is shown before the model does anything.
    pub fn new_state(&self) -> State {
        let mut st = State::default();
        for p in &self.parts {
            for a in p.shown_up_front() {
                if let Address::Skill(n) = &a {
                    st.loaded_skills.insert(n.clone());
                }
                st.shown.insert(a);
            }
        }
        st
    }

    /// The tool list of the next request (shared, not copied, while every tool is
    /// loaded).
    pub fn visible_tools(&self, state: &State) -> Arc<[ToolDef]> {
        match &state.active {
            None => self.tools.clone(),
            Some(active) => {
                let def = |n: &String| self.tools.iter().find(|t| &t.name == n).cloned();
                let split = state.selected.min(active.len());
                let mut v: Vec<ToolDef> = active[..split].iter().filter_map(def).collect();
                if let Some(rt) = self.request_tools_for(active) {
                    v.push(rt);
                }
                v.extend(active[split..].iter().filter_map(def));
                v.into()
            }
        }
    }

    /// `request_tools` for a loaded set, rendered once per set. `check_templates`
    /// rendered its template before the run, so a failure here cannot come from the
    /// template: the tool is then simply left out.
    fn request_tools_for(&self, active: &[String]) -> Option<ToolDef> {
        let mut key = active.to_vec();
        key.sort();
        let mut cache = self.request_tools.lock().expect("request_tools cache");
        if let Some(def) = cache.get(&key) {
            return Some(def.clone());
        }
        let def = selection::request_tools_def(&self.tools, active, &self.templates).ok()?;
        if cache.len() < REQUEST_TOOLS_CACHE {
            cache.insert(key, def.clone());
        }
        Some(def)
    }

    /// Renders the templates used only while a run goes on (the selection request and
    /// `request_tools`), so that a broken override fails before anything runs.
    pub fn check_templates(&self) -> Result<(), TemplateError> {
        if !self.selection_applies() {
            return Ok(());
        }
        let cx = self.selection_context("a query", Level::Forced)?;
        self.selection_context("a query", Level::Json)?;
        self.selection_context("a query", Level::Text)?;
        self.selection_retry(&cx, "an answer")?;
        selection::request_tools_def(&self.tools, &[], &self.templates)?;
        let all: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
        selection::request_tools_def(&self.tools, &all, &self.templates)?;
        Ok(())
    }

    /// The context of the next request.
    pub fn context(&self, state: &State, messages: &[Message]) -> Context {
        Context {
            system: self.system.clone(),
            tools: self.visible_tools(state),
            tool_choice: None,
            json_mode: false,
            messages: messages.to_vec(),
        }
    }

    /// The keyword shortcut of the selection step: the tools to keep with no model
    /// call, or `None` to ask the model.
    pub fn selection_shortcut(&self, query: &str) -> Option<Vec<String>> {
        selection::keyword_shortcut(
            &self.tools,
            &self.tool_words,
            query,
            self.config.selection.max,
        )
    }

    /// The selection step's request at one level: the query and a compact catalog.
    pub fn selection_context(&self, query: &str, level: Level) -> Result<Context, TemplateError> {
        selection::context(
            &self.catalog_text,
            query,
            self.config.selection,
            level,
            &self.templates,
        )
    }

    /// The plain-text selection request asked again after an unreadable `answer`.
    pub fn selection_retry(&self, cx: &Context, answer: &str) -> Result<Context, TemplateError> {
        selection::retry_context(cx, answer, &self.templates)
    }

    /// Applies the names the selection step picked (`None`: no usable answer). Returns
    /// the tools loaded, pinned ones included, or `None` when every tool stays loaded
    /// (no usable answer, or no known name in it).
    pub fn apply_selection(
        &self,
        state: &mut State,
        picked: Option<&[String]>,
    ) -> Option<Vec<String>> {
        let loaded = selection::loaded_for(picked?, &self.tools, self.config.selection.max)?;
        state.selected = loaded.len();
        state.active = Some(loaded.clone());
        self.mark_active_shown(state);
        Some(loaded)
    }

    /// Addresses of definitions that are loaded directly as tools are "shown" only while
    /// their tool is active; recompute after the active set changes.
    fn mark_active_shown(&self, state: &mut State) {
        let fresh = self.new_state();
        let active = state.active.clone();
        let mut shown: HashSet<Address> = state
            .shown
            .iter()
            .filter(|a| !fresh.shown.contains(a))
            .cloned()
            .collect();
        for a in fresh.shown {
            let tool = self.top_level_tool_of(&a);
            if active
                .as_ref()
                .is_none_or(|set| tool.as_ref().is_none_or(|t| set.contains(t)))
            {
                shown.insert(a);
            }
        }
        state.shown = shown;
    }

    /// The top-level tool through which `address` is reached first.
    fn top_level_tool_of(&self, address: &Address) -> Option<String> {
        let target = ExpectedCall::to(address.clone());
        let probe = State {
            active: None,
            ..State::default()
        };
        self.part_for(address)?
            .route(&target, &json!({}), &probe)
            .map(|(t, _)| t)
    }

    fn part_for(&self, address: &Address) -> Option<&dyn Strategy> {
        let kind = match address {
            Address::Skill(_) => Some(Kind::Skills),
            Address::Connector(..) => Some(Kind::Connectors),
            Address::Database(_) => Some(Kind::Databases),
            Address::Mcp(..) => Some(Kind::Mcp),
            Address::Builtin(_) => None,
        };
        self.parts
            .iter()
            .find(|p| p.kind() == kind)
            .map(|b| b.as_ref())
    }

    /// Answers one call of the model.
    pub fn resolve(&self, call: &ToolCall, state: &mut State, databases: &Databases) -> Resolution {
        let env = Env {
            catalog: &self.catalog,
            databases,
            config: &self.config,
        };
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                return Resolution::error(
                    ProtocolError::SchemaViolation,
                    "arguments must be a JSON object",
                )
            }
            Err(e) => {
                return Resolution::error(
                    ProtocolError::SchemaViolation,
                    format!("arguments are not valid JSON: {e}"),
                )
            }
        };
        if call.name == selection::REQUEST_TOOLS {
            if let Some(active) = &state.active {
                let before = active.clone();
                let r = selection::resolve(&self.tools, &args, state);
                if let Some(now) = state.active.clone() {
                    let added: Vec<Address> = self
                        .catalog
                        .addresses()
                        .into_iter()
                        .filter(|a| {
                            self.top_level_tool_of(a)
                                .is_some_and(|t| now.contains(&t) && !before.contains(&t))
                        })
                        .collect();
                    self.mark_active_shown(state);
                    if let Effect::Fetched { .. } = r.effect {
                        return Resolution::fetched(r.content, added);
                    }
                }
                return r;
            }
        }
        let Some(&i) = self.owner.get(&call.name) else {
            let visible = self.visible_tools(state);
            let names: Vec<&str> = visible.iter().map(|t| t.name.as_str()).collect();
            return Resolution::error(
                ProtocolError::UnknownTarget,
                format!(
                    "unknown tool `{}`; available tools: {}",
                    call.name,
                    names.join(", ")
                ),
            );
        };
        if !self.is_loaded(state, &call.name) && self.config.unloaded == UnloadedCalls::Refuse {
            return Resolution::error(
                ProtocolError::NotLoaded,
                format!(
                    "tool `{}` is not loaded; call request_tools with its name first",
                    call.name
                ),
            );
        }
        let r = self.parts[i].resolve(&call.name, &args, state, &env);
        match &r.effect {
            Effect::Fetched { addresses } => {
                for a in addresses {
                    if let Address::Skill(n) = a {
                        state.loaded_skills.insert(n.clone());
                    }
                    state.shown.insert(a.clone());
                    state.fetched.push(a.clone());
                }
            }
            Effect::Executed { address, .. } => state.executed.push(address.clone()),
            Effect::Error { .. } => {}
        }
        r
    }

    /// The oracle's next call toward `target`, through `request_tools` when the tool it
    /// needs is not loaded. `None` when the target needs no (further) call.
    pub fn route(
        &self,
        target: &ExpectedCall,
        args: &Value,
        state: &State,
    ) -> Option<(String, Value)> {
        let (tool, a) = self.part_for(&target.address)?.route(target, args, state)?;
        if let Some(active) = &state.active {
            if !active.contains(&tool) {
                return Some((
                    selection::REQUEST_TOOLS.to_string(),
                    json!({"tool_names": [tool]}),
                ));
            }
        }
        Some((tool, a))
    }

    /// The top-level tools the oracle needs for these targets (its selection answer).
    pub fn tools_for(&self, targets: &[&ExpectedCall]) -> Vec<String> {
        let probe = State::default();
        let mut out: Vec<String> = Vec::new();
        for t in targets {
            if let Some((tool, _)) = self
                .part_for(&t.address)
                .and_then(|p| p.route(t, &json!({}), &probe))
            {
                if !out.contains(&tool) {
                    out.push(tool);
                }
            }
        }
        out
    }
}

/// Executes a call on the environment: validates its arguments, runs SQL for database
/// queries (answered as indented JSON with `columns`, `rows`, `row_count`,
/// `execution_time_ms`, and `truncated` with a note past the row limit), returns the
/// fixture response otherwise — for connectors and MCP tools truncated as FIM One
/// truncates their results.
pub fn execute(address: Address, args: &Value, state: &State, env: &Env) -> Resolution {
    let schema_errors = env
        .catalog
        .schema_of(&address)
        .map(|s| schema_errors(&s, args))
        .unwrap_or_default();
    let blind = !state.shown.contains(&address);
    let (content, sql_result) = if let Address::Database(db) = &address {
        let sql = args.get("sql").and_then(Value::as_str).unwrap_or("");
        let r = env.databases.query_limited(db, sql, env.config.row_limit);
        let content = match &r {
            Ok(q) => query_answer(q, env.config.row_limit),
            Err(e) => json!({"error": e.0}).to_string(),
        };
        (content, Some(r))
    } else if !schema_errors.is_empty() {
        (
            json!({"error": format!("invalid arguments: {}", schema_errors.join("; "))})
                .to_string(),
            None,
        )
    } else {
        let answer = fixture_response(env.catalog, &address, args).to_string();
        let answer = match address {
            Address::Connector(..) => results::truncate(&answer, &env.config.results.connector),
            Address::Mcp(..) => results::truncate(&answer, &env.config.results.mcp),
            _ => answer,
        };
        (answer, None)
    };
    Resolution {
        content,
        effect: Effect::Executed {
            address,
            args: args.clone(),
            schema_errors,
            blind,
            sql_result,
        },
    }
}

/// A query result as the model reads it. The time is written as 0.0 so that token
/// counts repeat from run to run (a measured time would be a few digits).
fn query_answer(q: &QueryResult, row_limit: usize) -> String {
    let mut o = serde_json::Map::new();
    o.insert("columns".into(), json!(q.columns));
    o.insert("rows".into(), json!(q.rows));
    o.insert("row_count".into(), json!(q.rows.len()));
    o.insert("execution_time_ms".into(), json!(0.0));
    if q.truncated {
        o.insert("truncated".into(), json!(true));
        o.insert(
            "note".into(),
            json!(format!("Only the first {row_limit} rows are shown")),
        );
    }
    results::pretty(&Value::Object(o))
}

/// JSON Schema violations of `instance`, as readable strings.
pub fn schema_errors(schema: &Value, instance: &Value) -> Vec<String> {
    match jsonschema::validator_for(schema) {
        Ok(v) => v
            .iter_errors(instance)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect(),
        Err(e) => vec![format!("schema does not compile: {e}")],
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
