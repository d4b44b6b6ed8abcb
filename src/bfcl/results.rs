//! Model outputs in BFCL's result format, judged by discbench's scoring on the
//! converted scenarios ([`judge`]).
//!
//! A result file has one JSON object per line, `{"id": …, "result": …}`, as BFCL's
//! generation writes it for function-calling models: `result` is a list of
//! `{function_name: "arguments as a JSON string"}` objects, or text when the model
//! answered without a call. It is decoded as BFCL's function-calling handlers decode it
//! (`decode_ast`): anything that does not decode, or decodes to something other than a
//! list of `{name: {arguments}}`, is no call at all. Each call becomes an executed call
//! on the address of the entry's function of that name (`mcp:<id>/<function>`; a name
//! the entry does not offer keeps its own), and [`crate::score::score`] judges the query
//! exactly as it judges a run: the output is right when the outcome is `exact` with
//! `args_ok`. Function names are compared as BFCL's checker compares them for the
//! model: with `underscore_to_dot` (OpenAI, Mistral and Google function-calling models
//! in BFCL's model table) a dotted name is expected with `_` in place of each `.`.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::args::{bfcl_check_call, schema_errors};
use crate::catalog::{Address, Resource};
use crate::environment::Databases;
use crate::error::InputError;
use crate::scenario::{Query, Scenario};
use crate::score::{self, CallEffect, CallRecord};

/// One output judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub id: String,
    pub scenario: String,
    /// The line of the result file (1-based).
    pub line: usize,
    pub valid: bool,
    /// Why it is wrong (first reason found).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The line's `variant`, when it has one (outputs made for an agreement check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// One line of a result file: the entry id and the raw result.
#[derive(Debug, Clone)]
pub struct ResultLine {
    /// The line of the result file (1-based).
    pub line: usize,
    pub id: String,
    pub result: Value,
    /// Its `variant` field, if any.
    pub variant: Option<String>,
}

/// Reads a BFCL result file (JSON lines with `id` and `result`).
pub fn read_results(path: &Path) -> Result<Vec<ResultLine>, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError::new(path, "", format!("cannot read: {e}")))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |m: String| InputError::new(path, "", m).at_line(Some(i + 1));
        let v: Value = serde_json::from_str(line).map_err(|e| at(format!("not JSON: {e}")))?;
        let Some(id) = v.get("id").and_then(Value::as_str) else {
            return Err(at("a result line needs `id`".into()));
        };
        let Some(result) = v.get("result") else {
            return Err(
                InputError::new(path, "result", "a result line needs `result`")
                    .at_line(Some(i + 1)),
            );
        };
        out.push(ResultLine {
            line: i + 1,
            id: id.to_string(),
            result: result.clone(),
            variant: v.get("variant").and_then(Value::as_str).map(str::to_string),
        });
    }
    Ok(out)
}

/// BFCL's function-calling `decode_ast`, then its format check: the calls as
/// `(name, arguments)`, or `None` when the result holds no call BFCL would decode.
pub fn decode(result: &Value) -> Option<Vec<(String, Value)>> {
    let items: &[Value] = match result {
        Value::Array(a) => a,
        // Iterating an empty string decodes to no call; any other text raises.
        Value::String(s) if s.is_empty() => &[],
        _ => return None,
    };
    let mut calls = Vec::new();
    for item in items {
        let (name, args) = item.as_object()?.iter().next()?;
        // json.loads of the arguments: a string holding JSON.
        let args: Value = serde_json::from_str(args.as_str()?).ok()?;
        // `is_function_calling_format_output`: the arguments are a mapping.
        if !args.is_object() {
            return None;
        }
        calls.push((name.clone(), args));
    }
    Some(calls)
}

/// Judges one result line against its converted query.
pub fn judge(
    sc: &Scenario,
    query: &Query,
    dbs: &Databases,
    line: &ResultLine,
    underscore_to_dot: bool,
) -> Verdict {
    let result = &line.result;
    let servers: Vec<&str> = query
        .scope
        .iter()
        .filter_map(|r| match r {
            Resource::Mcp(s) => Some(s.as_str()),
            _ => None,
        })
        .collect();
    let wire = |tool: &str| match underscore_to_dot && tool.contains('.') {
        true => tool.replace('.', "_"),
        false => tool.to_string(),
    };
    let address_of = |name: &str| -> Address {
        for s in &servers {
            if let Some(server) = sc.catalog.mcp_server(s) {
                if let Some(t) = server.tools.iter().find(|t| wire(&t.name) == name) {
                    return Address::Mcp(server.name.clone(), t.name.clone());
                }
            }
        }
        // A name the entry does not offer (under this spelling): an address no catalog
        // of an imported scenario holds, so it is scored as a wrong function.
        Address::Builtin(name.to_string())
    };
    let decoded = decode(result).unwrap_or_default();
    let calls: Vec<CallRecord> = decoded
        .iter()
        .map(|(name, args)| {
            let address = address_of(name);
            let schema_errors = sc
                .catalog
                .schema_of(&address)
                .map(|s| schema_errors(&s, args))
                .unwrap_or_default();
            CallRecord {
                request: 0,
                tool: name.clone(),
                arguments: args.to_string(),
                effect: CallEffect::Executed,
                address: Some(address),
                fetched: Vec::new(),
                error: None,
                schema_errors,
                blind: false,
                args: Some(args.clone()),
                skills_in_context: Vec::new(),
                unloaded: false,
                cut: Vec::new(),
                malformed: false,
                event: None,
                program: None,
            }
        })
        .collect();
    // BFCL's own rule: an output that does not decode is no call at all, so an
    // irrelevance entry answered with a malformed call counts as an abstention there.
    // It is kept here (no text calls, nothing malformed) so that the agreement with
    // BFCL's checker holds; runs judge what the model tried (see `score::score`).
    let s = score::score(&query.expect, &calls, 0, &[], &sc.catalog, dbs);
    let valid = s.exact && s.args_ok != Some(false);
    let reason = (!valid).then(|| reason(sc, query, &calls));
    Verdict {
        id: query.id.clone(),
        scenario: sc.name.clone(),
        line: line.line,
        valid,
        reason,
        variant: line.variant.clone(),
    }
}

/// The first thing wrong with a judged output, in words.
fn reason(sc: &Scenario, query: &Query, calls: &[CallRecord]) -> String {
    let expected = query.expect.canonical_calls();
    if expected.is_empty() {
        return format!("{} call(s) where none is expected", calls.len());
    }
    if calls.is_empty() {
        return "no function call".into();
    }
    if calls.len() != expected.len() {
        return format!("{} call(s), {} expected", calls.len(), expected.len());
    }
    if let Some(c) = calls.iter().find(|c| {
        !expected
            .iter()
            .any(|e| Some(&e.address) == c.address.as_ref())
    }) {
        return format!("wrong function `{}`", c.tool);
    }
    for e in &expected {
        let schema = sc.catalog.schema_of(&e.address).unwrap_or(Value::Null);
        let errors: Vec<String> = calls
            .iter()
            .filter(|c| c.address.as_ref() == Some(&e.address))
            .filter_map(|c| bfcl_check_call(&schema, &e.args, c.args.as_ref()?).err())
            .collect();
        if errors.len()
            == calls
                .iter()
                .filter(|c| c.address.as_ref() == Some(&e.address))
                .count()
        {
            if let Some(first) = errors.into_iter().next() {
                return first;
            }
        }
    }
    "no assignment of the calls to the expected ones accepts every call".into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_decode_as_bfcl_decodes_function_calls() {
        assert_eq!(
            decode(&json!([{"math_factorial": "{\"n\": 5}"}])),
            Some(vec![("math_factorial".to_string(), json!({"n": 5}))])
        );
        assert_eq!(decode(&json!([])), Some(vec![]));
        assert_eq!(decode(&json!("")), Some(vec![]));
        // Text, arguments that are not JSON or not a mapping: no call.
        assert_eq!(decode(&json!("I cannot help with that.")), None);
        assert_eq!(decode(&json!([{"f": "{n: 5}"}])), None);
        assert_eq!(decode(&json!([{"f": "[1]"}])), None);
        assert_eq!(decode(&json!([{"f": {"n": 5}}])), None);
        assert_eq!(decode(&json!([{}])), None);
    }
}
