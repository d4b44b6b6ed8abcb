//! MCP, progressive: one `mcp` tool whose description lists each server by its name
//! with its tool count and tool names — and no description, since the MCP protocol
//! gives the seed system none; `discover <server>` returns the tools with their full
//! input schemas as indented text, `call <server> <tool> {parameters}` calls one.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::catalog::{Address, Catalog};
use crate::scenario::ExpectedCall;
use crate::strategy::execute::execute;
use crate::strategy::protocol::{
    arg_str, meta_args, no_container, parameters_arg, valid, Env, ProtocolError, Rendered,
    Resolution, State, Strategy,
};
use crate::strategy::results::{join_marked, pretty, Answers};
use crate::strategy::templates::{TemplateError, Templates};
use crate::wire::ToolDef;

pub const MCP: &str = "mcp";

pub struct McpProgressive {
    catalog: Arc<Catalog>,
    rendered: Rendered,
    /// `discover`'s answer per server, in catalog order.
    discovered: Answers,
}

impl McpProgressive {
    pub fn new(catalog: &Arc<Catalog>, t: &Templates) -> Result<Self, TemplateError> {
        let stubs: Vec<Value> = catalog
            .mcp_servers
            .iter()
            .map(|s| json!({"name": s.name, "tools": s.tools.iter().map(|t| &t.name).collect::<Vec<_>>()}))
            .collect();
        let mut names: Vec<&str> = catalog
            .mcp_servers
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        names.sort();
        let tool = ToolDef {
            name: MCP.into(),
            description: t.render("mcp.j2", json!({"servers": stubs}))?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "subcommand": {"type": "string", "enum": ["discover", "call"],
                        "description": "discover: a server's tools; call: run one of them."},
                    "server": {"type": "string", "description": "Name of the MCP server.", "enum": names},
                    "tool": {"type": "string", "description": "Tool to call (call only)."},
                    "parameters": {"type": "object", "description": "Arguments object for the tool (call only)."}
                },
                "required": ["subcommand", "server"]
            }),
        };
        Ok(McpProgressive {
            discovered: Answers::new(catalog.mcp_servers.len()),
            catalog: catalog.clone(),
            rendered: Rendered {
                section: String::new(),
                tools: vec![tool],
            },
        })
    }
}

/// `discover`'s answer: the server, then per tool its description and input schema
/// (indented JSON, or `(none)` when it has no properties).
fn discover_text(server: &crate::catalog::McpServer) -> (String, Vec<usize>) {
    let mut lines = vec![
        format!("Server: {}", server.name),
        format!("Description: {}", server.name),
        format!("Tools ({}):", server.tools.len()),
        String::new(),
    ];
    let mut marks = Vec::with_capacity(server.tools.len());
    for t in &server.tools {
        lines.push(format!("  {}:", t.name));
        if !t.description.is_empty() {
            lines.push(format!("    description: {}", t.description));
        }
        let has_properties = t
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        lines.push(if has_properties {
            format!("    parameters: {}", pretty(&t.input_schema))
        } else {
            "    parameters: (none)".to_string()
        });
        lines.push(String::new());
        marks.push(lines.len());
    }
    join_marked(&lines, &marks)
}

impl Strategy for McpProgressive {
    // owns, order, render and shown_up_front look alike in the three progressive
    // meta-tools but say different things: which kind, and where FIM One registers it.
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Mcp(..))
    }

    fn order(&self) -> u8 {
        4
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        let (sub, name) = match meta_args(args, "server", tool) {
            Ok(x) => x,
            Err(r) => return r,
        };
        let found = self.catalog.mcp_servers.iter().position(|s| s.name == name);
        let Some((i, server)) = found.map(|i| (i, &self.catalog.mcp_servers[i])) else {
            // A `call` on a server that does not exist is a call made; a `discover` of
            // one is a look.
            return no_container(
                "MCP server",
                name,
                valid("servers", self.catalog.mcp_servers.iter().map(|s| &s.name)),
                sub == "call",
            );
        };
        match sub {
            "discover" if server.tools.is_empty() => {
                Resolution::fetched(format!("Server '{name}' offers no tools."), Vec::new())
            }
            "discover" => {
                let (content, ends) = self.discovered.get(i, || discover_text(server));
                let addrs = server
                    .tools
                    .iter()
                    .map(|t| Address::Mcp(server.name.clone(), t.name.clone()))
                    .collect();
                Resolution::fetched_at(content, addrs, ends)
            }
            "call" => {
                let t = match arg_str(args, "tool", tool) {
                    Ok(t) => t,
                    Err(r) => return r,
                };
                if !server.tools.iter().any(|x| x.name == t) {
                    return Resolution::malformed(
                        ProtocolError::UnknownTarget,
                        format!(
                            "server `{name}` has no tool `{t}`; {}",
                            valid("tools", server.tools.iter().map(|x| &x.name))
                        ),
                    );
                }
                let a = parameters_arg(args);
                execute(
                    Address::Mcp(name.to_string(), t.to_string()),
                    &a,
                    state,
                    env,
                )
            }
            other => Resolution::error(
                ProtocolError::BadSubcommand,
                format!("unknown subcommand `{other}`; valid subcommands: discover, call"),
            ),
        }
    }

    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)> {
        let Address::Mcp(s, t) = &target.address else {
            return None;
        };
        Some(if state.shown.contains(&target.address) {
            (
                MCP.into(),
                json!({"subcommand": "call", "server": s, "tool": t, "parameters": args}),
            )
        } else {
            (MCP.into(), json!({"subcommand": "discover", "server": s}))
        })
    }
}
