//! The MCP Progressive Disclosure extension: `tools/list` gives one sentence per tool
//! and an empty schema, full descriptions come from reading
//! `resource:///tool_descriptions?tools=…`, and a call to a tool whose description was
//! not read in the session is refused with the recovery URI.

pub mod mcp_resource;
