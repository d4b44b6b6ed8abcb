//! Catalog-size sweeps: every query keeps its expectation and gets a catalog of exactly
//! the size asked for, holding what it needs; the draw is fixed by the seed and nested
//! across sizes; pool servers that collide are renamed and copies of catalog tools
//! skipped; near duplicates come from the tools a query needs; every expectation stays
//! reachable at every size; and a sweep is one run directory that resumes, shards,
//! merges and reports like any other, with its curves drawn.

mod support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use discbench::catalog::{Address, Catalog};
use discbench::scenario::sweep::{self, needed, Pool, SweepSpec};
use discbench::scenario::{self, Scenario};
use support::cli::{bin, ok};

fn hub() -> Scenario {
    scenario::load(Path::new("scenarios/enterprise-hub.yaml")).unwrap()
}

/// The default pool, read once for every test of this binary (139 captures).
fn pool() -> &'static Pool {
    static POOL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| sweep::load_pool(&default_pool()).unwrap())
}

fn default_pool() -> Vec<PathBuf> {
    sweep::DEFAULT_POOL.iter().map(PathBuf::from).collect()
}

fn spec(sizes: &[usize], seed: u64, near: bool) -> SweepSpec {
    SweepSpec {
        sizes: sizes.to_vec(),
        seed,
        pool: default_pool(),
        near_duplicates: near,
    }
}

fn addresses(c: &Catalog) -> HashSet<Address> {
    c.addresses().into_iter().collect()
}

#[test]
fn each_query_gets_its_needs_and_distractors_up_to_the_size_nested_across_sizes() {
    let base = hub();
    let sizes = [10, 30, 100, 300];
    let (points, notes) = sweep::sweep(&base, pool(), &spec(&sizes, 7, false)).unwrap();
    assert_eq!(points.len(), sizes.len());
    assert!(notes.available > 300, "{}", notes.available);
    for (p, &n) in points.iter().zip(&sizes) {
        assert_eq!(p.name, format!("enterprise-hub@{n}"));
        assert_eq!(p.queries.len(), base.queries.len());
        for (q, b) in p.queries.iter().zip(&base.queries) {
            // The same query and expectation.
            assert_eq!(
                (q.id.as_str(), q.text.as_str()),
                (b.id.as_str(), b.text.as_str())
            );
            assert_eq!(q.expect.to_json(), b.expect.to_json());
            let own = addresses(q.catalog.as_ref().expect("a catalog of its own"));
            let need = needed(b, &base.catalog);
            assert!(need.iter().all(|a| own.contains(a)), "{} at {n}", q.id);
            assert_eq!(own.len(), n.max(need.len()), "{} at {n}", q.id);
        }
    }
    // Nested: each size's catalog holds the smaller one's.
    for w in points.windows(2) {
        for (small, big) in w[0].queries.iter().zip(&w[1].queries) {
            let (s, b) = (
                addresses(small.catalog.as_ref().unwrap()),
                addresses(big.catalog.as_ref().unwrap()),
            );
            assert!(
                s.is_subset(&b),
                "{}: {} ⊄ {}",
                small.id,
                w[0].name,
                w[1].name
            );
        }
    }
    // A query the size cannot hold is named.
    assert!(notes.over.iter().all(|(n, _, need)| need > n));
}

/// A pool server whose name the scenario uses is renamed; pool tools that copy one the
/// scenario already holds (mcp-reference includes eight of the captures) are left out.
#[test]
fn colliding_pool_servers_are_renamed_and_copies_left_out() {
    let p = pool();
    let reference = scenario::load(Path::new("scenarios/mcp-reference.yaml")).unwrap();
    let (points, notes) = sweep::sweep(&reference, p, &spec(&[40], 1, false)).unwrap();
    let included: usize = reference
        .catalog
        .mcp_servers
        .iter()
        .map(|s| s.tools.len())
        .sum();
    assert!(
        notes.duplicates >= included,
        "{} < {included}",
        notes.duplicates
    );
    assert!(notes.renamed.is_empty(), "{:?}", notes.renamed);
    // No copy of an included tool under another server name.
    let all = &points[0].catalog;
    let time_tools = all
        .mcp_servers
        .iter()
        .filter(|s| s.tools.iter().any(|t| t.name == "convert_time"))
        .count();
    assert_eq!(time_tools, 1);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.yaml"),
        "name: s\ncatalog:\n  mcp_servers:\n    - name: mcp-server-time\n      tools:\n        - { name: now, description: The local time., inputSchema: { type: object } }\nqueries:\n  - { id: q, text: what time is it, expect: { calls: [mcp:mcp-server-time/now] } }\n",
    )
    .unwrap();
    let own = scenario::load(&dir.path().join("s.yaml")).unwrap();
    let (points, notes) = sweep::sweep(&own, p, &spec(&[5], 1, false)).unwrap();
    assert_eq!(
        notes.renamed,
        [(
            "mcp-server-time".to_string(),
            "mcp-server-time-2".to_string()
        )]
    );
    let names: Vec<&str> = points[0]
        .catalog
        .mcp_servers
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert!(names.contains(&"mcp-server-time") && names.contains(&"mcp-server-time-2"));
}

/// The default pool is the committed captures and the registry pool, whose captures
/// are read through gzip: 11,887 distinct tools (`scripts/pool/count.py` counts them
/// independently), copies by name, description and schema (key order aside) left out.
#[test]
fn the_default_pool_reads_compressed_captures_and_holds_11887_distinct_tools() {
    let p = pool();
    let gz = p
        .sources
        .keys()
        .filter(|f| f.to_string_lossy().ends_with(".tools.json.gz"))
        .count();
    assert_eq!((p.servers.len(), gz), (54 + 85, 85));
    let listed: usize = p.servers.iter().map(|s| s.tools.len()).sum();
    assert_eq!(listed, 1_990 + 10_288);
    // A scenario with no MCP tool of its own: every pool tool is a distractor once.
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("s.yaml");
    std::fs::write(
        &own,
        "name: s\ncatalog:\n  mcp_servers:\n    - name: clock\n      tools:\n        - { name: now, description: The local time., inputSchema: { type: object } }\nqueries:\n  - { id: q, text: what time is it, expect: { calls: [mcp:clock/now] } }\n",
    )
    .unwrap();
    let own = scenario::load(&own).unwrap();
    let (_, notes) = sweep::sweep(&own, p, &spec(&[1], 1, false)).unwrap();
    assert_eq!(notes.available, 1 + 11_887);
    assert_eq!(notes.duplicates, 1_990 + 10_288 - 11_887);

    // A compressed capture reads as its text does; a schema whose keys are in another
    // order is the same tool.
    let plain = Path::new("fixtures/catalogs/mcp-server-time.tools.json");
    let text = std::fs::read_to_string(plain).unwrap();
    let gz_path = dir.path().join("time.tools.json.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, text.as_bytes()).unwrap();
    std::fs::write(&gz_path, enc.finish().unwrap()).unwrap();
    let mut reordered: serde_json::Value = serde_json::from_str(&text).unwrap();
    for t in reordered["tools"].as_array_mut().unwrap() {
        let schema = t["inputSchema"].as_object().unwrap();
        let flipped: serde_json::Map<String, serde_json::Value> = schema
            .iter()
            .rev()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_ne!(
            serde_json::to_string(&flipped).unwrap(),
            serde_json::to_string(schema).unwrap()
        );
        t["inputSchema"] = serde_json::Value::Object(flipped);
    }
    let flipped_path = dir.path().join("flipped.tools.json");
    std::fs::write(&flipped_path, reordered.to_string()).unwrap();
    let small = sweep::load_pool(&[dir.path().to_path_buf()]).unwrap();
    let names: Vec<&str> = small.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["flipped", "time"]);
    let from_gz = &small.servers[1];
    let direct = sweep::load_pool(&[plain.to_path_buf()]).unwrap();
    assert_eq!(from_gz.tools.len(), direct.servers[0].tools.len());
    for (a, b) in from_gz.tools.iter().zip(&direct.servers[0].tools) {
        assert_eq!(
            (&a.name, &a.description, &*a.input_schema),
            (&b.name, &b.description, &*b.input_schema)
        );
    }
    let (_, notes) = sweep::sweep(&own, &small, &spec(&[1], 1, false)).unwrap();
    assert_eq!(notes.duplicates, from_gz.tools.len());

    // A file that is not gzip is an error naming it.
    std::fs::write(dir.path().join("broken.tools.json.gz"), "not gzip").unwrap();
    let err = sweep::load_pool(&[dir.path().to_path_buf()])
        .err()
        .expect("a broken capture is refused")
        .to_string();
    assert!(
        err.contains("broken.tools.json.gz") && err.contains("gzip"),
        "{err}"
    );
}

#[test]
fn the_seed_fixes_the_draw() {
    let base = hub();
    let p = pool();
    let cat = |seed| {
        let (points, _) = sweep::sweep(&base, p, &spec(&[30], seed, false)).unwrap();
        points[0]
            .queries
            .iter()
            .map(|q| {
                let mut v: Vec<String> = q
                    .catalog
                    .as_ref()
                    .unwrap()
                    .addresses()
                    .iter()
                    .map(|a| a.to_string())
                    .collect();
                v.sort();
                v
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(cat(3), cat(3));
    assert_ne!(cat(3), cat(4));
}

#[test]
fn near_duplicates_draw_the_tools_closest_to_what_a_query_needs() {
    let base = hub();
    let p = pool();
    let q = base
        .queries
        .iter()
        .position(|q| {
            needed(q, &base.catalog)
                .iter()
                .any(|a| matches!(a, Address::Mcp(s, t) if s == "github" && t == "create_issue"))
        })
        .expect("a query that opens a GitHub issue");
    let mcp_tools = |near| {
        let (points, _) = sweep::sweep(&base, p, &spec(&[20], 1, near)).unwrap();
        let c = points[0].queries[q].catalog.clone().unwrap();
        c.addresses()
            .into_iter()
            .filter(|a| matches!(a, Address::Mcp(_, t) if t.contains("issue")))
            .count()
    };
    // Nearest distractors of an issue-opening query are issue tools of other servers.
    assert!(
        mcp_tools(true) > mcp_tools(false),
        "near {} random {}",
        mcp_tools(true),
        mcp_tools(false)
    );
}

#[test]
fn the_oracle_reaches_every_expectation_at_every_size() {
    use discbench::runner::{self, Plan, RunConfig};
    use discbench::strategy::Mode;
    use discbench::tokens::{Counter, Encoding};
    let base = scenario::load(Path::new("scenarios/mcp-reference.yaml")).unwrap();
    let (points, _) = sweep::sweep(&base, pool(), &spec(&[10, 100], 5, false)).unwrap();
    let counter = Counter::new(Encoding::O200kBase);
    let oracle = discbench::model::build("oracle").unwrap();
    let mut failures = Vec::new();
    for mode in [
        "progressive",
        "legacy",
        "tool-search",
        "code-mode",
        "code-files",
    ] {
        let cfg = RunConfig::new("t", vec![Mode::parse(mode).unwrap()], vec!["oracle".into()]);
        let plan = Plan::build(&points, &cfg, &counter).unwrap();
        for (i, item) in plan.items.iter().enumerate() {
            let o = runner::run_one(&plan, i, oracle.as_ref(), &counter);
            let size: usize = item
                .key
                .scenario
                .rsplit('@')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert!(o.catalog_size >= size.min(o.catalog_size));
            if !o.score.exact || o.protocol_errors() > 0 {
                failures.push(format!("{} {mode}: {:?}", item.key, o.protocol));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_size_beyond_the_pool_is_refused_naming_what_there_is() {
    let dir = tempfile::tempdir().unwrap();
    let o = bin()
        .args([
            "sweep",
            "fixtures/snapshot/tiny.yaml",
            "--sizes",
            "5,100000",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("size 100000 is larger than every address"),
        "{err}"
    );
    let o = bin()
        .args(["sweep", "fixtures/snapshot/tiny.yaml", "--sizes", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = bin()
        .args([
            "sweep",
            "fixtures/snapshot/tiny.yaml",
            "scenarios/enterprise-hub.yaml",
            "--sizes",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("one scenario"));
}

/// A sweep is one run directory: resumed after a cut it equals the whole run, its
/// shards merge into the same summary, and its report draws the sweep's curves.
#[test]
fn a_sweep_is_one_run_that_resumes_shards_merges_and_draws_its_curves() {
    let dir = tempfile::tempdir().unwrap();
    let sweep_run = |out: &Path, extra: &[&str]| {
        let o = bin()
            .args([
                "sweep",
                "fixtures/snapshot/tiny.yaml",
                "--sizes",
                "5,20,60",
                "--seed",
                "9",
                // The committed captures alone: a pool given is what `run.json`
                // records and `--resume` reads again (the default pool's 139
                // captures cost each of these runs seconds of schema checks).
                "--pool",
                "fixtures/catalogs",
                "--no-progress",
                "--run-id",
                "s",
                "--out",
            ])
            .arg(out)
            .args(extra)
            .output()
            .unwrap();
        ok(&o);
        out.join("s")
    };
    let full = sweep_run(&dir.path().join("full"), &[]);
    let summary = std::fs::read_to_string(full.join("summary.json")).unwrap();
    for size in [5, 20, 60] {
        assert!(summary.contains(&format!("\"tiny@{size}\"")), "tiny@{size}");
    }
    let manifest = std::fs::read_to_string(full.join("run.json")).unwrap();
    assert!(manifest.contains("\"sweep\"") && manifest.contains("\"seed\": 9"));
    assert!(manifest.contains("mcp-server-time.tools.json") && !manifest.contains(".gz"));
    let html = std::fs::read_to_string(full.join("index.html")).unwrap();
    assert!(html.contains("Catalog-size sweep"));
    for metric in ["exact", "recall", "first-request", "billed"] {
        let f = full.join(format!("plots/sweep-tiny-oracle-{metric}.svg"));
        assert!(f.is_file(), "{}", f.display());
    }
    // Cut the outcomes and resume.
    let cut = dir.path().join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    let copy = cut.join("s");
    std::fs::create_dir_all(&copy).unwrap();
    for f in ["run.json", "texts.jsonl"] {
        std::fs::copy(full.join(f), copy.join(f)).unwrap();
    }
    let lines: Vec<&str> = std::fs::read_to_string(full.join("outcomes.jsonl"))
        .unwrap()
        .leak()
        .lines()
        .collect();
    std::fs::write(
        copy.join("outcomes.jsonl"),
        lines[..lines.len() / 2].join("\n") + "\n",
    )
    .unwrap();
    let o = bin()
        .args(["run", "--resume"])
        .arg(&copy)
        .arg("--no-progress")
        .output()
        .unwrap();
    ok(&o);
    assert_eq!(
        std::fs::read_to_string(copy.join("summary.json")).unwrap(),
        summary
    );
    // A resume that names another sweep is refused.
    let o = bin()
        .args(["sweep", "--resume"])
        .arg(&copy)
        .args(["--sizes", "5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // Two shards merged.
    let mut shards = Vec::new();
    for k in 1..=2 {
        let out = dir.path().join(format!("shard{k}"));
        shards.push(sweep_run(&out, &["--shard", &format!("{k}/2")]));
    }
    let merged = dir.path().join("merged");
    let o = bin()
        .arg("merge")
        .args(&shards)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    ok(&o);
    let merged_summary = std::fs::read_to_string(merged.join("summary.json")).unwrap();
    assert_eq!(merged_summary, summary);
}

/// A sweep's work items start view by view: the items of one unit (every model of one
/// query's view) next to each other, so a view is let go once both models ran it.
#[test]
fn a_sweeps_items_start_view_by_view() {
    use discbench::runner::{Plan, RunConfig};
    use discbench::strategy::Mode;
    use discbench::tokens::{Counter, Encoding};
    let base = hub();
    let (points, _) = sweep::sweep(&base, pool(), &spec(&[10, 30], 2, false)).unwrap();
    let cfg = RunConfig::new(
        "t",
        vec![
            Mode::parse("progressive").unwrap(),
            Mode::parse("tool-search").unwrap(),
        ],
        vec!["oracle".into(), "lexical".into()],
    );
    let counter = Counter::new(Encoding::O200kBase);
    let plan = Plan::build(&points, &cfg, &counter).unwrap();
    let mut todo: Vec<usize> = (0..plan.items.len()).collect();
    // Where each unit's items stand in a start order: (first, last, models seen).
    let spans = |todo: &[usize]| {
        let mut spans: std::collections::BTreeMap<usize, (usize, usize, Vec<usize>)> =
            Default::default();
        for (at, &i) in todo.iter().enumerate() {
            let e = spans
                .entry(plan.items[i].unit)
                .or_insert((at, at, Vec::new()));
            e.1 = at;
            e.2.push(plan.items[i].model);
        }
        spans
    };
    // In plan order a unit's two models are a whole mode's pass apart.
    let (first, last, _) = spans(&todo)[&plan.items[0].unit].clone();
    assert!(last - first > base.queries.len() / 2, "{first}..{last}");
    plan.view_order(&mut todo);
    let mut sorted = todo.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..plan.items.len()).collect::<Vec<_>>());
    for (unit, (first, last, models)) in spans(&todo) {
        // Contiguous: as many positions as items, and both models among them.
        assert_eq!(last - first + 1, models.len(), "unit {unit}");
        assert!(models.contains(&0) && models.contains(&1), "unit {unit}");
    }
}
