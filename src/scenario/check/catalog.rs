//! The catalog's checks: duplicate and empty names and where each item came from,
//! JSON Schemas, reserved tool names, fixture responses and tool documentation.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::args::schema_errors;
use crate::catalog::{Address, Catalog, FixtureResponse, RESERVED_TOOL_NAMES};
use crate::scenario::raw::{RawResponse, RawToolDocs};

use super::checker::{Checker, Kind2};

impl Checker {
    pub(crate) fn origin(&mut self, kind: Kind2, name: &str, file: &Path, path: &str) {
        let path = path.trim_start_matches('.').to_string();
        if name.trim().is_empty() {
            return self.err(file, &format!("{path}.name"), "must not be empty");
        }
        if let Some((f0, p0)) = self.origins.get(&(kind, name.to_string())).cloned() {
            let what = match kind {
                Kind2::Skill => "skill",
                Kind2::Connector => "connector",
                Kind2::Database => "database",
                Kind2::Mcp => "MCP server",
                Kind2::Builtin => "builtin",
            };
            let needle = format!("name: {name}");
            let nth = if f0 == file { 2 } else { 1 };
            self.err_at(
                file,
                &format!("{path}.name"),
                &needle,
                nth,
                format!(
                    "duplicate {what} name `{name}` (first defined at {}: {p0})",
                    f0.display()
                ),
            );
        } else {
            self.origins
                .insert((kind, name.to_string()), (file.to_path_buf(), path));
        }
    }

    pub(crate) fn dupes<'a>(
        &mut self,
        file: &Path,
        path: &str,
        names: impl Iterator<Item = &'a str>,
        what: &str,
    ) {
        let path = path.trim_start_matches('.');
        let mut seen = HashSet::new();
        for (i, n) in names.enumerate() {
            if n.trim().is_empty() {
                self.err(file, &format!("{path}[{i}].name"), "must not be empty");
            } else if !seen.insert(n) {
                self.err_at(
                    file,
                    &format!("{path}[{i}].name"),
                    &format!("name: {n}"),
                    2,
                    format!("duplicate {what} name `{n}`"),
                );
            }
        }
    }

    pub(crate) fn check_schema(&mut self, file: &Path, path: &str, schema: &Value) {
        let path = path.trim_start_matches('.');
        if let Err(e) = jsonschema::meta::validate(schema) {
            return self.err(
                file,
                path,
                format!("not a valid JSON Schema: {e} (at {})", e.instance_path()),
            );
        }
        if let Err(e) = jsonschema::validator_for(schema) {
            return self.err(file, path, format!("not a usable JSON Schema: {e}"));
        }
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            self.err(
                file,
                path,
                "a parameter schema must have `type: object` at the top",
            );
        }
        if file.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            let mut found = Vec::new();
            keys_without_value(schema, "", false, &mut found);
            for (key, at) in found {
                self.err(
                    file,
                    path,
                    format!(
                        "`{key}` at {at} has no value: a text in a YAML flow mapping ends at \
                         its first comma, and the rest becomes keys; quote the text (\"...\")"
                    ),
                );
            }
        }
    }

    /// Checks that need the whole catalog: legacy tool-name collisions and reserved
    /// names; and the fixture `responses`, whose addresses may name tools of any
    /// included file.
    pub(crate) fn check_catalog(
        &mut self,
        file: &Path,
        cat: &mut Catalog,
        responses: Vec<(PathBuf, String, RawResponse)>,
        docs: Vec<(PathBuf, String, String, RawToolDocs)>,
    ) {
        for (f, p, address, d) in docs {
            self.tool_docs(&f, &p, &address, d, cat);
        }
        for message in cat.tool_name_clashes(&RESERVED_TOOL_NAMES) {
            self.err(file, "catalog", message);
        }
        for (f, p, r) in responses {
            let Some(address) = self.address(&f, &format!("{p}.address"), &r.address, cat) else {
                continue;
            };
            if matches!(address, Address::Skill(_) | Address::Database(_)) {
                self.err(
                    &f,
                    &format!("{p}.address"),
                    "skills and database queries answer from their content and SQL, not from responses",
                );
                continue;
            }
            if r.any_args && r.when.is_some() {
                self.err(
                    &f,
                    &format!("{p}.any_args"),
                    "`any_args` marks a default answer (an entry without `when`) as right for any arguments; an entry with `when` answers only the calls it matches",
                );
                continue;
            }
            let when = match r.when {
                None => BTreeMap::new(),
                Some(w) => {
                    let w: serde_json::Map<String, Value> = w.into_iter().collect();
                    match self.accepted_args(&f, &format!("{p}.when"), &address, &w, cat) {
                        Some(w) => w,
                        None => continue,
                    }
                }
            };
            cat.responses.push(FixtureResponse {
                address,
                when,
                response: r.response,
                any_args: r.any_args,
            });
        }
    }

    /// Applies one tool's documentation, checking its shape: `examples` a list of
    /// objects whose `input` validates against the tool's input schema (and whose
    /// `description` and `explanation`, if any, are text); `usage_guidance` and
    /// `error_guidance` objects. A tool is documented once.
    fn tool_docs(&mut self, f: &Path, p: &str, address: &str, d: RawToolDocs, cat: &mut Catalog) {
        let at = |k: &str| format!("{p}.{k}");
        let Some(addr) = self.address(f, &format!("{p}.address"), address, cat) else {
            return;
        };
        let Address::Mcp(server, tool) = &addr else {
            return self.err(
                f,
                &format!("{p}.address"),
                "docs are for MCP tools (the mcp-resource strategy serves them)",
            );
        };
        let schema = cat.schema_of(&addr).unwrap_or(Value::Null);
        let mut ok = true;
        if let Some(ex) = &d.examples {
            match ex.as_array() {
                None => {
                    self.err(f, &at("examples"), "examples is a list");
                    ok = false;
                }
                Some(list) => {
                    for (i, e) in list.iter().enumerate() {
                        let ep = format!("{}[{i}]", at("examples"));
                        let Some(o) = e.as_object() else {
                            self.err(f, &ep, "an example is {description, input, explanation}");
                            ok = false;
                            continue;
                        };
                        if let Some(k) = o.keys().find(|k| {
                            !matches!(k.as_str(), "description" | "input" | "explanation")
                        }) {
                            self.err(
                                f,
                                &format!("{ep}.{k}"),
                                "unknown field; an example has description, input and explanation",
                            );
                            ok = false;
                        }
                        for k in ["description", "explanation"] {
                            if o.get(k).is_some_and(|v| !v.is_string()) {
                                self.err(f, &format!("{ep}.{k}"), "must be text");
                                ok = false;
                            }
                        }
                        match o.get("input") {
                            Some(input @ Value::Object(_)) => {
                                let errors = schema_errors(&schema, input);
                                if !errors.is_empty() {
                                    self.err(
                                        f,
                                        &format!("{ep}.input"),
                                        format!(
                                            "does not validate against `{addr}`'s input schema: {}",
                                            errors.join("; ")
                                        ),
                                    );
                                    ok = false;
                                }
                            }
                            _ => {
                                self.err(
                                    f,
                                    &format!("{ep}.input"),
                                    "an example needs an `input` object",
                                );
                                ok = false;
                            }
                        }
                    }
                }
            }
        }
        for (k, v) in [
            ("usage_guidance", &d.usage_guidance),
            ("error_guidance", &d.error_guidance),
        ] {
            if v.as_ref().is_some_and(|v| !v.is_object()) {
                self.err(f, &at(k), format!("{k} is a mapping"));
                ok = false;
            }
        }
        if !ok {
            return;
        }
        let Some(t) = cat
            .mcp_servers
            .iter_mut()
            .find(|s| &s.name == server)
            .and_then(|s| s.tools.iter_mut().find(|t| &t.name == tool))
        else {
            return;
        };
        if !t.docs.is_empty() {
            return self.err(f, p, format!("`{addr}` is documented twice"));
        }
        t.docs = crate::catalog::ToolDocs {
            examples: d.examples,
            usage_guidance: d.usage_guidance,
            error_guidance: d.error_guidance,
        };
    }
}

/// The keys of a schema that hold no value where JSON Schema wants one, with the JSON
/// pointer of the schema that holds each. In YAML, a text written plainly inside a flow
/// mapping ends at its first comma: `{type: boolean, description: If true, it ends}`
/// gives the description "If true" and a key `it ends` with no value, which every mode
/// would then render and count. `default` and `const` may be null, and what `default`,
/// `const`, `enum` and `examples` hold is data, not schema, so it is not looked into.
/// `names` is set for a map of names to schemas (`properties`, `$defs`, ...), whose keys
/// are names, not keywords.
fn keys_without_value(schema: &Value, at: &str, names: bool, found: &mut Vec<(String, String)>) {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                if names {
                    keys_without_value(v, &here, false, found);
                    continue;
                }
                if matches!(k.as_str(), "default" | "const" | "enum" | "examples") {
                    continue;
                }
                if v.is_null() {
                    let at = if at.is_empty() { "/" } else { at };
                    found.push((k.clone(), at.to_string()));
                }
                let map = matches!(
                    k.as_str(),
                    "properties"
                        | "patternProperties"
                        | "$defs"
                        | "definitions"
                        | "dependentSchemas"
                );
                keys_without_value(v, &here, map, found);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                keys_without_value(v, &format!("{at}/{i}"), false, found);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::keys_without_value;
    use serde_json::json;

    fn found(schema: serde_json::Value) -> Vec<(String, String)> {
        let mut f = Vec::new();
        keys_without_value(&schema, "", false, &mut f);
        f
    }

    #[test]
    fn keys_a_comma_split_off_are_found_and_data_is_not_looked_into() {
        // What `{type: boolean, description: If true, it ends}` parses to.
        let split = json!({"type": "object", "properties": {
            "end": {"type": "boolean", "description": "If true", "it ends": null},
            // A property may be named like a keyword; its schema is still a schema.
            "default": {"type": "array", "items": {"type": "string", "description": "A", "b": null}},
        }});
        assert_eq!(
            found(split),
            [
                ("it ends".to_string(), "/properties/end".to_string()),
                ("b".to_string(), "/properties/default/items".to_string()),
            ]
        );
        // null is a value `default` and `const` may take, and what `default`, `const`,
        // `enum` and `examples` hold is data.
        let data = json!({"type": "object", "properties": {
            "a": {"type": ["string", "null"], "default": null},
            "b": {"const": null},
            "c": {"enum": ["x", null], "examples": [{"k": null}]},
            "d": {"type": "object", "default": {"k": null}},
        }});
        assert!(found(data).is_empty());
    }
}
