//! The oracle: knows the expectation and takes the shortest route through the
//! strategy's protocol that never calls a tool whose definition it has not been shown
//! (it discovers first). One call per turn. Its costs are each strategy's token floor,
//! and its exact match on every query proves each expectation reachable.

use serde_json::{json, Map, Value};

use super::{fill_required, InfraError, Model, Purpose, Turn};
use crate::catalog::Address;
use crate::scenario::ExpectedCall;
use crate::wire::{Response, ToolCall};

#[derive(Default)]
pub struct Oracle {
    calls: usize,
}

/// The arguments the oracle sends for an expected call: the first accepted value of
/// each pinned parameter, placeholders for the other required ones; for database
/// queries, the reference SQL.
pub fn oracle_args(target: &ExpectedCall, turn: &Turn) -> Value {
    if let Address::Database(_) = target.address {
        let sql = target
            .sql
            .clone()
            .unwrap_or_else(|| "SELECT name FROM sqlite_master LIMIT 1".into());
        return json!({"sql": sql});
    }
    let given: Map<String, Value> = target
        .args
        .iter()
        .filter_map(|(k, vals)| {
            vals.iter()
                .find(|v| **v != json!(""))
                .map(|v| (k.clone(), v.clone()))
        })
        .collect();
    let catalog_schema = turn.guide.composite.catalog_schema(&target.address);
    fill_required(&catalog_schema.unwrap_or(json!({})), &given)
}

impl Model for Oracle {
    fn name(&self) -> &str {
        "oracle"
    }

    fn begin(&mut self) {
        self.calls = 0;
    }

    fn respond(&mut self, turn: &Turn) -> Result<Response, InfraError> {
        let expect = &turn.query.expect;
        // Skills first: a careful model reads the procedure before acting.
        let mut targets: Vec<&ExpectedCall> = expect
            .calls
            .iter()
            .filter(|c| matches!(c.address, Address::Skill(_)))
            .collect();
        targets.extend(
            expect
                .calls
                .iter()
                .filter(|c| !matches!(c.address, Address::Skill(_))),
        );
        let g = &turn.guide;
        if turn.purpose == Purpose::Select {
            let mut tools = g.composite.tools_for(&targets);
            tools.truncate(g.composite.selection_config().max);
            return Ok(Response::say(
                serde_json::to_string(&tools).expect("names serialize"),
            ));
        }
        for (k, t) in targets.iter().enumerate() {
            // The same address may be expected twice (e.g. two cities): the k-th
            // expectation of an address is met by its k-th execution.
            let earlier = targets[..k]
                .iter()
                .filter(|x| x.address == t.address)
                .count();
            let done = match &t.address {
                Address::Skill(n) => g.state.loaded_skills.contains(n),
                a => g.state.executed.iter().filter(|e| *e == a).count() > earlier,
            };
            if done {
                continue;
            }
            let args = oracle_args(t, turn);
            if let Some((tool, a)) = g.composite.route(t, &args, g.state) {
                self.calls += 1;
                return Ok(Response::call(vec![ToolCall::new(
                    format!("call_{}", self.calls),
                    tool,
                    &a,
                )]));
            }
        }
        Ok(Response::say("Done."))
    }
}
