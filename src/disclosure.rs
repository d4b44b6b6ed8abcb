//! The disclosure vocabulary: the ways one kind of resource can be shown to a model.
//! The scenario format names them (`agent.modes`) and the strategies implement them,
//! so they live below both.
//!
//! The seed system's switches (FIM One's `*_TOOL_MODE`) take `progressive`, `inline`
//! (skills) and `legacy` (the other kinds); those are what a scenario's `agent.modes`
//! and the environment variables accept ([`Disclosure::parse_for`]). A `--mode` spec
//! also takes the strategies beyond the seed system ([`Disclosure::parse_spec_for`]):
//! `resource` (MCP only: the MCP Progressive Disclosure extension), `deferred` (behind a
//! tool-search tool) and `retrieved` (pre-selected by retrieval before the model is
//! asked).

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
    /// MCP only: every tool with one sentence and an open schema; full descriptions
    /// read from the `tool_descriptions` resource, which authorizes the tool.
    Resource,
    /// Connectors, databases, MCP: held back behind a search tool; what a search finds
    /// joins the tool list.
    Deferred,
    /// Connectors, databases, MCP: the top-k tools by retrieval for the query are the
    /// ones shown.
    Retrieved,
    /// Connectors, databases, MCP: functions of a typed API the model searches and
    /// calls from a program (code mode).
    Code,
    /// Connectors, databases, MCP: the same API as a file tree the model lists and
    /// reads (code files).
    Files,
}

impl Disclosure {
    pub fn as_str(self) -> &'static str {
        match self {
            Disclosure::Progressive => "progressive",
            Disclosure::Inline => "inline",
            Disclosure::Legacy => "legacy",
            Disclosure::Resource => "resource",
            Disclosure::Deferred => "deferred",
            Disclosure::Retrieved => "retrieved",
            Disclosure::Code => "code",
            Disclosure::Files => "files",
        }
    }

    /// Parses one of the seed system's values for one kind: skills take
    /// `progressive|inline`, the others `progressive|legacy` (scenario `agent.modes`,
    /// environment variables).
    pub fn parse_for(kind: Kind, value: &str) -> Result<Disclosure, ModeError> {
        let seed = if kind == Kind::Skills {
            "progressive or inline"
        } else {
            "progressive or legacy"
        };
        let parsed = Disclosure::parse_spec_for(kind, value).map_err(|_| {
            ModeError(format!(
                "`{value}` is not a disclosure for {}; use {seed}",
                kind.as_str()
            ))
        })?;
        match parsed {
            d @ (Disclosure::Progressive | Disclosure::Inline | Disclosure::Legacy) => Ok(d),
            d => Err(ModeError(format!(
                "`{}` is a --mode spec value, not one of the seed system's; here {} takes {seed}",
                d.as_str(),
                kind.as_str(),
            ))),
        }
    }

    /// Parses any value for one kind, as a `--mode` spec may name it: skills take
    /// `progressive|inline`; connectors and databases `progressive|legacy|deferred|
    /// retrieved`; MCP also `resource`.
    pub fn parse_spec_for(kind: Kind, value: &str) -> Result<Disclosure, ModeError> {
        let d = match value.trim().to_ascii_lowercase().as_str() {
            "progressive" => Some(Disclosure::Progressive),
            "inline" => Some(Disclosure::Inline),
            "legacy" => Some(Disclosure::Legacy),
            "resource" => Some(Disclosure::Resource),
            "deferred" => Some(Disclosure::Deferred),
            "retrieved" => Some(Disclosure::Retrieved),
            "code" => Some(Disclosure::Code),
            "files" => Some(Disclosure::Files),
            _ => None,
        };
        let ok = |d: Disclosure| match d {
            Disclosure::Progressive => true,
            Disclosure::Inline => kind == Kind::Skills,
            Disclosure::Legacy
            | Disclosure::Deferred
            | Disclosure::Retrieved
            | Disclosure::Code
            | Disclosure::Files => kind != Kind::Skills,
            Disclosure::Resource => kind == Kind::Mcp,
        };
        if let Some(d) = d.filter(|d| ok(*d)) {
            return Ok(d);
        }
        Err(ModeError(match kind {
            Kind::Skills => format!("`{value}` is not a disclosure for skills; use progressive or inline"),
            Kind::Mcp => format!(
                "`{value}` is not a disclosure for mcp; use progressive, legacy, resource, deferred, retrieved, code or files"
            ),
            k => format!(
                "`{value}` is not a disclosure for {}; use progressive, legacy, deferred, retrieved, code or files (resource is for mcp only)",
                k.as_str()
            ),
        }))
    }
}

/// A mode, preset or disclosure value that does not parse; the message says what
/// would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ModeError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_takes_its_values() {
        assert_eq!(
            Disclosure::parse_spec_for(Kind::Mcp, "resource"),
            Ok(Disclosure::Resource)
        );
        assert!(Disclosure::parse_spec_for(Kind::Connectors, "resource")
            .unwrap_err()
            .0
            .contains("mcp only"));
        assert!(Disclosure::parse_spec_for(Kind::Skills, "deferred").is_err());
        assert_eq!(
            Disclosure::parse_spec_for(Kind::Databases, "retrieved"),
            Ok(Disclosure::Retrieved)
        );
        // The seed system's switches take only its own values.
        assert!(Disclosure::parse_for(Kind::Mcp, "resource")
            .unwrap_err()
            .0
            .contains("progressive or legacy"));
        assert_eq!(
            Disclosure::parse_for(Kind::Skills, "inline"),
            Ok(Disclosure::Inline)
        );
        assert!(Disclosure::parse_for(Kind::Mcp, "bogus").is_err());
    }
}
