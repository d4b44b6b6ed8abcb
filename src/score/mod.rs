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
use crate::scenario::Query;
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
    query: &Query,
    calls: &[CallRecord],
    text_calls: usize,
    final_skills: &[String],
    catalog: &Catalog,
    dbs: &Databases,
) -> Score {
    let expect = &query.expect;
    let mut facts = Facts::new(expect, calls, final_skills);
    facts.tried = text_calls > 0 || calls.iter().any(|c| c.malformed);
    if expect.is_classic() {
        sets::classic(expect, &facts, catalog, dbs)
    } else {
        steps::stepwise(expect, &facts, catalog, dbs)
    }
}
