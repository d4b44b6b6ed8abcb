//! `serve`: a scenario as a real MCP server, disclosed under one mode, so that agent
//! clients discbench does not drive (an IDE assistant, a desktop client, an agent of
//! one's own) can be measured the way its own models are.
//!
//! [`Served`] is the scenario rendered once under the mode (the same
//! [`Composite`] a run builds) and shared by every session; each MCP session holds a
//! [`session::Session`] of its own — the episode [`State`](crate::strategy::State)
//! with its authorizations, the calls, the ledger — that no other session sees.
//! [`handler`] maps MCP onto the composite: `tools/list` lists its tools,
//! `tools/call` resolves through it against the scenario's fixture responses and
//! SQLite databases, the composite's system prompt is the server's `instructions`;
//! under `mcp=resource` the `tool_descriptions` resource is listed and read as the
//! MCP Progressive Disclosure guide describes the server side. A session tied to one
//! of the scenario's queries ends as an [`Outcome`](crate::record::Outcome), scored
//! like any other, and [`record`] appends it to a run directory. Over stdio one
//! process serves one session; [`http`] hosts any number of them over Streamable HTTP.

pub mod handler;
pub mod http;
pub mod record;
pub mod session;

use std::sync::Arc;

use crate::environment::Databases;
use crate::scenario::Scenario;
use crate::strategy::mode::Mode;
use crate::strategy::{Composite, Disclosure, ProtocolConfig, TemplateError, Templates};
use crate::tokens::Counter;

use record::Recorder;

/// Why a scenario cannot be served under a mode.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("mode `{mode}`: {why}")]
    Mode { mode: String, why: String },
    #[error("scenario `{scenario}` has no query `{query}`; its queries: {known}")]
    UnknownQuery {
        scenario: String,
        query: String,
        known: String,
    },
    #[error("scenario `{scenario}`: {source}")]
    Database {
        scenario: String,
        source: crate::environment::DbError,
    },
    #[error("scenario `{scenario}` under mode `{mode}`: {source}")]
    Template {
        scenario: String,
        mode: String,
        source: TemplateError,
    },
}

/// What a client of `serve` is told under `mcp-resource` in place of the in-run
/// wording, which names a `read_resource` tool a client does not have (it reads the
/// resource itself): the resource's description, the `TOOL_DESCRIPTION_REQUIRED`
/// recovery steps, the instructions' workflow section.
const SERVED: [(&str, &str); 3] = [
    (
        "read_resource.j2",
        include_str!("../../templates/served/read_resource.j2"),
    ),
    (
        "resource_required.j2",
        include_str!("../../templates/served/resource_required.j2"),
    ),
    (
        "mcp_resource_system.j2",
        include_str!("../../templates/served/mcp_resource_system.j2"),
    ),
];

/// `templates` with [`SERVED`] in place of each built-in template it still uses; a
/// template set's or a directory's own wording stays (the resource's description
/// then loses only its opening "Reads a resource…" sentence, see
/// [`session::Session`]).
pub fn served_templates(templates: &Templates) -> Result<Templates, TemplateError> {
    let builtin = Templates::builtin();
    let files: Vec<(&str, &str)> = SERVED
        .iter()
        .filter(|(name, _)| templates.source(name) == builtin.source(name))
        .copied()
        .collect();
    templates.with_sources(&files)
}

/// A scenario rendered under one mode for serving, shared read-only by every session.
pub struct Served {
    pub scenario: Arc<Scenario>,
    pub databases: Arc<Databases>,
    pub composite: Arc<Composite>,
    /// The mode as asked for (outcomes carry it).
    pub mode_label: String,
    pub counter: Arc<Counter>,
    /// The query every session is tied to (`--query`), by index.
    pub query: Option<usize>,
    /// The name outcomes give the agent (`--model`); else `client:<clientInfo.name>`.
    pub model: Option<String>,
    /// Where sessions are recorded (`--record`).
    pub recorder: Option<Arc<Recorder>>,
}

/// What [`Served::new`] needs besides the scenario.
pub struct ServeOptions {
    pub mode: Mode,
    pub templates: Arc<Templates>,
    pub protocol: ProtocolConfig,
    pub counter: Arc<Counter>,
    pub query: Option<String>,
    pub model: Option<String>,
    pub recorder: Option<Arc<Recorder>>,
}

impl Served {
    /// Renders `scenario` under the mode (with the scenario's `agent.modes`), seeds its
    /// databases, and resolves the query. The selection step is off: it picks tools
    /// for a query before the model is asked, and a server never sees the query.
    /// Modes that hold tools back behind a search or a retrieval are refused: an MCP
    /// client has no way to be told the tool list grew mid-conversation that every
    /// client honours.
    pub fn new(scenario: Scenario, o: ServeOptions) -> Result<Served, ServeError> {
        let mut mode = o.mode.with_overrides(&scenario.agent.modes);
        let held = [mode.connectors, mode.databases, mode.mcp]
            .iter()
            .any(|d| matches!(d, Disclosure::Deferred | Disclosure::Retrieved));
        if held {
            return Err(ServeError::Mode {
                mode: o.mode.label.clone(),
                why: "tool search and retrieval decide per query what is listed, which a server cannot know; serve legacy, progressive, inline, mcp-resource or a spec of their values".into(),
            });
        }
        mode.selection = false;
        let query = match &o.query {
            None => None,
            Some(id) => Some(
                scenario
                    .queries
                    .iter()
                    .position(|q| &q.id == id)
                    .ok_or_else(|| ServeError::UnknownQuery {
                        scenario: scenario.name.clone(),
                        query: id.clone(),
                        known: scenario
                            .queries
                            .iter()
                            .map(|q| q.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })?,
            ),
        };
        let databases =
            Databases::build_with(&scenario.catalog, o.protocol.sql).map_err(|source| {
                ServeError::Database {
                    scenario: scenario.name.clone(),
                    source,
                }
            })?;
        let template_error = |source| ServeError::Template {
            scenario: scenario.name.clone(),
            mode: o.mode.label.clone(),
            source,
        };
        let templates = Arc::new(served_templates(&o.templates).map_err(template_error)?);
        let composite = Composite::new(
            &scenario.catalog,
            scenario.agent.instructions.as_deref(),
            mode,
            &templates,
            o.protocol,
        )
        .map_err(template_error)?;
        Ok(Served {
            scenario: Arc::new(scenario),
            databases: Arc::new(databases),
            composite: Arc::new(composite),
            mode_label: o.mode.label.clone(),
            counter: o.counter,
            query,
            model: o.model,
            recorder: o.recorder,
        })
    }

    /// Whether the MCP Progressive Disclosure extension is served (`mcp=resource`).
    pub fn resource_mode(&self) -> bool {
        self.composite.mode.mcp == Disclosure::Resource
            && self.composite.catalog().has(crate::catalog::Kind::Mcp)
    }
}
