//! Retrieval (RAG-MCP): before the model is asked, the top-k tools of the held-back
//! kinds by BM25 over names, descriptions and parameter names are retrieved for the
//! query and are the only ones of them shown (with the always-on tools). What was
//! retrieved is recorded on the outcome with scores and ranks. With `fallback=search`
//! (the default) a `tool_search` tool reaches the tools retrieval missed, so that
//! every expectation stays reachable; with `fallback=none` they are out of reach, as
//! in RAG-MCP.

use serde_json::Value;

use crate::catalog::Address;
use crate::scenario::ExpectedCall;
use crate::strategy::pool::{Pool, SEARCHES, TOOL_SEARCH};
use crate::strategy::protocol::{Env, EventKind, Rendered, Resolution, Retrieved, State, Strategy};

pub struct Retrieval {
    pool: Pool,
    rendered: Rendered,
    k: usize,
    fallback: bool,
}

impl Retrieval {
    pub fn new(pool: Pool, k: usize, fallback: bool) -> Retrieval {
        let mut tools = pool.tools().to_vec();
        if fallback {
            tools.push(pool.search_tool().clone());
        }
        Retrieval {
            rendered: Rendered::tools(tools),
            pool,
            k,
            fallback,
        }
    }
}

impl Strategy for Retrieval {
    fn owns(&self, address: &Address) -> bool {
        self.pool.owns(address)
    }

    fn order(&self) -> u8 {
        5
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn held_back(&self) -> Option<Vec<String>> {
        let mut v = self.pool.always_on().to_vec();
        if self.fallback {
            v.push(TOOL_SEARCH.to_string());
        }
        Some(v)
    }

    fn at_query(&self, query: &str) -> Vec<Retrieved> {
        self.pool.retrieve(query, self.k)
    }

    fn address_of(&self, tool: &str) -> Option<Address> {
        self.pool.address_of(tool)
    }

    fn ranks(&self) -> bool {
        true
    }

    fn events(&self) -> &'static [EventKind] {
        &[SEARCHES]
    }

    fn shown_up_front(&self) -> Vec<Address> {
        self.pool.shown_up_front()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        if tool == TOOL_SEARCH && self.fallback {
            return self.pool.search(args);
        }
        self.pool.resolve(tool, args, state, env)
    }

    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)> {
        self.pool.route(target, args, state, self.fallback)
    }
}
