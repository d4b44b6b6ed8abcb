//! MCP, legacy: one tool per MCP tool, `{server}__{tool}` (FIM One's sanitising: case
//! and `-` kept), with its description and full input schema as the server gave them.

use std::collections::HashMap;

use serde_json::Value;

use super::execute::execute;
use super::protocol::{Env, Rendered, Resolution, State, Strategy};
use crate::catalog::{Address, Catalog};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

pub struct McpLegacy {
    rendered: Rendered,
    by_tool: HashMap<String, Address>,
    by_address: HashMap<Address, String>,
}

impl McpLegacy {
    pub fn new(catalog: &Catalog) -> Self {
        let mut tools = Vec::new();
        let mut by_tool = HashMap::new();
        let mut by_address = HashMap::new();
        let names = catalog.legacy_tool_names();
        for s in &catalog.mcp_servers {
            for t in &s.tools {
                let address = Address::Mcp(s.name.clone(), t.name.clone());
                let name = names[&address.to_string()].clone();
                by_tool.insert(name.clone(), address.clone());
                by_address.insert(address, name.clone());
                tools.push(ToolDef {
                    name,
                    description: t.description.clone(),
                    parameters: (*t.input_schema).clone(),
                });
            }
        }
        McpLegacy {
            rendered: Rendered {
                section: String::new(),
                tools,
            },
            by_tool,
            by_address,
        }
    }
}

impl Strategy for McpLegacy {
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Mcp(..))
    }

    fn order(&self) -> u8 {
        4
    }

    fn address_of(&self, tool: &str) -> Option<Address> {
        self.by_tool.get(tool).cloned()
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
        let name = self.by_address.get(&target.address)?;
        Some((name.clone(), args.clone()))
    }
}
