//! Facts about where the binary runs, detected once at the edge and passed in.

use std::io::IsTerminal;

/// Facts about where we run, passed in rather than looked up deep inside.
#[derive(Debug, Clone, Copy)]
pub struct Environment {
    pub stderr_is_terminal: bool,
    pub is_ci: bool,
}

impl Environment {
    pub fn detect() -> Environment {
        Environment {
            stderr_is_terminal: std::io::stderr().is_terminal(),
            is_ci: std::env::var_os("CI")
                .is_some_and(|v| !v.is_empty() && v != "false" && v != "0"),
        }
    }
}
