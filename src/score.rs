//! Scoring (DESIGN §8): selection metrics on the addresses of executed calls,
//! BFCL-style argument matching, JSON Schema validity, SQL judged by execution, and
//! the protocol counters.
//!
//! Conventions: the predicted set is the executed addresses plus the skills the model
//! loaded itself (`read_skill`); a skill that is expected counts as predicted when its
//! full text was in the context at the model's first executed call (or at its final
//! answer if it made none), which is always true under `inline`. Skills that are
//! merely inlined and not expected are not predictions. With an empty predicted set
//! precision is 1; with an empty expected set recall is 1; F1 is 0 when either is 0.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Address, Catalog};
use crate::environment::{same_rows, Databases, JUDGE_ROW_LIMIT};
use crate::scenario::{ExpectedCall, Order, Query};
use crate::strategy::ProtocolError;

/// What a call was: a real call, a discovery (protocol), or a refused one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallEffect {
    Executed,
    Fetched,
    Error,
}

impl CallEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            CallEffect::Executed => "executed",
            CallEffect::Fetched => "fetched",
            CallEffect::Error => "error",
        }
    }
}

/// One call as the runner recorded it, with what it meant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    pub turn: usize,
    pub tool: String,
    pub arguments: String,
    pub effect: CallEffect,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
    /// Addresses whose definitions this call brought into the context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fetched: Vec<Address>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ProtocolError>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schema_errors: Vec<String>,
    #[serde(default)]
    pub blind: bool,
    /// For executed calls, the parsed arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Skills whose full text was in the context when this call was made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills_in_context: Vec<String>,
}

/// The selection metrics of one outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub exact: bool,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub first_call_correct: bool,
    /// `Some` only when no call was expected: whether none was made.
    pub abstain_ok: Option<bool>,
    pub forbidden_hit: bool,
    /// `Some` when a non-skill call was expected: every one was executed with
    /// arguments that pass the BFCL checks (or, for SQL, return the reference rows).
    pub args_ok: Option<bool>,
    /// `Some` when something was executed: every executed call's arguments validate.
    pub schema_valid: Option<bool>,
    pub predicted: Vec<Address>,
}

/// Protocol counters of one outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protocol {
    pub discovery_calls: usize,
    pub blind_calls: usize,
    pub unknown_target: usize,
    pub bad_subcommand: usize,
    pub schema_violation: usize,
    pub not_loaded: usize,
    pub repeat_call: usize,
    pub overfetch: usize,
    pub turns: usize,
    pub hit_max_turns: bool,
}

impl Protocol {
    /// Errors the strategy answered with: unknown targets, bad subcommands, schema
    /// violations and calls to tools not loaded.
    pub fn errors(&self) -> usize {
        self.unknown_target + self.bad_subcommand + self.schema_violation + self.not_loaded
    }
}

/// Scores one episode.
pub fn score(
    query: &Query,
    calls: &[CallRecord],
    final_skills: &[String],
    catalog: &Catalog,
    dbs: &Databases,
) -> Score {
    let expect = &query.expect;
    let executed: Vec<&CallRecord> = calls
        .iter()
        .filter(|c| c.effect == CallEffect::Executed)
        .collect();
    // Skills in context when the model first acted.
    let acting_skills: Vec<String> = executed
        .first()
        .map(|c| c.skills_in_context.clone())
        .unwrap_or_else(|| final_skills.to_vec());

    let mut predicted: Vec<Address> = Vec::new();
    let mut push = |a: &Address| {
        if !predicted.contains(a) {
            predicted.push(a.clone());
        }
    };
    // Selection events in order: read_skill fetches and executed calls.
    for c in calls {
        if c.effect == CallEffect::Executed {
            push(c.address.as_ref().expect("executed calls carry an address"));
        } else if c.effect == CallEffect::Fetched && c.tool == "read_skill" {
            for a in &c.fetched {
                push(a);
            }
        }
    }
    for e in &expect.calls {
        if let Address::Skill(n) = &e.address {
            if acting_skills.contains(n) {
                push(&e.address);
            }
        }
    }

    let expected: BTreeSet<&Address> = expect.calls.iter().map(|c| &c.address).collect();
    let pred: BTreeSet<&Address> = predicted.iter().collect();
    // An expected skill the model read only after it had acted is a prediction (it
    // chose to read it) but not a hit: its text was not there when it mattered.
    let late: BTreeSet<&Address> = expected
        .iter()
        .copied()
        .filter(|a| matches!(a, Address::Skill(n) if !acting_skills.contains(n)))
        .filter(|a| pred.contains(a))
        .collect();
    let hits = pred
        .intersection(&expected)
        .filter(|a| !late.contains(*a))
        .count() as f64;
    let precision = if pred.is_empty() {
        1.0
    } else {
        hits / pred.len() as f64
    };
    let recall = if expected.is_empty() {
        1.0
    } else {
        hits / expected.len() as f64
    };
    let f1 =
        if precision + recall == 0.0 || hits == 0.0 && !(pred.is_empty() && expected.is_empty()) {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
    let mut exact = pred == expected && late.is_empty();
    if exact && expect.order == Order::Sequence {
        let want: Vec<&Address> = expect
            .calls
            .iter()
            .map(|c| &c.address)
            .filter(|a| !matches!(a, Address::Skill(_)))
            .collect();
        let got: Vec<&Address> = predicted
            .iter()
            .filter(|a| !matches!(a, Address::Skill(_)))
            .collect();
        exact = want == got;
    }
    let first_event = predicted.first();
    let first_call_correct = match first_event {
        None => expected.is_empty(),
        Some(a) => expected.contains(a) && !late.contains(a),
    };
    let abstain_ok = expected.is_empty().then_some(pred.is_empty());
    let forbidden_hit = predicted.iter().any(|a| expect.forbid.contains(a));

    let non_skill: Vec<&ExpectedCall> = expect
        .calls
        .iter()
        .filter(|c| !matches!(c.address, Address::Skill(_)))
        .collect();
    let args_ok = (!non_skill.is_empty()).then(|| {
        non_skill.iter().all(|e| {
            executed
                .iter()
                .filter(|c| c.address.as_ref() == Some(&e.address))
                .any(|c| {
                    let args = c.args.clone().unwrap_or(Value::Null);
                    call_matches(e, &args, catalog, dbs)
                })
        })
    });
    let schema_valid =
        (!executed.is_empty()).then(|| executed.iter().all(|c| c.schema_errors.is_empty()));
    Score {
        exact,
        precision,
        recall,
        f1,
        first_call_correct,
        abstain_ok,
        forbidden_hit,
        args_ok,
        schema_valid,
        predicted,
    }
}

/// Whether executed arguments satisfy an expected call.
pub fn call_matches(e: &ExpectedCall, args: &Value, catalog: &Catalog, dbs: &Databases) -> bool {
    if let (Address::Database(db), Some(sql)) = (&e.address, &e.sql) {
        let Some(got) = args.get("sql").and_then(Value::as_str) else {
            return false;
        };
        let judge = |q: &str| dbs.query_limited(db, q, JUDGE_ROW_LIMIT);
        let (Ok(want), Ok(got)) = (judge(sql), judge(got)) else {
            return false;
        };
        return same_rows(&want, &got, sql.to_lowercase().contains("order by"));
    }
    let schema = catalog.schema_of(&e.address).unwrap_or(Value::Null);
    bfcl_args_ok(&schema, &e.args, args)
}

/// BFCL's AST checks on one call's arguments: every required parameter present, no
/// unknown parameter, each value of its declared type, and each pinned parameter's
/// value in its accepted list (strings compared case- and punctuation-insensitively;
/// `""` in a list means the parameter may be left out).
pub fn bfcl_args_ok(
    schema: &Value,
    accepted: &std::collections::BTreeMap<String, Vec<Value>>,
    args: &Value,
) -> bool {
    let Some(obj) = args.as_object() else {
        return false;
    };
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(req) = schema.get("required").and_then(Value::as_array) {
        if req
            .iter()
            .filter_map(Value::as_str)
            .any(|r| !obj.contains_key(r))
        {
            return false;
        }
    }
    for (k, v) in obj {
        let Some(p) = props.and_then(|p| p.get(k)) else {
            return false;
        };
        if !type_ok(p, v) {
            return false;
        }
    }
    for (k, vals) in accepted {
        match obj.get(k) {
            None => {
                if !vals.iter().any(|v| v == &Value::String(String::new())) {
                    return false;
                }
            }
            Some(v) => {
                if !vals.iter().any(|a| value_eq(a, v)) {
                    return false;
                }
            }
        }
    }
    true
}

fn type_ok(schema: &Value, v: &Value) -> bool {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => return true,
    };
    types.iter().any(|t| match *t {
        "string" => v.is_string(),
        // BFCL checks Python types: 3.0 is a float, not an int.
        "integer" => v.is_i64() || v.is_u64(),
        // BFCL accepts an int where a float is expected.
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    })
}

/// BFCL's value comparison: strings standardized, numbers by value, lists and objects
/// element by element.
pub fn value_eq(expected: &Value, got: &Value) -> bool {
    match (expected, got) {
        (Value::String(a), Value::String(b)) => standardize(a) == standardize(b),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value_eq(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, x)| b.get(k).is_some_and(|y| value_eq(x, y)))
        }
        (a, b) => a == b,
    }
}

/// BFCL's `standardize_string`: drop spaces and `,./-_*^`, lower-case, `'` → `"`.
pub fn standardize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect::<String>()
        .to_lowercase()
        .replace('\'', "\"")
}

/// Counts the protocol events of an episode.
pub fn protocol(calls: &[CallRecord], turns: usize, hit_max_turns: bool) -> Protocol {
    let mut p = Protocol {
        turns,
        hit_max_turns,
        ..Protocol::default()
    };
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for c in calls {
        if seen.contains(&(c.tool.as_str(), c.arguments.as_str())) {
            p.repeat_call += 1;
        } else {
            seen.push((&c.tool, &c.arguments));
        }
        match c.effect {
            CallEffect::Fetched => p.discovery_calls += 1,
            CallEffect::Executed => {
                if c.blind {
                    p.blind_calls += 1;
                }
                if !c.schema_errors.is_empty() {
                    p.schema_violation += 1;
                }
            }
            CallEffect::Error => match c.error {
                Some(ProtocolError::UnknownTarget) => p.unknown_target += 1,
                Some(ProtocolError::BadSubcommand) => p.bad_subcommand += 1,
                Some(ProtocolError::SchemaViolation) => p.schema_violation += 1,
                // Refused, not executed: a protocol error, not a blind call.
                Some(ProtocolError::NotLoaded) => p.not_loaded += 1,
                None => {}
            },
        }
    }
    // Definitions fetched but never used by an executed call (skills are used by
    // being read).
    let used: BTreeSet<&Address> = calls.iter().filter_map(|c| c.address.as_ref()).collect();
    let fetched: BTreeSet<&Address> = calls
        .iter()
        .filter(|c| c.effect == CallEffect::Fetched && c.tool != "read_skill")
        .flat_map(|c| c.fetched.iter())
        .collect();
    p.overfetch = fetched.difference(&used).count();
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn record(turn: usize, effect: &str, address: Address, skills: &[&str]) -> CallRecord {
        CallRecord {
            turn,
            tool: if effect == "fetched" {
                "read_skill"
            } else {
                "erp__get_order"
            }
            .into(),
            arguments: "{}".into(),
            effect: match effect {
                "fetched" => CallEffect::Fetched,
                "executed" => CallEffect::Executed,
                _ => CallEffect::Error,
            },
            address: (effect == "executed").then(|| address.clone()),
            fetched: if effect == "fetched" {
                vec![address]
            } else {
                Vec::new()
            },
            error: None,
            schema_errors: Vec::new(),
            blind: false,
            args: (effect == "executed").then(|| json!({"order_id": "9921"})),
            skills_in_context: skills.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_skill_read_after_acting_is_not_a_hit() {
        let sc =
            crate::scenario::load(std::path::Path::new("fixtures/snapshot/tiny.yaml")).unwrap();
        let dbs = Databases::build(&sc.catalog).unwrap();
        let q = &sc.queries[0];
        let skill = Address::Skill("Refund Processing".into());
        let order = Address::Connector("erp".into(), "get_order".into());
        let read_first = [
            record(1, "fetched", skill.clone(), &[]),
            record(2, "executed", order.clone(), &["Refund Processing"]),
        ];
        let s = score(
            q,
            &read_first,
            &["Refund Processing".into()],
            &sc.catalog,
            &dbs,
        );
        assert!(s.exact && s.first_call_correct && s.args_ok == Some(true));
        assert_eq!((s.precision, s.recall), (1.0, 1.0));

        let read_late = [
            record(1, "executed", order, &[]),
            record(2, "fetched", skill.clone(), &[]),
        ];
        let s = score(
            q,
            &read_late,
            &["Refund Processing".into()],
            &sc.catalog,
            &dbs,
        );
        assert!(!s.exact, "the SOP was not in context when the model acted");
        assert_eq!((s.precision, s.recall), (0.5, 0.5));
        assert!(s.predicted.contains(&skill));
    }

    #[test]
    fn integers_are_not_floats() {
        let int = json!({"type": "integer"});
        assert!(type_ok(&int, &json!(3)));
        assert!(!type_ok(&int, &json!(3.0)));
        assert!(type_ok(&json!({"type": "number"}), &json!(3)));
    }

    #[test]
    fn bfcl_string_standardization() {
        assert!(value_eq(
            &json!("San Francisco, CA"),
            &json!("san francisco ca")
        ));
        assert!(value_eq(&json!(9921), &json!(9921.0)));
        assert!(!value_eq(&json!("9921"), &json!(9921)));
    }

    #[test]
    fn bfcl_checks_required_unknown_types_and_values() {
        let schema = json!({"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}, "required": ["id"]});
        let mut acc = BTreeMap::new();
        acc.insert("id".to_string(), vec![json!("A-1")]);
        assert!(bfcl_args_ok(&schema, &acc, &json!({"id": "a1"})));
        assert!(
            !bfcl_args_ok(&schema, &acc, &json!({"id": "b1"})),
            "wrong value"
        );
        assert!(
            !bfcl_args_ok(&schema, &acc, &json!({"n": 3})),
            "missing required"
        );
        assert!(
            !bfcl_args_ok(&schema, &acc, &json!({"id": "a1", "x": 1})),
            "unknown parameter"
        );
        assert!(
            !bfcl_args_ok(&schema, &acc, &json!({"id": "a1", "n": 1.5})),
            "wrong type"
        );
        let mut opt = BTreeMap::new();
        opt.insert("n".to_string(), vec![json!(3), json!("")]);
        assert!(
            bfcl_args_ok(&schema, &opt, &json!({"id": "x"})),
            "optional may be omitted"
        );
    }
}
