//! What the two mock models share: their answer to the selection step, and
//! schema-valid placeholder arguments for the parameters they cannot fill.

use serde_json::{json, Map, Value};

use crate::wire::{Context, Response, ToolCall};

/// How a mock model answers the selection step: a call of the forced function when
/// the request forces one, else the JSON object as text.
pub(crate) fn selection_answer(cx: &Context, names: &[String]) -> Response {
    let args = serde_json::json!({ "tools": names });
    match &cx.tool_choice {
        Some(f) => Response::call(vec![ToolCall::new("call_select", f, &args)]),
        None => Response::say(args.to_string()),
    }
}

/// A schema-valid placeholder for a value of `schema`: its default, first enum value,
/// first example or const, else a value of its type (required object properties filled
/// recursively).
pub fn placeholder(schema: &Value) -> Value {
    if let Some(v) = schema.get("default").or_else(|| schema.get("const")) {
        return v.clone();
    }
    if let Some(v) = schema.get("enum").and_then(|e| e.get(0)) {
        return v.clone();
    }
    if let Some(v) = schema.get("examples").and_then(|e| e.get(0)) {
        return v.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema.get(key).and_then(|a| a.as_array()).and_then(|a| {
            a.iter()
                .find(|s| s.get("type").and_then(Value::as_str) != Some("null"))
        }) {
            return placeholder(first);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ => {
            if schema.get("properties").is_some() {
                "object"
            } else {
                "string"
            }
        }
    };
    match ty {
        "integer" => json!(schema
            .get("minimum")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(1)),
        "number" => json!(schema
            .get("minimum")
            .and_then(Value::as_f64)
            .unwrap_or(1.0)
            .max(1.0)),
        "boolean" => json!(false),
        "null" => Value::Null,
        "array" => {
            let n = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema
                .get("items")
                .map(placeholder)
                .unwrap_or(json!("example"));
            Value::Array((0..n).map(|_| item.clone()).collect())
        }
        "object" => fill_required(schema, &Map::new()),
        _ => json!(match schema.get("format").and_then(Value::as_str) {
            Some("date") => "2026-01-01",
            Some("date-time") => "2026-01-01T00:00:00Z",
            Some("email") => "user@example.com",
            Some("uri") | Some("url") => "https://example.com",
            _ => "example",
        }),
    }
}

/// An argument object: the `given` values, plus a placeholder for every other
/// required property.
pub fn fill_required(schema: &Value, given: &Map<String, Value>) -> Value {
    let mut out = given.clone();
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(req) = schema.get("required").and_then(Value::as_array) {
        for r in req.iter().filter_map(Value::as_str) {
            if !out.contains_key(r) {
                let sub = props.and_then(|p| p.get(r)).cloned().unwrap_or(json!({}));
                out.insert(r.to_string(), placeholder(&sub));
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_schema_valid() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 5},
                "when": {"type": "string", "format": "date"},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "opt": {"type": ["string", "null"]},
                "inner": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}
            },
            "required": ["n", "when", "kind", "tags", "inner"]
        });
        let v = fill_required(&schema, &Map::new());
        assert!(
            crate::strategy::schema_errors(&schema, &v).is_empty(),
            "{v}"
        );
        assert_eq!(v["n"], json!(5));
        assert!(v.get("opt").is_none());
    }
}
