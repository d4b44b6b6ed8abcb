//! Speed of the harness: rendering a mode's context, counting its tokens (cold and
//! memoized), and a full mock run of the built-in suite (3 presets × 2 models).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use discbench::runner::events::Collector;
use discbench::runner::{self, Listener, RunConfig, DEFAULT_MAX_TURNS};
use discbench::scenario;
use discbench::strategy::{Composite, Mode, SelectionConfig, Templates};
use discbench::tokens::{Counter, Encoding};

fn benches(c: &mut Criterion) {
    let suite = scenario::load_all(&[PathBuf::from("scenarios")]).expect("suite loads");
    let hub = suite
        .iter()
        .find(|s| s.name == "enterprise-hub")
        .expect("enterprise-hub");
    let t = Templates::builtin();
    let legacy = Mode::preset("legacy").unwrap();

    c.bench_function("render enterprise-hub legacy", |b| {
        b.iter(|| {
            Composite::new(
                black_box(&hub.catalog),
                None,
                legacy.clone(),
                &t,
                SelectionConfig::default(),
            )
            .unwrap()
        })
    });

    let comp = Composite::new(
        &hub.catalog,
        None,
        legacy.clone(),
        &t,
        SelectionConfig::default(),
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
    group.bench_function("full mock run of the built-in suite", |b| {
        b.iter(|| {
            let cfg = RunConfig {
                run_id: "bench".into(),
                modes: ["progressive", "legacy", "inline"]
                    .iter()
                    .map(|p| Mode::preset(p).unwrap())
                    .collect(),
                models: vec!["oracle".into(), "lexical".into()],
                repeat: 1,
                max_turns: DEFAULT_MAX_TURNS,
                selection: SelectionConfig::default(),
                templates: Templates::builtin(),
            };
            let counter = Counter::new(Encoding::O200kBase);
            let mut collector = Collector::default();
            let mut listeners: [&mut dyn Listener; 1] = [&mut collector];
            runner::run(&suite, &cfg, &counter, &mut listeners).unwrap();
            collector.outcomes.len()
        })
    });
    group.finish();
}

criterion_group!(harness, benches);
criterion_main!(harness);
