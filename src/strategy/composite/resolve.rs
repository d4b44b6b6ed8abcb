//! How a [`Composite`] answers: a call routed to the part that owns its tool and its
//! effect applied to the episode state; a provider's own search; and the routes,
//! programs and tool lists the oracle is told.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::catalog::Address;
use crate::environment::live::LiveCalls;
use crate::environment::Databases;
use crate::scenario::ExpectedCall;
use crate::wire::{NativeSearch, NativeTools, ToolCall};

use crate::strategy::config::UnloadedCalls;
use crate::strategy::pool;
use crate::strategy::protocol::{Effect, Env, ProtocolError, Resolution, State, Strategy};
use crate::strategy::selection::{self};

use super::build::Composite;

impl Composite {
    /// The top-level tool through which `address` is reached first.
    pub(super) fn top_level_tool_of(&self, address: &Address) -> Option<String> {
        let target = ExpectedCall::to(address.clone());
        let probe = State {
            active: None,
            ..State::default()
        };
        self.part_for(address)?
            .route(&target, &json!({}), &probe)
            .map(|(t, _)| t)
    }

    pub(super) fn part_for(&self, address: &Address) -> Option<&dyn Strategy> {
        self.parts
            .iter()
            .find(|p| p.owns(address))
            .map(|b| b.as_ref())
    }

    /// Answers one call of the model, with no live server.
    pub fn resolve(&self, call: &ToolCall, state: &mut State, databases: &Databases) -> Resolution {
        self.resolve_live(call, state, databases, None)
    }

    /// Answers one call of the model; calls to a live server's tools go to `live`.
    pub fn resolve_live(
        &self,
        call: &ToolCall,
        state: &mut State,
        databases: &Databases,
        live: Option<&dyn LiveCalls>,
    ) -> Resolution {
        let env = Env {
            catalog: &self.catalog,
            databases,
            config: &self.config,
            live,
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
    pub(super) fn apply(&self, state: &mut State, r: &Resolution) {
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
                        crate::strategy::results::truncate(&answer, &self.config.results.connector)
                    }
                    Address::Mcp(..) => {
                        crate::strategy::results::truncate(&answer, &self.config.results.mcp)
                    }
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
