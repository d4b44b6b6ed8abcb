//! BFCL's data → scenarios: one scenario per category ([`convert_category`]), one MCP
//! server and one scoped query per entry; answers that no output could satisfy are
//! excluded with the reason ([`Excluded`]), never kept.
//!
//! Functions are shown as BFCL shows them to function-calling models (its
//! `convert_to_tool` and `_cast_to_openai_type`, bfcl-eval 2026.3.23): BFCL's types
//! mapped to JSON Schema (`dict` → `object`, `float` → `number` with `format: float`
//! and " This is a float type value." added to the description, `tuple` → `array`,
//! `any` → `string`, …; an unknown type → `string`), and the language hint
//! " Note that the provided function is in Python 3 syntax." added to each
//! description. A system message of the question becomes the query's `instructions`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::args::bfcl_example_call;

/// The bfcl-eval release the importer and the agreement test are pinned to.
pub const PINNED_VERSION: &str = "2026.3.23";

/// The categories converted by default: BFCL's single-turn, Python, AST-checked
/// categories and the two that expect no call.
pub const CATEGORIES: [&str; 10] = [
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
];

/// What BFCL adds to every Python function's description.
const PYTHON_HINT: &str = " Note that the provided function is in Python 3 syntax.";

/// BFCL's `GORILLA_TO_OPENAPI`.
fn openapi_type(t: &str) -> Option<&'static str> {
    Some(match t {
        "integer" | "byte" | "short" | "long" | "Bigint" => "integer",
        "number" | "float" | "double" => "number",
        "string" | "any" | "char" | "Any" | "String" => "string",
        "boolean" | "bool" => "boolean",
        "array" | "list" | "tuple" | "ArrayList" | "Array" | "Queue" | "Stack" => "array",
        "dict" | "object" | "HashMap" | "Hashtable" => "object",
        _ => return None,
    })
}

/// The types BFCL's Python checker knows (`PYTHON_TYPE_MAPPING`); a parameter of any
/// other type makes it raise.
const CHECKER_TYPES: [&str; 8] = [
    "string", "integer", "float", "boolean", "array", "tuple", "dict", "any",
];

/// An entry left out, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Excluded {
    pub id: String,
    pub reason: String,
}

/// One converted category.
#[derive(Debug, Clone)]
pub struct Converted {
    pub category: String,
    /// BFCL's file name of the questions, e.g. `BFCL_v4_simple_python.json`.
    pub file: String,
    /// The scenario, ready to be written as JSON.
    pub scenario: Value,
    pub entries: usize,
    pub kept: usize,
    pub excluded: Vec<Excluded>,
    /// Expected calls in all, over the kept entries.
    pub calls: usize,
    /// Answer parameters left out of an expectation because the function does not
    /// take them and the answer allows leaving them out (`""`): `(id, note)`.
    pub notes: Vec<(String, String)>,
}

/// Why a category cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("{0}: no BFCL file for category `{1}` (looked for BFCL_v*_{1}.json)")]
    Missing(PathBuf, String),
    #[error("{0}: more than one BFCL version for category `{1}`: {2}")]
    Ambiguous(PathBuf, String, String),
    #[error("{0}:{1}: {2}")]
    Bad(PathBuf, usize, String),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// The questions file of `category` in a BFCL data directory (any `BFCL_v*_` prefix).
pub fn find_file(dir: &Path, category: &str) -> Result<PathBuf, ConvertError> {
    let suffix = format!("_{category}.json");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| ConvertError::Io(dir.to_path_buf(), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("BFCL_v")
                    && n.ends_with(&suffix)
                    && n["BFCL_v".len()..n.len() - suffix.len()]
                        .chars()
                        .all(|c| c.is_ascii_digit())
            })
        })
        .collect();
    found.sort();
    match found.len() {
        0 => Err(ConvertError::Missing(dir.to_path_buf(), category.into())),
        1 => Ok(found.remove(0)),
        _ => Err(ConvertError::Ambiguous(
            dir.to_path_buf(),
            category.into(),
            found
                .iter()
                .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
                .collect::<Vec<_>>()
                .join(", "),
        )),
    }
}

/// Reads a BFCL file: one JSON object per line.
pub fn read_lines(path: &Path) -> Result<Vec<Value>, ConvertError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConvertError::Io(path.into(), e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| ConvertError::Bad(path.into(), i + 1, e.to_string()))
        })
        .collect()
}

/// The questions of `category` in a BFCL data directory: their file, its name (the
/// answers' file has the same one under `possible_answer/`), and its lines.
pub(crate) fn questions_of(
    dir: &Path,
    category: &str,
) -> Result<(PathBuf, String, Vec<Value>), ConvertError> {
    let qfile = find_file(dir, category)?;
    let file = qfile
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let questions = read_lines(&qfile)?;
    Ok((qfile, file, questions))
}

/// Converts one category of a BFCL data directory (questions in `BFCL_v*_<cat>.json`,
/// answers in `possible_answer/` beside them; irrelevance categories have none).
pub fn convert_category(
    dir: &Path,
    category: &str,
    source: &str,
) -> Result<Converted, ConvertError> {
    let (qfile, file, questions) = questions_of(dir, category)?;
    let no_call = category.contains("irrelevance");
    let answers: BTreeMap<String, Value> = if no_call {
        BTreeMap::new()
    } else {
        let afile = dir.join("possible_answer").join(&file);
        read_lines(&afile)?
            .into_iter()
            .filter_map(|a| Some((a.get("id")?.as_str()?.to_string(), a)))
            .collect()
    };
    let mut servers = Vec::new();
    let mut queries = Vec::new();
    let mut excluded = Vec::new();
    let mut notes = Vec::new();
    let mut calls = 0;
    for (line, q) in questions.iter().enumerate() {
        let Some(id) = q.get("id").and_then(Value::as_str) else {
            return Err(ConvertError::Bad(
                qfile.clone(),
                line + 1,
                "an entry without `id`".into(),
            ));
        };
        let answer = answers.get(id).and_then(|a| a.get("ground_truth"));
        match entry(id, q, answer, no_call, category) {
            Ok(e) => {
                calls += e.calls;
                notes.extend(e.notes.into_iter().map(|n| (id.to_string(), n)));
                servers.push(e.server);
                queries.push(e.query);
            }
            Err(reason) => excluded.push(Excluded {
                id: id.to_string(),
                reason,
            }),
        }
    }
    let kept = queries.len();
    let scenario = json!({
        "name": format!("bfcl-{category}"),
        "description": format!(
            "BFCL {category} ({file}, {source}), converted by `discbench import bfcl`: \
             {kept} of {} entries ({} excluded as unsatisfiable or unconvertible). \
             Data: Berkeley Function Calling Leaderboard, Apache-2.0.",
            questions.len(),
            excluded.len()
        ),
        "catalog": {"mcp_servers": servers},
        "queries": queries,
    });
    Ok(Converted {
        category: category.to_string(),
        file,
        scenario,
        entries: questions.len(),
        kept,
        excluded,
        calls,
        notes,
    })
}

/// One entry converted.
struct Entry {
    server: Value,
    query: Value,
    calls: usize,
    notes: Vec<String>,
}

fn entry(
    id: &str,
    q: &Value,
    answer: Option<&Value>,
    no_call: bool,
    category: &str,
) -> Result<Entry, String> {
    let functions = q
        .get("function")
        .and_then(Value::as_array)
        .ok_or("the entry has no function list")?;
    if functions.is_empty() {
        return Err("the entry offers no function: there is nothing to disclose".into());
    }
    let mut tools = Vec::new();
    let mut schemas: BTreeMap<String, Value> = BTreeMap::new();
    for f in functions {
        let (tool, schema) = tool(f)?;
        let name = tool["name"].as_str().unwrap_or_default().to_string();
        if schemas.insert(name.clone(), schema).is_some() {
            return Err(format!("two functions are named `{name}`"));
        }
        tools.push(tool);
    }
    let (text, instructions) = question(q)?;
    let mut notes = Vec::new();
    let mut expected = Vec::new();
    if !no_call {
        let answer = answer
            .and_then(Value::as_array)
            .ok_or("the entry has no answer")?;
        if answer.is_empty() {
            return Err("the answer lists no call".into());
        }
        for call in answer {
            let Some((fname, params)) = call
                .as_object()
                .and_then(|o| (o.len() == 1).then(|| o.iter().next()).flatten())
            else {
                return Err("an answer call is not one `{function: {parameter: [values]}}`".into());
            };
            let raw = functions
                .iter()
                .find(|f| f.get("name").and_then(Value::as_str) == Some(fname))
                .ok_or_else(|| {
                    format!("the answer calls `{fname}`, which the entry does not offer")
                })?;
            let schema = &schemas[fname];
            let props = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let raw_props = raw["parameters"]["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let params = params
                .as_object()
                .ok_or_else(|| format!("the answer's parameters of `{fname}` are not a mapping"))?;
            let mut args = Map::new();
            for (p, vals) in params {
                let Some(list) = vals.as_array() else {
                    return Err(format!(
                        "the answer for `{fname}.{p}` is not a list of accepted values"
                    ));
                };
                if !props.contains_key(p) {
                    if list.iter().any(|v| v == "") {
                        notes.push(format!(
                            "`{fname}.{p}` is in the answer (optional) but not a parameter: left out"
                        ));
                        continue;
                    }
                    return Err(format!(
                        "the answer requires `{fname}.{p}`, which `{fname}` does not take: every output is wrong"
                    ));
                }
                let t = raw_props
                    .get(p)
                    .and_then(|x| x.get("type"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !CHECKER_TYPES.contains(&t) {
                    return Err(format!(
                        "`{fname}.{p}` is of type `{t}`, which BFCL's checker cannot check"
                    ));
                }
                args.insert(p.clone(), Value::Array(list.clone()));
            }
            let accepted: BTreeMap<String, Vec<Value>> = args
                .iter()
                .map(|(k, v)| (k.clone(), v.as_array().cloned().unwrap_or_default()))
                .collect();
            bfcl_example_call(schema, &accepted).map_err(|e| {
                format!("no call of `{fname}` satisfies the answer as written: {e}")
            })?;
            expected.push(json!({
                "address": format!("mcp:{id}/{fname}"),
                "args": args,
                "compare": "bfcl",
            }));
        }
    }
    let calls = expected.len();
    let mut query = json!({
        "id": id,
        "text": text,
        "scope": [format!("mcp:{id}")],
    });
    if let Some(i) = instructions {
        query["instructions"] = json!(i);
    }
    query["expect"] = if no_call {
        json!({"calls": []})
    } else {
        json!({"calls": expected, "exhaustive": true})
    };
    let mut tags = vec![category.to_string()];
    if no_call {
        tags.push("no-call".into());
    } else if calls > 1 {
        tags.push("multi-call".into());
    }
    query["tags"] = json!(tags);
    Ok(Entry {
        server: json!({
            "name": id,
            "description": format!("BFCL entry {id}"),
            "tools": tools,
        }),
        query,
        calls,
        notes,
    })
}

/// A function as an MCP tool, and its converted parameter schema.
fn tool(f: &Value) -> Result<(Value, Value), String> {
    tool_with(f, true)
}

/// [`tool`], with or without the Python hint on the description (BFCL leaves it off
/// the functions miss_func holds back).
pub(crate) fn tool_with(f: &Value, hint: bool) -> Result<(Value, Value), String> {
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("a function without a name")?;
    let description = f.get("description").and_then(Value::as_str).unwrap_or("");
    let mut params = f
        .get("parameters")
        .cloned()
        .ok_or_else(|| format!("`{name}` has no parameters"))?;
    let obj = params
        .as_object_mut()
        .ok_or_else(|| format!("`{name}`: its parameters are not a mapping"))?;
    obj.insert("type".into(), json!("object"));
    let mut props = match obj.remove("properties") {
        Some(Value::Object(p)) => p,
        None => Map::new(),
        Some(_) => return Err(format!("`{name}`: its properties are not a mapping")),
    };
    cast(&mut props).map_err(|e| format!("`{name}`: {e}"))?;
    obj.insert("properties".into(), Value::Object(props));
    if let Err(e) = jsonschema::validator_for(&params) {
        return Err(format!(
            "`{name}`: its parameters are not a valid JSON Schema ({e})"
        ));
    }
    let tool = json!({
        "name": name,
        "description": if hint {
            format!("{description}{PYTHON_HINT}")
        } else {
            description.to_string()
        },
        "inputSchema": params,
    });
    Ok((tool, params))
}

/// BFCL's `_cast_to_openai_type`, for function-calling models.
fn cast(props: &mut Map<String, Value>) -> Result<(), String> {
    for (key, v) in props.iter_mut() {
        let p = v
            .as_object_mut()
            .ok_or_else(|| format!("parameter `{key}` is not a mapping"))?;
        let t = match p.get("type").cloned() {
            None => "string".to_string(),
            Some(Value::String(t)) => {
                if t == "float" {
                    p.insert("format".into(), json!("float"));
                    let d = p.get("description").and_then(Value::as_str).unwrap_or("");
                    let d = format!("{d} This is a float type value.");
                    p.insert("description".into(), json!(d));
                }
                openapi_type(&t).unwrap_or("string").to_string()
            }
            Some(_) => return Err(format!("parameter `{key}` has a type that is not a name")),
        };
        p.insert("type".into(), json!(t));
        if t == "array" || t == "object" {
            if let Some(Value::Object(inner)) = p.get_mut("properties") {
                cast(inner)?;
            } else if let Some(items) = p.get_mut("items").and_then(Value::as_object_mut) {
                let it = items.get("type").and_then(Value::as_str).unwrap_or("");
                let mapped = openapi_type(it)
                    .ok_or_else(|| format!("parameter `{key}`: items of unknown type `{it}`"))?;
                items.insert("type".into(), json!(mapped));
                if mapped == "array" {
                    if let Some(deeper) = items.get_mut("items").and_then(Value::as_object_mut) {
                        let dt = deeper.get("type").and_then(Value::as_str).unwrap_or("");
                        let dm = openapi_type(dt).ok_or_else(|| {
                            format!("parameter `{key}`: items of unknown type `{dt}`")
                        })?;
                        deeper.insert("type".into(), json!(dm));
                    }
                } else if mapped == "object" {
                    if let Some(Value::Object(inner)) = items.get_mut("properties") {
                        cast(inner)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The query text and the instructions of a single-turn question: system messages
/// become instructions; one user message is the text; a longer conversation is kept
/// as `role: content` paragraphs.
fn question(q: &Value) -> Result<(String, Option<String>), String> {
    let turns = q
        .get("question")
        .and_then(Value::as_array)
        .ok_or("the entry has no question")?;
    if turns.len() != 1 {
        return Err(format!(
            "a question of {} turns (only single-turn entries convert)",
            turns.len()
        ));
    }
    let messages = turns[0]
        .as_array()
        .ok_or("the question is not a list of messages")?;
    let mut system = Vec::new();
    let mut rest = Vec::new();
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        let content = m.get("content").and_then(Value::as_str).unwrap_or("");
        if role == "system" {
            system.push(content.to_string());
        } else {
            rest.push((role.to_string(), content.to_string()));
        }
    }
    let text = match rest.as_slice() {
        [] => return Err("the question has no user message".into()),
        [(_, c)] => c.clone(),
        many => many
            .iter()
            .map(|(r, c)| format!("{r}: {c}"))
            .collect::<Vec<_>>()
            .join("\n\n"),
    };
    if text.trim().is_empty() {
        return Err("the question is empty".into());
    }
    let instructions = (!system.is_empty())
        .then(|| system.join("\n\n"))
        .filter(|s| !s.trim().is_empty());
    Ok((text, instructions))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_map_as_bfcl_maps_them_for_function_calling() {
        let f = json!({"name": "math.area", "description": "Area.", "parameters": {
            "type": "dict", "properties": {
                "r": {"type": "float", "description": "Radius."},
                "pt": {"type": "tuple", "items": {"type": "integer"}, "description": "A point."},
                "o": {"type": "dict", "properties": {"k": {"type": "any", "description": ""}}},
                "x": {"type": "any", "description": "Anything."},
                "ls": {"type": "array", "items": {"type": "dict", "properties": {"a": {"type": "float", "description": "A."}}}}
            }, "required": ["r"]}});
        let (tool, schema) = tool(&f).unwrap();
        assert_eq!(tool["name"], "math.area");
        assert_eq!(tool["description"], format!("Area.{PYTHON_HINT}"));
        assert_eq!(schema["type"], "object");
        let p = &schema["properties"];
        assert_eq!(
            p["r"],
            json!({"type": "number", "format": "float", "description": "Radius. This is a float type value."})
        );
        assert_eq!(p["pt"]["type"], "array");
        assert_eq!(p["pt"]["items"]["type"], "integer");
        assert_eq!(p["o"]["type"], "object");
        assert_eq!(p["o"]["properties"]["k"]["type"], "string");
        assert_eq!(p["x"]["type"], "string");
        assert_eq!(p["ls"]["items"]["type"], "object");
        assert_eq!(p["ls"]["items"]["properties"]["a"]["type"], "number");
        assert_eq!(schema["required"], json!(["r"]));
    }

    #[test]
    fn unsatisfiable_answers_are_named() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "unit": {"type": "string"}}, "required": ["n"]});
        let acc = |pairs: &[(&str, Value)]| -> BTreeMap<String, Vec<Value>> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_array().unwrap().clone()))
                .collect()
        };
        assert_eq!(
            bfcl_example_call(
                &schema,
                &acc(&[("n", json!([5])), ("unit", json!(["cm", ""]))])
            )
            .unwrap(),
            json!({"n": 5, "unit": "cm"})
        );
        // A required parameter the answer does not name: giving it is "unexpected",
        // leaving it out is "missing".
        assert!(bfcl_example_call(&schema, &acc(&[("unit", json!(["cm"]))])).is_err());
        // A required integer that may only be left out.
        let e = bfcl_example_call(&schema, &acc(&[("n", json!([""]))])).unwrap_err();
        assert!(e.contains("`n`"), "{e}");
    }
}
