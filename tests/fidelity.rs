//! Fidelity to the seed system (FIM One): one test per behaviour of the compatibility
//! table in the README, and the token figures of its formats measured on the same
//! catalogs (o200k counts of what FIM One renders, taken from a reading of its source).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use discbench::catalog::Address;
use discbench::environment::Databases;
use discbench::model;
use discbench::scenario::{self, Scenario};
use discbench::strategy::{
    Composite, Cut, Effect, Mode, ProtocolConfig, ResultLimits, SelectionConfig, Templates,
    UnloadedCalls,
};
use discbench::tokens::{Counter, Encoding};
use discbench::wire::{Context, Response, ToolCall};
use serde_json::{json, Value};

mod support;
use support::scripted::{run_query, Scripted};

fn hub() -> Scenario {
    scenario::load(Path::new("scenarios/enterprise-hub.yaml")).unwrap()
}

fn tiny() -> Scenario {
    scenario::load(Path::new("fixtures/snapshot/tiny.yaml")).unwrap()
}

fn composite(sc: &Scenario, mode: &str, cfg: ProtocolConfig) -> Composite {
    Composite::new(
        &sc.catalog,
        sc.agent.instructions.as_deref(),
        Mode::parse(mode).unwrap(),
        &Arc::new(Templates::builtin()),
        cfg,
    )
    .unwrap()
}

fn call(
    c: &Composite,
    st: &mut discbench::strategy::State,
    dbs: &Databases,
    name: &str,
    args: Value,
) -> discbench::strategy::Resolution {
    c.resolve(&ToolCall::new("c", name, &args), st, dbs)
}

/// The captures of `fixtures/catalogs` that FIM One's figures were measured on, by file
/// stem. Captures added later (the Azure server's all-tools mode for the scale scenario,
/// the servers added to the sweep pool) are not among them.
const FIM_ONE_CAPTURES: [&str; 14] = [
    "azure-mcp",
    "chrome-devtools-mcp",
    "context7-mcp",
    "desktop-commander",
    "mcp-server-fetch",
    "mcp-server-git",
    "mcp-server-time",
    "mongodb-mcp-server",
    "notion-mcp-server",
    "playwright-mcp",
    "server-everything",
    "server-filesystem",
    "server-github",
    "server-memory",
];

/// A scenario with the captured MCP catalogs FIM One's figures were measured on.
fn all_captured_servers(dir: &Path) -> Scenario {
    let root = std::env::current_dir().unwrap().join("fixtures/catalogs");
    let files: Vec<PathBuf> = FIM_ONE_CAPTURES
        .iter()
        .map(|stem| root.join(format!("{stem}.tools.json")))
        .collect();
    let include: String = files
        .iter()
        .map(|p| {
            let name = p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace(".tools.json", "");
            format!("    - {{ path: {}, name: {name} }}\n", p.display())
        })
        .collect();
    let yaml = format!(
        "name: captured\ncatalog:\n  include:\n{include}queries:\n  - id: q\n    text: hello\n    expect: {{ calls: [] }}\n"
    );
    let path = dir.join("captured.yaml");
    std::fs::write(&path, yaml).unwrap();
    scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// `(measured, FIM One's)` is within `pct` percent.
fn near(what: &str, measured: usize, fim: usize, pct: f64) {
    let off = (measured as f64 - fim as f64) / fim as f64 * 100.0;
    assert!(
        off.abs() <= pct,
        "{what}: {measured} tokens against FIM One's {fim} ({off:+.1}%)"
    );
    println!("{what}: {measured} against {fim} ({off:+.1}%)");
}

/// FIM One's figures are its own renderings of these same catalogs (its meta-tools'
/// `discover` and its legacy database adapter, at commit 8bfe86d), counted with
/// o200k_base. The fetched formats carry no prose, so they match exactly; the legacy
/// tools' descriptions are discbench's wording, so they may differ by a few tokens.
#[test]
fn formats_cost_what_fim_ones_cost() {
    let counter = Counter::new(Encoding::O200kBase);
    let sc = hub();
    let dbs = Databases::build(&sc.catalog).unwrap();
    // Legacy database tools: the query tool carries the schema.
    let legacy = composite(&sc, "legacy", ProtocolConfig::default());
    for (db, fim) in [("hr_postgres", 1_643), ("analytics_db", 3_095)] {
        let n: usize = legacy
            .all_tools()
            .iter()
            .filter(|t| t.name.starts_with(&format!("{db}__")))
            .map(|t| counter.tool(t))
            .sum();
        near(&format!("legacy tools of {db}"), n, fim, 0.5);
    }
    // Fetched content of the progressive meta-tools.
    let prog = composite(&sc, "progressive", ProtocolConfig::default());
    let mut st = prog.new_state();
    for (tool, key, name, fim) in [
        ("database", "database", "hr_postgres", 1_575),
        ("database", "database", "analytics_db", 4_832),
        ("connector", "connector", "salesforce", 3_940),
        ("connector", "connector", "jira", 2_902),
    ] {
        let args = json!({"subcommand": "discover", key: name});
        let r = call(&prog, &mut st, &dbs, tool, args);
        let what = format!("{tool} discover {name}");
        near(&what, counter.count(&r.content), fim, 0.0);
    }
    // The meta-tools of tiny.yaml: discbench's wording, about FIM One's length (within
    // 6%: -4.0%, +4.5%, +0.4%, +5.1% when measured).
    let sc = tiny();
    let prog = composite(&sc, "progressive", ProtocolConfig::default());
    for (name, fim) in [
        ("read_skill", 75),
        ("connector", 201),
        ("database", 227),
        ("mcp", 198),
    ] {
        let t = prog.all_tools().iter().find(|t| t.name == name).unwrap();
        near(
            &format!("tiny {name} definition"),
            counter.tool(t),
            fim,
            6.0,
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = all_captured_servers(dir.path());
    assert_eq!(cap.catalog.mcp_servers.len(), 14);
    let prog = composite(&cap, "progressive", ProtocolConfig::default());
    let capdbs = Databases::build(&cap.catalog).unwrap();
    let mut st = prog.new_state();
    let total: usize = cap
        .catalog
        .mcp_servers
        .iter()
        .map(|s| {
            let r = call(
                &prog,
                &mut st,
                &capdbs,
                "mcp",
                json!({"subcommand": "discover", "server": s.name}),
            );
            counter.count(&r.content)
        })
        .sum();
    near("mcp discover, 14 servers", total, 103_873, 0.0);
}

fn select_call(names: &[&str]) -> Response {
    Response::call(vec![ToolCall::new(
        "s",
        "select_tools",
        &json!({ "tools": names }),
    )])
}

/// A hub query the keyword shortcut leaves to the model.
fn ambiguous_query(sc: &Scenario, comp: &Composite) -> String {
    sc.queries
        .iter()
        .find(|q| comp.selection_shortcut(&q.text).is_none())
        .expect("some query needs the model")
        .id
        .clone()
}

// 1. Selection runs in every preset (legacy included); `selection=off` turns it off.
#[test]
fn selection_runs_in_every_preset() {
    let sc = hub();
    for preset in ["progressive", "legacy", "inline"] {
        assert!(
            composite(&sc, preset, ProtocolConfig::default()).selection_applies(),
            "{preset}"
        );
    }
    let off = composite(
        &sc,
        "skills=inline,connectors=legacy,databases=legacy,mcp=legacy,selection=off",
        ProtocolConfig::default(),
    );
    assert!(!off.selection_applies());
    // The threshold and maximum are settings (and read REACT_TOOL_SELECTION_*).
    let high = ProtocolConfig {
        selection: SelectionConfig {
            threshold: 500,
            max: 6,
        },
        ..ProtocolConfig::default()
    };
    assert!(!composite(&sc, "legacy", high).selection_applies());
}

// 2. The selection request: forced call, then plain text, then one retry; the answer
// capped, read_skill / web_search pinned.
#[test]
fn the_selection_step_degrades_as_fim_ones_does() {
    let sc = hub();
    let comp = composite(&sc, "progressive", ProtocolConfig::default());
    let q = ambiguous_query(&sc, &comp);
    let backend = Scripted {
        select: vec![
            Response::say("I would pick the Jira connector."),
            Response::say("connector"),
            Response::say("{\"tools\": [\"connector\", \"nope\", \"mcp\", \"database\", \"a\", \"b\", \"calculator\"]}"),
        ],
        ..Scripted::default()
    };
    let o = run_query(&sc, "progressive", ProtocolConfig::default(), &backend, &q);
    let seen = backend.seen.lock().unwrap().clone();
    let selects: Vec<&Context> = seen.iter().filter(|(s, _)| *s).map(|(_, c)| c).collect();
    assert_eq!(selects.len(), 3);
    // The forced call: one `select_tools` function, forced; a short system message; the
    // query and a compact catalog in the user message.
    let forced = selects[0];
    assert_eq!(forced.tool_choice.as_deref(), Some("select_tools"));
    assert_eq!(forced.tools.len(), 1);
    assert_eq!(
        forced.tools[0].parameters["properties"]["tools"]["type"],
        "array"
    );
    assert!(forced.system.len() < 120, "{}", forced.system);
    let user = forced.query();
    assert!(user.contains(&sc.queries.iter().find(|x| x.id == q).unwrap().text));
    let lines: Vec<&str> = user.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(lines.len(), comp.all_tools().len());
    for l in &lines {
        let (_, d) = l.split_once(": ").unwrap();
        assert!(d.chars().count() <= 80 && !d.contains('\n'), "{l}");
    }
    // Then plain text, no tools; then the same asked again after the unreadable answer.
    assert!(selects[1].tools.is_empty() && selects[1].tool_choice.is_none());
    assert_eq!(selects[2].messages.len(), 3);
    let sel = o.selection.as_ref().unwrap();
    assert_eq!((sel.requests, sel.shortcut), (3, false));
    // The first 6 names are kept (unknown ones dropped after the cap, so `calculator`,
    // 7th, is not), and web_search and read_skill are pinned.
    let mut kept = sel.selected.clone().unwrap();
    kept.sort();
    assert_eq!(
        kept,
        ["connector", "database", "mcp", "read_skill", "web_search"]
    );
    // Every selection request is in the ledger.
    let counter = Counter::new(Encoding::O200kBase);
    let sent: usize = selects.iter().map(|c| counter.context(c)).sum();
    assert!(
        o.tokens.selection > sent,
        "{} vs {sent}",
        o.tokens.selection
    );
}

#[test]
fn a_model_with_a_json_mode_is_asked_in_it_before_plain_text() {
    let sc = hub();
    let comp = composite(&sc, "progressive", ProtocolConfig::default());
    let q = ambiguous_query(&sc, &comp);
    let backend = Scripted {
        select: vec![
            Response::say("no call"),
            Response::say("still prose"),
            Response::say("```json\n{\"tools\": [\"connector\"]}\n```"),
        ],
        json: true,
        ..Scripted::default()
    };
    let o = run_query(&sc, "progressive", ProtocolConfig::default(), &backend, &q);
    let seen = backend.seen.lock().unwrap().clone();
    let selects: Vec<&Context> = seen.iter().filter(|(s, _)| *s).map(|(_, c)| c).collect();
    assert_eq!(selects.len(), 3, "forced, JSON mode, JSON mode again");
    assert!(!selects[0].json_mode && selects[1].json_mode && selects[2].json_mode);
    assert!(selects[1].tools.is_empty());
    assert_eq!(o.selection.as_ref().unwrap().requests, 3);
    assert_eq!(
        o.selection.as_ref().unwrap().selected.as_deref(),
        Some(
            &[
                "connector".to_string(),
                "read_skill".into(),
                "web_search".into()
            ][..]
        )
    );
}

#[test]
fn pinned_and_loaded_tools_come_in_fim_ones_order() {
    let sc = hub();
    let comp = composite(&sc, "legacy", ProtocolConfig::default());
    let q = ambiguous_query(&sc, &comp);
    let names: Vec<String> = comp.all_tools().iter().map(|t| t.name.clone()).collect();
    // FIM One's registry order: built-ins first, then the connector section; MCP last.
    let first_builtin = names.iter().position(|n| n == "web_search").unwrap();
    let first_connector = names
        .iter()
        .position(|n| n.starts_with("salesforce__"))
        .unwrap();
    let first_database = names
        .iter()
        .position(|n| n.starts_with("hr_postgres__"))
        .unwrap();
    let first_mcp = names
        .iter()
        .position(|n| n.starts_with("github__"))
        .unwrap();
    assert!(
        first_builtin < first_connector
            && first_connector < first_database
            && first_database < first_mcp
    );
    let jira = names
        .iter()
        .find(|n| n.starts_with("jira__"))
        .unwrap()
        .clone();
    let slack = names
        .iter()
        .find(|n| n.starts_with("slack__"))
        .unwrap()
        .clone();
    let backend = Scripted {
        select: vec![select_call(&[&slack, &jira])],
        act: vec![Response::call(vec![ToolCall::new(
            "1",
            "request_tools",
            &json!({"tool_names": ["calculator"]}),
        )])],
        ..Scripted::default()
    };
    run_query(&sc, "legacy", ProtocolConfig::default(), &backend, &q);
    let seen = backend.seen.lock().unwrap().clone();
    let acts: Vec<Vec<String>> = seen
        .iter()
        .filter(|(s, _)| !s)
        .map(|(_, c)| c.tools.iter().map(|t| t.name.clone()).collect())
        .collect();
    // The selection in catalog order, the pinned web_search, request_tools, then what
    // it loaded.
    assert_eq!(
        acts[0],
        [
            jira.clone(),
            slack.clone(),
            "web_search".into(),
            "request_tools".into()
        ]
    );
    assert_eq!(
        acts[1],
        [
            jira,
            slack,
            "web_search".into(),
            "request_tools".into(),
            "calculator".into()
        ]
    );
}

#[test]
fn empty_connectors_servers_and_databases_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "name: empty\ncatalog:\n  connectors:\n    - {name: crm, description: CRM., actions: []}\n  mcp_servers:\n    - {name: idle, tools: []}\nqueries:\n  - id: q\n    text: hello\n    expect: { calls: [] }\n";
    std::fs::write(dir.path().join("empty.yaml"), yaml).unwrap();
    let sc = scenario::load(&dir.path().join("empty.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let dbs = Databases::build(&sc.catalog).unwrap();
    let comp = composite(&sc, "progressive", ProtocolConfig::default());
    let mut st = comp.new_state();
    let connector = comp
        .all_tools()
        .iter()
        .find(|t| t.name == "connector")
        .unwrap();
    assert!(
        connector.description.contains("  - crm: CRM. (no actions)"),
        "{}",
        connector.description
    );
    for (tool, args, says) in [
        (
            "connector",
            json!({"subcommand": "discover", "connector": "crm"}),
            "no actions",
        ),
        (
            "mcp",
            json!({"subcommand": "discover", "server": "idle"}),
            "no tools",
        ),
    ] {
        let r = call(&comp, &mut st, &dbs, tool, args);
        assert!(r.content.contains(says), "{tool}: {}", r.content);
        assert!(matches!(r.effect, Effect::Fetched { ref addresses, .. } if addresses.is_empty()));
    }
}

#[test]
fn an_empty_answer_keeps_every_tool_and_the_shortcut_asks_no_model() {
    let sc = hub();
    let comp = composite(&sc, "legacy", ProtocolConfig::default());
    let q = ambiguous_query(&sc, &comp);
    let backend = Scripted {
        select: vec![select_call(&[])],
        ..Scripted::default()
    };
    let o = run_query(&sc, "legacy", ProtocolConfig::default(), &backend, &q);
    let sel = o.selection.as_ref().unwrap();
    assert_eq!((sel.requests, sel.selected.as_ref()), (1, None));
    assert_eq!(
        o.requests[0].tools_visible,
        comp.all_tools().len(),
        "every tool, no request_tools"
    );

    let shortcut = sc
        .queries
        .iter()
        .find(|q| comp.selection_shortcut(&q.text).is_some())
        .expect("the shortcut decides some hub queries");
    let backend = Scripted::default();
    let o = run_query(
        &sc,
        "legacy",
        ProtocolConfig::default(),
        &backend,
        &shortcut.id,
    );
    let sel = o.selection.as_ref().unwrap();
    assert!(sel.shortcut && sel.requests == 0 && sel.selected.is_some());
    assert!(backend
        .seen
        .lock()
        .unwrap()
        .iter()
        .all(|(select, _)| !select));
    assert_eq!(o.tokens.selection, 0);
}

// 4. A tool that exists but was not loaded runs, and is counted; refusing is an option.
#[test]
fn calls_of_tools_not_loaded_run_and_are_counted() {
    let sc = hub();
    let comp = composite(&sc, "legacy", ProtocolConfig::default());
    let q = ambiguous_query(&sc, &comp);
    let target = comp
        .all_tools()
        .iter()
        .find(|t| t.name.starts_with("jira__"))
        .unwrap()
        .name
        .clone();
    let backend = Scripted {
        select: vec![select_call(&["web_search"])],
        act: vec![Response::call(vec![ToolCall::new(
            "a",
            &target,
            &json!({}),
        )])],
        ..Scripted::default()
    };
    let o = run_query(&sc, "legacy", ProtocolConfig::default(), &backend, &q);
    assert!(o.calls[0].unloaded);
    assert!(o.calls[0].address.is_some(), "it ran");
    assert_eq!((o.protocol.unloaded_calls, o.protocol.not_loaded), (1, 0));
    let strict = ProtocolConfig {
        unloaded: UnloadedCalls::Refuse,
        ..ProtocolConfig::default()
    };
    let o = run_query(&sc, "legacy", strict, &backend, &q);
    assert!(o.calls[0].address.is_none(), "refused");
    assert_eq!((o.protocol.unloaded_calls, o.protocol.not_loaded), (0, 1));
}

// 5. Legacy database tools: `table_name`, and the schema in the query tool.
#[test]
fn legacy_database_tools_as_fim_ones() {
    let sc = tiny();
    let comp = composite(&sc, "legacy", ProtocolConfig::default());
    let tool = |n: &str| {
        comp.all_tools()
            .iter()
            .find(|t| t.name == n)
            .unwrap()
            .clone()
    };
    let describe = tool("hr__describe_table");
    let p = &describe.parameters["properties"]["table_name"];
    assert_eq!(p["type"], "string");
    assert!(p.get("enum").is_none());
    let query = tool("hr__query");
    assert!(query
        .description
        .ends_with(":\n  people(id INTEGER PK, name TEXT /* Full name. */) -- Employees."));
    assert!(query.description.contains("1000 rows"));
    let dbs = Databases::build(&sc.catalog).unwrap();
    let mut st = comp.new_state();
    let r = call(
        &comp,
        &mut st,
        &dbs,
        "hr__describe_table",
        json!({"table_name": "people"}),
    );
    let v: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(
        v["columns"][0],
        json!({"column_name": "id", "data_type": "INTEGER", "is_primary_key": true, "is_nullable": false})
    );
    // The database is shown up front: a query needs no describe first.
    let r = call(
        &comp,
        &mut st,
        &dbs,
        "hr__query",
        json!({"sql": "SELECT name FROM people"}),
    );
    assert!(matches!(r.effect, Effect::Executed { blind: false, .. }));
}

// 6. Meta-tool definitions.
#[test]
fn meta_tool_definitions_have_fim_ones_structure() {
    let sc = hub();
    let comp = composite(&sc, "progressive", ProtocolConfig::default());
    let tool = |n: &str| {
        comp.all_tools()
            .iter()
            .find(|t| t.name == n)
            .unwrap()
            .clone()
    };
    for (name, param) in [
        ("connector", "connector"),
        ("database", "database"),
        ("mcp", "server"),
    ] {
        let t = tool(name);
        let e: Vec<&str> = t.parameters["properties"][param]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut sorted = e.clone();
        sorted.sort();
        assert_eq!(e, sorted, "{name}: enum sorted");
        assert!(
            t.description.contains("\n\nIMPORTANT: "),
            "{name}: guidance line"
        );
        assert!(!t.description.contains("SQLite"), "{name}: no dialect");
        // Stub lines in FIM One's order of fields.
        let first = t.description.lines().nth(1).unwrap();
        assert!(first.starts_with("  - "), "{first}");
    }
    let mcp = tool("mcp");
    assert!(mcp.parameters["properties"].get("parameters").is_some());
    assert!(mcp.parameters["properties"].get("arguments").is_none());
    for s in &sc.catalog.mcp_servers {
        // `  - name: name (N tools: …)`: the server's own description is never shown.
        assert!(
            mcp.description.contains(&format!("  - {0}: {0} (", s.name)),
            "{}",
            s.name
        );
        if !s.description.is_empty() {
            assert!(
                !mcp.description.contains(s.description.trim()),
                "{}",
                s.description
            );
        }
    }
    let database = tool("database");
    assert!(
        database.description.contains(" ... (45 total))"),
        "{}",
        database.description
    );
    let read_skill = tool("read_skill");
    assert!(read_skill.parameters["properties"]["name"]
        .get("enum")
        .is_none());
    // Skill stubs: 120 characters in all, or SKILL_STUB_DESC_LENGTH's.
    for (len, cfg) in [
        (120, ProtocolConfig::default()),
        (
            60,
            ProtocolConfig {
                skill_stub_chars: 60,
                ..ProtocolConfig::default()
            },
        ),
    ] {
        let c = composite(&sc, "progressive", cfg);
        let longest = c
            .system()
            .lines()
            .filter_map(|l| l.strip_prefix("- **"))
            .filter_map(|l| l.split_once("**: "))
            .map(|(_, d)| d.chars().count())
            .max()
            .unwrap();
        assert_eq!(longest, len);
    }
    // Inline skills carry each skill's description.
    let inline = composite(&sc, "inline", ProtocolConfig::default());
    for s in &sc.catalog.skills {
        assert!(inline
            .system()
            .contains(&format!("### {}\n{}\n", s.name, s.description.trim())));
    }
}

// 7. Fetched content.
#[test]
fn fetched_content_in_fim_ones_formats() {
    let sc = tiny();
    let dbs = Databases::build(&sc.catalog).unwrap();
    let comp = composite(&sc, "progressive", ProtocolConfig::default());
    let mut st = comp.new_state();
    let mut ask = |tool: &str, args: Value| call(&comp, &mut st, &dbs, tool, args);
    let r = ask("mcp", json!({"subcommand": "discover", "server": "github"}));
    assert!(r.content.starts_with(
        "Server: github\nDescription: github\nTools (1):\n\n  create_issue:\n    description: Open an issue in a repository.\n    parameters: {\n  \"type\": \"object\",\n"
    ), "{}", r.content);
    assert!(r.content.ends_with("}\n"));
    let r = ask(
        "database",
        json!({"subcommand": "list_tables", "database": "hr"}),
    );
    assert_eq!(
        r.content,
        "[\n  {\n    \"table_name\": \"people\",\n    \"description\": \"Employees.\",\n    \"column_count\": 2\n  }\n]"
    );
    let r = ask(
        "database",
        json!({"subcommand": "discover", "database": "hr"}),
    );
    assert_eq!(
        r.content,
        "Database: hr\nTables (1):\n\n  people -- Employees.\n    Columns:\n      id INTEGER PK NOT NULL\n      name TEXT /* Full name. */\n"
    );
    let r = ask(
        "database",
        json!({"subcommand": "query", "database": "hr", "sql": "SELECT name FROM people"}),
    );
    let v: Value = serde_json::from_str(&r.content).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["columns", "rows", "row_count", "execution_time_ms"]);
    assert!(r
        .content
        .starts_with("{\n  \"columns\": [\n    \"name\"\n  ],"));
    // The row limit is a setting; past it the answer says so.
    let one = composite(
        &sc,
        "progressive",
        ProtocolConfig {
            row_limit: 1,
            ..ProtocolConfig::default()
        },
    );
    let r = call(
        &one,
        &mut one.new_state(),
        &dbs,
        "database",
        json!({"subcommand": "query", "database": "hr", "sql": "SELECT 1 UNION ALL SELECT 2"}),
    );
    let v: Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(
        (v["row_count"].clone(), v["truncated"].clone()),
        (json!(1), json!(true))
    );
    assert!(v["note"].as_str().unwrap().contains('1'));
}

// 8. Results: truncation of connector and MCP answers, and the per-query budget.
#[test]
fn results_are_truncated_and_budgeted() {
    let dir = tempfile::tempdir().unwrap();
    let items: Vec<Value> = (0..12).map(|i| json!({"id": i})).collect();
    let yaml = format!(
        "name: big\ncatalog:\n  connectors:\n    - name: crm\n      description: CRM.\n      actions:\n        - name: list_contacts\n          description: List contacts.\n          parameters: {{type: object, properties: {{}}}}\n          response: {}\nqueries:\n  - id: q\n    text: list contacts\n    expect: {{ calls: [connector:crm/list_contacts] }}\n",
        Value::Array(items)
    );
    std::fs::write(dir.path().join("big.yaml"), yaml).unwrap();
    let sc = scenario::load(&dir.path().join("big.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let dbs = Databases::build(&sc.catalog).unwrap();
    for mode in ["progressive", "legacy"] {
        let comp = composite(&sc, mode, ProtocolConfig::default());
        let mut st = comp.new_state();
        let r = if mode == "legacy" {
            call(&comp, &mut st, &dbs, "crm__list_contacts", json!({}))
        } else {
            call(
                &comp,
                &mut st,
                &dbs,
                "connector",
                json!({"subcommand": "execute", "connector": "crm", "action": "list_contacts"}),
            )
        };
        assert!(
            r.content
                .contains("\n\n[10 of 12 items shown. Each item has keys: ['id']."),
            "{mode}: {}",
            r.content
        );
        let shown: Vec<Value> =
            serde_json::from_str(r.content.split("\n\n[").next().unwrap()).unwrap();
        assert_eq!(shown.len(), 10);
        let loose = ProtocolConfig {
            results: ResultLimits {
                connector: Cut {
                    max_items: 20,
                    ..Cut::default()
                },
                ..ResultLimits::default()
            },
            ..ProtocolConfig::default()
        };
        let comp = composite(&sc, mode, loose);
        let r = if mode == "legacy" {
            call(
                &comp,
                &mut comp.new_state(),
                &dbs,
                "crm__list_contacts",
                json!({}),
            )
        } else {
            call(
                &comp,
                &mut comp.new_state(),
                &dbs,
                "connector",
                json!({"subcommand": "execute", "connector": "crm", "action": "list_contacts"}),
            )
        };
        assert!(!r.content.contains("items shown"), "configurable");
    }
    // The budget: two results of 12 items (~100 characters each), with room for one.
    let backend = Scripted {
        act: vec![
            Response::call(vec![ToolCall::new("1", "crm__list_contacts", &json!({}))]),
            Response::call(vec![ToolCall::new("2", "crm__list_contacts", &json!({}))]),
        ],
        ..Scripted::default()
    };
    let tight = ProtocolConfig {
        results: ResultLimits {
            budget_tokens: 40,
            connector: Cut {
                max_items: 20,
                ..Cut::default()
            },
            ..ResultLimits::default()
        },
        ..ProtocolConfig::default()
    };
    run_query(&sc, "legacy", tight, &backend, "q");
    let seen = backend.seen.lock().unwrap().clone();
    let last = &seen.last().unwrap().1;
    let results: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            discbench::wire::Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert!(!results[0].contains("[Cut:"), "{}", results[0]);
    assert!(results[1].contains("over their budget"), "{}", results[1]);
}

// 9. Names that clash after sanitising load, and score on the original addresses.
#[test]
fn clashing_names_are_made_unique() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "name: clash\ncatalog:\n  mcp_servers:\n    - name: Asset_Price_MCP\n      tools:\n        - {name: get_price, description: Price of an asset., inputSchema: {type: object, properties: {symbol: {type: string}}, required: [symbol]}}\n    - name: Asset Price MCP\n      tools:\n        - {name: get_price, description: Price of an asset (other server)., inputSchema: {type: object, properties: {symbol: {type: string}}, required: [symbol]}}\nqueries:\n  - id: q\n    text: Price of BTC from the other server\n    expect:\n      calls:\n        - {address: 'mcp:Asset Price MCP/get_price', args: {symbol: [BTC]}}\n";
    std::fs::write(dir.path().join("clash.yaml"), yaml).unwrap();
    let sc = scenario::load(&dir.path().join("clash.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let legacy = composite(&sc, "legacy", ProtocolConfig::default());
    let names: Vec<&str> = legacy.all_tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names[0], "Asset_Price_MCP__get_price");
    assert!(
        names[1].starts_with("Asset_Price_MCP__get_price_"),
        "{names:?}"
    );
    let prog = composite(&sc, "progressive", ProtocolConfig::default());
    assert_eq!(
        prog.all_tools()[0].parameters["properties"]["server"]["enum"],
        json!(["Asset Price MCP", "Asset_Price_MCP"])
    );
    let oracle = model::build("oracle").unwrap();
    for mode in ["legacy", "progressive"] {
        let o = run_query(&sc, mode, ProtocolConfig::default(), oracle.as_ref(), "q");
        assert!(o.score.exact, "{mode}: {:?}", o.calls);
        assert_eq!(
            o.score.predicted,
            [Address::Mcp("Asset Price MCP".into(), "get_price".into())]
        );
    }
}
