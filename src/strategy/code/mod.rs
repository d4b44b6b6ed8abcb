//! Code mode and code files: the catalog as a typed API the model programs against
//! (Cloudflare's Code Mode, Anthropic's code execution with MCP), searched by
//! declaration (`code-mode`) or read as a file tree (`code-files`), and one executor
//! that runs the program in an embedded, bounded sandbox and records each call it makes
//! as an executed call on its address ([`code_api`]).

pub mod code_api;
pub mod code_files;
pub mod code_mode;
