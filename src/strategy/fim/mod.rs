//! FIM One's strategies: the seed system's four switches, one strategy per resource
//! kind and disclosure (skills inline or progressive with `read_skill`; connectors,
//! databases and MCP servers legacy, every action, table tool or MCP tool its own
//! function, or progressive, one meta-tool per kind: `discover`, then `execute`,
//! `query` or `call`) and the built-in tools every mode carries. Their formats, limits
//! and names reproduce FIM One's; the selection step and the result shaping they run
//! with are shared ([`super::selection`], [`super::results`]): every preset runs them.

pub mod builtins;
pub mod connectors_legacy;
pub mod connectors_progressive;
pub mod databases_legacy;
pub mod databases_progressive;
pub mod legacy;
pub mod mcp_legacy;
pub mod mcp_progressive;
pub mod skills_inline;
pub mod skills_progressive;
