//! Step-by-step scoring (v2 expectations): steps expanded into instances, matched to
//! distinct calls (a maximum matching for recall, a search that honours `sequence` and
//! `before` for exact match), allowed calls and unneeded alternatives neutral.

use std::collections::BTreeSet;

use serde_json::Value;

use super::args::{bfcl_args_ok, call_matches};
use super::facts::{f1, schema_valid, Facts};
use super::record::Score;
use crate::catalog::{Address, Catalog};
use crate::environment::Databases;
use crate::scenario::expect::{Expect, Order, Step};

/// Upper bound on the states the exact-match search visits (steps and calls are few;
/// this only guards against a pathological expectation).
const SEARCH_BUDGET: usize = 200_000;

/// Step-by-step scoring (v2 expectations).
///
/// Each step is expanded into `count` instances. A non-skill instance is matched to a
/// distinct executed call whose address one of its alternatives names; a skill step
/// is met when one of its skills was in context when the model first acted.
/// - recall: matched instances (a maximum matching) over all instances;
/// - precision, over distinct predicted addresses: those of matched calls and met
///   skills are hits; addresses that only an allowed call or an unneeded alternative
///   explains are neutral (neither hit nor miss); the rest — and skills read too late —
///   are misses;
/// - exact: every instance matched in one assignment that honours `order: sequence`
///   (instances in listed order) and every `before` pair, with no miss (and, when the
///   expectation is `exhaustive`, no more executed calls than instances, allowed ones
///   aside);
/// - first call: the first predicted address is a hit or neutral;
/// - args: one assignment covers every non-skill instance with arguments its
///   alternative accepts (BFCL checks; SQL by execution).
pub fn stepwise(expect: &Expect, facts: &Facts, catalog: &Catalog, dbs: &Databases) -> Score {
    // Instances: (step index) in listed order.
    let insts: Vec<usize> = expect
        .calls
        .iter()
        .enumerate()
        .flat_map(|(i, s)| std::iter::repeat_n(i, s.count))
        .collect();
    let occ: Vec<(&Address, Value)> = facts
        .executed
        .iter()
        .map(|c| {
            (
                c.address.as_ref().expect("executed calls carry an address"),
                c.args.clone().unwrap_or(Value::Null),
            )
        })
        .collect();
    let skill_met = |step: &Step| {
        step.alternatives.iter().any(|c| match &c.address {
            Address::Skill(n) => facts.acting_skills.contains(n),
            _ => false,
        })
    };
    // Candidate calls of each instance, by address, and by address with good arguments.
    let cand: Vec<Vec<usize>> = insts
        .iter()
        .map(|&i| {
            let step = &expect.calls[i];
            if step.is_skill() {
                return Vec::new();
            }
            (0..occ.len()).filter(|&j| step.admits(occ[j].0)).collect()
        })
        .collect();
    let args_cand: Vec<Vec<usize>> = insts
        .iter()
        .zip(&cand)
        .map(|(&i, c)| {
            c.iter()
                .copied()
                .filter(|&j| {
                    expect.calls[i]
                        .alternatives
                        .iter()
                        .filter(|a| &a.address == occ[j].0)
                        .any(|a| call_matches(a, &occ[j].1, catalog, dbs))
                })
                .collect()
        })
        .collect();
    let non_skill: Vec<usize> = (0..insts.len())
        .filter(|&k| !expect.calls[insts[k]].is_skill())
        .collect();
    let matching = max_matching(&non_skill, &cand, occ.len());
    let skill_insts_met = (0..insts.len())
        .filter(|&k| expect.calls[insts[k]].is_skill() && skill_met(&expect.calls[insts[k]]))
        .count();
    let matched = matching.iter().flatten().count() + skill_insts_met;

    // Addresses: hits, neutral, misses.
    let mut hits: BTreeSet<&Address> = matching.iter().flatten().map(|&j| occ[j].0).collect();
    for s in expect.calls.iter().filter(|s| s.is_skill()) {
        for c in &s.alternatives {
            if let Address::Skill(n) = &c.address {
                if facts.acting_skills.contains(n) && facts.predicted.contains(&c.address) {
                    hits.insert(&c.address);
                }
            }
        }
    }
    let allowed = |a: &Address| {
        expect.allow.iter().any(|al| {
            &al.address == a
                && (al.args.is_empty()
                    || occ.iter().filter(|(x, _)| *x == a).any(|(_, args)| {
                        let schema = catalog.schema_of(a).unwrap_or(Value::Null);
                        bfcl_args_ok(&schema, &al.args, args)
                    }))
        })
    };
    let neutral = |a: &Address| {
        !facts.late.contains(a) && (allowed(a) || expect.calls.iter().any(|s| s.admits(a)))
    };
    let misses: Vec<&Address> = facts
        .predicted
        .iter()
        .filter(|a| !hits.contains(a) && !neutral(a))
        .collect();
    let (h, m) = (hits.len(), misses.len());
    let precision = if h + m == 0 {
        1.0
    } else {
        h as f64 / (h + m) as f64
    };
    let recall = if insts.is_empty() {
        1.0
    } else {
        matched as f64 / insts.len() as f64
    };
    let f1 = f1(precision, recall, matched, h + m == 0 && insts.is_empty());

    // `exhaustive`: no executed call beyond the instances, allowed ones aside.
    let counted_ok =
        !expect.exhaustive || occ.iter().filter(|(a, _)| !allowed(a)).count() <= non_skill.len();
    // A query that expects no call is met only by a model that tried none.
    let exact = misses.is_empty()
        && !(insts.is_empty() && facts.tried)
        && counted_ok
        && skill_insts_met == insts.len() - non_skill.len()
        && ordered_assignment(expect, &insts, &cand, facts);
    let first_call_correct = match facts.predicted.first() {
        None => insts.is_empty(),
        Some(a) => hits.contains(a) || neutral(a),
    };
    let args_ok = (!non_skill.is_empty()).then(|| {
        max_matching(&non_skill, &args_cand, occ.len())
            .iter()
            .flatten()
            .count()
            == non_skill.len()
    });
    Score {
        exact,
        precision,
        recall,
        f1,
        first_call_correct,
        abstain_ok: insts
            .is_empty()
            .then_some(misses.is_empty() && !facts.tried),
        forbidden_hit: facts.predicted.iter().any(|a| expect.forbid.contains(a)),
        args_ok,
        schema_valid: schema_valid(facts),
        predicted: facts.predicted.clone(),
        state_ok: None,
        results_ok: None,
    }
}

/// A maximum matching of the instances in `who` to distinct calls (Kuhn's augmenting
/// paths; instances tried in listed order, calls in call order, so the result is
/// deterministic). Returns, per entry of `who`, its call.
fn max_matching(who: &[usize], cand: &[Vec<usize>], calls: usize) -> Vec<Option<usize>> {
    fn augment(
        k: usize,
        who: &[usize],
        cand: &[Vec<usize>],
        owner: &mut [Option<usize>],
        seen: &mut [bool],
    ) -> bool {
        for &j in &cand[who[k]] {
            if seen[j] {
                continue;
            }
            seen[j] = true;
            if owner[j].is_none_or(|o| augment(o, who, cand, owner, seen)) {
                owner[j] = Some(k);
                return true;
            }
        }
        false
    }
    let mut owner: Vec<Option<usize>> = vec![None; calls];
    for k in 0..who.len() {
        let mut seen = vec![false; calls];
        augment(k, who, cand, &mut owner, &mut seen);
    }
    let mut out = vec![None; who.len()];
    for (j, o) in owner.iter().enumerate() {
        if let Some(k) = o {
            out[*k] = Some(j);
        }
    }
    out
}

/// Whether every non-skill instance can take a distinct call so that the order rules
/// hold: with `order: sequence`, instances in listed order take calls in call order;
/// with `before: [a, b]`, every call of step `a` comes before every call of step `b`
/// (a skill step's "call" is the `read_skill` that loaded it, or the start when it was
/// in context from the first request).
fn ordered_assignment(
    expect: &Expect,
    insts: &[usize],
    cand: &[Vec<usize>],
    facts: &Facts,
) -> bool {
    let sequence = expect.order == Order::Sequence;
    let pairs: Vec<(usize, usize)> = expect
        .before
        .iter()
        .filter_map(|(a, b)| {
            let find = |id: &str| {
                expect
                    .calls
                    .iter()
                    .position(|s| s.id.as_deref() == Some(id))
            };
            Some((find(a)?, find(b)?))
        })
        .collect();
    // Where each skill instance sits: at the first executed call it was in context
    // for (0 when it was there from the start). Skills sit at even positions, calls at
    // odd ones, so a skill read before call `j` compares as before it.
    let skill_pos: Vec<Option<usize>> = insts
        .iter()
        .map(|&i| {
            let step = &expect.calls[i];
            step.is_skill().then(|| {
                2 * facts
                    .executed
                    .iter()
                    .position(|c| {
                        step.alternatives.iter().any(|a| match &a.address {
                            Address::Skill(n) => c.skills_in_context.contains(n),
                            _ => false,
                        })
                    })
                    .unwrap_or(0)
            })
        })
        .collect();
    let mut search = Search {
        insts,
        cand,
        skill_pos,
        sequence,
        pairs,
        pos: vec![None; insts.len()],
        used: vec![false; facts.executed.len()],
        budget: SEARCH_BUDGET,
    };
    search.go(0)
}

/// The backtracking search behind [`ordered_assignment`].
struct Search<'a> {
    /// Step index of each instance.
    insts: &'a [usize],
    /// Candidate calls of each instance.
    cand: &'a [Vec<usize>],
    /// The fixed position of each skill instance (`None` for calls).
    skill_pos: Vec<Option<usize>>,
    sequence: bool,
    /// `before` pairs as step indices.
    pairs: Vec<(usize, usize)>,
    pos: Vec<Option<usize>>,
    used: Vec<bool>,
    budget: usize,
}

impl Search<'_> {
    /// Assigns instances `k..` and checks the `before` pairs once all are placed.
    fn go(&mut self, k: usize) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        if k == self.insts.len() {
            return self.pairs.iter().all(|&(a, b)| {
                let of = |s: usize| -> Vec<usize> {
                    (0..self.insts.len())
                        .filter(|&i| self.insts[i] == s)
                        .filter_map(|i| self.pos[i])
                        .collect()
                };
                let (pa, pb) = (of(a), of(b));
                pa.iter().all(|x| pb.iter().all(|y| x < y))
            });
        }
        if let Some(p) = self.skill_pos[k] {
            self.pos[k] = Some(p);
            return self.go(k + 1);
        }
        // With `order: sequence`, each call comes after the calls placed before it.
        let last = if self.sequence {
            (0..k)
                .filter(|&i| self.skill_pos[i].is_none())
                .filter_map(|i| self.pos[i])
                .max()
        } else {
            None
        };
        for idx in 0..self.cand[k].len() {
            let j = self.cand[k][idx];
            let p = 2 * j + 1;
            if self.used[j] || last.is_some_and(|l| p <= l) {
                continue;
            }
            self.used[j] = true;
            self.pos[k] = Some(p);
            if self.go(k + 1) {
                return true;
            }
            self.used[j] = false;
            self.pos[k] = None;
        }
        false
    }
}
