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
