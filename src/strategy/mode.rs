//! Modes: one disclosure choice per resource kind plus the selection step, the named
//! presets, `--mode` specs, and the precedence rule
//! (scenario `agent.modes` > CLI / environment > default `progressive`).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::catalog::Kind;
pub use crate::disclosure::{Disclosure, ModeError};

/// A complete mode: what each kind uses, whether the selection step runs, and the
/// settings of the strategies beyond the seed system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mode {
    /// The name it was asked for by: a preset name or a canonical spec.
    pub label: String,
    pub skills: Disclosure,
    pub connectors: Disclosure,
    pub databases: Disclosure,
    pub mcp: Disclosure,
    pub selection: bool,
    /// Tool search and retrieval: used when a kind is `deferred` or `retrieved`.
    pub search: SearchSettings,
    /// A built-in template set laid over the run's templates for this mode only
    /// (`templates=NAME` in a spec), so wordings can be compared in one run.
    pub templates: Option<String>,
    /// `allowed=on` (the `allowed-tools` preset): every definition is sent in every
    /// request, and what the selection step loaded (and `request_tools` adds) is what
    /// may be called — OpenAI's `allowed_tools`, emulated elsewhere by refusing a call
    /// outside the set as `not_allowed`. The tool list never changes, so a provider's
    /// cache is never broken by it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allowed: bool,
}

/// How a search tool matches its query against the tools it holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchVariant {
    /// BM25 over names, descriptions and parameter names; the query is words.
    Bm25,
    /// A regular expression (Rust `regex` syntax) matched against names, descriptions
    /// and parameter names, as Anthropic's regex tool search takes a pattern.
    Regex,
}

/// Where the tools a search finds enter the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// After everything already sent, where the search answered (as a provider that
    /// expands tool references in place does): the cached prefix survives.
    Append,
    /// Re-sorted into the tool list in catalog order: the tool list changes, and the
    /// cached prefix breaks at the first tool inserted.
    Sorted,
}

/// The settings of `deferred` (tool search) and `retrieved` (retrieval) kinds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchSettings {
    pub variant: SearchVariant,
    /// Tool references one search returns.
    pub results: usize,
    pub placement: Placement,
    /// Address patterns (`builtin:*`, `mcp:github/*`, an exact address) of tools shown
    /// directly from the first request, never held back.
    pub always_on: Vec<String>,
    /// Retrieval: how many tools are pre-selected for the query.
    pub k: usize,
    /// Retrieval: a search tool over the tools not retrieved (else they are out of
    /// reach, as in RAG-MCP).
    pub fallback: bool,
    /// Tool search as the providers ship it (`native=server|client`): the deferred
    /// tools are sent with `defer_loading` in every request, and the provider expands
    /// what a search finds — found by the provider itself (`server`: Anthropic's tool
    /// search tool, OpenAI's hosted `tool_search`) or by discbench and answered in the
    /// provider's own form (`client`: `tool_reference` blocks, `tool_search_output`).
    /// Backends that have no such mechanism, and the mock models, run it as plain
    /// tool search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native: Option<crate::wire::Execution>,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            variant: SearchVariant::Bm25,
            results: 5,
            placement: Placement::Append,
            always_on: Vec::new(),
            k: 5,
            fallback: true,
            native: None,
        }
    }
}

/// The environment variables of the seed system, one per kind.
pub const ENV_VARS: [(Kind, &str); 4] = [
    (Kind::Skills, "SKILL_TOOL_MODE"),
    (Kind::Connectors, "CONNECTOR_TOOL_MODE"),
    (Kind::Databases, "DATABASE_TOOL_MODE"),
    (Kind::Mcp, "MCP_TOOL_MODE"),
];

/// The presets a run shows when no mode is asked for, in report order.
pub const PRESETS: [&str; 6] = [
    "progressive",
    "legacy",
    "inline",
    "mcp-resource",
    "tool-search",
    "retrieval",
];

/// Presets that can be named but are not run by default.
pub const EXTRA_PRESETS: [&str; 4] = ["all-tools", "allowed-tools", "code-mode", "code-files"];

/// The keys of a spec besides the four kinds.
const SETTING_KEYS: &str =
    "selection, allowed, search, results, placement, always_on, k, fallback, native, templates";

impl Mode {
    /// A named preset: `progressive`, `legacy`, `inline` (the seed system's), `mcp-resource`,
    /// `tool-search`, `retrieval`, or `all-tools` (every definition up front, no
    /// selection step).
    pub fn preset(name: &str) -> Option<Mode> {
        use Disclosure::*;
        let (s, c, d, m, sel) = match name {
            "progressive" => (Progressive, Progressive, Progressive, Progressive, true),
            // FIM One's legacy: one tool per action / table op / MCP tool, skills inline,
            // and the selection step on, as FIM One runs it whatever the modes (use
            // `selection=off` in a spec for the unfiltered list).
            "legacy" => (Inline, Legacy, Legacy, Legacy, true),
            // Skills inline, the rest progressive; selection on as in progressive.
            "inline" => (Inline, Progressive, Progressive, Progressive, true),
            // The MCP Progressive Disclosure extension for MCP servers; the other kinds
            // as in progressive. No selection step: the extension has none, and it
            // could hide `read_resource`.
            "mcp-resource" => (Progressive, Progressive, Progressive, Resource, false),
            // Every connector action, database tool and MCP tool behind a search tool.
            "tool-search" => (Progressive, Deferred, Deferred, Deferred, false),
            // The top-k of them for the query, retrieved before the model is asked.
            "retrieval" => (Progressive, Retrieved, Retrieved, Retrieved, false),
            // All tools in the prompt: every definition up front, no selection step.
            "all-tools" => (Inline, Legacy, Legacy, Legacy, false),
            // Every definition in every request; the selection step's pick is what may
            // be called (allowed=on).
            "allowed-tools" => (Inline, Legacy, Legacy, Legacy, true),
            // The catalog as a typed API searched and called from programs.
            "code-mode" => (Progressive, Code, Code, Code, false),
            // The same API as a file tree the model lists and reads.
            "code-files" => (Progressive, Files, Files, Files, false),
            _ => return None,
        };
        Some(Mode {
            label: name.to_string(),
            skills: s,
            connectors: c,
            databases: d,
            mcp: m,
            selection: sel,
            search: SearchSettings::default(),
            templates: None,
            allowed: name == "allowed-tools",
        })
    }

    /// Parses a preset name or a spec such as `skills=inline,mcp=legacy,selection=off`.
    /// A spec starts from the `progressive` preset, or from the preset it names first
    /// (`tool-search,search=regex`), and changes what it names. A combination that
    /// makes no sense is an error saying why.
    pub fn parse(spec: &str) -> Result<Mode, ModeError> {
        let spec = spec.trim();
        if let Some(m) = Mode::preset(spec) {
            return Ok(m);
        }
        let mut parts: Vec<&str> = spec
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        let from_preset = parts.first().is_some_and(|p| Mode::preset(p).is_some());
        let mut mode = match parts.first().and_then(|p| Mode::preset(p)) {
            Some(m) => {
                parts.remove(0);
                m
            }
            None if !spec.contains('=') => {
                return Err(ModeError(format!(
                "unknown mode `{spec}`: use a preset ({}) or a spec like skills=inline,mcp=legacy",
                PRESETS
                    .iter()
                    .chain(EXTRA_PRESETS.iter())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
            }
            None => Mode::preset("progressive").expect("preset exists"),
        };
        let mut given: Vec<&str> = Vec::new();
        for part in parts {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| ModeError(format!("`{part}` in mode `{spec}` is not key=value")))?;
            let (k, v) = (k.trim(), v.trim());
            given.push(k);
            let number = |v: &str, lo: usize, hi: usize| -> Result<usize, ModeError> {
                v.parse()
                    .ok()
                    .filter(|n| (lo..=hi).contains(n))
                    .ok_or_else(|| ModeError(format!("{k}={v}: a whole number from {lo} to {hi}")))
            };
            match k {
                "selection" => {
                    mode.selection = match v {
                        "on" | "true" => true,
                        "off" | "false" => false,
                        other => {
                            return Err(ModeError(format!("selection={other}: use on or off")))
                        }
                    }
                }
                "native" => {
                    mode.search.native = match v {
                        "server" => Some(crate::wire::Execution::Server),
                        "client" => Some(crate::wire::Execution::Client),
                        "off" => None,
                        other => {
                            return Err(ModeError(format!(
                                "native={other}: use server, client or off"
                            )))
                        }
                    }
                }
                "allowed" => {
                    mode.allowed = match v {
                        "on" | "true" => true,
                        "off" | "false" => false,
                        other => return Err(ModeError(format!("allowed={other}: use on or off"))),
                    }
                }
                "search" => {
                    mode.search.variant = match v {
                        "bm25" => SearchVariant::Bm25,
                        "regex" => SearchVariant::Regex,
                        other => {
                            return Err(ModeError(format!("search={other}: use bm25 or regex")))
                        }
                    }
                }
                "results" => mode.search.results = number(v, 1, 20)?,
                "k" => mode.search.k = number(v, 1, 100)?,
                "placement" => {
                    mode.search.placement = match v {
                        "append" => Placement::Append,
                        "sorted" => Placement::Sorted,
                        other => {
                            return Err(ModeError(format!(
                                "placement={other}: use append or sorted"
                            )))
                        }
                    }
                }
                "fallback" => {
                    mode.search.fallback = match v {
                        "search" => true,
                        "none" => false,
                        other => {
                            return Err(ModeError(format!("fallback={other}: use search or none")))
                        }
                    }
                }
                "always_on" => {
                    mode.search.always_on = v
                        .split('+')
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(str::to_string)
                        .collect();
                    for p in &mode.search.always_on {
                        check_pattern(p)?;
                    }
                }
                "templates" => {
                    if !super::templates::SETS.iter().any(|(n, _)| *n == v) {
                        return Err(ModeError(format!(
                            "templates={v}: not a built-in template set (known: {})",
                            super::templates::SETS
                                .iter()
                                .map(|(n, _)| *n)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    }
                    mode.templates = Some(v.to_string());
                }
                _ => {
                    let kind = parse_kind(k)?;
                    mode.set(kind, Disclosure::parse_spec_for(kind, v)?);
                }
            }
        }
        mode.check(&given)?;
        // A spec that starts from a preset keeps its reading (`tool-search,search=regex`);
        // the others are named by their canonical spec. `mode_spec` is always canonical.
        mode.label = if from_preset {
            let mut words: Vec<String> = spec
                .split(',')
                .map(|p| p.split_whitespace().collect::<String>())
                .filter(|p| !p.is_empty())
                .collect();
            words.dedup();
            words.join(",")
        } else {
            mode.canonical_spec()
        };
        Ok(mode)
    }

    /// The combinations that make no sense, refused with the reason.
    fn check(&self, given: &[&str]) -> Result<(), ModeError> {
        let kinds = [self.connectors, self.databases, self.mcp];
        let deferred = kinds.contains(&Disclosure::Deferred);
        let retrieved = kinds.contains(&Disclosure::Retrieved);
        if deferred && retrieved {
            return Err(ModeError(
                "deferred (tool search) and retrieved (retrieval) cannot be mixed in one mode: \
                 each decides on its own which tools the model sees"
                    .into(),
            ));
        }
        if self.selection && (deferred || retrieved) {
            return Err(ModeError(
                "selection=on cannot be combined with deferred or retrieved kinds: tool search \
                 and retrieval replace the selection step (use selection=off)"
                    .into(),
            ));
        }
        if self.selection && self.mcp == Disclosure::Resource {
            return Err(ModeError(
                "selection=on cannot be combined with mcp=resource: the selection step could \
                 hide read_resource, without which no MCP tool can be called (use selection=off)"
                    .into(),
            ));
        }
        let code = kinds.contains(&Disclosure::Code);
        let files = kinds.contains(&Disclosure::Files);
        if code && files {
            return Err(ModeError(
                "code and files cannot be mixed in one mode: they are two views of one API".into(),
            ));
        }
        if (code || files) && (deferred || retrieved) {
            return Err(ModeError(
                "code or files with deferred or retrieved: a tool is either behind the API or \
                 behind a search, not both"
                    .into(),
            ));
        }
        if (code || files) && self.selection {
            return Err(ModeError(
                "selection=on with code or files: the API's functions are not tools the \
                 selection step could pick (use selection=off)"
                    .into(),
            ));
        }
        if self.search.native.is_some() && self.search.placement == Placement::Sorted {
            return Err(ModeError(
                "native=… with placement=sorted: a provider expands what its search finds where \
                 the search answered (placement=append), never in the tool list"
                    .into(),
            ));
        }
        if self.allowed && !self.selection {
            return Err(ModeError(
                "allowed=on needs selection=on: the selection step's pick is what may be called"
                    .into(),
            ));
        }
        if self.allowed && (deferred || retrieved || self.mcp == Disclosure::Resource) {
            return Err(ModeError(
                "allowed=on sends every definition and limits the calls; tool search, retrieval                  and mcp=resource hold definitions back instead"
                    .into(),
            ));
        }
        let searches = deferred || (retrieved && self.search.fallback);
        for k in given {
            let applies = match *k {
                "search" | "placement" => searches,
                // Code mode's search returns `results` declarations too.
                "results" => searches || code,
                "always_on" => deferred || retrieved,
                "native" => deferred,
                "k" | "fallback" => retrieved,
                _ => true,
            };
            if !applies {
                return Err(ModeError(format!(
                    "{k}= applies only when a kind is {}",
                    match *k {
                        "k" | "fallback" => "retrieved (retrieval)".to_string(),
                        "always_on" => "deferred or retrieved".to_string(),
                        "results" =>
                            "deferred (tool search), retrieved with fallback=search, or code"
                                .to_string(),
                        "native" => "deferred (tool search)".to_string(),
                        _ =>
                            "deferred (tool search), or retrieved with fallback=search".to_string(),
                    }
                )));
            }
        }
        Ok(())
    }

    /// Whether some kind is behind code mode's API (searched or read as files).
    pub fn codes(&self) -> bool {
        [self.connectors, self.databases, self.mcp]
            .iter()
            .any(|d| matches!(d, Disclosure::Code | Disclosure::Files))
    }

    /// Whether some kind is held back behind a search tool or pre-selected by retrieval.
    pub fn searches(&self) -> bool {
        [self.connectors, self.databases, self.mcp]
            .iter()
            .any(|d| matches!(d, Disclosure::Deferred | Disclosure::Retrieved))
    }

    /// The mode a deployment configured only by environment variables would use:
    /// `progressive` with each kind whose variable is set changed. `None` when no
    /// variable is set.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Mode>, ModeError> {
        let mut mode = Mode::preset("progressive").expect("preset exists");
        let mut any = false;
        for (kind, var) in ENV_VARS {
            if let Some(v) = get(var).filter(|v| !v.trim().is_empty()) {
                mode.set(
                    kind,
                    Disclosure::parse_for(kind, &v)
                        .map_err(|e| ModeError(format!("{var}: {e}")))?,
                );
                any = true;
            }
        }
        if !any {
            return Ok(None);
        }
        mode.label = mode.canonical_spec();
        Ok(Some(mode))
    }

    /// Applies a scenario's `agent.modes`, which win over everything else.
    pub fn with_overrides(&self, overrides: &BTreeMap<Kind, Disclosure>) -> Mode {
        let mut m = self.clone();
        for (kind, d) in overrides {
            m.set(*kind, *d);
        }
        m
    }

    pub fn get(&self, kind: Kind) -> Disclosure {
        match kind {
            Kind::Skills => self.skills,
            Kind::Connectors => self.connectors,
            Kind::Databases => self.databases,
            Kind::Mcp => self.mcp,
        }
    }

    pub fn set(&mut self, kind: Kind, d: Disclosure) {
        match kind {
            Kind::Skills => self.skills = d,
            Kind::Connectors => self.connectors = d,
            Kind::Databases => self.databases = d,
            Kind::Mcp => self.mcp = d,
        }
    }

    /// `skills=…,connectors=…,databases=…,mcp=…,selection=on|off`, then the settings
    /// that apply to this mode (search, retrieval, template set).
    pub fn canonical_spec(&self) -> String {
        let mut s = format!(
            "skills={},connectors={},databases={},mcp={},selection={}",
            self.skills.as_str(),
            self.connectors.as_str(),
            self.databases.as_str(),
            self.mcp.as_str(),
            if self.selection { "on" } else { "off" }
        );
        if self.allowed {
            s += ",allowed=on";
        }
        let kinds = [self.connectors, self.databases, self.mcp];
        let retrieved = kinds.contains(&Disclosure::Retrieved);
        let deferred = kinds.contains(&Disclosure::Deferred);
        let x = &self.search;
        if retrieved {
            s += &format!(
                ",k={},fallback={}",
                x.k,
                if x.fallback { "search" } else { "none" }
            );
        }
        if deferred || (retrieved && x.fallback) {
            s += &format!(
                ",search={},results={},placement={}",
                match x.variant {
                    SearchVariant::Bm25 => "bm25",
                    SearchVariant::Regex => "regex",
                },
                x.results,
                match x.placement {
                    Placement::Append => "append",
                    Placement::Sorted => "sorted",
                }
            );
        }
        if kinds.contains(&Disclosure::Code) {
            s += &format!(",results={}", x.results);
        }
        if (deferred || retrieved) && !x.always_on.is_empty() {
            s += &format!(",always_on={}", x.always_on.join("+"));
        }
        if let Some(n) = x.native {
            s += match n {
                crate::wire::Execution::Server => ",native=server",
                crate::wire::Execution::Client => ",native=client",
            };
        }
        if let Some(t) = &self.templates {
            s += &format!(",templates={t}");
        }
        s
    }
}

/// An always-on pattern: an address, or one whose last part is `*`
/// (`builtin:*`, `mcp:github/*`).
fn check_pattern(p: &str) -> Result<(), ModeError> {
    let ok = match p.split_once(':') {
        Some((scheme, rest)) => {
            matches!(scheme, "builtin" | "connector" | "database" | "mcp") && !rest.is_empty()
        }
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(ModeError(format!(
            "always_on={p}: use addresses or patterns like builtin:*, mcp:github/*, connector:erp/get_order, separated by +"
        )))
    }
}

/// Whether `address` (its text form) matches an always-on pattern.
pub fn matches_pattern(pattern: &str, address: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => address.starts_with(prefix),
        None => pattern == address,
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

fn parse_kind(k: &str) -> Result<Kind, ModeError> {
    match k {
        "skills" | "skill" => Ok(Kind::Skills),
        "connectors" | "connector" => Ok(Kind::Connectors),
        "databases" | "database" => Ok(Kind::Databases),
        "mcp" => Ok(Kind::Mcp),
        other => Err(ModeError(format!(
            "unknown key `{other}` in mode: use skills, connectors, databases, mcp or a setting ({SETTING_KEYS})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_match_the_design() {
        let legacy = Mode::preset("legacy").unwrap();
        assert_eq!(legacy.skills, Disclosure::Inline);
        assert_eq!(legacy.mcp, Disclosure::Legacy);
        assert!(
            legacy.selection,
            "FIM One's legacy mode is selection-filtered too"
        );
        assert!(
            !Mode::parse("connectors=legacy,selection=off")
                .unwrap()
                .selection
        );
        let inline = Mode::preset("inline").unwrap();
        assert_eq!(inline.skills, Disclosure::Inline);
        assert_eq!(inline.connectors, Disclosure::Progressive);
    }

    #[test]
    fn specs_start_from_progressive() {
        let m = Mode::parse("skills=inline,mcp=legacy").unwrap();
        assert_eq!(m.skills, Disclosure::Inline);
        assert_eq!(m.mcp, Disclosure::Legacy);
        assert_eq!(m.connectors, Disclosure::Progressive);
        assert!(m.selection);
        assert_eq!(
            m.label,
            "skills=inline,connectors=progressive,databases=progressive,mcp=legacy,selection=on"
        );
    }

    #[test]
    fn specs_from_a_preset_keep_their_reading_and_a_canonical_spec() {
        let m = Mode::parse("tool-search, search=regex,results=3").unwrap();
        assert_eq!(m.label, "tool-search,search=regex,results=3");
        assert_eq!(
            m.canonical_spec(),
            "skills=progressive,connectors=deferred,databases=deferred,mcp=deferred,selection=off,search=regex,results=3,placement=append"
        );
        let r = Mode::parse("retrieval,k=8").unwrap();
        assert_eq!((r.search.k, r.search.fallback), (8, true));
        assert!(r
            .canonical_spec()
            .contains(",k=8,fallback=search,search=bm25"));
    }

    #[test]
    fn bad_specs_name_the_problem() {
        assert!(Mode::parse("skills=legacy")
            .unwrap_err()
            .0
            .contains("progressive or inline"));
        assert!(Mode::parse("tools=legacy")
            .unwrap_err()
            .0
            .contains("unknown key"));
        assert!(Mode::parse("fast").unwrap_err().0.contains("unknown mode"));
    }

    #[test]
    fn environment_then_scenario_precedence() {
        let env = Mode::from_env(|v| (v == "MCP_TOOL_MODE").then(|| "legacy".to_string()))
            .unwrap()
            .unwrap();
        assert_eq!(env.mcp, Disclosure::Legacy);
        assert_eq!(env.skills, Disclosure::Progressive);
        let mut o = BTreeMap::new();
        o.insert(Kind::Mcp, Disclosure::Progressive);
        assert_eq!(env.with_overrides(&o).mcp, Disclosure::Progressive);
        assert!(Mode::from_env(|_| None).unwrap().is_none());
        assert!(Mode::from_env(|_| Some("bogus".into())).is_err());
    }
}
