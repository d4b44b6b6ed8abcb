//! The runner (DESIGN §2): plan → executor → events.
//!
//! [`plan::Plan::build`] renders each scenario × mode once and lists the work items;
//! [`executor::execute`] runs them on tokio with `--jobs` episodes in flight, one model
//! session per [`episode::Episode`]; every step is an [`events::Event`], and the
//! outcome writer and the progress display only listen.

pub mod episode;
pub mod events;
pub mod executor;
pub mod plan;
pub mod retry;

use std::path::PathBuf;
use std::sync::Arc;

pub use episode::Episode;
pub use events::{Event, Listener, RunStats};
pub use executor::{execute, ExecOptions, Work, DEFAULT_JOBS};
pub use plan::{Plan, WorkItem};
pub use retry::RetryPolicy;

use crate::strategy::{Mode, ProtocolConfig, Templates};

/// The default limit of agent-loop rounds.
pub const DEFAULT_MAX_TURNS: usize = 10;

/// The configuration that decides what a run's outcomes are (besides the scenarios).
pub struct RunConfig {
    pub run_id: String,
    /// The scenario paths as given, recorded in `run.json` for resume.
    pub scenario_paths: Vec<PathBuf>,
    pub modes: Vec<Mode>,
    pub models: Vec<String>,
    pub repeat: usize,
    pub max_turns: usize,
    pub protocol: ProtocolConfig,
    pub templates: Arc<Templates>,
    pub templates_dir: Option<PathBuf>,
}

/// Runs one work item of `plan` to completion on the calling thread, with no retries
/// and no listeners (tests, benches, and anyone scripting single episodes).
pub fn run_one(
    plan: &Plan,
    item: usize,
    backend: &dyn crate::model::Backend,
    counter: &crate::tokens::Counter,
) -> crate::record::Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime starts");
    let it = &plan.items[item];
    let unit = &plan.units[it.unit];
    let sc = &plan.scenarios[unit.scenario];
    let retry = RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    };
    let ignore = |_e: Event| {};
    let ep = Episode {
        key: &it.key,
        run_id: "",
        scenario: &sc.scenario,
        query: it.query,
        unit,
        counter,
        databases: &sc.databases,
        retry: &retry,
        events: &ignore,
    };
    rt.block_on(ep.run(backend))
}
