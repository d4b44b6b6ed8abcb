//! MCP, legacy: one tool per MCP tool, `{server}__{tool}`, with its full input schema.

use std::collections::HashMap;

use serde_json::Value;

use super::{execute, Env, Rendered, Resolution, State, Strategy};
use crate::catalog::{legacy_name, Address, Catalog, Kind};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

pub struct McpLegacy {
    rendered: Rendered,
    by_tool: HashMap<String, Address>,
}

impl McpLegacy {
    pub fn new(catalog: &Catalog) -> Self {
        let mut tools = Vec::new();
        let mut by_tool = HashMap::new();
        for s in &catalog.mcp_servers {
            for t in &s.tools {
                let name = legacy_name(&s.name, &t.name);
                by_tool.insert(name.clone(), Address::Mcp(s.name.clone(), t.name.clone()));
                tools.push(ToolDef {
                    name,
                    description: t.description.clone(),
                    parameters: t.input_schema.clone(),
                });
            }
        }
        McpLegacy {
            rendered: Rendered {
                section: String::new(),
                tools,
            },
            by_tool,
        }
    }
}

impl Strategy for McpLegacy {
    fn kind(&self) -> Option<Kind> {
        Some(Kind::Mcp)
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn shown_up_front(&self) -> Vec<Address> {
        self.by_tool.values().cloned().collect()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        execute(self.by_tool[tool].clone(), args, state, env)
    }

    fn route(
        &self,
        target: &ExpectedCall,
        args: &Value,
        _state: &State,
    ) -> Option<(String, Value)> {
        let Address::Mcp(s, t) = &target.address else {
            return None;
        };
        Some((legacy_name(s, t), args.clone()))
    }
}
