//! Fixture answers: what an executed call returns when a scenario's catalog says it
//! (`responses` entries matched by `when`, a tool's own `response`), else a small
//! default; and where an answer came from, for `validate --fixtures`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::catalog::{Address, Catalog, Target};

/// The fixture answer of an executed call: the first `responses` entry for the
/// address whose `when` the arguments match, else one without `when`, else the tool's
/// own `response`, else a small default.
pub fn fixture_response(cat: &Catalog, address: &Address, args: &Value) -> Value {
    if let Some(r) = fixture_entry(cat, address, args) {
        return r.clone();
    }
    own_response(cat, address).unwrap_or_else(|| json!({"status": "ok"}))
}

/// Whether calls to `address` have any fixture answer besides the default.
pub fn has_fixture(cat: &Catalog, address: &Address) -> bool {
    cat.responses.iter().any(|r| &r.address == address) || own_response(cat, address).is_some()
}

/// Where the answer to a call comes from ([`fixture_response`]'s choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerSource {
    /// A `responses` entry whose `when` the arguments match.
    When,
    /// A `responses` entry without `when`: the address's default in this catalog.
    /// `any_args` when the fixture says the answer is right whatever the arguments.
    CatalogDefault { any_args: bool },
    /// The tool's own `response`.
    ToolDefault,
    /// No fixture at all: the small default (`{"status":"ok"}`).
    Nothing,
}

/// Where [`fixture_response`] takes its answer to a call of `address` with `args`.
pub fn answer_source(cat: &Catalog, address: &Address, args: &Value) -> AnswerSource {
    match fixture_match(cat, address, args) {
        Some(r) if !r.when.is_empty() => AnswerSource::When,
        Some(r) => AnswerSource::CatalogDefault {
            any_args: r.any_args,
        },
        None if own_response(cat, address).is_some() => AnswerSource::ToolDefault,
        None => AnswerSource::Nothing,
    }
}

fn fixture_entry<'c>(cat: &'c Catalog, address: &Address, args: &Value) -> Option<&'c Value> {
    fixture_match(cat, address, args).map(|r| &r.response)
}

/// The first `responses` entry for `address` whose `when` matches `args`, else the
/// first one without `when`.
fn fixture_match<'c>(
    cat: &'c Catalog,
    address: &Address,
    args: &Value,
) -> Option<&'c crate::catalog::FixtureResponse> {
    let schema = cat.schema_of(address).unwrap_or(Value::Null);
    let mut fallback = None;
    for r in cat.responses.iter().filter(|r| &r.address == address) {
        if r.when.is_empty() {
            fallback.get_or_insert(r);
        } else if crate::args::pinned_values_ok(&schema, &r.when, &BTreeMap::new(), args) {
            return Some(r);
        }
    }
    fallback
}

fn own_response(cat: &Catalog, address: &Address) -> Option<Value> {
    match cat.lookup(address) {
        Some(Target::Action(_, a)) => a.response.clone(),
        Some(Target::McpTool(_, t)) => t.response.clone(),
        Some(Target::Builtin(b)) => b.response.clone(),
        _ => None,
    }
}
