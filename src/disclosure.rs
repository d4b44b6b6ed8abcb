//! The disclosure vocabulary: the ways one kind of resource can be shown to a model.
//! The scenario format names them (`agent.modes`) and the strategies implement them,
//! so they live below both.

use serde::Serialize;

use crate::catalog::Kind;

/// How one kind of resource is disclosed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Disclosure {
    /// Short stubs plus a meta-tool that fetches full definitions on demand.
    Progressive,
    /// Skills only: every skill's full text in the system prompt.
    Inline,
    /// Connectors, databases, MCP: one tool per action / tool, full schemas up front.
    Legacy,
}

impl Disclosure {
    pub fn as_str(self) -> &'static str {
        match self {
            Disclosure::Progressive => "progressive",
            Disclosure::Inline => "inline",
            Disclosure::Legacy => "legacy",
        }
    }

    /// Parses a value for one kind: skills take `progressive|inline`, the others
    /// `progressive|legacy`.
    pub fn parse_for(kind: Kind, value: &str) -> Result<Disclosure, ModeError> {
        let v = value.trim().to_ascii_lowercase();
        match (kind, v.as_str()) {
            (_, "progressive") => Ok(Disclosure::Progressive),
            (Kind::Skills, "inline") => Ok(Disclosure::Inline),
            (Kind::Connectors | Kind::Databases | Kind::Mcp, "legacy") => Ok(Disclosure::Legacy),
            (Kind::Skills, _) => Err(ModeError(format!(
                "`{value}` is not a disclosure for skills; use progressive or inline"
            ))),
            (k, _) => Err(ModeError(format!(
                "`{value}` is not a disclosure for {}; use progressive or legacy",
                k.as_str()
            ))),
        }
    }
}

/// A mode, preset or disclosure value that does not parse; the message says what
/// would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ModeError(pub String);
