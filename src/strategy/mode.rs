//! Modes: one disclosure choice per resource kind plus the selection step, the named
//! presets, `--mode` specs, and the precedence rule
//! (scenario `agent.modes` > CLI / environment > default `progressive`).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::catalog::Kind;
pub use crate::disclosure::{Disclosure, ModeError};

/// A complete mode: what each kind uses, and whether the selection step runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mode {
    /// The name it was asked for by: a preset name or a canonical spec.
    pub label: String,
    pub skills: Disclosure,
    pub connectors: Disclosure,
    pub databases: Disclosure,
    pub mcp: Disclosure,
    pub selection: bool,
}

/// The environment variables of the seed system, one per kind.
pub const ENV_VARS: [(Kind, &str); 4] = [
    (Kind::Skills, "SKILL_TOOL_MODE"),
    (Kind::Connectors, "CONNECTOR_TOOL_MODE"),
    (Kind::Databases, "DATABASE_TOOL_MODE"),
    (Kind::Mcp, "MCP_TOOL_MODE"),
];

pub const PRESETS: [&str; 3] = ["progressive", "legacy", "inline"];

impl Mode {
    /// A named preset: `progressive`, `legacy` or `inline`.
    pub fn preset(name: &str) -> Option<Mode> {
        use Disclosure::*;
        let (s, c, d, m, sel) = match name {
            "progressive" => (Progressive, Progressive, Progressive, Progressive, true),
            // FIM One's legacy: one tool per action / table op / MCP tool, skills inline,
            // and the selection step on, as FIM One runs it whatever the modes (use
            // `selection=off` in a spec for the unfiltered list).
            "legacy" => (Inline, Legacy, Legacy, Legacy, true),
            // Skills inline, the rest progressive; selection on as in progressive.
            "inline" => (Inline, Progressive, Progressive, Progressive, true),
            _ => return None,
        };
        Some(Mode {
            label: name.to_string(),
            skills: s,
            connectors: c,
            databases: d,
            mcp: m,
            selection: sel,
        })
    }

    /// Parses a preset name or a spec such as `skills=inline,mcp=legacy,selection=off`.
    /// A spec starts from the `progressive` preset and changes what it names.
    pub fn parse(spec: &str) -> Result<Mode, ModeError> {
        let spec = spec.trim();
        if let Some(m) = Mode::preset(spec) {
            return Ok(m);
        }
        if !spec.contains('=') {
            return Err(ModeError(format!(
                "unknown mode `{spec}`: use a preset ({}) or a spec like skills=inline,mcp=legacy",
                PRESETS.join(", ")
            )));
        }
        let mut mode = Mode::preset("progressive").expect("preset exists");
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| ModeError(format!("`{part}` in mode `{spec}` is not key=value")))?;
            let k = k.trim();
            if k == "selection" {
                mode.selection = match v.trim() {
                    "on" | "true" => true,
                    "off" | "false" => false,
                    other => return Err(ModeError(format!("selection={other}: use on or off"))),
                };
                continue;
            }
            let kind = parse_kind(k)?;
            mode.set(kind, Disclosure::parse_for(kind, v)?);
        }
        mode.label = mode.canonical_spec();
        Ok(mode)
    }

    /// The mode a deployment configured only by environment variables would use:
    /// `progressive` with each kind whose variable is set changed. `None` when no
    /// variable is set.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Mode>, ModeError> {
        let mut mode = Mode::preset("progressive").expect("preset exists");
        let mut any = false;
        for (kind, var) in ENV_VARS {
            if let Some(v) = get(var).filter(|v| !v.trim().is_empty()) {
                mode.set(
                    kind,
                    Disclosure::parse_for(kind, &v)
                        .map_err(|e| ModeError(format!("{var}: {e}")))?,
                );
                any = true;
            }
        }
        if !any {
            return Ok(None);
        }
        mode.label = mode.canonical_spec();
        Ok(Some(mode))
    }

    /// Applies a scenario's `agent.modes`, which win over everything else.
    pub fn with_overrides(&self, overrides: &BTreeMap<Kind, Disclosure>) -> Mode {
        let mut m = self.clone();
        for (kind, d) in overrides {
            m.set(*kind, *d);
        }
        m
    }

    pub fn get(&self, kind: Kind) -> Disclosure {
        match kind {
            Kind::Skills => self.skills,
            Kind::Connectors => self.connectors,
            Kind::Databases => self.databases,
            Kind::Mcp => self.mcp,
        }
    }

    pub fn set(&mut self, kind: Kind, d: Disclosure) {
        match kind {
            Kind::Skills => self.skills = d,
            Kind::Connectors => self.connectors = d,
            Kind::Databases => self.databases = d,
            Kind::Mcp => self.mcp = d,
        }
    }

    /// `skills=…,connectors=…,databases=…,mcp=…,selection=on|off`.
    pub fn canonical_spec(&self) -> String {
        format!(
            "skills={},connectors={},databases={},mcp={},selection={}",
            self.skills.as_str(),
            self.connectors.as_str(),
            self.databases.as_str(),
            self.mcp.as_str(),
            if self.selection { "on" } else { "off" }
        )
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

fn parse_kind(k: &str) -> Result<Kind, ModeError> {
    match k {
        "skills" | "skill" => Ok(Kind::Skills),
        "connectors" | "connector" => Ok(Kind::Connectors),
        "databases" | "database" => Ok(Kind::Databases),
        "mcp" => Ok(Kind::Mcp),
        other => Err(ModeError(format!(
            "unknown kind `{other}` in mode: use skills, connectors, databases, mcp or selection"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_match_the_design() {
        let legacy = Mode::preset("legacy").unwrap();
        assert_eq!(legacy.skills, Disclosure::Inline);
        assert_eq!(legacy.mcp, Disclosure::Legacy);
        assert!(
            legacy.selection,
            "FIM One's legacy mode is selection-filtered too"
        );
        assert!(
            !Mode::parse("connectors=legacy,selection=off")
                .unwrap()
                .selection
        );
        let inline = Mode::preset("inline").unwrap();
        assert_eq!(inline.skills, Disclosure::Inline);
        assert_eq!(inline.connectors, Disclosure::Progressive);
    }

    #[test]
    fn specs_start_from_progressive() {
        let m = Mode::parse("skills=inline,mcp=legacy").unwrap();
        assert_eq!(m.skills, Disclosure::Inline);
        assert_eq!(m.mcp, Disclosure::Legacy);
        assert_eq!(m.connectors, Disclosure::Progressive);
        assert!(m.selection);
        assert_eq!(
            m.label,
            "skills=inline,connectors=progressive,databases=progressive,mcp=legacy,selection=on"
        );
    }

    #[test]
    fn bad_specs_name_the_problem() {
        assert!(Mode::parse("skills=legacy")
            .unwrap_err()
            .0
            .contains("progressive or inline"));
        assert!(Mode::parse("tools=legacy")
            .unwrap_err()
            .0
            .contains("unknown kind"));
        assert!(Mode::parse("fast").unwrap_err().0.contains("unknown mode"));
    }

    #[test]
    fn environment_then_scenario_precedence() {
        let env = Mode::from_env(|v| (v == "MCP_TOOL_MODE").then(|| "legacy".to_string()))
            .unwrap()
            .unwrap();
        assert_eq!(env.mcp, Disclosure::Legacy);
        assert_eq!(env.skills, Disclosure::Progressive);
        let mut o = BTreeMap::new();
        o.insert(Kind::Mcp, Disclosure::Progressive);
        assert_eq!(env.with_overrides(&o).mcp, Disclosure::Progressive);
        assert!(Mode::from_env(|_| None).unwrap().is_none());
        assert!(Mode::from_env(|_| Some("bogus".into())).is_err());
    }
}
