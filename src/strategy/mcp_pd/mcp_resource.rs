//! MCP, resource: the MCP Progressive Disclosure extension (implementation guide
//! v2.1). Every MCP tool is listed under its legacy name with the first sentence of its
//! description and an open input schema; `read_resource` reads the resource
//! `resource:///tool_descriptions?tools=a,b`, which returns per named tool its full
//! description, input schema, examples and usage and error guidance (where the catalog
//! has them) and authorizes those tools for this episode. A read without `?tools=` is
//! refused with `MISSING_TOOL_SELECTION`; a call to a tool not authorized yet with
//! `TOOL_DESCRIPTION_REQUIRED` and the URI to read. Both answers carry recovery hints,
//! as the guide's server does.

use std::collections::{BTreeSet, HashMap};

use serde_json::{json, Map, Value};

use crate::catalog::{Address, Catalog, McpTool};
use crate::scenario::ExpectedCall;
use crate::strategy::execute::execute;
use crate::strategy::pool::first_sentence;
use crate::strategy::protocol::{
    arg_str, Effect, Env, EventKind, ProtocolError, Rendered, Resolution, State, Strategy,
};
use crate::strategy::results::pretty;
use crate::strategy::templates::{TemplateError, Templates};
use crate::wire::ToolDef;

/// The tool that reads resources.
pub const READ_RESOURCE: &str = "read_resource";
/// The resource holding the full tool descriptions.
pub const URI: &str = "resource:///tool_descriptions";

/// A read of the tool-descriptions resource without `?tools=` (the anti-pattern of
/// fetching everything first), refused.
pub const MISSING_TOOL_SELECTION: EventKind = EventKind {
    name: "missing_tool_selection",
    error: true,
    doc: "reads of the tool-descriptions resource without ?tools= (refused)",
};
/// A call of a tool before its description was read (the anti-pattern of skipping the
/// fetch), refused.
pub const DESCRIPTION_REQUIRED: EventKind = EventKind {
    name: "description_required",
    error: true,
    doc: "calls of a tool before its description was read (refused)",
};
/// A read of the tool-descriptions resource that returned descriptions: an event.
pub const RESOURCE_READS: EventKind = EventKind {
    name: "resource_reads",
    error: false,
    doc: "reads of the tool-descriptions resource that returned descriptions",
};

/// This strategy's own episode state: the MCP tools (their listed names) whose
/// description the episode has read, the only ones it may call.
#[derive(Debug, Clone, Default)]
pub struct Authorized(BTreeSet<String>);

pub struct McpResource {
    rendered: Rendered,
    by_tool: HashMap<String, Address>,
    by_address: HashMap<Address, String>,
    /// Each tool's full description document, by listed name.
    documents: HashMap<String, Value>,
    /// Listed names, in catalog order (the guide's `available_tools`).
    names: Vec<String>,
    /// The missing-selection message.
    missing: String,
    /// The description-required template's sources, rendered per tool.
    templates: std::sync::Arc<Templates>,
}

/// The guide's full description of one tool.
fn document(name: &str, t: &McpTool) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(name));
    o.insert("description".into(), json!(t.description));
    o.insert("inputSchema".into(), (*t.input_schema).clone());
    if let Some(v) = &t.docs.examples {
        o.insert("examples".into(), v.clone());
    }
    if let Some(v) = &t.docs.usage_guidance {
        o.insert("usage_guidance".into(), v.clone());
    }
    if let Some(v) = &t.docs.error_guidance {
        o.insert("error_guidance".into(), v.clone());
    }
    Value::Object(o)
}

impl McpResource {
    pub fn new(
        catalog: &Catalog,
        templates: &std::sync::Arc<Templates>,
    ) -> Result<Self, TemplateError> {
        let t: &Templates = templates;
        let legacy = catalog.legacy_tool_names();
        let mut tools = Vec::new();
        let mut by_tool = HashMap::new();
        let mut by_address = HashMap::new();
        let mut documents = HashMap::new();
        let mut names = Vec::new();
        for s in &catalog.mcp_servers {
            for tool in &s.tools {
                let address = Address::Mcp(s.name.clone(), tool.name.clone());
                let name = legacy[&address.to_string()].clone();
                tools.push(ToolDef {
                    name: name.clone(),
                    description: first_sentence(&tool.description),
                    parameters: json!({"type": "object", "additionalProperties": true}),
                });
                documents.insert(name.clone(), document(&name, tool));
                by_tool.insert(name.clone(), address.clone());
                by_address.insert(address, name.clone());
                names.push(name);
            }
        }
        let vars = json!({
            "uri": URI,
            "example_tool": names.first().map(String::as_str).unwrap_or("TOOL_NAME"),
            "tool_count": names.len(),
        });
        tools.push(ToolDef {
            name: READ_RESOURCE.into(),
            description: t.render("read_resource.j2", &vars)?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "resource_uri": {
                        "type": "string",
                        "description": format!("The resource to read, e.g. {URI}?tools=NAME")
                    }
                },
                "required": ["resource_uri"]
            }),
        });
        let section = t.render("mcp_resource_system.j2", &vars)?;
        let missing = t.render("resource_missing.j2", &vars)?;
        // Rendered once here so that a broken override fails before the run.
        t.render(
            "resource_required.j2",
            json!({"tool": "t", "read_uri": URI, "uri": URI}),
        )?;
        Ok(McpResource {
            rendered: Rendered { section, tools },
            by_tool,
            by_address,
            documents,
            names,
            missing,
            templates: templates.clone(),
        })
    }

    /// The URI that reads one tool's description.
    pub fn uri_for(names: &[&str]) -> String {
        format!("{URI}?tools={}", names.join(","))
    }

    fn read(&self, args: &Value, state: &mut State) -> Resolution {
        let uri = match arg_str(args, "resource_uri", READ_RESOURCE) {
            Ok(u) => u.trim(),
            Err(r) => return r,
        };
        let (base, query) = uri.split_once('?').unwrap_or((uri, ""));
        if base.trim_end_matches('/') != URI {
            return Resolution::error(
                ProtocolError::UnknownTarget,
                format!("unknown resource `{base}`; the resource is {URI}"),
            );
        }
        let selection: Vec<String> = query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == "tools")
            .flat_map(|(_, v)| {
                v.replace("%2C", ",")
                    .replace("%2c", ",")
                    .split(',')
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .collect::<Vec<_>>()
            })
            .collect();
        if selection.is_empty() {
            return Resolution::error_json(
                MISSING_TOOL_SELECTION.into(),
                json!({"error": {
                    "code": "MISSING_TOOL_SELECTION",
                    "message": self.missing,
                    "examples": [
                        McpResource::uri_for(&[self.names.first().map(String::as_str).unwrap_or("TOOL_NAME")]),
                        McpResource::uri_for(&self.names.iter().take(2).map(String::as_str).collect::<Vec<_>>()),
                    ],
                    "available_tools": self.names,
                }}),
            );
        }
        let mut out = Map::new();
        let mut addresses = Vec::new();
        for name in &selection {
            match self.documents.get(name) {
                Some(doc) => {
                    out.insert(name.clone(), doc.clone());
                    state.own_mut::<Authorized>().0.insert(name.clone());
                    let a = self.by_tool[name].clone();
                    if !addresses.contains(&a) {
                        addresses.push(a);
                    }
                }
                None => {
                    out.insert(
                        name.clone(),
                        json!({"error": format!("Tool '{name}' not found"), "available_tools": self.names}),
                    );
                }
            }
        }
        let content = pretty(&Value::Object(out));
        if addresses.is_empty() {
            return Resolution {
                content,
                effect: Effect::Error {
                    error: ProtocolError::UnknownTarget,
                    malformed: false,
                },
            };
        }
        Resolution::fetched(content, addresses).counted(RESOURCE_READS)
    }

    /// Whether this episode has read `tool`'s description.
    fn authorized(state: &State, tool: &str) -> bool {
        state
            .own::<Authorized>()
            .is_some_and(|a| a.0.contains(tool))
    }

    fn required(&self, tool: &str) -> Resolution {
        let read_uri = McpResource::uri_for(&[tool]);
        let text = self
            .templates
            .render(
                "resource_required.j2",
                json!({"tool": tool, "read_uri": read_uri, "uri": URI}),
            )
            .unwrap_or_else(|e| e.to_string());
        let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let message = lines.next().unwrap_or_default().to_string();
        let instructions: Vec<&str> = lines.collect();
        Resolution::error_json(
            DESCRIPTION_REQUIRED.into(),
            json!({"error": {
                "code": "TOOL_DESCRIPTION_REQUIRED",
                "message": message,
                "instructions": instructions,
                "resource_uri": read_uri,
            }}),
        )
    }
}

impl Strategy for McpResource {
    fn owns(&self, address: &Address) -> bool {
        matches!(address, Address::Mcp(..))
    }

    fn order(&self) -> u8 {
        4
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn address_of(&self, tool: &str) -> Option<Address> {
        self.by_tool.get(tool).cloned()
    }

    fn events(&self) -> &'static [EventKind] {
        &[MISSING_TOOL_SELECTION, DESCRIPTION_REQUIRED, RESOURCE_READS]
    }

    /// Nothing: the listed sentence and open schema are not the tool's definition.
    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        if tool == READ_RESOURCE {
            return self.read(args, state);
        }
        if !Self::authorized(state, tool) {
            return self.required(tool);
        }
        execute(self.by_tool[tool].clone(), args, state, env)
    }

    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)> {
        let name = self.by_address.get(&target.address)?;
        if Self::authorized(state, name) {
            return Some((name.clone(), args.clone()));
        }
        Some((
            READ_RESOURCE.to_string(),
            json!({"resource_uri": McpResource::uri_for(&[name])}),
        ))
    }
}
