//! `gemini:<model>` against a local server that speaks Gemini's `generateContent` as
//! documented (`tests/support/provider.rs` says which page each rule comes from) and
//! answers as discbench's oracle would: the built-in suite exact under every default
//! preset, conversations, `allowed-tools` as `VALIDATED` with `allowedFunctionNames`,
//! thought signatures sent back as received, the implicit cache beside the
//! prediction, prices with thinking and cache reads, record and replay, and what the
//! API does wrong (429 with `RetryInfo`, 500, a cut body, a malformed call, a safety
//! stop, a truncation).
//!
//! No Gemini key exists here: the server checks the key header it is sent against a
//! fake key, and every file a run writes is searched for it.

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::cli::{bin, ok, outcomes, read};
use support::provider::{self, OpenAiCache, World};
use support::server::{serve, Reply, Seen, Server};

const KEY: &str = "gm-test-discbench-4Kd8PLACEHOLDER";
/// Thinking tokens every answer of the local server reports.
const THOUGHTS: u64 = 5;

/// How the local server plays Gemini.
#[derive(Clone, Copy)]
struct Play {
    /// Calls carry an `id` (the API may send one or not).
    ids: bool,
    /// The implicit cache: its minimum prompt, and whether each conversation has its
    /// own (the prediction's rule) or all share one (the provider's).
    cache_min: usize,
    per_conversation: bool,
    /// Whether the cache is emulated at all: counting every piece of every request is
    /// much of what a large run costs the server, so the runs about something else
    /// bill a rough input (a constant per message) and read nothing.
    cache: bool,
}

const PLAY: Play = Play {
    ids: false,
    cache_min: 0,
    per_conversation: true,
    cache: true,
};

/// A local Gemini API. It answers as the oracle would, reads every name it is sent
/// back into the names discbench renders (by Gemini's rule, over every name the
/// scenarios' catalogs render), signs each answer and checks that every model turn
/// comes back exactly as it was answered, signature and all. What it finds wrong is
/// kept in the returned list (a panic would only reach the client as a dropped
/// connection).
fn gemini(world: Arc<World>, scenarios: &[&str], play: Play) -> (Server, Arc<Mutex<Vec<String>>>) {
    let map = provider::rendered_names(scenarios, &discbench::names::GEMINI);
    let problems: Arc<Mutex<Vec<String>>> = Default::default();
    let found = problems.clone();
    let issued: Arc<Mutex<HashMap<String, Value>>> = Default::default();
    let caches: Arc<Mutex<HashMap<String, Arc<OpenAiCache>>>> = Default::default();
    let server = serve(move |s: &Seen, n| {
        let b = &s.body;
        let problem = |p: String| problems.lock().unwrap().push(p);
        if !(s.path.starts_with("/v1beta/models/") && s.path.ends_with(":generateContent")) {
            problem(format!("path {}", s.path));
        }
        if !s.headers.contains(&("x-goog-api-key".into(), KEY.into())) {
            problem("no key header".into());
        }
        // Every model turn comes back as it was answered.
        for c in b["contents"].as_array().into_iter().flatten() {
            if c["role"] != "model" {
                continue;
            }
            let signed: Vec<&str> = (c["parts"].as_array().into_iter().flatten())
                .filter_map(|p| p["thoughtSignature"].as_str())
                .collect();
            match signed.as_slice() {
                [sig] => match issued.lock().unwrap().get(*sig) {
                    Some(parts) if *parts == c["parts"] => {}
                    Some(parts) => problem(format!("parts changed: {parts} → {}", c["parts"])),
                    None => problem(format!("a signature never issued: {sig}")),
                },
                _ => problem(format!("a model turn without its one signature: {c}")),
            }
        }
        let (sent, purpose) = provider::gemini_context(b);
        // The implicit cache, by the assumed rule, over the request as sent.
        let conversation = if play.per_conversation {
            (sent.messages.iter())
                .find_map(|m| match m {
                    discbench::wire::Message::User { content } => Some(content.clone()),
                    _ => None,
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        let billed = if play.cache {
            let cache = (caches.lock().unwrap())
                .entry(conversation)
                .or_insert_with(|| Arc::new(OpenAiCache::with(play.cache_min, 1)))
                .clone();
            cache.bill(&provider::pieces(&sent, world.counter()))
        } else {
            // A rough input without writing the body out again (as much work, in a
            // debug build, as answering it): a constant per message.
            provider::Billed {
                input: 1000 + 100 * sent.messages.len(),
                ..Default::default()
            }
        };
        let back = |n: &str| map.canonical(n).to_string();
        // The request as sent is billed first; then it becomes the oracle's context,
        // renamed in place (a copy would be the whole catalog again).
        let mut cx = sent;
        let tools = std::sync::Arc::get_mut(&mut cx.tools).expect("the context's own tools");
        for t in tools {
            t.name = back(&t.name);
        }
        cx.tool_choice = cx.tool_choice.as_deref().map(back);
        cx.allowed = cx.allowed.map(|a| a.iter().map(|n| back(n)).collect());
        for m in &mut cx.messages {
            match m {
                discbench::wire::Message::Assistant { tool_calls, .. } => {
                    for c in tool_calls {
                        c.name = back(&c.name);
                    }
                }
                discbench::wire::Message::Tool { name, .. } => *name = back(name),
                _ => {}
            }
        }
        let mut r = world.answer(&cx, purpose);
        for c in &mut r.calls {
            c.name = map.wire(&c.name).to_string();
        }
        let out = world
            .counter()
            .message(&discbench::wire::Message::assistant(
                r.text.clone(),
                r.calls.clone(),
            )) as u64;
        let mut usage = json!({
            "promptTokenCount": billed.input,
            "candidatesTokenCount": out,
            "thoughtsTokenCount": THOUGHTS,
            "totalTokenCount": billed.input as u64 + out + THOUGHTS,
        });
        // Gemini leaves the field out when nothing was read.
        if billed.read > 0 {
            usage["cachedContentTokenCount"] = json!(billed.read);
        }
        let sig = format!("U0lH{n:08}");
        let answer = provider::gemini_answer(&r, usage, play.ids, Some(&sig));
        issued
            .lock()
            .unwrap()
            .insert(sig, answer["candidates"][0]["content"]["parts"].clone());
        Reply::Json(200, vec![], answer)
    });
    (server, found)
}

/// Runs `scenarios` under `modes` with `model` against `url`, with the fake key.
fn run(
    dir: &Path,
    scenarios: &[&str],
    modes: &[&str],
    model: &str,
    url: &str,
) -> std::process::Output {
    let mut c = bin();
    c.arg("run").args(scenarios);
    for m in modes {
        c.args(["--mode", m]);
    }
    c.args(["--model", model, "--gemini-base-url", url])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(dir)
        .env("GEMINI_API_KEY", KEY)
        .env_remove("GOOGLE_API_KEY")
        .env_remove("GEMINI_BASE_URL")
        .output()
        .unwrap()
}

fn no_problems(problems: &Mutex<Vec<String>>, label: &str) {
    let p = problems.lock().unwrap();
    assert!(
        p.is_empty(),
        "{label}: {} problems, first: {:?}",
        p.len(),
        &p[..p.len().min(3)]
    );
}

const SUITE: [&str; 4] = [
    "scenarios/enterprise-hub.yaml",
    "scenarios/mcp-reference.yaml",
    "scenarios/large-catalog.yaml",
    "scenarios/scale-hub.yaml",
];

/// The built-in suite's single-query scenarios under every default preset: every
/// query exact, every request addressed and keyed as documented, its bodies valid for
/// google-genai's types, every answer's signed parts sent back as received, usage
/// with thinking recorded, and no key in any file.
#[test]
fn the_built_in_suite_runs_exact_under_every_default_preset() {
    // The presets side by side (each its own server and run): what one leaves idle —
    // its world being built, the server between requests — another uses. Every
    // preset's bodies are checked against the SDK's types in one go at the end.
    let mut bodies = Vec::new();
    std::thread::scope(|s| {
        let runs: Vec<_> = discbench::strategy::mode::PRESETS
            .iter()
            .map(|&mode| s.spawn(move || suite_under(mode)))
            .collect();
        for r in runs {
            bodies.extend(r.join().expect("a preset's run passed its checks"));
        }
    });
    let checked = support::sdk::check(&bodies, "gemini", "gemini, every default preset");
    // Each shape once: a first request, and one carrying a model turn and the
    // responses to its calls (every key path the others hold is in these).
    if support::sdk::python().is_some() {
        assert!(checked >= 2, "{checked} bodies checked");
    }
}

/// The single-query suite under `mode` against its own local server, checked; the
/// request bodies the server received.
fn suite_under(mode: &str) -> Vec<Seen> {
    let world = Arc::new(World::new(&SUITE, mode));
    let (server, problems) = gemini(
        world,
        &SUITE,
        Play {
            cache: false,
            ..PLAY
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        &SUITE,
        &[mode],
        "gemini:gemini-test",
        &server.url,
    );
    ok(&o);
    no_problems(&problems, mode);
    let seen = server.seen.lock().unwrap().clone();
    let dir = tmp.path().join("x");
    let os = outcomes(&dir);
    assert_eq!(os.len(), 205, "{mode}");
    let mut requests = 0;
    for o in &os {
        assert_eq!(
            o["score"]["exact"],
            json!(true),
            "{mode}: {} {}",
            o["query_id"],
            o["protocol"]
        );
        for r in o["requests"].as_array().unwrap() {
            let u = &r["usage"];
            assert_eq!(u["thinking"], json!(THOUGHTS), "{u}");
            assert!(
                u["output"].as_u64().unwrap() > THOUGHTS,
                "thinking is part of the output: {u}"
            );
            assert!(
                u["cached_input"].is_u64(),
                "every request reports its cache reads: {u}"
            );
            requests += 1;
        }
    }
    assert_eq!(
        requests,
        seen.iter()
            .filter(|s| s.body["toolConfig"]["functionCallingConfig"]["mode"] != "ANY")
            .count(),
        "{mode}"
    );
    // The schemas Gemini may not honour in full are said before the run: under
    // legacy, and where tool search or retrieval may declare them, scale-hub's MCP
    // tools are declarations; under the progressive presets none is.
    let err = String::from_utf8_lossy(&o.stderr);
    let noted = err.contains("tool schemas of `scale-hub` use JSON Schema keywords outside");
    assert_eq!(
        noted,
        matches!(mode, "legacy" | "tool-search" | "retrieval"),
        "{mode}: {err}"
    );
    if mode == "progressive" {
        support::cli::assert_no_secret(tmp.path(), &o, KEY);
    }
    seen
}

/// Conversations, with call ids from the API: every turn exact, each response sent
/// back with its call's id, and the implicit cache — emulated by the assumed rule,
/// one cache per conversation — reads request by request the prefix discbench
/// predicts, across turns. Priced from the built-in table (`gemini-2.5-flash`):
/// cache reads at their own rate, thinking as output.
#[test]
fn conversations_run_exact_and_the_implicit_cache_reads_the_prediction() {
    let scenario = "scenarios/conversations.yaml";
    let world = Arc::new(World::new(&[scenario], "progressive"));
    let (server, problems) = gemini(world, &[scenario], Play { ids: true, ..PLAY });
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        &[scenario],
        &["progressive"],
        "gemini:gemini-2.5-flash",
        &server.url,
    );
    ok(&o);
    no_problems(&problems, "conversations");
    // The cache is in every report.
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("prompt cache, conversations progressive gemini:gemini-2.5-flash: read"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let dir = tmp.path().join("x");
    let os = outcomes(&dir);
    assert_eq!(os.len(), 43);
    let (mut later_reads, mut expected_cost) = (0, 0.0);
    for o in &os {
        let turns = o["conversation"].as_array().unwrap();
        for t in turns {
            assert_eq!(t["score"]["exact"], json!(true), "{} {t}", o["query_id"]);
        }
        let requests = o["requests"].as_array().unwrap();
        for (i, r) in requests.iter().enumerate() {
            let u = &r["usage"];
            let (read, predicted) = (
                u["cached_input"].as_u64().unwrap(),
                r["cached_prefix"].as_u64().unwrap_or(0),
            );
            assert_eq!(read, predicted, "{} request {}", o["query_id"], i + 1);
            let (input, out) = (u["input"].as_u64().unwrap(), u["output"].as_u64().unwrap());
            expected_cost +=
                ((input - read) as f64 * 0.3 + read as f64 * 0.03 + out as f64 * 2.5) / 1e6;
        }
        for t in &turns[1..] {
            let first = t["first_request_index"].as_u64().unwrap() as usize;
            later_reads += usize::from(requests[first]["usage"]["cached_input"].as_u64() > Some(0));
        }
        let cost = o["cost_usd"].as_f64().unwrap();
        // The whole episode's usage (the selection step's requests included), each
        // kind at its price.
        let u = &o["usage"];
        let (input, read, out) = (
            u["input"].as_u64().unwrap() as f64,
            u["cached_input"].as_u64().unwrap() as f64,
            u["output"].as_u64().unwrap() as f64,
        );
        let own = ((input - read) * 0.3 + read * 0.03 + out * 2.5) / 1e6;
        assert!(
            (cost - own).abs() < 1e-9,
            "{} {cost} vs {own}",
            o["query_id"]
        );
    }
    assert!(
        later_reads > 20,
        "later turns read the conversation before them: {later_reads}"
    );
    let summary: Value = serde_json::from_str(&read(&dir.join("summary.json"))).unwrap();
    let g = &summary["groups"][0];
    assert_eq!(g["cache"]["ratio"], json!(1.0), "{}", g["cache"]);
    assert!((g["cache"]["cost_reported"].as_f64().unwrap() - expected_cost).abs() < 1e-9);
    let csv = read(&dir.join("summary.csv"));
    assert!(csv.lines().next().unwrap().contains("cache_read"), "{csv}");
    assert!(read(&dir.join("summary.md")).contains("## Prompt cache"));
    // Ids came with the calls, so every response names its call (checked by the
    // server); and the conversations' requests hold earlier turns' answers.
    let seen = server.seen.lock().unwrap().clone();
    let with_ids = seen
        .iter()
        .flat_map(|s| s.body["contents"].as_array().unwrap().clone())
        .flat_map(|c| c["parts"].as_array().unwrap().clone())
        .filter(|p| p["functionResponse"]["id"].is_string())
        .count();
    assert!(with_ids > 100, "{with_ids}");
}

/// Where Gemini's cache would part from the prediction, the measure shows it (under
/// the assumed rule): below the model's minimum (2,048 tokens for Gemini 2.5) nothing
/// is read though discbench predicts a prefix; one cache for every conversation serves
/// an episode's first request what another sent, which discbench predicts as uncached.
#[test]
fn the_implicit_cache_s_minimum_and_sharing_show_in_the_measure() {
    let scenario = "fixtures/snapshot/tiny.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    let (server, problems) = gemini(
        world.clone(),
        &[scenario],
        Play {
            cache_min: 2048,
            ..PLAY
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    ok(&run(
        tmp.path(),
        &[scenario],
        &["legacy"],
        "gemini:gemini-test",
        &server.url,
    ));
    no_problems(&problems, "minimum");
    let os = outcomes(&tmp.path().join("x"));
    let sum = |k: &str| -> u64 {
        os.iter()
            .filter_map(|o| o.get("cache"))
            .map(|c| c[k].as_u64().unwrap())
            .sum()
    };
    assert_eq!(sum("read"), 0);
    assert!(sum("predicted") > 0);

    let (server, problems) = gemini(
        world,
        &[scenario],
        Play {
            per_conversation: false,
            ..PLAY
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut c = bin();
    c.args([
        "run",
        scenario,
        "--mode",
        "legacy",
        "--model",
        "gemini:gemini-test",
    ])
    .args(["--gemini-base-url", &server.url, "--jobs", "1"])
    .args(["--run-id", "x", "--no-progress", "--out"])
    .arg(tmp.path())
    // Both names set: GOOGLE_API_KEY wins, as in google-genai.
    .env("GEMINI_API_KEY", "not-this-one")
    .env("GOOGLE_API_KEY", KEY);
    ok(&c.output().unwrap());
    no_problems(&problems, "shared");
    let os = outcomes(&tmp.path().join("x"));
    let first_reads = os
        .iter()
        .filter(|o| o["requests"][0]["usage"]["cached_input"].as_u64().unwrap() > 0)
        .count();
    assert!(first_reads >= os.len() - 1, "{first_reads} of {}", os.len());
    assert!(os
        .iter()
        .all(|o| o["requests"][0]["cached_prefix"].as_u64().unwrap_or(0) == 0));
}

/// `allowed-tools`: every request of a conversation sends the same declarations, and
/// what may be called goes in `toolConfig` as `VALIDATED` with `allowedFunctionNames`
/// (never `ANY`, which would force a call); every query exact.
#[test]
fn allowed_tools_are_validated_allowed_function_names_and_the_list_never_changes() {
    let scenario = "scenarios/mcp-reference.yaml";
    let world = Arc::new(World::new(&[scenario], "allowed-tools"));
    let (server, problems) = gemini(world, &[scenario], PLAY);
    let tmp = tempfile::tempdir().unwrap();
    ok(&run(
        tmp.path(),
        &[scenario],
        &["allowed-tools"],
        "gemini:gemini-test",
        &server.url,
    ));
    no_problems(&problems, "allowed-tools");
    let seen = server.seen.lock().unwrap().clone();
    support::sdk::check(&seen, "gemini", "gemini, allowed-tools");
    let mut lists: HashMap<String, Value> = HashMap::new();
    let mut limited = 0;
    for s in &seen {
        let b = &s.body;
        let config = &b["toolConfig"]["functionCallingConfig"];
        if config["mode"] == "ANY" {
            // The selection step's own request: one forced name.
            assert_eq!(config["allowedFunctionNames"].as_array().unwrap().len(), 1);
            continue;
        }
        if config["mode"] == "VALIDATED" {
            let allowed = config["allowedFunctionNames"].as_array().unwrap();
            let declared = b["tools"][0]["functionDeclarations"].as_array().unwrap();
            assert!(allowed.len() < declared.len());
            limited += 1;
        } else {
            assert_eq!(config, &json!({"mode": "AUTO"}), "where nothing is limited");
        }
        let first = b["contents"][0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .to_string();
        let list = lists.entry(first).or_insert_with(|| b["tools"].clone());
        assert_eq!(
            list, &b["tools"],
            "the declarations changed within a conversation"
        );
    }
    assert!(limited > 0);
    for o in outcomes(&tmp.path().join("x")) {
        assert_eq!(o["score"]["exact"], json!(true), "{}", o["query_id"]);
    }
}

/// A Gemini run recorded replays with no provider at all to the same summary, and the
/// replay sends the same wire names (the recording says whose rule they followed).
#[test]
fn a_gemini_run_records_and_replays() {
    let scenario = "scenarios/mcp-reference.yaml";
    let world = Arc::new(World::new(&[scenario], "progressive"));
    let (server, problems) = gemini(world, &[scenario], PLAY);
    let tmp = tempfile::tempdir().unwrap();
    ok(&bin()
        .args(["run", scenario, "--mode", "progressive", "--record"])
        .args([
            "--model",
            "gemini:gemini-test",
            "--gemini-base-url",
            &server.url,
        ])
        .args(["--run-id", "rec", "--no-progress", "--out"])
        .arg(tmp.path())
        .env("GEMINI_API_KEY", KEY)
        .output()
        .unwrap());
    no_problems(&problems, "record");
    let rec = tmp.path().join("rec");
    assert!(read(&rec.join("recordings.jsonl")).contains("\"names\":\"gemini\""));
    ok(&bin()
        .args(["run", scenario, "--mode", "progressive"])
        .arg("--model")
        .arg(format!("replay:{}", rec.display()))
        .args(["--run-id", "rep", "--no-progress", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap());
    let summary = |d: &str| {
        let mut v: Value =
            serde_json::from_str(&read(&tmp.path().join(d).join("summary.json"))).unwrap();
        v["run_id"] = json!("");
        v
    };
    assert_eq!(summary("rec"), summary("rep"));
}

/// What the API does wrong. The refund query's first request meets a 429 whose body
/// asks for 0.9 s (`google.rpc.RetryInfo`, no header), then a 500, then a body cut
/// short, then an answer: retried, honouring the wait, and exact. A
/// `MALFORMED_FUNCTION_CALL` on a query that expects no call is a malformed call
/// (never an abstention); a `SAFETY` stop is a refusal; `MAX_TOKENS` a truncation.
#[test]
fn faults_are_retried_and_malformed_answers_scored() {
    let scenario = "fixtures/snapshot/tiny.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    let attempts: Arc<Mutex<HashMap<String, usize>>> = Default::default();
    let server = serve(move |s: &Seen, _| {
        let (cx, purpose) = provider::gemini_context(&s.body);
        let first = cx.messages.len() == 1;
        let query = cx.query().to_string();
        let n = {
            let mut a = attempts.lock().unwrap();
            let n = a.entry(query.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let finish = |reason: &str, message: Option<&str>, parts: Value| {
            let mut c =
                json!({"content": {"role": "model", "parts": parts}, "finishReason": reason});
            if let Some(m) = message {
                c["finishMessage"] = json!(m);
            }
            json!({"candidates": [c], "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 3}})
        };
        let done = finish("STOP", None, json!([{"text": "Done."}]));
        if query.contains("9921") && first {
            return match n {
                1 => Reply::Json(
                    429,
                    vec![],
                    json!({"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED",
                        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.9s"}]}}),
                ),
                2 => Reply::Json(
                    500,
                    vec![],
                    json!({"error": {"code": 500, "status": "INTERNAL"}}),
                ),
                3 => Reply::Cut,
                _ => Reply::Json(
                    200,
                    vec![],
                    provider::gemini_answer(
                        &world.answer(&cx, purpose),
                        json!({"promptTokenCount": 100, "candidatesTokenCount": 3}),
                        false,
                        None,
                    ),
                ),
            };
        }
        if query.contains("9921") {
            let r = world.answer(&cx, purpose);
            return Reply::Json(
                200,
                vec![],
                provider::gemini_answer(
                    &r,
                    json!({"promptTokenCount": 100, "candidatesTokenCount": 3}),
                    false,
                    None,
                ),
            );
        }
        Reply::Json(
            200,
            vec![],
            match (query.as_str(), first) {
                ("Thanks!", true) => finish(
                    "MALFORMED_FUNCTION_CALL",
                    Some("Malformed function call: print(default_api.erp__get_order(order_id=9921"),
                    json!([]),
                ),
                (q, true) if q.contains("works here") => finish("SAFETY", None, json!([])),
                (q, true) if q.contains("Crash") => {
                    finish("MAX_TOKENS", None, json!([{"text": "I will open"}]))
                }
                _ => done,
            },
        )
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = run(
        tmp.path(),
        &[scenario],
        &["legacy"],
        "gemini:gemini-test",
        &server.url,
    );
    ok(&o);
    let os = outcomes(&tmp.path().join("x"));
    let by = |q: &str| os.iter().find(|o| o["query_id"] == q).unwrap().clone();
    let refund = by("refund");
    assert!(refund["infra_error"].is_null(), "{refund}");
    assert_eq!(refund["score"]["exact"], json!(true), "{refund}");
    let seen = server.seen.lock().unwrap().clone();
    let firsts: Vec<&Seen> = seen
        .iter()
        .filter(|s| {
            let c = s.body["contents"].as_array().unwrap();
            c.len() == 1 && c[0]["parts"][0]["text"].as_str().unwrap().contains("9921")
        })
        .collect();
    assert_eq!(firsts.len(), 4, "429, 500, cut, then the answer");
    let gap = firsts[1].at.duration_since(firsts[0].at);
    // The body's 0.9 s, not the first backoff (0.25–0.5 s).
    assert!(gap >= Duration::from_millis(900), "{gap:?}");

    let thanks = by("thanks");
    assert_eq!(thanks["score"]["abstain_ok"], json!(false), "{thanks}");
    assert_eq!(thanks["score"]["exact"], json!(false));
    let call = &thanks["calls"][0];
    assert_eq!(call["tool"], json!("erp__get_order"), "{call}");
    assert_eq!(call["malformed"], json!(true), "{call}");
    assert_eq!(thanks["protocol"]["schema_violation"], json!(1), "{thanks}");
    // The next request holds no call the model never made: the API's words and the
    // error go back as text.
    let after = seen
        .iter()
        .find(|s| {
            let c = s.body["contents"].as_array().unwrap();
            c.len() == 3 && c[0]["parts"][0]["text"] == "Thanks!"
        })
        .expect("a request after the malformed call");
    let contents = after.body["contents"].as_array().unwrap();
    assert_eq!(
        contents[1]["parts"],
        json!([{"text": "Malformed function call: print(default_api.erp__get_order(order_id=9921"}])
    );
    assert!(
        contents[2]["parts"][0]["text"].is_string(),
        "{}",
        contents[2]
    );
    assert!(contents
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .all(|p| p.get("functionCall").is_none() && p.get("functionResponse").is_none()));
    assert_eq!(by("people")["protocol"]["refusals"], json!(1));
    let issue = by("issue");
    assert_eq!(issue["protocol"]["truncated"], json!(1), "{issue}");
    assert_eq!(issue["requests"][0]["truncated"], json!(true));
}

/// A models-file entry of `provider: gemini` names its key's variable, and its
/// outcomes carry the entry's name.
#[test]
fn a_models_file_entry_speaks_gemini_with_its_own_key_variable() {
    let scenario = "fixtures/snapshot/tiny.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    let (server, problems) = gemini(world, &[scenario], PLAY);
    let tmp = tempfile::tempdir().unwrap();
    let models = tmp.path().join("models.yaml");
    std::fs::write(
        &models,
        "models:\n  - name: flash\n    provider: gemini\n    model: gemini-2.5-flash\n    api_key_env: MY_GEMINI_KEY\n",
    )
    .unwrap();
    ok(&bin()
        .args(["run", scenario, "--mode", "legacy", "--model", "flash"])
        .arg("--models")
        .arg(&models)
        .args(["--gemini-base-url", &server.url])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(tmp.path())
        .env("MY_GEMINI_KEY", KEY)
        .env("GEMINI_API_KEY", "not-this-one")
        .output()
        .unwrap());
    no_problems(&problems, "models file");
    let os = outcomes(&tmp.path().join("x"));
    assert_eq!(os.len(), 4);
    for o in &os {
        assert_eq!(o["model"], json!("flash"));
        assert_eq!(o["score"]["exact"], json!(true), "{}", o["query_id"]);
        // Priced from the built-in table by the model id.
        assert!(o["cost_usd"].as_f64().unwrap() > 0.0);
    }
}

/// `tokens --names gemini` counts the names Gemini is sent and says, tool by tool,
/// which schemas use keywords outside the subset Gemini documents (sent as written).
#[test]
fn tokens_under_gemini_s_names_list_what_its_schema_subset_may_not_honour() {
    let o = bin()
        .args([
            "tokens",
            "scenarios/scale-hub.yaml",
            "--mode",
            "legacy",
            "--names",
            "gemini",
        ])
        .output()
        .unwrap();
    ok(&o);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("as sent to gemini"), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("scale-hub / mongodb__find:"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("`propertyNames` at /properties/sort"),
        "{line}"
    );
    assert!(out.contains("tools send schemas Gemini may not honour in full"));
    // A catalog within the subset says so.
    let o = bin()
        .args([
            "tokens",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "legacy",
            "--names",
            "gemini",
        ])
        .output()
        .unwrap();
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("every schema keeps to the JSON Schema keywords Gemini documents"));
}
