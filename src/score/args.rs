//! Argument checks: BFCL's AST checks on a call's arguments (required present, no
//! unknown parameter, types, values in the accepted list), and whether an executed call
//! satisfies an expected one.

use std::collections::BTreeMap;

use serde_json::Value;

use super::sql::sql_matches;
use crate::args::{bfcl_check_call, pinned_values_ok, Compare};
use crate::catalog::{Address, Catalog};
use crate::environment::Databases;
use crate::scenario::expect::ExpectedCall;

/// Whether executed arguments satisfy an expected call: SQL by execution
/// ([`super::sql::sql_matches`]), a `compare: bfcl` call by BFCL's own checker rule for
/// rule ([`crate::args::bfcl_check_call`]), anything else by BFCL-style checks.
pub fn call_matches(e: &ExpectedCall, args: &Value, catalog: &Catalog, dbs: &Databases) -> bool {
    if let (Address::Database(db), Some(sql)) = (&e.address, &e.sql) {
        return sql_matches(db, sql, e, args, dbs);
    }
    let schema = catalog.schema_of(&e.address).unwrap_or(Value::Null);
    if e.bfcl {
        return bfcl_check_call(&schema, &e.args, args).is_ok();
    }
    bfcl_args_ok_with(&schema, &e.args, &e.compare, args)
}

/// BFCL's AST checks on one call's arguments, with the default comparison per
/// parameter ([`crate::args::default_compare`]).
pub fn bfcl_args_ok(schema: &Value, accepted: &BTreeMap<String, Vec<Value>>, args: &Value) -> bool {
    bfcl_args_ok_with(schema, accepted, &Default::default(), args)
}

/// BFCL's AST checks on one call's arguments: every required parameter present, no
/// unknown parameter, each value of its declared type, and each pinned parameter's
/// value in its accepted list (strings compared per [`crate::args::default_compare`] unless
/// `compare` says otherwise; `""` in a list means the parameter may be left out).
pub fn bfcl_args_ok_with(
    schema: &Value,
    accepted: &BTreeMap<String, Vec<Value>>,
    compare: &BTreeMap<String, Compare>,
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
    pinned_values_ok(schema, accepted, compare, args)
}

pub(super) fn type_ok(schema: &Value, v: &Value) -> bool {
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
