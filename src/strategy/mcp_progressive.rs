//! MCP, progressive: one `mcp` tool whose description lists each server with its tool
//! count and tool names; `discover <server>` returns the tools' full input schemas,
//! `call <server> <tool> {arguments}` calls one.

use std::sync::Arc;

use serde_json::{json, Value};

use super::templates::TemplateError;
use super::{
    arg_str, execute, valid, Env, ProtocolError, Rendered, Resolution, State, Strategy, Templates,
};
use crate::catalog::{Address, Catalog, Kind};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

pub const MCP: &str = "mcp";

pub struct McpProgressive {
    catalog: Arc<Catalog>,
    rendered: Rendered,
}

impl McpProgressive {
    pub fn new(catalog: &Arc<Catalog>, t: &Templates) -> Result<Self, TemplateError> {
        let stubs: Vec<Value> = catalog
            .mcp_servers
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description.trim(), "tools": s.tools.iter().map(|t| &t.name).collect::<Vec<_>>()}))
            .collect();
        let names: Vec<&str> = catalog
            .mcp_servers
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        let tool = ToolDef {
            name: MCP.into(),
            description: t.render("mcp.j2", json!({"servers": stubs}))?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "subcommand": {"type": "string", "enum": ["discover", "call"]},
                    "server": {"type": "string", "enum": names},
                    "tool": {"type": "string", "description": "The tool to call (call only)."},
                    "arguments": {"type": "object", "description": "The tool's arguments (call only)."}
                },
                "required": ["subcommand", "server"]
            }),
        };
        Ok(McpProgressive {
            catalog: catalog.clone(),
            rendered: Rendered {
                section: String::new(),
                tools: vec![tool],
            },
        })
    }
}

impl Strategy for McpProgressive {
    fn kind(&self) -> Option<Kind> {
        Some(Kind::Mcp)
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        let (sub, name) = match (
            arg_str(args, "subcommand", tool),
            arg_str(args, "server", tool),
        ) {
            (Ok(s), Ok(n)) => (s, n),
            (Err(r), _) | (_, Err(r)) => return r,
        };
        let Some(server) = self.catalog.mcp_server(name) else {
            return Resolution::error(
                ProtocolError::UnknownTarget,
                format!(
                    "no MCP server `{name}`; {}",
                    valid("servers", self.catalog.mcp_servers.iter().map(|s| &s.name))
                ),
            );
        };
        match sub {
            "discover" => {
                let tools: Vec<Value> = server
                    .tools
                    .iter()
                    .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema}))
                    .collect();
                let content = json!({"server": server.name, "tools": tools}).to_string();
                let addrs = server
                    .tools
                    .iter()
                    .map(|t| Address::Mcp(server.name.clone(), t.name.clone()))
                    .collect();
                Resolution::fetched(content, addrs)
            }
            "call" => {
                let t = match arg_str(args, "tool", tool) {
                    Ok(t) => t,
                    Err(r) => return r,
                };
                if !server.tools.iter().any(|x| x.name == t) {
                    return Resolution::error(
                        ProtocolError::UnknownTarget,
                        format!(
                            "server `{name}` has no tool `{t}`; {}",
                            valid("tools", server.tools.iter().map(|x| &x.name))
                        ),
                    );
                }
                let a = args.get("arguments").cloned().unwrap_or_else(|| json!({}));
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
                json!({"subcommand": "call", "server": s, "tool": t, "arguments": args}),
            )
        } else {
            (MCP.into(), json!({"subcommand": "discover", "server": s}))
        })
    }
}
