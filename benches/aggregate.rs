//! Aggregation at scale: about one million generated outcome lines (4 scenarios ×
//! 3 modes × 2 models × 42 repeats × 1000 queries) are flattened to Parquet and
//! aggregated. Prints the input size and the process's peak resident memory, which
//! stays bounded because the outcome file is streamed in batches and scanned lazily.

use std::io::{BufWriter, Write};
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use discbench::analysis::aggregate;

const SCENARIOS: usize = 4;
const MODES: [&str; 3] = ["progressive", "legacy", "inline"];
const MODELS: [&str; 2] = ["oracle", "lexical"];
const REPEATS: usize = 42;
const QUERIES: usize = 1000;

fn generate(path: &Path) -> usize {
    let mut w = BufWriter::new(std::fs::File::create(path).unwrap());
    let mut n = 0usize;
    for s in 0..SCENARIOS {
        for (mi, mode) in MODES.iter().enumerate() {
            for (ki, model) in MODELS.iter().enumerate() {
                for r in 0..REPEATS {
                    for q in 0..QUERIES {
                        // Deterministic pseudo-random scores and token counts.
                        let h = (n as u64)
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407)
                            >> 33;
                        let exact = h % 100 < 40 + 20 * mi as u64 + 10 * ki as u64;
                        let first = 500 + (h % 400) + 10_000 * (*mode == "legacy") as u64;
                        writeln!(
                            w,
                            r#"{{"run_id":"bench","scenario":"s{s}","query_id":"q{q}","tags":[],"mode":"{mode}","mode_spec":"{mode}","model":"{model}","repeat":{r},"tokenizer":"o200k_base","catalog_size":{},"expected":{{"calls":[],"order":"any","forbid":[]}},"calls":[],"final_text":"Done.","selection":null,"score":{{"exact":{exact},"precision":{p},"recall":{p},"f1":{p},"first_call_correct":{exact},"abstain_ok":null,"forbidden_hit":false,"args_ok":{exact},"schema_valid":true,"predicted":[]}},"protocol":{{"discovery_calls":1,"blind_calls":0,"unknown_target":{},"bad_subcommand":0,"schema_violation":0,"not_loaded":0,"repeat_call":0,"overfetch":0,"turns":3,"hit_max_turns":false}},"tokens":{{"system":150,"tool_defs":{},"fetched":{},"results":120,"output":40,"selection":0,"first_turn":{first},"billed_input":{},"peak_context":{}}},"turns":[],"infra_error":null}}"#,
                            50 * (s + 1),
                            h.is_multiple_of(7) as u8,
                            first - 170,
                            h % 2000,
                            first * 3 + h % 2000,
                            first + h % 2000,
                            p = if exact { 1.0 } else { 0.5 },
                        )
                        .unwrap();
                        n += 1;
                    }
                }
            }
        }
    }
    w.flush().unwrap();
    n
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

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("outcomes.jsonl");
    let parquet = dir.path().join("outcomes.parquet");
    let n = generate(&jsonl);
    let bytes = std::fs::metadata(&jsonl).unwrap().len();
    let before = peak_rss_kib();
    let mut group = c.benchmark_group("aggregate");
    group.sample_size(10);
    group.bench_function("flatten + summarize 1M outcome lines", |b| {
        b.iter(|| {
            aggregate::flatten(&jsonl, &parquet).unwrap();
            aggregate::summarize(&parquet).unwrap()
        })
    });
    group.finish();
    eprintln!(
        "aggregate: {n} outcome lines, {:.0} MB of JSON; peak RSS before {} MiB, after {} MiB",
        bytes as f64 / 1e6,
        before.map_or(0, |k| k / 1024),
        peak_rss_kib().map_or(0, |k| k / 1024)
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
