//! Connectors, legacy: one tool per action, `{connector}__{action}`, with the action's
//! full parameter schema.

use std::collections::HashMap;

use serde_json::Value;

use super::{execute, Env, Rendered, Resolution, State, Strategy};
use crate::catalog::{legacy_name, Address, Catalog, Kind};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

pub struct ConnectorsLegacy {
    rendered: Rendered,
    by_tool: HashMap<String, Address>,
}

impl ConnectorsLegacy {
    pub fn new(catalog: &Catalog) -> Self {
        let mut tools = Vec::new();
        let mut by_tool = HashMap::new();
        for c in &catalog.connectors {
            for a in &c.actions {
                let name = legacy_name(&c.name, &a.name);
                by_tool.insert(
                    name.clone(),
                    Address::Connector(c.name.clone(), a.name.clone()),
                );
                tools.push(ToolDef {
                    name,
                    description: a.description.clone(),
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
        }
    }
}

impl Strategy for ConnectorsLegacy {
    fn kind(&self) -> Option<Kind> {
        Some(Kind::Connectors)
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
        let Address::Connector(c, a) = &target.address else {
            return None;
        };
        Some((legacy_name(c, a), args.clone()))
    }
}
