//! What a live MCP server costs a run: the BFCL bridge's start (process started → its
//! endpoint printed), a new session on it (`initialize`, fresh instances of an entry's
//! classes), one call on an open session (`tools/call` of `pwd` on BFCL's file
//! system, through discbench's client over Streamable HTTP), and the same call on a
//! small stdio server (`tests/mcp/counter.py`). Needs a Python with bfcl-eval 2026.3.23
//! (`DISCBENCH_BFCL_PYTHON`, or the virtualenv `.ci/run` makes in target/bfcl-venv) for
//! the bridge, and python3 for the stdio server; what it cannot find it skips, saying so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use discbench::environment::live::{Live, LiveCalls, LiveSpec, Transport};
use discbench::mcp_client::live::{Launch, LiveProcess};
use serde_json::json;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python with bfcl-eval, if there is one.
fn bfcl_python() -> Option<String> {
    let candidates = [
        std::env::var("DISCBENCH_BFCL_PYTHON").ok(),
        Some(
            root()
                .join("target/bfcl-venv/bin/python")
                .display()
                .to_string(),
        ),
    ];
    candidates.into_iter().flatten().find(|py| {
        std::process::Command::new(py)
            .args(["-c", "import bfcl_eval, mpmath"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// A catalog of one entry the bridge serves: enough of BFCL's file system to call.
fn catalog(dir: &Path) -> PathBuf {
    let tool = |name: &str| json!({"name": name, "description": name, "inputSchema": {"type": "object", "properties": {}}});
    let path = dir.join("catalog.json");
    let c = json!({"mcp_servers": [{"name": "multi_turn_base_0", "description": "bench",
        "tools": [tool("pwd"), tool("ls")]}]});
    std::fs::write(&path, c.to_string()).unwrap();
    path
}

fn spec(server: &str, command: Vec<String>, transport: Transport, state: Option<&str>) -> LiveSpec {
    LiveSpec {
        server: server.into(),
        command,
        env: vec![],
        timeout: Duration::from_secs(30),
        base: root(),
        url: None,
        transport,
        state: state.map(str::to_string),
        origin: server.into(),
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("live");
    g.sample_size(10);
    let dir = tempfile::tempdir().unwrap();
    match bfcl_python() {
        None => eprintln!("SKIPPED the bridge: no Python with bfcl-eval and mpmath"),
        Some(py) => {
            let cat = catalog(dir.path());
            let bridge = root().join("scripts/bfcl/bridge.py");
            let command = vec![
                py.clone(),
                bridge.display().to_string(),
                "--catalog".into(),
                cat.display().to_string(),
            ];
            g.bench_function("bridge start (to its URL)", |b| {
                b.iter_custom(|n| {
                    let mut total = Duration::ZERO;
                    for _ in 0..n {
                        let env: BTreeMap<_, _> = ["PATH", "HOME"]
                            .iter()
                            .filter_map(|k| Some((k.into(), std::env::var_os(k)?)))
                            .collect();
                        let launch = Launch {
                            program: py.clone().into(),
                            args: command[1..].iter().map(Into::into).collect(),
                            env,
                            cwd: dir.path().to_path_buf(),
                            timeout: Duration::from_secs(30),
                        };
                        let t = Instant::now();
                        let p = LiveProcess::start(launch).expect("the bridge starts");
                        total += t.elapsed();
                        p.stop();
                    }
                    total
                })
            });
            let live = Arc::new(Live::new(vec![spec(
                "multi_turn_base_0",
                command,
                Transport::Http,
                Some("bfcl://state"),
            )]));
            // Started once, with one session open.
            let first = live.instances();
            assert!(first.call("multi_turn_base_0", "pwd", &json!({})).is_some());
            g.bench_function("bridge: new session (initialize) and first call", |b| {
                b.iter(|| {
                    let i = live.instances();
                    assert!(i.call("multi_turn_base_0", "pwd", &json!({})).is_some());
                })
            });
            g.bench_function("bridge: one call on an open session", |b| {
                b.iter(|| assert!(first.call("multi_turn_base_0", "pwd", &json!({})).is_some()))
            });
            g.bench_function("bridge: state read", |b| {
                b.iter(|| assert!(first.state("multi_turn_base_0").is_some()))
            });
            drop(first);
            live.finish();
        }
    }
    let counter = root().join("tests/mcp/counter.py");
    let live = Arc::new(Live::new(vec![spec(
        "counter",
        vec!["python3".into(), counter.display().to_string()],
        Transport::Stdio,
        None,
    )]));
    let i = live.instances();
    if i.call("counter", "get", &json!({})).is_none() {
        eprintln!("SKIPPED the stdio server: {:?}", i.failure());
    } else {
        g.bench_function("stdio server: one call on an open session", |b| {
            b.iter(|| assert!(i.call("counter", "get", &json!({})).is_some()))
        });
    }
    drop(i);
    live.finish();
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
