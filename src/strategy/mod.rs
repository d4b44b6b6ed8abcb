//! Strategies: how the catalog is disclosed to the model and how its calls are answered
//! (DESIGN §5).
//!
//! A [`Mode`] picks one [`Strategy`] per resource kind; each strategy is one file and
//! renders a system-prompt section plus tool definitions, answers calls to its tools,
//! and knows the shortest protocol route to an address (used by the oracle model).
//! [`Composite`] stacks the strategies of a mode, adds built-in tools, and runs the
//! selection step with `request_tools`. Each strategy keeps its own episode state and
//! names the events it counts ([`protocol`]); [`defined`] lists every such event.
//!
//! The strategies come in families, one folder each, and one family never imports
//! another: they meet only in the composite (which stacks them) and in [`defined`]
//! (which lists their events).
//!
//! - [`fim`]: FIM One's per-kind strategies (progressive, legacy and inline for
//!   skills, connectors, databases and MCP servers) and its built-in tools;
//! - [`mcp_pd`]: the MCP Progressive Disclosure extension's resource strategy;
//! - [`search`]: tool search and retrieval, which hold tools back in a pool;
//! - [`code`]: code mode and code files, the catalog as an API programs call.
//!
//! The shared vocabulary stays here, at the top: the protocol ([`protocol`]), modes
//! ([`mode`]), settings ([`config`]), prompt templates ([`templates`]), executing a
//! call on the environment ([`execute`]), the selection step FIM One runs in every
//! preset ([`selection`]), result shaping ([`results`]), the pool's helpers several
//! families use ([`pool`]), and the composite.

// The shared vocabulary: what every family speaks and where they meet.
pub mod composite;
pub mod config;
pub mod defined;
pub mod execute;
pub mod mode;
pub mod pool;
pub mod protocol;
pub mod results;
pub mod selection;
pub mod templates;

// The families: each folder one kind of disclosure and the real system it reproduces.
pub mod code;
pub mod fim;
pub mod mcp_pd;
pub mod search;

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
