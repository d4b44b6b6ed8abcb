//! Arguments as the lexical model fills them: values found in the query (ids, e-mail
//! addresses, numbers, quoted strings) for the schema's properties, then its defaults.

use serde_json::{Map, Value};

use crate::model::mock::fill_required;

/// Arguments for `schema` from values found in the query; other required properties
/// get schema placeholders.
pub fn fill_from_query(schema: &Value, query: &str) -> Value {
    let mut given = Map::new();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return fill_required(schema, &given);
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let words: Vec<&str> = query
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| ",.;:!?()\"'".contains(c)))
        .collect();
    let numbers: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let ids: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| {
            w.chars().any(|c| c.is_ascii_digit())
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .collect();
    let find =
        |pred: &dyn Fn(&str) -> bool| words.iter().copied().find(|w| pred(w)).map(str::to_string);
    let quoted = query
        .split(['"', '\''])
        .nth(1)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string);
    for (name, p) in props {
        let n = name.to_lowercase();
        let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
        let req = required.contains(&name.as_str());
        let value: Option<Value> = if let Some(e) = p.get("enum").and_then(Value::as_array) {
            e.iter()
                .find(|v| {
                    v.as_str()
                        .is_some_and(|s| query.to_lowercase().contains(&s.to_lowercase()))
                })
                .cloned()
        } else if n.contains("email") {
            find(&|w| w.contains('@')).map(Value::from)
        } else if n.contains("url") || n.contains("uri") {
            find(&|w| w.starts_with("http")).map(Value::from)
        } else if n.contains("path") || n.contains("file") || n.contains("dir") {
            find(&|w| w.starts_with('/')).map(Value::from)
        } else if ty == "integer" || ty == "number" {
            numbers
                .first()
                .and_then(|s| s.parse::<i64>().ok())
                .map(Value::from)
        } else if n.contains("id") || n.contains("number") || n.contains("key") {
            ids.first().map(|s| Value::from(*s))
        } else if [
            "query",
            "q",
            "text",
            "message",
            "prompt",
            "content",
            "body",
            "expression",
            "search",
        ]
        .contains(&n.as_str())
            && req
        {
            Some(Value::from(
                quoted.clone().unwrap_or_else(|| query.to_string()),
            ))
        } else {
            None
        };
        if let Some(v) = value {
            given.insert(name.clone(), v);
        }
    }
    fill_required(schema, &given)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fills_ids_emails_and_numbers_from_the_query() {
        let schema = json!({
            "type": "object",
            "properties": {
                "order_id": {"type": "string"},
                "to": {"type": "string"},
                "email": {"type": "string"},
                "limit": {"type": "integer"}
            },
            "required": ["order_id", "to"]
        });
        let v = fill_from_query(&schema, "Refund order 9921 and mail ann@example.com");
        assert_eq!(v["order_id"], json!("9921"));
        assert_eq!(v["email"], json!("ann@example.com"));
        assert_eq!(v["limit"], json!(9921));
        assert_eq!(v["to"], json!("example"));
    }
}
