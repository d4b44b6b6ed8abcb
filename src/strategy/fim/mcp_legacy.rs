//! MCP, legacy: one tool per MCP tool, `{server}__{tool}` (FIM One's sanitising: case
//! and `-` kept), with its description and full input schema as the server gave them.

use super::legacy::Direct;
use crate::catalog::{Address, Catalog};

/// The legacy tools of every MCP server's tools, last in registry order.
pub fn new(catalog: &Catalog) -> Direct {
    let defs = catalog.mcp_servers.iter().flat_map(|s| {
        s.tools.iter().map(|t| {
            (
                Address::Mcp(s.name.clone(), t.name.clone()),
                t.description.clone(),
                (*t.input_schema).clone(),
            )
        })
    });
    Direct::new(catalog, 4, |a| matches!(a, Address::Mcp(..)), defs)
}
