//! The on-disk scenario format as serde types (DESIGN §4). Unknown fields are errors
//! everywhere except inside real MCP `tools/list` dumps, whose format belongs to MCP.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{Column, Kind};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub catalog: RawCatalog,
    #[serde(default)]
    pub agent: RawAgent,
    #[serde(default)]
    pub queries: Vec<RawQuery>,
}

/// The `catalog:` section, and also the whole of a reusable catalog fragment file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCatalog {
    /// Strings or `{path, name?, description?}` objects; parsed by hand for clearer errors.
    #[serde(default)]
    pub include: Vec<Value>,
    #[serde(default)]
    pub skills: Vec<RawSkill>,
    #[serde(default)]
    pub connectors: Vec<RawConnector>,
    #[serde(default)]
    pub databases: Vec<RawDatabase>,
    #[serde(default)]
    pub mcp_servers: Vec<RawMcpServer>,
    #[serde(default)]
    pub builtins: Vec<RawBuiltin>,
    /// Fixture answers by address (and optionally by argument values), for any tool —
    /// above all those included from real `tools/list` dumps, which have none.
    #[serde(default)]
    pub responses: Vec<RawResponse>,
    /// Documentation for MCP tools by address (above all those of `tools/list`
    /// dumps, which carry none): examples, usage and error guidance.
    #[serde(default)]
    pub docs: Vec<RawDocs>,
}

/// Documentation for one MCP tool, by address.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDocs {
    pub address: String,
    #[serde(flatten)]
    pub docs: RawToolDocs,
}

/// The documentation fields of the MCP Progressive Disclosure guide's full tool
/// description.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawToolDocs {
    #[serde(default)]
    pub examples: Option<Value>,
    #[serde(default)]
    pub usage_guidance: Option<Value>,
    #[serde(default)]
    pub error_guidance: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawResponse {
    pub address: String,
    /// Parameter → accepted values; the entry answers only calls that match.
    #[serde(default)]
    pub when: Option<BTreeMap<String, Value>>,
    pub response: Value,
    /// The entry (without `when`) is right for any arguments.
    #[serde(default)]
    pub any_args: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSkill {
    pub name: String,
    pub description: String,
    pub content: Option<String>,
    pub content_file: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConnector {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub actions: Vec<RawAction>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAction {
    pub name: String,
    pub description: String,
    pub method: Option<String>,
    pub path: Option<String>,
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    pub response: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDatabase {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub tables: Vec<RawTable>,
    pub seed_sql: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTable {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub columns: Vec<RawColumn>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default = "yes")]
    pub nullable: bool,
    #[serde(default)]
    pub primary_key: bool,
    #[serde(default)]
    pub description: String,
}

impl From<RawColumn> for Column {
    fn from(c: RawColumn) -> Self {
        Column {
            name: c.name,
            ty: c.ty,
            nullable: c.nullable,
            primary_key: c.primary_key,
            description: c.description,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcpServer {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub tools: Vec<RawMcpTool>,
}

/// An MCP tool as written in a scenario: the MCP `Tool` fields plus `response` and
/// the documentation fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcpTool {
    #[serde(default)]
    pub examples: Option<Value>,
    #[serde(default)]
    pub usage_guidance: Option<Value>,
    #[serde(default)]
    pub error_guidance: Option<Value>,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
    pub response: Option<Value>,
    // Accepted because real servers send them; not shown to models.
    #[allow(dead_code)]
    #[serde(default)]
    pub title: Option<Value>,
    #[serde(default)]
    #[allow(dead_code)]
    pub annotations: Option<Value>,
    #[serde(rename = "outputSchema", default)]
    #[allow(dead_code)]
    pub output_schema: Option<Value>,
    #[serde(default)]
    #[allow(dead_code)]
    pub execution: Option<Value>,
    #[serde(default)]
    #[allow(dead_code)]
    pub icons: Option<Value>,
    #[serde(rename = "_meta", default)]
    #[allow(dead_code)]
    pub meta: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBuiltin {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub category: String,
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    pub response: Option<Value>,
}

/// A real MCP `initialize` + `tools/list` answer: `{serverInfo, protocolVersion, tools}`.
/// Lenient on purpose: the format is MCP's and grows new fields.
#[derive(Debug, Deserialize)]
pub struct RawMcpDump {
    #[serde(rename = "serverInfo")]
    pub server_info: Option<RawServerInfo>,
    pub tools: Vec<RawDumpTool>,
}

#[derive(Debug, Deserialize)]
pub struct RawServerInfo {
    pub name: String,
    pub version: Option<String>,
    pub title: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct RawDumpTool {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgent {
    pub instructions: Option<String>,
    /// Per-kind disclosure that wins over the CLI and the environment.
    #[serde(default)]
    pub modes: BTreeMap<Kind, String>,
    /// Model requests per user turn at most (`max_turns`, its old name, is read too).
    #[serde(alias = "max_turns")]
    pub max_requests: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawQuery {
    pub id: String,
    /// A single query's text (a conversation gives `turns` instead).
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub expect: Option<RawExpect>,
    /// A conversation: its user turns, in order.
    #[serde(default)]
    pub turns: Option<Vec<RawTurn>>,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Resources this query's agent is given (`mcp:<server>`, `connector:<name>`, …);
    /// absent: the whole catalog.
    #[serde(default)]
    pub scope: Option<Vec<String>>,
    /// Instructions of this query's own, after the scenario's.
    #[serde(default)]
    pub instructions: Option<String>,
    /// How its turns judged by state are judged: `general` (discbench's rule) or
    /// `bfcl` (BFCL's multi-turn checker's, rule for rule).
    #[serde(default)]
    pub judge: Option<String>,
}

/// One user turn of a conversation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTurn {
    pub text: String,
    pub expect: RawExpect,
    /// What becomes available from this turn on: resources or single tools.
    #[serde(default)]
    pub adds: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    /// Strings, `{address, args?, sql?, ordered?, extra_columns?, compare?, id?, count?}`
    /// (`compare`: a mapping parameter → `exact`|`standard`, or `bfcl` for the call)
    /// or `{id?, any_of: [...], count?}` objects; parsed by hand for clearer errors.
    /// May be left out when `reference` is given.
    #[serde(default)]
    pub calls: Option<Vec<Value>>,
    /// Calls run on a second fresh instance of the live servers: the turn is judged
    /// by state (`{address, args}` objects, the arguments as sent).
    #[serde(default)]
    pub reference: Option<Vec<Value>>,
    /// Permitted, never required: strings or `{address, args?}`.
    #[serde(default)]
    pub allow: Vec<Value>,
    #[serde(default)]
    pub order: Order,
    /// `[a, b]` pairs of step ids: every call of `a` before any call of `b`.
    #[serde(default)]
    pub before: Vec<Vec<String>>,
    #[serde(default)]
    pub forbid: Vec<String>,
    /// No executed call beyond the listed ones (BFCL's count of calls).
    #[serde(default)]
    pub exhaustive: bool,
}

/// Whether the expected calls must happen in the listed order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    #[default]
    Any,
    Sequence,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

fn yes() -> bool {
    true
}
