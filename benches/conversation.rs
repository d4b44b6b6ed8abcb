//! Conversations at length: the harness's own work per turn of a 50-turn conversation
//! (counting, the cache prediction, scoring, building the next request), with the
//! oracle as the model and nothing recorded, measured between the model's answers —
//! the time from one answer to the next request, summed over a turn's requests — at
//! turn 5 and at turn 50. Counting and the cache prediction are incremental (each
//! message is counted and hashed once), and the history is lent to each request, not
//! copied, so turn 50 should cost what turn 5 does. Also the built-in
//! `conversations` scenario under every default preset with both mock models, in model
//! requests per second.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use discbench::cli::{dispatch, Cli, Environment};
use discbench::model::backend::{Answer, Backend, GroundTruth, ModelError, Request, Session};
use discbench::record::OutcomeKey;
use discbench::runner::{run_one, Plan, RunConfig};
use discbench::strategy::Mode;
use discbench::tokens::{Counter, Encoding};
use discbench::wire::Message;

const TURNS: usize = 50;

/// A 50-turn conversation over enterprise-hub's catalog: each turn asks for one
/// Salesforce order, so every turn makes one call and answers.
fn scenario(dir: &std::path::Path) -> PathBuf {
    let hub = std::fs::canonicalize("fixtures/catalogs/enterprise/hub.yaml").expect("hub");
    let mut y = format!(
        "name: long-conversation\ncatalog:\n  include:\n  - {}\nqueries:\n- id: fifty-turns\n  turns:\n",
        hub.display()
    );
    for t in 0..TURNS {
        let order = 9000 + t;
        y.push_str(&format!(
            "  - text: Pull up Salesforce order {order} for me, please.\n    expect:\n      calls:\n      - address: connector:salesforce/get_order\n        args: {{order_id: ['{order}']}}\n"
        ));
    }
    let path = dir.join("long.yaml");
    std::fs::write(&path, y).expect("scenario written");
    path
}

/// The oracle, with the time of every request and answer noted: (user turns in the
/// request, when it was asked, when it was answered).
struct Timed {
    inner: Arc<dyn Backend>,
    log: Arc<Mutex<Vec<(usize, Instant, Instant)>>>,
}

struct TimedSession {
    inner: Box<dyn Session>,
    log: Arc<Mutex<Vec<(usize, Instant, Instant)>>>,
}

impl Backend for Timed {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn wants_ground_truth(&self) -> bool {
        self.inner.wants_ground_truth()
    }
    fn open(&self, key: &OutcomeKey, truth: Option<GroundTruth>) -> Box<dyn Session> {
        Box::new(TimedSession {
            inner: self.inner.open(key, truth),
            log: self.log.clone(),
        })
    }
}

#[async_trait::async_trait]
impl Session for TimedSession {
    async fn respond(&mut self, request: &Request<'_>) -> Result<Answer, ModelError> {
        let asked = Instant::now();
        let a = self.inner.respond(request).await;
        let turns = request
            .context
            .messages
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count();
        self.log
            .lock()
            .unwrap()
            .push((turns, asked, Instant::now()));
        a
    }
}

/// The harness's time per turn (0-based) of one run of the conversation: the gaps
/// between an answer and the next request, summed by the turn of the request.
fn per_turn(plan: &Plan, counter: &Counter) -> Vec<Duration> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let backend = Timed {
        inner: discbench::model::build("oracle").expect("oracle"),
        log: log.clone(),
    };
    let outcome = run_one(plan, 0, &backend, counter);
    assert_eq!(outcome.conversation.len(), TURNS, "every turn ran");
    let log = log.lock().unwrap();
    let mut per = vec![Duration::ZERO; TURNS];
    for w in log.windows(2) {
        let (turn, asked, _) = w[1];
        per[turn - 1] += asked - w[0].2;
    }
    per
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path());
    let scenarios =
        discbench::scenario::load_all(std::slice::from_ref(&path)).expect("scenario loads");
    let counter = Counter::new(Encoding::O200kBase);
    let mut group = c.benchmark_group("conversation");
    group.sample_size(10);
    for preset in ["progressive", "tool-search"] {
        let cfg = RunConfig {
            scenario_paths: vec![path.clone()],
            max_requests: 8,
            ..RunConfig::new(
                "bench",
                vec![Mode::preset(preset).unwrap()],
                vec!["oracle".into()],
            )
        };
        // A plan lets each unit go after its last work item: one plan per run.
        let plan = || Plan::build(&scenarios, &cfg, &counter).expect("plan");
        // Turn 5 and turn 50 are taken from the same runs (paired): on a shared
        // machine, two sets of runs a minute apart differ by more than the turns do.
        let runs: Vec<Vec<Duration>> = (0..41).map(|_| per_turn(&plan(), &counter)).collect();
        let median = |turn: usize| {
            let mut v: Vec<Duration> = runs.iter().map(|r| r[turn - 1]).collect();
            v.sort();
            v[v.len() / 2]
        };
        let shape: Vec<String> = [2, 5, 10, 20, 30, 40, TURNS]
            .iter()
            .map(|&t| format!("{t}: {:.0?}", median(t)))
            .collect();
        let (t5, t50) = (median(5), median(TURNS));
        println!(
            "{preset}: harness work per turn, median of 41 runs: turn 5 {t5:?}, turn 50 {t50:?} ({:+.0}%); by turn {}",
            (t50.as_secs_f64() / t5.as_secs_f64() - 1.0) * 100.0,
            shape.join(", ")
        );
        for turn in [5, TURNS] {
            group.bench_function(
                format!("{preset}: harness work of turn {turn} of {TURNS}"),
                |b| {
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|_| per_turn(&plan(), &counter)[turn - 1])
                            .sum()
                    })
                },
            );
        }
    }

    // The built-in conversations under every default preset, both mock models.
    let out = tempfile::tempdir().unwrap();
    let run = |id: &str| {
        let cli = Cli::parse_from([
            "discbench",
            "run",
            "scenarios/conversations.yaml",
            "--no-progress",
            "--run-id",
            id,
            "--out",
            &out.path().display().to_string(),
        ]);
        let env = Environment {
            stderr_is_terminal: false,
            is_ci: true,
        };
        assert_eq!(dispatch(cli, env, &mut std::io::sink()).unwrap(), 0);
    };
    run("count");
    let requests: usize = std::fs::read_to_string(out.path().join("count/outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let o: serde_json::Value = serde_json::from_str(l).unwrap();
            o["requests"].as_array().map_or(0, Vec::len)
        })
        .sum();
    println!("conversations scenario: {requests} model requests per run");
    group.throughput(Throughput::Elements(requests as u64));
    let mut n = 0;
    group.bench_function(
        "built-in conversations, six presets, two mock models",
        |b| {
            b.iter(|| {
                n += 1;
                run(&format!("r{n}"));
            })
        },
    );
    group.finish();
}

criterion_group!(all, benches);
criterion_main!(all);
