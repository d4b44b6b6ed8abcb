//! The protocol settings a run is made with: when the selection step runs, what
//! happens to calls of tools that were not loaded, and the limits on what tool
//! answers put into the context. The defaults are the seed system's (FIM One's); each
//! can be changed by a flag, and the ones the seed system reads from its environment
//! read the same variables here.

use serde::{Deserialize, Serialize};

/// When the selection step runs and how many tools it may pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectionConfig {
    /// The step runs when the tool count exceeds this.
    pub threshold: usize,
    /// At most this many tools are selected (pinned tools come on top).
    pub max: usize,
}

impl Default for SelectionConfig {
    fn default() -> Self {
        SelectionConfig {
            threshold: 12,
            max: 6,
        }
    }
}

/// What a call to a tool that exists but was not loaded by the selection step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnloadedCalls {
    /// It runs, as in the seed system (which executes from its full registry), and is
    /// counted (`unloaded_calls`).
    Run,
    /// It is refused with a `not_loaded` protocol error (a stricter agent, for research).
    Refuse,
}

impl UnloadedCalls {
    pub fn parse(v: &str) -> Result<UnloadedCalls, String> {
        match v.trim().to_ascii_lowercase().as_str() {
            "run" => Ok(UnloadedCalls::Run),
            "refuse" => Ok(UnloadedCalls::Refuse),
            other => Err(format!("`{other}`: use run or refuse")),
        }
    }
}

/// How one kind of result is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// A result longer than this many characters is cut.
    pub max_chars: usize,
    /// A top-level JSON array keeps at most this many items.
    pub max_items: usize,
}

impl Default for Cut {
    fn default() -> Self {
        Cut {
            max_chars: 50_000,
            max_items: 10,
        }
    }
}

/// Limits on tool results, as the seed system applies them: connector and MCP results
/// are cut (each kind with its own settings there), and all results of one query share
/// a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultLimits {
    pub connector: Cut,
    pub mcp: Cut,
    /// Estimated tokens (characters / 4) of all tool results of one episode; past it,
    /// results are cut to what is left. 0 = no budget.
    pub budget_tokens: usize,
}

impl Default for ResultLimits {
    fn default() -> Self {
        ResultLimits {
            connector: Cut::default(),
            mcp: Cut::default(),
            budget_tokens: 40_000,
        }
    }
}

/// Everything about the protocol that is not the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolConfig {
    pub selection: SelectionConfig,
    pub unloaded: UnloadedCalls,
    /// Rows a database query returns at most.
    pub row_limit: usize,
    pub results: ResultLimits,
    /// Characters of a skill stub's description, `...` included when cut.
    pub skill_stub_chars: usize,
    /// The discount, in percent of the input price, at which a cached prefix is
    /// billed when the model's prices give no cached-input price (`billed_cached`).
    #[serde(default = "default_cache_discount")]
    pub cache_discount_pct: usize,
    /// What one SQL query may cost (lengths, memory, time, steps, answer bytes); the
    /// defaults in a run made before they were recorded.
    #[serde(default)]
    pub sql: crate::environment::SqlLimits,
}

fn default_cache_discount() -> usize {
    90
}

impl Default for ProtocolConfig {
    fn default() -> Self {
        ProtocolConfig {
            selection: SelectionConfig::default(),
            unloaded: UnloadedCalls::Run,
            row_limit: 1_000,
            results: ResultLimits::default(),
            skill_stub_chars: 120,
            cache_discount_pct: 90,
            sql: crate::environment::SqlLimits::default(),
        }
    }
}

/// The seed system's environment variables that discbench honours, and the setting
/// each one sets (a flag wins over the variable).
pub const ENV_VARS: [&str; 8] = [
    "REACT_TOOL_SELECTION_THRESHOLD",
    "REACT_TOOL_SELECTION_MAX",
    "REACT_TOOL_RESULT_BUDGET",
    "SKILL_STUB_DESC_LENGTH",
    "CONNECTOR_RESPONSE_MAX_CHARS",
    "CONNECTOR_RESPONSE_MAX_ITEMS",
    "TOOL_OUTPUT_MAX_CHARS",
    "TOOL_OUTPUT_MAX_ITEMS",
];

/// The values given on the command line; `None` = not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtocolFlags {
    pub selection_threshold: Option<usize>,
    pub selection_max: Option<usize>,
    pub unloaded: Option<UnloadedCalls>,
    pub row_limit: Option<usize>,
    pub result_max_chars: Option<usize>,
    pub result_max_items: Option<usize>,
    pub result_budget: Option<usize>,
    pub skill_stub_chars: Option<usize>,
    pub cache_discount_pct: Option<usize>,
    /// The SQL limits given (`--sql-*`).
    pub sql: SqlFlags,
}

/// The `--sql-*` values given on the command line; `None` = not given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqlFlags {
    pub max_length: Option<usize>,
    pub max_pattern: Option<usize>,
    pub memory_mib: Option<usize>,
    pub answer_bytes: Option<usize>,
    pub timeout_ms: Option<u64>,
    pub max_steps: Option<u64>,
}

impl SqlFlags {
    /// The defaults, changed by the flags given.
    pub fn resolve(&self) -> Result<crate::environment::SqlLimits, String> {
        let d = crate::environment::SqlLimits::default();
        let l = crate::environment::SqlLimits {
            max_length: self.max_length.unwrap_or(d.max_length),
            max_pattern: self.max_pattern.unwrap_or(d.max_pattern),
            memory_mib: self.memory_mib.unwrap_or(d.memory_mib),
            answer_bytes: self.answer_bytes.unwrap_or(d.answer_bytes),
            timeout_ms: self.timeout_ms.unwrap_or(d.timeout_ms),
            max_steps: self.max_steps.unwrap_or(d.max_steps),
        };
        l.check()?;
        Ok(l)
    }
}

impl ProtocolConfig {
    /// The defaults, changed by the environment variables in [`ENV_VARS`], then by the
    /// flags. A variable that is set but is not a whole number is an error naming it.
    pub fn resolve(
        flags: &ProtocolFlags,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<ProtocolConfig, String> {
        let env = |name: &str| -> Result<Option<usize>, String> {
            match get(name).filter(|v| !v.trim().is_empty()) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| format!("{name}={v}: not a whole number")),
            }
        };
        let d = ProtocolConfig::default();
        let pick = |flag: Option<usize>, var: &str, default: usize| -> Result<usize, String> {
            Ok(flag.or(env(var)?).unwrap_or(default))
        };
        let c = ProtocolConfig {
            selection: SelectionConfig {
                threshold: pick(
                    flags.selection_threshold,
                    "REACT_TOOL_SELECTION_THRESHOLD",
                    d.selection.threshold,
                )?,
                max: pick(
                    flags.selection_max,
                    "REACT_TOOL_SELECTION_MAX",
                    d.selection.max,
                )?,
            },
            unloaded: flags.unloaded.unwrap_or(d.unloaded),
            // The seed system's row cap is a per-connection setting, not a variable.
            row_limit: flags.row_limit.unwrap_or(d.row_limit),
            // A flag sets both kinds; each kind has its own variable, as in FIM One.
            results: ResultLimits {
                connector: Cut {
                    max_chars: pick(
                        flags.result_max_chars,
                        "CONNECTOR_RESPONSE_MAX_CHARS",
                        d.results.connector.max_chars,
                    )?,
                    max_items: pick(
                        flags.result_max_items,
                        "CONNECTOR_RESPONSE_MAX_ITEMS",
                        d.results.connector.max_items,
                    )?,
                },
                mcp: Cut {
                    max_chars: pick(
                        flags.result_max_chars,
                        "TOOL_OUTPUT_MAX_CHARS",
                        d.results.mcp.max_chars,
                    )?,
                    max_items: pick(
                        flags.result_max_items,
                        "TOOL_OUTPUT_MAX_ITEMS",
                        d.results.mcp.max_items,
                    )?,
                },
                budget_tokens: pick(
                    flags.result_budget,
                    "REACT_TOOL_RESULT_BUDGET",
                    d.results.budget_tokens,
                )?,
            },
            skill_stub_chars: pick(
                flags.skill_stub_chars,
                "SKILL_STUB_DESC_LENGTH",
                d.skill_stub_chars,
            )?,
            cache_discount_pct: flags.cache_discount_pct.unwrap_or(d.cache_discount_pct),
            sql: flags.sql.resolve()?,
        };
        if c.cache_discount_pct > 100 {
            return Err("--cache-discount is a percentage from 0 to 100".into());
        }
        if c.selection.max == 0 {
            return Err("the selection maximum must be at least 1".into());
        }
        let cuts = [c.results.connector, c.results.mcp];
        if c.row_limit == 0 || cuts.iter().any(|k| k.max_chars == 0 || k.max_items == 0) {
            return Err(
                "--row-limit, --result-max-chars and --result-max-items must be at least 1".into(),
            );
        }
        if c.skill_stub_chars < 4 {
            return Err("the skill stub length must be at least 4 (room for `...`)".into());
        }
        Ok(c)
    }

    /// The flags of `given` that disagree with this (recorded) configuration, as
    /// `--flag value (the run used value)`.
    pub fn disagreements(&self, given: &ProtocolFlags) -> Vec<String> {
        let mut out = Vec::new();
        let mut check = |flag: &str, g: Option<usize>, r: usize| {
            if let Some(g) = g.filter(|g| *g != r) {
                out.push(format!("{flag} {g} (the run used {r})"));
            }
        };
        check(
            "--selection-threshold",
            given.selection_threshold,
            self.selection.threshold,
        );
        check("--selection-max", given.selection_max, self.selection.max);
        check("--row-limit", given.row_limit, self.row_limit);
        for cut in [self.results.connector, self.results.mcp] {
            check("--result-max-chars", given.result_max_chars, cut.max_chars);
            check("--result-max-items", given.result_max_items, cut.max_items);
        }
        check(
            "--result-budget",
            given.result_budget,
            self.results.budget_tokens,
        );
        check(
            "--skill-stub-chars",
            given.skill_stub_chars,
            self.skill_stub_chars,
        );
        check(
            "--cache-discount",
            given.cache_discount_pct,
            self.cache_discount_pct,
        );
        let (s, g) = (&self.sql, &given.sql);
        check("--sql-max-length", g.max_length, s.max_length);
        check("--sql-max-pattern", g.max_pattern, s.max_pattern);
        check("--sql-memory", g.memory_mib, s.memory_mib);
        check("--sql-answer-bytes", g.answer_bytes, s.answer_bytes);
        for (flag, g, r) in [
            ("--sql-timeout-ms", g.timeout_ms, s.timeout_ms),
            ("--sql-max-steps", g.max_steps, s.max_steps),
        ] {
            if let Some(g) = g.filter(|g| *g != r) {
                out.push(format!("{flag} {g} (the run used {r})"));
            }
        }
        out.dedup();
        if let Some(u) = given.unloaded.filter(|u| *u != self.unloaded) {
            out.push(format!(
                "--unloaded-calls {u:?} (the run used {:?})",
                self.unloaded
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_variables_beat_defaults() {
        let env = |v: &str| match v {
            "REACT_TOOL_SELECTION_THRESHOLD" => Some("20".to_string()),
            "REACT_TOOL_SELECTION_MAX" => Some("4".to_string()),
            "SKILL_STUB_DESC_LENGTH" => Some("60".to_string()),
            _ => None,
        };
        let flags = ProtocolFlags {
            selection_max: Some(8),
            ..ProtocolFlags::default()
        };
        let c = ProtocolConfig::resolve(&flags, env).unwrap();
        assert_eq!(c.selection.threshold, 20);
        assert_eq!(c.selection.max, 8);
        assert_eq!(c.skill_stub_chars, 60);
        assert_eq!(c.row_limit, 1_000);
        let env2 = |v: &str| (v == "CONNECTOR_RESPONSE_MAX_ITEMS").then(|| "3".to_string());
        let c2 = ProtocolConfig::resolve(&ProtocolFlags::default(), env2).unwrap();
        assert_eq!(
            (c2.results.connector.max_items, c2.results.mcp.max_items),
            (3, 10)
        );
        assert_eq!(
            ProtocolConfig::resolve(&ProtocolFlags::default(), |_| None).unwrap(),
            ProtocolConfig::default()
        );
    }

    #[test]
    fn a_bad_variable_is_named() {
        let e = ProtocolConfig::resolve(&ProtocolFlags::default(), |v| {
            (v == "REACT_TOOL_SELECTION_MAX").then(|| "six".to_string())
        })
        .unwrap_err();
        assert!(e.contains("REACT_TOOL_SELECTION_MAX=six"), "{e}");
        // Values that cannot work are refused, saying what would.
        for (flags, says) in [
            (
                ProtocolFlags {
                    selection_max: Some(0),
                    ..ProtocolFlags::default()
                },
                "at least 1",
            ),
            (
                ProtocolFlags {
                    row_limit: Some(0),
                    ..ProtocolFlags::default()
                },
                "--row-limit",
            ),
            (
                ProtocolFlags {
                    skill_stub_chars: Some(3),
                    ..ProtocolFlags::default()
                },
                "at least 4",
            ),
        ] {
            let e = ProtocolConfig::resolve(&flags, |_| None).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
        assert!(UnloadedCalls::parse("maybe")
            .unwrap_err()
            .contains("run or refuse"));
    }

    #[test]
    fn disagreements_name_the_flag() {
        let recorded = ProtocolConfig::default();
        let given = ProtocolFlags {
            row_limit: Some(50),
            selection_max: Some(6),
            unloaded: Some(UnloadedCalls::Refuse),
            ..ProtocolFlags::default()
        };
        let d = recorded.disagreements(&given);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].starts_with("--row-limit 50"));
        assert!(d[1].contains("unloaded-calls"));
    }
}
