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
    /// Stop starting episodes once the finished ones cost this much (US dollars).
    pub max_cost_usd: Option<f64>,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            jobs: DEFAULT_JOBS,
            retry: RetryPolicy::default(),
            max_cost_usd: None,
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
        .enable_all()
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
    let misses = Arc::new(AtomicUsize::new(0));
    // Spend in micro-dollars, and whether the limit stopped the run.
    let spent = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let over_budget = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicUsize::new(0));
    plan.expect_uses(&todo);
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
            if failed.load(Ordering::SeqCst) || over_budget.load(Ordering::SeqCst) {
                not_started = todo.len() - n;
                break;
            }
            let plan = plan.clone();
            let backend = backends[plan.items[i].model].clone();
            let counter = counter.clone();
            let run_id = run_id.to_string();
            let tx = tx.clone();
            let (retries, infra, finished) = (retries.clone(), infra.clone(), finished.clone());
            let misses = misses.clone();
            let (spent, over_budget) = (spent.clone(), over_budget.clone());
            let limit = opts.max_cost_usd;
            let retry = opts.retry;
            tasks.spawn(async move {
                let item = &plan.items[i];
                let unit = plan.unit(i, &counter);
                let stages = plan.stages(i, &counter);
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
                    unit: &unit,
                    stages: &stages,
                    counter: &counter,
                    databases: &sc.databases,
                    live: sc.live.as_ref(),
                    retry: &retry,
                    events: &events,
                };
                let outcome = ep.run(backend.as_ref()).await;
                if let Some(e) = &outcome.infra_error {
                    infra.fetch_add(1, Ordering::SeqCst);
                    if e.starts_with(crate::model::replay::MISS) {
                        misses.fetch_add(1, Ordering::SeqCst);
                    }
                }
                if let Some(c) = outcome.cost_usd {
                    let total = spent.fetch_add((c * 1e6).round() as u64, Ordering::SeqCst)
                        + (c * 1e6).round() as u64;
                    if limit.is_some_and(|l| total as f64 / 1e6 >= l) {
                        over_budget.store(true, Ordering::SeqCst);
                    }
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
        replay_misses: misses.load(Ordering::SeqCst),
        spent_usd: spent.load(Ordering::SeqCst) as f64 / 1e6,
        over_budget: over_budget.load(Ordering::SeqCst),
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
        // Every listener but the last is lent the event; the last is given it.
        let Some((last, others)) = listeners.split_last_mut() else {
            continue;
        };
        let mut result = Ok(());
        for l in others.iter_mut() {
            result = l.event(&e);
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            result = last.event_owned(e);
        }
        if let Err(err) = result {
            failed.store(true, Ordering::SeqCst);
            first_error = Some(err);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::model::{Answer, GroundTruth, ModelError, Request, Session};
    use crate::runner::config::RunConfig;
    use crate::runner::events::Recorder;
    use crate::strategy::{Mode, ProtocolConfig, Templates};
    use crate::tokens::Encoding;
    use crate::wire::Response;

    /// Fails the first `fail` requests of every session with `error`, then answers
    /// without a call. Counts requests in flight to check the concurrency limit.
    struct Flaky {
        opened: Arc<AtomicUsize>,
        fail: usize,
        error: ModelError,
        in_flight: Arc<AtomicUsize>,
        peak: Arc<AtomicUsize>,
    }

    struct FlakySession {
        left: usize,
        error: ModelError,
        in_flight: Arc<AtomicUsize>,
        peak: Arc<AtomicUsize>,
    }

    impl Backend for Flaky {
        fn name(&self) -> &str {
            "flaky"
        }
        fn open(
            &self,
            _key: &crate::record::OutcomeKey,
            _truth: Option<GroundTruth>,
        ) -> Box<dyn Session> {
            self.opened.fetch_add(1, Ordering::SeqCst);
            Box::new(FlakySession {
                left: self.fail,
                error: self.error.clone(),
                in_flight: self.in_flight.clone(),
                peak: self.peak.clone(),
            })
        }
    }

    #[async_trait::async_trait]
    impl Session for FlakySession {
        async fn respond(&mut self, _r: &Request<'_>) -> Result<Answer, ModelError> {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            if self.left > 0 {
                self.left -= 1;
                return Err(self.error.clone());
            }
            Ok(Response::say("Nothing to do.").into())
        }
    }

    /// The tiny scenario under progressive with one model, `repeat` times.
    fn tiny_plan(repeat: usize) -> (Arc<Plan>, Arc<Counter>) {
        let sc = crate::scenario::load(Path::new("fixtures/snapshot/tiny.yaml")).unwrap();
        let counter = Arc::new(Counter::new(Encoding::O200kBase));
        let cfg = RunConfig {
            run_id: "t".into(),
            scenario_paths: Vec::new(),
            modes: vec![Mode::preset("progressive").unwrap()],
            models: vec!["flaky".into()],
            repeat,
            max_requests: 10,
            protocol: ProtocolConfig::default(),
            templates: Arc::new(Templates::builtin()),
            templates_dir: None,
        };
        let plan = Arc::new(Plan::build(&[sc], &cfg, &counter).unwrap());
        (plan, counter)
    }

    fn run_flaky(fail: usize, error: ModelError, jobs: usize) -> (RunStats, Vec<Event>, usize) {
        let (plan, counter) = tiny_plan(3);
        let peak = Arc::new(AtomicUsize::new(0));
        let backend: Arc<dyn Backend> = Arc::new(Flaky {
            opened: Arc::new(AtomicUsize::new(0)),
            fail,
            error,
            in_flight: Arc::new(AtomicUsize::new(0)),
            peak: peak.clone(),
        });
        let recorder = Recorder::default();
        let events = recorder.events.clone();
        let work = Work {
            todo: (0..plan.items.len()).collect(),
            total: plan.items.len(),
            plan,
            backends: vec![backend],
            counter,
            run_id: "t".into(),
            already_done: 0,
        };
        let opts = ExecOptions {
            jobs,
            retry: RetryPolicy {
                max_retries: 2,
                base: Duration::from_millis(1),
                cap: Duration::from_millis(20),
            },
            max_cost_usd: None,
        };
        let stats = execute(work, opts, vec![Box::new(recorder)]).unwrap();
        let events = std::mem::take(&mut *events.lock().unwrap());
        (stats, events, peak.load(Ordering::SeqCst))
    }

    #[test]
    fn retries_are_events_and_recover() {
        // 4 queries × 3 repeats; each episode fails twice, then answers.
        let (stats, events, peak) = run_flaky(2, ModelError::Server { status: 503 }, 3);
        assert_eq!(stats.finished, 12);
        assert_eq!(stats.infra_errors, 0);
        assert_eq!(stats.retries, 24);
        let retries: Vec<(u32, Duration)> = events
            .iter()
            .filter_map(|e| match e {
                Event::RetryScheduled { attempt, delay, .. } => Some((*attempt, *delay)),
                _ => None,
            })
            .collect();
        assert_eq!(retries.len(), 24);
        assert!(retries
            .iter()
            .all(|(a, d)| (1..=2).contains(a) && *d <= Duration::from_millis(20)));
        assert!(matches!(
            events.first(),
            Some(Event::RunStarted {
                total: 12,
                already_done: 0
            })
        ));
        assert!(matches!(events.last(), Some(Event::RunFinished { .. })));
        let finished = events
            .iter()
            .filter(|e| matches!(e, Event::EpisodeFinished { outcome } if outcome.infra_error.is_none()))
            .count();
        assert_eq!(finished, 12);
        assert!(peak <= 3, "at most --jobs requests in flight, saw {peak}");
        assert!(peak >= 2, "episodes overlap, saw {peak}");
    }

    #[test]
    fn what_keeps_failing_is_an_infra_error_not_a_wrong_answer() {
        let (stats, events, _) = run_flaky(99, ModelError::Server { status: 500 }, 4);
        assert_eq!(stats.finished, 12);
        assert_eq!(stats.infra_errors, 12);
        assert_eq!(stats.retries, 24, "two retries each, then given up");
        for e in &events {
            if let Event::EpisodeFinished { outcome } = e {
                assert_eq!(
                    outcome.infra_error.as_deref(),
                    Some("server error (HTTP 500)")
                );
            }
        }
        // Not retryable: given up at once.
        let (stats, _, _) = run_flaky(99, ModelError::Authentication("bad key".into()), 2);
        assert_eq!((stats.infra_errors, stats.retries), (12, 0));
    }

    #[test]
    fn the_last_listener_is_given_each_event_the_others_are_lent_it() {
        /// Notes how it heard each event: `lent` or `given`.
        struct Heard(Arc<std::sync::Mutex<Vec<&'static str>>>);
        impl Listener for Heard {
            fn event(&mut self, _: &Event) -> anyhow::Result<()> {
                self.0.lock().unwrap().push("lent");
                Ok(())
            }
            fn event_owned(&mut self, _: Event) -> anyhow::Result<()> {
                self.0.lock().unwrap().push("given");
                Ok(())
            }
        }
        let (first, last) = (Arc::default(), Arc::default());
        let (tx, rx) = mpsc::channel();
        for total in [1, 2] {
            tx.send(Event::RunStarted {
                total,
                already_done: 0,
            })
            .unwrap();
        }
        drop(tx);
        let failed = AtomicBool::new(false);
        listen(
            rx,
            vec![
                Box::new(Heard(Arc::clone(&first))),
                Box::new(Heard(Arc::clone(&last))),
            ],
            &failed,
        )
        .unwrap();
        assert_eq!(*first.lock().unwrap(), ["lent", "lent"]);
        assert_eq!(*last.lock().unwrap(), ["given", "given"]);
        assert!(!failed.load(Ordering::SeqCst));
    }

    #[test]
    fn a_failing_listener_stops_new_work() {
        struct Broken;
        impl Listener for Broken {
            fn event(&mut self, e: &Event) -> anyhow::Result<()> {
                match e {
                    Event::EpisodeFinished { .. } => anyhow::bail!("disk full"),
                    _ => Ok(()),
                }
            }
        }
        let (plan, counter) = tiny_plan(50);
        let n = plan.items.len();
        let opened = Arc::new(AtomicUsize::new(0));
        let backend: Arc<dyn Backend> = Arc::new(Flaky {
            opened: opened.clone(),
            fail: 0,
            error: ModelError::Timeout,
            in_flight: Arc::new(AtomicUsize::new(0)),
            peak: Arc::new(AtomicUsize::new(0)),
        });
        let work = Work {
            todo: (0..n).collect(),
            total: n,
            plan,
            backends: vec![backend],
            counter,
            run_id: "t".into(),
            already_done: 0,
        };
        let opts = ExecOptions {
            jobs: 1,
            ..ExecOptions::default()
        };
        let err = execute(work, opts, vec![Box::new(Broken)]).unwrap_err();
        assert!(err.to_string().contains("disk full"));
        let started = opened.load(Ordering::SeqCst);
        assert!(
            started < n / 2,
            "{started} of {n} episodes started after the failure"
        );
    }
}
