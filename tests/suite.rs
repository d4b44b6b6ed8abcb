//! The built-in suite and the harness end to end: every expectation is reachable by
//! the oracle under every preset, meta-tools answer as designed, token ledgers add up
//! exactly, precedence holds, and each preset's exact context is snapshot-tested
//! (update snapshots with `INSTA_UPDATE=always cargo test`, then review `git diff`).

use std::path::{Path, PathBuf};
use std::process::Command;

use discbench::environment::Databases;
use discbench::model;
use discbench::record::texts::TextStore;
use discbench::record::Layer;
use discbench::record::Outcome;
use discbench::runner::{self, Plan, RunConfig};
use discbench::scenario::{self, Scenario};
use discbench::strategy::{
    Composite, Disclosure, Effect, Mode, ProtocolConfig, ProtocolError, SelectionConfig, Templates,
    UnloadedCalls,
};
use discbench::tokens::{Counter, Encoding};
use discbench::wire::ToolCall;
use serde_json::{json, Value};
use std::sync::Arc;

fn suite() -> Vec<Scenario> {
    scenario::load_all(&[PathBuf::from("scenarios")]).expect("the built-in suite loads")
}

fn tiny() -> Scenario {
    scenario::load(Path::new("fixtures/snapshot/tiny.yaml")).unwrap()
}

/// The default protocol with another selection threshold and maximum.
fn selecting(threshold: usize, max: usize) -> ProtocolConfig {
    ProtocolConfig {
        selection: SelectionConfig { threshold, max },
        ..ProtocolConfig::default()
    }
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// The tiny scenario under a preset, with its own (default) instructions.
fn tiny_composite(
    sc: &Scenario,
    t: &Arc<Templates>,
    preset: &str,
    cfg: ProtocolConfig,
) -> Composite {
    Composite::new(&sc.catalog, None, Mode::preset(preset).unwrap(), t, cfg).unwrap()
}

/// The plan of one scenario under one mode with one model, repeat 1: item `q` is
/// query `q`.
fn plan_for(
    sc: &Scenario,
    mode: &Mode,
    model_name: &str,
    selection: ProtocolConfig,
    counter: &Counter,
) -> Plan {
    let cfg = RunConfig {
        run_id: "test".into(),
        scenario_paths: Vec::new(),
        modes: vec![mode.clone()],
        models: vec![model_name.into()],
        repeat: 1,
        max_requests: 10,
        protocol: selection,
        templates: Arc::new(Templates::builtin()),
        templates_dir: None,
    };
    Plan::build(std::slice::from_ref(sc), &cfg, counter).unwrap()
}

fn episode(sc: &Scenario, mode: &Mode, model_name: &str, q: usize, counter: &Counter) -> Outcome {
    let plan = plan_for(sc, mode, model_name, ProtocolConfig::default(), counter);
    let m = model::build(model_name).unwrap();
    runner::run_one(&plan, q, m.as_ref(), counter)
}

#[test]
fn suite_is_large_enough() {
    let s = suite();
    let queries: usize = s.iter().map(|s| s.queries.len()).sum();
    let abstain: usize = s
        .iter()
        .flat_map(|s| &s.queries)
        .filter(|q| q.expect.calls.is_empty())
        .count();
    assert!(queries >= 80, "{queries} queries");
    assert!(abstain >= 12, "{abstain} no-call queries");
    let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"enterprise-hub") && names.contains(&"mcp-reference"));
    let hub = s.iter().find(|s| s.name == "enterprise-hub").unwrap();
    let tables = |n: &str| hub.catalog.database(n).unwrap().tables.len();
    assert_eq!((tables("hr_postgres"), tables("analytics_db")), (12, 45));
}

#[test]
fn oracle_is_exact_on_every_query_under_every_preset() {
    let counter = Counter::new(Encoding::O200kBase);
    let mut failures = Vec::new();
    let mut selection_ran = false;
    let oracle = model::build("oracle").unwrap();
    for sc in suite() {
        for preset in ["progressive", "legacy", "inline"] {
            let mode = Mode::preset(preset).unwrap();
            // One plan per scenario and preset, as a run makes it: item `q` is query
            // `q`, each run alone.
            let plan = plan_for(&sc, &mode, "oracle", ProtocolConfig::default(), &counter);
            for q in 0..sc.queries.len() {
                let o = runner::run_one(&plan, q, oracle.as_ref(), &counter);
                assert_eq!(o.query_id, sc.queries[q].id);
                selection_ran |= o.selection.as_ref().is_some_and(|s| s.selected.is_some());
                let ok = o.score.exact
                    && o.score.args_ok != Some(false)
                    && o.score.schema_valid != Some(false)
                    && o.protocol_errors() == 0
                    && blind_only_where_cut(&o)
                    && !o.protocol.hit_max_requests;
                if !ok {
                    failures.push(format!(
                        "{}/{}/{}: {:?} {:?}",
                        sc.name, preset, o.query_id, o.score, o.protocol
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        selection_ran,
        "some scenario must be large enough for the selection step"
    );
}

#[test]
fn request_tools_engages_on_the_large_scenario() {
    let counter = Counter::new(Encoding::O200kBase);
    let sc = suite()
        .into_iter()
        .find(|s| s.name == "large-catalog")
        .unwrap();
    let mode = Mode::preset("progressive").unwrap();
    let m = model::build("oracle").unwrap();
    for max in [6, 1] {
        let plan = plan_for(&sc, &mode, "oracle", selecting(12, max), &counter);
        assert!(plan.units[0].get(&counter).composite.selection_applies());
        let (mut used, mut filtered, mut shortcuts) = (0, 0, 0);
        for (i, q) in sc.queries.iter().enumerate() {
            let o = runner::run_one(&plan, i, m.as_ref(), &counter);
            let sel = o.selection.as_ref().expect("selection ran");
            // `request_tools` is offered exactly when the step filtered the tools (an
            // empty answer, for a query that needs none, keeps every tool).
            assert_eq!(
                sel.selected.is_some(),
                o.requests[0]
                    .entered
                    .iter()
                    .any(|e| e.what == "request_tools"),
                "{}",
                q.id
            );
            filtered += usize::from(sel.selected.is_some());
            shortcuts += usize::from(sel.shortcut);
            assert!(o.score.exact, "{} (max {max})", q.id);
            used += o.calls.iter().filter(|c| c.tool == "request_tools").count();
        }
        assert!(filtered > sc.queries.len() / 2, "{filtered} filtered");
        assert!(shortcuts > 0, "the keyword shortcut decides some queries");
        if max == 1 {
            assert!(
                used > 0,
                "with one tool selected, multi-tool queries must load more through request_tools"
            );
        }
    }
}

#[test]
fn ledger_adds_up_to_the_recounted_requests() {
    let counter = Counter::new(Encoding::Cl100kBase);
    let sc = tiny();
    for preset in ["progressive", "legacy", "inline"] {
        let o = episode(&sc, &Mode::preset(preset).unwrap(), "oracle", 0, &counter);
        let t = &o.tokens;
        let per_turn: usize = o.requests.iter().map(|t| t.request_tokens).sum();
        let selection_request = o
            .selection
            .as_ref()
            .map_or(0, |sel| t.selection - counter.count(&sel.answer));
        assert_eq!(
            t.billed_input,
            per_turn + selection_request,
            "{preset}: billed = every request sent"
        );
        assert_eq!(t.first_request, o.requests[0].request_tokens);
        let entered: usize = o.requests[0]
            .entered
            .iter()
            .filter(|e| matches!(e.layer.as_str(), "system" | "tool_defs" | "query"))
            .map(|e| e.tokens)
            .sum();
        assert_eq!(
            entered, t.first_request,
            "{preset}: the first request is system + tools + query"
        );
        assert_eq!(
            t.peak_context,
            o.requests
                .iter()
                .map(|t| t.request_tokens)
                .max()
                .unwrap()
                .max(selection_request)
        );
        // Each request re-sends all before it: request k+1 = request k + what turn k added.
        for w in o.requests.windows(2) {
            let added: usize = w[0]
                .entered
                .iter()
                .filter(|e| matches!(e.layer.as_str(), "output" | "fetched" | "results"))
                .map(|e| e.tokens)
                .sum::<usize>()
                + w[1]
                    .entered
                    .iter()
                    .filter(|e| e.layer == Layer::Fetched && e.what.starts_with("tool definition"))
                    .map(|e| e.tokens)
                    .sum::<usize>();
            assert_eq!(
                w[1].request_tokens,
                w[0].request_tokens + added,
                "{preset}: turn {}",
                w[1].request
            );
        }
    }
}

#[test]
fn token_counts_match_an_independent_encode() {
    let counter = Counter::new(Encoding::O200kBase);
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let sc = tiny();
    let t = Arc::new(Templates::builtin());
    let comp = Composite::new(
        &sc.catalog,
        sc.agent.instructions.as_deref(),
        Mode::preset("legacy").unwrap(),
        &t,
        ProtocolConfig::default(),
    )
    .unwrap();
    assert_eq!(
        counter.count(comp.system()),
        bpe.encode_ordinary(comp.system()).len()
    );
    for tool in comp.all_tools() {
        assert_eq!(
            counter.tool(tool),
            bpe.encode_ordinary(&tool.wire_json()).len()
        );
    }
    // The memo returns the same count the second time.
    assert_eq!(
        counter.count(comp.system()),
        counter.count_uncached(comp.system())
    );
}

#[test]
fn meta_tools_answer_as_designed() {
    let sc = tiny();
    let t = Arc::new(Templates::builtin());
    let dbs = Databases::build(&sc.catalog).unwrap();
    let comp = tiny_composite(&sc, &t, "progressive", ProtocolConfig::default());
    let mut st = comp.new_state();
    let call = |name: &str, args: Value| ToolCall::new("c", name, &args);

    let r = comp.resolve(
        &call(
            "connector",
            json!({"subcommand": "discover", "connector": "erp"}),
        ),
        &mut st,
        &dbs,
    );
    assert!(
        r.content.starts_with("Connector: erp\nDescription: ")
            && r.content
                .contains("Actions (2):\n\n  get_order:\n    method: GET\n")
            && r.content
                .contains("    parameters: {\n  \"type\": \"object\",\n"),
        "discover returns full schemas, as indented text: {}",
        r.content
    );
    assert!(matches!(r.effect, Effect::Fetched { ref addresses, .. } if addresses.len() == 2));

    let r = comp.resolve(
        &call(
            "connector",
            json!({"subcommand": "discover", "connector": "crm"}),
        ),
        &mut st,
        &dbs,
    );
    assert!(matches!(
        r.effect,
        Effect::Error {
            error: ProtocolError::UnknownTarget,
            ..
        }
    ));
    assert!(r.content.contains("valid connectors: erp"), "{}", r.content);

    let r = comp.resolve(
        &call(
            "connector",
            json!({"subcommand": "run", "connector": "erp"}),
        ),
        &mut st,
        &dbs,
    );
    assert!(matches!(
        r.effect,
        Effect::Error {
            error: ProtocolError::BadSubcommand,
            ..
        }
    ));

    let r = comp.resolve(
        &call("read_skill", json!({"name": "Refunds"})),
        &mut st,
        &dbs,
    );
    assert!(
        r.content.contains("Refund Processing"),
        "unknown skills list the valid names: {}",
        r.content
    );

    let r = comp.resolve(&call("connector", json!({"subcommand": "execute", "connector": "erp", "action": "get_order", "parameters": {"order_id": "9921"}})), &mut st, &dbs);
    assert_eq!(
        serde_json::from_str::<Value>(&r.content).unwrap(),
        json!({"order_id": "9921", "total": 84.5}),
        "fixture response"
    );

    let r = comp.resolve(
        &call(
            "database",
            json!({"subcommand": "query", "database": "hr", "sql": "SELECT name FROM people"}),
        ),
        &mut st,
        &dbs,
    );
    assert!(
        matches!(r.effect, Effect::Executed { blind: true, .. }),
        "querying before discovering is blind"
    );
    assert!(r.content.contains("Ada"));
    let r = comp.resolve(
        &call(
            "database",
            json!({"subcommand": "query", "database": "hr", "sql": "DROP TABLE people"}),
        ),
        &mut st,
        &dbs,
    );
    assert!(r.content.contains("read-only"), "{}", r.content);

    let r = comp.resolve(
        &ToolCall {
            id: "x".into(),
            name: "mcp".into(),
            arguments: "{not json".into(),
        },
        &mut st,
        &dbs,
    );
    assert!(matches!(
        r.effect,
        Effect::Error {
            error: ProtocolError::SchemaViolation,
            ..
        }
    ));
    let r = comp.resolve(&call("erp__get_order", json!({})), &mut st, &dbs);
    assert!(r.content.contains("available tools:"), "{}", r.content);
}

#[test]
fn selection_step_and_request_tools() {
    let sc = tiny();
    let t = Arc::new(Templates::builtin());
    let dbs = Databases::build(&sc.catalog).unwrap();
    // A threshold of 2 makes the tiny catalog (5 tools) select.
    let comp = tiny_composite(&sc, &t, "progressive", selecting(2, 1));
    assert!(comp.selection_applies());
    let mut st = comp.new_state();
    // The cap comes first (`calculator`), then `read_skill` is pinned after it.
    assert_eq!(
        comp.apply_selection(&mut st, Some(&names(&["calculator", "mcp"]))),
        Some(names(&["calculator", "read_skill"]))
    );
    let visible: Vec<String> = comp
        .visible_tools(&st)
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(visible, ["calculator", "read_skill", "request_tools"]);
    // The requests of an episode that loads nothing new share one list (the runner
    // reuses its texts by that); a copy of the state, or another composite, builds
    // its own, equal one.
    let shared = comp.visible_tools(&st);
    assert!(Arc::ptr_eq(&shared, &comp.visible_tools(&st)));
    let copied = comp.visible_tools(&st.clone());
    assert!(!Arc::ptr_eq(&shared, &copied));
    assert_eq!(shared[..], copied[..]);
    let twin = tiny_composite(&sc, &t, "progressive", selecting(2, 1));
    let other = twin.visible_tools(&st);
    assert!(!Arc::ptr_eq(&shared, &other));
    assert_eq!(shared[..], other[..]);
    let rt = comp.visible_tools(&st).last().unwrap().clone();
    let connector = comp
        .all_tools()
        .iter()
        .find(|t| t.name == "connector")
        .unwrap();
    let first80: String = connector
        .description
        .replace('\n', " ")
        .chars()
        .take(80)
        .collect();
    assert!(
        rt.description
            .contains(&format!("- connector: {first80}\n")),
        "{}",
        rt.description
    );
    // A tool that exists but is not loaded runs, as in FIM One...
    let discover = ToolCall::new(
        "1",
        "connector",
        &json!({"subcommand": "discover", "connector": "erp"}),
    );
    assert!(!comp.is_loaded(&st, "connector"));
    let r = comp.resolve(&discover, &mut st.clone(), &dbs);
    assert!(matches!(r.effect, Effect::Fetched { .. }), "{}", r.content);
    // ...and is refused when asked for.
    let strict = ProtocolConfig {
        unloaded: UnloadedCalls::Refuse,
        ..selecting(2, 1)
    };
    let comp_strict = tiny_composite(&sc, &t, "progressive", strict);
    let mut st_strict = comp_strict.new_state();
    comp_strict.apply_selection(&mut st_strict, Some(&names(&["calculator"])));
    let r = comp_strict.resolve(&discover, &mut st_strict, &dbs);
    assert!(matches!(
        r.effect,
        Effect::Error {
            error: ProtocolError::NotLoaded,
            ..
        }
    ));
    comp.resolve(
        &ToolCall::new("2", "request_tools", &json!({"tool_names": ["connector"]})),
        &mut st,
        &dbs,
    );
    assert!(comp
        .visible_tools(&st)
        .iter()
        .any(|t| t.name == "connector"));
    assert!(!Arc::ptr_eq(&shared, &comp.visible_tools(&st)));
    // No usable answer keeps every tool loaded, and offers no `request_tools`.
    let mut st2 = comp.new_state();
    assert_eq!(comp.apply_selection(&mut st2, None), None);
    assert_eq!(comp.visible_tools(&st2).len(), comp.all_tools().len());
}

#[test]
fn scenario_modes_win_over_the_requested_mode() {
    let mut sc = tiny();
    sc.agent
        .modes
        .insert(discbench::catalog::Kind::Connectors, Disclosure::Legacy);
    let counter = Counter::new(Encoding::O200kBase);
    let o = episode(
        &sc,
        &Mode::preset("progressive").unwrap(),
        "oracle",
        0,
        &counter,
    );
    assert!(o.mode_spec.contains("connectors=legacy"), "{}", o.mode_spec);
    assert!(
        o.calls.iter().any(|c| c.tool == "erp__get_order"),
        "{:?}",
        o.calls.iter().map(|c| &c.tool).collect::<Vec<_>>()
    );
}

#[test]
fn scoring_of_wrong_and_forbidden_calls() {
    let sc = tiny();
    let counter = Counter::new(Encoding::O200kBase);
    // lexical on "thanks" abstains; the oracle on "refund" reads the skill, then calls.
    let o = episode(
        &sc,
        &Mode::preset("legacy").unwrap(),
        "lexical",
        3,
        &counter,
    );
    assert_eq!(o.score.abstain_ok, Some(true));
    let o = episode(
        &sc,
        &Mode::preset("progressive").unwrap(),
        "oracle",
        0,
        &counter,
    );
    assert_eq!(o.calls[0].tool, "read_skill");
    assert!(o.score.exact && o.score.first_call_correct && !o.score.forbidden_hit);
    assert_eq!(o.protocol.discovery_calls, 2);
    assert_eq!(
        o.protocol.overfetch, 1,
        "delete_order was fetched and not used"
    );
}

fn snapshot_context(preset: &str) -> String {
    let sc = tiny();
    let counter = Counter::new(Encoding::O200kBase);
    let t = Arc::new(Templates::builtin());
    let comp = Composite::new(
        &sc.catalog,
        sc.agent.instructions.as_deref(),
        Mode::preset(preset).unwrap(),
        &t,
        ProtocolConfig::default(),
    )
    .unwrap();
    let mut s = format!(
        "=== system ({} tokens)\n{}\n",
        counter.count(comp.system()),
        comp.system()
    );
    for tool in comp.all_tools() {
        s += &format!("=== tool {} ({} tokens)\n{}\n", tool.name, counter.tool(tool), serde_json::to_string_pretty(&json!({"name": tool.name, "description": tool.description, "parameters": tool.parameters})).unwrap());
    }
    s
}

#[test]
fn context_snapshot_progressive() {
    insta::assert_snapshot!("progressive", snapshot_context("progressive"));
}

#[test]
fn context_snapshot_legacy() {
    insta::assert_snapshot!("legacy", snapshot_context("legacy"));
}

#[test]
fn context_snapshot_inline() {
    insta::assert_snapshot!("inline", snapshot_context("inline"));
}

#[test]
fn cli_run_writes_one_line_per_outcome_and_a_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--run-id",
            "r1",
            "--out",
        ])
        .arg(dir.path())
        .env("CI", "true")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    for col in [
        "exact",
        "F1",
        "first-request tok",
        "billed in",
        "vs legacy",
        "proto err",
    ] {
        assert!(stdout.contains(col), "{stdout}");
    }
    let lines = std::fs::read_to_string(dir.path().join("r1/outcomes.jsonl")).unwrap();
    // 4 queries × 6 presets × 2 models.
    assert_eq!(lines.lines().count(), 48);
    // Shared texts (system prompts, first-request tool definitions) are in texts.jsonl
    // once each, and every outcome refers to them by hash, whatever order episodes
    // finished in: the text behind each reference is exactly what was counted.
    let texts = TextStore::load(&dir.path().join("r1")).unwrap();
    let store_lines = std::fs::read_to_string(dir.path().join("r1/texts.jsonl")).unwrap();
    assert_eq!(
        store_lines.lines().count(),
        texts.len(),
        "each text stored once"
    );
    let counter = Counter::new(Encoding::O200kBase);
    let mut referenced = std::collections::BTreeSet::new();
    for l in lines.lines() {
        let o: Outcome = serde_json::from_str(l).unwrap();
        assert_eq!(o.run_id, "r1");
        assert_eq!(o.format, discbench::record::FORMAT_VERSION);
        let first = &o.requests[0].entered;
        let system = first.iter().find(|e| e.layer == Layer::System).unwrap();
        // Format 3: the first request's tool definitions are one stored list of entries.
        let list = o.requests[0].tool_defs_ref.as_ref().expect("a tool list");
        referenced.insert(list.clone());
        let listed: Vec<discbench::record::Entry> =
            serde_json::from_str(texts.get(list).expect("the list resolves")).unwrap();
        assert!(first.iter().all(|e| e.layer != Layer::ToolDefs));
        let defs: Vec<_> = listed.iter().collect();
        assert!(!defs.is_empty());
        for e in std::iter::once(system).chain(defs) {
            assert!(e.text.is_none(), "shared text kept inline: {}", e.what);
            let h = e.text_ref.as_ref().expect("a reference");
            let text = texts.get(h).expect("the reference resolves");
            assert_eq!(counter.count(text), e.tokens, "{}", e.what);
            if e.layer == Layer::ToolDefs {
                let v: Value = serde_json::from_str(text).unwrap();
                assert_eq!(v["function"]["name"], json!(e.what));
            }
            referenced.insert(h.clone());
        }
        // Every other stored text (fetched content, results, later tool lists, a long
        // expectation) resolves too.
        referenced.extend(o.expected_ref.iter().cloned());
        for t in &o.requests {
            referenced.extend(t.tool_defs_ref.iter().cloned());
            if let Some(list) = t.tool_defs_ref.as_ref().and_then(|h| texts.get(h)) {
                let listed: Vec<discbench::record::Entry> = serde_json::from_str(list).unwrap();
                referenced.extend(listed.into_iter().filter_map(|e| e.text_ref));
            }
            for e in &t.entered {
                if let Some(h) = &e.text_ref {
                    let text = texts.get(h).expect("every reference resolves");
                    assert_eq!(counter.count(text), e.tokens, "{}", e.what);
                    referenced.insert(h.clone());
                }
            }
        }
    }
    assert_eq!(
        referenced.len(),
        texts.len(),
        "no text stored that nothing uses"
    );
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r1/run.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["plan"]["total"], json!(48));
    assert_eq!(manifest["assigned"], json!(48));
    assert_eq!(manifest["settings"]["tokenizer"], json!("o200k_base"));
    assert!(manifest["scenarios"][0]["files"]
        .as_object()
        .unwrap()
        .keys()
        .any(|f| f.ends_with("tiny.yaml")));
    // The same run id again is refused (exit 2) rather than mixing runs.
    let again = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--run-id",
            "r1",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
}

#[test]
fn cli_bad_input_exits_2() {
    let bin = env!("CARGO_BIN_EXE_discbench");
    for args in [
        vec![
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "skills=legacy",
        ],
        vec!["run", "fixtures/snapshot/tiny.yaml", "--model", "gpt"],
        vec![
            "tokens",
            "fixtures/snapshot/tiny.yaml",
            "--tokenizer",
            "p50k",
        ],
        vec!["tokens", "no/such/dir"],
        vec!["frobnicate"],
    ] {
        let out = Command::new(bin).args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn tokens_command_prints_the_static_ledger() {
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args([
            "tokens",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "legacy",
            "--mode",
            "skills=inline,mcp=legacy",
            "--tokenizer",
            "cl100k_base",
            "--show",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("tokenizer: cl100k_base"));
    assert!(s.contains("--- tool erp__get_order"));
    assert!(s.contains(
        "skills=inline,connectors=progressive,databases=progressive,mcp=legacy,selection=on"
    ));
    assert!(s.contains("--- tool github__create_issue"));
}

#[test]
fn a_template_that_fails_to_render_is_bad_input_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join("templates");
    std::fs::create_dir(&templates).unwrap();
    // Compiles, but names a variable the renderer does not pass: strict undefined.
    std::fs::write(templates.join("request_tools.j2"), "{{ nope.attr }}").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--selection-threshold",
            "2",
            "--run-id",
            "t",
            "--templates",
        ])
        .arg(&templates)
        .arg("--out")
        .arg(dir.path().join("reports"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("request_tools.j2") && err.contains("tiny"),
        "{err}"
    );
    assert!(!dir.path().join("reports").exists(), "nothing is written");
}

#[test]
fn request_tools_loads_in_part_and_an_empty_or_garbled_selection_keeps_all() {
    let sc = tiny();
    let t = Arc::new(Templates::builtin());
    let dbs = Databases::build(&sc.catalog).unwrap();
    let comp = tiny_composite(&sc, &t, "progressive", selecting(2, 1));
    let mut st = comp.new_state();
    assert_eq!(
        comp.apply_selection(&mut st, Some(&names(&["calculator"]))),
        Some(names(&["calculator", "read_skill"]))
    );
    let r = comp.resolve(
        &ToolCall::new(
            "1",
            "request_tools",
            &json!({"tool_names": ["connector", "tpyo", "calculator"]}),
        ),
        &mut st,
        &dbs,
    );
    assert!(matches!(r.effect, Effect::Fetched { .. }));
    assert_eq!(
        r.content,
        "Loaded: connector. Already loaded: calculator. Not found: tpyo"
    );
    let visible: Vec<String> = comp
        .visible_tools(&st)
        .iter()
        .map(|t| t.name.clone())
        .collect();
    // What request_tools loads comes after it, as in FIM One.
    assert_eq!(
        visible,
        ["calculator", "read_skill", "request_tools", "connector"]
    );
    for garbled in [names(&["tpyo", "nope"]), Vec::new()] {
        let mut st = comp.new_state();
        assert_eq!(comp.apply_selection(&mut st, Some(&garbled)), None);
        assert_eq!(comp.visible_tools(&st).len(), comp.all_tools().len());
    }
}

#[test]
fn a_query_without_sql_is_an_executed_call_with_a_schema_violation_in_both_modes() {
    let sc = tiny();
    let t = Arc::new(Templates::builtin());
    let dbs = Databases::build(&sc.catalog).unwrap();
    for (preset, call) in [
        (
            "progressive",
            ToolCall::new(
                "1",
                "database",
                &json!({"subcommand": "query", "database": "hr"}),
            ),
        ),
        ("legacy", ToolCall::new("1", "hr__query", &json!({}))),
    ] {
        let comp = tiny_composite(&sc, &t, preset, ProtocolConfig::default());
        let mut st = comp.new_state();
        let r = comp.resolve(&call, &mut st, &dbs);
        match r.effect {
            Effect::Executed {
                ref address,
                ref schema_errors,
                ..
            } => {
                assert_eq!(address.to_string(), "database:hr/query", "{preset}");
                assert!(!schema_errors.is_empty(), "{preset}");
            }
            ref other => panic!("{preset}: {other:?}"),
        }
        assert!(r.content.contains("error"), "{preset}: {}", r.content);
    }
}

/// The issue's number: on enterprise-hub, progressive's first-request context is at most
/// 25% of legacy's (the README reports the measured share).
#[test]
fn progressive_first_request_is_at_most_a_quarter_of_legacy_on_enterprise_hub() {
    let counter = Counter::new(Encoding::O200kBase);
    let hub = suite()
        .into_iter()
        .find(|s| s.name == "enterprise-hub")
        .unwrap();
    let oracle = model::build("oracle").unwrap();
    let mean = |preset: &str| {
        let mode = Mode::preset(preset).unwrap();
        let plan = plan_for(&hub, &mode, "oracle", ProtocolConfig::default(), &counter);
        let total: usize = (0..hub.queries.len())
            .map(|q| {
                runner::run_one(&plan, q, oracle.as_ref(), &counter)
                    .tokens
                    .first_request
            })
            .sum();
        total as f64 / hub.queries.len() as f64
    };
    let (p, l) = (mean("progressive"), mean("legacy"));
    assert!(p <= 0.25 * l, "progressive {p} vs legacy {l}");
}

/// Fixture responses answer by address and argument values (first matching `when`,
/// else the default entry, else the tool's own response, else `{"status":"ok"}`), and
/// `validate --fixtures` lists the expected tools that still have none.
#[test]
fn fixture_responses_answer_by_arguments_and_validate_lists_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("snapshot")).unwrap();
    std::fs::create_dir_all(dir.path().join("invalid-support")).unwrap();
    std::fs::copy(
        "fixtures/invalid-support/people.sql",
        dir.path().join("invalid-support/people.sql"),
    )
    .unwrap();
    let tiny = std::fs::read_to_string("fixtures/snapshot/tiny.yaml").unwrap();
    let with = tiny.replacen(
        "  builtins:",
        "  responses:\n    - {address: mcp:github/create_issue, when: {repo: [acme/app]}, response: {number: 42}}\n    - {address: mcp:github/create_issue, response: {number: 1}}\n    - {address: connector:erp/get_order, when: {order_id: [\"7\"]}, response: {order_id: \"7\", total: 1}}\n  builtins:",
        1,
    );
    let path = dir.path().join("snapshot/tiny.yaml");
    std::fs::write(&path, &with).unwrap();
    let sc = scenario::load(&path).unwrap();
    let t = Arc::new(Templates::builtin());
    let dbs = Databases::build(&sc.catalog).unwrap();
    let comp = tiny_composite(&sc, &t, "legacy", ProtocolConfig::default());
    let mut st = comp.new_state();
    let mut answer = |tool: &str, args: Value| {
        let r = comp.resolve(&ToolCall::new("c", tool, &args), &mut st, &dbs);
        serde_json::from_str::<Value>(&r.content).unwrap()
    };
    let issue = |repo: &str| json!({"repo": repo, "title": "t"});
    assert_eq!(
        answer("github__create_issue", issue("acme/app")),
        json!({"number": 42})
    );
    assert_eq!(
        answer("github__create_issue", issue("other/repo")),
        json!({"number": 1})
    );
    assert_eq!(
        answer("erp__get_order", json!({"order_id": "7"})),
        json!({"order_id": "7", "total": 1})
    );
    // Not matched: the action's own response.
    assert_eq!(
        answer("erp__get_order", json!({"order_id": "9921"})),
        json!({"order_id": "9921", "total": 84.5})
    );
    assert_eq!(
        answer("calculator", json!({"expression": "1+1"})),
        json!({"status": "ok"})
    );

    // The original tiny scenario: create_issue has no fixture; get_order's only answer
    // is its own response, which a call pinned to an order matches no `when` of.
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args(["validate", "--fixtures", "fixtures/snapshot/tiny.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "gaps found exit 1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tiny: no fixture: issue: mcp:github/create_issue"),
        "{text}"
    );
    assert!(
        text.contains(
            "tiny: fixture gap: refund: expected call connector:erp/get_order {\"order_id\":\"9921\"} matches no `when` and is answered by the tool's own `response`"
        ),
        "{text}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args(["validate", "--fixtures"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("no fixture") && !text.contains("create_issue"),
        "{text}"
    );
}

/// `validate --fixtures` finds both items the scale-hub audit found wrong, on a copy
/// of them as they stood (each allows a look-up whose arguments no fixture `when`
/// matches, answered by a default about another service or incident), and lists
/// nothing on the built-in suite; a default marked `any_args` is never a gap.
#[test]
fn validate_lists_calls_that_a_default_would_answer_about_another_entity() {
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args([
            "validate",
            "--fixtures",
            "fixtures/gaps/scale-hub-pagerduty-unfixed.yaml",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let gaps: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("fixture gap:"))
        .collect();
    assert_eq!(
        gaps,
        [
            "     scale-hub-pagerduty-unfixed: fixture gap: pagerduty-oncall-billing: allowed call connector:pagerduty/get_service {\"service_id\":\"PBS3M9X\"} matches no `when` and is answered by the tool's own `response`",
            "     scale-hub-pagerduty-unfixed: fixture gap: pagerduty-ack-by-number: allowed call connector:pagerduty/get_incident {\"incident_id\":\"Q9KD3B6TRY2MZC\"} matches no `when` and is answered by the tool's own `response`",
        ],
        "{text}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args(["validate", "--fixtures"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        !text.contains("gap") && !text.contains("no fixture"),
        "{text}"
    );

    // The same default marked right for any arguments is no gap; `any_args` beside a
    // `when` is refused.
    let unfixed =
        std::fs::read_to_string("fixtures/gaps/scale-hub-pagerduty-unfixed.yaml").unwrap();
    let marked = unfixed.replacen(
        "  responses:\n",
        "  responses:\n    - {address: connector:pagerduty/get_service, any_args: true, response: {error: {message: Not Found, code: 2100}}}\n",
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("marked.yaml");
    std::fs::write(&path, &marked).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args(["validate", "--fixtures"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("get_service") && text.contains("get_incident"),
        "{text}"
    );
    let both = unfixed.replacen(
        "  responses:\n",
        "  responses:\n    - {address: connector:pagerduty/get_service, when: {service_id: [X]}, any_args: true, response: {}}\n",
        1,
    );
    std::fs::write(&path, &both).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args(["validate"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("any_args"));
}

/// A YAML flow mapping splits a description written as a plain scalar at its commas:
/// `{type: boolean, description: If true, it ends; if false, it goes on}` makes the
/// description "If true" and `it ends; if false` a key of the schema with no value,
/// which every mode then renders and counts. No YAML file of the suite or of the test
/// fixtures holds a key with no value outside a fixture `response` (where a JSON
/// `null` is data) but the invalid fixture that shows `validate` refusing such keys in
/// a tool schema (`fixtures/invalid/split-description.yaml`); this test looks at every
/// text of every file, schema or not.
#[test]
fn no_yaml_text_is_split_at_its_commas() {
    fn walk(v: &serde_yaml_ng::Value, at: &str, found: &mut Vec<String>) {
        match v {
            serde_yaml_ng::Value::Mapping(m) => {
                for (k, x) in m {
                    let key = k.as_str().unwrap_or_default();
                    if key == "response" {
                        continue;
                    }
                    if x.is_null() {
                        found.push(format!("{at}/{key}"));
                    }
                    walk(x, &format!("{at}/{key}"), found);
                }
            }
            serde_yaml_ng::Value::Sequence(s) => {
                for (i, x) in s.iter().enumerate() {
                    walk(x, &format!("{at}[{i}]"), found);
                }
            }
            serde_yaml_ng::Value::Tagged(t) => walk(&t.value, at, found),
            _ => {}
        }
    }
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml")
                && !p.ends_with("fixtures/invalid/split-description.yaml")
            {
                out.push(p);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    files(&root.join("scenarios"), &mut paths);
    files(&root.join("fixtures"), &mut paths);
    let mut found = Vec::new();
    let mut read = 0;
    for p in &paths {
        let text = std::fs::read_to_string(p).unwrap();
        // Fixtures of malformed input are allowed not to parse.
        let Ok(v) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text) else {
            continue;
        };
        read += 1;
        walk(
            &v,
            &p.strip_prefix(root).unwrap().display().to_string(),
            &mut found,
        );
    }
    assert!(read >= 20, "only {read} YAML files read");
    assert!(
        found.is_empty(),
        "keys with no value, split from a text:\n{}",
        found.join("\n")
    );
}

/// Whether every blind call of an outcome goes to an address whose definition the
/// result budget cut from the answer that should have shown it (a 235-tool MCP server's
/// `discover` is larger than the whole budget): the only blind calls the oracle makes.
fn blind_only_where_cut(o: &discbench::record::Outcome) -> bool {
    let cut: Vec<_> = o.calls.iter().flat_map(|c| &c.cut).collect();
    o.calls
        .iter()
        .filter(|c| c.blind)
        .all(|c| c.address.as_ref().is_some_and(|a| cut.contains(&a)))
}
