//! The runner (DESIGN §2): plan → executor → events.
//!
//! [`plan::Plan::build`] renders each scenario × mode once and lists the work items;
//! [`executor::execute`] runs them on tokio with `--jobs` episodes in flight, one model
//! session per [`episode::Episode`]; every step is an [`events::Event`], and the
//! outcome writer and the progress display only listen.

pub mod config;
pub mod episode;
pub mod events;
pub mod executor;
pub mod plan;
pub mod retry;
pub mod tally;

pub use config::{RunConfig, DEFAULT_MAX_REQUESTS};
pub use episode::Episode;
pub use events::{Event, Listener, RunStats};
pub use executor::{execute, ExecOptions, Work, DEFAULT_JOBS};
pub use plan::{Plan, WorkItem};
pub use retry::RetryPolicy;

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
    let unit = plan.unit(item, counter);
    let stages = plan.stages(item, counter);
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
        unit: &unit,
        stages: &stages,
        counter,
        databases: &sc.databases,
        live: sc.live.as_ref(),
        retry: &retry,
        events: &ignore,
    };
    let outcome = rt.block_on(ep.run(backend));
    if let Some(l) = &sc.live {
        l.finish();
    }
    outcome
}
