//! A client of real MCP servers, for `import mcp` and for live servers in runs
//! ([`live`]). For `import mcp` it starts a server (a command over
//! stdio, [`stdio`]) or reaches one (Streamable HTTP, [`http`]), initializes with the
//! official Rust SDK (`rmcp`), pages through
//! `tools/list` — and `resources/list`, `resources/templates/list` and
//! `prompts/list` where the server offers them — and returns what the server sent,
//! as it sent it ([`Captured`]).
//!
//! `rmcp` speaks the protocol (handshake, version negotiation, pagination, pings);
//! its typed model drops the fields it does not know (`execution`, annotation
//! extras), so the bytes of every response are kept as they arrive and the catalog
//! is made from those: every tool keeps every field, in the server's
//! order. [`file`] writes the catalog file scenarios include.

pub mod file;
pub mod http;
pub mod live;
mod reaper;
pub mod stdio;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RoleClient;
use rmcp::transport::IntoTransport;
use rmcp::ServiceExt;
use serde_json::{Map, Value};

/// Bytes copied from a stream as they pass: JSON-RPC messages, one per line.
pub(crate) type Log = Arc<Mutex<Vec<u8>>>;

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
    #[error("{message}{}", tail_text(.stderr_tail.as_deref()))]
    Server {
        message: String,
        /// The last lines a server started over stdio wrote to stderr.
        stderr_tail: Option<String>,
    },
}

fn tail_text(tail: Option<&str>) -> String {
    let Some(tail) = tail else {
        return String::new();
    };
    if tail.trim().is_empty() {
        "\n(the server wrote nothing to stderr)".to_string()
    } else {
        let lines: Vec<String> = tail.lines().map(|l| format!("  | {l}")).collect();
        format!("\nthe server's stderr ended with:\n{}", lines.join("\n"))
    }
}

/// What the server said it offers, from its `initialize` capabilities.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Offered {
    resources: bool,
    prompts: bool,
    /// Items rmcp read, per listing: the raw capture must hold as many. Resource
    /// templates are `None` when the server refused to list them.
    counts: [usize; 4],
    templates: bool,
}

/// Initializes with rmcp and pages through every listing the server offers.
pub(crate) async fn list<T, E, A>(transport: T, version: &str) -> Result<Offered, String>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let mut config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("discbench", env!("CARGO_PKG_VERSION")),
    );
    config.protocol_version = protocol_version(version).ok_or("unknown protocol version")?;
    let client = config
        .serve(transport)
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    let caps = client
        .peer_info()
        .map(|i| {
            (
                i.capabilities.resources.is_some(),
                i.capabilities.prompts.is_some(),
            )
        })
        .unwrap_or((false, false));
    let peer = client.peer();
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?
        .len();
    let (mut resources, mut templates, mut prompts) = (0, None, 0);
    if caps.0 {
        resources = peer
            .list_all_resources()
            .await
            .map_err(|e| format!("resources/list: {e}"))?
            .len();
        // Templates are optional within the resources capability: a server that
        // refuses to list them has none.
        templates = match peer.list_all_resource_templates().await {
            Ok(t) => Some(t.len()),
            Err(rmcp::ServiceError::McpError(_)) => None,
            Err(e) => return Err(format!("resources/templates/list: {e}")),
        };
    }
    if caps.1 {
        prompts = peer
            .list_all_prompts()
            .await
            .map_err(|e| format!("prompts/list: {e}"))?
            .len();
    }
    // Closing the client closes the server's stdin.
    let _ = client.cancel().await;
    Ok(Offered {
        resources: caps.0,
        prompts: caps.1,
        counts: [tools, resources, templates.unwrap_or(0), prompts],
        templates: templates.is_some(),
    })
}

/// The lines of a stream that parse as JSON objects, and those that do not.
pub(crate) fn lines(log: &Log) -> (Vec<Value>, Vec<String>) {
    let bytes = log.lock().expect("log").clone();
    let text = String::from_utf8_lossy(&bytes);
    let mut json = Vec::new();
    let mut other = Vec::new();
    for l in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match serde_json::from_str::<Value>(l) {
            Ok(v @ Value::Object(_)) => json.push(v),
            _ => other.push(l.to_string()),
        }
    }
    (json, other)
}

/// A note on stdout lines that were not JSON-RPC, for error messages.
pub(crate) fn garbage_note(received: &Log) -> String {
    let (_, other) = lines(received);
    match other.first() {
        None => String::new(),
        Some(first) => {
            let first: String = first.chars().take(120).collect();
            format!(
                "; it wrote {} line(s) to stdout that are not JSON-RPC, the first: {first:?}",
                other.len()
            )
        }
    }
}

/// The captured listings: each response matched by id to the request it answers.
pub(crate) fn assemble(sent: &Log, received: &Log, offered: Offered) -> Result<Captured, String> {
    let (requests, _) = lines(sent);
    let method: HashMap<String, String> = requests
        .iter()
        .filter_map(|r| {
            let id = r.get("id")?;
            let m = r.get("method")?.as_str()?;
            Some((id.to_string(), m.to_string()))
        })
        .collect();
    let (responses, _) = lines(received);
    let mut initialize = None;
    let mut pages: HashMap<&str, Vec<Value>> = HashMap::new();
    for r in &responses {
        let (Some(id), Some(result)) = (r.get("id"), r.get("result")) else {
            continue;
        };
        let Some(m) = method.get(&id.to_string()) else {
            continue;
        };
        let key = match m.as_str() {
            "initialize" => {
                initialize = Some(result.clone());
                continue;
            }
            "tools/list" => ("tools/list", "tools"),
            "resources/list" => ("resources/list", "resources"),
            "resources/templates/list" => ("resources/templates/list", "resourceTemplates"),
            "prompts/list" => ("prompts/list", "prompts"),
            _ => continue,
        };
        let items = result
            .get(key.1)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("a {} result without a `{}` list", key.0, key.1))?;
        pages
            .entry(key.0)
            .or_default()
            .extend(items.iter().cloned());
    }
    let initialize = initialize.ok_or("no initialize result was captured")?;
    let mut take = |m: &str, n: usize| -> Result<Vec<Value>, String> {
        let items = pages.remove(m).unwrap_or_default();
        if items.len() != n {
            return Err(format!(
                "{m}: {} items captured, {n} read by the client",
                items.len()
            ));
        }
        Ok(items)
    };
    let [t, r, rt, p] = offered.counts;
    Ok(Captured {
        initialize,
        tools: take("tools/list", t)?,
        resources: offered
            .resources
            .then(|| take("resources/list", r))
            .transpose()?,
        resource_templates: offered
            .templates
            .then(|| take("resources/templates/list", rt))
            .transpose()?,
        prompts: offered
            .prompts
            .then(|| take("prompts/list", p))
            .transpose()?,
    })
}
