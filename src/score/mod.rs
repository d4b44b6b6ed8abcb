//! Scoring (DESIGN §8): selection metrics on the addresses of executed calls,
//! BFCL-style argument matching, JSON Schema validity, SQL judged by execution, and
//! the protocol counters.
//!
//! Abstention is judged on what the model tried, not only on what executed (see
//! [`score`]).
//!
//! Conventions: the predicted set is the executed addresses plus the skills the model
//! loaded itself (`read_skill`); a skill that is expected counts as predicted when its
//! full text was in the context at the model's first executed call (or at its final
//! answer if it made none), which is always true under `inline`. Skills that are
//! merely inlined and not expected are not predictions. With an empty predicted set
//! precision is 1; with an empty expected set recall is 1; F1 is 0 when either is 0.
//!
//! [`record`] holds what is scored and counted, [`sets`] the classic set scoring,
//! [`steps`] the step scoring, [`args`] the argument checks and [`sql`] the SQL judge.

pub mod args;
mod facts;
pub mod record;
mod sets;
pub mod sql;
mod steps;
pub mod surfacing;
#[cfg(test)]
mod tests;
pub mod text_calls;

pub use crate::args::{standardize, value_eq, value_eq_as};
pub use args::{bfcl_args_ok, bfcl_args_ok_with, call_matches};
pub use record::{protocol, CallEffect, CallRecord, Protocol, Score};
pub use sql::project_onto;
pub use text_calls::is_text_call;

use crate::catalog::Catalog;
use crate::environment::Databases;
use crate::scenario::Expect;
use facts::Facts;

/// Scores one episode. A classic expectation (no v2 keys) is scored as sets of
/// addresses, exactly as before steps existed; otherwise step by step
/// ([`steps::stepwise`]).
///
/// `text_calls` counts the answers that wrote a call as text instead of making it
/// ([`text_calls`]). On a query that expects no call, the model abstained only if it
/// tried no call: nothing executed, no call written as text, and no malformed call
/// (an unknown tool or target of an execution, arguments that do not parse; see
/// [`CallRecord::malformed`]); otherwise `abstain_ok` is false and the outcome is not
/// exact.
pub fn score(
    expect: &Expect,
    calls: &[CallRecord],
    text_calls: usize,
    final_skills: &[String],
    catalog: &Catalog,
    dbs: &Databases,
) -> Score {
    let mut facts = Facts::new(expect, calls, final_skills);
    facts.tried = text_calls > 0 || calls.iter().any(|c| c.malformed);
    if expect.is_classic() {
        sets::classic(expect, &facts, catalog, dbs)
    } else {
        steps::stepwise(expect, &facts, catalog, dbs)
    }
}

/// A conversation's score from its turns': exact when every turn is; precision,
/// recall and F1 the means over its turns; the first call correct when the first
/// turn's was; a forbidden call when any turn made one; abstention, arguments and
/// schemas where some turn judged them, right only when every such turn was; the
/// predictions of every turn. A conversation that ended early (an infra error) has
/// fewer turns than `n`: it is not exact.
pub fn conversation(turns: &[Score], n: usize) -> Score {
    let mean = |f: &dyn Fn(&Score) -> f64| {
        if turns.is_empty() {
            0.0
        } else {
            turns.iter().map(f).sum::<f64>() / turns.len() as f64
        }
    };
    let all = |f: &dyn Fn(&Score) -> Option<bool>| {
        let judged: Vec<bool> = turns.iter().filter_map(f).collect();
        (!judged.is_empty()).then(|| judged.iter().all(|b| *b))
    };
    Score {
        exact: turns.len() == n && turns.iter().all(|s| s.exact),
        precision: mean(&|s| s.precision),
        recall: mean(&|s| s.recall),
        f1: mean(&|s| s.f1),
        first_call_correct: turns.first().is_some_and(|s| s.first_call_correct),
        abstain_ok: all(&|s| s.abstain_ok),
        forbidden_hit: turns.iter().any(|s| s.forbidden_hit),
        args_ok: all(&|s| s.args_ok),
        schema_valid: all(&|s| s.schema_valid),
        predicted: turns.iter().flat_map(|s| s.predicted.clone()).collect(),
        state_ok: all(&|s| s.state_ok),
        results_ok: all(&|s| s.results_ok),
    }
}

/// Why a turn is not exact, in words a reader of the record can act on: what it
/// should have done and did not, what it did that it should not have.
pub fn why(expect: &Expect, score: &Score, overflowed: bool) -> String {
    if overflowed {
        return "the request was larger than the model's context window".into();
    }
    let expected: Vec<String> = expect
        .canonical_calls()
        .iter()
        .map(|c| c.address.to_string())
        .collect();
    let predicted: Vec<String> = score.predicted.iter().map(|a| a.to_string()).collect();
    let missing: Vec<&String> = expected.iter().filter(|a| !predicted.contains(a)).collect();
    let extra: Vec<&String> = predicted
        .iter()
        .filter(|a| {
            !expected.contains(a) && !expect.allow.iter().any(|x| x.address.to_string() == **a)
        })
        .collect();
    let mut parts = Vec::new();
    if expected.is_empty() && !predicted.is_empty() {
        parts.push("expected no call".to_string());
    }
    if !missing.is_empty() {
        parts.push(format!("missing {}", join(&missing)));
    }
    if !extra.is_empty() {
        parts.push(format!("unexpected {}", join(&extra)));
    }
    if score.forbidden_hit {
        parts.push("a forbidden call".into());
    }
    if score.args_ok == Some(false) {
        parts.push("arguments not accepted".into());
    }
    if parts.is_empty() {
        parts.push("the calls were not in the expected order or number".into());
    }
    parts.join("; ")
}

fn join(v: &[&String]) -> String {
    v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}
