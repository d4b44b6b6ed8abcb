//! Real MCP both ways, with real processes: `import mcp` against a real server
//! installed from PyPI, and its failures (a command that does not exist, a server
//! that exits, hangs or answers garbage) with their exit codes and messages; `serve`
//! read back by discbench's own import under every mode, driven by the Python MCP
//! SDK's client under `mcp-resource` (and recorded and scored), two sessions at once
//! keeping separate authorizations, and malformed requests answered with JSON-RPC
//! errors. And the book's first guide (`docs/src/guide.md`), every command of it run
//! as written against that server and a local OpenAI-compatible endpoint.
//!
//! The Python packages (`tests/mcp/requirements.txt`, every version pinned) go into
//! a virtualenv under `CARGO_TARGET_TMPDIR/mcp-venv`, made once and kept while the
//! requirements stay the same. Without python3 or the package registry the tests
//! that need it say they were skipped; under `CI` that is a failure (`.ci/run` runs
//! on a machine with python3 and pip).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use discbench::serve::handler::Handler;
use discbench::serve::session::Session;
use discbench::serve::{ServeOptions, Served};
use discbench::strategy::{Mode, ProtocolConfig, Templates};
use discbench::tokens::{Counter, Encoding};
use serde_json::{json, Value};

#[path = "support/http_serve.rs"]
mod http_serve;
use http_serve::HttpServer;
#[path = "support/server.rs"]
mod server;

fn discbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_discbench"))
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The virtualenv holding the pinned Python packages, or `None` (the test then says
/// it was skipped) where it cannot be made outside CI.
fn venv() -> Option<&'static Path> {
    static VENV: OnceLock<Option<PathBuf>> = OnceLock::new();
    VENV.get_or_init(|| match make_venv() {
        Ok(p) => Some(p),
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the MCP tests need python3 and PyPI in CI: {why}"
            );
            None
        }
    })
    .as_deref()
}

fn make_venv() -> Result<PathBuf, String> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-venv");
    let wanted = std::fs::read_to_string(root().join("tests/mcp/requirements.txt"))
        .map_err(|e| e.to_string())?;
    let marker = dir.join("discbench-requirements.txt");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(dir);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| e.to_string())?;
    }
    let run = |c: &mut Command| -> Result<(), String> {
        let o = c.output().map_err(|e| format!("{c:?}: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("{c:?} failed: {}", text(&o)))
        }
    };
    run(Command::new("python3").arg("-m").arg("venv").arg(&dir))?;
    run(Command::new(dir.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "-r",
        ])
        .arg(root().join("tests/mcp/requirements.txt")))?;
    std::fs::write(&marker, wanted).map_err(|e| e.to_string())?;
    Ok(dir)
}

macro_rules! need_venv {
    () => {
        match venv() {
            Some(v) => v,
            None => {
                eprintln!(
                    "SKIPPED: python3 with pip and PyPI are needed to install tests/mcp/requirements.txt"
                );
                return;
            }
        }
    };
}

/// `mcp-server-time` from PyPI, imported, is the committed catalog byte for byte (it
/// was captured from that version, asking for protocol 2025-06-18, in UTC), and the
/// file it wrote validates as a dump scenarios can include.
#[test]
fn import_reproduces_the_committed_catalog_of_a_real_server() {
    let venv = need_venv!();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("time.tools.json");
    let o = discbench()
        .args(["import", "mcp", "--protocol-version", "2025-06-18", "--out"])
        .arg(&out)
        .arg("--")
        .arg(venv.join("bin/mcp-server-time"))
        .env("TZ", "Etc/UTC")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("mcp-time 2026.10.19 (2025-06-18): 2 tools"),
        "{}",
        text(&o)
    );
    let committed = std::fs::read(root().join("fixtures/catalogs/mcp-server-time.tools.json"));
    assert!(
        std::fs::read(&out).unwrap() == committed.unwrap(),
        "the import differs from fixtures/catalogs/mcp-server-time.tools.json"
    );
    let o = discbench().arg("validate").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));

    // `--name` renames the server and names the default file; `-` writes to stdout.
    let o = discbench()
        .current_dir(dir.path())
        .args(["import", "mcp", "--name", "clock", "--"])
        .arg(venv.join("bin/mcp-server-time"))
        .env("TZ", "Etc/UTC")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("clock.tools.json")).unwrap())
            .unwrap();
    assert_eq!(v["serverInfo"]["name"], "clock");
    // The newest version with a handshake is asked for by default; this server has it.
    assert_eq!(v["protocolVersion"], "2025-11-25");
    let o = discbench()
        .args(["import", "mcp", "--out", "-", "--"])
        .arg(venv.join("bin/mcp-server-time"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["tools"].as_array().unwrap().len(), 2);
}

/// A command that cannot start is bad input (exit 2); a server that exits early,
/// hangs or answers what is not MCP is an infrastructure failure (exit 3) within the
/// timeout, and the message carries the end of its stderr.
#[test]
fn import_failures_are_clear_and_bounded() {
    let import = |timeout: &str, script: &str| {
        let started = Instant::now();
        let o = discbench()
            .args(["import", "mcp", "--out", "-", "--timeout", timeout])
            .args(["--", "sh", "-c", script])
            .output()
            .unwrap();
        (o, started.elapsed())
    };
    let o = discbench()
        .args(["import", "mcp", "--", "/no/such/server"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("cannot start `/no/such/server`"),
        "{}",
        text(&o)
    );
    let o = discbench().args(["import", "mcp"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));

    let (o, _) = import(
        "10",
        "echo 'loading config' >&2; echo 'fatal: no token' >&2; exit 4",
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("exited (exit status: 4) before it finished answering"),
        "{t}"
    );
    assert!(t.contains("| fatal: no token"), "{t}");

    let (o, took) = import("1", "echo 'waiting forever' >&2; sleep 60");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("did not finish answering within 1 s"), "{t}");
    assert!(t.contains("| waiting forever"), "{t}");
    // The timeout, the grace after stdin closes, SIGTERM: nowhere near the sleep.
    assert!(took < Duration::from_secs(15), "took {took:?}");

    let (o, _) = import("10", "echo 'Server ready on stdio'; echo '{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":7}'; sleep 60");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("failed as an MCP server: initialize"), "{t}");
    assert!(
        t.contains(
            "1 line(s) to stdout that are not JSON-RPC, the first: \"Server ready on stdio\""
        ),
        "{t}"
    );
    assert!(o.stdout.is_empty(), "nothing is written on failure: {t}");
}

/// A scenario served in this process under `mode`, with default settings and no
/// recorder.
fn served(sc: discbench::scenario::Scenario, mode: Mode, templates: Templates) -> Arc<Served> {
    Arc::new(
        Served::new(
            sc,
            ServeOptions {
                mode,
                templates: Arc::new(templates),
                protocol: ProtocolConfig::default(),
                counter: Arc::new(Counter::new(Encoding::O200kBase)),
                query: None,
                model: None,
                recorder: None,
            },
        )
        .unwrap(),
    )
}

/// The tools, resources and instructions `serve` discloses for `tiny` under `mode`,
/// computed in this process through the library (the expectation of the round trip).
fn disclosed(mode: &str) -> (Value, Option<Value>, String) {
    let sc = discbench::scenario::load(&root().join("fixtures/snapshot/tiny.yaml")).unwrap();
    let served = served(sc, Mode::parse(mode).unwrap(), Templates::builtin());
    let mut s = Session::new(served.clone());
    let tools: Vec<Value> = s
        .list_tools()
        .into_iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.parameters}))
        .collect();
    let resources: Vec<Value> = s
        .list_resources()
        .into_iter()
        .map(|r| json!({"uri": r.uri, "name": r.name, "description": r.description, "mimeType": r.mime_type}))
        .collect();
    (
        Value::Array(tools),
        (!resources.is_empty()).then(|| Value::Array(resources)),
        served.composite.system().to_string(),
    )
}

/// discbench's own import, run against `discbench serve` as a real process, reads back
/// exactly what serve discloses, under every mode it serves.
#[test]
fn import_reads_back_what_serve_discloses_under_every_mode() {
    let tiny = root().join("fixtures/snapshot/tiny.yaml");
    for mode in ["legacy", "progressive", "inline", "mcp-resource"] {
        let o = discbench()
            .args(["import", "mcp", "--out", "-", "--"])
            .arg(env!("CARGO_BIN_EXE_discbench"))
            .arg("serve")
            .arg(&tiny)
            .args(["--mode", mode])
            .output()
            .unwrap();
        assert!(o.status.success(), "{mode}: {}", text(&o));
        let got: Value = serde_json::from_slice(&o.stdout).unwrap();
        let (tools, resources, instructions) = disclosed(mode);
        assert_eq!(got["tools"], tools, "{mode}: tools/list");
        assert_eq!(
            got.get("resources").cloned(),
            resources,
            "{mode}: resources/list"
        );
        assert_eq!(got["instructions"], instructions, "{mode}: instructions");
        assert_eq!(got["serverInfo"]["name"], "discbench-tiny");
        let names: Vec<&str> = got["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        let issue = got["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "github__create_issue");
        match mode {
            // Every MCP tool, connector action and database tool as its own tool.
            "legacy" => {
                for n in [
                    "erp__get_order",
                    "erp__delete_order",
                    "hr__query",
                    "github__create_issue",
                    "calculator",
                ] {
                    assert!(names.contains(&n), "legacy lists {n}: {names:?}");
                }
                assert_eq!(
                    issue.unwrap()["inputSchema"]["required"],
                    json!(["repo", "title"])
                );
            }
            // FIM One's meta-tools.
            "progressive" | "inline" => {
                for n in ["connector", "database", "mcp"] {
                    assert!(names.contains(&n), "{mode} lists {n}: {names:?}");
                }
                assert!(issue.is_none(), "{mode}: {names:?}");
            }
            // The guide's minimal tools/list: one sentence, an open schema, no
            // read_resource tool; the workflow is the resource's description.
            _ => {
                assert_eq!(
                    issue.unwrap()["inputSchema"],
                    json!({"type": "object", "additionalProperties": true})
                );
                assert!(!names.contains(&"read_resource"), "{names:?}");
                let r = &got["resources"][0];
                assert_eq!(r["uri"], "resource:///tool_descriptions");
                assert!(
                    r["description"].as_str().unwrap().contains("?tools="),
                    "{r}"
                );
            }
        }
    }
}

/// The Python MCP SDK's client (PyPI `mcp`) under `mcp-resource`: it lists, is refused
/// before reading (TOOL_DESCRIPTION_REQUIRED) and when reading without ?tools=
/// (MISSING_TOOL_SELECTION), reads, then calls successfully; the session, tied to the
/// query and recorded, is scored as an outcome `report` reads.
#[test]
fn python_sdk_client_follows_the_progressive_disclosure_protocol() {
    let venv = need_venv!();
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("served");
    let o = Command::new(venv.join("bin/python"))
        .arg(root().join("tests/mcp/client.py"))
        .args([
            "github__create_issue",
            r#"{"repo": "acme/app", "title": "Crash on start"}"#,
        ])
        .arg(env!("CARGO_BIN_EXE_discbench"))
        .arg("serve")
        .arg(root().join("fixtures/snapshot/tiny.yaml"))
        .args(["--mode", "mcp-resource", "--query", "issue", "--record"])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let seen: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(seen["server"], "discbench-tiny");
    let tool = &seen["tools"]["github__create_issue"];
    assert_eq!(tool["description"], "Open an issue in a repository.");
    assert_eq!(
        tool["input_schema"],
        json!({"type": "object", "additionalProperties": true})
    );
    assert_eq!(seen["resources"][0]["uri"], "resource:///tool_descriptions");

    let before = &seen["call_before_read"];
    assert_eq!(before["is_error"], true, "{before}");
    let refusal: Value = serde_json::from_str(before["text"].as_str().unwrap()).unwrap();
    assert_eq!(refusal["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");
    assert_eq!(
        refusal["error"]["resource_uri"],
        "resource:///tool_descriptions?tools=github__create_issue"
    );
    let bare: Value = serde_json::from_str(seen["read_without_tools"].as_str().unwrap()).unwrap();
    assert_eq!(bare["error"]["code"], "MISSING_TOOL_SELECTION");
    assert_eq!(
        bare["error"]["available_tools"],
        json!(["github__create_issue"])
    );
    let read: Value = serde_json::from_str(seen["read"].as_str().unwrap()).unwrap();
    assert_eq!(
        read["github__create_issue"]["inputSchema"]["required"],
        json!(["repo", "title"])
    );
    assert_eq!(
        read["github__create_issue"]["examples"][0]["input"]["repo"],
        "acme/app"
    );
    let after = &seen["call_after_read"];
    assert_eq!(after["is_error"], false, "{after}");
    assert_eq!(after["text"], r#"{"status":"ok"}"#);

    // The session was recorded and scored against the query `issue`.
    let lines = std::fs::read_to_string(runs.join("outcomes.jsonl")).unwrap();
    let outcomes: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(outcomes.len(), 1, "{lines}");
    let out = &outcomes[0];
    assert_eq!(out["scenario"], "tiny");
    assert_eq!(out["query_id"], "issue");
    assert_eq!(out["mode"], "mcp-resource");
    assert_eq!(out["model"], "client:mcp");
    assert_eq!(out["score"]["exact"], true, "{out}");
    assert_eq!(out["score"]["args_ok"], true, "{out}");
    assert_eq!(out["protocol"]["description_required"], 1, "{out}");
    assert_eq!(out["protocol"]["missing_tool_selection"], 1, "{out}");
    let calls: Vec<(&str, &str)> = out["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["effect"].as_str().unwrap()))
        .collect();
    assert_eq!(
        calls,
        [
            ("github__create_issue", "error"),
            ("read_resource", "error"),
            ("read_resource", "fetched"),
            ("github__create_issue", "executed"),
        ]
    );
    assert!(out["tokens"]["tool_defs"].as_u64().unwrap() > 0, "{out}");
    assert!(out["tokens"]["fetched"].as_u64().unwrap() > 0, "{out}");
    // The same reports as a run's.
    let o = discbench().arg("report").arg(&runs).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(runs.join("summary.json").is_file() && runs.join("index.html").is_file());
}

/// Two sessions of one served scenario at once, through rmcp in this process: what one
/// reads authorizes nothing for the other.
#[test]
fn concurrent_sessions_keep_separate_authorizations() {
    use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
    use rmcp::ServiceExt;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sc = discbench::scenario::load(&root().join("fixtures/snapshot/tiny.yaml")).unwrap();
    let served = served(
        sc,
        Mode::preset("mcp-resource").unwrap(),
        Templates::builtin(),
    );
    rt.block_on(async {
        let connect = || async {
            let (client_end, server_end) = tokio::io::duplex(1 << 16);
            let handler = Handler::new(served.clone());
            tokio::spawn(async move {
                let s = handler.serve(tokio::io::split(server_end)).await.unwrap();
                let _ = s.waiting().await;
            });
            ().serve(tokio::io::split(client_end)).await.unwrap()
        };
        let (a, b) = (connect().await, connect().await);
        let args: serde_json::Map<String, Value> =
            serde_json::from_value(json!({"repo": "acme/app", "title": "Crash"})).unwrap();
        let call =
            || CallToolRequestParams::new("github__create_issue").with_arguments(args.clone());
        a.peer()
            .read_resource(ReadResourceRequestParams::new(
                "resource:///tool_descriptions?tools=github__create_issue",
            ))
            .await
            .unwrap();
        // Both at once: a may call, b may not.
        let (ra, rb) = tokio::join!(a.peer().call_tool(call()), b.peer().call_tool(call()));
        let (ra, rb) = (ra.unwrap(), rb.unwrap());
        assert_eq!(ra.is_error, Some(false), "{ra:?}");
        assert_eq!(rb.is_error, Some(true), "{rb:?}");
        let refused = serde_json::to_string(&rb.content).unwrap();
        assert!(refused.contains("TOOL_DESCRIPTION_REQUIRED"), "{refused}");
        // And b's own read authorizes b.
        b.peer()
            .read_resource(ReadResourceRequestParams::new(
                "resource:///tool_descriptions?tools=github__create_issue",
            ))
            .await
            .unwrap();
        assert_eq!(
            b.peer().call_tool(call()).await.unwrap().is_error,
            Some(false)
        );
        a.cancel().await.unwrap();
        b.cancel().await.unwrap();
    });
}

/// Malformed requests to `discbench serve` get JSON-RPC errors and the server goes on;
/// stdout carries only JSON-RPC; closing stdin ends it cleanly (exit 0).
#[test]
fn malformed_requests_get_json_rpc_errors_never_a_crash() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_discbench"))
        .arg("serve")
        .arg(root().join("fixtures/snapshot/tiny.yaml"))
        .args(["--mode", "mcp-resource"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "this is not JSON",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"github__create_issue","arguments":"not an object"}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#,
    ];
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    // Read answers until every request has one (they may come in any order).
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut answers: Vec<Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(1..=7).all(|id| answers.iter().any(|a| a["id"] == id)) {
        let left = deadline.saturating_duration_since(Instant::now());
        let l = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("every request answered in time; got {answers:?}"));
        answers.push(
            serde_json::from_str(&l)
                .unwrap_or_else(|e| panic!("stdout is not JSON-RPC: {l:?}: {e}")),
        );
    }
    let by_id = |id: i64| answers.iter().find(|a| a["id"] == id).cloned();
    let code = |id: i64| by_id(id).and_then(|a| a["error"]["code"].as_i64());
    assert_eq!(code(2), Some(-32602), "unknown tool: {:?}", by_id(2));
    assert_eq!(code(3), Some(-32602), "bad params: {:?}", by_id(3));
    assert_eq!(code(4), Some(-32601), "unknown method: {:?}", by_id(4));
    assert_eq!(code(5), Some(-32002), "unknown resource: {:?}", by_id(5));
    assert!(
        by_id(6).is_some_and(|a| a.get("error").is_some()),
        "{:?}",
        by_id(6)
    );
    assert!(
        by_id(7).unwrap()["result"]["tools"]
            .as_array()
            .unwrap()
            .len()
            >= 5
    );
    // Closing stdin ends the server cleanly.
    drop(stdin);
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "serve did not exit after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("discbench serve: tiny under mcp-resource"),
        "{err}"
    );
}

/// Under legacy, calls are answered from the scenario's fixture responses and its
/// SQLite database; SIGTERM ends a served session like a client leaving: it is
/// recorded and scored, and the server exits 0.
#[test]
fn sigterm_records_the_session_and_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("served");
    let mut child = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .arg("serve")
        .arg(root().join("fixtures/snapshot/tiny.yaml"))
        .args([
            "--mode",
            "legacy",
            "--query",
            "issue",
            "--model",
            "raw-client",
            "--record",
        ])
        .arg(&runs)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for l in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"github__create_issue","arguments":{"repo":"acme/app","title":"Crash on start"}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"erp__get_order","arguments":{"order_id":"9921"}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hr__query","arguments":{"sql":"SELECT name FROM people"}}}"#,
    ] {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut answers: Vec<Value> = Vec::new();
    while answers.len() < 5 {
        let mut l = String::new();
        assert!(
            out.read_line(&mut l).unwrap() > 0,
            "serve closed stdout early"
        );
        answers.push(serde_json::from_str(&l).unwrap());
    }
    // Calls are answered as in a run: the scenario's fixture response, its SQLite rows.
    let answer = |id: i64| {
        let a = answers.iter().find(|a| a["id"] == id).unwrap();
        a["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let order: Value = serde_json::from_str(&answer(4)).unwrap();
    assert_eq!(order, json!({"order_id": "9921", "total": 84.5}));
    assert!(answer(5).contains("Ada"), "{}", answer(5));
    let o = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let line = std::fs::read_to_string(runs.join("outcomes.jsonl")).unwrap();
    let o: Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(o["model"], "raw-client");
    assert_eq!(o["mode"], "legacy");
    // The expected call, and two the query did not ask for: scored as in a run.
    assert_eq!(o["score"]["recall"], 1.0, "{o}");
    assert_eq!(o["score"]["precision"], 1.0 / 3.0, "{o}");
    assert_eq!(o["score"]["exact"], false, "{o}");
    assert_eq!(o["calls"].as_array().unwrap().len(), 3, "{o}");
    // Legacy disclosed every tool up front, counted once.
    assert!(o["tokens"]["tool_defs"].as_u64().unwrap() > 100, "{o}");
    drop(stdin);
}

/// Streamable HTTP both ways, with real processes: `serve --transport http` is read
/// back by `import mcp --url` exactly as over stdio; two Python SDK clients, one after
/// the other on one server, each name the query in the URL and each is refused before
/// its own read (authorizations are per session, not per server); SIGTERM stops the
/// server with exit 0, and both sessions are recorded, scored, as repeats 0 and 1.
#[test]
fn streamable_http_both_ways() {
    let venv = need_venv!();
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("served");
    let server = HttpServer::start(
        &root().join("fixtures/snapshot/tiny.yaml"),
        &["--mode", "mcp-resource"],
        Some(&runs),
    );
    let url = server.url.clone();

    let o = discbench()
        .args(["import", "mcp", "--out", "-", "--url", &url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let over_http: Value = serde_json::from_slice(&o.stdout).unwrap();
    let (tools, resources, instructions) = disclosed("mcp-resource");
    assert_eq!(over_http["tools"], tools);
    assert_eq!(over_http.get("resources").cloned(), resources);
    assert_eq!(over_http["instructions"], instructions);

    let client = || {
        let o = Command::new(venv.join("bin/python"))
            .arg(root().join("tests/mcp/client.py"))
            .args([
                "github__create_issue",
                r#"{"repo": "acme/app", "title": "Crash on start"}"#,
            ])
            .arg(format!("{url}?query=issue"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    for seen in [client(), client()] {
        assert_eq!(seen["call_before_read"]["is_error"], true, "{seen}");
        assert_eq!(seen["call_after_read"]["is_error"], false, "{seen}");
    }

    let (status, rest) = server.stop();
    assert!(status.success(), "{status}: {rest}");
    let lines = std::fs::read_to_string(runs.join("outcomes.jsonl")).unwrap();
    let outcomes: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut repeats: Vec<u64> = outcomes
        .iter()
        .map(|o| o["repeat"].as_u64().unwrap())
        .collect();
    repeats.sort();
    assert_eq!(repeats, [0, 1], "{lines}");
    for o in &outcomes {
        assert_eq!(o["query_id"], "issue");
        assert_eq!(o["score"]["exact"], true, "{o}");
        assert_eq!(o["protocol"]["description_required"], 1, "{o}");
    }
}

/// One raw MCP session over Streamable HTTP, as a client that is not rmcp speaks it:
/// every message a POST, answers as JSON or SSE, the session id sent back.
struct RawSession {
    client: reqwest::Client,
    url: String,
    session: Option<String>,
    next: i64,
}

impl RawSession {
    fn new(client: &reqwest::Client, url: &str) -> RawSession {
        RawSession {
            client: client.clone(),
            url: url.to_string(),
            session: None,
            next: 1,
        }
    }

    /// Posts `body`; the status and the JSON-RPC messages of the answer.
    async fn post(&mut self, body: Value) -> (u16, Vec<Value>) {
        let mut req = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(s) = &self.session {
            req = req
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", "2025-11-25");
        }
        let resp = req.send().await.unwrap();
        if let Some(s) = resp.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap().to_string());
        }
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let mut out = Vec::new();
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            out.push(v);
        } else {
            for l in text.lines() {
                if let Some(d) = l.strip_prefix("data:") {
                    if let Ok(v) = serde_json::from_str::<Value>(d.trim()) {
                        out.push(v);
                    }
                }
            }
        }
        (status, out)
    }

    /// A request; the answer's `result` (or its `error`).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let (status, msgs) = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = msgs
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{method}: no answer (HTTP {status})"));
        answer
            .get("result")
            .or_else(|| answer.get("error"))
            .cloned()
            .unwrap()
    }

    async fn open(&mut self) -> Value {
        let init = self
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw-http", "version": "1"}}),
            )
            .await;
        let (status, _) = self
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(status, 202);
        init
    }

    async fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
            .await
    }

    async fn close(&mut self) -> u16 {
        let s = self.session.clone().unwrap();
        self.client
            .delete(&self.url)
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The HTTP server answers only at its endpoint (404 elsewhere), refuses a body past
/// `--max-body` (413), answers a body that is not JSON with a JSON-RPC parse error
/// and JSON that is no JSON-RPC message with an invalid-request error (both 400, as
/// the transport says), ends a session idle past `--idle-timeout` (recorded; its id
/// is then unknown, 404), and serves the next session as the first.
#[test]
fn http_server_holds_its_endpoint_limits_and_idle_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("served");
    let server = HttpServer::start(
        &root().join("fixtures/snapshot/tiny.yaml"),
        &[
            "--mode",
            "legacy",
            "--max-body",
            "4096",
            "--idle-timeout",
            "1",
        ],
        Some(&runs),
    );
    let url = server.url.clone();
    let base = url.trim_end_matches("/mcp").to_string();
    runtime().block_on(async {
        let client = reqwest::Client::new();
        for (method, path) in [
            ("GET", "/"),
            ("POST", "/"),
            ("POST", "/mcp/tools"),
            ("GET", "/sse"),
            ("DELETE", "/other"),
            ("POST", "/MCP"),
        ] {
            let r = client
                .request(method.parse().unwrap(), format!("{base}{path}"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 404, "{method} {path}");
        }
        // Found by fuzzing: a body the server refuses unread made the client see a
        // reset connection instead of the 404; it is drained first.
        for n in [6_000, 60_000] {
            let r = client
                .post(format!("{base}/"))
                .body("[".repeat(n))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 404, "a {n}-byte body");
        }
        // And a method rmcp refuses, with a body it would not read.
        let r = client
            .put(&url)
            .header("content-type", "application/json")
            .body("x".repeat(100_000))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 405);
        let mut raw = RawSession::new(&client, &url);
        let (status, msgs) = raw.post(Value::String("x".into())).await;
        // A JSON string is JSON but no JSON-RPC message.
        assert_eq!((status, msgs[0]["error"]["code"].as_i64()), (400, Some(-32600)));
        let r = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body("{this is not json")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], -32700, "{v}");
        assert_eq!(v["id"], Value::Null, "{v}");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        let (status, msgs) = raw
            .post(json!({"jsonrpc": "2.0", "id": 9, "result": "not a request"}))
            .await;
        assert!(status == 400 || status == 202, "{status} {msgs:?}");
        // Past the body limit, announced or not.
        let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x".repeat(5000)}});
        let (status, _) = raw.post(big.clone()).await;
        assert_eq!(status, 413);
        let host = base.trim_start_matches("http://").to_string();
        let status = tokio::task::spawn_blocking(move || chunked_post(&host, big.to_string().as_bytes()))
            .await
            .unwrap();
        assert_eq!(status, 413, "a chunked body past the limit");

        // A session, tied to a query, that goes idle.
        let mut s = RawSession::new(&client, &format!("{url}?query=people"));
        let init = s.open().await;
        assert_eq!(init["serverInfo"]["name"], "discbench-tiny");
        let r = s.call("hr__query", json!({"sql": "SELECT name FROM people"})).await;
        assert_eq!(r["isError"], false, "{r}");
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        let (status, _) = s
            .post(json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}))
            .await;
        assert_eq!(status, 404, "the idle session is gone");
        let lines = std::fs::read_to_string(runs.join("outcomes.jsonl")).unwrap();
        let o: Value = serde_json::from_str(lines.trim()).unwrap();
        assert_eq!(o["query_id"], "people");
        assert_eq!(o["score"]["exact"], true, "{o}");

        // The next session starts afresh, and answers a SQL error as a tool error.
        let mut t = RawSession::new(&client, &url);
        t.open().await;
        let r = t.call("hr__query", json!({"sql": "SELECT randomblob(900000000)"})).await;
        assert_eq!(r["isError"], true, "{r}");
        assert!(r["content"][0]["text"].as_str().unwrap().contains("too big"), "{r}");
        assert_eq!(t.close().await, 202);
    });
    let (status, rest) = server.stop();
    assert!(status.success(), "{status}: {rest}");
}

/// POSTs `body` to `/mcp` at `host` in chunks, with no length announced; the status.
fn chunked_post(host: &str, body: &[u8]) -> u16 {
    let mut c = std::net::TcpStream::connect(host).unwrap();
    write!(
        c,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    for chunk in body.chunks(512) {
        // The server may answer and close before the last chunk: later writes fail.
        if write!(c, "{:x}\r\n", chunk.len()).is_err()
            || c.write_all(chunk).is_err()
            || c.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let _ = c.write_all(b"0\r\n\r\n");
    let mut line = String::new();
    BufReader::new(c).read_line(&mut line).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A bounded load test on loopback: 200 sessions at once on one `serve --transport
/// http`, each calling before its read (refused), reading, calling (answered) and
/// querying the database, then ending. Every session keeps its own authorizations
/// (each is refused before its own read, whatever the others read), and every one
/// is recorded, whole: 200 outcomes, each with its own four calls, repeats 0–199.
#[test]
fn http_server_holds_200_concurrent_sessions() {
    const SESSIONS: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("served");
    let server = HttpServer::start(
        &root().join("fixtures/snapshot/tiny.yaml"),
        &["--mode", "mcp-resource,databases=legacy"],
        Some(&runs),
    );
    let url = format!("{}?query=issue", server.url);
    let started = Instant::now();
    let results = runtime().block_on(async {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(SESSIONS)
            .build()
            .unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(SESSIONS));
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..SESSIONS {
            let (client, url, barrier) = (client.clone(), url.clone(), barrier.clone());
            tasks.spawn(async move {
                let mut s = RawSession::new(&client, &url);
                s.open().await;
                // Every session is open before any reads.
                barrier.wait().await;
                let args = json!({"repo": "acme/app", "title": format!("Crash {i}")});
                let before = s.call("github__create_issue", args.clone()).await;
                let read = s
                    .request(
                        "resources/read",
                        json!({"uri": "resource:///tool_descriptions?tools=github__create_issue"}),
                    )
                    .await;
                let after = s.call("github__create_issue", args).await;
                let rows = s
                    .call(
                        "hr__query",
                        json!({"sql": format!("SELECT {i} AS n, count(*) FROM people")}),
                    )
                    .await;
                let closed = s.close().await;
                (i, before, read, after, rows, closed)
            });
        }
        let mut out = Vec::new();
        while let Some(r) = tasks.join_next().await {
            out.push(r.unwrap());
        }
        out
    });
    let took = started.elapsed();
    assert_eq!(results.len(), SESSIONS);
    for (i, before, read, after, rows, closed) in &results {
        assert_eq!(before["isError"], true, "session {i}: {before}");
        assert!(
            before.to_string().contains("TOOL_DESCRIPTION_REQUIRED"),
            "session {i}: {before}"
        );
        assert!(read["contents"][0]["text"].as_str().is_some(), "{read}");
        assert_eq!(after["isError"], false, "session {i}: {after}");
        let text = rows["content"][0]["text"].as_str().unwrap();
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(v["rows"][0][0], json!(i), "session {i} got another's rows");
        assert_eq!(*closed, 202);
    }
    let (status, rest) = server.stop();
    assert!(status.success(), "{status}: {rest}");
    let lines = std::fs::read_to_string(runs.join("outcomes.jsonl")).unwrap();
    let outcomes: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("every recorded line whole"))
        .collect();
    assert_eq!(outcomes.len(), SESSIONS, "{rest}");
    let mut repeats: Vec<u64> = outcomes
        .iter()
        .map(|o| o["repeat"].as_u64().unwrap())
        .collect();
    repeats.sort();
    assert_eq!(repeats, (0..SESSIONS as u64).collect::<Vec<_>>());
    let mut titles = std::collections::BTreeSet::new();
    for o in &outcomes {
        assert_eq!(o["protocol"]["description_required"], 1, "{o}");
        let calls = o["calls"].as_array().unwrap();
        let effects: Vec<&str> = calls
            .iter()
            .map(|c| c["effect"].as_str().unwrap())
            .collect();
        assert_eq!(effects, ["error", "fetched", "executed", "executed"], "{o}");
        let args: Value = serde_json::from_str(calls[2]["arguments"].as_str().unwrap()).unwrap();
        titles.insert(args["title"].as_str().unwrap().to_string());
    }
    assert_eq!(
        titles.len(),
        SESSIONS,
        "each outcome holds its own session's calls"
    );
    eprintln!(
        "{SESSIONS} concurrent sessions, 6 requests and a DELETE each: {:.1} s",
        took.as_secs_f64()
    );
}

/// Under `mcp-resource`, what a client is told matches what it can do: it reads the
/// resource itself (there is no `read_resource` tool over MCP), so the refusal, the
/// resource's description and the instructions say to read the resource, never to
/// call a tool; a template set keeps its own wording, less the sentence that
/// describes a tool.
#[test]
fn served_mcp_resource_wording_names_what_a_client_can_do() {
    for set in [None, Some("mcp-pd-brief"), Some("mcp-pd-verbose")] {
        let sc = discbench::scenario::load(&root().join("fixtures/snapshot/tiny.yaml")).unwrap();
        let templates = match set {
            None => Templates::builtin(),
            Some(s) => Templates::builtin().with_set(s).unwrap(),
        };
        let served = served(sc, Mode::preset("mcp-resource").unwrap(), templates);
        let mut s = Session::new(served.clone());
        let resource = &s.list_resources()[0];
        assert!(
            !resource.description.starts_with("Reads a resource"),
            "{set:?}: {}",
            resource.description
        );
        assert!(resource
            .description
            .contains("resource:///tool_descriptions"));
        let refused = s
            .call(
                "github__create_issue",
                &json!({"repo": "a/b", "title": "t"}),
            )
            .unwrap();
        assert!(refused.is_error);
        let v: Value = serde_json::from_str(&refused.content).unwrap();
        assert_eq!(v["error"]["code"], "TOOL_DESCRIPTION_REQUIRED");
        let steps = v["error"]["instructions"].to_string();
        assert!(!steps.contains("read_resource"), "{set:?}: {steps}");
        assert!(
            steps.contains("Read the resource resource:///tool_descriptions?tools=github__create_issue (MCP resources/read)"),
            "{steps}"
        );
        if set.is_none() {
            assert!(resource
                .description
                .starts_with("The full descriptions of the 1 MCP tools."));
            let instructions = served.composite.system();
            assert!(!instructions.contains("read_resource"), "{instructions}");
            assert!(
                instructions.contains("by reading the resource resource:///tool_descriptions?tools=github__create_issue"),
                "{instructions}"
            );
        }
    }
    // In a run, the strategy keeps its own tool and its wording.
    let t = Templates::builtin();
    assert!(t
        .source("read_resource.j2")
        .unwrap()
        .contains("Reads a resource."));
}

/// A session tied to no query is recorded unscored: its ledger, calls and turns in
/// `sessions.jsonl`, no score, and nothing in `outcomes.jsonl`; a second one is the
/// next session of the same scenario, mode and client.
#[test]
fn sessions_tied_to_no_query_are_recorded_unscored() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("served");
    for n in 0..2 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_discbench"))
            .arg("serve")
            .arg(root().join("fixtures/snapshot/tiny.yaml"))
            .args(["--mode", "legacy", "--record"])
            .arg(&runs)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut answers: Vec<Value> = Vec::new();
        // As a client does, the calls go after the list has come back: rmcp answers
        // requests concurrently, and a call handled before the listing would be
        // counted as a request without the tools in it.
        for (lines, expect) in [
            (
                vec![
                    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cost-probe","version":"2"}}}"#,
                    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                    r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
                ],
                2,
            ),
            (
                vec![
                    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"erp__get_order","arguments":{"order_id":"9921"}}}"#,
                    r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"hr__query","arguments":{"sql":"SELECT nothing FROM nowhere"}}}"#,
                ],
                4,
            ),
        ] {
            for l in lines {
                writeln!(stdin, "{l}").unwrap();
            }
            stdin.flush().unwrap();
            while answers.len() < expect {
                let mut l = String::new();
                assert!(
                    out.read_line(&mut l).unwrap() > 0,
                    "serve closed stdout early"
                );
                answers.push(serde_json::from_str(&l).unwrap());
            }
        }
        let failed = answers.iter().find(|a| a["id"] == 4).unwrap();
        assert_eq!(failed["result"]["isError"], true, "{failed}");
        drop(stdin);
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(&format!("recorded unscored session {n}")),
            "{}",
            text(&o)
        );
    }
    assert!(!runs.join("outcomes.jsonl").exists(), "nothing is scored");
    let lines = std::fs::read_to_string(runs.join("sessions.jsonl")).unwrap();
    let sessions: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(sessions.len(), 2);
    for (n, s) in sessions.iter().enumerate() {
        assert_eq!(s["session"], n, "{s}");
        assert_eq!(s["model"], "client:cost-probe");
        assert_eq!(s["client"], "cost-probe 2");
        assert_eq!(s["mode"], "legacy");
        assert!(
            s.get("score").is_none() && s.get("query_id").is_none(),
            "{s}"
        );
        let mut calls: Vec<&str> = s["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["tool"].as_str().unwrap())
            .collect();
        // rmcp answers requests concurrently: the calls in either order.
        calls.sort();
        assert_eq!(calls, ["erp__get_order", "hr__query"]);
        let t = &s["tokens"];
        let listing = t["system"].as_u64().unwrap() + t["tool_defs"].as_u64().unwrap();
        assert!(t["tool_defs"].as_u64().unwrap() > 100, "{t}");
        assert_eq!(t["first_request"].as_u64().unwrap(), listing, "{t}");
        // Two calls: two requests, each of everything disclosed before it.
        assert!(t["billed_input"].as_u64().unwrap() > 2 * listing, "{t}");
        assert!(t["results"].as_u64().unwrap() > 0, "{t}");
        assert_eq!(s["requests"].as_array().unwrap().len(), 2, "{s}");
    }
    for layer in ["system", "tool_defs", "results"] {
        assert_eq!(
            sessions[0]["tokens"][layer], sessions[1]["tokens"][layer],
            "the same session, the same cost"
        );
    }
}

/// The guide (`docs/src/guide.md`) works as written: each command of its ```sh guide
/// blocks runs, in order, in a scratch directory, exit 0, with only what a reader
/// would change put in: the server's command (`uvx mcp-server-time`: the pinned
/// `mcp-server-time`), the endpoint (`http://localhost:8000/v1`: a local
/// OpenAI-compatible server) and `discbench` itself (this build). Its YAML block is
/// written where its first line says.
#[test]
fn the_guide_runs_as_written() {
    let venv = need_venv!();
    let page = std::fs::read_to_string(root().join("docs/src/guide.md")).unwrap();
    let (mut commands, mut files) = (Vec::new(), Vec::new());
    let mut block: Option<(String, Vec<String>)> = None;
    for line in page.lines() {
        match &mut block {
            None if line.starts_with("```") => {
                block = Some((line.trim_start_matches('`').to_string(), Vec::new()))
            }
            None => {}
            Some((tag, lines)) if line.starts_with("```") => {
                if tag == "sh guide" {
                    commands.append(lines);
                } else if tag == "yaml" {
                    files.push(lines.join("\n") + "\n");
                }
                block = None;
            }
            Some((_, lines)) => lines.push(line.to_string()),
        }
    }
    assert!(commands.len() >= 6, "{commands:?}");
    let endpoint = server::serve(|_, _| {
        server::Reply::Json(
            200,
            vec![],
            json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "It is 09:15 in London."},
                 "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 8}}),
        )
    });
    let work = tempfile::tempdir().unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_discbench")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut yaml_written = false;
    for command in &commands {
        let command = command
            .replace(
                "uvx mcp-server-time",
                &venv.join("bin/mcp-server-time").display().to_string(),
            )
            .replace("http://localhost:8000/v1", &format!("{}/v1", endpoint.url));
        let o = Command::new("sh")
            .args(["-c", &command])
            .current_dir(work.path())
            .env("PATH", &path)
            .env("DISCBENCH_OPENER", "true")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{command}\n{}", text(&o));
        // The scenario is written after the catalog is captured, as the page says.
        if !yaml_written && command.contains("import mcp") {
            for f in &files {
                let first = f.lines().next().unwrap();
                let rel = first.trim_start_matches('#').trim();
                std::fs::write(work.path().join(rel), f).unwrap();
            }
            yaml_written = true;
        }
    }
    assert!(yaml_written, "the guide captures a catalog");
    let summary = |id: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(work.path().join(format!("reports/{id}/summary.json")))
                .unwrap(),
        )
        .unwrap()
    };
    // The mock comparison: both modes, savings against all-tools, every query
    // reachable.
    let first = summary("first");
    assert_eq!(first["savings_reference"], "all-tools");
    for g in first["groups"].as_array().unwrap() {
        if g["model"] == "oracle" {
            assert_eq!(g["exact"]["rate"], 1.0, "{}", g["mode"]);
        }
    }
    // The one-query run kept one query; the real run all three, with no infra error.
    let one = summary("one-query");
    assert_eq!(one["filter"], "--query london-now");
    assert_eq!(one["outcomes"], 2);
    let real = summary("real");
    assert_eq!(real["outcomes"], 6);
    for g in real["groups"].as_array().unwrap() {
        assert_eq!(g["infra_errors"], 0);
    }
    assert!(work.path().join("reports/real/index.html").is_file());
}

/// A world served by discbench itself (`serve --mode legacy`), as a live server for
/// the tests that need no Python: its dump is what `import mcp` captures of it, and
/// its answers carry a marker no fixture of the dump has.
struct LiveWorld {
    dir: tempfile::TempDir,
    world: PathBuf,
    dump: PathBuf,
}

const LIVE_MARKER: &str = "balance-from-the-live-world-7731";

fn live_world() -> LiveWorld {
    let dir = tempfile::tempdir().unwrap();
    let world = dir.path().join("world.yaml");
    std::fs::write(
        &world,
        format!(
            r#"name: world
catalog:
  mcp_servers:
    - name: bank
      tools:
        - name: get_balance
          description: The balance of an account.
          inputSchema: {{type: object, properties: {{account: {{type: string}}}}, required: [account]}}
          response: {{balance: 42, note: {LIVE_MARKER}}}
queries:
  - {{id: q, text: x, expect: {{calls: []}}}}
"#
        ),
    )
    .unwrap();
    let dump = dir.path().join("bank.tools.json");
    let o = discbench()
        .args(["import", "mcp", "--name", "bank", "--out"])
        .arg(&dump)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_discbench"))
        .args(["serve", "--mode", "legacy"])
        .arg(&world)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    LiveWorld { dir, world, dump }
}

impl LiveWorld {
    /// A scenario of `n` queries, each reading one balance through the live world
    /// started by `command` (`{world}` stands for the world's scenario file).
    fn scenario(&self, command: &[&str], n: usize) -> PathBuf {
        let command: Vec<String> = command
            .iter()
            .map(|c| {
                c.replace("{world}", &self.world.display().to_string())
                    .replace("{discbench}", env!("CARGO_BIN_EXE_discbench"))
            })
            .collect();
        let queries: String = (0..n)
            .map(|i| {
                format!(
                    "  - {{id: q{i}, text: What is the balance of account A-{i}?, expect: {{calls: [{{address: mcp:bank/bank__get_balance, args: {{account: [A-{i}]}}}}]}}}}\n"
                )
            })
            .collect();
        let path = self.dir.path().join("live.yaml");
        std::fs::write(
            &path,
            format!(
                "name: live\ncatalog:\n  include:\n    - path: {}\n      live: {{command: {}, timeout: 20}}\nqueries:\n{queries}",
                self.dump.display(),
                serde_json::to_string(&command).unwrap(),
            ),
        )
        .unwrap();
        path
    }
}

fn run_live(scenario: &Path, out: &Path, extra: &[&str]) -> Output {
    discbench()
        .arg("run")
        .arg(scenario)
        .args([
            "--mode",
            "legacy",
            "--model",
            "oracle",
            "--no-progress",
            "--run-id",
            "r",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// A live server answers the run's calls: nothing starts without `--allow-live` (the
/// refusal names the command), the live `tools/list` is checked against the
/// committed dump, the answers are the server's (not a fixture's), and run.json
/// records what was started.
#[test]
fn live_servers_answer_calls_only_when_allowed() {
    let w = live_world();
    let sc = w.scenario(&["{discbench}", "serve", "--mode", "legacy", "{world}"], 3);
    // `validate` and `tokens` start nothing and need no flag.
    let o = discbench().arg("validate").arg(&sc).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = w.dir.path().join("runs");
    let o = run_live(&sc, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--allow-live"), "{err}");
    assert!(
        err.contains(&format!(
            "{} serve --mode legacy",
            env!("CARGO_BIN_EXE_discbench")
        )),
        "{err}"
    );
    assert!(!out.join("r").exists(), "a refused run writes nothing");

    let o = run_live(&sc, &out, &["--allow-live"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = out.join("r");
    let outcomes = std::fs::read_to_string(run.join("outcomes.jsonl")).unwrap();
    let texts = std::fs::read_to_string(run.join("texts.jsonl")).unwrap_or_default();
    assert_eq!(outcomes.lines().count(), 3);
    for line in outcomes.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["score"]["exact"], true, "{line}");
        assert!(v["infra_error"].is_null(), "{line}");
    }
    // The answers came from the live world: its marker is nowhere in the dump.
    assert!(!std::fs::read_to_string(&w.dump)
        .unwrap()
        .contains(LIVE_MARKER));
    assert!(
        outcomes.contains(LIVE_MARKER) || texts.contains(LIVE_MARKER),
        "the live answers are recorded"
    );
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let live = &manifest["scenarios"][0]["live"][0];
    assert_eq!(live["server"], "bank");
    assert_eq!(live["name"], "discbench-world");
    assert_eq!(live["tools_hash"].as_str().unwrap().len(), 32);
    assert!(live["command"].as_str().unwrap().ends_with("world.yaml"));

    // A dump that no longer matches the server is refused, naming the difference.
    let dump = std::fs::read_to_string(&w.dump).unwrap();
    std::fs::write(
        &w.dump,
        dump.replace("The balance of an account.", "Another text."),
    )
    .unwrap();
    let o = run_live(&sc, &w.dir.path().join("runs2"), &["--allow-live"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("`bank__get_balance`: the description differs"),
        "{}",
        text(&o)
    );
}

/// Whether a process is gone (or a zombie no one has reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z')),
    }
}

fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every process a run starts — the server and what it starts in turn — is stopped
/// when the run ends, and killed when discbench is killed with SIGKILL (which runs no
/// code of discbench's).
#[test]
#[cfg(target_os = "linux")]
fn live_processes_die_with_the_run_even_on_sigkill() {
    let w = live_world();
    let pid_file = w.dir.path().join("pids");
    let script = format!(
        "echo $$ >> {p}; sleep 600 & echo $! >> {p}; sleep 0.3; exec {{discbench}} serve --mode legacy {{world}}",
        p = pid_file.display()
    );
    let sc = w.scenario(&["sh", "-c", &script], 3);
    let o = run_live(
        &sc,
        &w.dir.path().join("runs"),
        &["--allow-live", "--jobs", "1"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let started = pids(&pid_file);
    // The check's instance and one per query, two processes each.
    assert_eq!(started.len(), 8, "{started:?}");
    wait_until(
        "every process of a finished run gone",
        Duration::from_secs(5),
        || started.iter().all(|p| gone(*p)),
    );

    std::fs::remove_file(&pid_file).unwrap();
    let sc = w.scenario(&["sh", "-c", &script], 200);
    let mut child = discbench()
        .arg("run")
        .arg(&sc)
        .args([
            "--mode",
            "legacy",
            "--model",
            "oracle",
            "--no-progress",
            "--allow-live",
        ])
        .args(["--jobs", "2", "--run-id", "k", "--out"])
        .arg(w.dir.path().join("runs"))
        // A killed run cannot remove its servers' working directories: they go to
        // this test's directory, removed with it, not to the system's temp dir.
        .env("TMPDIR", w.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Past the check, with episodes' servers running.
    wait_until("episode servers started", Duration::from_secs(60), || {
        pids(&pid_file).len() >= 6
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let left = std::fs::read_dir(w.dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("discbench-live-")
        })
        .count();
    assert!(
        left >= 1,
        "the killed run's working directories are under TMPDIR"
    );
    let started = pids(&pid_file);
    wait_until(
        "every process of a killed run gone",
        Duration::from_secs(5),
        || started.iter().all(|p| gone(*p)),
    );
}

/// A live server that fails during the run is an infra error of the conversations it
/// fails, and the run goes on; one that cannot start at all fails the run at its start
/// (exit 3) before any outcome.
#[test]
fn a_failing_live_server_is_an_infra_error_and_the_run_goes_on() {
    let w = live_world();
    // The check's instance starts; every later one exits at once.
    let marker = w.dir.path().join("started-once");
    let script = format!(
        "if [ -e {m} ]; then echo gone >&2; exit 7; fi; touch {m}; exec {{discbench}} serve --mode legacy {{world}}",
        m = marker.display()
    );
    let sc = w.scenario(&["sh", "-c", &script], 3);
    let out = w.dir.path().join("runs");
    let o = run_live(&sc, &out, &["--allow-live"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let outcomes = std::fs::read_to_string(out.join("r/outcomes.jsonl")).unwrap();
    assert_eq!(
        outcomes.lines().count(),
        3,
        "every conversation has its outcome"
    );
    for line in outcomes.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let e = v["infra_error"].as_str().unwrap_or_default();
        assert!(e.contains("live server `bank`"), "{line}");
        assert!(
            e.contains("gone"),
            "the server's stderr is in the error: {line}"
        );
    }

    let sc = w.scenario(&["sh", "-c", "echo cannot >&2; exit 1"], 1);
    let o = run_live(&sc, &w.dir.path().join("runs2"), &["--allow-live"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot"),
        "{}",
        text(&o)
    );
}

/// The documented example (`fixtures/live/git.yaml`): mcp-server-git from PyPI,
/// live, on a scratch repository per conversation — its `tools/list` is the
/// committed capture, a branch made in a conversation's first turn is in the list its
/// second turn reads (the state is the conversation's own), and run.json names the
/// server's package and version.
#[test]
fn the_live_git_example_runs_as_documented() {
    let venv = need_venv!();
    let dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        venv.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = discbench()
        .arg("run")
        .arg(root().join("fixtures/live/git.yaml"))
        .args([
            "--allow-live",
            "--model",
            "oracle",
            "--mode",
            "legacy",
            "--mode",
            "progressive",
        ])
        .args(["--no-progress", "--run-id", "git", "--out"])
        .arg(dir.path())
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run = dir.path().join("git");
    let outcomes = std::fs::read_to_string(run.join("outcomes.jsonl")).unwrap();
    assert_eq!(outcomes.lines().count(), 4);
    for line in outcomes.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["infra_error"].is_null(), "{line}");
        assert_eq!(v["score"]["exact"], true, "{line}");
        if v["query_id"] == "branch-then-list" {
            assert!(line.contains(r"feature/login\n* main"), "{line}");
        } else {
            assert!(
                line.contains("nothing to commit, working tree clean"),
                "{line}"
            );
            assert!(
                !line.contains("feature/login"),
                "a fresh repository: {line}"
            );
        }
    }
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let live = &manifest["scenarios"][0]["live"][0];
    assert_eq!(live["name"], "mcp-git");
    assert_eq!(live["version"], "2026.10.19");
}

/// Whether python3 runs here: the stateful test server is standard-library Python.
/// Without it (outside CI) the tests that need it say they were skipped.
fn python3() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok || std::env::var_os("CI").is_none(),
        "python3 is needed in CI"
    );
    if !ok {
        eprintln!("SKIPPED: python3 is needed for tests/mcp/counter.py");
    }
    ok
}

/// A scenario over `tests/mcp/counter.py` (a stateful server, live, its state as the
/// resource `counter://state`), with the given queries.
fn counter_scenario(dir: &Path, queries: &str) -> PathBuf {
    let server = root().join("tests/mcp/counter.py");
    let dump = dir.join("counter.tools.json");
    if !dump.exists() {
        let o = discbench()
            .args(["import", "mcp", "--name", "counter", "--out"])
            .arg(&dump)
            .arg("--")
            .arg("python3")
            .arg(&server)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
    }
    let path = dir.join("counter.yaml");
    std::fs::write(
        &path,
        format!(
            "name: counter\ncatalog:\n  include:\n    - path: counter.tools.json\n      live: {{command: [python3, {}], state: \"counter://state\"}}\nqueries:\n{queries}",
            server.display()
        ),
    )
    .unwrap();
    path
}

/// The outcome lines of a run, by query id.
fn outcomes_by_query(run: &Path) -> std::collections::BTreeMap<String, Value> {
    std::fs::read_to_string(run.join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["query_id"].as_str().unwrap().to_string(), v))
        .collect()
}

/// Turns judged by state: the reference runs on a second fresh instance, and a turn
/// passes when the states are equal and the reference's results are among the agent's
/// — whatever path the agent took; a state that differs fails the turn and says so.
/// Under `judge: bfcl` a turn with an empty reference is not judged and judging stops
/// at the first failing turn.
#[test]
fn turns_judged_by_state_against_a_reference_instance() {
    if !python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let turns = |id: &str, judge: &str, first: &str| {
        format!(
            "  - id: {id}\n{judge}    turns:\n      - text: Add 5 to the counter.\n        expect: {first}\n      - text: What is the counter now?\n        expect: {{reference: [{{address: mcp:counter/get}}]}}\n      - text: Thanks.\n        expect: {{reference: []}}\n"
        )
    };
    let reference = "{reference: [{address: mcp:counter/add, args: {n: 5}}]}";
    // The agent (the oracle, following `calls`) reaches 5 another way.
    let other_path = "{calls: [{address: mcp:counter/add, args: {n: [2]}}, {address: mcp:counter/add, args: {n: [3]}}], reference: [{address: mcp:counter/add, args: {n: 5}}]}";
    let wrong = "{calls: [{address: mcp:counter/add, args: {n: [3]}}], reference: [{address: mcp:counter/add, args: {n: 5}}]}";
    // A turn with an empty reference where the agent changes the state anyway.
    let drift = |id: &str, judge: &str| {
        format!(
            "  - id: {id}\n{judge}    turns:\n      - text: Add 5.\n        expect: {reference}\n      - text: Thanks.\n        expect: {{calls: [{{address: mcp:counter/add, args: {{n: [1]}}}}], reference: []}}\n"
        )
    };
    let queries = [
        turns("by-reference", "", reference),
        turns("other-path", "", other_path),
        turns("wrong", "", wrong),
        turns("wrong-bfcl", "    judge: bfcl\n", wrong),
        drift("drift", ""),
        drift("drift-bfcl", "    judge: bfcl\n"),
    ]
    .concat();
    let sc = counter_scenario(dir.path(), &queries);
    let o = discbench().arg("validate").arg(&sc).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = dir.path().join("runs");
    let o = run_live(&sc, &out, &["--allow-live"]);
    // Inexact conversations are a result, not a failure of the run.
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let by = outcomes_by_query(&out.join("r"));
    let turn = |q: &str, t: usize| by[q]["conversation"][t]["score"].clone();
    for q in ["by-reference", "other-path"] {
        assert_eq!(by[q]["score"]["exact"], true, "{q}: {}", by[q]);
        for t in 0..3 {
            assert_eq!(turn(q, t)["state_ok"], true, "{q} turn {t}");
            assert_eq!(turn(q, t)["results_ok"], true, "{q} turn {t}");
        }
    }
    // The reference's tools are what recall is measured on when no calls are listed.
    assert_eq!(turn("by-reference", 0)["recall"], 1.0);
    assert!(turn("by-reference", 0)["args_ok"].is_null());
    // 3 where the reference has 5: the state and the results differ, and the next turns
    // (which read and leave it) fail on the state too.
    assert_eq!(by["wrong"]["score"]["exact"], false);
    assert_eq!(by["wrong"]["conversation"].as_array().unwrap().len(), 3);
    assert_eq!(turn("wrong", 0)["state_ok"], false);
    assert_eq!(turn("wrong", 0)["results_ok"], false);
    let why = by["wrong"]["conversation"][0]["failed"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("the state differs from the reference's (mcp:counter)"),
        "{why}"
    );
    assert_eq!(
        turn("wrong", 2)["state_ok"],
        false,
        "an empty reference must keep the state"
    );
    // BFCL's rules: judging stops at the first failing turn.
    assert_eq!(by["wrong-bfcl"]["score"]["exact"], false);
    assert_eq!(
        by["wrong-bfcl"]["conversation"].as_array().unwrap().len(),
        1
    );
    // An empty reference: the general rule wants the state kept; BFCL does not judge
    // the turn.
    assert_eq!(turn("drift", 1)["state_ok"], false);
    assert_eq!(by["drift"]["score"]["exact"], false);
    assert!(turn("drift-bfcl", 1)["state_ok"].is_null());
    assert_eq!(by["drift-bfcl"]["score"]["exact"], true);
}

/// `--record` keeps the live answers (the agent's and the reference's) beside the
/// model's; `--model replay:DIR` serves them: nothing is started (the server's file is
/// gone, and no --allow-live is given) and every outcome is the recorded one.
#[test]
fn live_answers_are_recorded_and_replayed_without_starting_anything() {
    if !python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = dir.path().join("counter.py");
    std::fs::copy(root().join("tests/mcp/counter.py"), &server).unwrap();
    let o = discbench()
        .args(["import", "mcp", "--name", "counter", "--out"])
        .arg(dir.path().join("counter.tools.json"))
        .arg("--")
        .arg("python3")
        .arg(&server)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let sc = dir.path().join("counter.yaml");
    std::fs::write(
        &sc,
        "name: counter\ncatalog:\n  include:\n    - path: counter.tools.json\n      live: {command: [python3, \"{dir}/counter.py\"], state: \"counter://state\"}\nqueries:\n  - id: add\n    turns:\n      - text: Add 5.\n        expect: {reference: [{address: mcp:counter/add, args: {n: 5}}]}\n      - text: And 2 more.\n        expect: {calls: [{address: mcp:counter/add, args: {n: [2]}}], reference: [{address: mcp:counter/add, args: {n: 3}}]}\n",
    )
    .unwrap();
    let out = dir.path().join("runs");
    let o = run_live(&sc, &out, &["--allow-live", "--record"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let tape = std::fs::read_to_string(out.join("r/live.jsonl")).unwrap();
    assert!(tape.contains(r#""side":"agent""#) && tape.contains(r#""side":"reference""#));
    std::fs::remove_file(&server).unwrap();
    let recorded = outcomes_by_query(&out.join("r"));
    let o = discbench()
        .arg("run")
        .arg(&sc)
        .args([
            "--mode",
            "legacy",
            "--no-progress",
            "--run-id",
            "again",
            "--out",
        ])
        .arg(&out)
        .arg("--model")
        .arg(format!("replay:{}", out.join("r").display()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let replayed = outcomes_by_query(&out.join("again"));
    let a = &recorded["add"];
    let b = &replayed["add"];
    assert!(b["infra_error"].is_null(), "{b}");
    assert_eq!(a["score"], b["score"]);
    assert_eq!(a["conversation"], b["conversation"]);
    // The second turn adds 2 where the reference adds 3: inexact, both times.
    assert_eq!(b["conversation"][1]["score"]["state_ok"], false);
}
