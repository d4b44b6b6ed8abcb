//! The strategies beyond FIM One's: the MCP Progressive Disclosure extension
//! (`mcp-resource`), tool search and retrieval — every expectation of the built-in
//! suite reachable through each, their protocols and refusals, authorization kept per
//! episode, what retrieval records, and the cacheable prefix each leaves.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use discbench::environment::Databases;
use discbench::model;
use discbench::record::Outcome;
use discbench::runner::{self, Plan, RunConfig};
use discbench::scenario::{self, Scenario};
use discbench::strategy::mcp_pd::mcp_resource;
use discbench::strategy::{Composite, Effect, Mode, ProtocolConfig, ProtocolError, Templates};
use discbench::tokens::{Counter, Encoding};
use discbench::wire::ToolCall;
use serde_json::{json, Value};

fn tiny() -> Scenario {
    scenario::load(Path::new("fixtures/snapshot/tiny.yaml")).unwrap()
}

fn composite(sc: &Scenario, mode: &str) -> Composite {
    let t = Arc::new(Templates::builtin());
    Composite::new(
        &sc.catalog,
        None,
        Mode::parse(mode).unwrap(),
        &t,
        ProtocolConfig::default(),
    )
    .unwrap()
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new("c", name, &args)
}

fn error_of(r: &discbench::strategy::Resolution) -> Option<ProtocolError> {
    match r.effect {
        Effect::Error { error, .. } => Some(error),
        _ => None,
    }
}

fn plan(sc: &Scenario, mode: &str, model_name: &str, counter: &Counter) -> Plan {
    let cfg = RunConfig {
        run_id: "test".into(),
        scenario_paths: Vec::new(),
        modes: vec![Mode::parse(mode).unwrap()],
        models: vec![model_name.into()],
        repeat: 1,
        max_requests: 10,
        protocol: ProtocolConfig::default(),
        templates: Arc::new(Templates::builtin()),
        templates_dir: None,
    };
    Plan::build(std::slice::from_ref(sc), &cfg, counter).unwrap()
}

fn episode(sc: &Scenario, mode: &str, model_name: &str, q: usize) -> Outcome {
    let counter = Counter::new(Encoding::O200kBase);
    let plan = plan(sc, mode, model_name, &counter);
    let m = model::build(model_name).unwrap();
    runner::run_one(&plan, q, m.as_ref(), &counter)
}

fn query(sc: &Scenario, id: &str) -> usize {
    sc.queries.iter().position(|q| q.id == id).unwrap()
}

#[test]
fn oracle_is_exact_on_every_query_under_every_new_strategy() {
    let suite = scenario::load_all(&[PathBuf::from("scenarios")]).unwrap();
    let mut failures = Vec::new();
    let mut searched = false;
    let counter = Counter::new(Encoding::O200kBase);
    let oracle = model::build("oracle").unwrap();
    for sc in &suite {
        for mode in [
            "mcp-resource",
            "tool-search",
            "tool-search,search=regex,results=3",
            "tool-search,placement=sorted",
            "retrieval",
            "allowed-tools",
            "code-mode",
            "code-files",
        ] {
            let plan = plan(sc, mode, "oracle", &counter);
            for q in 0..sc.queries.len() {
                let o = runner::run_one(&plan, q, oracle.as_ref(), &counter);
                searched |= o.protocol.count("searches") > 0;
                let ok = o.score.exact
                    && o.score.args_ok != Some(false)
                    && o.score.schema_valid != Some(false)
                    && o.protocol_errors() == 0
                    && blind_only_where_cut(&o)
                    && !o.protocol.hit_max_requests;
                if !ok {
                    failures.push(format!(
                        "{}/{mode}/{}: {:?} {:?}",
                        sc.name, o.query_id, o.score, o.protocol
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(searched, "the oracle must have used tool search");
}

/// A discover answer cut by the result budget shows only the definitions it still holds
/// whole: the record names the ones cut, the oracle calls a cut one blind (no path of
/// the protocol shows it), and one that survived is called as shown.
#[test]
fn definitions_the_result_budget_cuts_are_not_shown() {
    let dir = tempfile::tempdir().unwrap();
    let long = "word ".repeat(60);
    let tool = |n: &str| {
        format!("        - name: {n}\n          description: {long}\n          inputSchema: {{type: object, properties: {{id: {{type: string}}}}}}\n")
    };
    let yaml = format!(
        "name: cut\ncatalog:\n  mcp_servers:\n    - name: big\n      tools:\n{}{}{}queries:\n  - id: q\n    text: first then third\n    expect: {{ calls: [mcp:big/first, mcp:big/third] }}\n",
        tool("first"),
        tool("second"),
        tool("third")
    );
    std::fs::write(dir.path().join("cut.yaml"), yaml).unwrap();
    let sc = scenario::load(&dir.path().join("cut.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let counter = Counter::new(Encoding::O200kBase);
    let mut cfg = RunConfig {
        run_id: "test".into(),
        scenario_paths: Vec::new(),
        modes: vec![Mode::parse("progressive").unwrap()],
        models: vec!["oracle".into()],
        repeat: 1,
        max_requests: 10,
        protocol: ProtocolConfig::default(),
        templates: Arc::new(Templates::builtin()),
        templates_dir: None,
    };
    // Each definition is about 80 estimated tokens: 150 keep the first whole and cut
    // into the second.
    cfg.protocol.results.budget_tokens = 150;
    let plan = Plan::build(std::slice::from_ref(&sc), &cfg, &counter).unwrap();
    let oracle = model::build("oracle").unwrap();
    let o = runner::run_one(&plan, 0, oracle.as_ref(), &counter);
    let discover = o
        .calls
        .iter()
        .find(|c| !c.fetched.is_empty() || !c.cut.is_empty())
        .unwrap();
    let names =
        |v: &[discbench::catalog::Address]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&discover.fetched), ["mcp:big/first"]);
    assert_eq!(names(&discover.cut), ["mcp:big/second", "mcp:big/third"]);
    let executed: Vec<(String, bool)> = o
        .calls
        .iter()
        .filter_map(|c| Some((c.address.as_ref()?.to_string(), c.blind)))
        .collect();
    assert_eq!(
        executed,
        [
            ("mcp:big/first".to_string(), false),
            ("mcp:big/third".to_string(), true)
        ]
    );
    assert!(o.score.exact);
    assert_eq!(o.protocol.blind_calls, 1);
    assert!(blind_only_where_cut(&o));
    // With the budget off, nothing is cut and nothing is blind.
    cfg.protocol.results.budget_tokens = 0;
    let plan = Plan::build(std::slice::from_ref(&sc), &cfg, &counter).unwrap();
    let o = runner::run_one(&plan, 0, oracle.as_ref(), &counter);
    assert!(o.calls.iter().all(|c| c.cut.is_empty() && !c.blind));
}

#[test]
fn mcp_resource_serves_descriptions_and_refuses_both_anti_patterns() {
    let sc = tiny();
    let dbs = Databases::build(&sc.catalog).unwrap();
    let comp = composite(&sc, "mcp-resource");
    let tool = comp
        .all_tools()
        .iter()
        .find(|t| t.name.contains("create_issue"))
        .unwrap()
        .clone();
    assert_eq!(tool.description, "Open an issue in a repository.");
    assert_eq!(
        tool.parameters,
        json!({"type": "object", "additionalProperties": true})
    );
    let read = comp
        .all_tools()
        .iter()
        .find(|t| t.name == "read_resource")
        .unwrap();
    assert!(read.description.contains(&format!(
        "resource:///tool_descriptions?tools={}",
        tool.name
    )));
    assert!(comp.system().contains("read_resource(resource_uri="));

    let mut st = comp.new_state();
    // Skip-fetching: refused, with the URI to read.
    let args = json!({"repo": "acme/app", "title": "Crash"});
    let r = comp.resolve(&call(&tool.name, args.clone()), &mut st, &dbs);
    assert_eq!(
        error_of(&r),
        Some(ProtocolError::Defined(
            mcp_resource::DESCRIPTION_REQUIRED.event()
        ))
    );
    let v: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(v["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");
    let uri = format!("resource:///tool_descriptions?tools={}", tool.name);
    assert_eq!(v["error"]["resource_uri"], uri.as_str());
    assert!(v["error"]["instructions"].as_array().unwrap().len() >= 2);
    // Fetch-everything-first: refused, with examples and the tools available.
    let r = comp.resolve(
        &call(
            "read_resource",
            json!({"resource_uri": "resource:///tool_descriptions"}),
        ),
        &mut st,
        &dbs,
    );
    assert_eq!(
        error_of(&r),
        Some(ProtocolError::Defined(
            mcp_resource::MISSING_TOOL_SELECTION.event()
        ))
    );
    let v: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(v["error"]["code"], "MISSING_TOOL_SELECTION");
    assert_eq!(v["error"]["available_tools"], json!([tool.name]));
    // A read naming a known and an unknown tool: the known one succeeds.
    let r = comp.resolve(
        &call(
            "read_resource",
            json!({"resource_uri": format!("{uri},no_such_tool")}),
        ),
        &mut st,
        &dbs,
    );
    assert!(matches!(r.effect, Effect::Fetched { ref addresses, .. } if addresses.len() == 1));
    let v: Value = serde_json::from_str(&r.content).unwrap();
    let doc = &v[&tool.name];
    assert_eq!(doc["description"], "Open an issue in a repository.");
    assert_eq!(doc["inputSchema"]["required"], json!(["repo", "title"]));
    assert_eq!(doc["examples"][0]["input"]["repo"], "acme/app");
    assert!(doc["usage_guidance"].is_object() && doc["error_guidance"].is_object());
    assert_eq!(v["no_such_tool"]["available_tools"], json!([tool.name]));
    // Recovered: the call now runs, and not blind.
    let r = comp.resolve(&call(&tool.name, args), &mut st, &dbs);
    assert!(matches!(r.effect, Effect::Executed { blind: false, .. }));
}

#[test]
fn authorization_belongs_to_one_episode_even_when_two_run_at_once() {
    let sc = tiny();
    let dbs = Databases::build(&sc.catalog).unwrap();
    let comp = composite(&sc, "mcp-resource");
    let tool = comp
        .all_tools()
        .iter()
        .find(|t| t.name.contains("create_issue"))
        .unwrap()
        .name
        .clone();
    let uri = format!("resource:///tool_descriptions?tools={tool}");
    let args = json!({"repo": "acme/app", "title": "Crash"});
    let barrier = Barrier::new(2);
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            let mut st = comp.new_state();
            comp.resolve(
                &call("read_resource", json!({"resource_uri": uri})),
                &mut st,
                &dbs,
            );
            barrier.wait(); // A has read; B calls now.
            barrier.wait(); // B has called.
            comp.resolve(&call(&tool, args.clone()), &mut st, &dbs)
        });
        let b = s.spawn(|| {
            let mut st = comp.new_state();
            barrier.wait();
            let r = comp.resolve(&call(&tool, args.clone()), &mut st, &dbs);
            barrier.wait();
            r
        });
        (a.join().unwrap(), b.join().unwrap())
    });
    assert!(matches!(a.effect, Effect::Executed { .. }));
    assert_eq!(
        error_of(&b),
        Some(ProtocolError::Defined(
            mcp_resource::DESCRIPTION_REQUIRED.event()
        ))
    );
    // And through the runner: the oracle reads once per episode, every repeat.
    let o = episode(&sc, "mcp-resource", "oracle", query(&sc, "issue"));
    assert_eq!(
        (o.protocol.count("resource_reads"), o.protocol_errors()),
        (1, 0)
    );
    assert!(o.score.exact);
}

#[test]
fn tool_search_holds_tools_back_until_a_search_finds_them() {
    let sc = tiny();
    let dbs = Databases::build(&sc.catalog).unwrap();
    let comp = composite(&sc, "tool-search,search=regex,results=3");
    let mut st = comp.new_state();
    let visible: Vec<String> = comp
        .visible_tools(&st)
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(visible, ["read_skill", "tool_search"]);
    let issue = comp
        .all_tools()
        .iter()
        .find(|t| t.name.contains("create_issue"))
        .unwrap()
        .name
        .clone();
    let args = json!({"repo": "acme/app", "title": "Crash"});
    let r = comp.resolve(&call(&issue, args.clone()), &mut st, &dbs);
    assert_eq!(error_of(&r), Some(ProtocolError::NotSurfaced));
    // A pattern that does not compile is an error answer.
    let r = comp.resolve(
        &call("tool_search", json!({"query": "(unclosed"})),
        &mut st,
        &dbs,
    );
    assert_eq!(error_of(&r), Some(ProtocolError::SchemaViolation));
    assert!(r.content.contains("does not compile"), "{}", r.content);
    // `.` matches every tool: at most `results` of them come back.
    let r = comp.resolve(&call("tool_search", json!({"query": "."})), &mut st, &dbs);
    assert!(matches!(r.effect, Effect::Fetched { ref join, .. } if join.len() == 3));
    let r = comp.resolve(
        &call("tool_search", json!({"query": "(?i)issue"})),
        &mut st,
        &dbs,
    );
    assert!(r.content.contains(&issue), "{}", r.content);
    let visible: Vec<String> = comp
        .visible_tools(&st)
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(visible.last(), Some(&issue), "appended: {visible:?}");
    let r = comp.resolve(&call(&issue, args), &mut st, &dbs);
    assert!(matches!(r.effect, Effect::Executed { blind: false, .. }));

    // Sorted: found tools take their catalog place, before the search tool.
    let comp = composite(&sc, "tool-search,placement=sorted");
    let mut st = comp.new_state();
    comp.resolve(
        &call("tool_search", json!({"query": "open issue repository"})),
        &mut st,
        &dbs,
    );
    let visible: Vec<String> = comp
        .visible_tools(&st)
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        visible.last().map(String::as_str),
        Some("tool_search"),
        "{visible:?}"
    );
    assert!(visible.contains(&issue));
}

#[test]
fn retrieval_shows_the_top_k_and_records_them() {
    let sc = tiny();
    let q = query(&sc, "issue");
    let o = episode(&sc, "retrieval,k=2", "oracle", q);
    assert!(!o.retrieved.is_empty() && o.retrieved.len() <= 2);
    assert_eq!(
        o.retrieved[0].address.to_string(),
        "mcp:github/create_issue"
    );
    let ranks: Vec<usize> = o.retrieved.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, (1..=o.retrieved.len()).collect::<Vec<_>>());
    assert!(o.retrieved.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(o.score.exact && o.protocol.count("searches") == 0);
    let s = o.surfacing.clone().unwrap();
    assert_eq!((s.recall_at_k, s.mrr), (Some(1.0), Some(1.0)));
    // A mode that shows whole lists ranks nothing: recall only.
    let listed = episode(&sc, "mcp-resource", "oracle", q);
    let s = listed.surfacing.clone().unwrap();
    assert_eq!((s.recall, s.recall_at_k, s.mrr), (1.0, None, None));
    let line = serde_json::to_value(&listed).unwrap();
    assert!(line["surfacing"].get("recall_at_k").is_none());
    // Pure retrieval: nothing to search with; what retrieval misses is out of reach.
    let comp = composite(&sc, "retrieval,fallback=none");
    let st = comp.new_state();
    assert!(comp
        .visible_tools(&st)
        .iter()
        .all(|t| t.name != "tool_search"));
    let line = serde_json::to_value(&o).unwrap();
    assert!(line["retrieved"][0]["score"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_cacheable_prefix_survives_appends_and_breaks_where_the_tool_list_changes() {
    let sc = tiny();
    let q = query(&sc, "issue");
    // Progressive: the second request extends the first, which is cached whole.
    let o = episode(&sc, "progressive", "oracle", q);
    assert!(o.requests.len() >= 2);
    assert_eq!(o.requests[1].cached_prefix, o.requests[0].request_tokens);
    // Tool search appending what it finds: the definitions count after the result
    // that surfaced them, so the prefix survives.
    let o = episode(&sc, "tool-search", "oracle", q);
    assert_eq!(o.protocol.count("searches"), 1);
    assert_eq!(o.requests[1].cached_prefix, o.requests[0].request_tokens);
    // Sorted into the tool list: the prefix breaks at the first tool inserted.
    let o = episode(&sc, "tool-search,placement=sorted", "oracle", q);
    assert!(o.requests[1].cached_prefix < o.requests[0].request_tokens);
    assert_eq!(
        o.tokens.cached_prefix,
        o.requests.iter().map(|t| t.cached_prefix).sum::<usize>()
    );
    // Billed with the cached prefix at 10% of the input price (the default discount).
    let want = o.tokens.billed_input - (o.tokens.cached_prefix as f64 * 0.9).round() as usize;
    assert_eq!(o.tokens.billed_cached, want);
}

#[test]
fn combinations_that_make_no_sense_are_refused_with_the_reason() {
    for (spec, says) in [
        ("mcp=resource,selection=on", "read_resource"),
        ("connectors=deferred,mcp=retrieved", "cannot be mixed"),
        ("tool-search,selection=on", "replace the selection step"),
        ("tool-search,k=3", "retrieved"),
        ("progressive,results=3", "deferred"),
        ("skills=resource", "progressive or inline"),
        ("connectors=resource", "mcp only"),
        ("tool-search,search=fuzzy", "bm25 or regex"),
        ("tool-search,always_on=github", "patterns like"),
        ("mcp-resource,templates=nope", "template set"),
    ] {
        let e = Mode::parse(spec).unwrap_err().0;
        assert!(e.contains(says), "{spec}: {e}");
    }
    let m = Mode::parse("mcp=resource,selection=off").unwrap();
    assert_eq!(m.mcp, discbench::strategy::Disclosure::Resource);
    let m = Mode::parse("tool-search,always_on=builtin:*").unwrap();
    let sc = tiny();
    let t = Arc::new(Templates::builtin());
    let comp = Composite::new(&sc.catalog, None, m, &t, ProtocolConfig::default()).unwrap();
    let st = comp.new_state();
    assert!(comp
        .visible_tools(&st)
        .iter()
        .any(|t| t.name == "calculator"));
}

#[test]
fn every_template_set_renders_and_changes_what_it_names() {
    let sc = tiny();
    let base = composite(&sc, "mcp-resource");
    for set in [
        "mcp-pd-brief",
        "mcp-pd-verbose",
        "mcp-pd-no-example",
        "mcp-pd-no-prohibition",
    ] {
        let comp = composite(&sc, &format!("mcp-resource,templates={set}"));
        let desc = |c: &Composite| {
            c.all_tools()
                .iter()
                .find(|t| t.name == "read_resource")
                .unwrap()
                .description
                .clone()
        };
        assert_ne!(desc(&comp), desc(&base), "{set}");
        assert_ne!(comp.system(), base.system(), "{set}");
    }
    let framed = composite(&sc, "progressive,templates=fim-frame");
    assert!(framed.system().len() > composite(&sc, "progressive").system().len() + 1000);
    assert!(framed.system().contains("2026"));
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

/// Every event a strategy defines is in the one list the aggregation and the reports
/// read, and every listed event belongs to a strategy; names are unique and none
/// shadows a common counter.
#[test]
fn every_strategys_events_are_listed() {
    use discbench::strategy::defined::DEFINED;
    let sc = tiny();
    let mut seen = Vec::new();
    for mode in [
        "progressive",
        "legacy",
        "inline",
        "all-tools",
        "mcp-resource",
        "tool-search",
        "retrieval",
        "code-mode",
        "code-files",
    ] {
        for k in composite(&sc, mode).events() {
            assert!(DEFINED.contains(&k), "{mode}: {} is not in DEFINED", k.name);
            if !seen.contains(&k) {
                seen.push(k);
            }
        }
    }
    for k in DEFINED {
        assert!(
            seen.contains(&k),
            "{} is listed but no strategy defines it",
            k.name
        );
        assert_eq!(DEFINED.iter().filter(|x| x.name == k.name).count(), 1);
        assert_ne!(
            ProtocolError::named(k.name),
            ProtocolError::UnknownTarget,
            "{} must not be a common counter's name",
            k.name
        );
        let common = discbench::score::Protocol::default();
        let line = serde_json::to_value(&common).unwrap();
        assert!(line.get(k.name).is_none());
    }
    // A mode counts only what its strategies define.
    assert!(composite(&sc, "legacy").events().is_empty());
}

/// `allowed-tools`: every definition in every request (one list, so a provider's cache
/// never breaks on it), the selection step's pick what may be called; a call outside it
/// is refused as `not_allowed`, and `request_tools` allows more without changing the
/// list.
#[test]
fn allowed_tools_sends_every_definition_and_refuses_calls_outside_the_pick() {
    let sc = scenario::load(Path::new("scenarios/mcp-reference.yaml")).unwrap();
    let comp = composite(&sc, "allowed-tools");
    assert!(comp.selection_applies());
    let dbs = Databases::build(&sc.catalog).unwrap();
    let direct: Vec<String> = comp
        .all_tools()
        .iter()
        .filter(|t| comp.address_of(&t.name).is_some())
        .map(|t| t.name.clone())
        .collect();
    let (picked, other) = (direct[0].clone(), direct[1].clone());
    let mut st = comp.new_state();
    comp.apply_selection(&mut st, Some(std::slice::from_ref(&picked)));
    let before = comp.visible_tools(&st);
    assert_eq!(before.len(), comp.all_tools().len() + 1);
    assert_eq!(before.last().unwrap().name, "request_tools");
    let cx = comp.context(&st, Vec::new());
    let allowed = cx.allowed.clone().unwrap();
    assert!(allowed.contains(&picked) && !allowed.contains(&other));
    assert!(allowed.contains(&"request_tools".to_string()));

    let r = comp.resolve(&call(&other, json!({})), &mut st, &dbs);
    assert_eq!(error_of(&r), Some(ProtocolError::NotAllowed));
    let r = comp.resolve(
        &call("request_tools", json!({"tool_names": [other]})),
        &mut st,
        &dbs,
    );
    assert!(matches!(r.effect, Effect::Fetched { ref addresses, .. } if addresses.is_empty()));
    let after = comp.visible_tools(&st);
    assert!(Arc::ptr_eq(&before, &after), "the list never changes");
    assert!(comp
        .context(&st, Vec::new())
        .allowed
        .unwrap()
        .contains(&other));
    let r = comp.resolve(&call(&other, json!({})), &mut st, &dbs);
    assert!(matches!(r.effect, Effect::Executed { .. }), "{}", r.content);
    // Every definition is shown from the start: no call to an allowed tool is blind.
    assert!(matches!(r.effect, Effect::Executed { blind: false, .. }));
    assert!(discbench::strategy::Mode::parse("allowed-tools,selection=off").is_err());
    assert!(discbench::strategy::Mode::parse("tool-search,allowed=on").is_err());
}

fn conversations() -> Scenario {
    scenario::load(Path::new("fixtures/conversations/small.yaml")).unwrap()
}

/// The turn `t` (from 1) of a conversation's outcome.
fn turn(o: &Outcome, t: usize) -> &discbench::record::TurnOutcome {
    &o.conversation[t - 1]
}

/// What an earlier turn loaded stays loaded, as each strategy's real counterpart keeps
/// it: a server discovered (progressive), a tool description read (the MCP-PD
/// authorization lasts the session), a tool a search found (its reference stays in the
/// conversation) — so the oracle, which never calls blind, calls it at once.
#[test]
fn a_conversation_keeps_what_earlier_turns_loaded() {
    let sc = conversations();
    let twice = query(&sc, "book-twice");
    for (mode, counter) in [
        ("progressive", None),
        ("mcp-resource", Some("resource_reads")),
        ("tool-search", Some("searches")),
    ] {
        let o = episode(&sc, mode, "oracle", twice);
        assert!(o.score.exact, "{mode}: {:?}", o.conversation);
        assert_eq!(o.conversation.len(), 2);
        let (first, second) = (turn(&o, 1), turn(&o, 2));
        // The first turn found the tool its own way; the second went straight to it.
        match counter {
            None => {
                assert!(first.protocol.discovery_calls > 0, "{mode}");
                assert_eq!(second.protocol.discovery_calls, 0, "{mode}");
            }
            Some(c) => {
                assert!(first.protocol.count(c) > 0, "{mode}: {c}");
                assert_eq!(second.protocol.count(c), 0, "{mode}: {c}");
            }
        }
        assert_eq!(second.calls, 1, "{mode}: one call, the booking");
        assert_eq!(second.requests, 2, "{mode}: the call, then the answer");
    }
    // A turn that needs nothing makes no call, and the next one refers back to the
    // first turn's result (the event id it returned).
    let o = episode(
        &sc,
        "progressive",
        "oracle",
        query(&sc, "cancel-then-rebook"),
    );
    assert!(o.score.exact);
    assert_eq!(turn(&o, 2).calls, 0);
    assert_eq!(turn(&o, 2).score.abstain_ok, Some(true));
    // The conversation's figures are its turns' together.
    let billed: usize = o.conversation.iter().map(|t| t.tokens.billed_input).sum();
    assert_eq!(o.tokens.billed_input, billed);
    assert_eq!(
        o.requests.len(),
        o.conversation.iter().map(|t| t.requests).sum::<usize>()
    );
    assert_eq!(o.tokens.first_request, turn(&o, 1).tokens.first_request);
    // Every request of a later turn sends the whole conversation before it.
    assert!(turn(&o, 3).tokens.first_request > turn(&o, 2).tokens.first_request);
}

/// What a turn adds is in no context before it: no request of an earlier turn shows
/// the added server's tool, and from its turn on it is there, its definitions
/// counted as tool definitions of that turn.
#[test]
fn what_a_turn_adds_is_in_no_request_before_it() {
    let sc = conversations();
    let q = query(&sc, "notes-arrive-later");
    for mode in ["legacy", "progressive", "tool-search"] {
        let o = episode(&sc, mode, "oracle", q);
        assert!(o.score.exact, "{mode}: {:?}", o.conversation);
        let second = turn(&o, 2);
        for r in &o.requests[..second.first_request_index] {
            for e in &r.entered {
                let text = e.text.as_deref().unwrap_or("");
                assert!(
                    !text.contains("add_note") && !e.what.contains("add_note"),
                    "{mode}: request {} shows the notes server: {}",
                    r.request,
                    e.what
                );
            }
        }
        if mode == "progressive" {
            // The `mcp` meta-tool's description lists the servers: it gained the
            // notes server's stub, counted as that turn's tool definitions.
            assert!(second.tokens.tool_defs > 0, "{mode}");
        }
        if mode == "legacy" {
            let tools = |t: &discbench::record::TurnOutcome| {
                o.requests[t.first_request_index].tools_visible
            };
            assert_eq!(tools(turn(&o, 1)) + 1, tools(second));
            assert!(
                second.tokens.tool_defs > 0,
                "added definitions are tool definitions"
            );
        }
    }
}

/// A skill a turn adds joins the system prompt's stubs from that turn on: what the
/// system prompt gained is system-prompt tokens of that turn, and no earlier request
/// names the skill.
#[test]
fn a_skill_a_turn_adds_grows_the_system_prompt_from_that_turn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("skill-added.yaml");
    std::fs::write(
        &path,
        r#"name: skill-added
catalog:
  skills:
    - name: Refund Policy
      description: How refunds are approved and paid.
      content: Refunds over 100 EUR need a manager's approval.
  mcp_servers:
    - name: cal
      description: The team calendar.
      tools:
        - name: list_events
          description: List the meetings on a day.
          inputSchema: {type: object, properties: {day: {type: string}}, required: [day]}
          response: {events: []}
queries:
  - id: policy-later
    turns:
      - text: What is on the calendar on 2026-12-01?
        expect:
          calls: [{address: mcp:cal/list_events, args: {day: ["2026-12-01"]}}]
      - adds: [skill:Refund Policy]
        text: What does our refund policy say about large refunds?
        expect:
          calls: [skill:Refund Policy]
"#,
    )
    .unwrap();
    let sc = scenario::load(&path).unwrap();
    let o = episode(&sc, "progressive", "oracle", 0);
    assert!(o.score.exact, "{:?}", o.conversation);
    let second = turn(&o, 2);
    for r in &o.requests[..second.first_request_index] {
        for e in &r.entered {
            let text = e.text.as_deref().unwrap_or("");
            assert!(
                !text.contains("Refund Policy"),
                "request {}: {}",
                r.request,
                e.what
            );
        }
    }
    let first = &o.requests[second.first_request_index];
    let grown: Vec<_> = (first.entered.iter())
        .filter(|e| e.what == "system prompt, grown at turn 2")
        .collect();
    assert_eq!(grown.len(), 1, "{:?}", first.entered);
    assert!(grown[0].tokens > 0);
    assert_eq!(second.tokens.system, grown[0].tokens);
    assert!(grown[0].text.as_deref().unwrap().contains("Refund Policy"));
    assert_eq!(o.tokens.system, turn(&o, 1).tokens.system + grown[0].tokens);
}

/// A conversation is one work item: recorded and replayed whole, its figures the
/// same; and the summary keeps conversation-level figures apart from turn-level ones.
#[test]
fn a_recorded_conversation_replays_and_is_summarized_per_turn_and_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_discbench");
    let run = |args: &[&str]| {
        let o = std::process::Command::new(bin)
            .args([
                "run",
                "fixtures/conversations/small.yaml",
                "--mode",
                "progressive",
            ])
            .args(["--out"])
            .arg(tmp.path())
            .args(["--no-progress"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run(&["--run-id", "rec", "--record"]);
    let rec = tmp.path().join("rec");
    run(&[
        "--run-id",
        "rep",
        "--model",
        &format!("replay:{}", rec.display()),
    ]);
    let read = |d: &str| std::fs::read_to_string(tmp.path().join(d).join("summary.json")).unwrap();
    let (a, b): (Value, Value) = (
        serde_json::from_str(&read("rec")).unwrap(),
        serde_json::from_str(&read("rep")).unwrap(),
    );
    assert_eq!(a["groups"], b["groups"], "the replay is the recorded run");
    let g = a["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["model"] == "oracle")
        .unwrap();
    // Outcomes are lines: 4 queries under 2 models, whatever their turns.
    assert_eq!(a["outcomes"], 8);
    // Turn-level: 9 turns (3 + 3 + 2 + the single query); conversation-level: 4.
    assert_eq!(g["n"], 9);
    assert_eq!(g["conversations"]["n"], 4);
    assert_eq!(g["conversations"]["exact"]["k"], 4);
    let by_turn = g["conversations"]["by_turn"].as_array().unwrap();
    assert_eq!(by_turn.len(), 3);
    assert_eq!(by_turn[2]["n"], 2, "two conversations reach a third turn");
    // Billed input grows turn by turn.
    assert!(by_turn[1]["cum_billed"].as_f64() > by_turn[0]["cum_billed"].as_f64());
    // Conversation level per query: one row per conversation, with each turn's
    // exact count; a single query has none.
    let q = &a["queries"];
    let rows: Vec<&Value> = (q.as_array().unwrap().iter())
        .filter(|r| r["model"] == "oracle")
        .collect();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        let turns = r["turns"].as_array().map_or(0, Vec::len);
        let expected = match r["query_id"].as_str().unwrap() {
            "single" => 0,
            "book-twice" => 2,
            _ => 3,
        };
        assert_eq!(turns, expected, "{r}");
    }
    // `compare` names the conversation and the turn whose result changed: a baseline
    // in which the oracle failed turn 2 of `book-twice` every time.
    let mut base = a.clone();
    for r in base["queries"].as_array_mut().unwrap() {
        if r["model"] == "oracle" && r["query_id"] == "book-twice" {
            r["exact"] = json!(0);
            r["turns"] = json!([r["n"], 0]);
        }
    }
    let baseline = tmp.path().join("baseline.json");
    std::fs::write(&baseline, base.to_string()).unwrap();
    let o = std::process::Command::new(bin)
        .arg("compare")
        .arg(&baseline)
        .arg(&rec)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("book-twice (turn 2)"), "{said}");
    // One row per turn in the Parquet export, with the conversation's figures.
    let df = {
        use polars::prelude::*;
        let p = rec.join("outcomes.parquet").to_string_lossy().into_owned();
        LazyFrame::scan_parquet(PlRefPath::new(p.as_str()), ScanArgsParquet::default())
            .unwrap()
            .collect()
            .unwrap()
    };
    let oracle = df
        .column("model")
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .filter(|m| *m == Some("oracle"))
        .count();
    assert_eq!(oracle, 9, "one row per turn");
    for c in [
        "turn",
        "turns",
        "conv_exact",
        "conv_billed",
        "cum_billed",
        "cum_billed_cached",
    ] {
        assert!(df.column(c).is_ok(), "column {c}");
    }
    // The same rows in outcomes.csv: a header, then 9 turns under each of 2 models.
    let csv = std::fs::read_to_string(rec.join("outcomes.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for c in ["query_id", "turn", "turns", "conv_exact", "cum_billed"] {
        assert!(header.contains(&c), "outcomes.csv lacks {c}");
    }
    let back = {
        use polars::prelude::*;
        CsvReadOptions::default()
            .try_into_reader_with_file_path(Some(rec.join("outcomes.csv")))
            .unwrap()
            .finish()
            .unwrap()
    };
    assert_eq!(back.height(), 18);
    let third = (back.column("turn").unwrap().i64().unwrap().iter())
        .filter(|t| *t == Some(3))
        .count();
    assert_eq!(
        third, 4,
        "two conversations reach a third turn, under 2 models"
    );
    // summary.md and JUnit speak of conversations: a failing conversation is one
    // test case that names its failing turn.
    let md = std::fs::read_to_string(rec.join("summary.md")).unwrap();
    assert!(
        md.contains("Conversations (the table above counts turns)"),
        "{md}"
    );
    let junit = std::fs::read_to_string(rec.join("junit.xml")).unwrap();
    let cases = junit.matches("<testcase ").count();
    assert_eq!(cases, 8, "one case per conversation and query, per model");
    let lexical_failed = (b["queries"].as_array().unwrap().iter())
        .filter(|r| r["model"] == "lexical" && r["turns"].is_array() && r["exact"] == 0)
        .count();
    assert!(lexical_failed > 0, "the lexical model fails a conversation");
    assert_eq!(
        junit.matches("<failure message=\"turn ").count(),
        lexical_failed,
        "{junit}"
    );
    // The page: billed input over turns, exact by turn, and the drill-down's turns.
    let page = std::fs::read_to_string(rec.join("index.html")).unwrap();
    assert!(page.contains("Conversations: exact by turn"));
    assert!(page.contains("small-conversations: billed input over turns"));
    let svg = std::fs::read_to_string(rec.join("plots/turns-small-conversations.svg")).unwrap();
    assert!(svg.contains("billed input over turns"), "{svg:.300}");
    assert!(
        svg.contains("n=2"),
        "the third turn's point names its 2 conversations"
    );
}
