//! Strategies: how the catalog is disclosed to the model and how its calls are answered
//! (DESIGN §5).
//!
//! A [`Mode`] picks one [`Strategy`] per resource kind; each strategy is one file and
//! renders a system-prompt section plus tool definitions, answers calls to its tools,
//! and knows the shortest protocol route to an address (used by the oracle model).
//! [`Composite`] stacks the strategies of a mode, adds built-in tools, and runs the
//! selection step with `request_tools`. Each strategy keeps its own episode state and
//! names the events it counts ([`protocol`]); [`defined`] lists every such event.

pub mod composite;
pub mod config;
pub mod defined;
pub mod execute;
pub mod mode;
pub mod protocol;
pub mod templates;

mod builtins;
pub mod code_api;
pub mod code_files;
pub mod code_mode;
mod connectors_legacy;
mod connectors_progressive;
mod databases_legacy;
mod databases_progressive;
mod mcp_legacy;
mod mcp_progressive;
pub mod mcp_resource;
pub mod pool;
pub mod results;
mod retrieval;
pub mod selection;
mod skills_inline;
mod skills_progressive;
mod tool_search;

pub use composite::Composite;
pub use config::{Cut, ProtocolConfig, ResultLimits, SelectionConfig, UnloadedCalls};
pub use execute::{execute, schema_errors};
pub use mode::{Disclosure, Mode};
pub use protocol::{
    Effect, Env, Event, EventKind, PartState, ProgramCall, ProtocolError, Rendered, Resolution,
    Retrieved, State, Strategy,
};
pub use selection::Level;
pub use templates::{TemplateError, Templates};
