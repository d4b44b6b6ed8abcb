//! The oracle: knows the expectation and takes the shortest route through the
//! strategy's protocol that never calls a tool whose definition it has not been shown
//! (it discovers first). One call per turn. Its costs are each strategy's token floor,
//! and its exact match on every query proves each expectation reachable.

use serde_json::{json, Map, Value};

use super::backend::{Answer, Backend, GroundTruth, ModelError, Purpose, Request, Session};
use super::mock::fill_required;
use crate::catalog::Address;
use crate::scenario::expect::ExpectedCall;
use crate::strategy::code::code_api::RUN_CODE;
use crate::strategy::code::{code_files, code_mode};
use crate::strategy::{pool, Composite};
use crate::wire::{Response, ToolCall};

/// Tools the oracle calls once per target still needing them, in one turn.
const BATCHED: [&str; 4] = [
    pool::TOOL_SEARCH,
    code_mode::SEARCH_API,
    code_files::LIST_FILES,
    code_files::READ_FILE,
];

/// The oracle backend: each session is handed the episode's ground truth.
pub struct Oracle;

impl Backend for Oracle {
    fn name(&self) -> &str {
        "oracle"
    }

    fn wants_ground_truth(&self) -> bool {
        true
    }

    fn open(
        &self,
        _key: &crate::record::OutcomeKey,
        truth: Option<GroundTruth>,
    ) -> Box<dyn Session> {
        Box::new(OracleSession { truth, calls: 0 })
    }
}

/// One episode of the oracle.
pub struct OracleSession {
    /// `None` only if the runner did not hand it over: then it answers without calls.
    truth: Option<GroundTruth>,
    calls: usize,
}

/// The arguments the oracle sends for an expected call: the first accepted value of
/// each pinned parameter, placeholders for the other required ones; for database
/// queries, the reference SQL.
pub fn oracle_args(target: &ExpectedCall, protocol: &Composite) -> Value {
    if let Address::Database(_) = target.address {
        let sql = target
            .sql
            .clone()
            .unwrap_or_else(|| "SELECT name FROM sqlite_master LIMIT 1".into());
        return json!({"sql": sql});
    }
    let catalog_schema = protocol.catalog_schema(&target.address);
    if target.bfcl {
        // BFCL's answers hold dicts of accepted lists: send one call its checker takes.
        if let Ok(call) = crate::args::bfcl_example_call(
            catalog_schema.as_ref().unwrap_or(&json!({})),
            &target.args,
        ) {
            return call;
        }
    }
    let given: Map<String, Value> = target
        .args
        .iter()
        .filter_map(|(k, vals)| {
            // `""` is "may be left out" among accepted values, unless the parameter is
            // compared exactly (a reference call's arguments, sent as they are).
            let verbatim = target.compare.get(k) == Some(&crate::args::Compare::Exact);
            vals.iter()
                .find(|v| verbatim || **v != json!(""))
                .map(|v| (k.clone(), v.clone()))
        })
        .collect();
    fill_required(&catalog_schema.unwrap_or(json!({})), &given)
}

#[async_trait::async_trait]
impl Session for OracleSession {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError> {
        Ok(self.next(request).into())
    }
}

impl OracleSession {
    fn next(&mut self, request: &Request<'_>) -> Response {
        let Some(truth) = &self.truth else {
            return Response::say("Done.");
        };
        let state = truth.state.lock().expect("episode state");
        // The turn being answered: its expectation, its protocol, and its own calls
        // (what an earlier turn loaded stays loaded; what it executed is its own).
        let (expect, protocol) = truth.turn(state.turn);
        // Each step's first alternative, as often as the step says, in listed order;
        // skills first: a careful model reads the procedure before acting.
        let calls = expect.canonical_calls();
        let mut targets: Vec<&ExpectedCall> = calls
            .iter()
            .copied()
            .filter(|c| matches!(c.address, Address::Skill(_)))
            .collect();
        targets.extend(
            calls
                .iter()
                .copied()
                .filter(|c| !matches!(c.address, Address::Skill(_))),
        );
        if let Purpose::Select { max } = request.purpose {
            let mut tools = protocol.tools_for(&targets);
            tools.truncate(max);
            return super::mock::selection_answer(request.context, &tools);
        }
        // The same address may be expected twice (e.g. two cities): the k-th
        // expectation of an address is met by its k-th execution in this turn.
        let executed = &state.executed[state.turn_start.min(state.executed.len())..];
        let done = |k: usize| {
            let t = targets[k];
            let earlier = targets[..k]
                .iter()
                .filter(|x| x.address == t.address)
                .count();
            match &t.address {
                Address::Skill(n) => state.loaded_skills.contains(n),
                a => executed.iter().filter(|e| *e == a).count() > earlier,
            }
        };
        for (k, t) in targets.iter().enumerate() {
            if done(k) {
                continue;
            }
            let args = oracle_args(t, protocol);
            // A definition the result budget cut from the answer that should have
            // shown it: no path of the protocol shows it whole. A skill's text cannot
            // be had (its step stays unmet); a tool is called as it stands, blind.
            let route = if state.cut.contains(&t.address) {
                if matches!(t.address, Address::Skill(_)) {
                    continue;
                }
                let mut probe = state.clone();
                probe.shown.insert(t.address.clone());
                protocol.route(t, &args, &probe)
            } else {
                protocol.route(t, &args, &state)
            };
            if let Some((tool, mut a)) = route {
                // Loading tools: load every one the rest of the task needs at once.
                if tool == crate::strategy::selection::REQUEST_TOOLS {
                    let missing: Vec<String> = protocol
                        .tools_for(&targets[k..])
                        .into_iter()
                        .filter(|n| !protocol.is_loaded(&state, n))
                        .collect();
                    a = serde_json::json!({ "tool_names": missing });
                }
                // Code mode: one program for every call still to be made that runs
                // through it, passing on what earlier calls return.
                if tool == RUN_CODE {
                    let calls: Vec<(Address, Value)> = (k..targets.len())
                        .filter(|&j| !done(j))
                        .filter_map(|j| {
                            let later = targets[j];
                            let args = oracle_args(later, protocol);
                            let route = protocol.route(later, &args, &state)?;
                            (route.0 == RUN_CODE).then(|| (later.address.clone(), args))
                        })
                        .collect();
                    if let Some(code) = protocol.program(&calls, request.context.query()) {
                        a = json!({ "code": code });
                    }
                }
                // Under tool search (and code mode's search and files), one call per
                // definition still to be shown, made together in one turn (parallel
                // calls).
                if BATCHED.contains(&tool.as_str()) {
                    let mut searches: Vec<Value> = Vec::new();
                    for later in &targets[k..] {
                        let route = protocol.route(later, &oracle_args(later, protocol), &state);
                        if let Some((_, sa)) = route.filter(|(t, _)| t == &tool) {
                            if !searches.contains(&sa) {
                                searches.push(sa);
                            }
                        }
                    }
                    let calls = searches
                        .iter()
                        .map(|sa| {
                            self.calls += 1;
                            ToolCall::new(format!("call_{}", self.calls), tool.clone(), sa)
                        })
                        .collect();
                    return Response::call(calls);
                }
                // Under mcp-resource, one read for every tool still to be read.
                if tool == crate::strategy::mcp_pd::mcp_resource::READ_RESOURCE {
                    let mut names: Vec<String> = Vec::new();
                    for later in &targets[k..] {
                        let route = protocol.route(later, &oracle_args(later, protocol), &state);
                        if let Some((_, ra)) = route.filter(|(t, _)| t == &tool) {
                            let uri = ra["resource_uri"].as_str().unwrap_or_default().to_string();
                            if let Some((_, list)) = uri.split_once("?tools=") {
                                for n in list.split(',') {
                                    if !names.iter().any(|x| x == n) {
                                        names.push(n.to_string());
                                    }
                                }
                            }
                        }
                    }
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    a = json!({
                        "resource_uri": crate::strategy::mcp_pd::mcp_resource::McpResource::uri_for(&refs)
                    });
                }
                self.calls += 1;
                return Response::call(vec![ToolCall::new(
                    format!("call_{}", self.calls),
                    tool,
                    &a,
                )]);
            }
        }
        Response::say("Done.")
    }
}
