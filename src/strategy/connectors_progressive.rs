//! Connectors, progressive: one `connector` tool whose description lists each
//! connector with its action names; `discover <connector>` returns the actions' full
//! schemas, `execute <connector> <action> {parameters}` runs one.

use std::sync::Arc;

use serde_json::{json, Value};

use super::templates::TemplateError;
use super::{
    arg_str, execute, valid, Env, ProtocolError, Rendered, Resolution, State, Strategy, Templates,
};
use crate::catalog::{Address, Catalog, Kind};
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

pub const CONNECTOR: &str = "connector";

pub struct ConnectorsProgressive {
    catalog: Arc<Catalog>,
    rendered: Rendered,
}

impl ConnectorsProgressive {
    pub fn new(catalog: &Arc<Catalog>, t: &Templates) -> Result<Self, TemplateError> {
        let stubs: Vec<Value> = catalog
            .connectors
            .iter()
            .map(|c| json!({"name": c.name, "description": c.description.trim(), "actions": c.actions.iter().map(|a| &a.name).collect::<Vec<_>>()}))
            .collect();
        let names: Vec<&str> = catalog.connectors.iter().map(|c| c.name.as_str()).collect();
        let tool = ToolDef {
            name: CONNECTOR.into(),
            description: t.render("connector.j2", json!({"connectors": stubs}))?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "subcommand": {"type": "string", "enum": ["discover", "execute"]},
                    "connector": {"type": "string", "enum": names},
                    "action": {"type": "string", "description": "The action to execute (execute only)."},
                    "parameters": {"type": "object", "description": "The action's parameters (execute only)."}
                },
                "required": ["subcommand", "connector"]
            }),
        };
        Ok(ConnectorsProgressive {
            catalog: catalog.clone(),
            rendered: Rendered {
                section: String::new(),
                tools: vec![tool],
            },
        })
    }
}

impl Strategy for ConnectorsProgressive {
    fn kind(&self) -> Option<Kind> {
        Some(Kind::Connectors)
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
            arg_str(args, "connector", tool),
        ) {
            (Ok(s), Ok(n)) => (s, n),
            (Err(r), _) | (_, Err(r)) => return r,
        };
        let Some(conn) = self.catalog.connector(name) else {
            return Resolution::error(
                ProtocolError::UnknownTarget,
                format!(
                    "no connector `{name}`; {}",
                    valid(
                        "connectors",
                        self.catalog.connectors.iter().map(|c| &c.name)
                    )
                ),
            );
        };
        match sub {
            "discover" => {
                let actions: Vec<Value> = conn
                    .actions
                    .iter()
                    .map(|a| json!({"name": a.name, "description": a.description, "method": a.method, "path": a.path, "parameters": a.parameters}))
                    .collect();
                let content = json!({"connector": conn.name, "description": conn.description, "actions": actions}).to_string();
                let addrs = conn
                    .actions
                    .iter()
                    .map(|a| Address::Connector(conn.name.clone(), a.name.clone()))
                    .collect();
                Resolution::fetched(content, addrs)
            }
            "execute" => {
                let action = match arg_str(args, "action", tool) {
                    Ok(a) => a,
                    Err(r) => return r,
                };
                if !conn.actions.iter().any(|a| a.name == action) {
                    return Resolution::error(
                        ProtocolError::UnknownTarget,
                        format!(
                            "connector `{name}` has no action `{action}`; {}",
                            valid("actions", conn.actions.iter().map(|a| &a.name))
                        ),
                    );
                }
                let params = args.get("parameters").cloned().unwrap_or_else(|| json!({}));
                execute(
                    Address::Connector(name.to_string(), action.to_string()),
                    &params,
                    state,
                    env,
                )
            }
            other => Resolution::error(
                ProtocolError::BadSubcommand,
                format!("unknown subcommand `{other}`; valid subcommands: discover, execute"),
            ),
        }
    }

    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)> {
        let Address::Connector(c, a) = &target.address else {
            return None;
        };
        Some(if state.shown.contains(&target.address) {
            (
                CONNECTOR.into(),
                json!({"subcommand": "execute", "connector": c, "action": a, "parameters": args}),
            )
        } else {
            (
                CONNECTOR.into(),
                json!({"subcommand": "discover", "connector": c}),
            )
        })
    }
}
