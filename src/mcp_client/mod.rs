//! A client of real MCP servers, for `import mcp`: it starts a server (a command over
//! stdio), initializes with the official Rust SDK (`rmcp`), pages through
//! `tools/list` — and `resources/list`, `resources/templates/list` and
//! `prompts/list` where the server offers them — and returns what the server sent,
//! as it sent it ([`Captured`]).
//!
//! `rmcp` speaks the protocol (handshake, version negotiation, pagination, pings);
//! its typed model drops the fields it does not know (`execution`, annotation
//! extras), so the bytes of every response are kept as they arrive ([`stdio`]) and
//! the catalog is made from those: every tool keeps every field, in the server's
//! order. [`file`] writes the catalog file scenarios include.

pub mod file;
pub mod stdio;

use std::time::Duration;

use serde_json::{Map, Value};

/// How long `import mcp` waits, from starting the server to the last page.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The protocol version asked for in `initialize` unless told otherwise: the newest
/// that still has the `initialize` handshake. A server answers with the version it
/// chose (its newest, when it does not know the one asked for), and that answer is
/// the catalog's `protocolVersion`.
pub const DEFAULT_PROTOCOL_VERSION: &str = "2025-11-25";

/// The protocol versions with an `initialize` handshake that `rmcp` knows, oldest
/// first (`--protocol-version`).
pub fn protocol_versions() -> Vec<String> {
    rmcp::model::ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .filter(|v| v.has_initialize())
        .map(|v| v.as_str().to_string())
        .collect()
}

/// The `rmcp` value of a version string, when it is one it knows with a handshake.
pub(crate) fn protocol_version(v: &str) -> Option<rmcp::model::ProtocolVersion> {
    rmcp::model::ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|k| k.as_str() == v && k.has_initialize())
        .cloned()
}

/// What a server answered, as it answered: the `initialize` result and every item of
/// every page of each listing it offers.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    /// The raw `initialize` result (`serverInfo`, `protocolVersion`, `capabilities`,
    /// `instructions`…).
    pub initialize: Value,
    pub tools: Vec<Value>,
    /// `None` when the server does not offer resources.
    pub resources: Option<Vec<Value>>,
    pub resource_templates: Option<Vec<Value>>,
    /// `None` when the server does not offer prompts.
    pub prompts: Option<Vec<Value>>,
}

impl Captured {
    /// The server's `serverInfo.name`, if it gave one.
    pub fn server_name(&self) -> Option<&str> {
        self.initialize
            .get("serverInfo")
            .and_then(|i| i.get("name"))
            .and_then(Value::as_str)
    }

    /// The catalog file's document: `serverInfo`, `protocolVersion`, `instructions`
    /// (when given), `tools`, then `resources`, `resourceTemplates` and `prompts`
    /// where the server offers any (a capability with nothing in it is left out). `name` replaces `serverInfo.name` (the name scenarios know the
    /// server by); everything else is as the server sent it.
    pub fn catalog(&self, name: Option<&str>) -> Value {
        let mut o = Map::new();
        let mut info = self
            .initialize
            .get("serverInfo")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        if let (Some(n), Value::Object(m)) = (name, &mut info) {
            m.insert("name".into(), Value::String(n.to_string()));
        }
        o.insert("serverInfo".into(), info);
        if let Some(v) = self.initialize.get("protocolVersion") {
            o.insert("protocolVersion".into(), v.clone());
        }
        if let Some(v) = self.initialize.get("instructions").filter(|v| !v.is_null()) {
            o.insert("instructions".into(), v.clone());
        }
        o.insert("tools".into(), Value::Array(self.tools.clone()));
        let lists = [
            ("resources", &self.resources),
            ("resourceTemplates", &self.resource_templates),
            ("prompts", &self.prompts),
        ];
        for (key, list) in lists {
            if let Some(items) = list.as_ref().filter(|l| !l.is_empty()) {
                o.insert(key.into(), Value::Array(items.clone()));
            }
        }
        Value::Object(o)
    }
}

/// Why an import failed, by who is to blame.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The command could not be started (not found, not executable): the user's to fix.
    #[error("cannot start `{command}`: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
    /// The server started but failed: it exited, hung, or answered what is not MCP.
    #[error("{message}{}", tail_text(.stderr_tail))]
    Server {
        message: String,
        /// The last lines the server wrote to stderr.
        stderr_tail: String,
    },
}

fn tail_text(tail: &str) -> String {
    if tail.trim().is_empty() {
        "\n(the server wrote nothing to stderr)".to_string()
    } else {
        let lines: Vec<String> = tail.lines().map(|l| format!("  | {l}")).collect();
        format!("\nthe server's stderr ended with:\n{}", lines.join("\n"))
    }
}
