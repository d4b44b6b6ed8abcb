//! Multi-turn outputs in BFCL's result format judged as BFCL's multi-turn checker judges
//! them, by executing them on BFCL's own classes through the scenario's live servers
//! (the bridge), rule for rule:
//!
//! - a `result` that is not a list is an `inference_error`; one whose number of turns
//!   differs from the ground truth's is `force_terminated`;
//! - each step of a turn is decoded as BFCL's function-calling handlers decode it
//!   (`convert_to_function_call`): a mapping, or a list of mappings, of function name
//!   to arguments (a JSON string, or a mapping); a step that does not decode — text,
//!   arguments that are not JSON or not a mapping — or decodes to nothing is dropped;
//! - per turn, the model's decoded calls run on the model's instance and the ground
//!   truth's on a second one; a turn whose ground truth is empty is not judged (its
//!   calls still ran); otherwise the model must have a decoded call in the turn
//!   (`empty_turn_model_response`), the states must be equal
//!   (`instance_state_mismatch`), and each result of the turn's ground truth must be
//!   among the model's results of every turn so far, as a multiset
//!   (`execution_response_mismatch`); the first failing turn decides.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::results::{ResultLine, Verdict};

/// Why outputs could not be judged: the input's fault (exit 2) or the machine's, a
/// live server that failed (exit 3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JudgeError {
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Infra(String),
}
use crate::catalog::Resource;
use crate::environment::live::{Instances, Live, LiveCalls};
use crate::scenario::{Query, Scenario};

/// One step decoded as BFCL's function-calling handlers decode it: the calls, or
/// `None` when the step does not decode (and is dropped).
pub fn decode_step(step: &Value) -> Option<Vec<(String, Map<String, Value>)>> {
    let items: Vec<&Value> = match step {
        Value::Object(_) => vec![step],
        Value::Array(a) => a.iter().collect(),
        _ => return None,
    };
    let mut calls = Vec::new();
    for item in items {
        // `.items()` of something that is not a mapping raises: the step is dropped.
        let o = item.as_object()?;
        for (name, args) in o {
            let args = match args {
                Value::String(s) => serde_json::from_str::<Value>(s).ok()?,
                v => v.clone(),
            };
            calls.push((name.clone(), args.as_object()?.clone()));
        }
    }
    Some(calls)
}

/// Why an output failed, in BFCL's error types.
fn invalid(sc: &Scenario, q: &Query, line: &ResultLine, reason: &str) -> Verdict {
    Verdict {
        id: q.id.clone(),
        scenario: sc.name.clone(),
        line: line.line,
        valid: false,
        reason: Some(reason.to_string()),
        variant: line.variant.clone(),
    }
}

/// Judges one multi-turn output against its converted conversation, on fresh
/// instances of `live`'s servers. An `Err` is an infrastructure failure (the bridge
/// failed), not a verdict.
pub fn judge_multi(
    sc: &Scenario,
    q: &Query,
    live: &Arc<Live>,
    line: &ResultLine,
) -> Result<Verdict, JudgeError> {
    let Some(turns) = line.result.as_array() else {
        return Ok(invalid(sc, q, line, "multi_turn:inference_error"));
    };
    if turns.len() != q.n_turns() {
        return Ok(invalid(sc, q, line, "multi_turn:force_terminated"));
    }
    let Some(server) = q.scope.iter().find_map(|r| match r {
        Resource::Mcp(s) => Some(s.clone()),
        _ => None,
    }) else {
        return Err(JudgeError::Usage(format!(
            "{}: the query names no MCP server",
            q.id
        )));
    };
    let model = live.instances();
    let truth = live.instances();
    let failed = |i: &Instances| i.failure();
    for (t, turn) in turns.iter().enumerate() {
        // A turn that is not a list is iterated as BFCL iterates it (a string char by
        // char): nothing in it decodes.
        let steps: &[Value] = turn.as_array().map(Vec::as_slice).unwrap_or(&[]);
        let mut made = 0;
        for step in steps {
            let Some(calls) = decode_step(step) else {
                continue;
            };
            for (name, args) in calls {
                model.call(&server, &name, &Value::Object(args));
                made += 1;
            }
        }
        let expect = q.turn_expect(t);
        let reference = expect.reference.as_deref().unwrap_or(&[]);
        let mut wanted = Vec::new();
        for r in reference {
            if let crate::catalog::Address::Mcp(s, tool) = &r.address {
                if let Some(text) = truth.call(s, tool, &Value::Object(r.args.clone())) {
                    wanted.push(text);
                }
            }
        }
        if let Some(e) = failed(&model).or_else(|| failed(&truth)) {
            return Err(JudgeError::Infra(format!("{}: {e}", q.id)));
        }
        if reference.is_empty() {
            continue;
        }
        if made == 0 {
            return Ok(invalid(sc, q, line, "multi_turn:empty_turn_model_response"));
        }
        if model.state(&server) != truth.state(&server) {
            if let Some(e) = failed(&model).or_else(|| failed(&truth)) {
                return Err(JudgeError::Infra(format!("{}: {e}", q.id)));
            }
            return Ok(invalid(sc, q, line, "multi_turn:instance_state_mismatch"));
        }
        let mut have: HashMap<String, usize> = HashMap::new();
        for r in model.results() {
            *have.entry(r).or_default() += 1;
        }
        for w in &wanted {
            match have.get_mut(w) {
                Some(n) if *n > 0 => *n -= 1,
                _ => {
                    return Ok(invalid(
                        sc,
                        q,
                        line,
                        "multi_turn:execution_response_mismatch",
                    ))
                }
            }
        }
    }
    Ok(Verdict {
        id: q.id.clone(),
        scenario: sc.name.clone(),
        line: line.line,
        valid: true,
        reason: None,
        variant: line.variant.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_decode_as_bfcls_function_calling_handlers_decode_them() {
        let ok = decode_step(&json!([{"cd": "{\"folder\": \"a\"}"}, {"ls": "{}"}])).unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[0].0, "cd");
        assert_eq!(ok[0].1["folder"], "a");
        // A mapping with several names gives several calls; a mapping as arguments is
        // taken as it is.
        let two = decode_step(&json!({"a": "{}", "b": {"x": 1}})).unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].1["x"], 1);
        assert_eq!(decode_step(&json!([])).unwrap().len(), 0);
        // Text, arguments that are not JSON or not a mapping: the step is dropped.
        for bad in [
            json!("I moved it."),
            json!(null),
            json!(["text"]),
            json!([{"cd": "{folder: a}"}]),
            json!([{"cd": "[1]"}]),
            json!([{"cd": "{}"}, {"ls": "oops"}]),
        ] {
            assert!(decode_step(&bad).is_none(), "{bad}");
        }
    }
}
