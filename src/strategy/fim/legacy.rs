//! What the legacy strategies of connectors and MCP servers share: one tool per
//! callable thing, under FIM One's legacy name, executed as it is called. (Databases'
//! legacy tools also answer `list_tables` and `describe_table` themselves: see
//! `databases_legacy.rs`.)

use std::collections::HashMap;

use serde_json::Value;

use crate::catalog::{Address, Catalog};
use crate::scenario::ExpectedCall;
use crate::strategy::execute::execute;
use crate::strategy::protocol::{Env, Rendered, Resolution, State, Strategy};
use crate::wire::ToolDef;

/// One tool per address, each executed as called.
pub struct Direct {
    rendered: Rendered,
    by_tool: HashMap<String, Address>,
    by_address: HashMap<Address, String>,
    /// Where the strategy's tools come in FIM One's registry order.
    order: u8,
    /// The addresses it owns.
    owns: fn(&Address) -> bool,
}

impl Direct {
    /// The tools of `defs` (address, description, parameters), named as the catalog's
    /// legacy names say.
    pub fn new(
        catalog: &Catalog,
        order: u8,
        owns: fn(&Address) -> bool,
        defs: impl Iterator<Item = (Address, String, Value)>,
    ) -> Direct {
        let names = catalog.legacy_tool_names();
        let mut tools = Vec::new();
        let mut by_tool = HashMap::new();
        let mut by_address = HashMap::new();
        for (address, description, parameters) in defs {
            let name = names[&address.to_string()].clone();
            by_tool.insert(name.clone(), address.clone());
            by_address.insert(address, name.clone());
            tools.push(ToolDef {
                name,
                description,
                parameters,
            });
        }
        Direct {
            rendered: Rendered::tools(tools),
            by_tool,
            by_address,
            order,
            owns,
        }
    }
}

impl Strategy for Direct {
    fn owns(&self, address: &Address) -> bool {
        (self.owns)(address)
    }

    fn order(&self) -> u8 {
        self.order
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
