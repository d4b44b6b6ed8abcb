//! The configuration that decides what a run's outcomes are, besides the scenarios.

use std::path::PathBuf;
use std::sync::Arc;

use crate::strategy::{Mode, ProtocolConfig, Templates};

/// The default limit of agent-loop rounds.
pub const DEFAULT_MAX_REQUESTS: usize = 10;

/// The configuration that decides what a run's outcomes are (besides the scenarios).
pub struct RunConfig {
    pub run_id: String,
    /// The scenario paths as given, recorded in `run.json` for resume.
    pub scenario_paths: Vec<PathBuf>,
    pub modes: Vec<Mode>,
    pub models: Vec<String>,
    pub repeat: usize,
    pub max_requests: usize,
    pub protocol: ProtocolConfig,
    pub templates: Arc<Templates>,
    pub templates_dir: Option<PathBuf>,
}

impl RunConfig {
    /// A run of `models` under `modes` with every other setting at its default: no
    /// recorded scenario paths, one repeat, [`DEFAULT_MAX_REQUESTS`], the default
    /// protocol and the built-in templates (change any with struct update syntax).
    pub fn new(run_id: impl Into<String>, modes: Vec<Mode>, models: Vec<String>) -> RunConfig {
        RunConfig {
            run_id: run_id.into(),
            scenario_paths: Vec::new(),
            modes,
            models,
            repeat: 1,
            max_requests: DEFAULT_MAX_REQUESTS,
            protocol: ProtocolConfig::default(),
            templates: Arc::new(Templates::builtin()),
            templates_dir: None,
        }
    }
}
