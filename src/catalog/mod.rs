//! The catalog: everything an agent could use, and the canonical [`Address`] of each
//! callable thing.
//!
//! Scoring happens on addresses, never on strategy-specific tool names, so strategies
//! are comparable: `connector:erp/get_order` is the same call whether the model reached
//! it through the progressive `connector` meta-tool or the legacy `erp__get_order` tool.//!
//! [`types`](mod@types) holds the resources, [`address`](mod@address) the addresses,
//! [`tool_names`] the names tools are exposed under.

pub mod address;
pub mod tool_names;
pub mod types;

pub use address::{Address, Part, Resource};
pub use tool_names::{mcp_tool_name, safe_name};
pub use types::*;
