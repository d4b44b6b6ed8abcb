//! Built-in tools: always offered directly, with their full parameter schemas, in
//! every mode.

use serde_json::Value;

use crate::catalog::{Address, Catalog};
use crate::scenario::ExpectedCall;
use crate::strategy::execute::execute;
use crate::strategy::protocol::{Env, Rendered, Resolution, State, Strategy};
use crate::wire::ToolDef;

pub struct Builtins {
    rendered: Rendered,
}

impl Builtins {
    pub fn new(catalog: &Catalog) -> Self {
        let tools = catalog
            .builtins
            .iter()
            .map(|b| ToolDef {
                name: b.name.clone(),
                description: b.description.clone(),
                parameters: b.parameters.clone(),
            })
            .collect();
        Builtins {
            rendered: Rendered::tools(tools),
        }
    }
}

impl Strategy for Builtins {
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Builtin(_))
    }

    fn order(&self) -> u8 {
        0
    }

    fn address_of(&self, tool: &str) -> Option<Address> {
        self.rendered
            .tools
            .iter()
            .any(|t| t.name == tool)
            .then(|| Address::Builtin(tool.to_string()))
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn shown_up_front(&self) -> Vec<Address> {
        self.rendered
            .tools
            .iter()
            .map(|t| Address::Builtin(t.name.clone()))
            .collect()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        execute(Address::Builtin(tool.to_string()), args, state, env)
    }

    fn route(
        &self,
        target: &ExpectedCall,
        args: &Value,
        _state: &State,
    ) -> Option<(String, Value)> {
        let Address::Builtin(n) = &target.address else {
            return None;
        };
        Some((n.clone(), args.clone()))
    }
}
