//! Building a [`Composite`]: the parts of a mode rendered into one system prompt and
//! one tool list in FIM One's registry order, built-in tools added, and what every
//! episode reads of it.

use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};

use crate::catalog::{Address, Catalog, Kind};
use crate::disclosure::Disclosure;
use crate::wire::{NativeTools, ToolDef, ToolGroup};

use crate::hash::{FastMap, FastSet};
use crate::strategy::code::{code_api, code_files, code_mode};
use crate::strategy::config::{ProtocolConfig, SelectionConfig};
use crate::strategy::fim::{
    builtins, connectors_legacy, connectors_progressive, databases_legacy, databases_progressive,
    mcp_legacy, mcp_progressive, skills_inline, skills_progressive,
};
use crate::strategy::mcp_pd::mcp_resource;
use crate::strategy::mode::{Mode, SearchVariant};
use crate::strategy::pool;
use crate::strategy::protocol::{State, Strategy};
use crate::strategy::search::{retrieval, tool_search};
use crate::strategy::selection::{self};
use crate::strategy::templates::{TemplateError, Templates};

/// The strategies of one mode, stacked, plus built-ins and the selection step.
/// Rendered once per scenario × mode; `Send + Sync`, shared by all its episodes.
pub struct Composite {
    pub mode: Mode,
    /// Tells this composite apart from every other of the process (a state's
    /// [`crate::strategy::protocol::VisibleMemo`] holds lists of one).
    pub(super) id: u64,
    pub(super) catalog: Arc<Catalog>,
    pub(super) parts: Vec<Box<dyn Strategy>>,
    pub(super) system: String,
    pub(super) tools: Arc<[ToolDef]>,
    pub(super) owner: FastMap<String, usize>,
    pub(super) config: ProtocolConfig,
    pub(super) templates: Arc<Templates>,
    /// Each tool's words, for the selection step's keyword shortcut.
    pub(super) tool_words: Vec<crate::hash::FastSet<String>>,
    /// The selection request's catalog of every tool.
    pub(super) catalog_text: String,
    /// `request_tools` as rendered for each loaded set seen (sorted names): the turns of
    /// an episode, and episodes that loaded the same tools, share one rendering.
    pub(super) request_tools: std::sync::Mutex<FastMap<Vec<String>, ToolDef>>,
    /// The start of each tool's description as `request_tools` lists it (made at the
    /// first use).
    pub(super) request_shorts: OnceLock<Vec<String>>,
    /// With tool search or retrieval: the tools visible before anything is surfaced,
    /// in tool-list order.
    pub(super) initial: Option<Vec<String>>,
    /// What every part shows up front, and the top-level tool that reaches each such
    /// address (made at the first use: every episode starts from it).
    pub(super) base: OnceLock<(State, FastMap<Address, Option<String>>)>,
    /// The addresses this mode ranks when it shows them (made at the first use).
    pub(super) ranked: OnceLock<Arc<FastSet<Address>>>,
    /// `allowed=on`: every tool and a `request_tools` that lists nothing (every
    /// definition is already there), the one list every request sends.
    pub(super) allowed_list: OnceLock<Arc<[ToolDef]>>,
    /// `native=…`: the provider's own tool search over the held-back tools.
    pub(super) native: Option<Arc<NativeTools>>,
    /// The legacy tools of each connector, database and MCP server this mode lists
    /// (shown or held back), grouped for a backend that sends groups.
    pub(super) groups: Option<Arc<[ToolGroup]>>,
}

/// Loaded sets whose `request_tools` rendering is kept (a bound on memory; past it,
/// renderings are simply made again).
pub(super) const REQUEST_TOOLS_CACHE: usize = 4_096;

/// The next composite's [`Composite::id`].
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

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
            let legacy = || Box::new(connectors_legacy::new(catalog));
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
                d if held(d) => pooled.push(Box::new(mcp_legacy::new(catalog))),
                d if coded(d) => api_kinds.push(Kind::Mcp),
                Disclosure::Legacy => parts.push(Box::new(mcp_legacy::new(catalog))),
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
        let mut owner = FastMap::default();
        for i in order {
            let p = &parts[i];
            for tool in &p.render().tools {
                owner.insert(tool.name.clone(), i);
                tools.push(tool.clone());
            }
        }
        let initial: Option<Vec<String>> =
            parts.iter().any(|p| p.held_back().is_some()).then(|| {
                let keep: FastSet<String> = parts
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
        let listed: FastMap<&str, usize> = (tools.iter().enumerate())
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
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            parts,
            system,
            tools: tools.into(),
            owner,
            config,
            templates,
            tool_words,
            catalog_text,
            request_tools: Default::default(),
            request_shorts: OnceLock::new(),
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

    /// Whether `name` is one of [`Composite::all_tools`] (whose definitions do not
    /// change during a run; `request_tools` is not one of them).
    pub fn is_own_tool(&self, name: &str) -> bool {
        self.owner.contains_key(name)
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
    pub fn ranked_addresses(&self) -> Arc<FastSet<Address>> {
        self.ranked
            .get_or_init(|| {
                let selected = self.selection_applies();
                let direct: FastSet<Address> = if selected {
                    self.tools
                        .iter()
                        .filter_map(|t| self.address_of(&t.name))
                        .collect()
                } else {
                    FastSet::default()
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

    /// The events the mode's strategies define (see [`crate::strategy::defined`]).
    pub fn events(&self) -> Vec<crate::strategy::protocol::EventKind> {
        let mut out: Vec<crate::strategy::protocol::EventKind> = Vec::new();
        for k in self.parts.iter().flat_map(|p| p.events()) {
            if !out.contains(k) {
                out.push(*k);
            }
        }
        out
    }
}
