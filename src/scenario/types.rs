//! A loaded, validated scenario: the resolved catalog, the agent settings and the
//! queries with their expectations.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::expect::Expect;
use crate::catalog::{Address, Catalog, Kind, Resource, Target};
use crate::disclosure::Disclosure;

/// A loaded, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    /// Shared read-only by every episode of a run.
    pub catalog: Arc<Catalog>,
    pub agent: Agent,
    pub queries: Vec<Query>,
    /// Every file the scenario was loaded from (itself, includes, skill texts, seed
    /// SQL) with a content hash of each, for `run.json`.
    pub sources: BTreeMap<PathBuf, String>,
}

#[derive(Debug, Clone, Default)]
pub struct Agent {
    pub instructions: Option<String>,
    /// Per-kind disclosure that wins over the CLI and the environment.
    pub modes: BTreeMap<Kind, Disclosure>,
    pub max_requests: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Query {
    pub id: String,
    pub text: String,
    pub expect: Expect,
    pub tags: Vec<String>,
    /// The resources this query's agent is given; empty: the whole catalog.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scope: Vec<Resource>,
    /// Instructions of this query's own, after the scenario's (a system message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// A catalog of this query's own, made by a sweep (its expected tools and the
    /// distractors of one size); wins over `scope`. Never read from a file.
    #[serde(skip)]
    pub catalog: Option<Arc<Catalog>>,
}

impl Query {
    /// The instructions this query's agent is given: the scenario's, then its own.
    pub fn instructions(&self, agent: &Agent) -> Option<String> {
        match (&agent.instructions, &self.instructions) {
            (Some(a), Some(q)) => Some(format!("{a}\n\n{q}")),
            (a, q) => a.clone().or_else(|| q.clone()),
        }
    }
}

/// What a data file holds, sniffed from its top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Scenario,
    CatalogFragment,
    McpDump,
}

/// The target of an expected call, for callers that have already validated it.
pub fn target<'a>(cat: &'a Catalog, a: &Address) -> Target<'a> {
    cat.lookup(a).expect("validated address")
}
