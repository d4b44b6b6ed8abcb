//! The tool names the legacy strategies, the built-ins and the progressive stubs
//! expose, as FIM One names them (`safe_name`, `mcp_tool_name`), made unique where
//! they clash, and the groups (a provider's namespaces) they fall into.

use crate::names::{tool_safe, unique};

use super::address::Address;
use super::types::{Catalog, RESERVED_TOOL_NAMES};

impl Catalog {
    /// Every tool name the legacy strategies and the built-ins expose, with the address
    /// (or `database:{db}/{suffix}`) behind it, in catalog order. Names are FIM One's
    /// (connectors and databases through [`safe_name`], MCP tools through
    /// [`mcp_tool_name`]); a name already taken — by a built-in, a meta-tool or an
    /// earlier name — gets `_` and 8 hex digits of its address's hash, as FIM One
    /// suffixes a clashing connector with 8 characters of its id. Scoring keeps the
    /// original addresses.
    pub fn exposed_tool_names(&self) -> Vec<(String, String)> {
        let mut raw = Vec::new();
        for c in &self.connectors {
            for a in &c.actions {
                raw.push((
                    format!("{}__{}", safe_name(&c.name), safe_name(&a.name)),
                    Address::Connector(c.name.clone(), a.name.clone()).to_string(),
                ));
            }
        }
        for d in &self.databases {
            for suffix in ["list_tables", "describe_table", "query"] {
                raw.push((
                    format!("{}__{suffix}", safe_name(&d.name)),
                    format!("database:{}/{suffix}", d.name),
                ));
            }
        }
        for s in &self.mcp_servers {
            for t in &s.tools {
                raw.push((
                    mcp_tool_name(&s.name, &t.name),
                    Address::Mcp(s.name.clone(), t.name.clone()).to_string(),
                ));
            }
        }
        let mut taken: std::collections::HashSet<String> = RESERVED_TOOL_NAMES
            .iter()
            .map(|s| s.to_string())
            .chain(self.builtins.iter().map(|b| b.name.clone()))
            .collect();
        let mut out: Vec<(String, String)> = raw
            .into_iter()
            .map(|(name, addr)| {
                // MCP names stay within FIM One's 128 characters, suffix included.
                let cap = addr.starts_with("mcp:").then_some(128);
                (unique(name, &addr, cap, &mut taken), addr)
            })
            .collect();
        for b in &self.builtins {
            out.push((b.name.clone(), format!("builtin:{}", b.name)));
        }
        out
    }

    /// The legacy tool name of an address key of [`Catalog::exposed_tool_names`].
    pub fn legacy_tool_names(&self) -> std::collections::HashMap<String, String> {
        self.exposed_tool_names()
            .into_iter()
            .map(|(name, addr)| (addr, name))
            .collect()
    }

    /// The legacy tools of each connector, database and MCP server as one group each
    /// (a provider's `namespace`), in catalog order: the group's name is the resource's
    /// own, every character outside ASCII letters, digits, `_` and `-` replaced by `_`
    /// and cut to 64 characters (a clash with a tool name or an earlier group suffixed
    /// as in [`Catalog::exposed_tool_names`]); its description is the resource's, or
    /// says what the resource is when it has none. A resource with no tools has no
    /// group.
    pub fn tool_groups(&self) -> Vec<crate::wire::ToolGroup> {
        let names = self.legacy_tool_names();
        let mut taken: std::collections::HashSet<String> = names.values().cloned().collect();
        taken.extend(RESERVED_TOOL_NAMES.iter().map(|s| s.to_string()));
        let mut groups = Vec::new();
        let mut group = |kind: &str, name: &str, description: &str, keys: Vec<String>| {
            let tools: Vec<String> = keys.iter().filter_map(|k| names.get(k)).cloned().collect();
            if tools.is_empty() {
                return;
            }
            let raw = tool_safe(name, 64);
            let raw = if raw.trim_matches('_').is_empty() {
                kind.replace(' ', "_")
            } else {
                raw
            };
            let description = if description.trim().is_empty() {
                format!("The tools of the {kind} {name}.")
            } else {
                description.to_string()
            };
            groups.push(crate::wire::ToolGroup {
                name: unique(raw, &format!("{kind}:{name}"), Some(64), &mut taken),
                description,
                tools,
            });
        };
        for c in &self.connectors {
            let keys = (c.actions.iter())
                .map(|a| Address::Connector(c.name.clone(), a.name.clone()).to_string())
                .collect();
            group("connector", &c.name, &c.description, keys);
        }
        for d in &self.databases {
            let keys = ["list_tables", "describe_table", "query"]
                .iter()
                .map(|suffix| format!("database:{}/{suffix}", d.name))
                .collect();
            group("database", &d.name, &d.description, keys);
        }
        for s in &self.mcp_servers {
            let keys = (s.tools.iter())
                .map(|t| Address::Mcp(s.name.clone(), t.name.clone()).to_string())
                .collect();
            group("MCP server", &s.name, &s.description, keys);
        }
        groups
    }

    /// The names the progressive `connector` tool shows, one per connector in catalog
    /// order: [`safe_name`], a later clash suffixed as in [`Catalog::exposed_tool_names`].
    pub fn connector_stub_names(&self) -> Vec<String> {
        stub_names(self.connectors.iter().map(|c| c.name.as_str()), "connector")
    }

    /// The names the progressive `database` tool shows, as for connectors.
    pub fn database_stub_names(&self) -> Vec<String> {
        stub_names(self.databases.iter().map(|d| d.name.as_str()), "db")
    }

    /// The clashes that remain errors: built-ins (whose names are used verbatim) that
    /// share a name, or take a meta-tool's name (`reserved`). Legacy names are made
    /// unique instead (see [`Catalog::exposed_tool_names`]).
    pub fn tool_name_clashes(&self, reserved: &[&str]) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for b in &self.builtins {
            if reserved.contains(&b.name.as_str()) {
                out.push(format!(
                    "the built-in `{}` has a meta-tool's name; rename it",
                    b.name
                ));
            } else if !seen.insert(b.name.as_str()) {
                out.push(format!("two built-ins are named `{}`; rename one", b.name));
            }
        }
        out
    }
}

fn stub_names<'a>(names: impl Iterator<Item = &'a str>, kind: &str) -> Vec<String> {
    let mut taken = std::collections::HashSet::new();
    names
        .map(|n| {
            let safe = safe_name(n);
            let safe = if safe.is_empty() {
                format!("{kind}_{}", &crate::hash::content_hash(n.as_bytes())[..8])
            } else {
                safe
            };
            unique(safe, &format!("{kind}:{n}"), None, &mut taken)
        })
        .collect()
}

/// FIM One's name for a connector, database or action: lower-cased, every character
/// that is not an ASCII letter or digit replaced by `_`, `_` trimmed from both ends.
pub fn safe_name(s: &str) -> String {
    let mapped: String = s
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '_'
            }
        })
        .collect();
    mapped.trim_matches('_').to_string()
}

/// FIM One's legacy MCP tool name: `{server}__{tool}` with every character outside
/// ASCII letters, digits, `_` and `-` replaced by `_` (case kept), cut to 128 characters.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    tool_safe(&format!("{server}__{tool}"), 128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::types::*;
    use std::sync::Arc;

    /// An MCP tool with only a name.
    fn tool(n: &str) -> McpTool {
        McpTool {
            name: n.into(),
            description: String::new(),
            input_schema: Arc::new(serde_json::json!({"type": "object"})),
            response: None,
            docs: ToolDocs::default(),
        }
    }

    #[test]
    fn names_are_sanitized_as_fim_one_does() {
        assert_eq!(safe_name("My-ERP "), "my_erp");
        assert_eq!(safe_name("__Get Order__"), "get_order");
        assert_eq!(
            mcp_tool_name("Asset Price MCP", "get-price"),
            "Asset_Price_MCP__get-price"
        );
        assert_eq!(mcp_tool_name("s", &"x".repeat(200)).chars().count(), 128);
    }

    #[test]
    fn clashing_names_are_made_unique_and_keep_their_addresses() {
        let server = |n: &str| McpServer {
            name: n.into(),
            description: String::new(),
            tools: vec![tool("get_price")],
        };
        let cat = Catalog {
            mcp_servers: vec![server("Asset_Price_MCP"), server("Asset Price MCP")],
            ..Catalog::default()
        };
        let names = cat.exposed_tool_names();
        assert_eq!(names[0].0, "Asset_Price_MCP__get_price");
        assert!(
            names[1].0.starts_with("Asset_Price_MCP__get_price_"),
            "{names:?}"
        );
        assert_eq!(names[1].0.len(), "Asset_Price_MCP__get_price_".len() + 8);
        assert_eq!(names[1].1, "mcp:Asset Price MCP/get_price");
        assert!(cat.tool_name_clashes(&["mcp"]).is_empty());
        let conns = Catalog {
            connectors: ["CRM", "crm", "---"]
                .iter()
                .map(|n| Connector {
                    name: n.to_string(),
                    description: String::new(),
                    actions: Vec::new(),
                })
                .collect(),
            ..Catalog::default()
        };
        let stubs = conns.connector_stub_names();
        assert_eq!(stubs[0], "crm");
        assert!(
            stubs[1].starts_with("crm_") && stubs[1].len() == 12,
            "{stubs:?}"
        );
        assert!(stubs[2].starts_with("connector_"), "{stubs:?}");
    }

    #[test]
    fn each_resource_is_one_group_named_and_described() {
        let server = |n: &str, d: &str, tools: &[&str]| McpServer {
            name: n.into(),
            description: d.into(),
            tools: tools.iter().map(|t| tool(t)).collect(),
        };
        let cat = Catalog {
            mcp_servers: vec![
                server("Asset Price MCP", "Prices.", &["get_price", "list"]),
                server("Asset_Price_MCP", "", &["get_price"]),
                // A server named as one of the other's tools.
                server("Asset_Price_MCP__list", "Lists.", &["x"]),
            ],
            databases: vec![Database {
                name: "HR".into(),
                description: "People.".into(),
                tables: Vec::new(),
                seed_sql: None,
            }],
            ..Catalog::default()
        };
        let names = cat.legacy_tool_names();
        let groups = cat.tool_groups();
        let brief: Vec<(&str, &str, usize)> = groups
            .iter()
            .map(|g| (g.name.as_str(), g.description.as_str(), g.tools.len()))
            .collect();
        assert_eq!(brief[0], ("HR", "People.", 3), "databases come first");
        assert_eq!(brief[1], ("Asset_Price_MCP", "Prices.", 2));
        // The second server's name is taken by the first group: suffixed.
        assert!(brief[2].0.starts_with("Asset_Price_MCP_") && brief[2].0.len() == 24);
        assert_eq!(brief[2].1, "The tools of the MCP server Asset_Price_MCP.");
        // A group never takes a tool's name.
        assert_ne!(brief[3].0, "Asset_Price_MCP__list");
        assert!(!names.values().any(|n| n == brief[3].0));
        // Members are the legacy names, each in exactly one group.
        assert_eq!(
            groups[0].tools,
            ["HR__list_tables", "HR__describe_table", "HR__query"].map(|s| s.to_lowercase())
        );
        let mut members: Vec<&String> = groups.iter().flat_map(|g| &g.tools).collect();
        members.sort();
        let mut all: Vec<&String> = names.values().collect();
        all.sort();
        assert_eq!(members, all);
    }
}
