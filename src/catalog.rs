//! The catalog: everything an agent could use, and the canonical [`Address`] of each
//! callable thing.
//!
//! Scoring happens on addresses, never on strategy-specific tool names, so strategies
//! are comparable: `connector:erp/get_order` is the same call whether the model reached
//! it through the progressive `connector` meta-tool or the legacy `erp__get_order` tool.

use std::fmt;
use std::str::FromStr;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::names::{tool_safe, unique};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Names of the meta-tools; no catalog tool may take one of them in any mode.
pub const RESERVED_TOOL_NAMES: [&str; 7] = [
    "read_skill",
    "connector",
    "database",
    "mcp",
    "request_tools",
    "read_resource",
    "tool_search",
];

/// A loaded, validated catalog.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Catalog {
    pub skills: Vec<Skill>,
    pub connectors: Vec<Connector>,
    pub databases: Vec<Database>,
    pub mcp_servers: Vec<McpServer>,
    pub builtins: Vec<Builtin>,
    /// Fixture answers by address and argument values, in file order; they take
    /// precedence over a tool's own `response`.
    pub responses: Vec<FixtureResponse>,
}

/// A fixture answer for calls to `address` whose arguments match `when` (accepted
/// values per parameter, compared as expectations compare them; empty: every call).
#[derive(Debug, Clone, Serialize)]
pub struct FixtureResponse {
    pub address: Address,
    pub when: BTreeMap<String, Vec<Value>>,
    pub response: Value,
    /// An entry without `when` that is the right answer whatever the arguments (a
    /// clock, a calculator's error): `validate --fixtures` does not list calls it
    /// answers as gaps.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub any_args: bool,
}

/// A standard operating procedure the agent can read.
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub content: String,
}

/// An API connector with actions.
#[derive(Debug, Clone, Serialize)]
pub struct Connector {
    pub name: String,
    pub description: String,
    pub actions: Vec<Action>,
}

/// One connector action: an HTTP operation with a JSON Schema for its parameters.
#[derive(Debug, Clone, Serialize)]
pub struct Action {
    pub name: String,
    pub description: String,
    pub method: Option<String>,
    pub path: Option<String>,
    pub parameters: Value,
    pub response: Option<Value>,
}

/// A database: tables with columns, optionally seeded with real rows.
#[derive(Debug, Clone, Serialize)]
pub struct Database {
    pub name: String,
    pub description: String,
    pub tables: Vec<Table>,
    /// The seed SQL text (SQLite dialect), already read from its file.
    #[serde(skip)]
    pub seed_sql: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Table {
    pub name: String,
    pub description: String,
    pub columns: Vec<Column>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Column {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub nullable: bool,
    pub primary_key: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// An MCP server and the tools its `tools/list` returned.
#[derive(Debug, Clone, Serialize)]
pub struct McpServer {
    pub name: String,
    pub description: String,
    pub tools: Vec<McpTool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    /// Shared: a sweep gives every query a catalog of its own, and each holds the same
    /// pool tools, so a tool's schema is held once however many catalogs hold the tool.
    pub input_schema: Arc<Value>,
    pub response: Option<Value>,
    /// Documentation beyond the description, for strategies that serve it.
    #[serde(skip_serializing_if = "ToolDocs::is_empty")]
    pub docs: ToolDocs,
}

/// What the MCP Progressive Disclosure guide's full tool description carries beyond
/// the description and input schema: usage examples, usage guidance and error
/// guidance. Served by the `mcp-resource` strategy when a tool's description is read;
/// free-form JSON, checked at load (examples' inputs validate against the schema).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolDocs {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub examples: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_guidance: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_guidance: Option<Value>,
}

impl ToolDocs {
    pub fn is_empty(&self) -> bool {
        self.examples.is_none() && self.usage_guidance.is_none() && self.error_guidance.is_none()
    }
}

/// A tool the agent framework always offers directly (calculator, web search, …).
#[derive(Debug, Clone, Serialize)]
pub struct Builtin {
    pub name: String,
    pub description: String,
    pub category: String,
    pub parameters: Value,
    pub response: Option<Value>,
}

/// The four kinds of resource whose disclosure a mode chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Skills,
    Connectors,
    Databases,
    Mcp,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Skills, Kind::Connectors, Kind::Databases, Kind::Mcp];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Skills => "skills",
            Kind::Connectors => "connectors",
            Kind::Databases => "databases",
            Kind::Mcp => "mcp",
        }
    }
}

/// The canonical name of one callable thing, independent of strategy.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Address {
    Skill(String),
    Connector(String, String),
    /// `database:<db>/query`
    Database(String),
    Mcp(String, String),
    Builtin(String),
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Address::Skill(n) => write!(f, "skill:{n}"),
            Address::Connector(c, a) => write!(f, "connector:{c}/{a}"),
            Address::Database(d) => write!(f, "database:{d}/query"),
            Address::Mcp(s, t) => write!(f, "mcp:{s}/{t}"),
            Address::Builtin(n) => write!(f, "builtin:{n}"),
        }
    }
}

impl FromStr for Address {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{s}` is not an address; use skill:<name>, connector:<connector>/<action>, \
                 database:<db>/query, mcp:<server>/<tool> or builtin:<tool>"
            )
        };
        let (scheme, rest) = s.split_once(':').ok_or_else(bad)?;
        let pair = |rest: &str| -> Result<(String, String), String> {
            let (a, b) = rest.split_once('/').ok_or_else(bad)?;
            if a.is_empty() || b.is_empty() {
                return Err(bad());
            }
            Ok((a.to_string(), b.to_string()))
        };
        if rest.is_empty() {
            return Err(bad());
        }
        match scheme {
            "skill" => Ok(Address::Skill(rest.to_string())),
            "builtin" => Ok(Address::Builtin(rest.to_string())),
            "connector" => pair(rest).map(|(c, a)| Address::Connector(c, a)),
            "mcp" => pair(rest).map(|(s, t)| Address::Mcp(s, t)),
            "database" => match pair(rest)? {
                (db, q) if q == "query" => Ok(Address::Database(db)),
                (db, other) => Err(format!(
                    "`{s}`: a database address is database:{db}/query, not /{other}"
                )),
            },
            _ => Err(bad()),
        }
    }
}

impl Serialize for Address {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One resource of a catalog, by kind and name — what a query's `scope` names:
/// `skill:<name>`, `connector:<name>`, `database:<name>`, `mcp:<server>` or
/// `builtin:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    Skill(String),
    Connector(String),
    Database(String),
    Mcp(String),
    Builtin(String),
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Skill(n) => write!(f, "skill:{n}"),
            Resource::Connector(n) => write!(f, "connector:{n}"),
            Resource::Database(n) => write!(f, "database:{n}"),
            Resource::Mcp(n) => write!(f, "mcp:{n}"),
            Resource::Builtin(n) => write!(f, "builtin:{n}"),
        }
    }
}

impl FromStr for Resource {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            format!(
                "`{s}` is not a resource; use skill:<name>, connector:<name>, database:<name>, \
                 mcp:<server> or builtin:<name>"
            )
        };
        let (scheme, name) = s.split_once(':').ok_or_else(bad)?;
        if name.is_empty() {
            return Err(bad());
        }
        let name = name.to_string();
        Ok(match scheme {
            "skill" => Resource::Skill(name),
            "connector" => Resource::Connector(name),
            "database" => Resource::Database(name),
            "mcp" => Resource::Mcp(name),
            "builtin" => Resource::Builtin(name),
            _ => return Err(bad()),
        })
    }
}

impl Serialize for Resource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Address {
    /// The resource this address belongs to.
    pub fn resource(&self) -> Resource {
        match self {
            Address::Skill(n) => Resource::Skill(n.clone()),
            Address::Connector(c, _) => Resource::Connector(c.clone()),
            Address::Database(d) => Resource::Database(d.clone()),
            Address::Mcp(s, _) => Resource::Mcp(s.clone()),
            Address::Builtin(n) => Resource::Builtin(n.clone()),
        }
    }
}

/// What an address points at, with the JSON Schema of its arguments.
pub enum Target<'a> {
    Skill(&'a Skill),
    Action(&'a Connector, &'a Action),
    Database(&'a Database),
    McpTool(&'a McpServer, &'a McpTool),
    Builtin(&'a Builtin),
}

/// The argument schema of `database:<db>/query` calls.
pub fn query_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {"sql": {"type": "string", "description": "The SQL statement to run."}},
        "required": ["sql"]
    })
}

impl Catalog {
    /// Finds what an address points at.
    pub fn lookup(&self, address: &Address) -> Option<Target<'_>> {
        match address {
            Address::Skill(n) => self.skill(n).map(Target::Skill),
            Address::Connector(c, a) => {
                let conn = self.connector(c)?;
                let action = conn.actions.iter().find(|x| &x.name == a)?;
                Some(Target::Action(conn, action))
            }
            Address::Database(d) => self.database(d).map(Target::Database),
            Address::Mcp(s, t) => {
                let server = self.mcp_server(s)?;
                let tool = server.tools.iter().find(|x| &x.name == t)?;
                Some(Target::McpTool(server, tool))
            }
            Address::Builtin(n) => self
                .builtins
                .iter()
                .find(|b| &b.name == n)
                .map(Target::Builtin),
        }
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }
    pub fn connector(&self, name: &str) -> Option<&Connector> {
        self.connectors.iter().find(|s| s.name == name)
    }
    pub fn database(&self, name: &str) -> Option<&Database> {
        self.databases.iter().find(|s| s.name == name)
    }
    pub fn mcp_server(&self, name: &str) -> Option<&McpServer> {
        self.mcp_servers.iter().find(|s| s.name == name)
    }

    /// The JSON Schema that an executed call to `address` must satisfy.
    pub fn schema_of(&self, address: &Address) -> Option<Value> {
        Some(match self.lookup(address)? {
            Target::Skill(_) => return None,
            Target::Action(_, a) => a.parameters.clone(),
            Target::Database(_) => query_schema(),
            Target::McpTool(_, t) => (*t.input_schema).clone(),
            Target::Builtin(b) => b.parameters.clone(),
        })
    }

    /// Every executable address, in catalog order.
    pub fn addresses(&self) -> Vec<Address> {
        let mut out = Vec::new();
        out.extend(self.skills.iter().map(|s| Address::Skill(s.name.clone())));
        for c in &self.connectors {
            out.extend(
                c.actions
                    .iter()
                    .map(|a| Address::Connector(c.name.clone(), a.name.clone())),
            );
        }
        out.extend(
            self.databases
                .iter()
                .map(|d| Address::Database(d.name.clone())),
        );
        for s in &self.mcp_servers {
            out.extend(
                s.tools
                    .iter()
                    .map(|t| Address::Mcp(s.name.clone(), t.name.clone())),
            );
        }
        out.extend(
            self.builtins
                .iter()
                .map(|b| Address::Builtin(b.name.clone())),
        );
        out
    }

    /// Whether the catalog holds this resource.
    pub fn has_resource(&self, r: &Resource) -> bool {
        match r {
            Resource::Skill(n) => self.skill(n).is_some(),
            Resource::Connector(n) => self.connector(n).is_some(),
            Resource::Database(n) => self.database(n).is_some(),
            Resource::Mcp(n) => self.mcp_server(n).is_some(),
            Resource::Builtin(n) => self.builtins.iter().any(|b| &b.name == n),
        }
    }

    /// The part of the catalog a query's `scope` names, in catalog order (fixture
    /// responses for what is left).
    pub fn scoped(&self, scope: &[Resource]) -> Catalog {
        let has = |r: Resource| scope.contains(&r);
        Catalog {
            skills: (self.skills.iter())
                .filter(|s| has(Resource::Skill(s.name.clone())))
                .cloned()
                .collect(),
            connectors: (self.connectors.iter())
                .filter(|c| has(Resource::Connector(c.name.clone())))
                .cloned()
                .collect(),
            databases: (self.databases.iter())
                .filter(|d| has(Resource::Database(d.name.clone())))
                .cloned()
                .collect(),
            mcp_servers: (self.mcp_servers.iter())
                .filter(|s| has(Resource::Mcp(s.name.clone())))
                .cloned()
                .collect(),
            builtins: (self.builtins.iter())
                .filter(|b| has(Resource::Builtin(b.name.clone())))
                .cloned()
                .collect(),
            responses: (self.responses.iter())
                .filter(|r| scope.contains(&r.address.resource()))
                .cloned()
                .collect(),
        }
    }

    /// The catalog with only the addresses in `keep` (a connector or MCP server keeps
    /// the actions or tools kept, and goes when none is; fixture answers follow).
    pub fn restricted(&self, keep: &std::collections::HashSet<Address>) -> Catalog {
        let has = |a: Address| keep.contains(&a);
        Catalog {
            skills: (self.skills.iter())
                .filter(|s| has(Address::Skill(s.name.clone())))
                .cloned()
                .collect(),
            connectors: (self.connectors.iter())
                .filter_map(|c| {
                    let actions: Vec<Action> = (c.actions.iter())
                        .filter(|a| has(Address::Connector(c.name.clone(), a.name.clone())))
                        .cloned()
                        .collect();
                    (!actions.is_empty()).then(|| Connector {
                        actions,
                        ..c.clone()
                    })
                })
                .collect(),
            databases: (self.databases.iter())
                .filter(|d| has(Address::Database(d.name.clone())))
                .cloned()
                .collect(),
            mcp_servers: (self.mcp_servers.iter())
                .filter_map(|s| {
                    let tools: Vec<McpTool> = (s.tools.iter())
                        .filter(|t| has(Address::Mcp(s.name.clone(), t.name.clone())))
                        .cloned()
                        .collect();
                    (!tools.is_empty()).then(|| McpServer {
                        name: s.name.clone(),
                        description: s.description.clone(),
                        tools,
                    })
                })
                .collect(),
            builtins: (self.builtins.iter())
                .filter(|b| has(Address::Builtin(b.name.clone())))
                .cloned()
                .collect(),
            responses: (self.responses.iter())
                .filter(|r| keep.contains(&r.address))
                .cloned()
                .collect(),
        }
    }

    pub fn has(&self, kind: Kind) -> bool {
        match kind {
            Kind::Skills => !self.skills.is_empty(),
            Kind::Connectors => !self.connectors.is_empty(),
            Kind::Databases => !self.databases.is_empty(),
            Kind::Mcp => !self.mcp_servers.is_empty(),
        }
    }
}

impl Catalog {
    /// Every tool name the legacy strategies and the built-ins expose, with the address
    /// (or `database:{db}/{suffix}`) behind it, in catalog order. Names are FIM One's
    /// (connectors and databases through [`safe_name`], MCP tools through
    /// [`mcp_tool_name`]); a name already taken — by a built-in, a meta-tool or an
    /// earlier name — gets `_` and 8 hex digits of its address's hash, as FIM One
    /// suffixes a clashing connector with 8 characters of its id. Scoring keeps the
    /// original addresses.
    pub fn exposed_tool_names(&self) -> Vec<(String, String)> {
        let mut raw = Vec::new();
        for c in &self.connectors {
            for a in &c.actions {
                raw.push((
                    format!("{}__{}", safe_name(&c.name), safe_name(&a.name)),
                    Address::Connector(c.name.clone(), a.name.clone()).to_string(),
                ));
            }
        }
        for d in &self.databases {
            for suffix in ["list_tables", "describe_table", "query"] {
                raw.push((
                    format!("{}__{suffix}", safe_name(&d.name)),
                    format!("database:{}/{suffix}", d.name),
                ));
            }
        }
        for s in &self.mcp_servers {
            for t in &s.tools {
                raw.push((
                    mcp_tool_name(&s.name, &t.name),
                    Address::Mcp(s.name.clone(), t.name.clone()).to_string(),
                ));
            }
        }
        let mut taken: std::collections::HashSet<String> = RESERVED_TOOL_NAMES
            .iter()
            .map(|s| s.to_string())
            .chain(self.builtins.iter().map(|b| b.name.clone()))
            .collect();
        let mut out: Vec<(String, String)> = raw
            .into_iter()
            .map(|(name, addr)| {
                // MCP names stay within FIM One's 128 characters, suffix included.
                let cap = addr.starts_with("mcp:").then_some(128);
                (unique(name, &addr, cap, &mut taken), addr)
            })
            .collect();
        for b in &self.builtins {
            out.push((b.name.clone(), format!("builtin:{}", b.name)));
        }
        out
    }

    /// The legacy tool name of an address key of [`Catalog::exposed_tool_names`].
    pub fn legacy_tool_names(&self) -> std::collections::HashMap<String, String> {
        self.exposed_tool_names()
            .into_iter()
            .map(|(name, addr)| (addr, name))
            .collect()
    }

    /// The legacy tools of each connector, database and MCP server as one group each
    /// (a provider's `namespace`), in catalog order: the group's name is the resource's
    /// own, every character outside ASCII letters, digits, `_` and `-` replaced by `_`
    /// and cut to 64 characters (a clash with a tool name or an earlier group suffixed
    /// as in [`Catalog::exposed_tool_names`]); its description is the resource's, or
    /// says what the resource is when it has none. A resource with no tools has no
    /// group.
    pub fn tool_groups(&self) -> Vec<crate::wire::ToolGroup> {
        let names = self.legacy_tool_names();
        let mut taken: std::collections::HashSet<String> = names.values().cloned().collect();
        taken.extend(RESERVED_TOOL_NAMES.iter().map(|s| s.to_string()));
        let mut groups = Vec::new();
        let mut group = |kind: &str, name: &str, description: &str, keys: Vec<String>| {
            let tools: Vec<String> = keys.iter().filter_map(|k| names.get(k)).cloned().collect();
            if tools.is_empty() {
                return;
            }
            let raw = tool_safe(name, 64);
            let raw = if raw.trim_matches('_').is_empty() {
                kind.replace(' ', "_")
            } else {
                raw
            };
            let description = if description.trim().is_empty() {
                format!("The tools of the {kind} {name}.")
            } else {
                description.to_string()
            };
            groups.push(crate::wire::ToolGroup {
                name: unique(raw, &format!("{kind}:{name}"), Some(64), &mut taken),
                description,
                tools,
            });
        };
        for c in &self.connectors {
            let keys = (c.actions.iter())
                .map(|a| Address::Connector(c.name.clone(), a.name.clone()).to_string())
                .collect();
            group("connector", &c.name, &c.description, keys);
        }
        for d in &self.databases {
            let keys = ["list_tables", "describe_table", "query"]
                .iter()
                .map(|suffix| format!("database:{}/{suffix}", d.name))
                .collect();
            group("database", &d.name, &d.description, keys);
        }
        for s in &self.mcp_servers {
            let keys = (s.tools.iter())
                .map(|t| Address::Mcp(s.name.clone(), t.name.clone()).to_string())
                .collect();
            group("MCP server", &s.name, &s.description, keys);
        }
        groups
    }

    /// The names the progressive `connector` tool shows, one per connector in catalog
    /// order: [`safe_name`], a later clash suffixed as in [`Catalog::exposed_tool_names`].
    pub fn connector_stub_names(&self) -> Vec<String> {
        stub_names(self.connectors.iter().map(|c| c.name.as_str()), "connector")
    }

    /// The names the progressive `database` tool shows, as for connectors.
    pub fn database_stub_names(&self) -> Vec<String> {
        stub_names(self.databases.iter().map(|d| d.name.as_str()), "db")
    }

    /// The clashes that remain errors: built-ins (whose names are used verbatim) that
    /// share a name, or take a meta-tool's name (`reserved`). Legacy names are made
    /// unique instead (see [`Catalog::exposed_tool_names`]).
    pub fn tool_name_clashes(&self, reserved: &[&str]) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for b in &self.builtins {
            if reserved.contains(&b.name.as_str()) {
                out.push(format!(
                    "the built-in `{}` has a meta-tool's name; rename it",
                    b.name
                ));
            } else if !seen.insert(b.name.as_str()) {
                out.push(format!("two built-ins are named `{}`; rename one", b.name));
            }
        }
        out
    }
}

fn stub_names<'a>(names: impl Iterator<Item = &'a str>, kind: &str) -> Vec<String> {
    let mut taken = std::collections::HashSet::new();
    names
        .map(|n| {
            let safe = safe_name(n);
            let safe = if safe.is_empty() {
                format!("{kind}_{}", &crate::hash::content_hash(n.as_bytes())[..8])
            } else {
                safe
            };
            unique(safe, &format!("{kind}:{n}"), None, &mut taken)
        })
        .collect()
}

/// FIM One's name for a connector, database or action: lower-cased, every character
/// that is not an ASCII letter or digit replaced by `_`, `_` trimmed from both ends.
pub fn safe_name(s: &str) -> String {
    let mapped: String = s
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    mapped.trim_matches('_').to_string()
}

/// FIM One's legacy MCP tool name: `{server}__{tool}` with every character outside
/// ASCII letters, digits, `_` and `-` replaced by `_` (case kept), cut to 128 characters.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    tool_safe(&format!("{server}__{tool}"), 128)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MCP tool with only a name.
    fn tool(n: &str) -> McpTool {
        McpTool {
            name: n.into(),
            description: String::new(),
            input_schema: Arc::new(serde_json::json!({"type": "object"})),
            response: None,
            docs: ToolDocs::default(),
        }
    }

    #[test]
    fn addresses_round_trip() {
        for s in [
            "skill:Refund Processing",
            "connector:erp/get_order",
            "database:hr/query",
            "mcp:github/create_issue",
            "builtin:calculator",
        ] {
            let a: Address = s.parse().unwrap();
            assert_eq!(a.to_string(), s);
        }
    }

    #[test]
    fn bad_addresses_are_refused() {
        for s in [
            "erp/get_order",
            "connector:erp",
            "database:hr/select",
            "mcp:/x",
            "skill:",
        ] {
            assert!(s.parse::<Address>().is_err(), "{s} should not parse");
        }
    }

    #[test]
    fn names_are_sanitized_as_fim_one_does() {
        assert_eq!(safe_name("My-ERP "), "my_erp");
        assert_eq!(safe_name("__Get Order__"), "get_order");
        assert_eq!(
            mcp_tool_name("Asset Price MCP", "get-price"),
            "Asset_Price_MCP__get-price"
        );
        assert_eq!(mcp_tool_name("s", &"x".repeat(200)).chars().count(), 128);
    }

    #[test]
    fn clashing_names_are_made_unique_and_keep_their_addresses() {
        let server = |n: &str| McpServer {
            name: n.into(),
            description: String::new(),
            tools: vec![tool("get_price")],
        };
        let cat = Catalog {
            mcp_servers: vec![server("Asset_Price_MCP"), server("Asset Price MCP")],
            ..Catalog::default()
        };
        let names = cat.exposed_tool_names();
        assert_eq!(names[0].0, "Asset_Price_MCP__get_price");
        assert!(
            names[1].0.starts_with("Asset_Price_MCP__get_price_"),
            "{names:?}"
        );
        assert_eq!(names[1].0.len(), "Asset_Price_MCP__get_price_".len() + 8);
        assert_eq!(names[1].1, "mcp:Asset Price MCP/get_price");
        assert!(cat.tool_name_clashes(&["mcp"]).is_empty());
        let conns = Catalog {
            connectors: ["CRM", "crm", "---"]
                .iter()
                .map(|n| Connector {
                    name: n.to_string(),
                    description: String::new(),
                    actions: Vec::new(),
                })
                .collect(),
            ..Catalog::default()
        };
        let stubs = conns.connector_stub_names();
        assert_eq!(stubs[0], "crm");
        assert!(
            stubs[1].starts_with("crm_") && stubs[1].len() == 12,
            "{stubs:?}"
        );
        assert!(stubs[2].starts_with("connector_"), "{stubs:?}");
    }

    #[test]
    fn each_resource_is_one_group_named_and_described() {
        let server = |n: &str, d: &str, tools: &[&str]| McpServer {
            name: n.into(),
            description: d.into(),
            tools: tools.iter().map(|t| tool(t)).collect(),
        };
        let cat = Catalog {
            mcp_servers: vec![
                server("Asset Price MCP", "Prices.", &["get_price", "list"]),
                server("Asset_Price_MCP", "", &["get_price"]),
                // A server named as one of the other's tools.
                server("Asset_Price_MCP__list", "Lists.", &["x"]),
            ],
            databases: vec![Database {
                name: "HR".into(),
                description: "People.".into(),
                tables: Vec::new(),
                seed_sql: None,
            }],
            ..Catalog::default()
        };
        let names = cat.legacy_tool_names();
        let groups = cat.tool_groups();
        let brief: Vec<(&str, &str, usize)> = groups
            .iter()
            .map(|g| (g.name.as_str(), g.description.as_str(), g.tools.len()))
            .collect();
        assert_eq!(brief[0], ("HR", "People.", 3), "databases come first");
        assert_eq!(brief[1], ("Asset_Price_MCP", "Prices.", 2));
        // The second server's name is taken by the first group: suffixed.
        assert!(brief[2].0.starts_with("Asset_Price_MCP_") && brief[2].0.len() == 24);
        assert_eq!(brief[2].1, "The tools of the MCP server Asset_Price_MCP.");
        // A group never takes a tool's name.
        assert_ne!(brief[3].0, "Asset_Price_MCP__list");
        assert!(!names.values().any(|n| n == brief[3].0));
        // Members are the legacy names, each in exactly one group.
        assert_eq!(
            groups[0].tools,
            ["HR__list_tables", "HR__describe_table", "HR__query"].map(|s| s.to_lowercase())
        );
        let mut members: Vec<&String> = groups.iter().flat_map(|g| &g.tools).collect();
        members.sort();
        let mut all: Vec<&String> = names.values().collect();
        all.sort();
        assert_eq!(members, all);
    }
}
