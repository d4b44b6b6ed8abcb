//! Scoring, end to end: one episode's calls against its expectation.

use super::args::type_ok;
use super::*;
use crate::catalog::Address;
use serde_json::json;
use serde_json::Value;
use std::collections::BTreeMap;

fn record(turn: usize, effect: &str, address: Address, skills: &[&str]) -> CallRecord {
    CallRecord {
        request: turn,
        tool: if effect == "fetched" {
            "read_skill"
        } else {
            "erp__get_order"
        }
        .into(),
        arguments: "{}".into(),
        effect: match effect {
            "fetched" => CallEffect::Fetched,
            "executed" => CallEffect::Executed,
            _ => CallEffect::Error,
        },
        address: (effect == "executed").then(|| address.clone()),
        fetched: if effect == "fetched" {
            vec![address]
        } else {
            Vec::new()
        },
        error: None,
        schema_errors: Vec::new(),
        blind: false,
        args: (effect == "executed").then(|| json!({"order_id": "9921"})),
        skills_in_context: skills.iter().map(|s| s.to_string()).collect(),
        unloaded: false,
        cut: Vec::new(),
        malformed: false,
        event: None,
        program: None,
    }
}

#[test]
fn a_skill_read_after_acting_is_not_a_hit() {
    let sc = crate::scenario::load(std::path::Path::new("fixtures/snapshot/tiny.yaml")).unwrap();
    let dbs = Databases::build(&sc.catalog).unwrap();
    let q = &sc.queries[0];
    let skill = Address::Skill("Refund Processing".into());
    let order = Address::Connector("erp".into(), "get_order".into());
    let read_first = [
        record(1, "fetched", skill.clone(), &[]),
        record(2, "executed", order.clone(), &["Refund Processing"]),
    ];
    let s = score(
        &q.expect,
        &read_first,
        0,
        &["Refund Processing".into()],
        &sc.catalog,
        &dbs,
    );
    assert!(s.exact && s.first_call_correct && s.args_ok == Some(true));
    assert_eq!((s.precision, s.recall), (1.0, 1.0));

    let read_late = [
        record(1, "executed", order, &[]),
        record(2, "fetched", skill.clone(), &[]),
    ];
    let s = score(
        &q.expect,
        &read_late,
        0,
        &["Refund Processing".into()],
        &sc.catalog,
        &dbs,
    );
    assert!(!s.exact, "the SOP was not in context when the model acted");
    assert_eq!((s.precision, s.recall), (0.5, 0.5));
    assert!(s.predicted.contains(&skill));
}

#[test]
fn integers_are_not_floats() {
    let int = json!({"type": "integer"});
    assert!(type_ok(&int, &json!(3)));
    assert!(!type_ok(&int, &json!(3.0)));
    assert!(type_ok(&json!({"type": "number"}), &json!(3)));
}

#[test]
fn bfcl_string_standardization() {
    assert!(value_eq(
        &json!("San Francisco, CA"),
        &json!("san francisco ca")
    ));
    assert!(value_eq(&json!(9921), &json!(9921.0)));
    assert!(!value_eq(&json!("9921"), &json!(9921)));
}

#[test]
fn bfcl_checks_required_unknown_types_and_values() {
    let schema = json!({"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}, "required": ["id"]});
    let mut acc = BTreeMap::new();
    acc.insert("id".to_string(), vec![json!("A-1")]);
    assert!(bfcl_args_ok(&schema, &acc, &json!({"id": "a1"})));
    assert!(
        !bfcl_args_ok(&schema, &acc, &json!({"id": "b1"})),
        "wrong value"
    );
    assert!(
        !bfcl_args_ok(&schema, &acc, &json!({"n": 3})),
        "missing required"
    );
    assert!(
        !bfcl_args_ok(&schema, &acc, &json!({"id": "a1", "x": 1})),
        "unknown parameter"
    );
    assert!(
        !bfcl_args_ok(&schema, &acc, &json!({"id": "a1", "n": 1.5})),
        "wrong type"
    );
    let mut opt = BTreeMap::new();
    opt.insert("n".to_string(), vec![json!(3), json!("")]);
    assert!(
        bfcl_args_ok(&schema, &opt, &json!({"id": "x"})),
        "optional may be omitted"
    );
}

/// The tiny scenario's catalog with these queries (YAML list items).
fn with_queries(queries: &str) -> (tempfile::TempDir, crate::scenario::Scenario) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("snapshot")).unwrap();
    std::fs::create_dir_all(dir.path().join("invalid-support")).unwrap();
    // Three rows, so that order can matter.
    std::fs::write(
        dir.path().join("invalid-support/people.sql"),
        "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);\n\
             INSERT INTO people VALUES (1, 'Ada'), (2, 'Grace'), (3, 'Alan');\n",
    )
    .unwrap();
    let tiny = std::fs::read_to_string("fixtures/snapshot/tiny.yaml").unwrap();
    let head = &tiny[..tiny.find("queries:").unwrap()];
    let path = dir.path().join("snapshot/t.yaml");
    std::fs::write(&path, format!("{head}queries:\n{queries}")).unwrap();
    let sc = crate::scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    (dir, sc)
}

fn exec(turn: usize, address: &Address, args: Value) -> CallRecord {
    CallRecord {
        request: turn,
        tool: "t".into(),
        arguments: args.to_string(),
        effect: CallEffect::Executed,
        address: Some(address.clone()),
        fetched: Vec::new(),
        error: None,
        schema_errors: Vec::new(),
        blind: false,
        args: Some(args),
        skills_in_context: Vec::new(),
        unloaded: false,
        cut: Vec::new(),
        malformed: false,
        event: None,
        program: None,
    }
}

fn score_of(sc: &crate::scenario::Scenario, q: usize, calls: &[CallRecord]) -> Score {
    let dbs = Databases::build(&sc.catalog).unwrap();
    score(&sc.queries[q].expect, calls, 0, &[], &sc.catalog, &dbs)
}

fn order() -> Address {
    Address::Connector("erp".into(), "get_order".into())
}
fn calc() -> Address {
    Address::Builtin("calculator".into())
}
fn issue() -> Address {
    Address::Mcp("github".into(), "create_issue".into())
}

#[test]
fn allowed_calls_never_make_a_result_inexact() {
    let (_d, sc) = with_queries(
        r#"
  - id: q
    text: Open the crash issue.
    expect:
      calls: [{address: mcp:github/create_issue, args: {repo: [acme/app]}}]
      allow: [connector:erp/get_order]
"#,
    );
    let a = json!({"repo": "acme/app", "title": "x"});
    let s = score_of(
        &sc,
        0,
        &[
            exec(1, &order(), json!({"order_id": "1"})),
            exec(2, &issue(), a.clone()),
        ],
    );
    assert!(
        s.exact && s.first_call_correct && s.args_ok == Some(true),
        "{s:?}"
    );
    assert_eq!((s.precision, s.recall), (1.0, 1.0));
    // Only the allowed call: not exact, recall 0, but no miss either.
    let s = score_of(&sc, 0, &[exec(1, &order(), json!({"order_id": "1"}))]);
    assert!(!s.exact);
    assert_eq!((s.precision, s.recall, s.f1), (1.0, 0.0, 0.0));
    // Something neither expected nor allowed is a miss.
    let s = score_of(
        &sc,
        0,
        &[
            exec(1, &issue(), a),
            exec(2, &calc(), json!({"expression": "1"})),
        ],
    );
    assert!(!s.exact);
    assert_eq!(s.precision, 0.5);
}

#[test]
fn any_of_accepts_each_alternative_with_its_own_arguments() {
    let (_d, sc) = with_queries(
        r#"
  - id: q
    text: Work it out.
    expect:
      calls:
        - any_of:
            - {address: builtin:calculator, args: {expression: ["2+2"]}}
            - {address: mcp:github/create_issue, args: {title: ["four"]}}
"#,
    );
    let s = score_of(&sc, 0, &[exec(1, &calc(), json!({"expression": "2+2"}))]);
    assert!(s.exact && s.args_ok == Some(true));
    let s = score_of(
        &sc,
        0,
        &[exec(1, &issue(), json!({"repo": "a/b", "title": "four"}))],
    );
    assert!(s.exact && s.args_ok == Some(true));
    // The other alternative's arguments do not carry over.
    let s = score_of(
        &sc,
        0,
        &[exec(1, &issue(), json!({"repo": "a/b", "title": "2+2"}))],
    );
    assert!(s.exact && s.args_ok == Some(false));
}

#[test]
fn repeated_steps_need_distinct_calls_and_before_orders_steps() {
    let (_d, sc) = with_queries(
        r#"
  - id: twice
    text: Look up two orders.
    expect:
      calls:
        - {id: a, address: connector:erp/get_order, args: {order_id: ["1"]}}
        - {id: b, address: connector:erp/get_order, args: {order_id: ["2"]}}
  - id: ordered
    text: Look up the order, then open an issue.
    expect:
      calls:
        - {id: look, address: connector:erp/get_order}
        - {id: open, address: mcp:github/create_issue}
      before: [[look, open]]
  - id: counted
    text: Poll twice.
    expect:
      calls: [{address: connector:erp/get_order, count: 2}]
"#,
    );
    let one = |id: &str| exec(1, &order(), json!({"order_id": id}));
    let s = score_of(&sc, 0, &[one("1")]);
    assert!(!s.exact);
    assert_eq!(s.recall, 0.5);
    assert_eq!(s.args_ok, Some(false));
    let s = score_of(&sc, 0, &[one("2"), one("1")]);
    assert!(s.exact && s.args_ok == Some(true));
    let o = one("1");
    let i = exec(2, &issue(), json!({"repo": "a/b", "title": "t"}));
    assert!(score_of(&sc, 1, &[o.clone(), i.clone()]).exact);
    assert!(
        !score_of(&sc, 1, &[i, o]).exact,
        "before: the lookup comes first"
    );
    assert!(!score_of(&sc, 2, &[one("1")]).exact);
    assert!(score_of(&sc, 2, &[one("1"), one("1")]).exact);
}

#[test]
fn classic_expectations_score_as_before() {
    // Listed twice without v2 keys: addresses as a set, one call satisfies both.
    let (_d, sc) = with_queries(
        r#"
  - id: q
    text: Two orders.
    expect:
      calls:
        - {address: connector:erp/get_order, args: {order_id: ["1"]}}
        - {address: connector:erp/get_order, args: {order_id: ["1"]}}
"#,
    );
    assert!(sc.queries[0].expect.is_classic());
    let s = score_of(&sc, 0, &[exec(1, &order(), json!({"order_id": "1"}))]);
    assert!(s.exact && s.recall == 1.0);
}

#[test]
fn sql_is_ordered_and_narrow_only_when_the_expectation_says_so() {
    let (_d, sc) = with_queries(
        r#"
  - id: plain
    text: Names.
    expect:
      calls: [{address: database:hr/query, sql: SELECT name FROM people ORDER BY name}]
  - id: ordered
    text: Names, sorted.
    expect:
      calls: [{address: database:hr/query, sql: SELECT name FROM people ORDER BY name, ordered: true}]
  - id: wide
    text: Names.
    expect:
      calls: [{address: database:hr/query, sql: SELECT name FROM people, extra_columns: true}]
"#,
    );
    let db = Address::Database("hr".into());
    let q = |sql: &str| exec(1, &db, json!({"sql": sql}));
    let desc = q("SELECT name FROM people ORDER BY name DESC");
    assert_eq!(
        score_of(&sc, 0, std::slice::from_ref(&desc)).args_ok,
        Some(true),
        "ORDER BY alone does not demand order"
    );
    assert_eq!(score_of(&sc, 1, &[desc]).args_ok, Some(false));
    let wide = q("SELECT id, name FROM people");
    assert_eq!(
        score_of(&sc, 0, std::slice::from_ref(&wide)).args_ok,
        Some(false)
    );
    assert_eq!(score_of(&sc, 2, &[wide]).args_ok, Some(true));
    assert_eq!(
        score_of(&sc, 2, &[q("SELECT id FROM people")]).args_ok,
        Some(false)
    );
}

fn refused(error: crate::events::ProtocolError, malformed: bool) -> CallRecord {
    CallRecord {
        effect: CallEffect::Error,
        address: None,
        error: Some(error),
        args: None,
        malformed,
        ..exec(1, &order(), json!({}))
    }
}

#[test]
fn a_no_call_query_is_met_only_by_a_model_that_tried_no_call() {
    use crate::events::ProtocolError::{BadSubcommand, SchemaViolation, UnknownTarget};
    // The classic `calls: []` and a v2 one that allows a read.
    let (_d, sc) = with_queries(
        "  - {id: thanks, text: Thanks!, expect: {calls: []}}\n\
         \x20 - id: look\n    text: Thanks, that's all.\n    expect: {calls: [], allow: [connector:erp/get_order]}\n",
    );
    let dbs = Databases::build(&sc.catalog).unwrap();
    for q in &sc.queries {
        let judge = |calls: &[CallRecord], text_calls: usize| {
            score(&q.expect, calls, text_calls, &[], &sc.catalog, &dbs)
        };
        let s = judge(&[], 0);
        assert!(
            s.exact && s.abstain_ok == Some(true),
            "{}: nothing tried",
            q.id
        );
        // A call written as text, a call to an unknown tool, arguments that do not
        // parse: each tried to act.
        for (calls, text) in [
            (vec![], 1),
            (vec![refused(UnknownTarget, true)], 0),
            (vec![refused(SchemaViolation, true)], 0),
        ] {
            let s = judge(&calls, text);
            assert_eq!(s.abstain_ok, Some(false), "{}: {calls:?} {text}", q.id);
            assert!(!s.exact, "{}: {calls:?} {text}", q.id);
        }
        // A look that failed (a `discover` of a server that does not exist, a bad
        // subcommand) is not a call made.
        for e in [UnknownTarget, BadSubcommand] {
            let s = judge(&[refused(e, false)], 0);
            assert!(s.exact && s.abstain_ok == Some(true), "{}: {e:?}", q.id);
        }
    }
    // An allowed read stays neutral; an executed call that is not allowed is not an
    // abstention, as before.
    let look = &sc.queries[1];
    let read = exec(1, &order(), json!({"order_id": "9921"}));
    let s = score(
        &look.expect,
        std::slice::from_ref(&read),
        0,
        &[],
        &sc.catalog,
        &dbs,
    );
    assert!(s.exact && s.abstain_ok == Some(true));
    let s = score(&sc.queries[0].expect, &[read], 0, &[], &sc.catalog, &dbs);
    assert!(!s.exact && s.abstain_ok == Some(false));
}

#[test]
fn a_query_that_expects_calls_is_judged_on_its_calls_alone() {
    // Malformed attempts beside the right call are protocol errors, counted apart;
    // they do not change the selection metrics.
    let sc = crate::scenario::load(std::path::Path::new("fixtures/snapshot/tiny.yaml")).unwrap();
    let dbs = Databases::build(&sc.catalog).unwrap();
    let q = sc.queries.iter().find(|q| q.id == "issue").unwrap();
    let create = Address::Mcp("github".into(), "create_issue".into());
    let calls = [
        exec(
            1,
            &create,
            json!({"repo": "acme/app", "title": "Crash on start"}),
        ),
        refused(crate::events::ProtocolError::UnknownTarget, true),
    ];
    let s = score(&q.expect, &calls, 1, &[], &sc.catalog, &dbs);
    assert!(s.exact && s.abstain_ok.is_none());
}
