//! Classic scoring: an expectation with no v2 keys scored as sets of addresses,
//! exactly as before steps existed.

use std::collections::BTreeSet;

use serde_json::Value;

use super::args::call_matches;
use super::facts::{f1, schema_valid, Facts};
use super::record::Score;
use crate::catalog::{Address, Catalog};
use crate::environment::Databases;
use crate::scenario::expect::{Expect, ExpectedCall, Order};

/// Classic scoring: expected and predicted addresses as sets.
pub fn classic(expect: &Expect, facts: &Facts, catalog: &Catalog, dbs: &Databases) -> Score {
    let calls: Vec<&ExpectedCall> = expect.calls.iter().map(|s| s.canonical()).collect();
    let predicted = &facts.predicted;
    let expected: BTreeSet<&Address> = calls.iter().map(|c| &c.address).collect();
    let pred: BTreeSet<&Address> = predicted.iter().collect();
    let late: BTreeSet<&Address> = facts.late.iter().collect();
    let hits = pred
        .intersection(&expected)
        .filter(|a| !late.contains(*a))
        .count();
    let precision = if pred.is_empty() {
        1.0
    } else {
        hits as f64 / pred.len() as f64
    };
    let recall = if expected.is_empty() {
        1.0
    } else {
        hits as f64 / expected.len() as f64
    };
    let f1 = f1(
        precision,
        recall,
        hits,
        pred.is_empty() && expected.is_empty(),
    );
    // A query that expects no call is met only by a model that tried none.
    let mut exact = pred == expected && late.is_empty() && !(expected.is_empty() && facts.tried);
    if exact && expect.order == Order::Sequence {
        let want: Vec<&Address> = calls
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
    let first_call_correct = match predicted.first() {
        None => expected.is_empty(),
        Some(a) => expected.contains(a) && !late.contains(a),
    };
    let non_skill: Vec<&&ExpectedCall> = calls
        .iter()
        .filter(|c| !matches!(c.address, Address::Skill(_)))
        .collect();
    let args_ok = (!non_skill.is_empty()).then(|| {
        non_skill.iter().all(|e| {
            facts
                .executed
                .iter()
                .filter(|c| c.address.as_ref() == Some(&e.address))
                .any(|c| {
                    let args = c.args.clone().unwrap_or(Value::Null);
                    call_matches(e, &args, catalog, dbs)
                })
        })
    });
    Score {
        exact,
        precision,
        recall,
        f1,
        first_call_correct,
        abstain_ok: expected
            .is_empty()
            .then_some(pred.is_empty() && !facts.tried),
        forbidden_hit: predicted.iter().any(|a| expect.forbid.contains(a)),
        args_ok,
        schema_valid: schema_valid(facts),
        predicted: predicted.clone(),
        state_ok: None,
        results_ok: None,
    }
}
