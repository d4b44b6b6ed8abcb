//! Aggregation at scale, on outcome lines shaped like real ones: the built-in suite is
//! run once with the mock models, and its outcome lines (every field a run writes:
//! turns, calls, ledgers, surfacing; format 3, texts by reference) are written over and
//! over with the repeat index counted up, to `DISCBENCH_AGG_LINES` lines (default one
//! million). Each iteration flattens them to Parquet and summarizes them, as `report`
//! does. Prints the input size and the peak resident memory of the aggregation alone
//! (the high-water mark is reset after the set-up), which stays flat in the number of
//! lines because the outcome file is streamed and every aggregate is bounded by the
//! number of groups and distinct values, not of outcomes.
//!
//! Then `discbench report` (this build's binary, as a separate process) re-renders the
//! same lines as a run directory, every report file included, and the bench prints the
//! peak resident memory of that process: what a user's `report` holds, which is flat
//! in the number of lines too.
//!
//! `DISCBENCH_AGG_LINES=10000000 cargo bench --bench aggregate` runs the ten-million
//! line case (about 44 GB of JSON in a temporary directory, and the report's 7 GB of
//! `outcomes.csv` and 3.4 GB of `junit.xml` beside it; `TMPDIR` says where), timed
//! once: above two million lines criterion's ten samples would take too long.

use std::io::{BufWriter, Write};
use std::path::Path;

use clap::Parser;
use criterion::{criterion_group, criterion_main, Criterion};
use discbench::analysis::aggregate;
use discbench::cli::{dispatch, Cli, Environment};

/// The outcome lines of one mock run of the built-in suite.
fn suite_lines(dir: &Path) -> Vec<String> {
    let cli = Cli::parse_from([
        "discbench",
        "run",
        "--no-progress",
        "--run-id",
        "template",
        "--out",
        &dir.display().to_string(),
    ]);
    let env = Environment {
        stderr_is_terminal: false,
        is_ci: true,
    };
    assert_eq!(dispatch(cli, env, &mut std::io::sink()).unwrap(), 0);
    std::fs::read_to_string(dir.join("template/outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Writes `n` lines, cycling through `lines` with the repeat index of each pass.
fn generate(lines: &[String], n: usize, path: &Path) -> u64 {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    let mut bytes = 0u64;
    for k in 0..n {
        let line = &lines[k % lines.len()];
        let at = line.find("\"repeat\":0,").expect("a repeat field");
        let pass = k / lines.len();
        for part in [
            &line[..at],
            &format!("\"repeat\":{pass},"),
            &line[at + "\"repeat\":0,".len()..],
            "\n",
        ] {
            w.write_all(part.as_bytes()).unwrap();
            bytes += part.len() as u64;
        }
    }
    w.flush().unwrap();
    bytes
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Resets the process's peak resident memory to what it holds now (Linux).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Above this many lines (or with `DISCBENCH_AGG_ONCE` set) the aggregation is timed
/// once, step by step, not sampled by criterion.
const ONCE_ABOVE: usize = 2_000_000;

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("DISCBENCH_AGG_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    // As the binary does before it starts a thread: polars reads ahead one row group
    // per thread, not the whole file, and aggregates more groups in place.
    aggregate::bound_streaming_memory();
    let dir = tempfile::tempdir().unwrap();
    let lines = suite_lines(dir.path());
    // The template run's own outcome file, overwritten: `report` reads the generated
    // lines beside the run's plan and text store.
    let run = dir.path().join("template");
    let jsonl = run.join("outcomes.jsonl");
    let parquet = dir.path().join("outcomes.parquet");
    let bytes = generate(&lines, n, &jsonl);
    drop(lines);
    reset_peak();
    let before = peak_rss_kib();
    let aggregate = || {
        aggregate::flatten(&jsonl, &parquet).unwrap();
        aggregate::summarize(&parquet).unwrap()
    };
    if n <= ONCE_ABOVE && std::env::var_os("DISCBENCH_AGG_ONCE").is_none() {
        let mut group = c.benchmark_group("aggregate");
        group.sample_size(10);
        group.bench_function(
            format!("flatten + summarize {n} real-shaped outcome lines"),
            |b| b.iter(aggregate),
        );
        group.finish();
    } else {
        // Criterion's ten samples at least would take over half an hour here. Each
        // step's own peak is printed too.
        let start = std::time::Instant::now();
        aggregate::flatten(&jsonl, &parquet).unwrap();
        let flattened = start.elapsed();
        let flatten_peak = peak_rss_kib();
        reset_peak();
        let summary = aggregate::summarize(&parquet).unwrap();
        eprintln!(
            "aggregate: flatten + summarize {n} real-shaped outcome lines, one run: {:.1} s (flatten {:.1} s, peak {} MiB; summarize {:.1} s, peak {} MiB; {} outcomes summarized)",
            start.elapsed().as_secs_f64(),
            flattened.as_secs_f64(),
            flatten_peak.map_or(0, |k| k / 1024),
            (start.elapsed() - flattened).as_secs_f64(),
            peak_rss_kib().map_or(0, |k| k / 1024),
            summary.outcomes
        );
    }
    eprintln!(
        "aggregate: {n} outcome lines, {:.0} MB of JSON ({:.0} bytes a line); resident memory after set-up {} MiB, peak during aggregation {} MiB",
        bytes as f64 / 1e6,
        bytes as f64 / n as f64,
        before.map_or(0, |k| k / 1024),
        peak_rss_kib().map_or(0, |k| k / 1024)
    );
    let start = std::time::Instant::now();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_discbench"))
        .arg("report")
        .arg(&run)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "report failed: {status}");
    eprintln!(
        "aggregate: `discbench report` of the {n} lines, every report file: {:.1} s, peak resident memory {} MiB",
        start.elapsed().as_secs_f64(),
        children_peak_rss_kib() / 1024
    );
}

/// The largest peak resident memory of the child processes waited for (Linux reports
/// it in KiB); the bench starts one, `report`.
fn children_peak_rss_kib() -> u64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage failed");
    usage.ru_maxrss as u64
}

criterion_group!(benches, bench);
criterion_main!(benches);
