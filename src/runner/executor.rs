//! The executor: runs the chosen work items of a [`Plan`] on a tokio runtime with at
//! most `jobs` episodes in flight, one model session per episode, and sends every
//! event to the listeners — which run on a thread of their own, so a slow disk or
//! terminal never holds an episode. When a listener fails (the outcome file cannot be
//! written), no new episode starts, the ones in flight finish, and the error is
//! returned: what was written stays valid and a resume finishes the rest.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;

use anyhow::Context as _;

use super::episode::Episode;
use super::events::{Event, Listener, RunStats};
use super::plan::Plan;
use super::retry::RetryPolicy;
use crate::model::Backend;
use crate::tokens::Counter;

/// The default number of episodes in flight.
pub const DEFAULT_JOBS: usize = 8;

/// How the work is executed (none of it changes an outcome).
#[derive(Debug, Clone, Copy)]
pub struct ExecOptions {
    /// Episodes in flight at once (at least 1).
    pub jobs: usize,
    pub retry: RetryPolicy,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            jobs: DEFAULT_JOBS,
            retry: RetryPolicy::default(),
        }
    }
}

/// What to run.
pub struct Work {
    pub plan: Arc<Plan>,
    /// Indices into `plan.items`, in the order they are started.
    pub todo: Vec<usize>,
    /// One backend per `--model`, in the order of the plan's models.
    pub backends: Vec<Arc<dyn Backend>>,
    pub counter: Arc<Counter>,
    pub run_id: String,
    /// The work items this run directory holds in all.
    pub total: usize,
    /// How many of them had outcomes before (a resume).
    pub already_done: usize,
}

/// Runs the work, emitting events to `listeners`.
pub fn execute(
    work: Work,
    opts: ExecOptions,
    listeners: Vec<Box<dyn Listener>>,
) -> anyhow::Result<RunStats> {
    let Work {
        plan,
        todo,
        backends,
        counter,
        run_id,
        total,
        already_done,
    } = work;
    let run_id = run_id.as_str();
    let started = Instant::now();
    let jobs = opts.jobs.max(1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(jobs.min(cores))
        .enable_time()
        .thread_name("discbench-episode")
        .build()
        .context("cannot start the async runtime")?;

    let (tx, rx) = mpsc::channel::<Event>();
    let failed = Arc::new(AtomicBool::new(false));
    let listen = {
        let failed = failed.clone();
        std::thread::Builder::new()
            .name("discbench-listeners".into())
            .spawn(move || listen(rx, listeners, &failed))
            .context("cannot start the listener thread")?
    };
    let send = {
        let tx = tx.clone();
        move |e: Event| {
            // The listener thread only stops after every sender is gone.
            let _ = tx.send(e);
        }
    };
    send(Event::RunStarted {
        total,
        already_done,
    });

    let retries = Arc::new(AtomicUsize::new(0));
    let infra = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let not_started = rt.block_on(async {
        let permits = Arc::new(tokio::sync::Semaphore::new(jobs));
        let mut tasks = tokio::task::JoinSet::new();
        let mut not_started = 0;
        for (n, i) in todo.iter().copied().enumerate() {
            let permit = permits
                .clone()
                .acquire_owned()
                .await
                .expect("the semaphore is never closed");
            if failed.load(Ordering::SeqCst) {
                not_started = todo.len() - n;
                break;
            }
            let plan = plan.clone();
            let backend = backends[plan.items[i].model].clone();
            let counter = counter.clone();
            let run_id = run_id.to_string();
            let tx = tx.clone();
            let (retries, infra, finished) = (retries.clone(), infra.clone(), finished.clone());
            let retry = opts.retry;
            tasks.spawn(async move {
                let item = &plan.items[i];
                let unit = &plan.units[item.unit];
                let sc = &plan.scenarios[unit.scenario];
                let _ = tx.send(Event::EpisodeStarted {
                    key: item.key.clone(),
                });
                let events = move |e: Event| {
                    if matches!(e, Event::RetryScheduled { .. }) {
                        retries.fetch_add(1, Ordering::SeqCst);
                    }
                    let _ = tx.send(e);
                };
                let ep = Episode {
                    key: &item.key,
                    run_id: &run_id,
                    scenario: &sc.scenario,
                    query: item.query,
                    unit,
                    counter: &counter,
                    databases: &sc.databases,
                    retry: &retry,
                    events: &events,
                };
                let outcome = ep.run(backend.as_ref()).await;
                if outcome.infra_error.is_some() {
                    infra.fetch_add(1, Ordering::SeqCst);
                }
                finished.fetch_add(1, Ordering::SeqCst);
                events(Event::EpisodeFinished {
                    outcome: Box::new(outcome),
                });
                drop(permit);
            });
        }
        while let Some(r) = tasks.join_next().await {
            if let Err(e) = r {
                if e.is_panic() {
                    std::panic::resume_unwind(e.into_panic());
                }
            }
        }
        not_started
    });
    let stats = RunStats {
        finished: finished.load(Ordering::SeqCst),
        infra_errors: infra.load(Ordering::SeqCst),
        retries: retries.load(Ordering::SeqCst),
        not_started,
        elapsed: started.elapsed(),
    };
    send(Event::RunFinished { stats });
    drop(send);
    drop(tx);
    rt.shutdown_background();
    listen
        .join()
        .map_err(|_| anyhow::anyhow!("a listener panicked"))??;
    Ok(stats)
}

/// The listener thread: every event to every listener, in order. After the first
/// error, the run is told to stop and later events are drained unheard.
fn listen(
    rx: mpsc::Receiver<Event>,
    mut listeners: Vec<Box<dyn Listener>>,
    failed: &AtomicBool,
) -> anyhow::Result<()> {
    let mut first_error = None;
    for e in rx {
        if first_error.is_some() {
            continue;
        }
        for l in listeners.iter_mut() {
            if let Err(err) = l.event(&e) {
                failed.store(true, Ordering::SeqCst);
                first_error = Some(err);
                break;
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
