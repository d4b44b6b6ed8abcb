//! Code mode (`code-mode`, `code-files`): the catalog as a typed API, searched or read
//! as files, and programs run in the sandbox — each call a program makes scored as any
//! call, each way a program can go wrong an error answer, the counters and the ledger,
//! what the mock models write, and a recorded run replayed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use discbench::catalog::Address;
use discbench::environment::Databases;
use discbench::model::{self, Backend};
use discbench::record::Outcome;
use discbench::scenario::{self, Scenario};
use discbench::score::CallEffect;
use discbench::strategy::{Composite, Effect, Mode, ProtocolConfig, Resolution, Templates};
use discbench::tokens::{Counter, Encoding};
use discbench::wire::{Response, ToolCall};
use serde_json::{json, Value};

mod support;
use support::cli::{bin, ok};
use support::scripted::{run_query, Scripted};

fn tiny() -> Scenario {
    scenario::load(Path::new("fixtures/snapshot/tiny.yaml")).unwrap()
}

fn composite(sc: &Scenario, mode: &str) -> Composite {
    Composite::new(
        &sc.catalog,
        None,
        Mode::parse(mode).unwrap(),
        &Arc::new(Templates::builtin()),
        ProtocolConfig::default(),
    )
    .unwrap()
}

fn resolve(comp: &Composite, sc: &Scenario, name: &str, args: Value) -> Resolution {
    let dbs = Databases::build(&sc.catalog).unwrap();
    let mut st = comp.new_state();
    comp.resolve(&ToolCall::new("c", name, &args), &mut st, &dbs)
}

fn run(sc: &Scenario, mode: &str, backend: &dyn Backend, query: &str) -> Outcome {
    run_query(sc, mode, ProtocolConfig::default(), backend, query)
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall::new(format!("c_{name}"), name, &args)
}

fn program(code: &str) -> Response {
    Response::call(vec![call("run_code", json!({ "code": code }))])
}

fn scripted(act: Vec<Response>) -> Scripted {
    Scripted {
        act,
        ..Scripted::default()
    }
}

#[test]
fn the_api_is_searched_as_declarations_and_read_as_files() {
    let sc = tiny();
    let comp = composite(&sc, "code-mode");
    let names: Vec<&str> = comp.all_tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read_skill", "search_api", "run_code"]);
    assert!(comp
        .system()
        .contains("`api.erp` (2 functions): Order and invoice system."));
    // A search returns declarations, ranked, counted as a search of the API.
    let r = resolve(
        &comp,
        &sc,
        "search_api",
        json!({"query": "fetch one order"}),
    );
    assert!(
        r.content.contains("declare namespace api.erp {\n  /**\n   * Fetch one order by id.\n   */\n  function get_order(args: {\n    /** Order id. */\n    order_id: string;\n  }): unknown;\n}"),
        "{}",
        r.content
    );
    match &r.effect {
        Effect::Fetched {
            addresses,
            ranked,
            event,
            ..
        } => {
            assert_eq!(
                addresses[0],
                Address::Connector("erp".into(), "get_order".into())
            );
            assert!(*ranked);
            assert_eq!(event.unwrap().name(), "api_searches");
        }
        e => panic!("{e:?}"),
    }
    // A full name finds that one function.
    let r = resolve(&comp, &sc, "search_api", json!({"query": "api.hr.query"}));
    assert!(r.content.starts_with("1 function match"), "{}", r.content);
    assert!(r.content.contains("Tables: people(id INTEGER, name TEXT)"));

    let files = composite(&sc, "code-files");
    let names: Vec<&str> = files.all_tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read_skill", "list_files", "read_file", "run_code"]);
    let r = resolve(&files, &sc, "list_files", json!({"path": "servers/"}));
    assert_eq!(r.content, "index.ts\nbuiltins/\nerp/\ngithub/\nhr/\n");
    let r = resolve(&files, &sc, "list_files", json!({"path": "/servers/erp"}));
    assert_eq!(r.content, "index.ts\nget_order.ts\ndelete_order.ts\n");
    let r = resolve(
        &files,
        &sc,
        "read_file",
        json!({"path": "servers/erp/index.ts"}),
    );
    assert!(r
        .content
        .contains("export { get_order } from \"./get_order\"; // Fetch one order by id."));
    let r = resolve(
        &files,
        &sc,
        "read_file",
        json!({"path": "servers/github/create_issue.ts"}),
    );
    assert!(r.content.starts_with("declare namespace api.github {"));
    match &r.effect {
        Effect::Fetched {
            addresses, event, ..
        } => {
            assert_eq!(
                addresses,
                &[Address::Mcp("github".into(), "create_issue".into())]
            );
            assert_eq!(event.unwrap().name(), "files_read");
        }
        e => panic!("{e:?}"),
    }
    for (tool, path, says) in [
        ("read_file", "servers/erp/nope.ts", "no file or folder"),
        ("read_file", "servers/erp", "is a folder"),
        ("list_files", "servers/erp/get_order.ts", "is a file"),
        ("list_files", "etc", "no file or folder"),
    ] {
        let r = resolve(&files, &sc, tool, json!({ "path": path }));
        assert!(matches!(r.effect, Effect::Error { .. }), "{tool} {path}");
        assert!(r.content.contains(says), "{tool} {path}: {}", r.content);
    }
}

/// Each call a program makes is an executed call, scored by the one scorer: the
/// expectation met through a program is exact, a forbidden call inside one is a
/// forbidden hit, SQL is judged by what it returns; the program's record carries the
/// event, each inner call the program's index; the printed text is the result the
/// ledger counts and the program is model output.
#[test]
fn a_programs_calls_are_scored_as_any_calls() {
    let sc = tiny();
    let refund = scripted(vec![
        Response::call(vec![
            call("read_skill", json!({"name": "Refund Processing"})),
            call("search_api", json!({"query": "fetch order"})),
        ]),
        program("const o = api.erp.get_order({order_id: '9921'});\nconsole.log('total', o.total);"),
    ]);
    let o = run(&sc, "code-mode", &refund, "refund");
    assert!(
        o.score.exact && o.score.args_ok == Some(true),
        "{:?} {:?}",
        o.score,
        o.calls
    );
    assert_eq!(o.protocol.count("programs"), 1);
    assert_eq!(o.protocol.count("api_searches"), 1);
    assert_eq!(o.protocol.count("code_errors"), 0);
    let at = o.calls.iter().position(|c| c.tool == "run_code").unwrap();
    assert_eq!(o.calls[at].effect, CallEffect::Program);
    let inner = &o.calls[at + 1];
    assert_eq!(inner.tool, "api.erp.get_order");
    assert_eq!(inner.effect, CallEffect::Executed);
    assert_eq!(inner.program, Some(at));
    assert_eq!(inner.args, Some(json!({"order_id": "9921"})));
    assert!(!inner.blind, "its declaration was searched first");
    // What the program printed is the tool result the model reads.
    let printed = o
        .requests
        .iter()
        .flat_map(|t| &t.entered)
        .find(|e| e.what.starts_with("run_code("))
        .unwrap();
    assert_eq!(printed.text.as_deref(), Some("total 84.5\n"));
    let counter = Counter::new(Encoding::O200kBase);
    assert!(o.tokens.results >= counter.count("total 84.5\n"));
    assert!(o.tokens.output > counter.count("api.erp.get_order({order_id: '9921'})"));

    // A forbidden call made inside a program is a forbidden hit; a call whose
    // declaration was never fetched is blind.
    let reckless = scripted(vec![program(
        "api.erp.get_order({order_id: '9921'}); api.erp.delete_order({order_id: '9921'})",
    )]);
    let o = run(&sc, "code-mode", &reckless, "refund");
    assert!(o.score.forbidden_hit && !o.score.exact);
    assert_eq!(o.protocol.blind_calls, 2);

    // SQL is judged by execution: another query with the same rows is exact.
    let people = scripted(vec![program(
        "const r = api.hr.query({sql: 'SELECT p.name FROM people AS p ORDER BY p.id'}); r.row_count",
    )]);
    let o = run(&sc, "code-files", &people, "people");
    assert!(
        o.score.exact && o.score.args_ok == Some(true),
        "{:?}",
        o.calls
    );
    let wrong = scripted(vec![program(
        "api.hr.query({sql: 'SELECT id FROM people'})",
    )]);
    assert_eq!(
        run(&sc, "code-files", &wrong, "people").score.args_ok,
        Some(false)
    );

    // Calls in the order the program made them: an answer that stops with an error
    // after the first call keeps the first.
    let halfway = scripted(vec![program(
        "api.erp.get_order({order_id: '9921'}); throw new Error('stop here'); api.erp.delete_order({order_id: '1'})",
    )]);
    let o = run(&sc, "code-mode", &halfway, "refund");
    let inner: Vec<&str> = o
        .calls
        .iter()
        .filter(|c| c.program.is_some())
        .map(|c| c.tool.as_str())
        .collect();
    assert_eq!(inner, ["api.erp.get_order"]);
    assert_eq!(o.protocol.count("code_errors"), 1);
    assert!(!o.score.forbidden_hit);
}

/// A program that throws, runs past its time, recurses without end, allocates past
/// its memory, makes too many calls, calls what the API does not have or breaks a
/// schema ends with a `code_error` answer naming what to fix — never a crash or a hang.
#[test]
fn a_program_that_goes_wrong_is_a_code_error_answer() {
    let sc = tiny();
    let comp = composite(&sc, "code-mode");
    let cases = [
        ("throw new RangeError('too far')", "RangeError: too far"),
        ("while (true) {}", "time limit"),
        ("function f() { return f() + 1 } f()", "recursion too deep"),
        (
            "const a = []; for (;;) a.push(new Array(1 << 20).fill(1))",
            "out of memory",
        ),
        (
            "for (let i = 0; i < 100; i++) api.builtins.calculator({expression: '1+1'})",
            "more than 50 API calls",
        ),
        (
            "api.erp.cancel_order({})",
            "api.erp has: get_order, delete_order",
        ),
        ("api.erp.get_order({})", "invalid arguments"),
        ("api.erp.get_order('9921')", "takes one object of arguments"),
        ("api.hr.query({sql: 'DROP TABLE people'})", "read-only"),
        ("this is not javascript", "SyntaxError"),
    ];
    for (code, says) in cases {
        let r = resolve(&comp, &sc, "run_code", json!({ "code": code }));
        assert!(
            r.content.contains("code_error:") && r.content.contains(says),
            "{code}: {}",
            r.content
        );
        match &r.effect {
            Effect::Program { error, .. } => assert!(error.is_some(), "{code}"),
            e => panic!("{code}: {e:?}"),
        }
    }
    // A call that broke its schema is still a call the program made, with its errors.
    let r = resolve(
        &comp,
        &sc,
        "run_code",
        json!({"code": "api.erp.get_order({order_id: 7})"}),
    );
    let Effect::Program { calls, .. } = &r.effect else {
        panic!()
    };
    let Effect::Executed { schema_errors, .. } = &calls[0].effect else {
        panic!()
    };
    assert!(!schema_errors.is_empty());
    // A `run_code` without code is a malformed call, not a program.
    let r = resolve(&comp, &sc, "run_code", json!({}));
    assert!(matches!(
        r.effect,
        Effect::Error {
            malformed: true,
            ..
        }
    ));
    // Counted: a program that ended with an error is a protocol error.
    let o = run(
        &sc,
        "code-mode",
        &scripted(vec![program("while (true) {}")]),
        "refund",
    );
    assert_eq!(o.protocol.count("code_errors"), 1);
    assert_eq!(o.protocol.count("programs"), 1);
    assert!(o.protocol_errors() > 0);
}

/// The oracle writes one program per query, passing on what earlier calls return; the
/// lexical model searches with the query's words and calls its best-ranked function.
#[test]
fn the_mock_models_write_programs() {
    let hub = scenario::load(Path::new("scenarios/enterprise-hub.yaml")).unwrap();
    let oracle = model::build("oracle").unwrap();
    let mut flowed = 0;
    for mode in ["code-mode", "code-files"] {
        for q in &hub.queries {
            let o = run(&hub, mode, oracle.as_ref(), &q.id);
            assert!(o.score.exact, "{mode} {}", q.id);
            let programs: Vec<&str> = o
                .calls
                .iter()
                .filter(|c| c.tool == "run_code")
                .map(|c| c.arguments.as_str())
                .collect();
            assert!(programs.len() <= 1, "{mode} {}: one program", q.id);
            if programs
                .first()
                .is_some_and(|p| p.contains(": r0[") || p.contains(": r1["))
            {
                flowed += 1;
            }
        }
    }
    assert!(
        flowed > 0,
        "some program passes on an earlier call's result"
    );

    let lexical = model::build("lexical").unwrap();
    let q = &hub.queries[hub
        .queries
        .iter()
        .position(|q| q.id == "gh-issue-dark-mode")
        .unwrap()];
    let o = run(&hub, "code-mode", lexical.as_ref(), &q.id);
    let tools: Vec<&str> = o.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["search_api", "run_code", "api.github.create_issue"]);
    assert!(o.score.exact);
    // The search is the query's words.
    let search: Value = serde_json::from_str(&o.calls[0].arguments).unwrap();
    let text = q.text.to_lowercase();
    let words: Vec<&str> = search["query"].as_str().unwrap().split(' ').collect();
    assert!(
        words.len() >= 3 && words.iter().all(|w| text.contains(w)),
        "{words:?}"
    );
    // One call, in a program of one statement and a print.
    let code: Value = serde_json::from_str(&o.calls[1].arguments).unwrap();
    assert_eq!(code["code"].as_str().unwrap().matches("api.").count(), 1);
    let o = run(&hub, "code-files", lexical.as_ref(), &q.id);
    let tools: Vec<&str> = o.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "read_file",
            "run_code",
            "api.github.create_issue"
        ]
    );
    assert_eq!(
        o.calls[0].arguments,
        r#"{"path":"servers/github/index.ts"}"#
    );
    assert_eq!(o.protocol.count("files_read"), 2);
    assert!(o.score.exact);
}

/// A recorded code-mode run replays to the same outcomes.
#[test]
fn a_recorded_run_replays() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let args = |id: &str, model: &str| -> Vec<String> {
        [
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "code-mode",
            "--mode",
            "code-files",
            "--model",
            model,
            "--out",
            out,
            "--run-id",
            id,
            "--no-progress",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut a = args("rec", "oracle");
    a.push("--record".into());
    ok(&bin().args(&a).output().unwrap());
    let replay = format!("replay:{}", PathBuf::from(out).join("rec").display());
    ok(&bin().args(args("rep", &replay)).output().unwrap());
    let calls = |id: &str| -> Vec<Value> {
        std::fs::read_to_string(PathBuf::from(out).join(id).join("outcomes.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                json!([
                    v["query_id"],
                    v["mode"],
                    v["calls"],
                    v["score"],
                    v["tokens"]
                ])
            })
            .collect()
    };
    let (rec, rep) = (calls("rec"), calls("rep"));
    assert_eq!(rec.len(), 8);
    let sorted = |mut v: Vec<Value>| {
        v.sort_by_key(|x| x.to_string());
        v
    };
    assert_eq!(sorted(rec), sorted(rep));
}
