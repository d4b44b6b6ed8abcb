//! Code mode's catalog as an API (shared by `code-mode` and `code-files`): every
//! connector action, database query, MCP tool and built-in of the kinds a mode puts
//! behind code becomes a function `api.<group>.<function>(args)`, declared in
//! TypeScript from its JSON Schema (its description and its parameters' as doc
//! comments), grouped by connector, database, MCP server (and `builtins`). The
//! declarations are made once per catalog × mode.
//!
//! A program runs in [`crate::sandbox`]: each function it calls is an executed call on
//! its address — arguments validated against the tool's schema, answered from the
//! scenario's fixture responses and SQLite as any call is — so the scorer judges a
//! program's calls as it judges any episode's. What the program printed (and its
//! value, or its error) is the tool result the model reads.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::catalog::{query_schema, Address, Catalog, Kind};
use crate::sandbox::{self, Limits};
use crate::strategy::execute::execute;
use crate::strategy::protocol::{Effect, Env, EventKind, ProgramCall, Resolution, State};

/// The tool that runs a program.
pub const RUN_CODE: &str = "run_code";

/// A program run: an event, not an error.
pub const PROGRAMS: EventKind = EventKind {
    name: "programs",
    error: false,
    doc: "programs run (code mode)",
};
/// A program that ended with an error (it threw, ran past a limit, called a function
/// the API does not have): a protocol error.
pub const CODE_ERRORS: EventKind = EventKind {
    name: "code_errors",
    error: true,
    doc: "programs that ended with an error (code mode)",
};

/// One function of the API.
#[derive(Debug, Clone)]
pub struct Function {
    pub group: String,
    pub name: String,
    pub address: Address,
    pub description: String,
    pub schema: Value,
    /// Its declaration, inside its group's namespace.
    pub declaration: String,
}

/// The catalog as an API.
#[derive(Debug, Clone)]
pub struct CodeApi {
    pub functions: Vec<Function>,
    /// Each group's description (the connector's, database's or server's).
    pub groups: BTreeMap<String, String>,
    pub limits: Limits,
}

/// A JavaScript identifier for `name` (other characters become `_`), unique among
/// `taken`.
fn ident(name: &str, taken: &[String]) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    let mut out = s.clone();
    let mut n = 2;
    while taken.contains(&out) {
        out = format!("{s}_{n}");
        n += 1;
    }
    out
}

impl CodeApi {
    /// The API over the `kinds` of `catalog` (connectors, databases, MCP), with the
    /// built-ins when `builtins`.
    pub fn new(catalog: &Catalog, kinds: &[Kind], builtins: bool, limits: Limits) -> CodeApi {
        let mut functions = Vec::new();
        let mut groups: BTreeMap<String, String> = BTreeMap::new();
        let add_group = |name: &str, description: &str, groups: &mut BTreeMap<String, String>| {
            let taken: Vec<String> = groups.keys().cloned().collect();
            let g = ident(name, &taken);
            groups.insert(g.clone(), description.to_string());
            g
        };
        let push = |group: &str,
                    name: &str,
                    address: Address,
                    description: &str,
                    schema: Value,
                    out: &mut Vec<Function>| {
            let taken: Vec<String> = out
                .iter()
                .filter(|f| f.group == group)
                .map(|f| f.name.clone())
                .collect();
            let name = ident(name, &taken);
            let declaration = declare(group, &name, description, &schema);
            out.push(Function {
                group: group.to_string(),
                name,
                address,
                description: description.to_string(),
                schema,
                declaration,
            });
        };
        if kinds.contains(&Kind::Connectors) {
            for c in &catalog.connectors {
                let g = add_group(&c.name, &c.description, &mut groups);
                for a in &c.actions {
                    let address = Address::Connector(c.name.clone(), a.name.clone());
                    push(
                        &g,
                        &a.name,
                        address,
                        &a.description,
                        a.parameters.clone(),
                        &mut functions,
                    );
                }
            }
        }
        if kinds.contains(&Kind::Databases) {
            for d in &catalog.databases {
                let g = add_group(&d.name, &d.description, &mut groups);
                let tables: Vec<String> = d
                    .tables
                    .iter()
                    .map(|t| {
                        let cols: Vec<String> = t
                            .columns
                            .iter()
                            .map(|c| format!("{} {}", c.name, c.ty))
                            .collect();
                        format!("{}({})", t.name, cols.join(", "))
                    })
                    .collect();
                let description = format!(
                    "Runs one read-only SQL query (SQLite) on the {} database and returns its rows. Tables: {}",
                    d.name,
                    tables.join("; ")
                );
                push(
                    &g,
                    "query",
                    Address::Database(d.name.clone()),
                    &description,
                    query_schema(),
                    &mut functions,
                );
            }
        }
        if kinds.contains(&Kind::Mcp) {
            for s in &catalog.mcp_servers {
                let g = add_group(&s.name, &s.description, &mut groups);
                for t in &s.tools {
                    let address = Address::Mcp(s.name.clone(), t.name.clone());
                    push(
                        &g,
                        &t.name,
                        address,
                        &t.description,
                        (*t.input_schema).clone(),
                        &mut functions,
                    );
                }
            }
        }
        if builtins && !catalog.builtins.is_empty() {
            let g = add_group("builtins", "Built-in tools of the assistant.", &mut groups);
            for b in &catalog.builtins {
                let address = Address::Builtin(b.name.clone());
                push(
                    &g,
                    &b.name,
                    address,
                    &b.description,
                    b.parameters.clone(),
                    &mut functions,
                );
            }
        }
        CodeApi {
            functions,
            groups,
            limits,
        }
    }

    pub fn owns(&self, address: &Address) -> bool {
        self.functions.iter().any(|f| &f.address == address)
    }

    /// The index of the function that calls `address`.
    pub fn index_of(&self, address: &Address) -> Option<usize> {
        self.functions.iter().position(|f| &f.address == address)
    }

    /// The oracle's call once the declaration of `address` is shown: `run_code` with a
    /// program of that one call.
    pub fn run_call(&self, address: &Address, args: &Value) -> (String, Value) {
        let code = self.program(&[(address.clone(), args.clone())], &[], "");
        (RUN_CODE.into(), json!({ "code": code }))
    }

    pub fn function_of(&self, address: &Address) -> Option<&Function> {
        self.functions.iter().find(|f| &f.address == address)
    }

    fn function(&self, group: &str, name: &str) -> Option<&Function> {
        self.functions
            .iter()
            .find(|f| f.group == group && f.name == name)
    }

    /// The functions of a group.
    pub fn in_group<'a>(&'a self, group: &'a str) -> impl Iterator<Item = &'a Function> + 'a {
        self.functions.iter().filter(move |f| f.group == group)
    }

    /// The names the sandbox's `api` object holds.
    pub fn shape(&self) -> sandbox::Api {
        let mut api = sandbox::Api::new();
        for f in &self.functions {
            api.entry(f.group.clone()).or_default().push(f.name.clone());
        }
        api
    }

    /// The declarations of `functions` (indices), grouped by namespace in the order
    /// given, with where each ends (for a result cut by the budget).
    pub fn declarations(&self, functions: &[usize]) -> (String, Vec<usize>) {
        let mut out = String::new();
        let mut ends = Vec::new();
        for &i in functions {
            out.push_str(&self.functions[i].declaration);
            out.push('\n');
            ends.push(out.len());
        }
        (out, ends)
    }

    /// Runs a program; each API call it makes is an executed call on its address, in
    /// order. The answer is what the program printed and its value, or its error.
    pub fn run(&self, program: &str, state: &mut State, env: &Env) -> Resolution {
        let mut calls: Vec<ProgramCall> = Vec::new();
        let shape = self.shape();
        let run = sandbox::run(program, &shape, self.limits, &mut |c| {
            let f = self
                .function(&c.group, &c.function)
                .ok_or_else(|| format!("api.{}.{} does not exist", c.group, c.function))?;
            // No argument is no parameters (the prelude sends `{}`); anything but
            // one object is refused.
            let args = match &c.args {
                a @ Value::Object(_) => a.clone(),
                _ => {
                    return Err(format!(
                        "api.{}.{} takes one object of arguments ({{name: value, …}})",
                        c.group, c.function
                    ))
                }
            };
            let r = execute(f.address.clone(), &args, state, env);
            // A call the environment refused (arguments against the schema, SQL that
            // fails) throws; a fixture answer is returned whatever it holds.
            let failed = match &r.effect {
                Effect::Executed {
                    schema_errors,
                    sql_result,
                    ..
                } => !schema_errors.is_empty() || sql_result.as_ref().is_some_and(Result::is_err),
                _ => false,
            };
            calls.push(ProgramCall {
                function: format!("api.{}.{}", f.group, f.name),
                effect: r.effect,
            });
            let v: Value = serde_json::from_str(&r.content).unwrap_or(Value::String(r.content));
            match v.get("error").filter(|_| failed) {
                Some(e) => Err(e
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| e.to_string())),
                None => Ok(v),
            }
        });
        let mut content = run.printed.clone();
        if let Some(v) = &run.value {
            content.push_str(&format!("=> {v}\n"));
        }
        if let Some(e) = &run.error {
            content.push_str(&format!("code_error: {e}\n"));
        }
        if content.is_empty() {
            content = "(the program printed nothing and returned nothing)\n".into();
        }
        Resolution {
            content,
            effect: Effect::Program {
                calls,
                error: run.error,
            },
        }
    }

    /// A program making `calls` in order: each result kept as `r0`, `r1`, …, an
    /// argument taken from an earlier result where that result holds it (and the query
    /// does not), so that an id one call returns is what the next one uses. `results`
    /// are what each call would return; `query` is the user's text.
    pub fn program(&self, calls: &[(Address, Value)], results: &[Value], query: &str) -> String {
        let mut lines = Vec::new();
        for (k, (address, args)) in calls.iter().enumerate() {
            let Some(f) = self.function_of(address) else {
                continue;
            };
            let mut a = Map::new();
            let mut exprs: Vec<(String, String)> = Vec::new();
            if let Value::Object(o) = args {
                for (key, v) in o {
                    let from = (0..k).find_map(|j| {
                        let flows = match v {
                            Value::String(s) => s.len() >= 3 && !query.contains(s.as_str()),
                            Value::Number(_) => !query.contains(&v.to_string()),
                            _ => false,
                        };
                        if !flows {
                            return None;
                        }
                        path_to(results.get(j)?, v).map(|p| format!("r{j}{p}"))
                    });
                    match from {
                        Some(expr) => exprs.push((key.clone(), expr)),
                        None => {
                            a.insert(key.clone(), v.clone());
                        }
                    }
                }
            }
            let mut obj = Value::Object(a).to_string();
            if !exprs.is_empty() {
                let extra: Vec<String> = exprs
                    .iter()
                    .map(|(k, e)| format!("{}: {e}", serde_json::to_string(k).expect("a key")))
                    .collect();
                obj = if obj == "{}" {
                    format!("{{{}}}", extra.join(", "))
                } else {
                    format!("{}, {}}}", &obj[..obj.len() - 1], extra.join(", "))
                };
            }
            lines.push(format!("const r{k} = api.{}.{}({obj});", f.group, f.name));
            lines.push(format!("console.log(JSON.stringify(r{k}));"));
        }
        lines.join("\n")
    }
}

/// Where `v` sits in `result`, as a JavaScript accessor (`["items"][0]["id"]`), for a
/// leaf equal to it.
fn path_to(result: &Value, v: &Value) -> Option<String> {
    match result {
        x if x == v => Some(String::new()),
        Value::Object(o) => o.iter().find_map(|(k, x)| {
            path_to(x, v).map(|p| format!("[{}]{p}", serde_json::to_string(k).expect("a key")))
        }),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| path_to(x, v).map(|p| format!("[{i}]{p}"))),
        _ => None,
    }
}

/// A declaration: the description as a doc comment, the parameters as one typed
/// argument object (each parameter's description on its line).
fn declare(group: &str, name: &str, description: &str, schema: &Value) -> String {
    let doc = |s: &str, indent: &str| -> String {
        let s = s.replace("*/", "* /");
        let lines: Vec<String> = s
            .lines()
            .map(|l| format!("{indent} * {}", l.trim_end()))
            .collect();
        format!("{indent}/**\n{}\n{indent} */\n", lines.join("\n"))
    };
    let mut out = format!("declare namespace api.{group} {{\n");
    if !description.trim().is_empty() {
        out.push_str(&doc(description.trim(), "  "));
    }
    out.push_str(&format!(
        "  function {name}(args: {}): unknown;\n}}",
        ts_type(schema, 1)
    ));
    out
}

/// A TypeScript type for a JSON Schema (object parameters spelled out to three levels,
/// their descriptions as comments).
pub fn ts_type(schema: &Value, depth: usize) -> String {
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        return e
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    if let Some(c) = schema.get("const") {
        return c.to_string();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = schema.get(key).and_then(Value::as_array) {
            let ts: Vec<String> = alts.iter().map(|a| ts_type(a, depth)).collect();
            return ts.join(" | ");
        }
    }
    let one = |t: &str| -> String {
        match t {
            "string" => "string".into(),
            "integer" | "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = schema
                    .get("items")
                    .map(|i| ts_type(i, depth + 1))
                    .unwrap_or_else(|| "unknown".into());
                if item.contains(' ') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            "object" => object_type(schema, depth),
            _ => "unknown".into(),
        }
    };
    match schema.get("type") {
        Some(Value::String(t)) => one(t),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(one)
            .collect::<Vec<_>>()
            .join(" | "),
        _ if schema.get("properties").is_some() => object_type(schema, depth),
        _ => "unknown".into(),
    }
}

/// The JSON Schema keywords a declaration states in a parameter's comment: the checks a
/// call's arguments are validated against that its TypeScript type does not carry.
const CHECKS: [&str; 12] = [
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "default",
];

fn object_type(schema: &Value, depth: usize) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "Record<string, unknown>".into();
    };
    if props.is_empty() {
        return "{}".into();
    }
    if depth > 3 {
        return "Record<string, unknown>".into();
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let pad = "  ".repeat(depth + 1);
    let mut out = String::from("{\n");
    for (k, p) in props {
        let mut d = p
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .replace('\n', " ")
            .trim()
            .to_string();
        // What the schema checks that a TypeScript type cannot say.
        let checks: Vec<String> = CHECKS
            .iter()
            .filter_map(|k| p.get(*k).map(|v| format!("{k}: {v}")))
            .collect();
        if !checks.is_empty() {
            if !d.is_empty() {
                d.push(' ');
            }
            d.push_str(&format!("({})", checks.join("; ")));
        }
        if !d.is_empty() {
            out.push_str(&format!("{pad}/** {} */\n", d.replace("*/", "* /")));
        }
        let key = if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with(|c: char| c.is_ascii_digit())
        {
            k.clone()
        } else {
            serde_json::to_string(k).expect("a key")
        };
        let opt = if required.contains(&k.as_str()) {
            ""
        } else {
            "?"
        };
        out.push_str(&format!("{pad}{key}{opt}: {};\n", ts_type(p, depth + 1)));
    }
    out.push_str(&"  ".repeat(depth));
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_become_typescript() {
        let s = json!({"type": "object", "properties": {
            "id": {"type": "string", "description": "The order id."},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "when": {"type": ["string", "null"]},
            "weird-key": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}
        }, "required": ["id"]});
        let t = ts_type(&s, 1);
        assert!(t.contains("/** The order id. */\n    id: string;"), "{t}");
        assert!(t.contains("n?: number;"));
        let k = ts_type(
            &json!({"type": "object", "properties": {"key": {"type": "string", "pattern": "^[A-Z]+$"}}}),
            1,
        );
        assert!(
            k.contains("/** (pattern: \"^[A-Z]+$\") */\n    key?: string;"),
            "{k}"
        );
        assert!(t.contains("tags?: (\"a\" | \"b\")[];"));
        assert!(t.contains("when?: string | null;"));
        assert!(
            t.contains("\"weird-key\"?: {\n      x: boolean;\n    };"),
            "{t}"
        );
        let d = declare(
            "erp",
            "get_order",
            "Fetch one order.\nIds are numeric */ strings.",
            &s,
        );
        assert!(
            d.starts_with("declare namespace api.erp {\n  /**\n   * Fetch one order.\n"),
            "{d}"
        );
        assert!(
            d.contains("* / strings"),
            "a description cannot close the comment"
        );
        assert!(d.contains("  function get_order(args: {"));
        assert_eq!(ident("API-post-search", &[]), "API_post_search");
        assert_eq!(ident("9lives", &[]), "_9lives");
        assert_eq!(ident("a-b", &["a_b".to_string()]), "a_b_2");
    }

    #[test]
    fn values_flow_from_earlier_results() {
        let r0 = json!({"incidents": [{"id": "Q1", "n": 4815}, {"id": "Q9KD3", "n": 4816}]});
        assert_eq!(
            path_to(&r0, &json!("Q9KD3")).as_deref(),
            Some("[\"incidents\"][1][\"id\"]")
        );
        assert_eq!(path_to(&r0, &json!("nope")), None);
    }
}
