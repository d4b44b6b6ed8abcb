//! Structure-aware fuzzing (proptest) of every reader and every executed input:
//!
//! | target | what is generated | the contract |
//! |---|---|---|
//! | `scenario_loader` | scenarios (YAML and JSON) built from a valid one, mutated in structure and in bytes, with includes of generated fragments, dumps, missing files, cycles and directories, content files and seed SQL | `Ok`, or errors naming a file; no panic, no hang |
//! | `models_file` | models files of entries with odd names, providers, numbers and fields, mutated in bytes | `Ok` and every backend builds, or an error naming the file |
//! | `bfcl_results` | `score-bfcl` result lines: ids of the committed sample or not, results in and out of BFCL's shape, torn and garbled lines | `Ok` and every line judged, or an error naming the line |
//! | `outcome_reader` | run directories torn, truncated, garbled, emptied; read in process, then `report`, `run --resume` and `merge` on them | `Ok` or a bad-input error; the CLI exits 0 or 2 (never a panic); no file it read is changed, a resume keeps every line it kept |
//! | `mcp_stdio`, `mcp_http` | JSON-RPC frames (methods MCP defines and others, params of every shape, odd ids, batches, garbage lines, deep nesting, bad UTF-8) to `serve` over stdio, and POSTs with odd bodies and headers over HTTP | JSON-RPC errors or answers; the server answers a ping (stdio) or a new session (HTTP) afterwards and exits 0 |
//! | `model_answers` | answers in the wire shape of each provider (Chat Completions, Messages, Responses), mutated field by field | an `Answer` or a `ModelError`; no panic |
//! | `tool_arguments` | JSON Schemas (types, enums, patterns, formats, combinators, recursive `$ref`) and arguments | violations or none, within a second; no panic |
//! | `sql_guard` | SQL from a grammar of the functions and shapes that cost (huge values, recursion, joins, sorts, patterns), writes, pragmas, garbage | rows within the limits or an error answer, within the time limit; the database unchanged |
//!
//! `cargo test` runs a bounded slice of each, with a fixed seed (the same cases every
//! time). The long campaign — `cargo test --release --test fuzz -- --ignored` — runs
//! each target `DISCBENCH_FUZZ_CASES` times (its own default otherwise) from a fresh
//! seed (`DISCBENCH_FUZZ_SEED` to repeat one), prints one line per target (cases run,
//! inputs accepted and refused, seconds, its seed) and writes them to
//! `target/tmp/fuzz/<target>.json`. A failure prints the smallest input proptest
//! shrank it to; each crash found becomes a test of its own at the end of this file.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{json, Map, Value};

#[path = "support/http_serve.rs"]
mod http_serve;
use http_serve::HttpServer;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn discbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_discbench"))
}

// ---------------------------------------------------------------------------------
// The harness: one campaign per target.

/// What a campaign counts.
#[derive(Default)]
struct Counts {
    cases: AtomicUsize,
    accepted: AtomicUsize,
    refused: AtomicUsize,
}

impl Counts {
    fn outcome<T, E>(&self, r: &Result<T, E>) {
        if r.is_ok() {
            self.accepted.fetch_add(1, Ordering::Relaxed);
        } else {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Whether this is the long campaign (`--ignored`), and its seed.
fn long_seed() -> [u8; 32] {
    let seed: u64 = std::env::var("DISCBENCH_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s
}

/// Runs `test` on `cases` inputs of `strategy`: a fixed seed for the short slice, a
/// fresh one (printed) for the long campaign. A failing case fails the test with the
/// smallest input proptest shrinks it to. Prints and records the counts.
fn campaign<S: Strategy>(
    target: &str,
    cases: u32,
    long: bool,
    strategy: S,
    test: impl Fn(S::Value, &Counts) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let cases = if long {
        std::env::var("DISCBENCH_FUZZ_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(cases)
    } else {
        cases
    };
    let seed = if long {
        long_seed()
    } else {
        let mut s = [7u8; 32];
        s[..target.len().min(32)].copy_from_slice(&target.as_bytes()[..target.len().min(32)]);
        s
    };
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 512,
        // Cases are rejected only by the targets' own filters, which are few.
        max_global_rejects: cases.saturating_mul(4).max(1024),
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    let counts = Counts::default();
    let started = Instant::now();
    let result = runner.run(&strategy, |v| {
        counts.cases.fetch_add(1, Ordering::Relaxed);
        test(v, &counts)
    });
    let took = started.elapsed();
    let line = json!({
        "target": target,
        "campaign": if long { "long" } else { "short" },
        "seed": u64::from_le_bytes(seed[..8].try_into().unwrap()),
        "cases": counts.cases.load(Ordering::Relaxed),
        "accepted": counts.accepted.load(Ordering::Relaxed),
        "refused": counts.refused.load(Ordering::Relaxed),
        "failed": result.is_err(),
        "seconds": (took.as_secs_f64() * 10.0).round() / 10.0,
    });
    eprintln!("fuzz {target}: {line}");
    if long {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz");
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join(format!("{target}.json")), format!("{line}\n"));
    }
    if let Err(e) = result {
        panic!("fuzz {target}: {e}");
    }
}

thread_local! {
    /// Inside [`no_panic`]: a panic is reported by the harness, not printed.
    static CATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, failing the case (with the panic's message) if it panics.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, TestCaseError> {
    CATCHING.with(|c| c.set(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(false));
    r.map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{what} panicked: {msg}"))
    })
}

/// Quiet panics inside [`no_panic`] (the harness reports them).
fn quiet_panics() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(|c| c.get()) || std::env::var_os("DISCBENCH_FUZZ_VERBOSE").is_some() {
                default(info);
            }
        }));
    });
}

// ---------------------------------------------------------------------------------
// Shared generators.

/// Numbers that break naive code: zero, negatives, the edges of every integer width,
/// huge floats.
fn odd_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(0)),
        Just(json!(-1)),
        Just(json!(1)),
        Just(json!(i32::MAX)),
        Just(json!(i64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(u64::MAX)),
        Just(json!(1e300)),
        Just(json!(-1e300)),
        Just(json!(0.5)),
        Just(json!(1e-300)),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
    ]
}

/// Strings that break naive code: empty, long, control characters, quotes, other
/// scripts, lookalikes of paths and URIs.
fn odd_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" ".to_string()),
        Just("\u{0}".to_string()),
        Just("é\u{200b}名前🦀".to_string()),
        Just("../../../etc/passwd".to_string()),
        Just("resource:///tool_descriptions?tools=".to_string()),
        Just("\"'`;--".to_string()),
        Just("x".repeat(10_000)),
        Just("{{ 7*7 }}{% raw %}".to_string()),
        "[a-z_]{1,12}",
        "\\PC{0,40}",
        any::<String>(),
    ]
}

/// Any JSON value, leaves odd, up to `depth` levels.
fn any_json(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        odd_number(),
        odd_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(odd_string(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Byte-level damage: cut, insert, flip, duplicate or delete a range.
#[derive(Debug, Clone)]
enum Damage {
    Cut(f64),
    Insert(f64, Vec<u8>),
    Flip(f64, u8),
    Duplicate(f64, f64),
    Delete(f64, f64),
}

fn damage() -> impl Strategy<Value = Damage> {
    let at = 0.0..1.0f64;
    prop_oneof![
        at.clone().prop_map(Damage::Cut),
        (at.clone(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(a, b)| Damage::Insert(a, b)),
        (at.clone(), any::<u8>()).prop_map(|(a, b)| Damage::Flip(a, b)),
        (at.clone(), at.clone()).prop_map(|(a, b)| Damage::Duplicate(a, b)),
        (at.clone(), at).prop_map(|(a, b)| Damage::Delete(a, b)),
    ]
}

fn apply(bytes: &mut Vec<u8>, d: &Damage) {
    let pos = |f: f64, len: usize| ((f * len as f64) as usize).min(len);
    let len = bytes.len();
    match d {
        Damage::Cut(a) => bytes.truncate(pos(*a, len)),
        Damage::Insert(a, b) => {
            let p = pos(*a, len);
            bytes.splice(p..p, b.iter().copied());
        }
        Damage::Flip(a, x) => {
            if len > 0 {
                let p = pos(*a, len - 1);
                bytes[p] ^= x | 1;
            }
        }
        Damage::Duplicate(a, b) => {
            let (p, q) = (pos(a.min(*b), len), pos(a.max(*b), len));
            let copy = bytes[p..q].to_vec();
            bytes.splice(q..q, copy);
        }
        Damage::Delete(a, b) => {
            let (p, q) = (pos(a.min(*b), len), pos(a.max(*b), len));
            bytes.drain(p..q);
        }
    }
}

/// A path into a JSON tree, chosen by fractions at each level.
fn node_mut<'a>(v: &'a mut Value, path: &[f64]) -> &'a mut Value {
    let Some((f, rest)) = path.split_first() else {
        return v;
    };
    let n = match v {
        Value::Array(a) => a.len(),
        Value::Object(o) => o.len(),
        _ => 0,
    };
    if n == 0 {
        return v;
    }
    let i = ((f * n as f64) as usize).min(n - 1);
    match v {
        Value::Array(a) => node_mut(&mut a[i], rest),
        Value::Object(o) => {
            let k = o.keys().nth(i).unwrap().clone();
            node_mut(o.get_mut(&k).unwrap(), rest)
        }
        _ => unreachable!(),
    }
}

/// A structural edit of a JSON tree.
#[derive(Debug, Clone)]
enum Edit {
    /// Replaces the node with a value.
    Replace(Vec<f64>, Value),
    /// Removes a key or item of the node.
    Remove(Vec<f64>, f64),
    /// Adds a key to an object node.
    AddKey(Vec<f64>, String, Value),
    /// Duplicates an item of an array node.
    DuplicateItem(Vec<f64>, f64),
}

fn edit() -> impl Strategy<Value = Edit> {
    let path = prop::collection::vec(0.0..1.0f64, 0..6);
    prop_oneof![
        (path.clone(), any_json(2)).prop_map(|(p, v)| Edit::Replace(p, v)),
        (path.clone(), 0.0..1.0f64).prop_map(|(p, f)| Edit::Remove(p, f)),
        (path.clone(), odd_string(), any_json(1)).prop_map(|(p, k, v)| Edit::AddKey(p, k, v)),
        (path, 0.0..1.0f64).prop_map(|(p, f)| Edit::DuplicateItem(p, f)),
    ]
}

fn apply_edit(v: &mut Value, e: &Edit) {
    let pick = |f: f64, n: usize| ((f * n as f64) as usize).min(n.saturating_sub(1));
    match e {
        Edit::Replace(p, x) => *node_mut(v, p) = x.clone(),
        Edit::Remove(p, f) => match node_mut(v, p) {
            Value::Array(a) if !a.is_empty() => {
                let i = pick(*f, a.len());
                a.remove(i);
            }
            Value::Object(o) if !o.is_empty() => {
                let k = o.keys().nth(pick(*f, o.len())).unwrap().clone();
                o.remove(&k);
            }
            _ => {}
        },
        Edit::AddKey(p, k, x) => {
            if let Value::Object(o) = node_mut(v, p) {
                o.insert(k.clone(), x.clone());
            }
        }
        Edit::DuplicateItem(p, f) => {
            if let Value::Array(a) = node_mut(v, p) {
                if !a.is_empty() {
                    let i = pick(*f, a.len());
                    let x = a[i].clone();
                    a.insert(i, x);
                }
            }
        }
    }
}

fn yaml_of(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::from_str(&text).unwrap()
}

// ---------------------------------------------------------------------------------
// The scenario loader.

/// One file a generated scenario may include or name.
#[derive(Debug, Clone)]
enum Aux {
    /// A catalog fragment (a valid one, edited).
    Fragment(Vec<Edit>),
    /// A real `tools/list` dump, damaged or not.
    Dump(Vec<Damage>),
    /// Bytes that are no file format.
    Garbage(Vec<u8>),
    /// Seed SQL: valid, broken or costly (but quick).
    Seed(String),
}

fn aux() -> impl Strategy<Value = Aux> {
    prop_oneof![
        3 => prop_oneof![2 => Just(Vec::new()), 1 => prop::collection::vec(edit(), 1..3)]
            .prop_map(Aux::Fragment),
        3 => prop_oneof![2 => Just(Vec::new()), 1 => prop::collection::vec(damage(), 1..2)]
            .prop_map(Aux::Dump),
        1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Aux::Garbage),
        1 => prop_oneof![
            Just("CREATE TABLE people (id INTEGER, name TEXT); INSERT INTO people VALUES (1, 'Ada');".to_string()),
            Just("CREATE TABLE people (id INTEGER, name TEXT); INSERT INTO nowhere VALUES (1);".to_string()),
            Just("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO people VALUES (1, 'a'), (1, 'b');".to_string()),
            Just("CREATE TABLE people (id, name); WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r LIMIT 5000) INSERT INTO people SELECT i, printf('%.*c', 100, 'x') FROM r;".to_string()),
            Just("ATTACH 'x.db' AS x;".to_string()),
            Just(String::new()),
            "\\PC{0,60}",
        ]
        .prop_map(Aux::Seed),
    ]
}

/// What a generated scenario's `catalog.include` holds.
#[derive(Debug, Clone)]
enum Include {
    Aux(usize, Option<String>),
    Missing,
    Itself,
    Directory,
    Odd(Value),
}

fn include() -> impl Strategy<Value = Include> {
    prop_oneof![
        4 => (0..4usize, prop::option::of("[a-z]{1,8}")).prop_map(|(i, n)| Include::Aux(i, n)),
        1 => Just(Include::Missing),
        1 => Just(Include::Itself),
        1 => Just(Include::Directory),
        1 => any_json(1).prop_map(Include::Odd),
    ]
}

#[derive(Debug, Clone)]
struct ScenarioCase {
    json: bool,
    edits: Vec<Edit>,
    aux: Vec<Aux>,
    includes: Vec<Include>,
    /// Where the one database's seed comes from: its inline file (as in tiny), an
    /// aux file, or an odd value.
    seed: Option<usize>,
    bytes: Vec<Damage>,
}

fn scenario_case() -> impl Strategy<Value = ScenarioCase> {
    // Mostly small damage, so that many cases load and reach the checks behind the
    // parser (includes, names, expectations, seeds).
    let some = |n: usize| prop_oneof![2 => Just(0..1usize), 1 => Just(1..n)];
    (
        any::<bool>(),
        some(4).prop_flat_map(|r| prop::collection::vec(edit(), r)),
        prop::collection::vec(aux(), 4),
        some(4).prop_flat_map(|r| prop::collection::vec(include(), r)),
        prop_oneof![3 => Just(None), 1 => (0..4usize).prop_map(Some)],
        some(3).prop_flat_map(|r| prop::collection::vec(damage(), r)),
    )
        .prop_map(|(json, edits, aux, includes, seed, bytes)| ScenarioCase {
            json,
            edits,
            aux,
            includes,
            seed,
            bytes,
        })
}

fn write_scenario(dir: &Path, c: &ScenarioCase) -> PathBuf {
    let tiny = yaml_of(&root().join("fixtures/snapshot/tiny.yaml"));
    let fragment = yaml_of(&root().join("fixtures/catalogs/enterprise/hr_postgres.yaml"));
    let dump = std::fs::read(root().join("fixtures/catalogs/mcp-server-time.tools.json")).unwrap();
    std::fs::copy(
        root().join("fixtures/invalid-support/people.sql"),
        dir.join("people.sql"),
    )
    .unwrap();
    std::fs::copy(
        root().join("fixtures/db/hr_postgres.sql"),
        dir.join("hr_postgres.sql"),
    )
    .unwrap();
    let mut names = Vec::new();
    for (i, a) in c.aux.iter().enumerate() {
        let (name, bytes) = match a {
            Aux::Fragment(edits) => {
                let mut f = fragment.clone();
                // Its seed, next to it.
                if let Some(db) = f.pointer_mut("/databases/0") {
                    db["seed_sql"] = json!("hr_postgres.sql");
                }
                for e in edits {
                    apply_edit(&mut f, e);
                }
                (
                    format!("aux{i}.yaml"),
                    serde_yaml_ng::to_string(&f).unwrap().into_bytes(),
                )
            }
            Aux::Dump(damages) => {
                let mut b = dump.clone();
                for d in damages {
                    apply(&mut b, d);
                }
                (format!("aux{i}.tools.json"), b)
            }
            Aux::Garbage(b) => (format!("aux{i}.yaml"), b.clone()),
            Aux::Seed(sql) => (format!("aux{i}.sql"), sql.clone().into_bytes()),
        };
        std::fs::write(dir.join(&name), bytes).unwrap();
        names.push(name);
    }
    let file = dir.join(if c.json { "s.json" } else { "s.yaml" });
    let mut s = tiny;
    s["catalog"]["databases"][0]["seed_sql"] = json!("people.sql");
    if let Some(i) = c.seed {
        s["catalog"]["databases"][0]["seed_sql"] = json!(names[i]);
    }
    if !c.includes.is_empty() {
        let list: Vec<Value> = c
            .includes
            .iter()
            .map(|inc| match inc {
                Include::Aux(i, None) => json!(names[*i]),
                Include::Aux(i, Some(n)) => json!({"path": names[*i], "name": n}),
                Include::Missing => json!("no-such-file.yaml"),
                Include::Itself => json!(file.file_name().unwrap().to_str().unwrap()),
                Include::Directory => json!("."),
                Include::Odd(v) => v.clone(),
            })
            .collect();
        s["catalog"]["include"] = Value::Array(list);
    }
    for e in &c.edits {
        apply_edit(&mut s, e);
    }
    let mut bytes = if c.json {
        serde_json::to_vec_pretty(&s).unwrap()
    } else {
        serde_yaml_ng::to_string(&s).unwrap().into_bytes()
    };
    for d in &c.bytes {
        apply(&mut bytes, d);
    }
    std::fs::write(&file, bytes).unwrap();
    file
}

fn scenario_loader(cases: u32, long: bool) {
    quiet_panics();
    campaign(
        "scenario_loader",
        cases,
        long,
        scenario_case(),
        |c, counts| {
            let dir = tempfile::tempdir().unwrap();
            let file = write_scenario(dir.path(), &c);
            let started = Instant::now();
            let r = no_panic("scenario::load", || discbench::scenario::load(&file))?;
            let took = started.elapsed();
            prop_assert!(took < Duration::from_secs(20), "load took {took:?}");
            counts.outcome(&r);
            if let Err(e) = &r {
                let text = e.to_string();
                prop_assert!(!text.trim().is_empty());
                // Every error names a file of the scenario's directory (or the scenario).
                let dir_name = dir.path().display().to_string();
                prop_assert!(
                    text.contains(&dir_name) || text.contains("s.yaml") || text.contains("s.json"),
                    "an error that names no file: {text}"
                );
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_scenario_loader() {
    scenario_loader(48, false);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_scenario_loader_long() {
    scenario_loader(3_000, true);
}

/// The CLI on broken scenarios: exit 2, never a panic (a handful of cases; the loader
/// itself is fuzzed above).
#[test]
fn fuzz_scenario_cli_exits_2() {
    quiet_panics();
    campaign("scenario_cli", 6, false, scenario_case(), |c, counts| {
        let dir = tempfile::tempdir().unwrap();
        let file = write_scenario(dir.path(), &c);
        let o = discbench().arg("validate").arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        prop_assert!(!err.contains("panicked"), "{err}");
        prop_assert!(
            matches!(o.status.code(), Some(0) | Some(1) | Some(2)),
            "{:?}: {err}",
            o.status
        );
        counts.outcome(&if o.status.success() { Ok(()) } else { Err(()) });
        Ok(())
    });
}

// ---------------------------------------------------------------------------------
// The models file.

fn models_entry() -> impl Strategy<Value = Value> {
    let name = prop_oneof![
        6 => prop::sample::select(&["gpt", "claude", "local", "m1", "m2"][..]).prop_map(|n| json!(n)),
        1 => Just(json!("oracle")),
        1 => Just(json!("openai:x")),
        1 => Just(json!("")),
        1 => odd_string().prop_map(Value::String),
        1 => odd_number(),
    ];
    let provider = prop_oneof![
        3 => prop::sample::select(&["openai", "anthropic", "openai-responses"][..]).prop_map(|p| json!(p)),
        1 => Just(json!("gemini")),
        1 => odd_number(),
    ];
    let num = prop_oneof![odd_number(), Just(json!("7")), Just(Value::Null)];
    (
        name,
        provider,
        odd_string(),
        prop::option::of(prop_oneof![
            Just(json!("http://127.0.0.1:1/v1")),
            Just(json!("not a url")),
            Just(json!("ftp://x")),
            odd_string().prop_map(Value::String),
        ]),
        prop::option::of(num.clone()),
        prop::option::of(num.clone()),
        prop::option::of(num.clone()),
        prop::option::of(num.clone()),
        prop::option::of(any_json(2)),
        prop::option::of((odd_string(), any_json(1))),
    )
        .prop_map(
            |(name, provider, model, base, timeout, temp, max_tokens, rpm, prices, extra)| {
                let mut e = Map::new();
                e.insert("name".into(), name);
                e.insert("provider".into(), provider);
                e.insert("model".into(), json!(model));
                if let Some(b) = base {
                    e.insert("base_url".into(), b);
                }
                if let Some(t) = timeout {
                    e.insert("timeout_secs".into(), t);
                }
                if let Some(t) = temp {
                    e.insert("temperature".into(), t);
                }
                if let Some(t) = max_tokens {
                    e.insert("max_tokens".into(), t);
                }
                if let Some(t) = rpm {
                    e.insert("requests_per_minute".into(), t);
                }
                if let Some(p) = prices {
                    e.insert("prices".into(), p);
                }
                if let Some((k, v)) = extra {
                    e.insert(k, v);
                }
                Value::Object(e)
            },
        )
}

fn models_file(cases: u32, long: bool) {
    quiet_panics();
    let strategy = (
        prop::collection::vec(models_entry(), 0..4),
        any::<bool>(),
        prop::collection::vec(damage(), 0..2),
    );
    campaign(
        "models_file",
        cases,
        long,
        strategy,
        |(entries, json_syntax, damages), counts| {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("models.yaml");
            let doc = json!({ "models": entries });
            let mut bytes = if json_syntax {
                serde_json::to_vec(&doc).unwrap()
            } else {
                serde_yaml_ng::to_string(&doc).unwrap().into_bytes()
            };
            for d in &damages {
                apply(&mut bytes, d);
            }
            std::fs::write(&file, &bytes).unwrap();
            let r = no_panic("ModelsFile::load", || {
                discbench::model::models_file::ModelsFile::load(&file)
            })?;
            counts.outcome(&r);
            match r {
                Err(e) => prop_assert!(e.contains("models.yaml"), "{e}"),
                Ok(f) => {
                    for entry in &f.models {
                        let o = discbench::model::ModelOptions {
                            models_file: Some(&f),
                            ..Default::default()
                        };
                        let built = no_panic("entry_backend", || {
                            discbench::model::entry_backend(entry, &o)
                        })?;
                        prop_assert!(built.is_ok() || built.is_err());
                    }
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_models_file() {
    models_file(256, false);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_models_file_long() {
    models_file(20_000, true);
}

// ---------------------------------------------------------------------------------
// `score-bfcl`'s result lines.

/// The committed BFCL sample, converted once.
fn bfcl_scenarios() -> &'static (PathBuf, Vec<discbench::scenario::Scenario>, Vec<String>) {
    static S: OnceLock<(PathBuf, Vec<discbench::scenario::Scenario>, Vec<String>)> =
        OnceLock::new();
    S.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-bfcl");
        let _ = std::fs::remove_dir_all(&dir);
        let o = discbench()
            .args(["import", "bfcl", "--data"])
            .arg(root().join("fixtures/bfcl/data"))
            .arg("--out")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let scenarios = discbench::scenario::load_all(std::slice::from_ref(&dir)).unwrap();
        let ids = scenarios
            .iter()
            .flat_map(|s| s.queries.iter().map(|q| q.id.clone()))
            .collect();
        (dir, scenarios, ids)
    })
}

fn bfcl_result() -> impl Strategy<Value = Value> {
    let args = prop_oneof![
        any_json(2).prop_map(|v| json!(v.to_string())),
        odd_string().prop_map(Value::String),
        any_json(1),
    ];
    let call = (odd_string(), args).prop_map(|(n, a)| {
        let mut m = Map::new();
        m.insert(n, a);
        Value::Object(m)
    });
    prop_oneof![
        prop::collection::vec(call, 0..4).prop_map(Value::Array),
        any_json(2),
        Just(json!("")),
        Just(json!([{}])),
    ]
}

fn bfcl_results(cases: u32, long: bool) {
    quiet_panics();
    let (_, scenarios, ids) = bfcl_scenarios();
    let line = (
        prop_oneof![
            3 => (0..ids.len()).prop_map(|i| json!(ids[i])),
            1 => any_json(0),
        ],
        bfcl_result(),
        prop::option::of(odd_string()),
    )
        .prop_map(|(id, result, extra)| {
            let mut m = Map::new();
            m.insert("id".into(), id);
            m.insert("result".into(), result);
            if let Some(k) = extra {
                m.insert(k, json!(1));
            }
            Value::Object(m).to_string()
        });
    let strategy = (
        prop::collection::vec(line, 0..6),
        prop::collection::vec(damage(), 0..2),
    );
    campaign(
        "bfcl_results",
        cases,
        long,
        strategy,
        |(lines, damages), counts| {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("result.json");
            let mut bytes = lines.join("\n").into_bytes();
            for d in &damages {
                apply(&mut bytes, d);
            }
            std::fs::write(&file, &bytes).unwrap();
            let r = no_panic("read_results", || {
                discbench::bfcl::results::read_results(&file)
            })?;
            counts.outcome(&r);
            match r {
                Err(e) => prop_assert!(e.to_string().contains("result.json"), "{e}"),
                Ok(lines) => {
                    let (verdicts, unknown) = no_panic("judge_all", || {
                        discbench::bfcl::judge::judge_all(scenarios, &lines, false, &[])
                    })?
                    .unwrap();
                    prop_assert_eq!(verdicts.len() + unknown.len(), lines.len());
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_bfcl_results() {
    bfcl_results(128, false);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_bfcl_results_long() {
    bfcl_results(10_000, true);
}

// ---------------------------------------------------------------------------------
// The outcome reader, and `report`, `run --resume` and `merge` on damaged runs.

/// Two shards of a small run of `tiny` (oracle, legacy and progressive), made once.
fn run_dirs() -> &'static (PathBuf, PathBuf) {
    static R: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    R.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-runs");
        let _ = std::fs::remove_dir_all(&base);
        for k in [1, 2] {
            let o = discbench()
                .arg("run")
                .arg(root().join("fixtures/snapshot/tiny.yaml"))
                .args([
                    "--model",
                    "oracle",
                    "--mode",
                    "legacy",
                    "--mode",
                    "progressive",
                ])
                .args(["--repeat", "2", "--no-progress", "--out"])
                .arg(&base)
                .args(["--run-id", &format!("s{k}"), "--shard", &format!("{k}/2")])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        (base.join("s1"), base.join("s2"))
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The files of a run directory, by name, with their bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Damage to one file of a run directory.
#[derive(Debug, Clone)]
struct RunDamage {
    file: usize,
    damages: Vec<Damage>,
    remove: bool,
}

const RUN_FILES: [&str; 3] = ["outcomes.jsonl", "texts.jsonl", "run.json"];

fn run_damage() -> impl Strategy<Value = RunDamage> {
    (
        prop_oneof![4 => Just(0usize), 2 => Just(1usize), 1 => Just(2usize)],
        prop::collection::vec(damage(), 1..3),
        prop::bool::weighted(0.05),
    )
        .prop_map(|(file, damages, remove)| RunDamage {
            file,
            damages,
            remove,
        })
}

fn damage_run(dir: &Path, d: &[RunDamage]) {
    for x in d {
        let p = dir.join(RUN_FILES[x.file]);
        if x.remove {
            let _ = std::fs::remove_file(&p);
            continue;
        }
        let Ok(mut b) = std::fs::read(&p) else {
            continue;
        };
        for dmg in &x.damages {
            apply(&mut b, dmg);
        }
        std::fs::write(&p, b).unwrap();
    }
}

/// Which of the CLI commands a case runs on the damaged directory.
#[derive(Debug, Clone, Copy)]
enum RunCommand {
    None,
    Report,
    Resume,
    Merge,
}

fn outcome_reader(cases: u32, long: bool, cli_every: usize) {
    quiet_panics();
    let (s1, s2) = run_dirs();
    let strategy = (
        prop::collection::vec(run_damage(), 1..3),
        prop_oneof![
            Just(RunCommand::Report),
            Just(RunCommand::Resume),
            Just(RunCommand::Merge)
        ],
    );
    let n = AtomicUsize::new(0);
    campaign(
        "outcome_reader",
        cases,
        long,
        strategy,
        |(damages, cmd), counts| {
            let i = n.fetch_add(1, Ordering::Relaxed);
            let cmd = if i.is_multiple_of(cli_every) {
                cmd
            } else {
                RunCommand::None
            };
            let dir = tempfile::tempdir().unwrap();
            let run = dir.path().join("s1");
            copy_dir(s1, &run);
            let original = std::fs::read(run.join("outcomes.jsonl")).unwrap();
            damage_run(&run, &damages);
            let r = no_panic("reader::read", || {
                discbench::record::reader::read::<discbench::record::Outcome>(
                    &run.join("outcomes.jsonl"),
                    |_, _| Ok(()),
                )
            })?;
            counts.outcome(&r);
            if let Err(e) = &r {
                // A missing file is the machine's; anything else is bad input, named.
                if run.join("outcomes.jsonl").exists() {
                    prop_assert!(discbench::record::reader::is_bad_input(e), "{e:#}");
                    prop_assert!(format!("{e:#}").contains("outcomes.jsonl"), "{e:#}");
                }
            }
            let _ = no_panic("texts", || {
                discbench::record::reader::read_text(&run.join("texts.jsonl"), |_, _| Ok(()))
            })?;
            let before = snapshot(&run);
            let exit = |o: &std::process::Output| -> Result<i32, TestCaseError> {
                let err = String::from_utf8_lossy(&o.stderr);
                prop_assert!(!err.contains("panicked"), "{err}");
                let code = o.status.code().unwrap_or(-1);
                prop_assert!(matches!(code, 0..=2), "exit {code}: {err}");
                Ok(code)
            };
            match cmd {
                RunCommand::None => {}
                RunCommand::Report => {
                    let o = discbench().arg("report").arg(&run).output().unwrap();
                    exit(&o)?;
                    let after = snapshot(&run);
                    for f in RUN_FILES {
                        prop_assert_eq!(before.get(f), after.get(f), "report changed {}", f);
                    }
                }
                RunCommand::Resume => {
                    let o = discbench()
                        .args(["run", "--no-progress", "--resume"])
                        .arg(&run)
                        .output()
                        .unwrap();
                    let code = exit(&o)?;
                    let after = snapshot(&run);
                    if code == 2 {
                        prop_assert_eq!(&before, &after, "a refused resume changed the run");
                    } else {
                        // Every whole line the damaged file kept is still there, as it was.
                        let kept = before.get("outcomes.jsonl").cloned().unwrap_or_default();
                        let now = after.get("outcomes.jsonl").cloned().unwrap_or_default();
                        let whole = kept.iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
                        prop_assert!(
                            now.starts_with(&kept[..whole]),
                            "a resume changed lines it had kept"
                        );
                        // And the run is whole: as many outcome lines as the original.
                        let lines =
                            |b: &[u8]| b.split(|c| *c == b'\n').filter(|l| !l.is_empty()).count();
                        prop_assert!(lines(&now) >= lines(&original));
                    }
                }
                RunCommand::Merge => {
                    let other = dir.path().join("s2");
                    copy_dir(s2, &other);
                    let out = dir.path().join("merged");
                    let o = discbench()
                        .arg("merge")
                        .arg(&run)
                        .arg(&other)
                        .arg("--out")
                        .arg(&out)
                        .output()
                        .unwrap();
                    let code = exit(&o)?;
                    prop_assert_eq!(&before, &snapshot(&run), "merge changed a shard");
                    if code == 2 {
                        prop_assert!(
                            !out.join("outcomes.jsonl").exists(),
                            "a refused merge left outcomes behind"
                        );
                    }
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_outcome_reader() {
    outcome_reader(64, false, 8);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_outcome_reader_long() {
    outcome_reader(3_000, true, 6);
}

// ---------------------------------------------------------------------------------
// MCP frames to `serve`, over stdio and HTTP.

const METHODS: [&str; 16] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "no/such/method",
    "",
];

/// One frame: a JSON-RPC message of some shape, or not JSON-RPC at all.
fn frame() -> impl Strategy<Value = Vec<u8>> {
    let tool_names = prop_oneof![
        Just(json!("github__create_issue")),
        Just(json!("hr__query")),
        Just(json!("erp__get_order")),
        Just(json!("read_resource")),
        any_json(0),
    ];
    let params = prop_oneof![
        (tool_names, any_json(2)).prop_map(|(n, a)| json!({"name": n, "arguments": a})),
        prop_oneof![
            Just(json!(
                "resource:///tool_descriptions?tools=github__create_issue"
            )),
            Just(json!("resource:///tool_descriptions")),
            odd_string().prop_map(Value::String),
        ]
        .prop_map(|u| json!({"uri": u})),
        Just(json!({"sql": "SELECT randomblob(900000000)"}))
            .prop_map(|a| json!({"name": "hr__query", "arguments": a})),
        any_json(2),
    ];
    let id = prop_oneof![
        (1000i64..2000).prop_map(|n| json!(n)),
        odd_string().prop_map(Value::String),
        Just(Value::Null),
        any_json(1),
    ];
    let message = (
        prop::sample::select(&METHODS[..]),
        prop::option::of(id),
        prop::option::of(params),
        prop::bool::weighted(0.9),
    )
        .prop_map(|(m, id, p, jsonrpc)| {
            let mut o = Map::new();
            if jsonrpc {
                o.insert("jsonrpc".into(), json!("2.0"));
            }
            o.insert("method".into(), json!(m));
            if let Some(id) = id {
                o.insert("id".into(), id);
            }
            if let Some(p) = p {
                o.insert("params".into(), p);
            }
            serde_json::to_vec(&Value::Object(o)).unwrap()
        });
    prop_oneof![
        8 => message.clone(),
        1 => prop::collection::vec(message, 0..3).prop_map(|ms| {
            let items: Vec<Value> = ms.iter().map(|m| serde_json::from_slice(m).unwrap()).collect();
            serde_json::to_vec(&items).unwrap()
        }),
        1 => any_json(2).prop_map(|v| serde_json::to_vec(&v).unwrap()),
        1 => prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..64),
        1 => (1usize..3000).prop_map(|n| {
            let mut v = "[".repeat(n).into_bytes();
            v.extend("]".repeat(n).bytes());
            v
        }),
        1 => Just(format!(r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(200_000)).into_bytes()),
        1 => Just(br#"{"jsonrpc":"2.0","id":8,"result":{}}"#.to_vec()),
    ]
}

/// A child process killed and reaped however the case ends.
struct Reap(std::process::Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#;

fn mcp_stdio(cases: u32, long: bool) {
    quiet_panics();
    let strategy = (
        prop::sample::select(&["legacy", "progressive", "mcp-resource"][..]),
        any::<bool>(),
        prop::collection::vec(frame(), 1..24),
    );
    campaign(
        "mcp_stdio",
        cases,
        long,
        strategy,
        |(mode, init_first, frames), counts| {
            let mut child = Reap(
                discbench()
                    .arg("serve")
                    .arg(root().join("fixtures/snapshot/tiny.yaml"))
                    .args(["--mode", mode])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            );
            let mut stdin = child.0.stdin.take().unwrap();
            let stdout = child.0.stdout.take().unwrap();
            let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
            std::thread::spawn(move || {
                let mut r = BufReader::new(stdout);
                loop {
                    let mut l = Vec::new();
                    match r.read_until(b'\n', &mut l) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if tx.send(l).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
            let mut sent = Vec::new();
            if init_first {
                sent.extend_from_slice(INIT.as_bytes());
                sent.push(b'\n');
                sent.extend_from_slice(
                    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                );
                sent.push(b'\n');
            }
            for f in &frames {
                sent.extend_from_slice(f);
                sent.push(b'\n');
            }
            // The server may already have closed: writes may fail, which is its right.
            let _ = stdin.write_all(&sent);
            let _ = stdin
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"last-ping\",\"method\":\"ping\"}\n");
            let _ = stdin.flush();
            // Every line out is JSON-RPC; a session that was initialized answers the ping.
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut ponged = false;
            while Instant::now() < deadline {
                match rx.recv_timeout(Duration::from_millis(200)) {
                    Ok(l) => {
                        let v: Value = serde_json::from_slice(&l).map_err(|e| {
                            TestCaseError::fail(format!(
                                "stdout is not JSON-RPC: {e}: {:?}",
                                String::from_utf8_lossy(&l)
                            ))
                        })?;
                        prop_assert_eq!(&v["jsonrpc"], "2.0", "{}", v);
                        if v["id"] == "last-ping" {
                            ponged = true;
                            break;
                        }
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if !init_first && child.0.try_wait().unwrap().is_some() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
            if init_first {
                prop_assert!(ponged, "the server stopped answering");
            }
            drop(stdin);
            let started = Instant::now();
            let status = loop {
                if let Some(s) = child.0.try_wait().unwrap() {
                    break s;
                }
                if started.elapsed() > Duration::from_secs(15) {
                    let _ = child.0.kill();
                    return Err(TestCaseError::fail("serve did not exit after stdin closed"));
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let mut err = String::new();
            child
                .0
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            prop_assert!(!err.contains("panicked"), "{err}");
            prop_assert!(status.success(), "{status}: {err}");
            counts.outcome(&if ponged { Ok(()) } else { Err(()) });
            Ok(())
        },
    );
}

#[test]
fn fuzz_mcp_stdio() {
    mcp_stdio(8, false);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_mcp_stdio_long() {
    mcp_stdio(600, true);
}

/// One HTTP request of the HTTP target.
#[derive(Debug, Clone)]
struct Post {
    method: &'static str,
    path: &'static str,
    content_type: Option<&'static str>,
    accept: Option<&'static str>,
    session: u8,
    body: Vec<u8>,
}

fn post() -> impl Strategy<Value = Post> {
    (
        prop::sample::select(&["POST", "POST", "POST", "GET", "DELETE", "PUT"][..]),
        prop::sample::select(
            &[
                "/mcp",
                "/mcp",
                "/mcp",
                "/",
                "/mcp/",
                "/mcp?query=issue",
                "/mcp?query=nope",
            ][..],
        ),
        prop::option::of(prop::sample::select(
            &[
                "application/json",
                "application/json; charset=utf-8",
                "text/plain",
                "application/json-rpc",
            ][..],
        )),
        prop::option::of(prop::sample::select(
            &[
                "application/json, text/event-stream",
                "application/json",
                "*/*",
                "text/event-stream",
            ][..],
        )),
        0u8..3,
        frame(),
    )
        .prop_map(|(method, path, content_type, accept, session, body)| Post {
            method,
            path,
            content_type,
            accept,
            session,
            body,
        })
}

fn mcp_http(cases: u32, long: bool) {
    quiet_panics();
    let server = HttpServer::start(
        &root().join("fixtures/snapshot/tiny.yaml"),
        &["--mode", "mcp-resource", "--max-body", "65536"],
        None,
    );
    let url = server.url.clone();
    let base = url.trim_end_matches("/mcp").to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    // A real session, whose id some requests carry.
    let session = rt.block_on(async {
        let r = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INIT)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
        r.headers()["mcp-session-id"].to_str().unwrap().to_string()
    });
    campaign("mcp_http", cases, long, post(), |p, counts| {
        let status = rt.block_on(async {
            let mut req = client
                .request(p.method.parse().unwrap(), format!("{base}{}", p.path))
                .timeout(Duration::from_secs(20))
                .body(p.body.clone());
            if let Some(c) = p.content_type {
                req = req.header("content-type", c);
            }
            if let Some(a) = p.accept {
                req = req.header("accept", a);
            }
            match p.session {
                1 => req = req.header("mcp-session-id", &session),
                2 => req = req.header("mcp-session-id", "not-a-session"),
                _ => {}
            }
            let r = req.send().await.map_err(|e| e.to_string())?;
            let s = r.status().as_u16();
            // Read the answer whole (an SSE stream ends after its answer).
            let _ = tokio::time::timeout(Duration::from_secs(5), r.bytes()).await;
            Ok::<u16, String>(s)
        });
        let status = status.map_err(TestCaseError::fail)?;
        prop_assert!(status < 500, "HTTP {status} for {p:?}");
        if !p.path.starts_with("/mcp") || p.path == "/mcp/" {
            prop_assert_eq!(status, 404);
        }
        counts.outcome(&if status < 300 { Ok(()) } else { Err(()) });
        Ok(())
    });
    // The server still serves a new session, and stops cleanly.
    rt.block_on(async {
        let r = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(INIT)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
    });
    let (status, rest) = server.stop();
    assert!(!rest.contains("panicked"), "{rest}");
    assert!(status.success(), "{status}: {rest}");
}

#[test]
fn fuzz_mcp_http() {
    mcp_http(96, false);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_mcp_http_long() {
    mcp_http(10_000, true);
}

// ---------------------------------------------------------------------------------
// Model answers, in the wire shape of each provider.

fn tool_call_openai() -> impl Strategy<Value = Value> {
    let args = prop_oneof![
        any_json(2).prop_map(|v| json!(v.to_string())),
        odd_string().prop_map(Value::String),
        any_json(1),
    ];
    (
        prop::option::of(odd_string()),
        prop::option::of(any_json(0)),
        args,
        any::<bool>(),
    )
        .prop_map(|(name, id, args, typed)| {
            let mut f = Map::new();
            if let Some(n) = name {
                f.insert("name".into(), json!(n));
            }
            f.insert("arguments".into(), args);
            let mut c = Map::new();
            if let Some(id) = id {
                c.insert("id".into(), id);
            }
            if typed {
                c.insert("type".into(), json!("function"));
            }
            c.insert("function".into(), Value::Object(f));
            Value::Object(c)
        })
}

fn openai_answer() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop_oneof![
            odd_string().prop_map(Value::String),
            any_json(1)
        ]),
        prop::collection::vec(tool_call_openai(), 0..3),
        prop::option::of(prop::sample::select(
            &["stop", "length", "tool_calls", "content_filter", ""][..],
        )),
        prop::option::of(any_json(2)),
        prop::option::of(odd_string()),
    )
        .prop_map(|(content, calls, finish, usage, refusal)| {
            let mut msg = json!({"role": "assistant", "tool_calls": calls});
            if let Some(c) = content {
                msg["content"] = c;
            }
            if let Some(r) = refusal {
                msg["refusal"] = json!(r);
            }
            let mut v = json!({"id": "x", "object": "chat.completion",
                               "choices": [{"index": 0, "message": msg, "finish_reason": finish}]});
            if let Some(u) = usage {
                v["usage"] = u;
            }
            v
        })
}

fn anthropic_answer() -> impl Strategy<Value = Value> {
    let block = prop_oneof![
        odd_string().prop_map(|t| json!({"type": "text", "text": t})),
        (odd_string(), any_json(2), prop::option::of(odd_string()))
            .prop_map(|(n, i, id)| json!({"type": "tool_use", "id": id, "name": n, "input": i})),
        (odd_string(), any_json(2))
            .prop_map(|(id, i)| json!({"type": "server_tool_use", "id": id, "name": "tool_search_tool_regex", "input": i})),
        (odd_string(), any_json(2)).prop_map(|(id, c)| json!({"type": "tool_search_tool_result", "tool_use_id": id, "content": c})),
        (odd_string(), any_json(1)).prop_map(|(t, x)| json!({"type": t, "x": x})),
        any_json(1),
    ];
    (
        prop::collection::vec(block, 0..5),
        prop::option::of(prop::sample::select(
            &[
                "end_turn",
                "max_tokens",
                "tool_use",
                "refusal",
                "pause_turn",
            ][..],
        )),
        prop::option::of(any_json(2)),
    )
        .prop_map(|(content, stop, usage)| {
            let mut v = json!({"id": "msg", "type": "message", "role": "assistant",
                               "content": content, "stop_reason": stop});
            if let Some(u) = usage {
                v["usage"] = u;
            }
            v
        })
}

fn responses_answer() -> impl Strategy<Value = Value> {
    let part = prop_oneof![
        odd_string().prop_map(|t| json!({"type": "output_text", "text": t})),
        odd_string().prop_map(|t| json!({"type": "refusal", "refusal": t})),
        any_json(1),
    ];
    let item = prop_oneof![
        prop::collection::vec(part, 0..3).prop_map(|c| json!({"type": "message", "role": "assistant", "content": c})),
        (odd_string(), any_json(2).prop_map(|v| v.to_string()), prop::option::of(odd_string()))
            .prop_map(|(n, a, id)| json!({"type": "function_call", "name": n, "arguments": a, "call_id": id})),
        (odd_string(), any_json(2)).prop_map(|(id, a)| json!({"type": "tool_search_call", "call_id": id, "arguments": a, "execution": "server"})),
        (odd_string(), any_json(2)).prop_map(|(id, t)| json!({"type": "tool_search_output", "call_id": id, "tools": t})),
        any_json(1),
    ];
    (
        prop::collection::vec(item, 0..5),
        prop::option::of(any_json(2)),
        prop::option::of(prop::sample::select(
            &["completed", "incomplete", "failed"][..],
        )),
    )
        .prop_map(|(output, usage, status)| {
            let mut v =
                json!({"id": "resp", "object": "response", "output": output, "status": status});
            if let Some(u) = usage {
                v["usage"] = u;
            }
            v
        })
}

fn model_answers(cases: u32, long: bool) {
    quiet_panics();
    let strategy = (
        prop_oneof![
            openai_answer().prop_map(|v| (0u8, v)),
            anthropic_answer().prop_map(|v| (1u8, v)),
            responses_answer().prop_map(|v| (2u8, v)),
        ],
        prop::collection::vec(edit(), 0..3),
    );
    campaign(
        "model_answers",
        cases,
        long,
        strategy,
        |((provider, mut v), edits), counts| {
            for e in &edits {
                apply_edit(&mut v, e);
            }
            let r = no_panic("parse", || match provider {
                0 => discbench::model::openai::parse(&v),
                1 => discbench::model::anthropic::parse(&v),
                _ => discbench::model::responses::parse(&v),
            })?;
            counts.outcome(&r);
            if let Ok(a) = r {
                for c in &a.response.calls {
                    // What the harness does next with a call: read its arguments.
                    let _ = serde_json::from_str::<Value>(&c.arguments);
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_model_answers() {
    model_answers(512, false);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_model_answers_long() {
    model_answers(100_000, true);
}

// ---------------------------------------------------------------------------------
// Tool arguments against the schema validator.

fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        prop::sample::select(
            &["string", "integer", "number", "boolean", "null", "object", "array", "nonsense"][..]
        )
        .prop_map(|t| json!({"type": t})),
        prop::collection::vec(any_json(1), 0..4).prop_map(|e| json!({"enum": e})),
        prop::sample::select(
            &[
                "^[a-z]+$",
                "(a+)+$",
                "(a|aa)+b",
                "^(\\d+)*$",
                "[",
                "\\p{L}+",
                "(?=x)",
                "x{1000000}"
            ][..]
        )
        .prop_map(|p| json!({"type": "string", "pattern": p})),
        prop::sample::select(
            &[
                "date",
                "date-time",
                "email",
                "uri",
                "ipv4",
                "regex",
                "uuid",
                "bogus"
            ][..]
        )
        .prop_map(|f| json!({"type": "string", "format": f})),
        (odd_number(), odd_number())
            .prop_map(|(a, b)| json!({"minimum": a, "maximum": b, "multipleOf": 0.0001})),
        odd_number().prop_map(|n| json!({"type": "string", "minLength": n, "maxLength": n})),
        Just(json!({"$ref": "#"})),
        Just(json!({"$ref": "#/$defs/a"})),
        Just(json!({"$ref": "http://127.0.0.1:9/schema.json"})),
        Just(json!(true)),
        Just(json!(false)),
        any_json(1),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::btree_map("[a-z]{1,6}", inner.clone(), 0..4).prop_map(|props| {
                let required: Vec<&String> = props.keys().take(2).collect();
                json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
            }),
            inner.clone().prop_map(|i| json!({"type": "array", "items": i, "uniqueItems": true})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"anyOf": v})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"oneOf": v})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"allOf": v})),
            inner.clone().prop_map(|i| json!({"not": i})),
            inner.prop_map(|i| json!({"$defs": {"a": {"$ref": "#/$defs/a"}, "b": i}, "$ref": "#/$defs/b"})),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        any_json(3),
        Just(json!({"x": "a".repeat(40) + "!"})),
        Just(json!(
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"
        )),
    ]
}

fn tool_arguments(cases: u32, long: bool) {
    quiet_panics();
    campaign(
        "tool_arguments",
        cases,
        long,
        (schema(), arguments()),
        |(schema, args), counts| {
            let started = Instant::now();
            let errors = no_panic("schema_errors", || {
                discbench::args::schema_errors(&schema, &args)
            })?;
            let took = started.elapsed();
            prop_assert!(took < Duration::from_secs(2), "validation took {took:?}");
            counts.outcome(&if errors.is_empty() { Ok(()) } else { Err(()) });
            Ok(())
        },
    );
}

#[test]
fn fuzz_tool_arguments() {
    tool_arguments(512, false);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_tool_arguments_long() {
    tool_arguments(50_000, true);
}

// ---------------------------------------------------------------------------------
// SQL against the database guard.

/// An expression from the functions and shapes that cost.
fn sql_expr() -> impl Strategy<Value = String> {
    let size = prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1000".to_string()),
        Just("99999".to_string()),
        Just("100001".to_string()),
        Just("900000000".to_string()),
        Just("2147483647".to_string()),
        Just("9223372036854775807".to_string()),
        Just("i".to_string()),
        Just("i * 1000".to_string()),
    ];
    let leaf = prop_oneof![
        Just("i".to_string()),
        Just("name".to_string()),
        Just("'x'".to_string()),
        Just("NULL".to_string()),
        (0i64..100).prop_map(|n| n.to_string()),
        size.clone().prop_map(|n| format!("randomblob({n})")),
        size.clone().prop_map(|n| format!("zeroblob({n})")),
        size.clone()
            .prop_map(|n| format!("printf('%.*c', {n}, 'x')")),
        size.prop_map(|n| format!("printf('%.*c', {n}, char(1))")),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("replace({a}, {b}, {c})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("instr({a}, {b})")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("({a} LIKE '%' || {b} || '%')")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} GLOB {b})")),
            inner.clone().prop_map(|a| format!("hex({a})")),
            inner.clone().prop_map(|a| format!("upper({a})")),
            inner.clone().prop_map(|a| format!("length({a})")),
            inner.clone().prop_map(|a| format!("group_concat({a})")),
            inner.clone().prop_map(|a| format!("json_group_array({a})")),
            inner.clone().prop_map(|a| format!("json_array({a}, {a})")),
            (inner.clone(), 0i64..5).prop_map(|(a, n)| format!("substr({a}, {n})")),
            inner.prop_map(|a| format!("abs({a})")),
        ]
    })
}

fn sql_statement() -> impl Strategy<Value = String> {
    let from = prop_oneof![
        Just("people".to_string()),
        Just("r".to_string()),
        Just("(SELECT i FROM r LIMIT 100)".to_string()),
        Just("people a, people b, people c".to_string()),
        Just("r, people".to_string()),
    ];
    let select = (
        any::<bool>(),
        prop::collection::vec(sql_expr(), 1..3),
        from,
        prop::option::of(sql_expr()),
        prop::option::of(prop::sample::select(&["ORDER BY 1", "GROUP BY 1", "LIMIT 5", "LIMIT 100000", ""][..])),
        any::<bool>(),
    )
        .prop_map(|(distinct, cols, from, filter, tail, union)| {
            let mut s = format!(
                "WITH RECURSIVE r(i, name) AS (SELECT 1, 'a' UNION ALL SELECT i + 1, name || 'a' FROM r) SELECT {}{} FROM {from}",
                if distinct { "DISTINCT " } else { "" },
                cols.join(", ")
            );
            if let Some(f) = filter {
                s.push_str(&format!(" WHERE {f}"));
            }
            if union {
                s.push_str(" UNION SELECT 1");
                for _ in 1..cols.len() {
                    s.push_str(", 1");
                }
            }
            if let Some(t) = tail {
                s.push(' ');
                s.push_str(t);
            }
            s
        });
    prop_oneof![
        8 => select,
        1 => prop::sample::select(&[
            "DELETE FROM people",
            "UPDATE people SET name = 'x'",
            "INSERT INTO people VALUES (999, 'x')",
            "DROP TABLE people",
            "PRAGMA query_only = 0",
            "PRAGMA writable_schema = ON",
            "PRAGMA temp_store = FILE",
            "ATTACH 'fuzz.db' AS f",
            "VACUUM INTO 'fuzz.db'",
            "SELECT load_extension('x')",
            "CREATE TEMP TABLE t AS SELECT * FROM people",
            "SELECT 1; DELETE FROM people",
            "BEGIN; DELETE FROM people; COMMIT",
            "REINDEX",
            "ANALYZE",
        ][..]).prop_map(str::to_string),
        1 => "\\PC{0,80}",
    ]
}

fn sql_guard(cases: u32, long: bool) {
    quiet_panics();
    let limits = discbench::environment::SqlLimits {
        timeout_ms: 300,
        ..Default::default()
    };
    let sc = discbench::scenario::load(&root().join("fixtures/hostile/sql.yaml")).unwrap();
    let dbs = discbench::environment::Databases::build_with(&sc.catalog, limits).unwrap();
    let check = "SELECT count(*), group_concat(id || name, ',') FROM people";
    let reference = dbs.query("hr", check).unwrap();
    campaign("sql_guard", cases, long, sql_statement(), |sql, counts| {
        let started = Instant::now();
        let r = no_panic("query", || dbs.query("hr", &sql))?;
        let took = started.elapsed();
        prop_assert!(
            took < Duration::from_millis(limits.timeout_ms + 1_500),
            "took {took:?}"
        );
        counts.outcome(&r);
        match &r {
            Ok(q) => {
                let bytes = serde_json::to_string(&q.rows).unwrap().len();
                prop_assert!(bytes <= limits.answer_bytes, "{bytes} bytes");
            }
            Err(e) => prop_assert!(!e.0.is_empty()),
        }
        let now = dbs.query("hr", check).unwrap();
        prop_assert_eq!(&now.rows, &reference.rows, "the database changed");
        Ok(())
    });
    assert!(!root().join("fuzz.db").exists());
}

#[test]
fn fuzz_sql_guard() {
    sql_guard(192, false);
}

#[test]
#[ignore = "long fuzz campaign"]
fn fuzz_sql_guard_long() {
    sql_guard(10_000, true);
}

// ---------------------------------------------------------------------------------
// Regressions: every crash found, as a test of its own.

/// `import mcp --timeout 1e300` panicked converting the timeout to a Duration (found
/// while writing the models-file target; fixed: it is bad input, exit 2).
#[test]
fn regression_import_timeout_past_a_duration_is_bad_input() {
    for t in ["1e300", "1.9e19", "inf", "nan", "0"] {
        let o = discbench()
            .args(["import", "mcp", "--timeout", t, "--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--timeout {t}: {err}");
        assert!(
            err.contains("--timeout must be a positive number of seconds"),
            "{err}"
        );
    }
}

/// Found by the outcome-reader campaign: damaged run directories were the machine's
/// failure (exit 3) where they are bad input (exit 2) — a `run.json` that is not one
/// (`report`), an outcome file with nothing but a torn line (`report`), a garbled
/// line inside `texts.jsonl` (`run --resume`), a line that is JSON but no outcome
/// (`run --resume`) — and a refused resume leaves the run as it was.
#[test]
fn regression_damaged_runs_are_bad_input() {
    let (s1, _) = run_dirs();
    let case = |file: &str, damage: &dyn Fn(&mut Vec<u8>), resume: bool| {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("s1");
        copy_dir(s1, &run);
        let mut b = std::fs::read(run.join(file)).unwrap();
        damage(&mut b);
        std::fs::write(run.join(file), b).unwrap();
        let before = snapshot(&run);
        let o = if resume {
            discbench()
                .args(["run", "--no-progress", "--resume"])
                .arg(&run)
                .output()
                .unwrap()
        } else {
            discbench().arg("report").arg(&run).output().unwrap()
        };
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        if resume {
            assert_eq!(before, snapshot(&run), "a refused resume changed the run");
        }
        err
    };
    let err = case("run.json", &|b| b.truncate(b.len() / 2), false);
    assert!(err.contains("is not a discbench run.json"), "{err}");
    let err = case("outcomes.jsonl", &|b| b.truncate(40), false);
    assert!(err.contains("holds no outcomes"), "{err}");
    let err = case(
        "texts.jsonl",
        &|b| {
            let second = b.iter().position(|c| *c == b'\n').unwrap() + 20;
            b[second] = 1;
        },
        true,
    );
    assert!(err.contains("texts.jsonl:2"), "{err}");
    // A line that is JSON, and has its key, but is no outcome: the resume used to
    // count it done, then rewrite the reports and fail on it half way.
    let err = case(
        "outcomes.jsonl",
        &|b| {
            let text = String::from_utf8(b.clone()).unwrap();
            *b = text
                .replacen("\"tool_defs\"", "\"tool_defz\"", 1)
                .into_bytes();
        },
        true,
    );
    assert!(
        err.contains("outcomes.jsonl:1: not an outcome line"),
        "{err}"
    );
    // A torn outcome file and garbled texts: the torn line used to be set aside
    // before the texts were found garbled.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("s1");
    copy_dir(s1, &run);
    let mut b = std::fs::read(run.join("outcomes.jsonl")).unwrap();
    b.truncate(b.len() - 30);
    std::fs::write(run.join("outcomes.jsonl"), b).unwrap();
    let mut t = std::fs::read(run.join("texts.jsonl")).unwrap();
    let second = t.iter().position(|c| *c == b'\n').unwrap() + 20;
    t[second] = 1;
    std::fs::write(run.join("texts.jsonl"), t).unwrap();
    let before = snapshot(&run);
    let o = discbench()
        .args(["run", "--no-progress", "--resume"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(before, snapshot(&run), "a refused resume changed the run");
}

/// Found by `fuzz_models_file`: a models file whose `timeout_secs` was past what a
/// Duration holds (1e300) passed `ModelsFile::load` and panicked when the backend was
/// built. Now refused as bad input.
#[test]
fn regression_models_file_timeout_past_a_duration() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("models.yaml");
    std::fs::write(
        &file,
        "models:\n  - {name: big, provider: openai, model: x, timeout_secs: 1e300}\n",
    )
    .unwrap();
    let o = discbench()
        .arg("run")
        .arg(root().join("fixtures/snapshot/tiny.yaml"))
        .arg("--models")
        .arg(&file)
        .args([
            "--model",
            "big",
            "--mode",
            "legacy",
            "--no-progress",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(2), "{err}");
}

/// Found beside the previous one: `run --request-timeout 1e300` panicked the same way
/// where the models file's timeout did. Now bad input, exit 2, as are zero and NaN.
#[test]
fn regression_request_timeout_past_a_duration_is_bad_input() {
    for t in ["1e300", "86401", "0", "NaN"] {
        let dir = tempfile::tempdir().unwrap();
        let o = discbench()
            .arg("run")
            .arg(root().join("fixtures/snapshot/tiny.yaml"))
            .args(["--mode", "legacy", "--no-progress", "--request-timeout", t])
            .arg("--out")
            .arg(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(o.status.code(), Some(2), "--request-timeout {t}: {err}");
        assert!(err.contains("--request-timeout must be"), "{err}");
    }
}

/// Found while writing the model-answer target (its answers carry no headers, so it
/// is a test of its own): a provider that answered 429 with
/// `retry-after: 1e300` made `Duration::from_secs_f64` panic in an episode, and the
/// run exited 101 instead of recording an infra error. Now the wait is capped.
#[test]
fn regression_retry_after_past_a_duration() {
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in server.incoming().flatten() {
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut len = 0;
                loop {
                    let mut l = String::new();
                    if r.read_line(&mut l).unwrap_or(0) == 0 {
                        return;
                    }
                    if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if l.trim().is_empty() {
                        break;
                    }
                }
                let mut body = vec![0; len];
                let _ = r.read_exact(&mut body);
                let b = r#"{"error":{"message":"slow down"}}"#;
                let mut s = s;
                let _ = write!(s, "HTTP/1.1 429 Too Many Requests\r\nretry-after: 1e300\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{b}", b.len());
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let o = discbench()
        .arg("run")
        .arg(root().join("fixtures/snapshot/tiny.yaml"))
        .args([
            "--model",
            "openai:x",
            "--mode",
            "legacy",
            "--no-progress",
            // The header is read when the answer is (where it panicked); no retry is
            // needed to reach it, and one would wait out the 60 s cap.
            "--max-retries",
            "0",
            "--out",
        ])
        .arg(dir.path())
        .env("OPENAI_BASE_URL", format!("http://{addr}/v1"))
        .env("OPENAI_API_KEY", "sk-fuzz")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        matches!(o.status.code(), Some(0) | Some(3)),
        "{:?}: {err}",
        o.status
    );
}
