//! The HTTP backends under load, against a local OpenAI-compatible server this bench
//! starts on 127.0.0.1 (threads, one per connection; loopback only, bounded):
//! - 1,000 requests with 300 ms of simulated latency at `--jobs 32`, against the
//!   ideal time (ceil(1000 / 32) × 300 ms);
//! - the same with 20% of answers failing (10% 503, 10% 429 with `retry-after-ms`):
//!   every work item must still end with exactly one outcome;
//! - peak resident memory over 10,000 requests with no latency.

#[path = "../tests/support/server.rs"]
mod server;

use std::time::{Duration, Instant};

use clap::Parser;
use criterion::{criterion_group, criterion_main, Criterion};
use discbench::cli::{dispatch, Cli, Environment};
use serde_json::json;
use server::{serve_unrecorded, Reply};

/// A server answering every request with "Done." after `latency`; of every 10
/// requests, `failing` fail (half 503, half 429 with `retry-after-ms`).
fn serve(latency: Duration, failing: usize) -> String {
    let done = json!({"choices": [{"message": {"role": "assistant", "content": "Done."},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 300, "completion_tokens": 2}});
    serve_unrecorded(move |_, n| {
        std::thread::sleep(latency);
        match n % 10 {
            k if k < failing / 2 => Reply::Json(503, vec![], json!({"error": "busy"})),
            k if k < failing => Reply::Json(
                429,
                vec![("retry-after-ms", "10".to_string())],
                json!({"error": "slow down"}),
            ),
            _ => Reply::Json(200, vec![], done.clone()),
        }
    })
    .url
}

/// Runs the tiny scenario under legacy (one request per item: the server never calls
/// a tool) `repeat × 4` times; returns the outcome lines written.
fn run(url: &str, repeat: usize, jobs: usize, dir: &std::path::Path, id: &str) -> usize {
    let cli = Cli::parse_from([
        "discbench",
        "run",
        "fixtures/snapshot/tiny.yaml",
        "--mode",
        "legacy",
        "--model",
        "openai:bench",
        "--openai-base-url",
        url,
        "--repeat",
        &repeat.to_string(),
        "--jobs",
        &jobs.to_string(),
        "--no-progress",
        "--run-id",
        id,
        "--out",
        &dir.display().to_string(),
    ]);
    let env = Environment {
        stderr_is_terminal: false,
        is_ci: true,
    };
    dispatch(cli, env, &mut std::io::sink()).unwrap();
    std::fs::read_to_string(dir.join(id).join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .count()
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let slow = serve(Duration::from_millis(300), 0);
    let flaky = serve(Duration::from_millis(300), 2);
    let mut n = 0;
    let mut group = c.benchmark_group("http");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(100));
    let ideal = Duration::from_millis(300) * 1000_usize.div_ceil(32) as u32;
    group.bench_function("1,000 requests, 300 ms latency, --jobs 32", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let t = Instant::now();
                let lines = run(&slow, 250, 32, dir.path(), &format!("s{n}"));
                total += t.elapsed();
                assert_eq!(lines, 1000);
            }
            eprintln!(
                "  ideal {:.2} s; this sample {:.2} s per run ({:.2}× ideal)",
                ideal.as_secs_f64(),
                total.as_secs_f64() / iters as f64,
                total.as_secs_f64() / iters as f64 / ideal.as_secs_f64()
            );
            total
        })
    });
    group.bench_function("1,000 requests, 20% failing with 5xx or 429", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                n += 1;
                let id = format!("f{n}");
                let t = Instant::now();
                let lines = run(&flaky, 250, 32, dir.path(), &id);
                total += t.elapsed();
                assert_eq!(lines, 1000, "every work item ends with one outcome");
                let infra = std::fs::read_to_string(dir.path().join(&id).join("outcomes.jsonl"))
                    .unwrap()
                    .lines()
                    .filter(|l| !l.contains("\"infra_error\":null"))
                    .count();
                eprintln!("  1000 outcomes, {infra} of them infra errors after retries");
            }
            total
        })
    });
    group.finish();

    let fast = serve(Duration::ZERO, 0);
    let before = peak_rss_kib();
    let lines = run(&fast, 2500, 32, dir.path(), "mem");
    assert_eq!(lines, 10_000);
    eprintln!(
        "http: 10,000 requests: peak RSS before {} MiB, after {} MiB",
        before / 1024,
        peak_rss_kib() / 1024
    );
}

criterion_group!(http, benches);
criterion_main!(http);
