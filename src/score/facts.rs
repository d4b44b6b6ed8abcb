//! What every scoring rule reads of an episode: the executed calls, the skills in
//! context when the model first acted, and the predicted addresses in order (executed
//! addresses, and skills a fetch brought into the context).

use std::collections::BTreeSet;

use super::record::{CallEffect, CallRecord};
use crate::catalog::Address;
use crate::scenario::expect::Expect;

/// What every scoring rule reads of an episode.
pub struct Facts<'a> {
    pub executed: Vec<&'a CallRecord>,
    /// Skills whose text was in context when the model first acted.
    pub acting_skills: Vec<String>,
    /// Selection events in order, each address once: `read_skill` fetches, executed
    /// calls, and expected skills that were in context when the model acted.
    pub predicted: Vec<Address>,
    /// Expected skills the model read only after it had acted: predictions, not hits.
    pub late: BTreeSet<Address>,
    /// The model tried a call that could not act: one written as text, or a malformed
    /// one (an unknown tool or target, arguments that do not parse).
    pub tried: bool,
}

impl<'a> Facts<'a> {
    pub fn new(expect: &Expect, calls: &'a [CallRecord], final_skills: &[String]) -> Facts<'a> {
        let executed: Vec<&CallRecord> = calls
            .iter()
            .filter(|c| c.effect == CallEffect::Executed)
            .collect();
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
        for c in calls {
            if c.effect == CallEffect::Executed {
                push(c.address.as_ref().expect("executed calls carry an address"));
            } else if c.effect == CallEffect::Fetched {
                // A skill whose text a fetch brought: the model loaded it itself.
                for a in c.fetched.iter().filter(|a| matches!(a, Address::Skill(_))) {
                    push(a);
                }
            }
        }
        for e in expect.all_alternatives() {
            if let Address::Skill(n) = &e.address {
                if acting_skills.contains(n) {
                    push(&e.address);
                }
            }
        }
        let late = expect
            .all_alternatives()
            .map(|e| &e.address)
            .filter(|a| matches!(a, Address::Skill(n) if !acting_skills.contains(n)))
            .filter(|a| predicted.contains(a))
            .cloned()
            .collect();
        Facts {
            executed,
            acting_skills,
            predicted,
            late,
            tried: false,
        }
    }
}

/// `F1` from precision and recall; 0 when nothing expected was hit, unless nothing
/// was expected and nothing predicted.
pub fn f1(precision: f64, recall: f64, hits: usize, nothing_either_way: bool) -> f64 {
    if precision + recall == 0.0 || hits == 0 && !nothing_either_way {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    }
}

pub fn schema_valid(facts: &Facts) -> Option<bool> {
    (!facts.executed.is_empty()).then(|| facts.executed.iter().all(|c| c.schema_errors.is_empty()))
}
