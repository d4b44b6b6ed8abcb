//! Validation: everything a loaded scenario is checked for — duplicate and empty
//! names, JSON Schemas, reserved tool names, fixture responses, expectations (steps,
//! alternatives, arguments, `before`, `allow`, `forbid`) against the catalog, and
//! reference SQL run on the seeded databases. Every problem becomes an [`InputError`]
//! naming the file, the line where it can be found, and the field path.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::expect::{Allowed, Compare, Expect, ExpectedCall, Step};
use super::raw::{RawQuery, RawResponse, RawToolDocs};
use super::types::Query;
use crate::args::schema_errors;
use crate::catalog::{Address, Catalog, FixtureResponse, Resource, RESERVED_TOOL_NAMES};
use crate::environment::Databases;
use crate::error::{InputError, InputErrors};

/// The problems found so far, with what is needed to place them: the source texts
/// (for line numbers) and where each catalog item was defined.
#[derive(Default)]
pub(super) struct Checker {
    pub errors: Vec<InputError>,
    /// Source texts, to find the line of a value after parsing.
    pub texts: HashMap<PathBuf, String>,
    /// Where each catalog item came from, for error messages.
    pub origins: HashMap<(Kind2, String), (PathBuf, String)>,
}

/// Item kinds for origin tracking and duplicate checks.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind2 {
    Skill,
    Connector,
    Database,
    Mcp,
    Builtin,
}

impl Checker {
    pub(super) fn err(&mut self, file: &Path, path: &str, msg: impl Into<String>) {
        self.errors.push(InputError::new(file, path, msg));
    }

    /// An error whose line is found by searching for `needle` in the file: given only
    /// when the needle occurs exactly `nth` times or more and the `nth` one is meant.
    pub(super) fn err_at(
        &mut self,
        file: &Path,
        path: &str,
        needle: &str,
        nth: usize,
        msg: impl Into<String>,
    ) {
        let line = self.texts.get(file).and_then(|t| find_line(t, needle, nth));
        self.errors
            .push(InputError::new(file, path, msg).at_line(line));
    }

    pub(super) fn finish<T>(self, ok: T) -> Result<T, InputErrors> {
        if self.errors.is_empty() {
            Ok(ok)
        } else {
            Err(InputErrors(self.errors))
        }
    }

    pub(super) fn origin(&mut self, kind: Kind2, name: &str, file: &Path, path: &str) {
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

    pub(super) fn dupes<'a>(
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

    pub(super) fn check_schema(&mut self, file: &Path, path: &str, schema: &Value) {
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
    }

    /// Checks that need the whole catalog: legacy tool-name collisions and reserved
    /// names; and the fixture `responses`, whose addresses may name tools of any
    /// included file.
    pub(super) fn check_catalog(
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

    pub(super) fn queries(&mut self, file: &Path, raw: Vec<RawQuery>, cat: &Catalog) -> Vec<Query> {
        let mut ids = HashSet::new();
        let mut out = Vec::new();
        for (i, q) in raw.into_iter().enumerate() {
            let p = format!("queries[{i}]");
            if q.id.trim().is_empty() {
                self.err(file, &format!("{p}.id"), "must not be empty");
            } else if !ids.insert(q.id.clone()) {
                self.err_at(
                    file,
                    &format!("{p}.id"),
                    &format!("id: {}", q.id),
                    2,
                    format!("duplicate query id `{}`", q.id),
                );
            }
            if q.text.trim().is_empty() {
                self.err(file, &format!("{p}.text"), "must not be empty");
            }
            let e = q.expect;
            let ep = format!("{p}.expect");
            let mut steps: Vec<Step> = Vec::new();
            for (j, c) in e.calls.iter().enumerate() {
                if let Some(step) = self.step(file, &format!("{ep}.calls[{j}]"), c, cat) {
                    steps.push(step);
                }
            }
            let mut ids: HashMap<String, usize> = HashMap::new();
            for (j, st) in steps.iter().enumerate() {
                if let Some(id) = &st.id {
                    if ids.insert(id.clone(), j).is_some() {
                        self.err(
                            file,
                            &format!("{ep}.calls"),
                            format!("two steps have the id `{id}`"),
                        );
                    }
                }
            }
            let mut before = Vec::new();
            for (j, pair) in e.before.iter().enumerate() {
                let at = format!("{ep}.before[{j}]");
                let [a, b] = pair.as_slice() else {
                    self.err(file, &at, "a `before` entry is a pair of step ids: [a, b]");
                    continue;
                };
                match (ids.get(a), ids.get(b)) {
                    (Some(ia), Some(ib)) if ia < ib => before.push((a.clone(), b.clone())),
                    (Some(_), Some(_)) => self.err(
                        file,
                        &at,
                        format!("list step `{a}` before step `{b}`: steps are listed in an order that honours `before`"),
                    ),
                    _ => {
                        let missing = if ids.contains_key(a) { b } else { a };
                        self.err(file, &at, format!("no step has the id `{missing}`"));
                    }
                }
            }
            let mut allow = Vec::new();
            for (j, v) in e.allow.iter().enumerate() {
                let at = format!("{ep}.allow[{j}]");
                match v {
                    Value::String(s) => {
                        if let Some(address) = self.address(file, &at, s, cat) {
                            allow.push(Allowed {
                                address,
                                args: BTreeMap::new(),
                            });
                        }
                    }
                    Value::Object(o) => {
                        if let Some(k) =
                            o.keys().find(|k| !matches!(k.as_str(), "address" | "args"))
                        {
                            self.err(
                                file,
                                &format!("{at}.{k}"),
                                "unknown field; an allowed call has address and args",
                            );
                            continue;
                        }
                        let Some(s) = o.get("address").and_then(Value::as_str) else {
                            self.err(file, &at, "an allowed call needs `address`");
                            continue;
                        };
                        let Some(address) = self.address(file, &format!("{at}.address"), s, cat)
                        else {
                            continue;
                        };
                        let args = match o.get("args") {
                            None | Some(Value::Null) => BTreeMap::new(),
                            Some(Value::Object(m)) => {
                                match self.accepted_args(
                                    file,
                                    &format!("{at}.args"),
                                    &address,
                                    m,
                                    cat,
                                ) {
                                    Some(a) => a,
                                    None => continue,
                                }
                            }
                            Some(_) => {
                                self.err(
                                    file,
                                    &format!("{at}.args"),
                                    "args maps each parameter to its accepted values",
                                );
                                continue;
                            }
                        };
                        allow.push(Allowed { address, args });
                    }
                    _ => self.err(
                        file,
                        &at,
                        "an allowed call is an address string or {address, args}",
                    ),
                }
            }
            let mut forbid = Vec::new();
            for (j, f) in e.forbid.iter().enumerate() {
                if let Some(a) = self.address(file, &format!("{ep}.forbid[{j}]"), f, cat) {
                    if steps.iter().any(|st| st.admits(&a)) {
                        self.err(
                            file,
                            &format!("{ep}.forbid[{j}]"),
                            format!("`{a}` is both expected and forbidden"),
                        );
                    }
                    if allow.iter().any(|al| al.address == a) {
                        self.err(
                            file,
                            &format!("{ep}.forbid[{j}]"),
                            format!("`{a}` is both allowed and forbidden"),
                        );
                    }
                    forbid.push(a);
                }
            }
            let mut scope: Vec<Resource> = Vec::new();
            for (j, s) in q.scope.iter().flatten().enumerate() {
                let at = format!("{p}.scope[{j}]");
                match s.parse::<Resource>() {
                    Err(e) => self.err_at(file, &at, s, 1, e),
                    Ok(r) if !cat.has_resource(&r) => {
                        self.err_at(file, &at, s, 1, format!("`{r}` is not in the catalog"))
                    }
                    Ok(r) if scope.contains(&r) => {
                        self.err(file, &at, format!("`{r}` is named twice"))
                    }
                    Ok(r) => scope.push(r),
                }
            }
            if q.scope.as_ref().is_some_and(Vec::is_empty) {
                self.err(
                    file,
                    &format!("{p}.scope"),
                    "an empty scope gives the agent nothing; leave it out for the whole catalog",
                );
            }
            if !scope.is_empty() {
                let outside = steps
                    .iter()
                    .flat_map(|s| s.alternatives.iter().map(|c| &c.address))
                    .chain(allow.iter().map(|a| &a.address))
                    .find(|a| !scope.contains(&a.resource()));
                if let Some(a) = outside {
                    let a = a.to_string();
                    self.err_at(
                        file,
                        &format!("{p}.scope"),
                        &a,
                        1,
                        format!("`{a}` is expected or allowed, but outside this query's scope"),
                    );
                }
            }
            if q.instructions.as_ref().is_some_and(|s| s.trim().is_empty()) {
                self.err(file, &format!("{p}.instructions"), "must not be empty");
            }
            out.push(Query {
                id: q.id,
                text: q.text,
                scope,
                instructions: q.instructions,
                catalog: None,
                expect: Expect {
                    calls: steps,
                    allow,
                    order: e.order,
                    before,
                    forbid,
                    exhaustive: e.exhaustive,
                },
                tags: q.tags,
            });
        }
        out
    }

    /// One required step: an address string, an expected call object, or
    /// `{id?, any_of: [...], count?}`.
    pub(super) fn step(
        &mut self,
        file: &Path,
        path: &str,
        v: &Value,
        cat: &Catalog,
    ) -> Option<Step> {
        let Value::Object(o) = v else {
            return self.expected_call(file, path, v, cat).map(Step::one);
        };
        let id = match o.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(_) => {
                self.err(
                    file,
                    &format!("{path}.id"),
                    "a step id is a non-empty string",
                );
                return None;
            }
        };
        let count = match o.get("count") {
            None | Some(Value::Null) => 1,
            Some(c) => match c.as_u64() {
                Some(n) if n >= 1 => n as usize,
                _ => {
                    self.err(
                        file,
                        &format!("{path}.count"),
                        "count is a whole number of at least 1",
                    );
                    return None;
                }
            },
        };
        let alternatives = if let Some(alts) = o.get("any_of") {
            if let Some(k) = o
                .keys()
                .find(|k| !matches!(k.as_str(), "id" | "any_of" | "count"))
            {
                self.err(
                    file,
                    &format!("{path}.{k}"),
                    "a step with any_of has id, any_of and count; put arguments on each alternative",
                );
                return None;
            }
            let Some(alts) = alts.as_array().filter(|a| !a.is_empty()) else {
                self.err(
                    file,
                    &format!("{path}.any_of"),
                    "any_of lists at least one call",
                );
                return None;
            };
            let mut v = Vec::new();
            for (k, a) in alts.iter().enumerate() {
                v.push(self.expected_call(file, &format!("{path}.any_of[{k}]"), a, cat)?);
            }
            v
        } else {
            let mut call = o.clone();
            call.remove("id");
            call.remove("count");
            vec![self.expected_call(file, path, &Value::Object(call), cat)?]
        };
        let skills = alternatives
            .iter()
            .filter(|c| matches!(c.address, Address::Skill(_)))
            .count();
        if skills > 0 && skills < alternatives.len() {
            self.err(file, path, "a step's alternatives are all skills or none");
            return None;
        }
        if skills > 0 && count > 1 {
            self.err(
                file,
                &format!("{path}.count"),
                "a skill is read once; count must be 1",
            );
            return None;
        }
        Some(Step {
            id,
            alternatives,
            count,
        })
    }

    /// `args`/`when`: each parameter of `address` mapped to its accepted values.
    pub(super) fn accepted_args(
        &mut self,
        file: &Path,
        path: &str,
        address: &Address,
        m: &serde_json::Map<String, Value>,
        cat: &Catalog,
    ) -> Option<BTreeMap<String, Vec<Value>>> {
        let schema = cat.schema_of(address);
        let props = schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object);
        let mut args = BTreeMap::new();
        let mut ok = true;
        for (k, val) in m {
            if !props.is_some_and(|p| p.contains_key(k)) {
                let known: Vec<&str> = props
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                self.err(
                    file,
                    &format!("{path}.{k}"),
                    format!(
                        "`{address}` has no parameter `{k}` (it has: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                );
                ok = false;
                continue;
            }
            let accepted = match val {
                Value::Array(a) if a.is_empty() => {
                    self.err(
                        file,
                        &format!("{path}.{k}"),
                        "the list of accepted values is empty",
                    );
                    ok = false;
                    continue;
                }
                Value::Array(a) => a.clone(),
                other => vec![other.clone()],
            };
            args.insert(k.clone(), accepted);
        }
        ok.then_some(args)
    }

    pub(super) fn address(
        &mut self,
        file: &Path,
        path: &str,
        s: &str,
        cat: &Catalog,
    ) -> Option<Address> {
        match s.parse::<Address>() {
            Err(e) => {
                self.err_at(file, path, s, 1, e);
                None
            }
            Ok(a) if cat.lookup(&a).is_none() => {
                let hint = suggest(&a, cat);
                self.err_at(
                    file,
                    path,
                    s,
                    1,
                    format!("`{a}` is not in the catalog{hint}"),
                );
                None
            }
            Ok(a) => Some(a),
        }
    }

    pub(super) fn expected_call(
        &mut self,
        file: &Path,
        path: &str,
        v: &Value,
        cat: &Catalog,
    ) -> Option<ExpectedCall> {
        match v {
            Value::String(s) => {
                let address = self.address(file, path, s, cat)?;
                Some(ExpectedCall::to(address))
            }
            Value::Object(o) => {
                const KEYS: [&str; 6] = [
                    "address",
                    "args",
                    "sql",
                    "ordered",
                    "extra_columns",
                    "compare",
                ];
                for k in o.keys() {
                    if !KEYS.contains(&k.as_str()) {
                        self.err(
                            file,
                            &format!("{path}.{k}"),
                            "unknown field; an expected call has address, args, sql, ordered, extra_columns and compare (and a step id, count or any_of)",
                        );
                        return None;
                    }
                }
                let Some(s) = o.get("address").and_then(Value::as_str) else {
                    self.err(file, path, "an expected call needs `address`");
                    return None;
                };
                let address = self.address(file, &format!("{path}.address"), s, cat)?;
                let args = match o.get("args") {
                    None | Some(Value::Null) => BTreeMap::new(),
                    Some(Value::Object(m)) => {
                        self.accepted_args(file, &format!("{path}.args"), &address, m, cat)?
                    }
                    Some(_) => {
                        self.err(
                            file,
                            &format!("{path}.args"),
                            "args maps each parameter to its accepted values",
                        );
                        return None;
                    }
                };
                let is_db = matches!(address, Address::Database(_));
                let sql = match o.get("sql") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) if is_db => Some(s.clone()),
                    Some(Value::String(_)) => {
                        self.err(
                            file,
                            &format!("{path}.sql"),
                            "sql is only for database:<db>/query expectations",
                        );
                        return None;
                    }
                    Some(_) => {
                        self.err(file, &format!("{path}.sql"), "sql must be a string");
                        return None;
                    }
                };
                let mut flag = |k: &str| -> Option<bool> {
                    match o.get(k) {
                        None | Some(Value::Null) => Some(false),
                        Some(Value::Bool(b)) if sql.is_some() => Some(*b),
                        Some(Value::Bool(_)) => {
                            self.err(
                                file,
                                &format!("{path}.{k}"),
                                format!("{k} is only for expectations with sql"),
                            );
                            None
                        }
                        Some(_) => {
                            self.err(
                                file,
                                &format!("{path}.{k}"),
                                format!("{k} is true or false"),
                            );
                            None
                        }
                    }
                };
                let ordered = flag("ordered")?;
                let extra_columns = flag("extra_columns")?;
                let mut compare = BTreeMap::new();
                let mut bfcl = false;
                match o.get("compare") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) if s == "bfcl" => bfcl = true,
                    Some(Value::Object(m)) => {
                        let props = cat.schema_of(&address);
                        for (k, v) in m {
                            let known = props
                                .as_ref()
                                .and_then(|s| s.get("properties"))
                                .and_then(Value::as_object)
                                .is_some_and(|p| p.contains_key(k));
                            let mode = match v.as_str() {
                                Some("exact") => Compare::Exact,
                                Some("standard") => Compare::Standard,
                                _ => {
                                    self.err(
                                        file,
                                        &format!("{path}.compare.{k}"),
                                        "use exact or standard",
                                    );
                                    return None;
                                }
                            };
                            if !known {
                                self.err(
                                    file,
                                    &format!("{path}.compare.{k}"),
                                    format!("`{address}` has no parameter `{k}`"),
                                );
                                return None;
                            }
                            compare.insert(k.clone(), mode);
                        }
                    }
                    Some(_) => {
                        self.err(
                            file,
                            &format!("{path}.compare"),
                            "compare maps parameters to exact or standard, or is `bfcl` (the whole call judged as BFCL's checker judges it)",
                        );
                        return None;
                    }
                }
                if matches!(address, Address::Skill(_)) && !args.is_empty() {
                    self.err(file, &format!("{path}.args"), "a skill takes no arguments");
                }
                Some(ExpectedCall {
                    address,
                    args,
                    sql,
                    ordered,
                    extra_columns,
                    compare,
                    bfcl,
                })
            }
            _ => {
                self.err(
                    file,
                    path,
                    "an expected call is an address string or {address, args, sql}",
                );
                None
            }
        }
    }

    /// Seeds each database and checks declared tables and reference SQL against it.
    pub(super) fn check_sql(&mut self, file: &Path, cat: &Catalog, queries: &[Query]) {
        // Errors about a database name the file and path that define it (often an
        // included fragment), not the scenario that includes it.
        let defined_at = |me: &Self, db: &str| {
            me.origins
                .get(&(Kind2::Database, db.to_string()))
                .cloned()
                .unwrap_or_else(|| (file.to_path_buf(), "catalog.databases".to_string()))
        };
        let dbs = match Databases::build(cat) {
            Ok(d) => d,
            Err(e) => {
                let e = e.to_string();
                let db = cat
                    .databases
                    .iter()
                    .find(|d| e.starts_with(&format!("{}: ", d.name)));
                let (f, p) = match db {
                    Some(d) => {
                        let (f, p) = defined_at(self, &d.name);
                        (f, format!("{p}.seed_sql"))
                    }
                    None => (file.to_path_buf(), "catalog.databases".to_string()),
                };
                return self.err(&f, &p, e);
            }
        };
        for (db, problems) in dbs.schema_mismatches(cat) {
            let (f, p) = defined_at(self, &db);
            for problem in problems {
                self.err(&f, &format!("{p}.tables"), problem);
            }
        }
        for (i, q) in queries.iter().enumerate() {
            for (j, c) in q.expect.all_alternatives().enumerate() {
                if let (Address::Database(db), Some(sql)) = (&c.address, &c.sql) {
                    match dbs.query(db, sql) {
                        Ok(r) if r.rows.is_empty() => self.err(
                            file,
                            &format!("queries[{i}].expect.calls[{j}].sql"),
                            "the reference SQL returns no rows, so it cannot tell right from wrong",
                        ),
                        Ok(_) => {}
                        Err(e) => self.err_at(
                            file,
                            &format!("queries[{i}].expect.calls[{j}].sql"),
                            sql,
                            1,
                            format!("the reference SQL fails: {e}"),
                        ),
                    }
                }
            }
        }
    }
}

/// 1-based line of the `nth` occurrence of `needle`, if it occurs exactly `nth` times.
fn find_line(text: &str, needle: &str, nth: usize) -> Option<usize> {
    let hits: Vec<usize> = text.match_indices(needle).map(|(i, _)| i).collect();
    if hits.len() != nth {
        return None;
    }
    let at = hits[nth - 1];
    Some(text[..at].matches('\n').count() + 1)
}

/// ` (did you mean …?)` for an address whose container exists.
fn suggest(a: &Address, cat: &Catalog) -> String {
    let names: Vec<String> = match a {
        Address::Connector(c, _) => cat
            .connector(c)
            .map(|c| c.actions.iter().map(|x| x.name.clone()).collect())
            .unwrap_or_default(),
        Address::Mcp(s, _) => cat
            .mcp_server(s)
            .map(|s| s.tools.iter().map(|x| x.name.clone()).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    if names.is_empty() {
        String::new()
    } else {
        let mut names = names;
        names.truncate(12);
        format!(" (it has: {})", names.join(", "))
    }
}
