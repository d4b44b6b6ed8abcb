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

pub use crate::args::{standardize, value_eq, value_eq_as};
use crate::catalog::{Address, Catalog};
use crate::environment::{same_rows, Databases, QueryResult, JUDGE_ROW_LIMIT};
use crate::scenario::expect::{Compare, Expect, ExpectedCall, Order, Step};
use crate::scenario::Query;
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
    /// The tool called exists but was not loaded by the selection step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unloaded: bool,
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
    /// Calls of tools not loaded that ran anyway (the default, as in FIM One): a
    /// protocol event, not an error.
    #[serde(default)]
    pub unloaded_calls: usize,
    pub repeat_call: usize,
    pub overfetch: usize,
    pub turns: usize,
    pub hit_max_turns: bool,
    /// Answers with neither text nor a call.
    #[serde(default)]
    pub empty_answers: usize,
    /// Answers that wrote a tool call as text instead of making it.
    #[serde(default)]
    pub text_calls: usize,
    /// Answers the provider marked as a refusal.
    #[serde(default)]
    pub refusals: usize,
    /// Answers cut by the output token limit.
    #[serde(default)]
    pub truncated: usize,
}

impl Protocol {
    /// Protocol errors: unknown targets, bad subcommands, schema violations, calls to
    /// tools not loaded, and the model's own misbehaviour (empty answers, calls
    /// written as text, refusals, answers cut by the token limit).
    pub fn errors(&self) -> usize {
        self.unknown_target
            + self.bad_subcommand
            + self.schema_violation
            + self.not_loaded
            + self.empty_answers
            + self.text_calls
            + self.refusals
            + self.truncated
    }
}

/// Whether an answer's text is a tool call written out instead of made: the text (a
/// fenced block's content, or after a `<tool_call>` tag) parses as a JSON object, or
/// an array of them, whose `name` (or `function.name`) is one of the offered tools.
pub fn is_text_call(text: &str, offered: &[&str]) -> bool {
    let mut t = text.trim();
    if let Some(rest) = t.split_once("<tool_call>").map(|(_, r)| r) {
        t = rest.split("</tool_call>").next().unwrap_or(rest).trim();
    }
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        t = rest.split("```").next().unwrap_or(rest).trim();
    }
    let names = |v: &Value| -> bool {
        let name = v
            .get("name")
            .or_else(|| v.get("function").and_then(|f| f.get("name")))
            .and_then(Value::as_str);
        name.is_some_and(|n| offered.contains(&n))
    };
    match serde_json::from_str::<Value>(t) {
        Ok(v @ Value::Object(_)) => names(&v),
        Ok(Value::Array(a)) => !a.is_empty() && a.iter().all(names),
        _ => false,
    }
}

/// What every scoring rule reads of an episode.
struct Facts<'a> {
    executed: Vec<&'a CallRecord>,
    /// Skills whose text was in context when the model first acted.
    acting_skills: Vec<String>,
    /// Selection events in order, each address once: `read_skill` fetches, executed
    /// calls, and expected skills that were in context when the model acted.
    predicted: Vec<Address>,
    /// Expected skills the model read only after it had acted: predictions, not hits.
    late: BTreeSet<Address>,
}

impl<'a> Facts<'a> {
    fn new(expect: &Expect, calls: &'a [CallRecord], final_skills: &[String]) -> Facts<'a> {
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
            } else if c.effect == CallEffect::Fetched && c.tool == "read_skill" {
                for a in &c.fetched {
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
        }
    }
}

/// Scores one episode. A classic expectation (no v2 keys) is scored as sets of
/// addresses, exactly as before steps existed; otherwise step by step
/// ([`stepwise`]).
pub fn score(
    query: &Query,
    calls: &[CallRecord],
    final_skills: &[String],
    catalog: &Catalog,
    dbs: &Databases,
) -> Score {
    let expect = &query.expect;
    let facts = Facts::new(expect, calls, final_skills);
    if expect.is_classic() {
        classic(expect, &facts, catalog, dbs)
    } else {
        stepwise(expect, &facts, catalog, dbs)
    }
}

/// `F1` from precision and recall; 0 when nothing expected was hit, unless nothing
/// was expected and nothing predicted.
fn f1(precision: f64, recall: f64, hits: usize, nothing_either_way: bool) -> f64 {
    if precision + recall == 0.0 || hits == 0 && !nothing_either_way {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    }
}

/// Classic scoring: expected and predicted addresses as sets.
fn classic(expect: &Expect, facts: &Facts, catalog: &Catalog, dbs: &Databases) -> Score {
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
    let mut exact = pred == expected && late.is_empty();
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
        abstain_ok: expected.is_empty().then_some(pred.is_empty()),
        forbidden_hit: predicted.iter().any(|a| expect.forbid.contains(a)),
        args_ok,
        schema_valid: schema_valid(facts),
        predicted: predicted.clone(),
    }
}

fn schema_valid(facts: &Facts) -> Option<bool> {
    (!facts.executed.is_empty()).then(|| facts.executed.iter().all(|c| c.schema_errors.is_empty()))
}

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
///   (instances in listed order) and every `before` pair, with no miss;
/// - first call: the first predicted address is a hit or neutral;
/// - args: one assignment covers every non-skill instance with arguments its
///   alternative accepts (BFCL checks; SQL by execution).
fn stepwise(expect: &Expect, facts: &Facts, catalog: &Catalog, dbs: &Databases) -> Score {
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

    let exact = misses.is_empty()
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
        abstain_ok: insts.is_empty().then_some(misses.is_empty()),
        forbidden_hit: facts.predicted.iter().any(|a| expect.forbid.contains(a)),
        args_ok,
        schema_valid: schema_valid(facts),
        predicted: facts.predicted.clone(),
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
/// in context from the first turn).
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
        let got = if e.extra_columns {
            match project_onto(&want, &got) {
                Some(g) => g,
                None => return false,
            }
        } else {
            got
        };
        return same_rows(&want, &got, e.ordered);
    }
    let schema = catalog.schema_of(&e.address).unwrap_or(Value::Null);
    bfcl_args_ok_with(&schema, &e.args, &e.compare, args)
}

/// `got` cut down to columns that stand for `want`'s, when the model selected more
/// columns than the reference: each reference column is matched to a distinct column
/// of `got` holding the same values (as a multiset; by name first when names agree).
/// `None` when no such choice of columns exists.
pub fn project_onto(want: &QueryResult, got: &QueryResult) -> Option<QueryResult> {
    let wn = want.columns.len();
    let gn = got.columns.len();
    if gn < wn || got.rows.len() != want.rows.len() {
        return None;
    }
    let column = |r: &QueryResult, c: usize| -> Vec<String> {
        let mut v: Vec<String> = r.rows.iter().map(|row| cell_key(&row[c])).collect();
        v.sort();
        v
    };
    let wcols: Vec<Vec<String>> = (0..wn).map(|c| column(want, c)).collect();
    let gcols: Vec<Vec<String>> = (0..gn).map(|c| column(got, c)).collect();
    // Candidates per reference column: same values; a same-named column first.
    let cand: Vec<Vec<usize>> = (0..wn)
        .map(|w| {
            let mut c: Vec<usize> = (0..gn).filter(|&g| gcols[g] == wcols[w]).collect();
            c.sort_by_key(|&g| !got.columns[g].eq_ignore_ascii_case(&want.columns[w]));
            c
        })
        .collect();
    fn pick(
        w: usize,
        cand: &[Vec<usize>],
        used: &mut Vec<bool>,
        out: &mut Vec<usize>,
        want: &QueryResult,
        got: &QueryResult,
    ) -> bool {
        if w == cand.len() {
            let projected = project(got, out);
            return same_rows(want, &projected, false);
        }
        for &g in &cand[w] {
            if used[g] {
                continue;
            }
            used[g] = true;
            out.push(g);
            if pick(w + 1, cand, used, out, want, got) {
                return true;
            }
            out.pop();
            used[g] = false;
        }
        false
    }
    fn project(got: &QueryResult, cols: &[usize]) -> QueryResult {
        QueryResult {
            columns: cols.iter().map(|&c| got.columns[c].clone()).collect(),
            rows: got
                .rows
                .iter()
                .map(|r| cols.iter().map(|&c| r[c].clone()).collect())
                .collect(),
            truncated: got.truncated,
        }
    }
    let mut out = Vec::new();
    let mut used = vec![false; gn];
    if pick(0, &cand, &mut used, &mut out, want, got) {
        Some(project(got, &out))
    } else {
        None
    }
}

fn cell_key(v: &Value) -> String {
    crate::environment::normalize_cell(v)
}

/// BFCL's AST checks on one call's arguments, with the default comparison per
/// parameter ([`crate::args::default_compare`]).
pub fn bfcl_args_ok(
    schema: &Value,
    accepted: &std::collections::BTreeMap<String, Vec<Value>>,
    args: &Value,
) -> bool {
    bfcl_args_ok_with(schema, accepted, &Default::default(), args)
}

/// BFCL's AST checks on one call's arguments: every required parameter present, no
/// unknown parameter, each value of its declared type, and each pinned parameter's
/// value in its accepted list (strings compared per [`crate::args::default_compare`] unless
/// `compare` says otherwise; `""` in a list means the parameter may be left out).
pub fn bfcl_args_ok_with(
    schema: &Value,
    accepted: &std::collections::BTreeMap<String, Vec<Value>>,
    compare: &std::collections::BTreeMap<String, Compare>,
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
    crate::args::pinned_values_ok(schema, accepted, compare, args)
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
        if c.unloaded && c.error != Some(ProtocolError::NotLoaded) {
            p.unloaded_calls += 1;
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
            unloaded: false,
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

    /// The tiny scenario's catalog with these queries (YAML list items).
    fn with_queries(queries: &str) -> (tempfile::TempDir, crate::scenario::Scenario) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("snapshot")).unwrap();
        std::fs::create_dir_all(dir.path().join("invalid-support")).unwrap();
        // Three rows, so that order can matter.
        std::fs::write(
            dir.path().join("invalid-support/people.sql"),
            "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);\n\
             INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Alan');\n",
        )
        .unwrap();
        let tiny = std::fs::read_to_string("fixtures/snapshot/tiny.yaml").unwrap();
        let head = &tiny[..tiny.find("queries:").unwrap()];
        let path = dir.path().join("snapshot/t.yaml");
        std::fs::write(&path, format!("{head}queries:\n{queries}")).unwrap();
        let sc = crate::scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        (dir, sc)
    }

    fn exec(turn: usize, address: &Address, args: Value) -> CallRecord {
        CallRecord {
            turn,
            tool: "t".into(),
            arguments: args.to_string(),
            effect: CallEffect::Executed,
            address: Some(address.clone()),
            fetched: Vec::new(),
            error: None,
            schema_errors: Vec::new(),
            blind: false,
            args: Some(args),
            skills_in_context: Vec::new(),
            unloaded: false,
        }
    }

    fn score_of(sc: &crate::scenario::Scenario, q: usize, calls: &[CallRecord]) -> Score {
        let dbs = Databases::build(&sc.catalog).unwrap();
        score(&sc.queries[q], calls, &[], &sc.catalog, &dbs)
    }

    fn order() -> Address {
        Address::Connector("erp".into(), "get_order".into())
    }
    fn calc() -> Address {
        Address::Builtin("calculator".into())
    }
    fn issue() -> Address {
        Address::Mcp("github".into(), "create_issue".into())
    }

    #[test]
    fn allowed_calls_never_make_a_result_inexact() {
        let (_d, sc) = with_queries(
            r#"
  - id: q
    text: Open the crash issue.
    expect:
      calls: [{address: mcp:github/create_issue, args: {repo: [acme/app]}}]
      allow: [connector:erp/get_order]
"#,
        );
        let a = json!({"repo": "acme/app", "title": "x"});
        let s = score_of(
            &sc,
            0,
            &[
                exec(1, &order(), json!({"order_id": "1"})),
                exec(2, &issue(), a.clone()),
            ],
        );
        assert!(
            s.exact && s.first_call_correct && s.args_ok == Some(true),
            "{s:?}"
        );
        assert_eq!((s.precision, s.recall), (1.0, 1.0));
        // Only the allowed call: not exact, recall 0, but no miss either.
        let s = score_of(&sc, 0, &[exec(1, &order(), json!({"order_id": "1"}))]);
        assert!(!s.exact);
        assert_eq!((s.precision, s.recall, s.f1), (1.0, 0.0, 0.0));
        // Something neither expected nor allowed is a miss.
        let s = score_of(
            &sc,
            0,
            &[
                exec(1, &issue(), a),
                exec(2, &calc(), json!({"expression": "1"})),
            ],
        );
        assert!(!s.exact);
        assert_eq!(s.precision, 0.5);
    }

    #[test]
    fn any_of_accepts_each_alternative_with_its_own_arguments() {
        let (_d, sc) = with_queries(
            r#"
  - id: q
    text: Work it out.
    expect:
      calls:
        - any_of:
            - {address: builtin:calculator, args: {expression: ["2+2"]}}
            - {address: mcp:github/create_issue, args: {title: ["four"]}}
"#,
        );
        let s = score_of(&sc, 0, &[exec(1, &calc(), json!({"expression": "2+2"}))]);
        assert!(s.exact && s.args_ok == Some(true));
        let s = score_of(
            &sc,
            0,
            &[exec(1, &issue(), json!({"repo": "a/b", "title": "four"}))],
        );
        assert!(s.exact && s.args_ok == Some(true));
        // The other alternative's arguments do not carry over.
        let s = score_of(
            &sc,
            0,
            &[exec(1, &issue(), json!({"repo": "a/b", "title": "2+2"}))],
        );
        assert!(s.exact && s.args_ok == Some(false));
    }

    #[test]
    fn repeated_steps_need_distinct_calls_and_before_orders_steps() {
        let (_d, sc) = with_queries(
            r#"
  - id: twice
    text: Look up two orders.
    expect:
      calls:
        - {id: a, address: connector:erp/get_order, args: {order_id: ["1"]}}
        - {id: b, address: connector:erp/get_order, args: {order_id: ["2"]}}
  - id: ordered
    text: Look up the order, then open an issue.
    expect:
      calls:
        - {id: look, address: connector:erp/get_order}
        - {id: open, address: mcp:github/create_issue}
      before: [[look, open]]
  - id: counted
    text: Poll twice.
    expect:
      calls: [{address: connector:erp/get_order, count: 2}]
"#,
        );
        let one = |id: &str| exec(1, &order(), json!({"order_id": id}));
        let s = score_of(&sc, 0, &[one("1")]);
        assert!(!s.exact);
        assert_eq!(s.recall, 0.5);
        assert_eq!(s.args_ok, Some(false));
        let s = score_of(&sc, 0, &[one("2"), one("1")]);
        assert!(s.exact && s.args_ok == Some(true));
        let o = one("1");
        let i = exec(2, &issue(), json!({"repo": "a/b", "title": "t"}));
        assert!(score_of(&sc, 1, &[o.clone(), i.clone()]).exact);
        assert!(
            !score_of(&sc, 1, &[i, o]).exact,
            "before: the lookup comes first"
        );
        assert!(!score_of(&sc, 2, &[one("1")]).exact);
        assert!(score_of(&sc, 2, &[one("1"), one("1")]).exact);
    }

    #[test]
    fn classic_expectations_score_as_before() {
        // Listed twice without v2 keys: addresses as a set, one call satisfies both.
        let (_d, sc) = with_queries(
            r#"
  - id: q
    text: Two orders.
    expect:
      calls:
        - {address: connector:erp/get_order, args: {order_id: ["1"]}}
        - {address: connector:erp/get_order, args: {order_id: ["1"]}}
"#,
        );
        assert!(sc.queries[0].expect.is_classic());
        let s = score_of(&sc, 0, &[exec(1, &order(), json!({"order_id": "1"}))]);
        assert!(s.exact && s.recall == 1.0);
    }

    #[test]
    fn sql_is_ordered_and_narrow_only_when_the_expectation_says_so() {
        let (_d, sc) = with_queries(
            r#"
  - id: plain
    text: Names.
    expect:
      calls: [{address: database:hr/query, sql: SELECT name FROM people ORDER BY name}]
  - id: ordered
    text: Names, sorted.
    expect:
      calls: [{address: database:hr/query, sql: SELECT name FROM people ORDER BY name, ordered: true}]
  - id: wide
    text: Names.
    expect:
      calls: [{address: database:hr/query, sql: SELECT name FROM people, extra_columns: true}]
"#,
        );
        let db = Address::Database("hr".into());
        let q = |sql: &str| exec(1, &db, json!({"sql": sql}));
        let desc = q("SELECT name FROM people ORDER BY name DESC");
        assert_eq!(
            score_of(&sc, 0, std::slice::from_ref(&desc)).args_ok,
            Some(true),
            "ORDER BY alone does not demand order"
        );
        assert_eq!(score_of(&sc, 1, &[desc]).args_ok, Some(false));
        let wide = q("SELECT id, name FROM people");
        assert_eq!(
            score_of(&sc, 0, std::slice::from_ref(&wide)).args_ok,
            Some(false)
        );
        assert_eq!(score_of(&sc, 2, &[wide]).args_ok, Some(true));
        assert_eq!(
            score_of(&sc, 2, &[q("SELECT id FROM people")]).args_ok,
            Some(false)
        );
    }

    #[test]
    fn calls_written_as_text_are_recognised() {
        let offered = ["erp__get_order", "calculator"];
        assert!(is_text_call(
            r#"{"name": "erp__get_order", "arguments": {}}"#,
            &offered
        ));
        assert!(is_text_call(
            "```json\n[{\"function\": {\"name\": \"calculator\"}}]\n```",
            &offered
        ));
        assert!(is_text_call(
            "<tool_call>{\"name\": \"calculator\", \"arguments\": {}}</tool_call>",
            &offered
        ));
        assert!(!is_text_call(r#"{"name": "something_else"}"#, &offered));
        assert!(!is_text_call("The order total is 84.50.", &offered));
    }
}
