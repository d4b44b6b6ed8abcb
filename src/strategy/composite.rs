//! [`Composite`]: the strategies of one mode stacked into one context — the system
//! prompt, the tool list in FIM One's registry order, built-in tools — with the
//! selection step and `request_tools` on top. Built once per scenario × mode and shared
//! read-only by every episode.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};

use crate::catalog::{Address, Catalog, Kind};
use crate::disclosure::Disclosure;
use crate::environment::Databases;
use crate::scenario::ExpectedCall;
use crate::wire::{Context, Message, NativeSearch, NativeTools, ToolCall, ToolDef, ToolGroup};

use super::config::{ProtocolConfig, SelectionConfig, UnloadedCalls};
use super::mode::{Mode, Placement, SearchVariant};
use super::protocol::{Effect, Env, ProtocolError, Resolution, Retrieved, State, Strategy};
use super::selection::{self, Level};
use super::templates::{TemplateError, Templates};
use super::{
    builtins, code_api, code_files, code_mode, connectors_legacy, connectors_progressive,
    databases_legacy, databases_progressive, mcp_legacy, mcp_progressive, mcp_resource, pool,
    retrieval, skills_inline, skills_progressive, tool_search,
};

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
    /// With tool search or retrieval: the tools visible before anything is surfaced,
    /// in tool-list order.
    initial: Option<Vec<String>>,
    /// What every part shows up front, and the top-level tool that reaches each such
    /// address (made at the first use: every episode starts from it).
    base: OnceLock<(State, HashMap<Address, Option<String>>)>,
    /// The addresses this mode ranks when it shows them (made at the first use).
    ranked: OnceLock<Arc<HashSet<Address>>>,
    /// `allowed=on`: every tool and a `request_tools` that lists nothing (every
    /// definition is already there), the one list every request sends.
    allowed_list: OnceLock<Arc<[ToolDef]>>,
    /// `native=…`: the provider's own tool search over the held-back tools.
    native: Option<Arc<NativeTools>>,
    /// The legacy tools of each connector, database and MCP server this mode lists
    /// (shown or held back), grouped for a backend that sends groups.
    groups: Option<Arc<[ToolGroup]>>,
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
        // A mode may lay a built-in template set over the run's templates.
        let templates: Arc<Templates> = match &mode.templates {
            Some(set) => Arc::new(templates.with_set(set)?),
            None => templates.clone(),
        };
        let t: &Templates = &templates;
        let mut parts: Vec<Box<dyn Strategy>> = Vec::new();
        // The legacy strategies of the kinds held back by tool search or retrieval.
        let mut pooled: Vec<Box<dyn Strategy>> = Vec::new();
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
        let held = |d: Disclosure| matches!(d, Disclosure::Deferred | Disclosure::Retrieved);
        let coded = |d: Disclosure| matches!(d, Disclosure::Code | Disclosure::Files);
        // The kinds behind code mode's API.
        let mut api_kinds: Vec<Kind> = Vec::new();
        if catalog.has(Kind::Connectors) {
            let legacy = || Box::new(connectors_legacy::ConnectorsLegacy::new(catalog));
            match mode.connectors {
                d if held(d) => pooled.push(legacy()),
                d if coded(d) => api_kinds.push(Kind::Connectors),
                Disclosure::Legacy => parts.push(legacy()),
                _ => parts.push(Box::new(
                    connectors_progressive::ConnectorsProgressive::new(catalog, t)?,
                )),
            }
        }
        if catalog.has(Kind::Databases) {
            let legacy = databases_legacy::DatabasesLegacy::new(catalog, t, config.row_limit);
            match mode.databases {
                d if held(d) => pooled.push(Box::new(legacy?)),
                d if coded(d) => api_kinds.push(Kind::Databases),
                Disclosure::Legacy => parts.push(Box::new(legacy?)),
                _ => parts.push(Box::new(databases_progressive::DatabasesProgressive::new(
                    catalog, t,
                )?)),
            }
        }
        if catalog.has(Kind::Mcp) {
            match mode.mcp {
                d if held(d) => pooled.push(Box::new(mcp_legacy::McpLegacy::new(catalog))),
                d if coded(d) => api_kinds.push(Kind::Mcp),
                Disclosure::Legacy => parts.push(Box::new(mcp_legacy::McpLegacy::new(catalog))),
                Disclosure::Resource => parts.push(Box::new(mcp_resource::McpResource::new(
                    catalog, &templates,
                )?)),
                _ => parts.push(Box::new(mcp_progressive::McpProgressive::new(catalog, t)?)),
            }
        }
        if !catalog.builtins.is_empty() {
            let b = Box::new(builtins::Builtins::new(catalog));
            // Built-ins are held back with the rest (unless always-on) when any kind is.
            if mode.searches() {
                pooled.push(b);
            } else if !mode.codes() {
                parts.push(b);
            }
        }
        // Code mode: the kinds behind the API (and the built-ins) become one part.
        if mode.codes() {
            let api = Arc::new(code_api::CodeApi::new(
                catalog,
                &api_kinds,
                true,
                crate::sandbox::Limits::default(),
            ));
            let files = [mode.connectors, mode.databases, mode.mcp].contains(&Disclosure::Files);
            if !api.functions.is_empty() {
                parts.push(if files {
                    Box::new(code_files::CodeFiles::new(api, t)?)
                } else {
                    Box::new(code_mode::CodeMode::new(
                        api,
                        mode.search.results,
                        &templates,
                    )?)
                });
            }
        }
        if !pooled.is_empty() {
            let pool = pool::Pool::new(pooled, &mode.search, &templates)?;
            let retrieved =
                [mode.connectors, mode.databases, mode.mcp].contains(&Disclosure::Retrieved);
            parts.push(if retrieved {
                Box::new(retrieval::Retrieval::new(
                    pool,
                    mode.search.k,
                    mode.search.fallback,
                ))
            } else {
                Box::new(tool_search::ToolSearch::new(pool))
            });
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
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by_key(|&i| parts[i].order());
        let mut tools = Vec::new();
        let mut owner = HashMap::new();
        for i in order {
            let p = &parts[i];
            for tool in &p.render().tools {
                owner.insert(tool.name.clone(), i);
                tools.push(tool.clone());
            }
        }
        let initial: Option<Vec<String>> =
            parts.iter().any(|p| p.held_back().is_some()).then(|| {
                let keep: HashSet<String> = parts
                    .iter()
                    .flat_map(|p| match p.held_back() {
                        Some(v) => v,
                        None => p.render().tools.iter().map(|t| t.name.clone()).collect(),
                    })
                    .collect();
                tools
                    .iter()
                    .filter(|t| keep.contains(&t.name))
                    .map(|t| t.name.clone())
                    .collect()
            });
        let tool_words = selection::tool_keywords(&tools);
        let catalog_text = selection::compact_catalog(&tools);
        // Native tool search: the tools held back are the ones the provider defers.
        let native = match (mode.search.native, &initial) {
            (Some(execution), Some(visible)) if mode.searches() => {
                let deferred: Vec<ToolDef> = tools
                    .iter()
                    .filter(|t| !visible.contains(&t.name))
                    .cloned()
                    .collect();
                Some(Arc::new(NativeTools {
                    execution,
                    variant: match mode.search.variant {
                        SearchVariant::Bm25 => "bm25",
                        SearchVariant::Regex => "regex",
                    },
                    search_tool: pool::TOOL_SEARCH.to_string(),
                    deferred: deferred.into(),
                }))
            }
            _ => None,
        };
        // Groups: the legacy tools of each resource this mode lists, in tool-list order.
        let listed: HashMap<&str, usize> = (tools.iter().enumerate())
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        let groups: Vec<ToolGroup> = (catalog.tool_groups().into_iter())
            .filter_map(|mut g| {
                g.tools.retain(|t| listed.contains_key(t.as_str()));
                g.tools.sort_by_key(|t| listed[t.as_str()]);
                (!g.tools.is_empty()).then_some(g)
            })
            .collect();
        let groups = (!groups.is_empty()).then(|| groups.into());
        Ok(Composite {
            mode,
            catalog: catalog.clone(),
            parts,
            system,
            tools: tools.into(),
            owner,
            config,
            templates,
            tool_words,
            catalog_text,
            request_tools: Default::default(),
            initial,
            base: OnceLock::new(),
            ranked: OnceLock::new(),
            allowed_list: OnceLock::new(),
            native,
            groups,
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

    /// The address a top-level tool executes (`None` for meta-tools).
    pub fn address_of(&self, tool: &str) -> Option<Address> {
        self.owner
            .get(tool)
            .and_then(|&i| self.parts[i].address_of(tool))
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

    /// The addresses this mode ranks when it shows them: those of a part that ranks
    /// (tool search, retrieval), and, when the selection step runs, those a tool of its
    /// list executes directly (a legacy tool, a built-in). An address reached through a
    /// meta-tool (`discover`, a resource read) is shown among all its server's or
    /// connector's tools at once, ranked by nothing. Recall@k and MRR are measured on
    /// these addresses alone.
    pub fn ranked_addresses(&self) -> Arc<HashSet<Address>> {
        self.ranked
            .get_or_init(|| {
                let selected = self.selection_applies();
                let direct: HashSet<Address> = if selected {
                    self.tools
                        .iter()
                        .filter_map(|t| self.address_of(&t.name))
                        .collect()
                } else {
                    HashSet::new()
                };
                let ranked = self
                    .catalog
                    .addresses()
                    .into_iter()
                    .filter(|a| direct.contains(a) || self.part_for(a).is_some_and(|p| p.ranks()))
                    .collect();
                Arc::new(ranked)
            })
            .clone()
    }

    pub fn selection_config(&self) -> SelectionConfig {
        self.config.selection
    }

    pub fn config(&self) -> &ProtocolConfig {
        &self.config
    }

    /// The events the mode's strategies define (see [`super::defined`]).
    pub fn events(&self) -> Vec<super::protocol::EventKind> {
        let mut out: Vec<super::protocol::EventKind> = Vec::new();
        for k in self.parts.iter().flat_map(|p| p.events()) {
            if !out.contains(k) {
                out.push(*k);
            }
        }
        out
    }

    /// Whether the mode holds tools back until a search or retrieval surfaces them
    /// (tool search, retrieval): then the visible list is what was surfaced, with no
    /// `request_tools`, and a call outside it is refused as never surfaced.
    pub fn holds_back(&self) -> bool {
        self.initial.is_some()
    }

    /// Whether a call of `tool` finds it loaded (always, when nothing was filtered).
    pub fn is_loaded(&self, state: &State, tool: &str) -> bool {
        state
            .active
            .as_ref()
            .is_none_or(|a| a.iter().any(|n| n == tool))
            || (tool == selection::REQUEST_TOOLS && !self.holds_back())
    }

    /// Retrieval, before the model is asked: the tools retrieved for the query join
    /// the visible ones (in registry order, since nothing was sent yet). Returns what
    /// was retrieved, for the outcome.
    pub fn at_query(&self, query: &str, state: &mut State) -> Vec<Retrieved> {
        let got: Vec<Retrieved> = self.parts.iter().flat_map(|p| p.at_query(query)).collect();
        if !got.is_empty() {
            let names: Vec<String> = got.iter().map(|r| r.tool.clone()).collect();
            self.join(state, &names, Placement::Sorted);
        }
        got
    }

    /// Tools that join the visible ones (tool search, retrieval): appended after what
    /// was sent, or sorted into registry order.
    fn join(&self, state: &mut State, names: &[String], placement: Placement) {
        let Some(active) = state.active.as_mut() else {
            return;
        };
        let mut added = false;
        for n in names {
            if !active.contains(n) && self.owner.contains_key(n) {
                active.push(n.clone());
                added = true;
            }
        }
        if !added {
            return;
        }
        if placement == Placement::Sorted {
            let index: HashMap<&str, usize> = self
                .tools
                .iter()
                .enumerate()
                .map(|(i, t)| (t.name.as_str(), i))
                .collect();
            active.sort_by_key(|n| index.get(n.as_str()).copied().unwrap_or(usize::MAX));
        }
        state.selected = active.len();
        self.mark_active_shown(state);
    }

    /// A fresh episode: what is shown before the model does anything (with tool
    /// search or retrieval, only the tools not held back).
    pub fn new_state(&self) -> State {
        let mut st = self.base_state();
        if let Some(initial) = &self.initial {
            st.active = Some(initial.clone());
            st.selected = initial.len();
            self.mark_active_shown(&mut st);
        }
        st
    }

    /// What every part shows up front, before anything is held back.
    fn base_state(&self) -> State {
        self.base().0.clone()
    }

    fn base(&self) -> &(State, HashMap<Address, Option<String>>) {
        self.base.get_or_init(|| {
            let st = self.up_front();
            let tops = st
                .shown
                .iter()
                .map(|a| (a.clone(), self.top_level_tool_of(a)))
                .collect();
            (st, tops)
        })
    }

    fn up_front(&self) -> State {
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
        if self.mode.allowed && state.active.is_some() {
            return self
                .allowed_list
                .get_or_init(|| {
                    let all: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
                    let mut v: Vec<ToolDef> = self.tools.to_vec();
                    v.extend(self.request_tools_for(&all));
                    v.into()
                })
                .clone();
        }
        match &state.active {
            None => self.tools.clone(),
            // Held back: the visible tools in the order they entered, no request_tools.
            Some(active) if self.holds_back() => {
                let v: Vec<ToolDef> = active
                    .iter()
                    .filter_map(|n| self.tools.iter().find(|t| &t.name == n).cloned())
                    .collect();
                v.into()
            }
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
            allowed: self.allowed_names(state),
            native: self.native.clone(),
            groups: self.groups.clone(),
        }
    }

    /// `allowed=on`: the tools that may be called (the loaded ones and
    /// `request_tools`); `None` when the mode limits nothing or everything is loaded.
    pub fn allowed_names(&self, state: &State) -> Option<Vec<String>> {
        if !self.mode.allowed {
            return None;
        }
        state.active.as_ref().map(|a| {
            let mut v = a.clone();
            v.push(selection::REQUEST_TOOLS.to_string());
            v
        })
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
        let (fresh, tops) = self.base();
        // `allowed=on` sends every definition whatever may be called.
        let active = if self.mode.allowed {
            None
        } else {
            state.active.clone()
        };
        let mut shown: HashSet<Address> = state
            .shown
            .iter()
            .filter(|a| !fresh.shown.contains(a))
            .cloned()
            .collect();
        for a in &fresh.shown {
            let tool = &tops[a];
            if active
                .as_ref()
                .is_none_or(|set| tool.as_ref().is_none_or(|t| set.contains(t)))
            {
                shown.insert(a.clone());
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
        self.parts
            .iter()
            .find(|p| p.owns(address))
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
                return Resolution::malformed(
                    ProtocolError::SchemaViolation,
                    "arguments must be a JSON object",
                )
            }
            Err(e) => {
                return Resolution::malformed(
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
                        // `allowed=on`: an allowance; the definitions were there.
                        let added = if self.mode.allowed { Vec::new() } else { added };
                        return Resolution::fetched(r.content, added);
                    }
                }
                return r;
            }
        }
        let Some(&i) = self.owner.get(&call.name) else {
            let visible = self.visible_tools(state);
            let names: Vec<&str> = visible.iter().map(|t| t.name.as_str()).collect();
            return Resolution::malformed(
                ProtocolError::UnknownTarget,
                format!(
                    "unknown tool `{}`; available tools: {}",
                    call.name,
                    names.join(", ")
                ),
            );
        };
        if self.mode.allowed && !self.is_loaded(state, &call.name) {
            return Resolution::error(
                ProtocolError::NotAllowed,
                format!(
                    "tool `{}` is not among the tools that may be called now; call {} with its name first",
                    call.name,
                    selection::REQUEST_TOOLS
                ),
            );
        }
        if self.holds_back() && !self.is_loaded(state, &call.name) {
            return Resolution::error(
                ProtocolError::NotSurfaced,
                format!(
                    "tool `{}` is held back and no search has surfaced it; search for it with {} first",
                    call.name,
                    pool::TOOL_SEARCH
                ),
            );
        }
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
        self.apply(state, &r);
        r
    }

    /// What an answer means for the episode: definitions that entered (and the tools
    /// that join the list), calls executed.
    fn apply(&self, state: &mut State, r: &Resolution) {
        match &r.effect {
            Effect::Fetched {
                addresses, join, ..
            } => {
                if !join.is_empty() {
                    self.join(state, join, self.mode.search.placement);
                }
                state.newly_shown.clear();
                for a in addresses {
                    if let Address::Skill(n) = a {
                        state.loaded_skills.insert(n.clone());
                    }
                    if state.shown.insert(a.clone()) {
                        state.newly_shown.push(a.clone());
                    }
                    state.fetched.push(a.clone());
                }
            }
            Effect::Executed { address, .. } => state.executed.push(address.clone()),
            Effect::Program { calls, .. } => {
                for c in calls {
                    if let Effect::Executed { address, .. } = &c.effect {
                        state.executed.push(address.clone());
                    }
                }
            }
            Effect::Error { .. } => {}
        }
    }

    /// `native=…`: the provider's own tool search and what it means for the episode,
    /// as discbench's search would: the tools found join the list (the provider expands
    /// them where it answered), recorded as a search whose results rank what they
    /// show. A result that cannot be read, or that names a tool this mode never
    /// deferred, is a protocol error (`native_malformed`); nothing joins.
    pub fn native_search(&self, state: &mut State, s: &NativeSearch) -> Resolution {
        let Some(native) = &self.native else {
            return Resolution::error(
                pool::NATIVE_MALFORMED.into(),
                "a provider-side tool search in a mode that defers no tool",
            );
        };
        if let Some(why) = &s.malformed {
            return Resolution::error(pool::NATIVE_MALFORMED.into(), why.clone());
        }
        if let Some(bad) = s.found.iter().find(|n| !native.defers(n)) {
            return Resolution::error(
                pool::NATIVE_MALFORMED.into(),
                format!("the search found `{bad}`, a tool that was never deferred"),
            );
        }
        let addresses = s.found.iter().filter_map(|n| self.address_of(n)).collect();
        let r = Resolution {
            // Nothing of discbench's: the provider's result is part of its answer.
            content: String::new(),
            effect: Effect::Fetched {
                addresses,
                ranked: true,
                event: Some(pool::SEARCHES.event()),
                join: s.found.clone(),
                ends: Vec::new(),
            },
        };
        self.apply(state, &r);
        r
    }

    /// The provider's own tool search this mode asks for, if any.
    pub fn native(&self) -> Option<&Arc<NativeTools>> {
        self.native.as_ref()
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
        if self.holds_back() {
            return Some((tool, a));
        }
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

    /// Code mode: the oracle's program making `calls` in order, each value an
    /// earlier call returns passed on from that result (`query` is the user's text);
    /// `None` when no part runs programs for these addresses.
    pub fn program(&self, calls: &[(Address, Value)], query: &str) -> Option<String> {
        let part = self.part_for(&calls.first()?.0)?;
        // What each call returns, as the program will read it (databases answer from
        // SQLite, which the program reads at run time: nothing flows from them here).
        let results: Vec<Value> = calls
            .iter()
            .map(|(address, args)| {
                let answer = match address {
                    Address::Database(_) => return Value::Null,
                    a => crate::environment::fixture_response(&self.catalog, a, args).to_string(),
                };
                let answer = match address {
                    Address::Connector(..) => {
                        super::results::truncate(&answer, &self.config.results.connector)
                    }
                    Address::Mcp(..) => super::results::truncate(&answer, &self.config.results.mcp),
                    _ => answer,
                };
                serde_json::from_str(&answer).unwrap_or(Value::Null)
            })
            .collect();
        part.program(calls, &results, query)
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
