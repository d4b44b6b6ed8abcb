//! A loaded, validated scenario: the resolved catalog, the agent settings and the
//! queries with their expectations.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use super::expect::Expect;
use crate::catalog::{Address, Catalog, Kind, Part, Resource, Target};
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
    /// How its live MCP servers are started, when it has any (`live:` in an include).
    pub live: Vec<crate::environment::live::LiveSpec>,
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
    /// The (first) user message: a single query's text, a conversation's first turn.
    pub text: String,
    /// What the first turn must do.
    pub expect: Expect,
    /// A conversation's turns after the first (empty for a single query).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub later: Vec<Turn>,
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
    /// How its turns judged by state are judged.
    #[serde(skip_serializing_if = "is_general")]
    pub judge: crate::scenario::expect::Judge,
}

fn is_general(j: &crate::scenario::expect::Judge) -> bool {
    *j == crate::scenario::expect::Judge::General
}

/// One later user turn of a conversation.
#[derive(Debug, Clone, Serialize)]
pub struct Turn {
    pub text: String,
    pub expect: Expect,
    /// What becomes available from this turn on (before it, it is in no context).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub adds: Vec<Part>,
}

impl Query {
    /// Whether it is a conversation of several user turns.
    pub fn is_conversation(&self) -> bool {
        !self.later.is_empty()
    }

    /// How many user turns it has (1 for a single query).
    pub fn n_turns(&self) -> usize {
        1 + self.later.len()
    }

    /// The text of turn `t` (0-based).
    pub fn turn_text(&self, t: usize) -> &str {
        if t == 0 {
            &self.text
        } else {
            &self.later[t - 1].text
        }
    }

    /// The expectation of turn `t` (0-based).
    pub fn turn_expect(&self, t: usize) -> &Expect {
        if t == 0 {
            &self.expect
        } else {
            &self.later[t - 1].expect
        }
    }

    /// What turn `t` (0-based) adds to the catalog.
    pub fn turn_adds(&self, t: usize) -> &[Part] {
        if t == 0 {
            &[]
        } else {
            &self.later[t - 1].adds
        }
    }

    /// Every turn's expectation, in order.
    pub fn expects(&self) -> impl Iterator<Item = &Expect> {
        std::iter::once(&self.expect).chain(self.later.iter().map(|t| &t.expect))
    }

    /// The field path of turn `t`'s expectation in query `i` of its file.
    pub fn expect_path(&self, i: usize, t: usize) -> String {
        if self.is_conversation() {
            format!("queries[{i}].turns[{t}].expect")
        } else {
            format!("queries[{i}].expect")
        }
    }

    /// What is hidden from the catalog in turn `t` (0-based): every part a later turn
    /// adds.
    pub fn hidden_at(&self, t: usize) -> Vec<Part> {
        self.later
            .iter()
            .skip(t)
            .flat_map(|x| x.adds.iter().cloned())
            .collect()
    }

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
