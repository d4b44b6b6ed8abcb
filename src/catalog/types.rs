//! The catalog's resources: skills, connectors and their actions, databases and their
//! tables, MCP servers and their tools, built-ins; the kinds; and what one catalog
//! holds, with the lookups from an address to what it points at.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::address::{Address, Resource};

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

    /// The catalog without what `hidden` covers (a conversation's parts added later).
    pub fn without(&self, hidden: &[super::address::Part]) -> Catalog {
        if hidden.is_empty() {
            return self.clone();
        }
        let keep: std::collections::HashSet<Address> = self
            .addresses()
            .into_iter()
            .filter(|a| !hidden.iter().any(|p| p.covers(a)))
            .collect();
        self.restricted(&keep)
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
