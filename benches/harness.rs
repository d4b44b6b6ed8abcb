//! Speed of the harness: rendering a mode's context, counting its tokens (cold and
//! memoized), and the full mock run of the built-in suite (3 presets × 2 models) with
//! every report, as `discbench run` does it, at `--jobs 1` and at the default.

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
    group.finish();
}

criterion_group!(harness, benches);
criterion_main!(harness);
