//! The HTTP model backends against a real local HTTP server that each test starts on
//! 127.0.0.1: both APIs' wire formats (tool calls, parallel calls, tool results going
//! back), provider usage kept per request, misbehaviour scored rather than crashing,
//! 429 / 5xx / timeouts / cut bodies / malformed JSON mapped and retried or recorded as
//! infra errors, the concurrency limit, and the API key never reaching a file.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use support::server::{serve, Reply, Seen};

const KEY: &str = "sk-test-discbench-7Qf3Zr9PLACEHOLDER";

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_discbench"));
    c.env("CI", "true")
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL");
    c
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs the tiny scenario under legacy (direct tools, skills inline) with `model`.
fn run_tiny(out: &Path, model: &str, extra: &[&str]) -> Output {
    bin()
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "legacy",
            "--model",
            model,
        ])
        .args(["--run-id", "x", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// The outcomes of the run the tests write as `x`.
fn outcomes(dir: &Path) -> Vec<Value> {
    support::cli::outcomes(&dir.join("x"))
}

fn by_query<'a>(os: &'a [Value], q: &str) -> &'a Value {
    os.iter().find(|o| o["query_id"] == q).unwrap()
}

/// The user's query of an OpenAI request, and whether tool results came back.
fn openai_turn(body: &Value) -> (String, bool) {
    let msgs = body["messages"].as_array().unwrap();
    let q = msgs
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_string();
    (q, msgs.iter().any(|m| m["role"] == "tool"))
}

fn openai_answer(content: Option<&str>, calls: Value) -> Value {
    let mut msg = json!({"role": "assistant", "content": content});
    if calls.as_array().is_some_and(|c| !c.is_empty()) {
        msg["tool_calls"] = calls;
    }
    json!({"choices": [{"message": msg, "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 321, "completion_tokens": 12,
                     "prompt_tokens_details": {"cached_tokens": 100}}})
}

fn call(id: &str, name: &str, args: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
}

/// A scripted OpenAI-compatible model for the tiny scenario.
fn tiny_openai(seen: &Seen) -> Value {
    let (q, answered) = openai_turn(&seen.body);
    if answered {
        return openai_answer(Some("Done."), json!([]));
    }
    if q.contains("9921") {
        openai_answer(
            None,
            json!([call("c1", "erp__get_order", "{\"order_id\":\"9921\"}")]),
        )
    } else if q.contains("works here") {
        openai_answer(
            None,
            json!([call(
                "c1",
                "hr__query",
                "{\"sql\":\"SELECT name FROM people\"}"
            )]),
        )
    } else if q.contains("issue") {
        // Two calls in parallel: a right one, and one to a tool that does not exist
        // with arguments that are not JSON.
        openai_answer(
            None,
            json!([
                call(
                    "c1",
                    "github__create_issue",
                    "{\"repo\":\"acme/app\",\"title\":\"Crash on start\"}"
                ),
                call("c2", "github__close_everything", "{not json")
            ]),
        )
    } else {
        openai_answer(Some("You're welcome."), json!([]))
    }
}

#[test]
fn openai_tool_calls_parallel_calls_usage_and_misbehaviour() {
    let server = serve(|s, _| Reply::Json(200, vec![], tiny_openai(s)));
    let tmp = tempfile::tempdir().unwrap();
    let o = run_tiny(
        tmp.path(),
        "openai:test-model",
        &[
            "--openai-base-url",
            &format!("{}/v1", server.url),
            "--temperature",
            "0",
            "--seed",
            "7",
            "--record",
        ],
    );
    ok(&o);
    let os = outcomes(tmp.path());
    assert_eq!(os.len(), 4);
    // Replayed with no server at all (a closed port), with the same sampling: the
    // same outcomes and the same summary.
    let again = tempfile::tempdir().unwrap();
    let replay = format!("replay:{}", tmp.path().join("x").display());
    let r = run_tiny(
        again.path(),
        &replay,
        &[
            "--openai-base-url",
            "http://127.0.0.1:9/v1",
            "--temperature",
            "0",
            "--seed",
            "7",
        ],
    );
    ok(&r);
    let strip = |v: &Value| {
        let mut v = v.clone();
        for t in v["requests"].as_array_mut().unwrap() {
            t.as_object_mut().unwrap().remove("latency_ms");
        }
        v
    };
    let replayed = outcomes(again.path());
    for o in &os {
        let twin = replayed
            .iter()
            .find(|r| r["query_id"] == o["query_id"])
            .unwrap();
        assert_eq!(strip(twin), strip(o));
    }
    let summary = |d: &Path| std::fs::read_to_string(d.join("x/summary.json")).unwrap();
    assert_eq!(summary(again.path()), summary(tmp.path()));
    // Other sampling parameters make other requests: a named miss, exit 3.
    let other = tempfile::tempdir().unwrap();
    let m = run_tiny(other.path(), &replay, &["--temperature", "1"]);
    assert_eq!(m.status.code(), Some(3));
    let lines = std::fs::read_to_string(other.path().join("x/outcomes.jsonl")).unwrap();
    assert!(lines.contains("no recorded answer"), "{lines}");
    assert!(lines.contains("sampling parameters"), "{lines}");
    assert!(os
        .iter()
        .all(|o| o["model"] == "openai:test-model" && o["infra_error"].is_null()));
    assert_eq!(by_query(&os, "refund")["score"]["exact"], json!(true));
    assert_eq!(by_query(&os, "people")["score"]["args_ok"], json!(true));
    assert_eq!(by_query(&os, "thanks")["score"]["abstain_ok"], json!(true));
    // The parallel batch: one right call, one unknown tool with broken arguments —
    // refused and counted as a protocol error (not a crash, and not a selection: only
    // executed calls are selections).
    let issue = by_query(&os, "issue");
    assert_eq!(issue["score"]["exact"], json!(true));
    assert_eq!(issue["calls"].as_array().unwrap().len(), 2);
    assert!(
        issue["protocol"]["schema_violation"].as_u64().unwrap_or(0)
            + issue["protocol"]["unknown_target"].as_u64().unwrap_or(0)
            >= 1
    );
    assert_eq!(
        issue["calls"][1]["arguments"],
        json!("{not json"),
        "the raw text is kept"
    );
    // Provider usage is kept per request beside discbench's own count.
    let t = &by_query(&os, "refund")["requests"][0];
    assert_eq!(
        t["usage"],
        json!({"input": 321, "output": 12, "cached_input": 100})
    );
    assert!(t["latency_ms"].is_u64());
    // The wire format: system first, function tools, sampling, results going back.
    let seen = server.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|s| s.path == "/v1/chat/completions"));
    let first = &seen.iter().find(|s| !openai_turn(&s.body).1).unwrap().body;
    assert_eq!(first["model"], json!("test-model"));
    assert_eq!(first["messages"][0]["role"], json!("system"));
    assert_eq!(first["tool_choice"], json!("auto"));
    assert_eq!(first["parallel_tool_calls"], json!(true));
    assert_eq!(
        (first["temperature"].clone(), first["seed"].clone()),
        (json!(0.0), json!(7))
    );
    assert!(first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["function"]["name"] == "erp__get_order"));
    let follow = seen
        .iter()
        .find(|s| openai_turn(&s.body).0.contains("9921") && openai_turn(&s.body).1)
        .unwrap();
    let msgs = follow.body["messages"].as_array().unwrap();
    assert_eq!(
        msgs[2]["tool_calls"][0]["function"]["name"],
        json!("erp__get_order")
    );
    assert_eq!(msgs[3]["role"], json!("tool"));
    assert_eq!(msgs[3]["tool_call_id"], json!("c1"));
    // The key went to the server, and nowhere else.
    assert!(seen.iter().all(|s| s
        .headers
        .contains(&("authorization".into(), format!("Bearer {KEY}")))));
    support::cli::assert_no_secret(tmp.path(), &o, KEY);
}

#[test]
fn anthropic_tool_use_and_tool_results() {
    let server = serve(|s, _| {
        let msgs = s.body["messages"].as_array().unwrap();
        // With prompt caching on (the default) the newest message is a list of blocks
        // carrying the breakpoint; without it, a plain string.
        let q = match &msgs[0]["content"] {
            Value::String(s) => s.clone(),
            blocks => blocks
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect(),
        };
        let answered = msgs.iter().any(|m| {
            m["content"]
                .as_array()
                .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"))
        });
        let body = if !answered && q.contains("9921") {
            json!({"content": [{"type": "text", "text": "Looking it up."},
                               {"type": "tool_use", "id": "toolu_1", "name": "erp__get_order", "input": {"order_id": "9921"}}],
                   "stop_reason": "tool_use", "usage": {"input_tokens": 400, "output_tokens": 20, "cache_read_input_tokens": 50}})
        } else {
            json!({"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 500, "output_tokens": 5}})
        };
        Reply::Json(200, vec![], body)
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = run_tiny(
        tmp.path(),
        "anthropic:claude-test",
        &["--anthropic-base-url", &server.url, "--max-tokens", "256"],
    );
    ok(&o);
    let os = outcomes(tmp.path());
    let refund = by_query(&os, "refund");
    assert_eq!(refund["score"]["exact"], json!(true), "{refund}");
    assert_eq!(
        refund["requests"][0]["usage"],
        // Anthropic reports reads apart from the uncached rest: the input is their sum.
        json!({"input": 450, "output": 20, "cached_input": 50})
    );
    let seen = server.seen.lock().unwrap().clone();
    assert!(seen.iter().all(|s| s.path == "/v1/messages"));
    assert!(seen
        .iter()
        .all(|s| s.headers.contains(&("x-api-key".into(), KEY.into()))));
    assert!(seen
        .iter()
        .all(|s| s.headers.iter().any(|(k, _)| k == "anthropic-version")));
    let first = &seen[0].body;
    assert_eq!(first["max_tokens"], json!(256));
    // Caching is on by default: the system prompt is a block carrying a breakpoint.
    assert_eq!(first["system"][0]["type"], json!("text"));
    assert!(first["system"][0]["cache_control"].is_object());
    assert!(first["tools"][0]["input_schema"].is_object());
    let follow = seen
        .iter()
        .find(|s| s.body["messages"].as_array().unwrap().len() == 3)
        .expect("the tool result went back");
    let m = &follow.body["messages"];
    assert_eq!(m[1]["content"][1]["type"], json!("tool_use"));
    assert_eq!(m[2]["role"], json!("user"));
    assert_eq!(m[2]["content"][0]["type"], json!("tool_result"));
    assert_eq!(m[2]["content"][0]["tool_use_id"], json!("toolu_1"));
    support::cli::assert_no_secret(tmp.path(), &o, KEY);
}

/// The selection step over the wire: a forced call of `select_tools`, in each
/// provider's own form, answered by a call; the picked tool is what the turn offers.
#[test]
fn the_selection_step_forces_its_function_on_both_providers() {
    // The OpenAI-compatible server ignores the forced call and answers in prose: the
    // step asks again in JSON mode, which it answers.
    let openai = serve(|s, _| {
        let body = if s.body["tool_choice"]["function"]["name"] == "select_tools" {
            openai_answer(Some("I'd use the ERP."), json!([]))
        } else if s.body["response_format"]["type"] == "json_object" {
            openai_answer(Some("{\"tools\": [\"erp__get_order\"]}"), json!([]))
        } else {
            openai_answer(Some("Done."), json!([]))
        };
        Reply::Json(200, vec![], body)
    });
    let anthropic = serve(|s, _| {
        let body = if s.body["tool_choice"]["name"] == "select_tools" {
            json!({"content": [{"type": "tool_use", "id": "toolu_s", "name": "select_tools", "input": {"tools": ["erp__get_order"]}}],
                   "stop_reason": "tool_use", "usage": {"input_tokens": 90, "output_tokens": 9}})
        } else {
            json!({"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 500, "output_tokens": 5}})
        };
        Reply::Json(200, vec![], body)
    });
    for (model, url_flag, server) in [
        ("openai:test-model", "--openai-base-url", &openai),
        ("anthropic:claude-test", "--anthropic-base-url", &anthropic),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let o = run_tiny(
            tmp.path(),
            model,
            &[url_flag, &server.url, "--selection-threshold", "2"],
        );
        ok(&o);
        let os = outcomes(tmp.path());
        let refund = by_query(&os, "refund");
        let requests = if model.starts_with("openai") { 2 } else { 1 };
        assert_eq!(refund["selection"]["requests"], json!(requests), "{refund}");
        assert_eq!(
            refund["selection"]["selected"],
            json!(["erp__get_order"]),
            "{model}"
        );
        let seen = server.seen.lock().unwrap().clone();
        let select = seen
            .iter()
            .find(|s| s.body["tools"].as_array().is_some_and(|t| t.len() == 1))
            .expect("a selection request");
        let tools = select.body["tools"].as_array().unwrap();
        if model.starts_with("openai") {
            assert_eq!(
                select.body["tool_choice"],
                json!({"type": "function", "function": {"name": "select_tools"}})
            );
            assert_eq!(tools[0]["function"]["name"], json!("select_tools"));
            assert!(select.body.get("parallel_tool_calls").is_none());
            assert!(seen
                .iter()
                .any(|s| s.body["response_format"]["type"] == "json_object"
                    && s.body.get("tools").is_none()));
        } else {
            assert_eq!(
                select.body["tool_choice"],
                json!({"type": "tool", "name": "select_tools"})
            );
            assert_eq!(tools[0]["name"], json!("select_tools"));
        }
        // The turns after it offer the picked tool and request_tools.
        let turn = seen
            .iter()
            .find(|s| s.body["tools"].as_array().is_some_and(|t| t.len() == 2))
            .expect("an agent turn with the selected tools");
        assert!(turn.body.get("tool_choice").is_none_or(|c| c == "auto"));
    }
}

#[test]
fn rate_limits_and_server_errors_are_retried_then_recorded_as_infra_errors() {
    // Every conversation's first request is refused twice (429 with retry-after-ms,
    // then 503), then answered.
    let server = serve(|s, n| {
        let (_, answered) = openai_turn(&s.body);
        let _ = n;
        if !answered {
            let key = s.body["messages"][1]["content"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let attempts = ATTEMPTS
                .lock()
                .unwrap()
                .entry(key)
                .and_modify(|n| *n += 1)
                .or_insert(1)
                .to_owned();
            match attempts {
                1 => {
                    return Reply::Json(
                        429,
                        vec![("retry-after-ms", "30".into())],
                        json!({"error": "slow down"}),
                    )
                }
                2 => return Reply::Json(503, vec![], json!({"error": "busy"})),
                _ => {}
            }
        }
        Reply::Json(200, vec![], tiny_openai(s))
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = run_tiny(
        tmp.path(),
        "openai:m",
        &["--openai-base-url", &server.url, "--max-retries", "2"],
    );
    ok(&o);
    let os = outcomes(tmp.path());
    assert!(
        os.iter().all(|o| o["infra_error"].is_null()),
        "recovered after two retries"
    );
    // The waits: the 429's retry-after-ms (30 ms) was honoured, and the retry after
    // the 503 waited for the backoff (attempt 2: 0.5–1 s of the 1 s base·2).
    let seen = server.seen.lock().unwrap().clone();
    let first_asks: Vec<&Seen> = seen
        .iter()
        .filter(|s| openai_turn(&s.body).0.contains("9921") && !openai_turn(&s.body).1)
        .collect();
    assert_eq!(first_asks.len(), 3, "429, 503, then the answer");
    let gap = |a: &Seen, b: &Seen| b.at.duration_since(a.at);
    assert!(gap(first_asks[0], first_asks[1]) >= Duration::from_millis(30));
    assert!(gap(first_asks[1], first_asks[2]) >= Duration::from_millis(500));
    assert_eq!(by_query(&os, "refund")["score"]["exact"], json!(true));

    // A server that always fails: after the retries, an infra error with its cause;
    // the run goes on to its end, and then fails (exit 3), saying why.
    let down = serve(|_, _| Reply::Json(500, vec![], json!({"error": "down"})));
    let tmp = tempfile::tempdir().unwrap();
    let o = run_tiny(
        tmp.path(),
        "openai:m",
        &["--openai-base-url", &down.url, "--max-retries", "1"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("4 of 4 outcomes are infra errors"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("server error (HTTP 500) ×4"),
        "{}",
        stderr(&o)
    );
    let os = outcomes(tmp.path());
    assert_eq!(os.len(), 4);
    assert!(os
        .iter()
        .all(|o| o["infra_error"] == json!("server error (HTTP 500)")));
    assert_eq!(down.seen.lock().unwrap().len(), 8, "two attempts per item");
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run whose requests all fail is not a measurement: a revoked key (401) or a
/// server that refuses connections exits 3 and says why on stderr, grouped by cause;
/// against a baseline the verdict is FAILED, whatever the metrics; `--max-infra`
/// tolerates some on purpose, as a count or a share.
#[test]
fn failed_requests_fail_the_run_unless_tolerated() {
    let revoked = serve(|_, _| {
        Reply::Json(
            401,
            vec![],
            json!({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
        )
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = run_tiny(tmp.path(), "openai:m", &["--openai-base-url", &revoked.url]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("authentication failed: HTTP 401 ×4"), "{err}");
    assert!(
        err.contains("Incorrect API key provided"),
        "the first message: {err}"
    );
    assert!(
        err.contains("--rerun-infra") && err.contains("--max-infra"),
        "{err}"
    );
    // The reports are written all the same.
    assert!(tmp.path().join("x/summary.json").is_file());

    // Against a baseline (the same run's summary: no metric moved), still FAILED.
    let base = tmp.path().join("x/summary.json");
    let again = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["run", "fixtures/snapshot/tiny.yaml", "--mode", "legacy"])
        .args(["--model", "openai:m", "--openai-base-url", &revoked.url])
        .args(["--run-id", "x", "--out"])
        .arg(again.path())
        .arg("--baseline")
        .arg(&base)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let md = std::fs::read_to_string(again.path().join("x/compare.md")).unwrap();
    assert!(
        md.starts_with("## Comparison with baseline `x`: FAILED"),
        "{md}"
    );
    assert!(md.contains("authentication failed: HTTP 401 ×4"), "{md}");
    // `compare` says the same of the two directories.
    let o = bin()
        .arg("compare")
        .arg(tmp.path().join("x"))
        .arg(again.path().join("x"))
        .args(["--out", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = bin()
        .arg("compare")
        .arg(tmp.path().join("x"))
        .arg(again.path().join("x"))
        .args(["--out", "/dev/null", "--max-infra", "100%"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // Tolerated on purpose: a count or a share of the run's outcomes.
    for (tolerance, code) in [("4", 0), ("3", 3), ("100%", 0), ("75%", 3)] {
        let t = tempfile::tempdir().unwrap();
        let o = run_tiny(
            t.path(),
            "openai:m",
            &["--openai-base-url", &revoked.url, "--max-infra", tolerance],
        );
        assert_eq!(
            o.status.code(),
            Some(code),
            "--max-infra {tolerance}: {}",
            stderr(&o)
        );
        if code == 0 {
            assert!(stderr(&o).contains("tolerated: 4 of 4"), "{}", stderr(&o));
        }
    }
    let t = tempfile::tempdir().unwrap();
    let o = run_tiny(t.path(), "openai:m", &["--max-infra", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-infra"), "{}", stderr(&o));

    // A server that refuses connections.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        drop(l);
        url
    };
    let t = tempfile::tempdir().unwrap();
    let o = run_tiny(
        t.path(),
        "openai:m",
        &["--openai-base-url", &closed, "--max-retries", "0"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("connection failed ×4"),
        "{}",
        stderr(&o)
    );
}

/// A request too large for the model is the strategy's failure, not the
/// infrastructure's: a failed outcome counted in `context_overflow`, never an infra
/// error, so the run is judged (exit 0) and the strategy's accuracy shows the loss.
#[test]
fn a_context_overflow_is_a_failed_outcome_not_an_infra_error() {
    let server = serve(|s, _| {
        let big = s.body["tools"].as_array().is_some_and(|t| t.len() > 4);
        if big {
            Reply::Json(
                400,
                vec![],
                json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            )
        } else {
            Reply::Json(200, vec![], tiny_openai(s))
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = run_tiny(tmp.path(), "openai:m", &["--openai-base-url", &server.url]);
    ok(&o);
    let os = outcomes(tmp.path());
    assert_eq!(os.len(), 4);
    for o in &os {
        assert!(o["infra_error"].is_null(), "{}", o["infra_error"]);
        assert_eq!(
            o["protocol"]["context_overflow"],
            json!(1),
            "{}",
            o["query_id"]
        );
        assert_eq!(o["score"]["exact"], json!(false), "{}", o["query_id"]);
    }
    // Asked once each: an overflow is not retried.
    assert_eq!(server.seen.lock().unwrap().len(), 4);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("x/summary.json")).unwrap())
            .unwrap();
    let g = &summary["groups"][0];
    assert_eq!(g["n"], json!(4));
    assert_eq!(g["infra_errors"], json!(0));
    assert_eq!(g["protocol_rates"]["context_overflow"]["k"], json!(4));
    assert_eq!(g["exact"]["k"], json!(0));
}

static ATTEMPTS: Mutex<std::collections::BTreeMap<String, u32>> =
    Mutex::new(std::collections::BTreeMap::new());

#[test]
fn timeouts_cut_bodies_and_malformed_answers() {
    for (reply, want, requests) in [
        ("slow", "timed out", 2),
        ("cut", "connection failed: the answer was cut off", 2),
        ("not json", "the answer could not be decoded", 1),
    ] {
        let server = serve(move |_, _| match reply {
            "slow" => Reply::Slow(Duration::from_millis(1500), json!({})),
            "cut" => Reply::Cut,
            _ => Reply::NotJson,
        });
        let tmp = tempfile::tempdir().unwrap();
        let o = bin()
            .args([
                "run",
                "fixtures/snapshot/tiny.yaml",
                "--mode",
                "legacy",
                "--model",
                "openai:m",
            ])
            .args([
                "--openai-base-url",
                &server.url,
                "--request-timeout",
                "0.3",
                "--max-retries",
                "1",
            ])
            .args(["--jobs", "1", "--run-id", "x", "--out"])
            .arg(tmp.path())
            .output()
            .unwrap();
        // Every request failed: the run ends, and says it is no measurement.
        assert_eq!(o.status.code(), Some(3), "{reply}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{reply}: {}", stderr(&o));
        let os = outcomes(tmp.path());
        for o in &os {
            let e = o["infra_error"].as_str().unwrap_or("");
            assert!(e.starts_with(want), "{reply}: {e}");
        }
        // Timeouts and cut bodies are retried; a complete answer that is not JSON is not.
        let n = server.seen.lock().unwrap().len();
        assert_eq!(n, 4 * requests, "{reply}");
    }
}

#[test]
fn no_more_requests_in_flight_than_jobs() {
    let server = serve(|s, _| Reply::Slow(Duration::from_millis(80), tiny_openai(s)));
    let tmp = tempfile::tempdir().unwrap();
    let o = run_tiny(
        tmp.path(),
        "openai:m",
        &[
            "--openai-base-url",
            &server.url,
            "--jobs",
            "3",
            "--repeat",
            "4",
        ],
    );
    ok(&o);
    assert_eq!(outcomes(tmp.path()).len(), 16);
    let peak = server.peak.load(Ordering::SeqCst);
    assert!((2..=3).contains(&peak), "peak in flight {peak}");
}

#[test]
fn a_models_file_names_endpoints_and_never_holds_a_key() {
    let server = serve(|s, _| Reply::Json(200, vec![], tiny_openai(s)));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("models.yaml");
    std::fs::write(
        &file,
        format!(
            "models:\n  - name: local\n    provider: openai\n    model: qwen-test\n    base_url: {}/v1\n    api_key_env: DISCBENCH_TEST_KEY\n    max_tokens: 99\n",
            server.url
        ),
    )
    .unwrap();
    let o = bin()
        .env("DISCBENCH_TEST_KEY", "sk-other-value")
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "legacy",
            "--model",
            "local",
            "--models",
        ])
        .arg(&file)
        .args(["--run-id", "x", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    ok(&o);
    assert!(outcomes(tmp.path()).iter().all(|o| o["model"] == "local"));
    let seen = server.seen.lock().unwrap().clone();
    assert!(seen
        .iter()
        .all(|s| s.body["model"] == "qwen-test" && s.body["max_tokens"] == 99));
    assert!(seen.iter().all(|s| s
        .headers
        .contains(&("authorization".into(), "Bearer sk-other-value".into()))));

    std::fs::write(
        &file,
        "models:\n  - {name: x, provider: openai, model: m, api_key: sk-123}\n",
    )
    .unwrap();
    let o = bin()
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--model",
            "x",
            "--models",
        ])
        .arg(&file)
        .arg("--out")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("api_key_env"));
}

#[test]
fn empty_answers_text_calls_refusals_and_truncation_are_protocol_errors() {
    let server = serve(|s, _| {
        let (q, _) = openai_turn(&s.body);
        let body = if q.contains("9921") {
            // A tool call written as text instead of made.
            openai_answer(
                Some("```json\n{\"name\": \"erp__get_order\", \"arguments\": {\"order_id\": \"9921\"}}\n```"),
                json!([]),
            )
        } else if q.contains("works here") {
            openai_answer(None, json!([]))
        } else if q.contains("issue") {
            json!({"choices": [{"message": {"role": "assistant", "content": null,
                    "refusal": "I can't help with that."}, "finish_reason": "stop"}]})
        } else {
            json!({"choices": [{"message": {"role": "assistant", "content": "You're wel"},
                    "finish_reason": "length"}]})
        };
        Reply::Json(200, vec![], body)
    });
    let tmp = tempfile::tempdir().unwrap();
    ok(&run_tiny(
        tmp.path(),
        "openai:m",
        &["--openai-base-url", &server.url],
    ));
    let os = outcomes(tmp.path());
    let p = |q: &str, k: &str| by_query(&os, q)["protocol"][k].as_u64().unwrap_or(0);
    assert_eq!(p("refund", "text_calls"), 1);
    assert_eq!(p("people", "empty_answers"), 1);
    assert_eq!(p("issue", "refusals"), 1);
    assert_eq!(
        p("issue", "empty_answers"),
        0,
        "a refusal is not an empty answer"
    );
    assert_eq!(p("thanks", "truncated"), 1);
    assert_eq!(
        by_query(&os, "thanks")["requests"][0]["truncated"],
        json!(true)
    );
    assert!(
        os.iter().all(|o| o["infra_error"].is_null()),
        "the model's doing, not the provider's"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("x/summary.json")).unwrap())
            .unwrap();
    let g = &summary["groups"][0];
    assert_eq!(g["protocol_error"]["k"], json!(4), "every outcome had one");
    assert_eq!(g["protocol_rates"]["truncated"]["k"], json!(1));
}

#[test]
fn usage_beside_the_count_cost_and_a_spending_limit_that_leaves_the_run_resumable() {
    let server = serve(|s, _| Reply::Json(200, vec![], tiny_openai(s)));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("models.yaml");
    std::fs::write(
        &file,
        format!(
            "models:\n  - name: priced\n    provider: openai\n    model: m\n    base_url: {}\n    prices: {{input: 1000, output: 1000, cached_input: 500}}\n",
            server.url
        ),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        bin()
            .args([
                "run",
                "fixtures/snapshot/tiny.yaml",
                "--mode",
                "legacy",
                "--jobs",
                "1",
            ])
            .args(["--model", "priced", "--models"])
            .arg(&file)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = tmp.path().join("runs");
    let o = run(&[
        "--run-id",
        "x",
        "--out",
        out.to_str().unwrap(),
        "--max-cost-usd",
        "0.5",
    ]);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("spending limit reached"), "{err}");
    let dir = out.join("x");
    let done = std::fs::read_to_string(dir.join("outcomes.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert!((1..4).contains(&done), "stopped early: {done}");
    // Each request: 221 fresh input, 100 cached, 12 output tokens.
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(dir.join("outcomes.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let requests = first["requests"].as_array().unwrap().len() as f64;
    let want = requests * (221.0 * 1000.0 + 100.0 * 500.0 + 12.0 * 1000.0) / 1e6;
    assert!((first["cost_usd"].as_f64().unwrap() - want).abs() < 1e-9);
    assert_eq!(
        first["usage"]["input"].as_u64().unwrap() as f64,
        321.0 * requests
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("incomplete run: {done} of 4")));

    // Resumed without the limit, the run completes; the reports show usage beside
    // discbench's count, and cost.
    let o = run(&["--resume", dir.to_str().unwrap()]);
    ok(&o);
    assert_eq!(
        std::fs::read_to_string(dir.join("outcomes.jsonl"))
            .unwrap()
            .lines()
            .count(),
        4
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let g = &summary["groups"][0];
    let u = &g["provider_usage"];
    assert_eq!(u["outcomes"], json!(4));
    let ratio = u["input"].as_f64().unwrap() / u["counted_input"].as_f64().unwrap();
    assert!((u["ratio"].as_f64().unwrap() - ratio).abs() < 1e-12);
    assert_eq!(g["cost_usd"]["outcomes"], json!(4));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("Provider usage and cost"), "{md}");
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert_eq!(
        junit.matches("<property name=\"cost_usd\"").count(),
        4,
        "{junit}"
    );
    let csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let at = |c: &str| row[header.iter().position(|h| *h == c).unwrap()];
    let total: f64 = at("cost_usd_total").parse().unwrap();
    assert!((total - g["cost_usd"]["total"].as_f64().unwrap()).abs() < 1e-9);
    assert_eq!(
        at("provider_input").parse::<f64>().unwrap(),
        u["input"].as_u64().unwrap() as f64
    );
}

#[test]
fn resume_can_run_infra_errors_again() {
    let down = serve(|_, _| Reply::Json(503, vec![], json!({"error": "down"})));
    let tmp = tempfile::tempdir().unwrap();
    let o = run_tiny(
        tmp.path(),
        "openai:m",
        &["--openai-base-url", &down.url, "--max-retries", "0"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(outcomes(tmp.path())
        .iter()
        .all(|o| !o["infra_error"].is_null()));
    let up = serve(|s, _| Reply::Json(200, vec![], tiny_openai(s)));
    let dir = tmp.path().join("x");
    // A plain resume has nothing to do: every item has an outcome, and the run still
    // holds its infra errors (exit 3).
    let o = bin()
        .args(["run", "--resume"])
        .arg(&dir)
        .args(["--openai-base-url", &up.url])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(up.seen.lock().unwrap().is_empty());
    let o = bin()
        .args(["run", "--resume"])
        .arg(&dir)
        .args(["--rerun-infra", "--openai-base-url", &up.url])
        .output()
        .unwrap();
    ok(&o);
    let os = outcomes(tmp.path());
    assert_eq!(os.len(), 4);
    assert!(os.iter().all(|o| o["infra_error"].is_null()));
    let aside = std::fs::read_to_string(dir.join("outcomes.infra")).unwrap();
    assert_eq!(
        aside.lines().count(),
        4,
        "the failed outcomes are kept aside"
    );
}

/// Kills `child` (SIGKILL) once `file` holds at least `some` lines, and checks that
/// it held fewer than `all`: killed mid-way.
fn kill_after(mut child: std::process::Child, file: &Path, some: usize, all: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let n = std::fs::read_to_string(file)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if n >= some {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run made no progress"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = std::fs::read_to_string(file).unwrap().lines().count();
    assert!(before < all, "killed before the end ({before})");
}

#[test]
fn a_run_killed_mid_way_resumes_with_every_item_exactly_once() {
    let server = serve(|s, _| Reply::Slow(Duration::from_millis(60), tiny_openai(s)));
    let tmp = tempfile::tempdir().unwrap();
    let child = bin()
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "legacy",
            "--model",
            "openai:m",
        ])
        .args([
            "--openai-base-url",
            &server.url,
            "--repeat",
            "10",
            "--jobs",
            "4",
        ])
        .args(["--run-id", "x", "--out"])
        .arg(tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    kill_after(child, &tmp.path().join("x/outcomes.jsonl"), 8, 40);
    let o = bin()
        .args(["run", "--resume"])
        .arg(tmp.path().join("x"))
        .args(["--openai-base-url", &server.url])
        .output()
        .unwrap();
    ok(&o);
    let mut keys: Vec<(String, u64)> = outcomes(tmp.path())
        .iter()
        .map(|o| {
            (
                o["query_id"].as_str().unwrap().to_string(),
                o["repeat"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(keys.len(), 40);
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 40, "every work item exactly once");
}

/// A conversation is one work item: a run killed while conversations are in flight
/// resumes with each conversation exactly once and whole (every turn, each turn's
/// request), never a conversation's first turns kept from before the kill.
#[test]
fn a_run_killed_mid_conversation_resumes_with_every_conversation_whole_and_once() {
    let server = serve(|s, _| {
        // Each turn ends on an answer: one request per turn.
        assert!(s.body["messages"].as_array().is_some());
        Reply::Slow(
            Duration::from_millis(40),
            openai_answer(Some("Done."), json!([])),
        )
    });
    let tmp = tempfile::tempdir().unwrap();
    let scenario = "fixtures/conversations/small.yaml";
    let child = bin()
        .args([
            "run",
            scenario,
            "--mode",
            "all-tools",
            "--model",
            "openai:m",
        ])
        .args(["--openai-base-url", &server.url, "--repeat", "10"])
        .args(["--jobs", "4", "--run-id", "x", "--out"])
        .arg(tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    kill_after(child, &tmp.path().join("x/outcomes.jsonl"), 8, 40);
    let o = bin()
        .args(["run", "--resume"])
        .arg(tmp.path().join("x"))
        .args(["--openai-base-url", &server.url])
        .output()
        .unwrap();
    ok(&o);
    let os = outcomes(tmp.path());
    assert_eq!(os.len(), 40);
    let mut keys: Vec<(String, u64)> = os
        .iter()
        .map(|o| {
            (
                o["query_id"].as_str().unwrap().to_string(),
                o["repeat"].as_u64().unwrap(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 40, "every conversation exactly once");
    let scenario = discbench::scenario::load(std::path::Path::new(scenario)).unwrap();
    for o in &os {
        let q = (scenario.queries.iter())
            .find(|q| q.id == o["query_id"].as_str().unwrap())
            .unwrap();
        let turns = o["conversation"].as_array().map_or(1, Vec::len);
        assert_eq!(turns, q.n_turns(), "{} is whole", q.id);
        assert_eq!(
            o["requests"].as_array().unwrap().len(),
            q.n_turns(),
            "{}: one request per turn",
            q.id
        );
    }
}

/// A query that expects no call is judged on what the model tried: a call written as
/// text (here as a small open model behind llama.cpp's server writes it), a call to a
/// tool that does not exist, or arguments that do not parse are not abstentions, and
/// each still counts in its protocol counter.
#[test]
fn a_no_call_query_is_judged_on_what_the_model_tried() {
    let attempts: [(&str, Value, &str); 4] = [
        (
            "none",
            openai_answer(Some("You're welcome."), json!([])),
            "",
        ),
        (
            "text",
            openai_answer(Some("functions.erp__get_order:"), json!([])),
            "text_calls",
        ),
        (
            "unknown",
            openai_answer(None, json!([call("c1", "erp__cancel_everything", "{}")])),
            "unknown_target",
        ),
        (
            "unparsed",
            openai_answer(
                None,
                json!([call("c1", "erp__get_order", "{order_id: 9921")]),
            ),
            "schema_violation",
        ),
    ];
    for (what, answer, counter) in attempts {
        let answer = std::sync::Arc::new(answer);
        let server = serve(move |s, _| {
            let (q, answered) = openai_turn(&s.body);
            if q.contains("Thanks") && !answered {
                Reply::Json(200, vec![], (*answer).clone())
            } else {
                Reply::Json(200, vec![], openai_answer(Some("Done."), json!([])))
            }
        });
        let tmp = tempfile::tempdir().unwrap();
        ok(&run_tiny(
            tmp.path(),
            "openai:m",
            &["--openai-base-url", &server.url],
        ));
        let os = outcomes(tmp.path());
        let o = by_query(&os, "thanks");
        let abstained = what == "none";
        assert_eq!(o["score"]["abstain_ok"], json!(abstained), "{what}: {o}");
        assert_eq!(o["score"]["exact"], json!(abstained), "{what}: {o}");
        if !counter.is_empty() {
            assert_eq!(o["protocol"][counter], json!(1), "{what}: {o}");
        }
    }
}
