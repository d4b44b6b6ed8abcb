//! Tool search (Anthropic's tool search tool with deferred loading, OpenAI's tool
//! search): every tool of the held-back kinds is deferred, and only `tool_search` and
//! the always-on tools are visible at first. A search (BM25 over words, or a regular
//! expression, as the mode says) returns up to `results` tool references, whose full
//! definitions join the visible tools for the rest of the conversation; a call to a
//! tool no search surfaced is refused (`not_surfaced`).

use serde_json::Value;

use crate::catalog::Address;
use crate::scenario::ExpectedCall;
use crate::strategy::pool::{Pool, NATIVE_MALFORMED, SEARCHES, TOOL_SEARCH};
use crate::strategy::protocol::{Env, EventKind, Rendered, Resolution, State, Strategy};

pub struct ToolSearch {
    pool: Pool,
    rendered: Rendered,
}

impl ToolSearch {
    pub fn new(pool: Pool) -> ToolSearch {
        let mut tools = pool.tools().to_vec();
        tools.push(pool.search_tool().clone());
        ToolSearch {
            rendered: Rendered::tools(tools),
            pool,
        }
    }
}

impl Strategy for ToolSearch {
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
        v.push(TOOL_SEARCH.to_string());
        Some(v)
    }

    fn address_of(&self, tool: &str) -> Option<Address> {
        self.pool.address_of(tool)
    }

    fn ranks(&self) -> bool {
        true
    }

    fn events(&self) -> &'static [EventKind] {
        &[SEARCHES, NATIVE_MALFORMED]
    }

    fn shown_up_front(&self) -> Vec<Address> {
        self.pool.shown_up_front()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        if tool == TOOL_SEARCH {
            return self.pool.search(args);
        }
        self.pool.resolve(tool, args, state, env)
    }

    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)> {
        self.pool.route(target, args, state, true)
    }
}
