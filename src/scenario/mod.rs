//! Scenarios: loading, include resolution and validation (DESIGN §4).
//!
//! [`load`] turns a YAML or JSON file into a [`Scenario`] whose catalog is resolved
//! (includes, `content_file`, `seed_sql` read) and checked: unknown fields, duplicate
//! names, dangling references, expectations naming addresses not in the catalog, and
//! invalid JSON Schemas are all [`InputError`]s naming the file, the line where known,
//! and the field path. Every problem in a file is reported, not only the first.

pub mod expect;
mod raw;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::catalog::{
    Action, Address, Builtin, Catalog, Connector, Database, FixtureResponse, Kind, McpServer,
    McpTool, Skill, Table, Target,
};
use crate::disclosure::Disclosure;
use crate::environment::Databases;
use crate::error::{InputError, InputErrors};
pub use expect::{Allowed, Compare, Expect, ExpectedCall, Order, Step};
use raw::*;

/// A loaded, validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    /// Shared read-only by every episode of a run.
    pub catalog: Arc<Catalog>,
    pub agent: Agent,
    pub queries: Vec<Query>,
    /// Every file the scenario was loaded from (itself, includes, skill texts, seed
    /// SQL) with a content hash of each, for `run.json`.
    pub sources: BTreeMap<PathBuf, String>,
}

#[derive(Debug, Clone, Default)]
pub struct Agent {
    pub instructions: Option<String>,
    /// Per-kind disclosure that wins over the CLI and the environment.
    pub modes: BTreeMap<Kind, Disclosure>,
    pub max_turns: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Query {
    pub id: String,
    pub text: String,
    pub expect: Expect,
    pub tags: Vec<String>,
}

pub use crate::catalog::RESERVED_TOOL_NAMES;

/// Loads every scenario under `paths` (files, or directories whose `*.yaml`, `*.yml`
/// and `*.json` files are scenarios), reporting all errors together.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Scenario>, InputErrors> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match expand(p) {
            Ok(mut f) => files.append(&mut f),
            Err(e) => errors.push(e),
        }
    }
    let mut out = Vec::new();
    for f in &files {
        match load(f) {
            Ok(s) => out.push(s),
            Err(mut e) => errors.append(&mut e.0),
        }
    }
    let mut seen = HashMap::new();
    for s in &out {
        if let Some(prev) = seen.insert(s.name.clone(), s.path.clone()) {
            errors.push(InputError::new(
                &s.path,
                "name",
                format!(
                    "scenario name `{}` is also used by {}",
                    s.name,
                    prev.display()
                ),
            ));
        }
    }
    if files.is_empty() && errors.is_empty() {
        errors.push(InputError::new(
            Path::new(paths.first().map(|p| p.as_path()).unwrap_or(Path::new("."))),
            "",
            "no scenario files (*.yaml, *.yml, *.json) found",
        ));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(InputErrors(errors))
    }
}

/// The scenario files a path stands for: the file itself, or a directory's
/// `*.yaml|*.yml|*.json` files in name order.
pub fn expand(p: &Path) -> Result<Vec<PathBuf>, InputError> {
    if p.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| InputError::new(p, "", format!("cannot read directory: {e}")))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.is_file() && is_data_file(f))
            .collect();
        v.sort();
        Ok(v)
    } else if p.is_file() {
        Ok(vec![p.to_path_buf()])
    } else {
        Err(InputError::new(p, "", "no such file or directory"))
    }
}

fn is_data_file(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// What a data file holds, sniffed from its top-level keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Scenario,
    CatalogFragment,
    McpDump,
}

/// Checks one file of any kind (scenario, catalog fragment, MCP dump) without running
/// anything. Returns what kind it was.
pub fn validate_file(path: &Path) -> Result<FileKind, InputErrors> {
    let text = read(path)?;
    let kind = sniff(path, &text)?;
    match kind {
        FileKind::Scenario => load(path).map(|_| kind),
        FileKind::CatalogFragment | FileKind::McpDump => {
            let mut cx = Loader::default();
            let mut cat = Catalog::default();
            cx.include_file(path, None, None, &mut cat, 0);
            cx.check_catalog(path, &mut cat);
            cx.finish(kind)
        }
    }
}

fn sniff(path: &Path, text: &str) -> Result<FileKind, InputErrors> {
    let v: Value = parse_value(path, text)?;
    let Some(obj) = v.as_object() else {
        return Err(InputError::new(path, "", "the document must be a mapping").into());
    };
    Ok(if obj.contains_key("queries") || obj.contains_key("name") {
        FileKind::Scenario
    } else if obj.contains_key("tools") {
        FileKind::McpDump
    } else {
        FileKind::CatalogFragment
    })
}

/// Loads and validates one scenario file.
pub fn load(path: &Path) -> Result<Scenario, InputErrors> {
    let text = read(path)?;
    let raw: RawScenario = parse(path, &text)?;
    let mut cx = Loader::default();
    cx.source(path, &text);
    cx.texts.insert(path.to_path_buf(), text);
    let mut catalog = Catalog::default();
    cx.add_catalog(path, "catalog", raw.catalog, &mut catalog, 0);
    cx.check_catalog(path, &mut catalog);

    let mut agent = Agent {
        instructions: raw.agent.instructions,
        max_turns: raw.agent.max_turns,
        ..Agent::default()
    };
    if agent.max_turns == Some(0) {
        cx.err(path, "agent.max_turns", "must be at least 1");
    }
    for (kind, v) in raw.agent.modes {
        match Disclosure::parse_for(kind, &v) {
            Ok(d) => {
                agent.modes.insert(kind, d);
            }
            Err(e) => cx.err(
                path,
                &format!("agent.modes.{}", kind.as_str()),
                e.to_string(),
            ),
        }
    }
    if raw.name.trim().is_empty() {
        cx.err(path, "name", "must not be empty");
    }
    if raw.queries.is_empty() {
        cx.err(path, "queries", "a scenario needs at least one query");
    }
    let queries = cx.queries(path, raw.queries, &catalog);
    if cx.errors.is_empty() {
        // Real SQL checks only once the catalog itself is sound.
        cx.check_sql(path, &catalog, &queries);
    }
    let sources = std::mem::take(&mut cx.sources);
    cx.finish(())?;
    Ok(Scenario {
        name: raw.name,
        description: raw.description,
        path: path.to_path_buf(),
        catalog: Arc::new(catalog),
        agent,
        queries,
        sources,
    })
}

fn read(path: &Path) -> Result<String, InputError> {
    std::fs::read_to_string(path)
        .map_err(|e| InputError::new(path, "", format!("cannot read: {e}")))
}

fn is_json(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some("json")
}

/// Deserializes YAML or JSON (by extension) with the field path of any error.
fn parse<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, InputError> {
    if is_json(path) {
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let line = Some(e.inner().line()).filter(|l| *l > 0);
            let msg = strip_location(&e.inner().to_string());
            InputError::new(path, field_path(e.path()), msg).at_line(line)
        })
    } else {
        let de = serde_yaml_ng::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let line = e.inner().location().map(|l| l.line());
            let msg = strip_location(&e.inner().to_string());
            InputError::new(path, field_path(e.path()), msg).at_line(line)
        })
    }
}

fn parse_value(path: &Path, text: &str) -> Result<Value, InputError> {
    parse(path, text)
}

fn field_path(p: &serde_path_to_error::Path) -> String {
    let s = p.to_string();
    if s == "." {
        String::new()
    } else {
        s
    }
}

/// Removes the parser's own " at line L column C" suffix and "path: " prefix; the
/// error carries both separately.
fn strip_location(msg: &str) -> String {
    let msg = match msg.rfind(" at line ") {
        Some(i) if msg[i..].contains(" column ") => &msg[..i],
        _ => msg,
    };
    // serde_yaml_ng prefixes its own copy of the path.
    match msg.split_once(": ") {
        Some((pre, rest))
            if !pre.is_empty()
                && pre
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_.[]".contains(c)) =>
        {
            rest.to_string()
        }
        _ => msg.to_string(),
    }
}

#[derive(Default)]
struct Loader {
    errors: Vec<InputError>,
    /// Source texts, to find the line of a value after parsing.
    texts: HashMap<PathBuf, String>,
    /// Where each catalog item came from, for error messages.
    origins: HashMap<(Kind2, String), (PathBuf, String)>,
    /// Every file read, with the content hash of what was read.
    sources: BTreeMap<PathBuf, String>,
    /// `responses:` entries, resolved once the whole catalog is known: (file, path, entry).
    responses: Vec<(PathBuf, String, RawResponse)>,
}

impl Loader {
    fn source(&mut self, path: &Path, text: &str) {
        self.sources.insert(
            path.to_path_buf(),
            crate::hash::content_hash(text.as_bytes()),
        );
    }
}

/// Item kinds for origin tracking and duplicate checks.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind2 {
    Skill,
    Connector,
    Database,
    Mcp,
    Builtin,
}

impl Loader {
    fn err(&mut self, file: &Path, path: &str, msg: impl Into<String>) {
        self.errors.push(InputError::new(file, path, msg));
    }

    /// An error whose line is found by searching for `needle` in the file: given only
    /// when the needle occurs exactly `nth` times or more and the `nth` one is meant.
    fn err_at(
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

    fn finish<T>(self, ok: T) -> Result<T, InputErrors> {
        if self.errors.is_empty() {
            Ok(ok)
        } else {
            Err(InputErrors(self.errors))
        }
    }

    fn add_catalog(
        &mut self,
        file: &Path,
        at: &str,
        raw: RawCatalog,
        out: &mut Catalog,
        depth: usize,
    ) {
        let base = file.parent().unwrap_or(Path::new("."));
        for (i, inc) in raw.include.iter().enumerate() {
            let p = format!("{at}.include[{i}]");
            let (rel, name, description) = match inc {
                Value::String(s) => (s.clone(), None, None),
                Value::Object(o) => {
                    let mut bad = false;
                    for k in o.keys() {
                        if !matches!(k.as_str(), "path" | "name" | "description") {
                            self.err(
                                file,
                                &format!("{p}.{k}"),
                                "unknown field; an include has path, name and description",
                            );
                            bad = true;
                        }
                    }
                    let Some(rel) = o.get("path").and_then(Value::as_str) else {
                        self.err(file, &p, "an include object needs `path`");
                        continue;
                    };
                    if bad {
                        continue;
                    }
                    let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
                    (rel.to_string(), s("name"), s("description"))
                }
                _ => {
                    self.err(
                        file,
                        &p,
                        "an include is a path or {path, name, description}",
                    );
                    continue;
                }
            };
            let target = base.join(&rel);
            if !target.is_file() {
                self.err_at(
                    file,
                    &p,
                    &rel,
                    1,
                    format!(
                        "included file `{rel}` does not exist (paths are relative to this file)"
                    ),
                );
                continue;
            }
            if depth > 8 {
                self.err(file, &p, "includes nest deeper than 8 levels (a cycle?)");
                continue;
            }
            self.include_file(&target, name, description, out, depth + 1);
        }

        for (i, s) in raw.skills.into_iter().enumerate() {
            let p = format!("{at}.skills[{i}]");
            let content = match (s.content, s.content_file) {
                (Some(c), None) => c,
                (None, Some(f)) => match std::fs::read_to_string(base.join(&f)) {
                    Ok(c) => {
                        self.source(&base.join(&f), &c);
                        c
                    }
                    Err(e) => {
                        self.err_at(
                            file,
                            &format!("{p}.content_file"),
                            &f,
                            1,
                            format!("cannot read `{f}`: {e}"),
                        );
                        continue;
                    }
                },
                (Some(_), Some(_)) => {
                    self.err(file, &p, "give either content or content_file, not both");
                    continue;
                }
                (None, None) => {
                    self.err(file, &p, "a skill needs content or content_file");
                    continue;
                }
            };
            if content.trim().is_empty() {
                self.err(file, &p, "the skill's content is empty");
            }
            self.origin(Kind2::Skill, &s.name, file, &p);
            out.skills.push(Skill {
                name: s.name,
                description: s.description,
                content,
            });
        }
        for (i, c) in raw.connectors.into_iter().enumerate() {
            let p = format!("{at}.connectors[{i}]");
            self.origin(Kind2::Connector, &c.name, file, &p);
            let actions = c
                .actions
                .into_iter()
                .enumerate()
                .map(|(j, a)| {
                    self.check_schema(file, &format!("{p}.actions[{j}].parameters"), &a.parameters);
                    Action {
                        name: a.name,
                        description: a.description,
                        method: a.method,
                        path: a.path,
                        parameters: a.parameters,
                        response: a.response,
                    }
                })
                .collect::<Vec<_>>();
            self.dupes(
                file,
                &format!("{p}.actions"),
                actions.iter().map(|a| a.name.as_str()),
                "action",
            );
            out.connectors.push(Connector {
                name: c.name,
                description: c.description,
                actions,
            });
        }
        for (i, d) in raw.databases.into_iter().enumerate() {
            let p = format!("{at}.databases[{i}]");
            self.origin(Kind2::Database, &d.name, file, &p);
            let seed_sql = match &d.seed_sql {
                None => None,
                Some(f) => match std::fs::read_to_string(base.join(f)) {
                    Ok(sql) => {
                        self.source(&base.join(f), &sql);
                        Some(sql)
                    }
                    Err(e) => {
                        self.err_at(
                            file,
                            &format!("{p}.seed_sql"),
                            f,
                            1,
                            format!("cannot read `{f}`: {e}"),
                        );
                        None
                    }
                },
            };
            let tables: Vec<Table> = d
                .tables
                .into_iter()
                .map(|t| Table {
                    name: t.name,
                    description: t.description,
                    columns: t.columns.into_iter().map(Into::into).collect(),
                })
                .collect();
            self.dupes(
                file,
                &format!("{p}.tables"),
                tables.iter().map(|t| t.name.as_str()),
                "table",
            );
            for (j, t) in tables.iter().enumerate() {
                self.dupes(
                    file,
                    &format!("{p}.tables[{j}].columns"),
                    t.columns.iter().map(|c| c.name.as_str()),
                    "column",
                );
            }
            if tables.is_empty() {
                self.err(
                    file,
                    &format!("{p}.tables"),
                    "a database needs at least one table",
                );
            }
            out.databases.push(Database {
                name: d.name,
                description: d.description,
                tables,
                seed_sql,
            });
        }
        for (i, s) in raw.mcp_servers.into_iter().enumerate() {
            let p = format!("{at}.mcp_servers[{i}]");
            self.origin(Kind2::Mcp, &s.name, file, &p);
            let tools: Vec<McpTool> = s
                .tools
                .into_iter()
                .enumerate()
                .map(|(j, t)| {
                    self.check_schema(
                        file,
                        &format!("{p}.tools[{j}].inputSchema"),
                        &t.input_schema,
                    );
                    McpTool {
                        name: t.name,
                        description: t.description,
                        input_schema: t.input_schema,
                        response: t.response,
                    }
                })
                .collect();
            self.dupes(
                file,
                &format!("{p}.tools"),
                tools.iter().map(|t| t.name.as_str()),
                "tool",
            );
            out.mcp_servers.push(McpServer {
                name: s.name,
                description: s.description,
                tools,
            });
        }
        for (i, r) in raw.responses.into_iter().enumerate() {
            self.responses
                .push((file.to_path_buf(), format!("{at}.responses[{i}]"), r));
        }
        for (i, b) in raw.builtins.into_iter().enumerate() {
            let p = format!("{at}.builtins[{i}]");
            self.origin(Kind2::Builtin, &b.name, file, &p);
            self.check_schema(file, &format!("{p}.parameters"), &b.parameters);
            out.builtins.push(Builtin {
                name: b.name,
                description: b.description,
                category: b.category,
                parameters: b.parameters,
                response: b.response,
            });
        }
    }

    /// Reads an included file: a catalog fragment, or a real MCP `tools/list` dump.
    fn include_file(
        &mut self,
        path: &Path,
        name: Option<String>,
        description: Option<String>,
        out: &mut Catalog,
        depth: usize,
    ) {
        let text = match read(path) {
            Ok(t) => t,
            Err(e) => return self.errors.push(e),
        };
        let kind = match sniff(path, &text) {
            Ok(k) => k,
            Err(mut e) => return self.errors.append(&mut e.0),
        };
        self.source(path, &text);
        self.texts.insert(path.to_path_buf(), text.clone());
        match kind {
            FileKind::McpDump => match parse::<RawMcpDump>(path, &text) {
                Ok(dump) => {
                    let info = dump.server_info;
                    let Some(name) = name.or_else(|| info.as_ref().map(|i| i.name.clone())) else {
                        return self.err(
                            path,
                            "serverInfo.name",
                            "an MCP dump without serverInfo needs `name` in its include",
                        );
                    };
                    let description = description
                        .or_else(|| info.as_ref().and_then(|i| i.description.clone()))
                        .unwrap_or_else(|| match &info {
                            Some(i) => {
                                let title = i.title.clone().unwrap_or_else(|| i.name.clone());
                                match &i.version {
                                    Some(v) => format!("{title} {v} (MCP server)"),
                                    None => format!("{title} (MCP server)"),
                                }
                            }
                            None => format!("{name} (MCP server)"),
                        });
                    let tools: Vec<McpTool> = dump
                        .tools
                        .into_iter()
                        .enumerate()
                        .map(|(j, t)| {
                            self.check_schema(
                                path,
                                &format!("tools[{j}].inputSchema"),
                                &t.input_schema,
                            );
                            McpTool {
                                name: t.name,
                                description: t.description,
                                input_schema: t.input_schema,
                                response: None,
                            }
                        })
                        .collect();
                    self.dupes(path, "tools", tools.iter().map(|t| t.name.as_str()), "tool");
                    self.origin(Kind2::Mcp, &name, path, "serverInfo.name");
                    out.mcp_servers.push(McpServer {
                        name,
                        description,
                        tools,
                    });
                }
                Err(e) => self.errors.push(e),
            },
            FileKind::CatalogFragment => {
                if name.is_some() || description.is_some() {
                    self.err(
                        path,
                        "",
                        "`name`/`description` in an include apply only to MCP tools/list dumps",
                    );
                }
                match parse::<RawCatalog>(path, &text) {
                    Ok(raw) => self.add_catalog(path, "", raw, out, depth),
                    Err(e) => self.errors.push(e),
                }
            }
            FileKind::Scenario => self.err(
                path,
                "",
                "a scenario cannot be included; include catalog fragments or MCP dumps",
            ),
        }
    }

    fn origin(&mut self, kind: Kind2, name: &str, file: &Path, path: &str) {
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

    fn dupes<'a>(
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

    fn check_schema(&mut self, file: &Path, path: &str, schema: &Value) {
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
    fn check_catalog(&mut self, file: &Path, cat: &mut Catalog) {
        for message in cat.tool_name_clashes(&RESERVED_TOOL_NAMES) {
            self.err(file, "catalog", message);
        }
        for (f, p, r) in std::mem::take(&mut self.responses) {
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
            });
        }
    }

    fn queries(&mut self, file: &Path, raw: Vec<RawQuery>, cat: &Catalog) -> Vec<Query> {
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
            out.push(Query {
                id: q.id,
                text: q.text,
                expect: Expect {
                    calls: steps,
                    allow,
                    order: e.order,
                    before,
                    forbid,
                },
                tags: q.tags,
            });
        }
        out
    }

    /// One required step: an address string, an expected call object, or
    /// `{id?, any_of: [...], count?}`.
    fn step(&mut self, file: &Path, path: &str, v: &Value, cat: &Catalog) -> Option<Step> {
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
    fn accepted_args(
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

    fn address(&mut self, file: &Path, path: &str, s: &str, cat: &Catalog) -> Option<Address> {
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

    fn expected_call(
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
                match o.get("compare") {
                    None | Some(Value::Null) => {}
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
                            "compare maps parameters to exact or standard",
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
    fn check_sql(&mut self, file: &Path, cat: &Catalog, queries: &[Query]) {
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

/// The target of an expected call, for callers that have already validated it.
pub fn target<'a>(cat: &'a Catalog, a: &Address) -> Target<'a> {
    cat.lookup(a).expect("validated address")
}
