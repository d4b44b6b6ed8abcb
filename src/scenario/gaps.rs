//! Fixture gaps (`validate --fixtures`): calls an expectation requires or allows that
//! the scenario's fixtures would answer with something else than an answer about the
//! entity the call names.
//!
//! Two kinds. An address with no fixture at all answers every call with the small
//! default (`{"status":"ok"}`): [`Gap::NoFixture`]. And a call whose pinned arguments
//! match no fixture `when` falls through to a default answer — a `responses` entry
//! without `when`, or the tool's own `response` — which is an answer about whatever
//! entity that default describes: an agent that looks before it acts is sent the wrong
//! way ([`Gap::Default`]). A default the fixture marks `any_args: true` (a clock, a
//! calculator's error) is right for every call and is never a gap.
//!
//! The arguments probed are those a careful agent would pass: each accepted value of
//! each pinned parameter in turn (the other pinned parameters at their first accepted
//! value; `""`, "may be omitted", leaves the parameter out), and for a required
//! parameter the call does not pin, the values the same expectation pins for a
//! parameter of that name on another call (the id a listing returns and the next call
//! acts on). A probe that passes no value at all is not one: an unfiltered call is
//! what a default answers.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::types::{Query, Scenario};
use crate::catalog::Address;
use crate::environment::{answer_source, has_fixture, AnswerSource};

/// One call a query's expectation requires or allows that its fixtures answer badly.
#[derive(Debug, Clone, PartialEq)]
pub enum Gap {
    /// No fixture answers `address` at all.
    NoFixture { query: String, address: Address },
    /// A call with these arguments matches no `when` and gets a default answer.
    Default {
        query: String,
        /// `expected` or `allowed`.
        role: &'static str,
        address: Address,
        args: Value,
        /// Which default answers it.
        source: &'static str,
    },
}

impl std::fmt::Display for Gap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gap::NoFixture { query, address } => write!(f, "no fixture: {query}: {address}"),
            Gap::Default {
                query,
                role,
                address,
                args,
                source,
            } => write!(
                f,
                "fixture gap: {query}: {role} call {address} {args} matches no `when` and is answered by {source}"
            ),
        }
    }
}

/// Every gap of `sc`, query by query, in file order.
pub fn fixture_gaps(sc: &Scenario) -> Vec<Gap> {
    let mut out = Vec::new();
    for q in &sc.queries {
        out.extend(query_gaps(sc, q));
    }
    out
}

/// A call of an expectation: its role (`expected`, `allowed`), address and pinned
/// arguments.
type Pinned<'q> = (&'static str, &'q Address, &'q BTreeMap<String, Vec<Value>>);

fn query_gaps(sc: &Scenario, q: &Query) -> Vec<Gap> {
    let mut out = Vec::new();
    for (t, e) in q.expects().enumerate() {
        let name = if q.is_conversation() {
            format!("{} turn {}", q.id, t + 1)
        } else {
            q.id.clone()
        };
        out.extend(expect_gaps(sc, &name, e));
    }
    out
}

fn expect_gaps(sc: &Scenario, name: &str, e: &crate::scenario::Expect) -> Vec<Gap> {
    let cat = &sc.catalog;
    let calls: Vec<Pinned> = e
        .all_alternatives()
        .map(|c| ("expected", &c.address, &c.args))
        .chain(e.allow.iter().map(|a| ("allowed", &a.address, &a.args)))
        .filter(|(_, a, _)| !matches!(a, Address::Skill(_) | Address::Database(_)))
        .collect();
    // Values pinned anywhere in the expectation, by parameter name.
    let mut pinned: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for (_, _, args) in &calls {
        for (k, vals) in args.iter() {
            let e = pinned.entry(k.as_str()).or_default();
            for v in vals.iter().filter(|v| !omitted(v)) {
                if !e.contains(&v) {
                    e.push(v);
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut listed: Vec<(&Address, Value)> = Vec::new();
    let mut no_fixture: Vec<&Address> = Vec::new();
    for (role, address, args) in calls {
        if !has_fixture(cat, address) {
            if !no_fixture.contains(&address) {
                no_fixture.push(address);
                out.push(Gap::NoFixture {
                    query: name.to_string(),
                    address: address.clone(),
                });
            }
            continue;
        }
        let schema = cat.schema_of(address).unwrap_or(Value::Null);
        for probe in probes(&schema, args, &pinned) {
            let source = match answer_source(cat, address, &probe) {
                AnswerSource::When | AnswerSource::CatalogDefault { any_args: true } => continue,
                AnswerSource::CatalogDefault { any_args: false } => {
                    "the catalog's default for it (a `responses` entry without `when`)"
                }
                AnswerSource::ToolDefault => "the tool's own `response`",
                AnswerSource::Nothing => "the small default",
            };
            if listed.iter().any(|(a, p)| *a == address && *p == probe) {
                continue;
            }
            listed.push((address, probe.clone()));
            out.push(Gap::Default {
                query: name.to_string(),
                role,
                address: address.clone(),
                args: probe,
                source,
            });
        }
    }
    out
}

/// `""` in an accepted list: the parameter may be left out.
fn omitted(v: &Value) -> bool {
    v.as_str() == Some("")
}

/// The argument objects a careful agent would send for a call pinned as `args`.
fn probes(
    schema: &Value,
    args: &BTreeMap<String, Vec<Value>>,
    pinned: &BTreeMap<&str, Vec<&Value>>,
) -> Vec<Value> {
    // Each parameter's candidate values; a parameter with none is left out.
    let mut params: Vec<(String, Vec<Value>)> = args
        .iter()
        .map(|(k, vals)| {
            let given: Vec<Value> = vals.iter().filter(|v| !omitted(v)).cloned().collect();
            (k.clone(), given)
        })
        .collect();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for k in required {
        if args.contains_key(k) {
            continue;
        }
        if let Some(vals) = pinned.get(k) {
            params.push((k.to_string(), vals.iter().map(|v| (*v).clone()).collect()));
        }
    }
    // Parameter `at` takes `value`, the others their first candidate.
    let probe = |at: usize, value: &Value| -> Value {
        let m: Map<String, Value> = params
            .iter()
            .enumerate()
            .filter_map(|(i, (k, vals))| {
                let v = if i == at { Some(value) } else { vals.first() };
                v.map(|v| (k.clone(), v.clone()))
            })
            .collect();
        Value::Object(m)
    };
    let mut out: Vec<Value> = Vec::new();
    for (i, (_, vals)) in params.iter().enumerate() {
        for v in vals {
            let p = probe(i, v);
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}
