//! Loading: a YAML or JSON file parsed (unknown fields are errors, with the field path
//! and line), its includes resolved — catalog fragments and real MCP `tools/list`
//! dumps — and `content_file` and `seed_sql` read, every file hashed for `run.json`;
//! then checked ([`super::check`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::check::{Checker, Kind2};
use super::raw::{RawCatalog, RawMcpDump, RawResponse, RawScenario, RawToolDocs};
use super::types::{Agent, FileKind, Scenario};
use crate::catalog::{
    Action, Address, Builtin, Catalog, Connector, Database, McpServer, McpTool, Skill, Table,
};
use crate::disclosure::Disclosure;
use crate::environment::live::{LiveSpec, Transport};
use crate::error::{InputError, InputErrors};

pub use crate::catalog::RESERVED_TOOL_NAMES;

/// Loads every scenario under `paths` (files, or directories whose `*.yaml`, `*.yml`
/// and `*.json` files are scenarios), reporting all errors together. A directory's
/// catalog fragments and MCP dumps are skipped (see [`load_all_noting`]).
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Scenario>, InputErrors> {
    load_all_noting(paths).map(|(scenarios, _)| scenarios)
}

/// Files of a directory that are not scenarios, with what each is.
pub type Skipped = Vec<(PathBuf, FileKind)>;

/// [`load_all`], with the files of the directories that are not scenarios — catalog
/// fragments and MCP `tools/list` dumps, which scenarios include — skipped and
/// returned, so that `run` and `validate` agree on what a directory holds (`import mcp`
/// writes its dump to the current directory). Such a file named on its own is an error
/// saying where it belongs.
pub fn load_all_noting(paths: &[PathBuf]) -> Result<(Vec<Scenario>, Skipped), InputErrors> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match expand(p) {
            Ok(f) => files.extend(f.into_iter().map(|f| (f, p.is_dir()))),
            Err(e) => errors.push(e),
        }
    }
    // Each file read, told apart and loaded on its own (on the cores there are), then
    // taken in order: what is loaded and what is said about it is the same whatever
    // the thread count.
    let loaded: Vec<Loaded> = {
        use rayon::prelude::*;
        files
            .par_iter()
            .map(|(f, _)| {
                let kind = kind_of(f);
                let scenario = matches!(kind, Ok(FileKind::Scenario)).then(|| load(f));
                (kind, scenario)
            })
            .collect()
    };
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for ((f, in_dir), (kind, scenario)) in files.iter().zip(loaded) {
        match kind {
            Ok(FileKind::Scenario) => {}
            Ok(kind) if *in_dir => {
                skipped.push((f.clone(), kind));
                continue;
            }
            Ok(kind) => {
                errors.push(InputError::new(
                    f,
                    "",
                    format!(
                        "{}, not a scenario: a scenario includes it (`catalog: {{include: [{}]}}`, a path relative to the scenario); `discbench validate` checks it on its own",
                        kind_name(kind),
                        f.display()
                    ),
                ));
                continue;
            }
            Err(mut e) => {
                errors.append(&mut e.0);
                continue;
            }
        }
        match scenario.expect("a scenario is loaded") {
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
    if out.is_empty() && errors.is_empty() {
        errors.push(InputError::new(
            Path::new(paths.first().map(|p| p.as_path()).unwrap_or(Path::new("."))),
            "",
            if skipped.is_empty() {
                "no scenario files (*.yaml, *.yml, *.json) found".to_string()
            } else {
                format!(
                    "no scenario files here, only {} catalog file(s) that scenarios include",
                    skipped.len()
                )
            },
        ));
    }
    if errors.is_empty() {
        Ok((out, skipped))
    } else {
        Err(InputErrors(errors))
    }
}

/// A file of [`load_all_noting`]: its kind, and the scenario loaded from it if it is one.
type Loaded = (
    Result<FileKind, InputErrors>,
    Option<Result<Scenario, InputErrors>>,
);

/// What a file kind is, in words.
pub fn kind_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Scenario => "a scenario",
        FileKind::CatalogFragment => "a catalog fragment",
        FileKind::McpDump => "an MCP tools/list dump",
    }
}

/// The kind of a data file, read from its top-level keys.
pub fn kind_of(path: &Path) -> Result<FileKind, InputErrors> {
    let text = read(path)?;
    sniff(path, &text)
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
            let (responses, docs) = (
                std::mem::take(&mut cx.responses),
                std::mem::take(&mut cx.docs),
            );
            cx.check.check_catalog(path, &mut cat, responses, docs);
            cx.check.finish(kind)
        }
    }
}

fn sniff(path: &Path, text: &str) -> Result<FileKind, InputErrors> {
    // The top-level keys alone, their values skipped unbuilt (a scenario is parsed
    // again whole when it is loaded); what is not a mapping of string keys is parsed
    // as a value, for the error that says so.
    let keys = match parse::<TopKeys>(path, text) {
        Ok(k) => k,
        Err(_) => {
            let v: Value = parse_value(path, text)?;
            let Some(obj) = v.as_object() else {
                return Err(InputError::new(path, "", "the document must be a mapping").into());
            };
            TopKeys {
                scenario: obj.contains_key("queries") || obj.contains_key("name"),
                tools: obj.contains_key("tools"),
            }
        }
    };
    Ok(if keys.scenario {
        FileKind::Scenario
    } else if keys.tools {
        FileKind::McpDump
    } else {
        FileKind::CatalogFragment
    })
}

/// Which of the keys that tell a file's kind a document's top level holds.
struct TopKeys {
    /// `queries` or `name`.
    scenario: bool,
    tools: bool,
}

impl<'de> serde::Deserialize<'de> for TopKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = TopKeys;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a mapping")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<TopKeys, A::Error> {
                let mut keys = TopKeys {
                    scenario: false,
                    tools: false,
                };
                while let Some(k) = m.next_key::<std::borrow::Cow<'de, str>>()? {
                    m.next_value::<serde::de::IgnoredAny>()?;
                    match &*k {
                        "queries" | "name" => keys.scenario = true,
                        "tools" => keys.tools = true,
                        _ => {}
                    }
                }
                Ok(keys)
            }
        }
        d.deserialize_map(Keys)
    }
}

/// Loads and validates one scenario file.
pub fn load(path: &Path) -> Result<Scenario, InputErrors> {
    let text = read(path)?;
    let raw: RawScenario = parse(path, &text)?;
    let mut cx = Loader::default();
    cx.source(path, &text);
    cx.check.texts.insert(path.to_path_buf(), text);
    let mut catalog = Catalog::default();
    cx.add_catalog(path, "catalog", raw.catalog, &mut catalog, 0);
    let (responses, docs) = (
        std::mem::take(&mut cx.responses),
        std::mem::take(&mut cx.docs),
    );
    cx.check.check_catalog(path, &mut catalog, responses, docs);

    let mut agent = Agent {
        instructions: raw.agent.instructions,
        max_requests: raw.agent.max_requests,
        ..Agent::default()
    };
    if agent.max_requests == Some(0) {
        cx.check
            .err(path, "agent.max_requests", "must be at least 1");
    }
    for (kind, v) in raw.agent.modes {
        match Disclosure::parse_for(kind, &v) {
            Ok(d) => {
                agent.modes.insert(kind, d);
            }
            Err(e) => cx.check.err(
                path,
                &format!("agent.modes.{}", kind.as_str()),
                e.to_string(),
            ),
        }
    }
    if raw.name.trim().is_empty() {
        cx.check.err(path, "name", "must not be empty");
    }
    if raw.queries.is_empty() {
        cx.check
            .err(path, "queries", "a scenario needs at least one query");
    }
    let queries = cx.check.queries(path, raw.queries, &catalog);
    check_references(&mut cx, path, &queries);
    if cx.check.errors.is_empty() {
        // Real SQL checks only once the catalog itself is sound.
        cx.check.check_sql(path, &catalog, &queries);
    }
    let sources = std::mem::take(&mut cx.sources);
    let mut live = std::mem::take(&mut cx.live);
    live.sort_by(|a, b| a.server.cmp(&b.server));
    cx.live = live;
    cx.check.finish(())?;
    Ok(Scenario {
        name: raw.name,
        description: raw.description,
        path: path.to_path_buf(),
        catalog: Arc::new(catalog),
        agent,
        queries,
        sources,
        live: std::mem::take(&mut cx.live),
    })
}

/// A turn judged by state needs live servers that name their `state` resource: every
/// reference call's server, and at least one in the query's view.
fn check_references(cx: &mut Loader, path: &Path, queries: &[super::types::Query]) {
    for (i, q) in queries.iter().enumerate() {
        for t in 0..q.n_turns() {
            let Some(reference) = &q.turn_expect(t).reference else {
                continue;
            };
            let at = if q.is_conversation() {
                format!("queries[{i}].turns[{t}].expect.reference")
            } else {
                format!("queries[{i}].expect.reference")
            };
            let stateful = |server: &str| {
                cx.live
                    .iter()
                    .any(|l| l.server == server && l.state.is_some())
            };
            let in_view = cx.live.iter().any(|l| {
                l.state.is_some()
                    && (q.scope.is_empty()
                        || q.scope
                            .contains(&crate::catalog::Resource::Mcp(l.server.clone())))
            });
            if !in_view {
                cx.check.err(
                    path,
                    &at,
                    "a turn judged by state needs a live MCP server that names its `state` resource (live: {…, state: URI})",
                );
                continue;
            }
            for (j, r) in reference.iter().enumerate() {
                if let crate::catalog::Address::Mcp(server, _) = &r.address {
                    if !stateful(server) {
                        cx.check.err(
                            path,
                            &format!("{at}[{j}].address"),
                            format!("`mcp:{server}` is not a live server with a `state` resource"),
                        );
                    }
                }
            }
        }
    }
}

/// A `live:` object: `command` (a non-empty list: the program, then its arguments),
/// `env` (names of variables passed from discbench's environment) and `timeout`
/// (seconds). The error is (where under `live`, what).
fn live_spec(v: &Value, base: &Path) -> Result<LiveSpec, (String, String)> {
    // A process runs in a directory of its own: what is relative to the scenario is
    // made absolute.
    let base = &std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
    let o = v.as_object().ok_or_else(|| {
        (
            String::new(),
            "`live` is an object: {command: [program, args…], env: [NAME…], timeout: seconds}"
                .to_string(),
        )
    })?;
    for k in o.keys() {
        if !matches!(
            k.as_str(),
            "command" | "env" | "timeout" | "url" | "transport" | "state"
        ) {
            return Err((
                format!(".{k}"),
                "unknown field; `live` has command, env, url, transport, state and timeout".into(),
            ));
        }
    }
    let strings = |k: &str| -> Result<Vec<String>, (String, String)> {
        match o.get(k) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| (format!(".{k}"), "a list of strings".to_string()))
                })
                .collect(),
            Some(_) => Err((format!(".{k}"), "a list of strings".to_string())),
        }
    };
    let text = |k: &str| -> Result<Option<String>, (String, String)> {
        match o.get(k) {
            None => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(_) => Err((format!(".{k}"), "a non-empty string".to_string())),
        }
    };
    // `{dir}` is the directory of the file that names the command.
    let command: Vec<String> = strings("command")?
        .into_iter()
        .map(|c| c.replace("{dir}", &base.display().to_string()))
        .collect();
    let url = text("url")?;
    let state = text("state")?;
    match (command.is_empty(), &url) {
        (true, None) => {
            return Err((
                ".command".into(),
                "`live` needs `command` (the program, then its arguments) or `url`".into(),
            ))
        }
        (false, Some(_)) => return Err((
            ".url".into(),
            "`live` has `command` (a server the run starts) or `url` (one it reaches), not both"
                .into(),
        )),
        _ => {}
    }
    if command.first().is_some_and(|c| c.trim().is_empty()) {
        return Err((".command".into(), "the program is empty".into()));
    }
    if let Some(u) = &url {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            return Err((".url".into(), "an http:// or https:// URL".into()));
        }
    }
    let transport = match (text("transport")?.as_deref(), &url) {
        (None, None) | (Some("stdio"), None) => Transport::Stdio,
        (None | Some("http"), _) => Transport::Http,
        (Some("stdio"), Some(_)) => {
            return Err((
                ".transport".into(),
                "a server at `url` is reached over Streamable HTTP".into(),
            ))
        }
        (Some(_), _) => return Err((".transport".into(), "`stdio` or `http`".into())),
    };
    let env = strings("env")?;
    if url.is_some() && !env.is_empty() {
        return Err((
            ".env".into(),
            "`env` is for a process the run starts; a server at `url` is not started".into(),
        ));
    }
    for name in &env {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err((".env".into(), format!("`{name}` is not a variable name")));
        }
    }
    let timeout = match o.get("timeout") {
        None => crate::environment::live::DEFAULT_TIMEOUT,
        Some(t) => match t.as_f64() {
            Some(s) if s > 0.0 && s <= 3600.0 => std::time::Duration::from_secs_f64(s),
            _ => {
                return Err((
                    ".timeout".into(),
                    "seconds, more than 0 and at most 3600".into(),
                ))
            }
        },
    };
    Ok(LiveSpec {
        server: String::new(),
        command,
        url,
        transport,
        state,
        origin: String::new(),
        env,
        timeout,
        base: base.to_path_buf(),
    })
}

/// Loads a real MCP `tools/list` dump on its own (a sweep's pool of distractors),
/// named `name`, with the content hash of the file.
pub fn load_mcp_dump(path: &Path, name: &str) -> Result<(McpServer, String), InputErrors> {
    let mut cx = Loader::default();
    let text = read(path)?;
    if sniff(path, &text)? != FileKind::McpDump {
        return Err(InputErrors(vec![InputError::new(
            path,
            "",
            "not an MCP tools/list dump (a sweep's pool holds `*.tools.json` and `*.tools.json.gz` captures)",
        )]));
    }
    let mut catalog = Catalog::default();
    cx.include_file(path, Some(name.to_string()), None, &mut catalog, 0);
    let hash = cx.sources.remove(path).unwrap_or_default();
    cx.check.finish(())?;
    let server = catalog.mcp_servers.pop().expect("one dump, one server");
    Ok((server, hash))
}

/// A file's text; a `*.gz` file (the sweep pool's captures) is read through gzip.
fn read(path: &Path) -> Result<String, InputError> {
    let cannot = |e: std::io::Error| InputError::new(path, "", format!("cannot read: {e}"));
    if path.extension().and_then(|e| e.to_str()) != Some("gz") {
        return std::fs::read_to_string(path).map_err(cannot);
    }
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::io::BufReader::new(file))
        .read_to_string(&mut text)
        .map_err(|e| InputError::new(path, "", format!("cannot read as gzip: {e}")))?;
    Ok(text)
}

/// JSON by extension: `*.json`, or `*.json.gz` read through gzip.
fn is_json(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".json") || name.ends_with(".json.gz")
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
    check: Checker,
    /// Every file read, with the content hash of what was read.
    sources: BTreeMap<PathBuf, String>,
    /// `responses:` entries, resolved once the whole catalog is known: (file, path, entry).
    responses: Vec<(PathBuf, String, RawResponse)>,
    /// Tool documentation (`docs:` entries and inline fields), applied once the whole
    /// catalog is known: (file, path, address, fields).
    docs: Vec<(PathBuf, String, String, RawToolDocs)>,
    /// Live MCP servers (`live:` in an include of a `tools/list` dump).
    live: Vec<LiveSpec>,
}

impl Loader {
    fn source(&mut self, path: &Path, text: &str) {
        self.sources.insert(
            path.to_path_buf(),
            crate::hash::content_hash(text.as_bytes()),
        );
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
            let (rel, name, description, live) = match inc {
                Value::String(s) => (s.clone(), None, None, None),
                Value::Object(o) => {
                    let mut bad = false;
                    for k in o.keys() {
                        if !matches!(k.as_str(), "path" | "name" | "description" | "live") {
                            self.check.err(
                                file,
                                &format!("{p}.{k}"),
                                "unknown field; an include has path, name, description and live",
                            );
                            bad = true;
                        }
                    }
                    let Some(rel) = o.get("path").and_then(Value::as_str) else {
                        self.check.err(file, &p, "an include object needs `path`");
                        continue;
                    };
                    if bad {
                        continue;
                    }
                    let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
                    let live = match o.get("live") {
                        None => None,
                        Some(v) => match live_spec(v, base) {
                            Ok(spec) => Some(spec),
                            Err((at, msg)) => {
                                self.check.err(file, &format!("{p}.live{at}"), msg);
                                continue;
                            }
                        },
                    };
                    (rel.to_string(), s("name"), s("description"), live)
                }
                _ => {
                    self.check.err(
                        file,
                        &p,
                        "an include is a path or {path, name, description}",
                    );
                    continue;
                }
            };
            let target = base.join(&rel);
            if !target.is_file() {
                self.check.err_at(
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
                self.check
                    .err(file, &p, "includes nest deeper than 8 levels (a cycle?)");
                continue;
            }
            let servers = out.mcp_servers.len();
            self.include_file(&target, name, description, out, depth + 1);
            if let Some(spec) = live {
                // Every MCP server the include brought (a capture's one, or a
                // fragment's, as an importer writes them) is live the same way.
                if out.mcp_servers.len() > servers {
                    for s in &out.mcp_servers[servers..] {
                        if self.live.iter().any(|l| l.server == s.name) {
                            self.check.err(
                                file,
                                &format!("{p}.live"),
                                format!("the MCP server `{}` is live twice", s.name),
                            );
                        } else {
                            self.live.push(LiveSpec {
                                server: s.name.clone(),
                                origin: format!("{}:{p}", file.display()),
                                ..spec.clone()
                            });
                        }
                    }
                } else {
                    self.check.err(
                        file,
                        &format!("{p}.live"),
                        "`live` applies to an include that brings MCP servers (a capture, or a fragment with mcp_servers)",
                    );
                }
            }
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
                        self.check.err_at(
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
                    self.check
                        .err(file, &p, "give either content or content_file, not both");
                    continue;
                }
                (None, None) => {
                    self.check
                        .err(file, &p, "a skill needs content or content_file");
                    continue;
                }
            };
            if content.trim().is_empty() {
                self.check.err(file, &p, "the skill's content is empty");
            }
            self.check.origin(Kind2::Skill, &s.name, file, &p);
            out.skills.push(Skill {
                name: s.name,
                description: s.description,
                content,
            });
        }
        for (i, c) in raw.connectors.into_iter().enumerate() {
            let p = format!("{at}.connectors[{i}]");
            self.check.origin(Kind2::Connector, &c.name, file, &p);
            let actions = c
                .actions
                .into_iter()
                .enumerate()
                .map(|(j, a)| {
                    self.check.check_schema(
                        file,
                        &format!("{p}.actions[{j}].parameters"),
                        &a.parameters,
                    );
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
            self.check.dupes(
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
            self.check.origin(Kind2::Database, &d.name, file, &p);
            let seed_sql = match &d.seed_sql {
                None => None,
                Some(f) => match std::fs::read_to_string(base.join(f)) {
                    Ok(sql) => {
                        self.source(&base.join(f), &sql);
                        Some(sql)
                    }
                    Err(e) => {
                        self.check.err_at(
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
            self.check.dupes(
                file,
                &format!("{p}.tables"),
                tables.iter().map(|t| t.name.as_str()),
                "table",
            );
            for (j, t) in tables.iter().enumerate() {
                self.check.dupes(
                    file,
                    &format!("{p}.tables[{j}].columns"),
                    t.columns.iter().map(|c| c.name.as_str()),
                    "column",
                );
            }
            if tables.is_empty() {
                self.check.err(
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
            self.check.origin(Kind2::Mcp, &s.name, file, &p);
            let tools: Vec<McpTool> = s
                .tools
                .into_iter()
                .enumerate()
                .map(|(j, t)| {
                    self.check.check_schema(
                        file,
                        &format!("{p}.tools[{j}].inputSchema"),
                        &t.input_schema,
                    );
                    let docs = RawToolDocs {
                        examples: t.examples,
                        usage_guidance: t.usage_guidance,
                        error_guidance: t.error_guidance,
                    };
                    if docs.examples.is_some()
                        || docs.usage_guidance.is_some()
                        || docs.error_guidance.is_some()
                    {
                        self.docs.push((
                            file.to_path_buf(),
                            format!("{p}.tools[{j}]"),
                            Address::Mcp(s.name.clone(), t.name.clone()).to_string(),
                            docs,
                        ));
                    }
                    McpTool {
                        name: t.name,
                        description: t.description,
                        input_schema: std::sync::Arc::new(t.input_schema),
                        response: t.response,
                        docs: Default::default(),
                    }
                })
                .collect();
            self.check.dupes(
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
        for (i, d) in raw.docs.into_iter().enumerate() {
            self.docs.push((
                file.to_path_buf(),
                format!("{at}.docs[{i}]"),
                d.address,
                d.docs,
            ));
        }
        for (i, r) in raw.responses.into_iter().enumerate() {
            self.responses
                .push((file.to_path_buf(), format!("{at}.responses[{i}]"), r));
        }
        for (i, b) in raw.builtins.into_iter().enumerate() {
            let p = format!("{at}.builtins[{i}]");
            self.check.origin(Kind2::Builtin, &b.name, file, &p);
            self.check
                .check_schema(file, &format!("{p}.parameters"), &b.parameters);
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
            Err(e) => return self.check.errors.push(e),
        };
        let kind = match sniff(path, &text) {
            Ok(k) => k,
            Err(mut e) => return self.check.errors.append(&mut e.0),
        };
        self.source(path, &text);
        self.check.texts.insert(path.to_path_buf(), text.clone());
        match kind {
            FileKind::McpDump => match parse::<RawMcpDump>(path, &text) {
                Ok(dump) => {
                    let info = dump.server_info;
                    let Some(name) = name.or_else(|| info.as_ref().map(|i| i.name.clone())) else {
                        return self.check.err(
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
                            self.check.check_schema(
                                path,
                                &format!("tools[{j}].inputSchema"),
                                &t.input_schema,
                            );
                            McpTool {
                                name: t.name,
                                description: t.description,
                                input_schema: std::sync::Arc::new(t.input_schema),
                                response: None,
                                docs: Default::default(),
                            }
                        })
                        .collect();
                    self.check
                        .dupes(path, "tools", tools.iter().map(|t| t.name.as_str()), "tool");
                    self.check
                        .origin(Kind2::Mcp, &name, path, "serverInfo.name");
                    out.mcp_servers.push(McpServer {
                        name,
                        description,
                        tools,
                    });
                }
                Err(e) => self.check.errors.push(e),
            },
            FileKind::CatalogFragment => {
                if name.is_some() || description.is_some() {
                    self.check.err(
                        path,
                        "",
                        "`name`/`description` in an include apply only to MCP tools/list dumps",
                    );
                }
                match parse::<RawCatalog>(path, &text) {
                    Ok(raw) => self.add_catalog(path, "", raw, out, depth),
                    Err(e) => self.check.errors.push(e),
                }
            }
            FileKind::Scenario => self.check.err(
                path,
                "",
                "a scenario cannot be included; include catalog fragments or MCP dumps",
            ),
        }
    }
}
