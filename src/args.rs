//! Arguments: validation against a JSON Schema ([`schema_errors`]), and comparison,
//! BFCL-style (DESIGN §8): strings standardised (case, spaces
//! and `,./-_*^` ignored) — except paths, globs and URLs, compared exactly by default
//! ([`default_compare`]) — numbers by value, lists and objects element by element. Used
//! by scoring and by fixture responses that answer only some argument values.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// How a string argument is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compare {
    /// Character for character.
    Exact,
    /// BFCL's standardisation: case, spaces and `,./-_*^` ignored.
    Standard,
}

/// Parameter names whose values are compared character for character by default:
/// paths, globs, URLs. BFCL's standardisation would make `**/*.toml` equal `*.toml`.
const EXACT_NAMES: [&str; 8] = [
    "path",
    "paths",
    "file_path",
    "filepath",
    "pattern",
    "glob",
    "url",
    "uri",
];
const EXACT_SUFFIXES: [&str; 5] = ["_path", "_url", "_uri", "_glob", "_pattern"];
const EXACT_FORMATS: [&str; 5] = ["uri", "url", "uri-reference", "iri", "iri-reference"];

/// How a parameter is compared when the expectation does not say: exactly when its
/// schema's `format` is a URI kind or its name says it is a path, glob or URL;
/// BFCL-standardised otherwise.
pub fn default_compare(name: &str, prop: Option<&Value>) -> Compare {
    let n = name.to_ascii_lowercase();
    let format = prop
        .and_then(|p| p.get("format"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if EXACT_FORMATS.contains(&format)
        || EXACT_NAMES.contains(&n.as_str())
        || EXACT_SUFFIXES.iter().any(|s| n.ends_with(s))
    {
        Compare::Exact
    } else {
        Compare::Standard
    }
}

/// Whether each pinned parameter of `args` has one of its accepted values (`""` in a
/// list: the parameter may be left out), compared per `compare` or the default.
pub fn pinned_values_ok(
    schema: &Value,
    accepted: &BTreeMap<String, Vec<Value>>,
    compare: &BTreeMap<String, Compare>,
    args: &Value,
) -> bool {
    let Some(obj) = args.as_object() else {
        return accepted.is_empty();
    };
    let props = schema.get("properties").and_then(Value::as_object);
    accepted.iter().all(|(k, vals)| {
        let mode = compare
            .get(k)
            .copied()
            .unwrap_or_else(|| default_compare(k, props.and_then(|p| p.get(k))));
        match obj.get(k) {
            None => vals.iter().any(|v| v == &Value::String(String::new())),
            Some(v) => vals.iter().any(|a| value_eq_as(a, v, mode)),
        }
    })
}

/// BFCL's value comparison: strings standardized, numbers by value, lists and objects
/// element by element.
pub fn value_eq(expected: &Value, got: &Value) -> bool {
    value_eq_as(expected, got, Compare::Standard)
}

/// [`value_eq`] with strings compared as `mode` says.
pub fn value_eq_as(expected: &Value, got: &Value, mode: Compare) -> bool {
    match (expected, got) {
        (Value::String(a), Value::String(b)) => match mode {
            Compare::Standard => standardize(a) == standardize(b),
            Compare::Exact => a == b,
        },
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value_eq_as(x, y, mode))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, x)| b.get(k).is_some_and(|y| value_eq_as(x, y, mode)))
        }
        (a, b) => a == b,
    }
}

/// BFCL's `standardize_string`: drop spaces and `,./-_*^`, lower-case, `'` → `"`.
pub fn standardize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect::<String>()
        .to_lowercase()
        .replace('\'', "\"")
}

/// JSON Schema violations of `instance`, as readable strings.
pub fn schema_errors(schema: &Value, instance: &Value) -> Vec<String> {
    match jsonschema::validator_for(schema) {
        Ok(v) => v
            .iter_errors(instance)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect(),
        Err(e) => vec![format!("schema does not compile: {e}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn globs_paths_and_urls_compare_exactly_by_default() {
        let schema = json!({"type": "object", "properties": {
            "pattern": {"type": "string"},
            "title": {"type": "string"},
            "target": {"type": "string", "format": "uri"}
        }});
        let acc = |k: &str, v: &str| BTreeMap::from([(k.to_string(), vec![json!(v)])]);
        let none = BTreeMap::new();
        let ok = |acc: &BTreeMap<String, Vec<Value>>, args: Value| {
            pinned_values_ok(&schema, acc, &none, &args)
        };
        assert!(ok(
            &acc("pattern", "**/*.toml"),
            json!({"pattern": "**/*.toml"})
        ));
        assert!(!ok(
            &acc("pattern", "**/*.toml"),
            json!({"pattern": "*.toml"})
        ));
        assert!(!ok(
            &acc("target", "https://a.example/x"),
            json!({"target": "https://a.example/X"})
        ));
        // Free text keeps BFCL's standardisation.
        assert!(ok(
            &acc("title", "Fix the bug"),
            json!({"title": "fix the bug."})
        ));
        // An explicit setting wins either way.
        let std = BTreeMap::from([("pattern".to_string(), Compare::Standard)]);
        assert!(pinned_values_ok(
            &schema,
            &acc("pattern", "**/*.toml"),
            &std,
            &json!({"pattern": "*.toml"})
        ));
        let exact = BTreeMap::from([("title".to_string(), Compare::Exact)]);
        assert!(!pinned_values_ok(
            &schema,
            &acc("title", "Fix the bug"),
            &exact,
            &json!({"title": "fix the bug."})
        ));
        assert_eq!(default_compare("repo_path", None), Compare::Exact);
        assert_eq!(default_compare("query", None), Compare::Standard);
    }
}
