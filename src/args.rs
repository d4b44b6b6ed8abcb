//! Arguments: validation against a JSON Schema ([`schema_errors`]), and comparison,
//! BFCL-style (DESIGN §8): strings standardised (case, spaces
//! and `,./-_*^` ignored) — except paths, globs and URLs, compared exactly by default
//! ([`default_compare`]) — numbers by value, lists and objects element by element. Used
//! by scoring and by fixture responses that answer only some argument values.

use std::collections::{BTreeMap, HashMap};

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

/// A value's Python type as BFCL's checker sees it after `json.loads`: integers and
/// floats apart, `true` a bool (never an int).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PyType {
    Int,
    Float,
    Bool,
    Str,
    List,
    Dict,
    None,
}

fn py_type(v: &Value) -> PyType {
    match v {
        Value::Null => PyType::None,
        Value::Bool(_) => PyType::Bool,
        Value::Number(n) if n.is_f64() => PyType::Float,
        Value::Number(_) => PyType::Int,
        Value::String(_) => PyType::Str,
        Value::Array(_) => PyType::List,
        Value::Object(_) => PyType::Dict,
    }
}

/// The Python type BFCL's checker expects for a parameter of this (converted) JSON
/// Schema type: BFCL's `float` is `number`, `tuple` is `array`, `dict` is `object` and
/// `any` is `string`.
fn schema_py_type(schema: &Value) -> Option<PyType> {
    Some(match schema.get("type")?.as_str()? {
        "integer" => PyType::Int,
        "number" => PyType::Float,
        "string" => PyType::Str,
        "boolean" => PyType::Bool,
        "array" => PyType::List,
        "object" => PyType::Dict,
        _ => return None,
    })
}

/// Python's `==` between two JSON-loaded values: numbers by value across int and
/// float, `True == 1`, lists and dicts element by element.
fn py_eq(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if !x.is_f64() && !y.is_f64() => {
            x.as_i64().map(i128::from).or(x.as_u64().map(i128::from))
                == y.as_i64().map(i128::from).or(y.as_u64().map(i128::from))
        }
        (Value::Bool(_) | Value::Number(_), Value::Bool(_) | Value::Number(_)) => num(a) == num(b),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| py_eq(p, q)))
        }
        _ => a == b,
    }
}

fn is_empty_str(v: &Value) -> bool {
    v.as_str() == Some("")
}

/// What Python's `range(len(x))` with `x[i]` walks: a list's items, a string's
/// characters; anything else makes BFCL's checker raise (`None`).
fn py_items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::Array(a) => Some(a.clone()),
        Value::String(s) => Some(s.chars().map(|c| Value::String(c.to_string())).collect()),
        _ => None,
    }
}

/// Strings standardized, anything else kept (BFCL standardizes one level deep).
fn std_item(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(standardize(s)),
        other => other.clone(),
    }
}

/// BFCL's AST checker on one call's arguments (`simple_function_checker` for Python,
/// bfcl-eval 2026.3.23), rule for rule, quirks included: every required parameter
/// present; every given parameter in the schema *and* in the answer (`accepted`);
/// each value of its type (an int is accepted for a float; a value of the answer's own
/// type when that differs from the declared one — BFCL's "variable" case; list items
/// one level deep); dicts, lists of dicts, strings and lists compared as BFCL's
/// `dict_checker`, `list_dict_checker`, `string_checker` and `list_checker` do (strings
/// standardized one level deep), anything else by Python's `==`; a parameter of the
/// answer left out only when its list holds `""`. The error names the first rule
/// broken; where BFCL's checker itself would raise, the call fails.
pub fn bfcl_check_call(
    schema: &Value,
    accepted: &BTreeMap<String, Vec<Value>>,
    args: &Value,
) -> Result<(), String> {
    let Some(obj) = args.as_object() else {
        return Err("the arguments are not an object".into());
    };
    let empty = serde_json::Map::new();
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for r in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !obj.contains_key(r) {
            return Err(format!("missing required parameter `{r}`"));
        }
    }
    for (param, value) in obj {
        let (Some(prop), Some(answers)) = (props.get(param), accepted.get(param)) else {
            return Err(format!("unexpected parameter `{param}`"));
        };
        let Some(expected) = schema_py_type(prop) else {
            return Err(format!(
                "parameter `{param}`: BFCL's checker has no type for its schema"
            ));
        };
        let nested = if expected == PyType::List {
            match prop.get("items").and_then(schema_py_type) {
                Some(t) => Some(t),
                None => {
                    return Err(format!(
                        "parameter `{param}`: an array without an item type"
                    ))
                }
            }
        } else {
            None
        };
        // Python's int → float conversion for float parameters.
        let value = match value {
            Value::Number(n) if expected == PyType::Float && !n.is_f64() => {
                n.as_f64().map(Value::from).unwrap_or_else(|| value.clone())
            }
            _ => value.clone(),
        };
        let Some(is_variable) = type_check(&value, answers, expected, nested) else {
            return Err(format!("parameter `{param}`: wrong type"));
        };
        if !is_variable {
            let ok = match (expected, nested, &value) {
                (PyType::Dict, _, Value::Object(m)) => dict_check(m, answers),
                (PyType::List, Some(PyType::Dict), Value::Array(a)) => list_dict_check(a, answers),
                (PyType::Str, _, Value::String(s)) => {
                    let s = standardize(s);
                    answers
                        .iter()
                        .any(|a| a.as_str().is_some_and(|a| standardize(a) == s))
                }
                (PyType::List, _, Value::Array(a)) => list_check(a, answers),
                _ => answers.iter().any(|a| py_eq(a, &value)),
            };
            if !ok {
                return Err(format!("parameter `{param}`: value not accepted"));
            }
            continue;
        }
        if !answers.iter().any(|a| py_eq(a, &value)) {
            return Err(format!("parameter `{param}`: value not accepted"));
        }
    }
    for (param, vals) in accepted {
        if !obj.contains_key(param) && !vals.iter().any(is_empty_str) {
            return Err(format!(
                "parameter `{param}` left out, and it is not optional"
            ));
        }
    }
    Ok(())
}

/// A call that [`bfcl_check_call`] accepts, made from the answer's own values: per
/// parameter, the first accepted value that passes — a dict answer (a mapping of
/// accepted lists) instantiated with the first value of each list, a list of such
/// dicts likewise — or nothing when the parameter may be left out. The error names the
/// parameter no value of which passes.
pub fn bfcl_example_call(
    schema: &Value,
    accepted: &BTreeMap<String, Vec<Value>>,
) -> Result<Value, String> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let first = |opts: &Value| -> Option<Value> {
        match opts {
            Value::Array(o) => o.iter().find(|v| !is_empty_str(v)).cloned(),
            _ => None,
        }
    };
    let instantiate = |d: &Value| -> Option<Value> {
        let m = d.as_object()?;
        Some(Value::Object(
            m.iter()
                .filter_map(|(k, o)| first(o).map(|v| (k.clone(), v)))
                .collect(),
        ))
    };
    let mut call = serde_json::Map::new();
    for (p, vals) in accepted {
        let prop = schema.get("properties").and_then(|ps| ps.get(p));
        let one = serde_json::json!({"type": "object", "properties": {p: prop}});
        let only = BTreeMap::from([(p.clone(), vals.clone())]);
        let pass = |v: &Value| bfcl_check_call(&one, &only, &serde_json::json!({p: v})).is_ok();
        let mut candidates: Vec<Value> = Vec::new();
        for v in vals.iter().filter(|v| !is_empty_str(v)) {
            candidates.push(v.clone());
            if let Some(d) = instantiate(v) {
                candidates.push(d);
            }
            if let Some(list) = v.as_array() {
                if let Some(ds) = list.iter().map(instantiate).collect::<Option<Vec<_>>>() {
                    candidates.push(Value::Array(ds));
                }
            }
        }
        let optional = vals.iter().any(is_empty_str) && !required.contains(&p.as_str());
        match candidates.into_iter().find(|v| pass(v)) {
            Some(v) => {
                call.insert(p.clone(), v);
            }
            None if optional => {}
            None if pass(&Value::String(String::new())) => {
                call.insert(p.clone(), Value::String(String::new()));
            }
            None if vals.is_empty() => {
                return Err(format!(
                    "the answer accepts no value of `{p}` (its list is empty)"
                ))
            }
            None => return Err(format!("no accepted value of `{p}` passes BFCL's checks")),
        }
    }
    let call = Value::Object(call);
    bfcl_check_call(schema, accepted, &call).map(|_| call)
}

/// BFCL's `type_checker`: `Some(is_variable)` when the type is accepted.
fn type_check(
    value: &Value,
    answers: &[Value],
    expected: PyType,
    nested: Option<PyType>,
) -> Option<bool> {
    let answer_type = answers.iter().find(|a| !is_empty_str(a)).map(py_type);
    let is_variable = answer_type.is_some_and(|t| t != expected);
    if py_type(value) == expected {
        let Some(inner) = nested else {
            return Some(is_variable);
        };
        let items = value.as_array().map(Vec::as_slice).unwrap_or(&[]);
        for answer in answers {
            let ok = match answer {
                Value::Array(options) => items
                    .iter()
                    .all(|v| type_check(v, options, inner, None).is_some()),
                _ => true,
            };
            if ok {
                return Some(is_variable);
            }
        }
        return None;
    }
    (answer_type == Some(py_type(value))).then_some(true)
}

/// BFCL's `dict_checker`: some answer (a dict of accepted lists) takes every key given
/// with a value in its list, and every key left out may be.
fn dict_check(given: &serde_json::Map<String, Value>, answers: &[Value]) -> bool {
    answers.iter().filter(|a| !is_empty_str(a)).any(|answer| {
        let Some(answer) = answer.as_object() else {
            return false;
        };
        let values_ok = given.iter().all(|(k, v)| {
            answer
                .get(k)
                .and_then(py_items)
                .is_some_and(|opts| opts.iter().map(std_item).any(|o| py_eq(&o, &std_item(v))))
        });
        values_ok
            && answer.iter().all(|(k, opts)| {
                given.contains_key(k)
                    || match opts {
                        Value::Array(o) => o.iter().any(is_empty_str),
                        // `"" in "abc"` is true in Python, `"" in {...}` asks for a key.
                        Value::String(_) => true,
                        Value::Object(m) => m.contains_key(""),
                        _ => false,
                    }
            })
    })
}

/// BFCL's `list_dict_checker`: some answer lists as many dicts, each checked in order.
fn list_dict_check(given: &[Value], answers: &[Value]) -> bool {
    answers.iter().any(|answer| {
        let Some(dicts) = py_items(answer) else {
            return false;
        };
        dicts.len() == given.len()
            && given.iter().zip(&dicts).all(|(g, d)| {
                g.as_object()
                    .is_some_and(|g| dict_check(g, std::slice::from_ref(d)))
            })
    })
}

/// BFCL's `list_checker`: the list, its strings standardized, equals some answer with
/// its strings standardized. An answer that is not a list or a string makes BFCL's
/// checker raise.
fn list_check(given: &[Value], answers: &[Value]) -> bool {
    let given: Vec<Value> = given.iter().map(std_item).collect();
    let mut options = Vec::new();
    for a in answers {
        match py_items(a) {
            Some(items) => options.push(items.iter().map(std_item).collect::<Vec<_>>()),
            None => return false,
        }
    }
    options
        .iter()
        .any(|o| o.len() == given.len() && o.iter().zip(&given).all(|(x, y)| py_eq(x, y)))
}

/// Compiled schemas, by their JSON text: a run checks every call against its tool's
/// schema, and compiling one costs more than the check. Bounded: emptied when full.
static VALIDATORS: std::sync::OnceLock<std::sync::Mutex<HashMap<String, Compiled>>> =
    std::sync::OnceLock::new();

/// A compiled schema, or why it does not compile.
type Compiled = Result<std::sync::Arc<jsonschema::Validator>, String>;

/// Schemas the compiled-schema cache holds at most.
const VALIDATORS_HELD: usize = 4_096;

fn validator(schema: &Value) -> Compiled {
    let key = schema.to_string();
    let cache = VALIDATORS.get_or_init(Default::default);
    if let Some(v) = cache.lock().expect("validator cache").get(&key) {
        return v.clone();
    }
    let v = jsonschema::validator_for(schema)
        .map(std::sync::Arc::new)
        .map_err(|e| e.to_string());
    let mut held = cache.lock().expect("validator cache");
    if held.len() >= VALIDATORS_HELD {
        held.clear();
    }
    held.insert(key, v.clone());
    v
}

/// JSON Schema violations of `instance`, as readable strings.
pub fn schema_errors(schema: &Value, instance: &Value) -> Vec<String> {
    match validator(schema) {
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

    #[test]
    fn bfcl_checker_rules_and_quirks() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number", "format": "float"},
            "city": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "pts": {"type": "array", "items": {"type": "number"}},
            "opts": {"type": "object"},
            "rows": {"type": "array", "items": {"type": "object"}},
            "unit": {"type": "string"}
        }, "required": ["n"]});
        let acc = |v: Value| -> BTreeMap<String, Vec<Value>> {
            v.as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_array().unwrap().clone()))
                .collect()
        };
        let ok = |a: &BTreeMap<String, Vec<Value>>, args: Value| {
            bfcl_check_call(&schema, a, &args).is_ok()
        };
        let a = acc(json!({"n": [5], "x": [2.0], "city": ["New York, NY"], "unit": ["", "cm"]}));
        assert!(ok(&a, json!({"n": 5, "x": 2.0, "city": "new york ny"})));
        // An int for a float; a float or a bool for an int is a wrong type.
        assert!(ok(&a, json!({"n": 5, "x": 2, "city": "New York, NY"})));
        assert!(!ok(&a, json!({"n": 5.0, "x": 2.0, "city": "New York, NY"})));
        assert!(!ok(
            &a,
            json!({"n": true, "x": 2.0, "city": "New York, NY"})
        ));
        // Missing required; a parameter of the schema the answer does not name.
        assert!(!ok(&a, json!({"x": 2.0, "city": "New York, NY"})));
        assert!(!ok(
            &a,
            json!({"n": 5, "x": 2.0, "city": "New York, NY", "tags": ["a"]})
        ));
        // Left out: only where the answer holds "".
        assert!(!ok(&a, json!({"n": 5, "city": "New York, NY"})));
        assert!(ok(
            &a,
            json!({"n": 5, "x": 2.0, "city": "New York, NY", "unit": "CM"})
        ));
        // BFCL's "variable" case: a value of the answer's type, not the declared one.
        let v = acc(json!({"n": ["count"]}));
        assert!(ok(&v, json!({"n": "count"})));
        assert!(
            !ok(&v, json!({"n": "Count"})),
            "a variable is compared exactly"
        );
        // Lists: strings standardized one level deep; item types checked.
        let l = acc(json!({"n": [1], "tags": [["Red Wine", "beer"]], "pts": [[1.0, 2.5]]}));
        assert!(ok(
            &l,
            json!({"n": 1, "tags": ["red-wine", "BEER"], "pts": [1.0, 2.5]})
        ));
        assert!(!ok(
            &l,
            json!({"n": 1, "tags": ["beer", "red wine"], "pts": [1.0, 2.5]})
        ));
        assert!(
            !ok(
                &l,
                json!({"n": 1, "tags": ["red wine", "beer"], "pts": [1, 2.5]})
            ),
            "no int → float inside lists"
        );
        // Dicts: keys from the answer, values from their lists; a list of dicts in order.
        let d = acc(
            json!({"n": [1], "opts": [{"size": ["large", "L"], "milk": ["", "oat"]}],
                           "rows": [[{"a": [1]}, {"a": [2]}]]}),
        );
        assert!(ok(
            &d,
            json!({"n": 1, "opts": {"size": "LARGE"}, "rows": [{"a": 1}, {"a": 2}]})
        ));
        assert!(!ok(
            &d,
            json!({"n": 1, "opts": {"milk": "oat"}, "rows": [{"a": 1}, {"a": 2}]})
        ));
        assert!(!ok(
            &d,
            json!({"n": 1, "opts": {"size": "L", "x": 1}, "rows": [{"a": 1}, {"a": 2}]})
        ));
        assert!(!ok(
            &d,
            json!({"n": 1, "opts": {"size": "L"}, "rows": [{"a": 2}, {"a": 1}]})
        ));
        // The example call is built from the answer and passes.
        let call = bfcl_example_call(&schema, &d).unwrap();
        assert_eq!(
            call,
            json!({"n": 1, "opts": {"size": "large", "milk": "oat"}, "rows": [{"a": 1}, {"a": 2}]})
        );
        assert!(bfcl_example_call(&schema, &acc(json!({"n": [""]}))).is_err());
    }
}
