//! Runs that scale and survive: concurrency changes no outcome, an interrupted run
//! resumed equals an uninterrupted one, shards merged equal one unsharded run, and a
//! resume or merge that would mix incomparable outcomes is refused.

mod support;

use std::path::{Path, PathBuf};
use support::cli::{bin, ok, read};

/// The scenarios these tests run: the tiny one and one from the suite that runs the
/// selection step and `request_tools`.
const SCENARIOS: [&str; 2] = [
    "fixtures/snapshot/tiny.yaml",
    "scenarios/large-catalog.yaml",
];

/// Runs `discbench run` on `scenarios` with run id `x` under `out`; returns the run
/// directory.
fn run(out: &Path, scenarios: &[&str], extra: &[&str]) -> PathBuf {
    let o = bin()
        .arg("run")
        .args(scenarios)
        .args(["--run-id", "x", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    ok(&o);
    out.join("x")
}

/// The run of [`SCENARIOS`] with default settings that the resume and shard tests
/// compare against: made once per test binary, under the target's temporary directory,
/// and only read (a test that would change it works on a copy).
fn full_run() -> &'static Path {
    static FULL: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FULL.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("runs-full");
        if out.exists() {
            std::fs::remove_dir_all(&out).unwrap();
        }
        run(&out, &SCENARIOS, &[])
    })
}

/// The outcome lines, sorted (episodes finish in any order).
fn sorted_lines(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = read(&dir.join("outcomes.jsonl"))
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn concurrency_changes_no_outcome_on_the_built_in_suite() {
    let tmp = tempfile::tempdir().unwrap();
    // Both runs at once: the `--jobs 1` run keeps one core busy, the other takes
    // what is left.
    let (one, eight) = std::thread::scope(|s| {
        let one = s.spawn(|| run(&tmp.path().join("one"), &["scenarios"], &["--jobs", "1"]));
        let eight = run(&tmp.path().join("eight"), &["scenarios"], &["--jobs", "8"]);
        (one.join().unwrap(), eight)
    });
    let (a, b) = (sorted_lines(&one), sorted_lines(&eight));
    assert!(a.len() > 500, "{}", a.len());
    // Small records: long texts live in texts.jsonl, so the built-in suite's lines
    // hold at most 3 KB per user turn on average (a single query is one turn, a
    // conversation's line holds all of its turns; a deterministic size, not a timing).
    let text = read(&one.join("outcomes.jsonl"));
    let bytes: usize = text.lines().map(str::len).sum();
    let turns: usize = (text.lines())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["conversation"].as_array().map_or(1, Vec::len)
        })
        .sum();
    assert!(turns > a.len(), "the suite holds conversations");
    assert!(
        bytes / turns <= 3 * 1024,
        "mean {} bytes per turn",
        bytes / turns
    );
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y);
    }
    assert_eq!(
        read(&one.join("summary.json")),
        read(&eight.join("summary.json"))
    );
    assert_eq!(
        read(&one.join("summary.csv")),
        read(&eight.join("summary.csv"))
    );
    assert_eq!(read(&one.join("junit.xml")), read(&eight.join("junit.xml")));
    assert_eq!(
        read(&one.join("summary.md")),
        read(&eight.join("summary.md"))
    );
}

#[test]
fn a_resumed_run_equals_an_uninterrupted_one() {
    let tmp = tempfile::tempdir().unwrap();
    let full = full_run();
    let text = read(&full.join("outcomes.jsonl"));
    let n = text.lines().count();
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    // Nothing written; a few lines; mid-line (a torn write); all but the last line.
    let cuts = [
        ("empty", 0),
        ("five", starts[5]),
        ("torn", starts[n / 2] + 17),
        ("last", starts[n - 1]),
    ];
    for (name, cut) in cuts {
        let dir = tmp.path().join(name).join("x");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(full.join("run.json"), dir.join("run.json")).unwrap();
        std::fs::write(dir.join("outcomes.jsonl"), &text.as_bytes()[..cut]).unwrap();
        // The shared texts end in a torn line as well: a kill while a new text was
        // written (texts are flushed before the outcome that refers to them).
        let texts = read(&full.join("texts.jsonl"));
        std::fs::write(dir.join("texts.jsonl"), format!("{texts}{{\"hash\":\"0f")).unwrap();
        let o = bin().arg("run").arg("--resume").arg(&dir).output().unwrap();
        ok(&o);
        assert_eq!(
            sorted_lines(&dir),
            sorted_lines(full),
            "{name}: every item exactly once, each as in the full run"
        );
        assert_eq!(
            read(&dir.join("summary.json")),
            read(&full.join("summary.json")),
            "{name}"
        );
        let torn = dir.join("outcomes.torn");
        if name == "torn" {
            let kept = read(&torn);
            assert!(
                text[starts[n / 2]..].starts_with(kept.trim_end()),
                "the torn tail is kept aside: {kept}"
            );
            assert!(String::from_utf8_lossy(&o.stderr).contains("torn"));
        } else {
            assert!(!torn.exists(), "{name}");
        }
        // Every reference resolves after the texts file was repaired.
        let store = discbench::record::texts::TextStore::load(&dir).unwrap();
        for l in read(&dir.join("outcomes.jsonl")).lines() {
            let o: discbench::record::Outcome = serde_json::from_str(l).unwrap();
            for e in o.requests.iter().flat_map(|t| &t.entered) {
                if let Some(h) = &e.text_ref {
                    assert!(store.get(h).is_some(), "{name}: {h} unresolved");
                }
            }
        }
    }
    // A complete run resumed runs nothing and stays as it was (a copy: the run itself
    // is shared with other tests).
    let complete = tmp.path().join("complete").join("x");
    std::fs::create_dir_all(&complete).unwrap();
    for f in ["run.json", "outcomes.jsonl", "texts.jsonl"] {
        std::fs::copy(full.join(f), complete.join(f)).unwrap();
    }
    let again = bin()
        .arg("run")
        .arg("--resume")
        .arg(&complete)
        .output()
        .unwrap();
    ok(&again);
    assert_eq!(read(&complete.join("outcomes.jsonl")), text);
    assert_eq!(
        read(&complete.join("summary.json")),
        read(&full.join("summary.json"))
    );
}

#[test]
fn an_interrupted_run_says_it_is_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let full = run(&tmp.path().join("full"), &SCENARIOS[..1], &[]);
    let text = read(&full.join("outcomes.jsonl"));
    let keep: String = text.lines().take(10).map(|l| format!("{l}\n")).collect();
    std::fs::write(full.join("outcomes.jsonl"), keep).unwrap();
    let o = bin().arg("report").arg(&full).output().unwrap();
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("incomplete run: 10 of 48"), "{out}");
    assert!(read(&full.join("summary.md")).contains("10 of 48"));
    assert!(read(&full.join("index.html")).contains("10 of 48"));
}

#[test]
fn four_shards_merged_equal_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let full = full_run();
    let mut shards = Vec::new();
    let mut total = 0;
    for k in 1..=4 {
        let d = run(
            &tmp.path().join(format!("shard{k}")),
            &SCENARIOS,
            &["--shard", &format!("{k}/4")],
        );
        let n = read(&d.join("outcomes.jsonl")).lines().count();
        assert!(n > 0);
        total += n;
        shards.push(d);
    }
    assert_eq!(total, sorted_lines(full).len());
    let merged = tmp.path().join("merged");
    let o = bin()
        .arg("merge")
        .args(&shards)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    ok(&o);
    assert_eq!(sorted_lines(&merged), sorted_lines(full));
    assert_eq!(
        read(&merged.join("summary.json")),
        read(&full.join("summary.json"))
    );

    // The same shard twice overlaps: refused, nothing written.
    let twice = tmp.path().join("twice");
    let o = bin()
        .arg("merge")
        .args([&shards[0], &shards[0]])
        .arg("--out")
        .arg(&twice)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("overlapping"));
    assert!(!twice.join("outcomes.jsonl").exists());

    // A missing shard: merged, with the missing items named, and reported incomplete.
    let partial = tmp.path().join("partial");
    let o = bin()
        .arg("merge")
        .args(&shards[..3])
        .arg("--out")
        .arg(&partial)
        .output()
        .unwrap();
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("missing ("), "{out}");
    assert!(out.contains("incomplete run"), "{out}");

    // A shard of another plan is refused.
    let other = run(
        &tmp.path().join("other"),
        &SCENARIOS[..1],
        &["--shard", "1/4"],
    );
    let o = bin()
        .arg("merge")
        .args([&shards[1], &other])
        .arg("--out")
        .arg(tmp.path().join("mixed"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a shard of the same plan"));
}

#[test]
fn resuming_after_a_change_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    // A scenario (with the seed SQL it reads) and a template directory of our own,
    // to change after the run.
    std::fs::create_dir_all(tmp.path().join("snapshot")).unwrap();
    std::fs::create_dir_all(tmp.path().join("invalid-support")).unwrap();
    let sc = tmp.path().join("snapshot/tiny.yaml");
    std::fs::copy("fixtures/snapshot/tiny.yaml", &sc).unwrap();
    std::fs::copy(
        "fixtures/invalid-support/people.sql",
        tmp.path().join("invalid-support/people.sql"),
    )
    .unwrap();
    let templates = tmp.path().join("templates");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(templates.join("read_skill.j2"), "Read one skill in full.").unwrap();
    let o = bin()
        .arg("run")
        .arg(&sc)
        .args(["--run-id", "x", "--mode", "progressive", "--templates"])
        .arg(&templates)
        .arg("--out")
        .arg(tmp.path().join("runs"))
        .output()
        .unwrap();
    ok(&o);
    let dir = tmp.path().join("runs/x");
    let lines = read(&dir.join("outcomes.jsonl"));
    let half: String = lines.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("outcomes.jsonl"), &half).unwrap();

    // The template changed.
    std::fs::write(templates.join("read_skill.j2"), "Load a skill.").unwrap();
    let o = bin().arg("run").arg("--resume").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("template read_skill.j2 changed"), "{err}");
    std::fs::write(templates.join("read_skill.j2"), "Read one skill in full.").unwrap();

    // The scenario changed.
    let text = read(&sc);
    std::fs::write(
        &sc,
        text.replacen("description:", "description: changed", 1),
    )
    .unwrap();
    let o = bin().arg("run").arg("--resume").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("tiny.yaml changed"), "{err}");
    std::fs::write(&sc, &text).unwrap();

    // A flag that contradicts run.json.
    let o = bin()
        .arg("run")
        .arg("--resume")
        .arg(&dir)
        .args(["--model", "oracle"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--model"));
    assert_eq!(
        read(&dir.join("outcomes.jsonl")),
        half,
        "nothing was written"
    );

    // A protocol flag that contradicts run.json, and an environment that would: the
    // flag is refused by name, the variable is ignored (the recorded settings hold).
    let o = bin()
        .arg("run")
        .arg("--resume")
        .arg(&dir)
        .args(["--row-limit", "5"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--row-limit 5 (the run used 1000)"));

    // A run.json from before the protocol settings were recorded: reports still read
    // it, a resume is refused with the reason.
    let manifest = read(&dir.join("run.json"));
    let mut v: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let settings = v["settings"].as_object_mut().unwrap();
    settings.remove("protocol");
    settings.insert("selection_threshold".into(), 12.into());
    settings.insert("selection_max".into(), 6.into());
    std::fs::write(dir.join("run.json"), v.to_string()).unwrap();
    let o = bin().arg("run").arg("--resume").arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("did not record its protocol settings"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = bin().arg("report").arg(&dir).output().unwrap();
    ok(&o);
    std::fs::write(dir.join("run.json"), &manifest).unwrap();

    // Unchanged again: the resume goes through, whatever the environment says.
    let o = bin()
        .arg("run")
        .arg("--resume")
        .arg(&dir)
        .env("REACT_TOOL_SELECTION_MAX", "2")
        .output()
        .unwrap();
    ok(&o);
    assert_eq!(
        read(&dir.join("outcomes.jsonl")).lines().count(),
        lines.lines().count()
    );
}

#[test]
fn a_recorded_run_replays_exactly_and_a_changed_request_is_a_named_miss() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = run(&tmp.path().join("rec"), &SCENARIOS, &["--record"]);
    assert!(rec.join("recordings.jsonl").is_file());
    let replay = format!("replay:{}", rec.display());
    let rep = run(&tmp.path().join("rep"), &SCENARIOS, &["--model", &replay]);
    assert_eq!(sorted_lines(&rep), sorted_lines(&rec));
    assert_eq!(
        read(&rep.join("summary.json")),
        read(&rec.join("summary.json"))
    );
    let manifest: serde_json::Value = serde_json::from_str(&read(&rep.join("run.json"))).unwrap();
    assert_eq!(
        manifest["settings"]["models"],
        serde_json::json!(["oracle", "lexical"])
    );

    // Another wording of a template: the request differs, the replay says where, and
    // the run exits 3.
    let templates = tmp.path().join("templates");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(templates.join("read_skill.j2"), "Read one skill in full.").unwrap();
    let o = bin()
        .arg("run")
        .arg(SCENARIOS[0])
        .args(["--model", &replay, "--run-id", "x", "--templates"])
        .arg(&templates)
        .arg("--out")
        .arg(tmp.path().join("miss"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = read(&tmp.path().join("miss/x/outcomes.jsonl"));
    assert!(line.contains("no recorded answer for tiny/"), "{line}");
    assert!(line.contains("the tool definitions differ"), "{line}");
}

#[test]
fn the_record_gives_back_every_outcome_exactly_as_the_run_produced_it() {
    use discbench::record::texts::TextStore;
    use discbench::record::writer::OutcomeWriter;
    use discbench::record::Outcome;
    use discbench::runner::{self, Plan, RunConfig};
    use discbench::strategy::mode::PRESETS;
    use discbench::strategy::Mode;
    use discbench::tokens::{Counter, Encoding};

    let counter = Counter::new(Encoding::O200kBase);
    let scenarios = discbench::scenario::load_all(&[PathBuf::from(SCENARIOS[0])]).unwrap();
    let cfg = RunConfig::new(
        "rt",
        PRESETS.iter().map(|p| Mode::preset(p).unwrap()).collect(),
        vec!["oracle".into(), "lexical".into()],
    );
    let plan = Plan::build(&scenarios, &cfg, &counter).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut w = OutcomeWriter::open(dir.path()).unwrap();
    let mut produced = Vec::new();
    for i in 0..plan.items.len() {
        let model = discbench::model::build(&plan.items[i].key.model).unwrap();
        let o = runner::run_one(&plan, i, model.as_ref(), &counter);
        produced.push(serde_json::to_value(&o).unwrap());
        w.append(o).unwrap();
    }
    drop(w);
    let texts = TextStore::load(dir.path()).unwrap();
    let lines = read(&dir.path().join("outcomes.jsonl"));
    let mut referenced = 0;
    for (line, want) in lines.lines().zip(&produced) {
        referenced += usize::from(line.contains("text_ref") || line.contains("tool_defs_ref"));
        let mut o: Outcome = serde_json::from_str(line).unwrap();
        texts.resolve(&mut o);
        assert_eq!(&serde_json::to_value(&o).unwrap(), want);
    }
    assert_eq!(lines.lines().count(), produced.len());
    assert_eq!(
        referenced,
        produced.len(),
        "every line keeps texts by reference"
    );
}

/// A run directory written before strategies counted their own events (searches,
/// resource reads and the MCP Progressive Disclosure refusals were fields of the
/// record then): it reads unchanged — its counters by name, its refusals as the events
/// the strategy now defines — and `report` reproduces every figure its summaries held.
/// Figures added since (events defined later, the provider's cache) are new columns,
/// keys and rates, each zero or empty for a run that could not have had them.
#[test]
fn a_run_written_before_strategy_events_reads_unchanged() {
    use discbench::events::ProtocolError;
    use discbench::record::Outcome;
    use discbench::strategy::mcp_pd::mcp_resource;
    use discbench::strategy::pool;
    let committed = Path::new("fixtures/runs/pre-events");
    let mut outcomes: Vec<Outcome> = Vec::new();
    discbench::record::reader::read(&committed.join("outcomes.jsonl"), |_, o: Outcome| {
        outcomes.push(o);
        Ok(())
    })
    .unwrap();
    let find = |mode: &str, model: &str| {
        outcomes
            .iter()
            .find(|o| o.mode == mode && o.model == model && o.query_id == "issue")
            .unwrap()
    };
    let scripted = find("mcp-resource", "openai:scripted");
    let p = &scripted.protocol;
    for (k, n) in [
        ("description_required", 1),
        ("missing_tool_selection", 1),
        ("resource_reads", 1),
    ] {
        assert_eq!(p.count(k), n, "{k}: {p:?}");
    }
    assert_eq!(scripted.protocol_errors(), 2, "the two refusals: {p:?}");
    assert_eq!(
        scripted.calls[0].error,
        Some(ProtocolError::from(mcp_resource::DESCRIPTION_REQUIRED))
    );
    assert_eq!(
        scripted.calls[1].error,
        Some(ProtocolError::from(mcp_resource::MISSING_TOOL_SELECTION))
    );
    assert_eq!(
        find("tool-search", "oracle")
            .protocol
            .count(pool::SEARCHES.name),
        1
    );

    let dir = tempfile::tempdir().unwrap();
    for f in ["run.json", "outcomes.jsonl", "texts.jsonl"] {
        std::fs::copy(committed.join(f), dir.path().join(f)).unwrap();
    }
    ok(&bin().arg("report").arg(dir.path()).output().unwrap());
    // Written before outcome format 4: a model request was a "turn" then; the words
    // moved, no figure did.
    let in_new_words = |text: String| {
        text.replace("first_turn", "first_request")
            .replace("hit_max_turns", "hit_max_requests")
            .replace("first-turn", "first-request")
            .replace("first turn", "first request")
    };
    assert_eq!(
        read(&dir.path().join("summary.md")),
        in_new_words(read(&committed.join("summary.md"))),
        "summary.md differs from the one written with the run"
    );
    let json = |text: String| serde_json::from_str::<serde_json::Value>(&text).unwrap();
    holds_every_figure_of(
        &json(in_new_words(read(&committed.join("summary.json")))),
        &json(read(&dir.path().join("summary.json"))),
        "summary.json",
    );
    // The CSV: every column the run wrote, row for row, under the same header; any
    // column added since is empty or a zero rate.
    let csv = |p: &Path| -> Vec<Vec<String>> {
        read(p)
            .lines()
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect()
    };
    let (mut old, new) = (
        csv(&committed.join("summary.csv")),
        csv(&dir.path().join("summary.csv")),
    );
    for name in &mut old[0] {
        *name = in_new_words(name.clone());
    }
    assert_eq!(old.len(), new.len());
    for (c, name) in old[0].iter().enumerate() {
        let at = new[0].iter().position(|n| n == name).expect(name);
        for r in 1..old.len() {
            assert_eq!(old[r][c], new[r][at], "summary.csv row {r}, column {name}");
        }
    }
    for (at, name) in new[0].iter().enumerate() {
        if !old[0].contains(name) {
            for row in &new[1..] {
                let v = &row[at];
                let zero_rate = name.ends_with("_rate") && v == "0.0";
                let zero_bound =
                    (name.ends_with("_rate_lo") && v == "0.0") || name.ends_with("_rate_hi");
                assert!(
                    v.is_empty() || zero_rate || zero_bound,
                    "new column {name}: {v}"
                );
            }
        }
    }
}

/// Every value of `old` is in `new` at the same place; a key `new` adds is a protocol
/// rate with no events (`k` 0), or a figure the old run has no data for (null).
fn holds_every_figure_of(old: &serde_json::Value, new: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            for (k, v) in o {
                let there = n.get(k).unwrap_or_else(|| panic!("{at}.{k} is gone"));
                holds_every_figure_of(v, there, &format!("{at}.{k}"));
            }
            for (k, v) in n.iter().filter(|(k, _)| !o.contains_key(*k)) {
                let empty = v.is_null() || (at.ends_with("protocol_rates") && v["k"] == 0);
                assert!(empty, "{at}.{k} is new and not empty: {v}");
            }
        }
        (Value::Array(o), Value::Array(n)) => {
            assert_eq!(o.len(), n.len(), "{at}");
            for (i, (o, n)) in o.iter().zip(n).enumerate() {
                holds_every_figure_of(o, n, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(old, new, "{at}"),
    }
}

/// A small scenario of its own (no file it includes), written into `dir`.
fn inline_scenario(dir: &Path, name: &str, agent: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            r#"name: {name}
catalog:
  connectors:
    - name: erp
      description: Orders.
      actions:
        - {{name: get_order, description: Fetch one order by id., method: GET, path: "/orders/{{id}}", parameters: {{type: object, properties: {{id: {{type: string}}}}, required: [id]}}}}
  mcp_servers:
    - name: github
      description: GitHub.
      tools:
        - {{name: create_issue, description: Open an issue., inputSchema: {{type: object, properties: {{title: {{type: string}}}}, required: [title]}}}}
        - {{name: list_issues, description: List the open issues., inputSchema: {{type: object, properties: {{}}}}}}
{agent}queries:
  - id: order
    text: Fetch order 7.
    tags: [erp]
    expect: {{calls: [{{address: "connector:erp/get_order", args: {{id: ["7"]}}}}]}}
  - id: issue
    text: Open an issue titled Crash.
    tags: [github]
    expect: {{calls: [{{address: "mcp:github/create_issue", args: {{title: [Crash]}}}}]}}
  - id: thanks
    text: Thanks!
    expect: {{calls: []}}
"#
        ),
    )
    .unwrap();
    path
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&read(&dir.join("summary.json"))).unwrap()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scenario's `agent.modes` wins over `--mode` (FIM One's precedence): the run says
/// so, and every report names the mode as it ran, never the asked name alone.
#[test]
fn a_mode_a_scenario_changes_is_reported_as_it_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = inline_scenario(
        tmp.path(),
        "pinned",
        "agent:\n  modes: {mcp: progressive}\n",
    );
    let o = bin()
        .arg("run")
        .arg(&sc)
        .args([
            "--mode",
            "all-tools",
            "--mode",
            "progressive",
            "--model",
            "oracle",
        ])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    ok(&o);
    let label = "all-tools [mcp=progressive]";
    assert!(
        stderr(&o).contains(&format!("runs mode `all-tools` as `{label}`")),
        "{}",
        stderr(&o)
    );
    // Progressive already has mcp=progressive: nothing to say, named as asked.
    assert!(
        !stderr(&o).contains("runs mode `progressive`"),
        "{}",
        stderr(&o)
    );
    let dir = tmp.path().join("x");
    let modes: Vec<String> = summary(&dir)["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["mode"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(modes, [label, "progressive"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains(label));
    for file in ["summary.md", "summary.csv", "junit.xml", "index.html"] {
        let text = read(&dir.join(file));
        assert!(
            text.contains(label) || text.contains("all-tools [mcp=progressive]"),
            "{file} does not name the mode as it ran"
        );
    }
    // The record keeps both: the mode asked (its key) and the mode as run.
    let line: serde_json::Value =
        serde_json::from_str(read(&dir.join("outcomes.jsonl")).lines().next().unwrap()).unwrap();
    assert!(line["mode"] == "all-tools" || line["mode"] == "progressive");
}

/// Savings against `legacy` by default, against a mode the run names, and against
/// `all-tools` too whenever the run holds it — each the change of medians a reader
/// can recompute from the groups.
#[test]
fn savings_are_read_against_a_chosen_reference_and_against_every_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = inline_scenario(tmp.path(), "savings", "");
    let o = bin()
        .arg("run")
        .arg(&sc)
        .args([
            "--mode",
            "progressive;legacy;all-tools",
            "--model",
            "oracle",
        ])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    ok(&o);
    let dir = tmp.path().join("x");
    let s = summary(&dir);
    assert!(s.get("savings_reference").is_none());
    let group = |s: &serde_json::Value, m: &str| {
        s["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["mode"] == m)
            .unwrap()
            .clone()
    };
    let median = |g: &serde_json::Value| g["tokens"]["first_request"]["median"].as_f64().unwrap();
    let p = group(&s, "progressive");
    let (legacy, all) = (
        median(&group(&s, "legacy")),
        median(&group(&s, "all-tools")),
    );
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    assert!(close(
        p["savings_first_request"].as_f64().unwrap(),
        1.0 - median(&p) / legacy
    ));
    assert!(close(
        p["savings_all_tools"]["first_request"].as_f64().unwrap(),
        1.0 - median(&p) / all
    ));
    // Against itself, as legacy's own row against legacy: no change.
    assert_eq!(
        group(&s, "all-tools")["savings_all_tools"]["first_request"],
        0.0
    );
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("vs legacy") && table.contains("vs all-tools"),
        "{table}"
    );
    let csv = read(&dir.join("summary.csv"));
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains("savings_all_tools_first_request"));

    // Re-rendered against all-tools.
    let o = bin()
        .arg("report")
        .arg(&dir)
        .args(["--savings-against", "all-tools"])
        .output()
        .unwrap();
    ok(&o);
    let s = summary(&dir);
    assert_eq!(s["savings_reference"], "all-tools");
    let p = group(&s, "progressive");
    assert!(close(
        p["savings_first_request"].as_f64().unwrap(),
        1.0 - median(&p) / all
    ));
    assert!(
        p.get("savings_all_tools").is_none(),
        "the reference already"
    );
    assert!(read(&dir.join("summary.md")).contains("vs all-tools (first request)"));

    // A run names its reference, which must be one of its modes.
    let o = bin()
        .arg("run")
        .arg(&sc)
        .args(["--mode", "progressive", "--savings-against", "all-tools"])
        .args(["--run-id", "y", "--no-progress", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--savings-against all-tools"),
        "{}",
        stderr(&o)
    );
}

/// `--query` and `--tag` keep some queries, to try them first; the run records it, a
/// resume keeps it, and a baseline judges only what the run kept.
#[test]
fn a_query_filter_runs_what_it_names_and_is_judged_on_it_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let sc = inline_scenario(tmp.path(), "filtered", "");
    let full = run(
        &tmp.path().join("full"),
        &[sc.to_str().unwrap()],
        &["--no-progress"],
    );
    let dir = run(
        &tmp.path().join("part"),
        &[sc.to_str().unwrap()],
        &[
            "--query",
            "order",
            "--tag",
            "github",
            "--mode",
            "progressive",
            "--no-progress",
        ],
    );
    let ids: std::collections::BTreeSet<String> = read(&dir.join("outcomes.jsonl"))
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["query_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.into_iter().collect::<Vec<_>>(), ["issue", "order"]);
    let manifest: serde_json::Value = serde_json::from_str(&read(&dir.join("run.json"))).unwrap();
    assert_eq!(
        manifest["settings"]["filter"],
        serde_json::json!({"queries": ["order"], "tags": ["github"]})
    );
    assert_eq!(summary(&dir)["filter"], "--query order --tag github");
    // A resume keeps the filter (nothing to run).
    let o = bin().arg("run").arg("--resume").arg(&dir).output().unwrap();
    ok(&o);
    // Against the full run: only the kept queries are judged, none is missing.
    let o = bin()
        .arg("compare")
        .arg(full.join("summary.json"))
        .arg(&dir)
        .output()
        .unwrap();
    ok(&o);
    let md = read(&dir.join("compare.md"));
    assert!(md.contains("kept only some queries"), "{md}");
    assert!(!md.contains("missing"), "{md}");
    // A name that matches nothing is bad input.
    let o = bin()
        .arg("run")
        .arg(&sc)
        .args(["--query", "nope", "--run-id", "z", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--query nope matches no query"),
        "{}",
        stderr(&o)
    );
}

/// `validate` and `run` agree on a directory: a catalog file next to the scenarios
/// (where `import mcp` writes by default) is skipped by both, with a note; named on
/// its own, `run` refuses it and says where it belongs.
#[test]
fn validate_and_run_agree_on_what_a_directory_holds() {
    let tmp = tempfile::tempdir().unwrap();
    inline_scenario(tmp.path(), "one", "");
    let dump = tmp.path().join("git.tools.json");
    std::fs::copy("fixtures/catalogs/mcp-server-git.tools.json", &dump).unwrap();
    let o = bin().arg("validate").arg(tmp.path()).output().unwrap();
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("MCP tools/list dump; `run` skips it"), "{out}");
    let o = bin()
        .arg("run")
        .arg(tmp.path())
        .args([
            "--mode",
            "progressive",
            "--run-id",
            "x",
            "--no-progress",
            "--out",
        ])
        .arg(tmp.path().join("reports"))
        .output()
        .unwrap();
    ok(&o);
    assert!(stderr(&o).contains("skipped"), "{}", stderr(&o));
    let o = bin()
        .arg("run")
        .arg(&dump)
        .args(["--run-id", "y", "--out"])
        .arg(tmp.path().join("reports"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a scenario: a scenario includes it"),
        "{}",
        stderr(&o)
    );
}
