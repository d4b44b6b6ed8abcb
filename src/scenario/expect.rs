//! The expectation language (DESIGN §4, §8): what a query's calls should be.
//!
//! An [`Expect`] holds required [`Step`]s (each satisfied by any one of its
//! alternatives, optionally more than once), calls that are allowed but never
//! required, ordering (all-or-nothing `sequence`, or `before` pairs between step ids)
//! and forbidden addresses. An expectation that uses none of the keys added in format
//! v2 (`allow`, `any_of`, `id`, `count`, `before`, `exhaustive`) is *classic* and is
//! scored exactly as before they existed ([`Expect::is_classic`]).

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

pub use super::raw::Order;
pub use crate::args::Compare;
use crate::catalog::Address;

/// One call that satisfies a step.
#[derive(Debug, Clone, Serialize)]
pub struct ExpectedCall {
    pub address: Address,
    /// Parameter → accepted values (BFCL style). Parameters not named are not judged.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, Vec<Value>>,
    /// For `database:<db>/query`: reference SQL; the model's query is right when it
    /// returns the same rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// SQL rows are compared in order (only when the expectation says so).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ordered: bool,
    /// The model's SQL may select columns beyond the reference's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub extra_columns: bool,
    /// Per-parameter comparison, overriding the default for that parameter.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub compare: BTreeMap<String, Compare>,
    /// `compare: bfcl`: the whole call judged as BFCL's AST checker judges it
    /// ([`crate::args::bfcl_check_call`]): every parameter given must be named in
    /// `args`, and values are compared by BFCL's rules for their declared type.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bfcl: bool,
}

impl ExpectedCall {
    pub fn to(address: Address) -> ExpectedCall {
        ExpectedCall {
            address,
            args: BTreeMap::new(),
            sql: None,
            ordered: false,
            extra_columns: false,
            compare: BTreeMap::new(),
            bfcl: false,
        }
    }
}

/// A required step: any one of `alternatives` satisfies it, `count` times.
#[derive(Debug, Clone)]
pub struct Step {
    pub id: Option<String>,
    pub alternatives: Vec<ExpectedCall>,
    pub count: usize,
}

impl Step {
    pub fn one(call: ExpectedCall) -> Step {
        Step {
            id: None,
            alternatives: vec![call],
            count: 1,
        }
    }

    /// The alternative a reference run takes (the first).
    pub fn canonical(&self) -> &ExpectedCall {
        &self.alternatives[0]
    }

    /// Whether `address` satisfies this step (by address).
    pub fn admits(&self, address: &Address) -> bool {
        self.alternatives.iter().any(|c| &c.address == address)
    }

    pub fn is_skill(&self) -> bool {
        self.alternatives
            .iter()
            .all(|c| matches!(c.address, Address::Skill(_)))
    }
}

/// A step with one alternative, no id and count 1 is written as that call, as before
/// steps existed.
impl Serialize for Step {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.id.is_none() && self.count == 1 && self.alternatives.len() == 1 {
            return self.alternatives[0].serialize(s);
        }
        let mut m = s.serialize_map(None)?;
        if let Some(id) = &self.id {
            m.serialize_entry("id", id)?;
        }
        if self.alternatives.len() == 1 {
            m.serialize_entry("call", &self.alternatives[0])?;
        } else {
            m.serialize_entry("any_of", &self.alternatives)?;
        }
        if self.count != 1 {
            m.serialize_entry("count", &self.count)?;
        }
        m.end()
    }
}

/// A call that is permitted but never required: any call to `address` (whose
/// arguments match `args`, when given).
#[derive(Debug, Clone, Serialize)]
pub struct Allowed {
    pub address: Address,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, Vec<Value>>,
}

/// What a query should produce.
#[derive(Debug, Clone, Serialize)]
pub struct Expect {
    pub calls: Vec<Step>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<Allowed>,
    pub order: Order,
    /// Pairs of step ids: every call of the first before any call of the second.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<(String, String)>,
    pub forbid: Vec<Address>,
    /// The listed calls are all the calls: an executed call beyond the steps'
    /// instances (and not explained by `allow`) makes the result inexact, as BFCL
    /// counts a wrong number of calls.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub exhaustive: bool,
    /// Calls a second fresh instance of the live servers runs in lockstep: when
    /// given (even empty), the turn is judged by state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<Vec<ReferenceCall>>,
}

/// A call of a turn's reference: an address and its arguments, as sent.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ReferenceCall {
    pub address: Address,
    pub args: serde_json::Map<String, serde_json::Value>,
}

/// How a conversation's turns judged by state are judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Judge {
    /// discbench's rule: every turn judged; a turn whose reference is empty must leave
    /// the state as it was.
    #[default]
    General,
    /// BFCL's multi-turn checker's: a turn whose reference is empty is not judged,
    /// judging stops at the first failing turn, and a turn that reaches the request
    /// limit ends the conversation (`force_terminated`).
    Bfcl,
}

impl Expect {
    /// What the oracle follows: the listed calls, or for a turn judged by state that
    /// lists none, the reference's calls in order, each with its arguments as sent.
    pub fn oracle_view(&self) -> Expect {
        match &self.reference {
            Some(reference) if self.calls.is_empty() => Expect {
                calls: reference
                    .iter()
                    .map(|r| {
                        Step::one(ExpectedCall {
                            args: r
                                .args
                                .iter()
                                .map(|(k, v)| (k.clone(), vec![v.clone()]))
                                .collect(),
                            // Sent as they are: an empty string is a value here.
                            compare: r.args.keys().map(|k| (k.clone(), Compare::Exact)).collect(),
                            ..ExpectedCall::to(r.address.clone())
                        })
                    })
                    .collect(),
                order: Order::Sequence,
                ..self.clone()
            },
            _ => self.clone(),
        }
    }

    /// For a turn judged by state that lists no calls: the reference's tools as the
    /// steps the call metrics (precision, recall, F1) are measured on.
    pub fn reference_steps(&self) -> Option<Expect> {
        let reference = self.reference.as_ref()?;
        if !self.calls.is_empty() {
            return None;
        }
        let mut calls: Vec<Step> = Vec::new();
        for r in reference {
            if !calls.iter().any(|s| s.admits(&r.address)) {
                calls.push(Step::one(ExpectedCall::to(r.address.clone())));
            }
        }
        Some(Expect {
            calls,
            reference: None,
            ..self.clone()
        })
    }

    /// Whether none of the v2 keys is used: then scoring is the classic one
    /// (addresses as a set, duplicates collapse, no alternatives).
    pub fn is_classic(&self) -> bool {
        self.allow.is_empty()
            && self.before.is_empty()
            && !self.exhaustive
            && self
                .calls
                .iter()
                .all(|s| s.id.is_none() && s.count == 1 && s.alternatives.len() == 1)
    }

    /// The calls a reference run makes, in order: each step's first alternative,
    /// `count` times.
    pub fn canonical_calls(&self) -> Vec<&ExpectedCall> {
        self.calls
            .iter()
            .flat_map(|s| std::iter::repeat_n(s.canonical(), s.count))
            .collect()
    }

    /// Every call any step may be satisfied by.
    pub fn all_alternatives(&self) -> impl Iterator<Item = &ExpectedCall> {
        self.calls.iter().flat_map(|s| s.alternatives.iter())
    }

    /// Whether no call is required.
    pub fn expects_nothing(&self) -> bool {
        self.calls.is_empty()
    }

    /// Serializes as a map (for outcome records).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("expectations serialize")
    }
}
