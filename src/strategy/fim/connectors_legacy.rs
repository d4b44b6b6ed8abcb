//! Connectors, legacy: one tool per action, `{connector}__{action}` (FIM One's
//! sanitised names), with the action's description (or `METHOD path` when it has none)
//! and its full parameter schema.

use std::collections::HashMap;

use serde_json::Value;

use super::execute::execute;
use super::protocol::{Env, Rendered, Resolution, State, Strategy};
use crate::catalog::{Address, Catalog};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

pub struct ConnectorsLegacy {
    rendered: Rendered,
    by_tool: HashMap<String, Address>,
    by_address: HashMap<Address, String>,
}

impl ConnectorsLegacy {
    pub fn new(catalog: &Catalog) -> Self {
        let mut tools = Vec::new();
        let mut by_tool = HashMap::new();
        let mut by_address = HashMap::new();
        let names = catalog.legacy_tool_names();
        for c in &catalog.connectors {
            for a in &c.actions {
                let address = Address::Connector(c.name.clone(), a.name.clone());
                let name = names[&address.to_string()].clone();
                by_tool.insert(name.clone(), address.clone());
                by_address.insert(address, name.clone());
                let description = if a.description.is_empty() {
                    format!(
                        "{} {}",
                        a.method.as_deref().unwrap_or(""),
                        a.path.as_deref().unwrap_or("")
                    )
                    .trim()
                    .to_string()
                } else {
                    a.description.clone()
                };
                tools.push(ToolDef {
                    name,
                    description,
                    parameters: a.parameters.clone(),
                });
            }
        }
        ConnectorsLegacy {
            rendered: Rendered {
                section: String::new(),
                tools,
            },
            by_tool,
            by_address,
        }
    }
}

impl Strategy for ConnectorsLegacy {
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Connector(..))
    }

    fn order(&self) -> u8 {
        1
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
