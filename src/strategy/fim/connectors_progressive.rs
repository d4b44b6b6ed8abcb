//! Connectors, progressive: one `connector` tool whose description lists each
//! connector (FIM One's sanitised name, its description, its action names);
//! `discover <connector>` returns the actions with their full parameter schemas as
//! indented text, `execute <connector> <action> {parameters}` runs one.

use std::sync::Arc;

use serde_json::{json, Value};

use super::databases_progressive::or_name;
use crate::catalog::{safe_name, Address, Catalog, Connector};
use crate::scenario::ExpectedCall;
use crate::strategy::execute::execute;
use crate::strategy::protocol::{
    arg_str, meta_args, no_container, parameters_arg, valid, Env, ProtocolError, Rendered,
    Resolution, State, Strategy,
};
use crate::strategy::results::{join_marked, pretty, Answers};
use crate::strategy::templates::{TemplateError, Templates};
use crate::wire::ToolDef;

pub const CONNECTOR: &str = "connector";

pub struct ConnectorsProgressive {
    catalog: Arc<Catalog>,
    rendered: Rendered,
    /// The name each connector is shown by, in catalog order.
    names: Vec<String>,
    /// `discover`'s answer per connector, in catalog order.
    discovered: Answers,
}

impl ConnectorsProgressive {
    pub fn new(catalog: &Arc<Catalog>, t: &Templates) -> Result<Self, TemplateError> {
        let names = catalog.connector_stub_names();
        let stubs: Vec<Value> = catalog
            .connectors
            .iter()
            .zip(&names)
            .map(|(c, name)| {
                json!({
                    "name": name,
                    "description": or_name(&c.description, &c.name),
                    "actions": c.actions.iter().map(|a| safe_name(&a.name)).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        let tool = ToolDef {
            name: CONNECTOR.into(),
            description: t.render("connector.j2", json!({"connectors": stubs}))?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "subcommand": {"type": "string", "enum": ["discover", "execute"],
                        "description": "discover: a connector's actions; execute: call one of them."},
                    "connector": {"type": "string", "description": "Name of the connector.", "enum": sorted},
                    "action": {"type": "string", "description": "Action to call (execute only)."},
                    "parameters": {"type": "object", "description": "Arguments object for the action (execute only)."}
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
            discovered: Answers::new(names.len()),
            names,
        })
    }

    /// The connector shown by `name`, and its position in the catalog.
    fn by_name(&self, name: &str) -> Option<(usize, &Connector)> {
        let i = self.names.iter().position(|n| n == name)?;
        self.catalog.connectors.get(i).map(|c| (i, c))
    }

    fn name_of(&self, connector: &str) -> Option<&str> {
        let i = self
            .catalog
            .connectors
            .iter()
            .position(|c| c.name == connector)?;
        self.names.get(i).map(String::as_str)
    }
}

/// `discover`'s answer: the connector, then per action its method, path, description
/// and parameters (indented JSON, or `(none)`).
fn discover_text(conn: &Connector, shown_as: &str) -> (String, Vec<usize>) {
    let mut lines = vec![
        format!("Connector: {shown_as}"),
        format!("Description: {}", or_name(&conn.description, &conn.name)),
        format!("Actions ({}):", conn.actions.len()),
        String::new(),
    ];
    let mut marks = Vec::with_capacity(conn.actions.len());
    for a in &conn.actions {
        lines.push(format!("  {}:", safe_name(&a.name)));
        lines.push(format!("    method: {}", a.method.as_deref().unwrap_or("")));
        lines.push(format!("    path: {}", a.path.as_deref().unwrap_or("")));
        if !a.description.is_empty() {
            lines.push(format!("    description: {}", a.description));
        }
        let empty =
            a.parameters.is_null() || a.parameters.as_object().is_some_and(|o| o.is_empty());
        lines.push(if empty {
            "    parameters: (none)".to_string()
        } else {
            format!("    parameters: {}", pretty(&a.parameters))
        });
        lines.push(String::new());
        marks.push(lines.len());
    }
    join_marked(&lines, &marks)
}

impl Strategy for ConnectorsProgressive {
    // owns, order, render and shown_up_front look alike in the three progressive
    // meta-tools but say different things: which kind, and where FIM One registers it.
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Connector(..))
    }

    fn order(&self) -> u8 {
        1
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        let (sub, name) = match meta_args(args, "connector", tool) {
            Ok(x) => x,
            Err(r) => return r,
        };
        let Some((i, conn)) = self.by_name(name) else {
            // An `execute` of a connector that does not exist is a call made; a
            // `discover` of one is a look.
            return no_container(
                "connector",
                name,
                valid("connectors", &self.names),
                sub == "execute",
            );
        };
        match sub {
            "discover" if conn.actions.is_empty() => Resolution::fetched(
                format!("Connector '{name}' has no actions set up."),
                Vec::new(),
            ),
            "discover" => {
                let (content, ends) = self.discovered.get(i, || discover_text(conn, name));
                let addrs = conn
                    .actions
                    .iter()
                    .map(|a| Address::Connector(conn.name.clone(), a.name.clone()))
                    .collect();
                Resolution::fetched_at(content, addrs, ends)
            }
            "execute" => {
                let action = match arg_str(args, "action", tool) {
                    Ok(a) => a,
                    Err(r) => return r,
                };
                // The first action whose shown name matches, as FIM One looks it up.
                let Some(found) = conn.actions.iter().find(|a| safe_name(&a.name) == action) else {
                    return Resolution::malformed(
                        ProtocolError::UnknownTarget,
                        format!(
                            "connector `{name}` has no action `{action}`; {}",
                            valid("actions", conn.actions.iter().map(|a| safe_name(&a.name)))
                        ),
                    );
                };
                let params = parameters_arg(args);
                execute(
                    Address::Connector(conn.name.clone(), found.name.clone()),
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
        let Address::Connector(raw, a) = &target.address else {
            return None;
        };
        let c = self.name_of(raw)?;
        let a = safe_name(a);
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
