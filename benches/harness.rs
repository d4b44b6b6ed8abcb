//! Speed of the harness: rendering a mode's context, counting its tokens (cold and
//! memoized), the full mock run of the built-in suite (every default preset × 2
//! models) with every report, as `discbench run` does it, at `--jobs 1` and at the
//! default, `discbench report` of an 8,100-outcome run (three of the suite's
//! scenarios run five times over), and a catalog-size sweep of enterprise-hub from 10
//! to 1,000 tools.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use std::sync::Arc;

use clap::Parser;
use discbench::cli::{dispatch, Cli, Environment};
use discbench::runner::DEFAULT_JOBS;
use discbench::scenario;
use discbench::strategy::{Composite, Mode, ProtocolConfig, Templates};
use discbench::tokens::{Counter, Encoding};

fn benches(c: &mut Criterion) {
    let suite = scenario::load_all(&[PathBuf::from("scenarios")]).expect("suite loads");
    let hub = suite
        .iter()
        .find(|s| s.name == "enterprise-hub")
        .expect("enterprise-hub");
    let t = Arc::new(Templates::builtin());
    let legacy = Mode::preset("legacy").unwrap();

    c.bench_function("render enterprise-hub legacy", |b| {
        b.iter(|| {
            Composite::new(
                black_box(&hub.catalog),
                None,
                legacy.clone(),
                &t,
                ProtocolConfig::default(),
            )
            .unwrap()
        })
    });

    let comp = Composite::new(
        &hub.catalog,
        None,
        legacy.clone(),
        &t,
        ProtocolConfig::default(),
    )
    .unwrap();
    let texts: Vec<String> = std::iter::once(comp.system().to_string())
        .chain(comp.all_tools().iter().map(|x| x.wire_json()))
        .collect();
    let counter = Counter::new(Encoding::O200kBase);
    c.bench_function("count enterprise-hub legacy context, cold", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|s| counter.count_uncached(black_box(s)))
                .sum::<usize>()
        })
    });
    c.bench_function("count enterprise-hub legacy context, memoized", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|s| counter.count(black_box(s)))
                .sum::<usize>()
        })
    });

    let mut group = c.benchmark_group("suite");
    group.sample_size(10);
    for jobs in [1, DEFAULT_JOBS] {
        let name = format!("full mock run of the built-in suite with reports, --jobs {jobs}");
        group.bench_function(name, |b| {
            let dir = tempfile::tempdir().unwrap();
            let mut n = 0;
            b.iter(|| {
                n += 1;
                let cli = Cli::parse_from([
                    "discbench".to_string(),
                    "run".into(),
                    "--no-progress".into(),
                    "--jobs".into(),
                    jobs.to_string(),
                    "--run-id".into(),
                    format!("r{n}"),
                    "--out".into(),
                    dir.path().display().to_string(),
                ]);
                let env = Environment {
                    stderr_is_terminal: false,
                    is_ci: true,
                };
                let code = dispatch(cli, env, &mut std::io::sink()).unwrap();
                assert_eq!(code, 0);
            })
        });
    }
    // `report` re-renders every report of a run from its record alone.
    let dir = tempfile::tempdir().unwrap();
    let cli = |args: &[&str]| {
        let cli = Cli::parse_from(std::iter::once("discbench").chain(args.iter().copied()));
        let env = Environment {
            stderr_is_terminal: false,
            is_ci: true,
        };
        assert_eq!(dispatch(cli, env, &mut std::io::sink()).unwrap(), 0);
    };
    let out = dir.path().display().to_string();
    cli(&[
        "run",
        "scenarios/enterprise-hub.yaml",
        "scenarios/mcp-reference.yaml",
        "scenarios/large-catalog.yaml",
        "--repeat",
        "5",
        "--no-progress",
        "--run-id",
        "r",
        "--out",
        &out,
    ]);
    let run_dir = dir.path().join("r").display().to_string();
    group.bench_function("report of an 8,100-outcome run", |b| {
        b.iter(|| cli(&["report", &run_dir]))
    });
    // A catalog-size sweep of enterprise-hub from 10 to 1,000 tools over the default
    // modes and mock models (distractors from the committed captures), with every
    // report: 5 sizes × 65 queries × 6 modes × 2 models = 3,900 outcomes.
    let mut n = 0;
    group.bench_function(
        "sweep of enterprise-hub, 10 to 1,000 tools, with reports",
        |b| {
            b.iter(|| {
                n += 1;
                let id = format!("s{n}");
                cli(&[
                    "sweep",
                    "scenarios/enterprise-hub.yaml",
                    "--sizes",
                    "10,30,100,300,1000",
                    "--seed",
                    "1",
                    "--no-progress",
                    "--run-id",
                    &id,
                    "--out",
                    &out,
                ]);
                std::fs::remove_dir_all(dir.path().join(&id)).unwrap();
            })
        },
    );
    group.finish();
}

criterion_group!(harness, benches);
criterion_main!(harness);
