//! The providers' own mechanisms, spoken to a local server that plays the provider:
//! prompt caching on the Messages API (breakpoints, TTLs, the cache measured against
//! discbench's prediction, cache reads and writes priced at their own rates).
//!
//! No provider key exists here: the server speaks the documented wire shapes
//! (`tests/support/provider.rs` says which page each rule comes from) and answers as
//! discbench's oracle would, so a run against it must be exact, and where its cache
//! follows a rule discbench's prediction follows too, the two must agree request by
//! request.

mod support;

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use support::cli::{bin, ok, outcomes, read};
use support::provider::{self, AnthropicCache, World};
use support::server::{serve, Reply, Seen};

/// How a local Messages API bills its cache.
#[derive(Clone, Copy)]
struct Billing {
    /// The model's minimum cacheable prefix.
    min: usize,
    /// One cache per conversation (the rule discbench predicts), or one for all.
    per_conversation: bool,
}

/// A Messages API that answers as the oracle would, with its cache emulated.
fn anthropic(world: Arc<World>, billing: Billing) -> support::server::Server {
    let caches: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<AnthropicCache>>>> =
        Default::default();
    serve(move |s: &Seen, _| {
        assert_eq!(s.path, "/v1/messages");
        let (cx, purpose) = provider::anthropic_context(&s.body);
        // A conversation is named by its first user message (its system prompt may
        // grow at a turn that adds to the catalog).
        let conversation = if billing.per_conversation {
            (cx.messages.iter())
                .find_map(|m| match m {
                    discbench::wire::Message::User { content } => Some(content.clone()),
                    _ => None,
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        let cache = caches
            .lock()
            .unwrap()
            .entry(conversation)
            .or_insert_with(|| Arc::new(AnthropicCache::new(billing.min)))
            .clone();
        let pieces = provider::pieces(&cx, world.counter());
        let marks = provider::anthropic_marks(&s.body, &cx);
        let b = cache.bill(&pieces, &marks);
        let r = world.answer(&cx, purpose);
        let out = world
            .counter()
            .message(&discbench::wire::Message::assistant(
                r.text.clone(),
                r.calls.clone(),
            ));
        let usage = json!({
            "input_tokens": b.input - b.read - b.written,
            "cache_read_input_tokens": b.read,
            "cache_creation_input_tokens": b.written,
            "output_tokens": out,
        });
        Reply::Json(200, vec![], provider::anthropic_answer(&r, usage))
    })
}

const MODELS: &str = "models:\n  - name: claude\n    provider: anthropic\n    model: claude-test\n    prices: { input: 3.0, output: 15.0 }\n";

/// Runs `scenario` under `mode` against `url` with the models file's `claude`.
fn run(dir: &Path, scenario: &str, mode: &str, url: &str, extra: &[&str]) -> std::process::Output {
    let models = dir.join("models.yaml");
    std::fs::write(&models, MODELS).unwrap();
    bin()
        .args(["run", scenario, "--mode", mode, "--model", "claude"])
        .arg("--models")
        .arg(&models)
        .args([
            "--anthropic-base-url",
            url,
            "--run-id",
            "x",
            "--no-progress",
        ])
        .arg("--out")
        .arg(dir)
        .args(extra)
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap()
}

#[test]
fn anthropic_requests_carry_breakpoints_and_the_measured_cache_equals_the_prediction() {
    let scenario = "scenarios/mcp-reference.yaml";
    let world = Arc::new(World::new(&[scenario], "progressive"));
    let server = anthropic(
        world,
        Billing {
            min: 0,
            per_conversation: true,
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    let o = run(tmp.path(), scenario, "progressive", &server.url, &[]);
    ok(&o);
    let dir = tmp.path().join("x");
    // Every report says it: the terminal table, the CSV, the Markdown below.
    assert!(String::from_utf8_lossy(&o.stdout)
        .contains("prompt cache, mcp-reference progressive claude: read"));
    let csv = read(&dir.join("summary.csv"));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for c in [
        "cache_read",
        "cache_predicted",
        "cache_written",
        "cache_cost_reported",
        "cache_cost_predicted",
    ] {
        assert!(header.contains(&c), "summary.csv lacks {c}");
    }
    if let Ok(keep) = std::env::var("KEEP_RUN") {
        let _ = std::fs::remove_dir_all(&keep);
        std::fs::create_dir_all(&keep).unwrap();
        for f in ["outcomes.jsonl", "summary.md"] {
            std::fs::copy(dir.join(f), Path::new(&keep).join(f)).unwrap();
        }
    }

    // Every request: the last tool, the system prompt and the newest message's last
    // block are breakpoints, with the TTL asked for; no more than four.
    let seen = server.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    support::sdk::check(&seen, "anthropic", "anthropic, progressive, cache on");
    for s in &seen {
        let b = &s.body;
        let mark = json!({"type": "ephemeral", "ttl": "5m"});
        let tools = b["tools"].as_array().unwrap();
        assert_eq!(tools.last().unwrap()["cache_control"], mark);
        assert!(tools[..tools.len() - 1]
            .iter()
            .all(|t| t.get("cache_control").is_none()));
        assert_eq!(b["system"][0]["cache_control"], mark);
        let last = b["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(
            last["content"].as_array().unwrap().last().unwrap()["cache_control"],
            mark
        );
        assert!(b.to_string().matches("cache_control").count() <= 4);
    }

    // The oracle's answers: every query exact. The provider's cache reads equal the
    // prefix discbench predicts, request by request.
    let os = outcomes(&dir);
    assert_eq!(os.len(), 42);
    let mut requests = 0;
    let mut expected_cost = 0.0;
    for o in &os {
        assert_eq!(o["score"]["exact"], json!(true), "{}", o["query_id"]);
        for t in o["requests"].as_array().unwrap() {
            let u = &t["usage"];
            assert_eq!(
                u["cached_input"].as_u64().unwrap(),
                t["cached_prefix"].as_u64().unwrap_or(0),
                "{} turn {}",
                o["query_id"],
                t["turn"]
            );
            requests += 1;
            let (input, read, write, out) = (
                u["input"].as_u64().unwrap() as f64,
                u["cached_input"].as_u64().unwrap() as f64,
                u["cache_write"].as_u64().unwrap() as f64,
                u["output"].as_u64().unwrap() as f64,
            );
            // Priced apart: reads 0.1×, 5-minute writes 1.25× the input price.
            expected_cost +=
                ((input - read - write) * 3.0 + read * 0.3 + write * 3.75 + out * 15.0) / 1e6;
        }
        let c = &o["cache"];
        assert_eq!(c["read"], c["predicted"], "{}", o["query_id"]);
    }
    let summary: Value = serde_json::from_str(&read(&dir.join("summary.json"))).unwrap();
    let g = &summary["groups"][0];
    assert_eq!(g["cache"]["requests"].as_u64().unwrap(), requests);
    assert_eq!(g["cache"]["ratio"], json!(1.0));
    assert!(g["cache"]["read"].as_u64().unwrap() > 0);
    let cost = g["cost_usd"]["total"].as_f64().unwrap();
    assert!(
        (cost - expected_cost).abs() < 1e-9,
        "{cost} vs {expected_cost}"
    );
    assert!((g["cache"]["cost_reported"].as_f64().unwrap() - expected_cost).abs() < 1e-9);
    // Writing what is not read costs the same as predicted, read for read.
    assert!(
        (g["cache"]["cost_predicted"].as_f64().unwrap() - expected_cost).abs() < 1e-9,
        "{}",
        g["cache"]
    );
    let md = read(&dir.join("summary.md"));
    assert!(md.contains("## Prompt cache"), "{md}");
    let run: Value = serde_json::from_str(&read(&dir.join("run.json"))).unwrap();
    assert_eq!(
        run["settings"]["prompt_cache"],
        json!({"enabled": true, "ttl": "5m", "read_multiplier": 0.1, "write_multiplier": 1.25})
    );
}

/// Conversations on the Messages API: the breakpoint on the newest message moves
/// forward with every request, across turns, so each request reads what the one
/// before it wrote — the whole conversation before it — and the provider's reads
/// (emulated by the rules its prompt-caching page states) equal discbench's
/// prediction request by request, where a turn's `adds` changes the system prompt too.
/// Under mcp-resource, whose tool list changes only where a turn adds a server: there
/// (and wherever a list keeps an earlier list's first tools but not all) discbench
/// counts a prefix that ends inside the tool list, where Anthropic has no breakpoint
/// to read it (the docs list it among the differences).
#[test]
fn a_conversation_s_anthropic_breakpoint_moves_and_the_cache_equals_the_prediction() {
    let scenario = "scenarios/conversations.yaml";
    let world = Arc::new(World::new(&[scenario], "mcp-resource"));
    let server = anthropic(
        world,
        Billing {
            min: 0,
            per_conversation: true,
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    let picked = [
        "printers-9987-approval-slack-added",
        "refund-dock-9921-stepwise",
        "repeat-damage-sev2-escalation",
    ];
    let mut extra = Vec::new();
    for q in picked {
        extra.extend(["--query", q]);
    }
    let o = run(tmp.path(), scenario, "mcp-resource", &server.url, &extra);
    ok(&o);
    let os = outcomes(&tmp.path().join("x"));
    assert_eq!(os.len(), picked.len());
    let (mut later_reads, mut grown) = (0, 0);
    for o in &os {
        let turns = o["conversation"].as_array().unwrap();
        for t in turns {
            assert_eq!(t["score"]["exact"], json!(true), "{} {t}", o["query_id"]);
        }
        let requests = o["requests"].as_array().unwrap();
        for (i, r) in requests.iter().enumerate() {
            let (read, predicted) = (
                r["usage"]["cached_input"].as_u64().unwrap(),
                r["cached_prefix"].as_u64().unwrap_or(0),
            );
            // The added server's tools sort into the list: the prefix discbench counts
            // ends inside the tool list, where no breakpoint was written.
            if i > 0 && r["tools_visible"] != requests[i - 1]["tools_visible"] {
                grown += 1;
                assert!(read <= predicted, "{} request {}", o["query_id"], i + 1);
            } else {
                assert_eq!(read, predicted, "{} request {}", o["query_id"], i + 1);
            }
        }
        for t in &turns[1..] {
            let first = t["first_request_index"].as_u64().unwrap() as usize;
            later_reads += usize::from(requests[first]["usage"]["cached_input"].as_u64() > Some(0));
        }
    }
    assert!(
        later_reads > 0,
        "later turns read the conversation before them"
    );
    assert!(grown > 0, "the added server changes the tool list");
    // The newest message's last block carries the moving breakpoint on every request.
    let seen = server.seen.lock().unwrap().clone();
    let mark = json!({"type": "ephemeral", "ttl": "5m"});
    assert!(seen.len() > 12, "requests of several turns");
    for s in &seen {
        let messages = s.body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        assert_eq!(
            last["content"].as_array().unwrap().last().unwrap()["cache_control"],
            mark
        );
    }
}

/// Where the provider's rules part from the prediction, the measure shows it: a
/// prefix shorter than the model's minimum is not cached at all; a cache shared by
/// every conversation serves the first request of an episode the tools and system
/// prompt that another wrote, which discbench (within an episode) predicts as
/// uncached. `--cache-ttl 1h` asks for the hour and prices writes at 2×.
#[test]
fn the_provider_rules_discbench_does_not_predict_show_in_the_measure() {
    let scenario = "fixtures/snapshot/tiny.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    // A minimum of 2,048 tokens (Sonnet 4.6's, by the prompt-caching page): the tiny
    // scenario's requests are all shorter, so nothing is read though discbench
    // predicts a prefix for every second request.
    let server = anthropic(
        world.clone(),
        Billing {
            min: 2048,
            per_conversation: true,
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    ok(&run(tmp.path(), scenario, "legacy", &server.url, &[]));
    let os = outcomes(&tmp.path().join("x"));
    let (cache_read, predicted): (u64, u64) = os
        .iter()
        .filter_map(|o| o.get("cache"))
        .map(|c| {
            (
                c["read"].as_u64().unwrap(),
                c["predicted"].as_u64().unwrap(),
            )
        })
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert_eq!(cache_read, 0);
    assert!(predicted > 0);

    // One cache for all conversations, one episode at a time: later episodes read
    // the shared tools and system prompt on their first request.
    let server = anthropic(
        world,
        Billing {
            min: 0,
            per_conversation: false,
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    ok(&run(
        tmp.path(),
        scenario,
        "legacy",
        &server.url,
        &["--jobs", "1", "--cache-ttl", "1h"],
    ));
    let os = outcomes(&tmp.path().join("x"));
    let first_reads = os
        .iter()
        .filter(|o| o["requests"][0]["usage"]["cached_input"].as_u64().unwrap() > 0)
        .count();
    assert!(first_reads >= os.len() - 1, "{first_reads} of {}", os.len());
    assert!(os
        .iter()
        .all(|o| o["requests"][0]["cached_prefix"].as_u64().unwrap_or(0) == 0));
    let seen = server.seen.lock().unwrap().clone();
    assert!(seen
        .iter()
        .all(|s| s.body["system"][0]["cache_control"]["ttl"] == "1h"));
    let run: Value = serde_json::from_str(&read(&tmp.path().join("x/run.json"))).unwrap();
    assert_eq!(
        run["settings"]["prompt_cache"]["write_multiplier"],
        json!(2.0)
    );
}

#[test]
fn prompt_cache_off_sends_no_breakpoint() {
    let scenario = "fixtures/snapshot/tiny.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    let server = anthropic(
        world,
        Billing {
            min: 0,
            per_conversation: true,
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    ok(&run(
        tmp.path(),
        scenario,
        "legacy",
        &server.url,
        &["--prompt-cache", "off"],
    ));
    let seen = server.seen.lock().unwrap().clone();
    assert!(!seen.is_empty());
    support::sdk::check(&seen, "anthropic", "anthropic, legacy, cache off");
    for s in &seen {
        assert!(!s.body.to_string().contains("cache_control"), "{}", s.body);
        assert!(s.body["system"].is_string());
    }
    let run: Value = serde_json::from_str(&read(&tmp.path().join("x/run.json"))).unwrap();
    assert_eq!(run["settings"]["prompt_cache"]["enabled"], json!(false));
}

/// A Responses API that answers as the oracle would, with OpenAI's automatic cache
/// emulated, one cache per `prompt_cache_key`.
fn responses(world: Arc<World>) -> support::server::Server {
    let caches: Arc<
        std::sync::Mutex<std::collections::HashMap<String, Arc<provider::OpenAiCache>>>,
    > = Default::default();
    serve(move |s: &Seen, _| {
        assert_eq!(s.path, "/v1/responses");
        let (cx, purpose) = provider::responses_context(&s.body);
        let key = s.body["prompt_cache_key"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let cache = caches.lock().unwrap().entry(key).or_default().clone();
        let b = cache.bill(&provider::pieces(&cx, world.counter()));
        let r = world.answer(&cx, purpose);
        let out = world
            .counter()
            .message(&discbench::wire::Message::assistant(
                r.text.clone(),
                r.calls.clone(),
            ));
        let usage = json!({
            "input_tokens": b.input,
            "input_tokens_details": {"cached_tokens": b.read},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": b.input + out,
        });
        Reply::Json(200, vec![], provider::responses_answer(&s.body, &r, usage))
    })
}

/// The Responses API: the whole conversation in `input` (store off), flat function
/// tools, one `prompt_cache_key` per conversation; every query exact, and the cache
/// OpenAI documents (automatic from 1,024 tokens, in 128-token steps) reads the
/// predicted prefix rounded down to its step.
#[test]
fn openai_responses_answers_exact_and_its_cache_reads_the_prediction_in_128_token_steps() {
    let scenario = "scenarios/mcp-reference.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    let server = responses(world);
    let tmp = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["run", scenario, "--mode", "legacy"])
        .args(["--model", "openai-responses:gpt-test"])
        .args(["--openai-base-url", &format!("{}/v1", server.url)])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(tmp.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    ok(&o);
    let seen = server.seen.lock().unwrap().clone();
    support::sdk::check(&seen, "responses", "responses, legacy (namespaces)");
    let catalog = discbench::scenario::load(Path::new(scenario))
        .unwrap()
        .catalog;
    let legacy = catalog.legacy_tool_names();
    let descriptions: Vec<String> = catalog
        .mcp_servers
        .iter()
        .map(|m| match m.description.as_str() {
            "" => format!("The tools of the MCP server {}.", m.name),
            d => d.to_string(),
        })
        .collect();
    let expected_namespaces: Vec<(&str, &str, Vec<&str>)> = catalog
        .mcp_servers
        .iter()
        .zip(&descriptions)
        .map(|(m, d)| {
            let tools = m.tools.iter().map(|t| {
                legacy
                    [&discbench::catalog::Address::Mcp(m.name.clone(), t.name.clone()).to_string()]
                    .as_str()
            });
            (m.name.as_str(), d.as_str(), tools.collect())
        })
        .collect();
    assert_eq!(expected_namespaces.len(), 8);
    let mut namespaced_calls = 0;
    let mut namespaced = 0;
    let mut keys: std::collections::HashMap<String, String> = Default::default();
    for s in &seen {
        let b = &s.body;
        assert_eq!(b["store"], json!(false));
        assert_eq!(b["model"], json!("gpt-test"));
        // Each MCP server is one namespace with its description, holding the tools of
        // it the request lists, under the names every other backend sends, in
        // catalog order; a function outside a namespace is a meta-tool.
        for t in b["tools"].as_array().unwrap() {
            if t["type"] == "function" {
                let name = t["name"].as_str().unwrap();
                assert!(
                    ["request_tools", "select_tools"].contains(&name),
                    "`{name}` stands alone"
                );
                continue;
            }
            assert_eq!(t["type"], json!("namespace"), "{t}");
            let (_, description, tools) = expected_namespaces
                .iter()
                .find(|(n, ..)| t["name"] == json!(n))
                .unwrap_or_else(|| panic!("no MCP server is named {}", t["name"]));
            assert_eq!(t["description"], json!(description));
            let listed: Vec<&str> = t["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["name"].as_str().unwrap())
                .collect();
            let in_order: Vec<&str> = tools
                .iter()
                .copied()
                .filter(|n| listed.contains(n))
                .collect();
            assert_eq!(listed, in_order, "{}", t["name"]);
            namespaced += 1;
        }
        // Each call sent back names its function's namespace (checked as the request
        // is read); count them.
        namespaced_calls += b["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "function_call" && i["namespace"].is_string())
            .count();
        // One key per conversation, the same on each of its requests.
        let first = b["input"][0]["content"].as_str().unwrap().to_string();
        let key = b["prompt_cache_key"].as_str().unwrap().to_string();
        assert_eq!(keys.entry(first).or_insert_with(|| key.clone()), &key);
    }
    // A selection request opens with its own prompt yet belongs to its episode: the
    // keys are one per episode (work item and repeat), whatever the first message.
    let distinct: std::collections::HashSet<&String> = keys.values().collect();
    let os = outcomes(&tmp.path().join("x"));
    assert_eq!(os.len(), 42);
    assert_eq!(distinct.len(), os.len(), "one key per episode, none shared");
    let mut rounded = 0;
    for o in &os {
        assert_eq!(o["score"]["exact"], json!(true), "{}", o["query_id"]);
        for t in o["requests"].as_array().unwrap() {
            let predicted = t["cached_prefix"].as_u64().unwrap_or(0);
            let request = t["request_tokens"].as_u64().unwrap();
            let read = t["usage"]["cached_input"].as_u64().unwrap();
            let expected = if request >= 1024 {
                predicted / 128 * 128
            } else {
                0
            };
            assert_eq!(read, expected, "{} request {}", o["query_id"], t["request"]);
            rounded += usize::from(read != predicted);
        }
    }
    assert!(rounded > 0, "some prefix falls between two steps");
    assert!(namespaced > 0 && namespaced_calls > 0);
}

/// Conversations on the Responses API: every turn's requests carry the whole
/// conversation, one `prompt_cache_key` holds for all of them, and OpenAI's cache
/// (emulated as its guide documents it, one cache per key) reads, request by request
/// and across turns, the prefix discbench predicts, rounded down to its step — where
/// the selection step's new pick at a turn and a turn's `adds` break it too.
#[test]
fn a_conversation_s_cache_on_the_responses_api_reads_the_prediction_across_turns() {
    let scenario = "scenarios/conversations.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    let server = responses(world);
    let tmp = tempfile::tempdir().unwrap();
    // A conversation with a server added at turn 3, one whose turns all use the same
    // systems, and one that ends on a thanks.
    let picked = [
        "printers-9987-approval-slack-added",
        "refund-dock-9921-stepwise",
        "repeat-damage-sev2-escalation",
    ];
    let mut cmd = bin();
    cmd.args(["run", scenario, "--mode", "legacy"]);
    for q in picked {
        cmd.args(["--query", q]);
    }
    let o = cmd
        .args(["--model", "openai-responses:gpt-test"])
        .args(["--openai-base-url", &format!("{}/v1", server.url)])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(tmp.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    ok(&o);
    let os = outcomes(&tmp.path().join("x"));
    assert_eq!(os.len(), picked.len());
    let (mut later_reads, mut breaks) = (0, 0);
    for o in &os {
        let turns = o["conversation"].as_array().unwrap();
        assert!(turns.len() >= 4, "{}", o["query_id"]);
        for t in turns {
            assert_eq!(t["score"]["exact"], json!(true), "{} {t}", o["query_id"]);
        }
        let requests = o["requests"].as_array().unwrap();
        for (i, r) in requests.iter().enumerate() {
            let predicted = r["cached_prefix"].as_u64().unwrap_or(0);
            let tokens = r["request_tokens"].as_u64().unwrap();
            let read = r["usage"]["cached_input"].as_u64().unwrap();
            let expected = if tokens >= 1024 {
                predicted / 128 * 128
            } else {
                0
            };
            assert_eq!(read, expected, "{} request {}", o["query_id"], i + 1);
            if i > 0 {
                let before = requests[i - 1]["request_tokens"].as_u64().unwrap();
                breaks += usize::from(predicted < before);
            }
        }
        // The first request of each later turn reads what came before it.
        for t in &turns[1..] {
            let first = t["first_request_index"].as_u64().unwrap() as usize;
            later_reads += usize::from(requests[first]["usage"]["cached_input"].as_u64() > Some(0));
        }
    }
    assert!(
        later_reads > 0,
        "later turns read the conversation before them"
    );
    assert!(
        breaks > 0,
        "some request changes the tools or the system prompt"
    );
}

/// `allowed-tools` on the Responses API: every request of a conversation sends the
/// same tool list, and what may be called goes in `tool_choice` as `allowed_tools`;
/// every query exact.
#[test]
fn allowed_tools_reach_the_responses_api_and_the_tool_list_never_changes() {
    let scenario = "scenarios/mcp-reference.yaml";
    let world = Arc::new(World::new(&[scenario], "allowed-tools"));
    let server = responses(world);
    let tmp = tempfile::tempdir().unwrap();
    ok(&bin()
        .args(["run", scenario, "--mode", "allowed-tools"])
        .args(["--model", "openai-responses:gpt-test"])
        .args(["--openai-base-url", &format!("{}/v1", server.url)])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(tmp.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap());
    let seen = server.seen.lock().unwrap().clone();
    support::sdk::check(&seen, "responses", "responses, allowed-tools");
    let mut lists: std::collections::HashMap<String, Value> = Default::default();
    let mut limited = 0;
    for s in &seen {
        let b = &s.body;
        if b["tool_choice"]["type"] == "function" {
            continue; // the selection step's own request
        }
        // "auto" where the selection step kept every tool (nothing is limited).
        if b["tool_choice"] != json!("auto") {
            assert_eq!(
                b["tool_choice"]["type"],
                json!("allowed_tools"),
                "{}",
                b["tool_choice"]
            );
            assert_eq!(b["tool_choice"]["mode"], json!("auto"));
            let allowed = b["tool_choice"]["tools"].as_array().unwrap();
            assert!(allowed.len() < b["tools"].as_array().unwrap().len());
            limited += 1;
        }
        let key = b["prompt_cache_key"].as_str().unwrap().to_string();
        let list = lists.entry(key).or_insert_with(|| b["tools"].clone());
        assert_eq!(
            list, &b["tools"],
            "the tool list changed within a conversation"
        );
    }
    assert!(limited > 0);
    for o in outcomes(&tmp.path().join("x")) {
        assert_eq!(o["score"]["exact"], json!(true), "{}", o["query_id"]);
    }
}

/// What the local providers bill for a request of native tool search (no cache
/// emulation: these tests are about the search).
fn plain_usage(
    world: &World,
    cx: &discbench::wire::Context,
    r: &discbench::wire::Response,
) -> (usize, usize) {
    let input: usize = provider::pieces(cx, world.counter())
        .iter()
        .map(|p| p.tokens)
        .sum();
    let out = world
        .counter()
        .message(&discbench::wire::Message::assistant(
            r.text.clone(),
            r.calls.clone(),
        ));
    (input, out)
}

/// A Messages API with the tool search tool: under `native=server` it runs the
/// searches itself (over the tools the request deferred, as discbench's own search
/// would), under `native=client` the client searches and answers with
/// `tool_reference`s. Every request is checked for what it must carry.
fn anthropic_search(world: Arc<World>, server: bool) -> support::server::Server {
    let lists: Arc<std::sync::Mutex<std::collections::HashMap<String, Vec<Value>>>> =
        Default::default();
    serve(move |s: &Seen, _| {
        let b = &s.body;
        let (cx, purpose) = provider::anthropic_context(b);
        let tools = b["tools"].as_array().unwrap();
        if purpose == discbench::model::backend::Purpose::Act {
            // Every deferred tool in every request, after the ones in the prompt.
            let deferred = tools
                .iter()
                .filter(|t| t["defer_loading"] == json!(true))
                .count();
            assert!(deferred > 0);
            assert!(tools[tools.len() - deferred..]
                .iter()
                .all(|t| t["defer_loading"] == json!(true)));
            let search = tools
                .iter()
                .find(|t| t["name"].as_str().unwrap_or("").contains("tool_search"))
                .unwrap();
            if server {
                assert_eq!(search["type"], json!("tool_search_tool_bm25_20251119"));
                assert_eq!(search["name"], json!("tool_search_tool_bm25"));
            } else {
                assert_eq!(search["name"], json!("tool_search"));
                assert!(search["input_schema"].is_object());
            }
            assert!(
                search.get("defer_loading").is_none(),
                "the search is never deferred"
            );
            // The same list in every request of a conversation (kept once, compared
            // in place: the lists are the whole catalog).
            let mut lists = lists.lock().unwrap();
            let list = lists
                .entry(cx.query().to_string())
                .or_insert_with(|| tools.clone());
            assert!(list == tools, "the tool list changed");
            drop(lists);
            // `native=client`: discbench's search answers with the API's references.
            if !server {
                let searches: Vec<&Value> = b["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|m| m["content"].as_array().into_iter().flatten())
                    .filter(|x| x["type"] == "tool_use" && x["name"] == "tool_search")
                    .collect();
                for call in searches {
                    let result = b["messages"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .flat_map(|m| m["content"].as_array().into_iter().flatten())
                        .find(|x| x["type"] == "tool_result" && x["tool_use_id"] == call["id"])
                        .unwrap();
                    let refs = result["content"].as_array().unwrap();
                    assert!(
                        refs.iter().all(|r| r["type"] == "tool_reference"),
                        "{result}"
                    );
                }
            }
        }
        let (searches, r) = if server {
            world.answer_native(&cx, purpose)
        } else {
            (Vec::new(), world.answer(&cx, purpose))
        };
        let (input, out) = plain_usage(&world, &cx, &r);
        let usage = json!({"input_tokens": input, "output_tokens": out});
        Reply::Json(
            200,
            vec![],
            provider::anthropic_answer_native(&searches, "bm25", &r, usage),
        )
    })
}

/// A Responses API with hosted (`server`) or client-executed tool search.
fn responses_search(world: Arc<World>, server: bool) -> support::server::Server {
    serve(move |s: &Seen, _| {
        let b = &s.body;
        let (cx, purpose) = provider::responses_context(b);
        let tools = b["tools"].as_array().unwrap();
        if purpose == discbench::model::backend::Purpose::Act {
            // The API defers the functions inside a namespace, never the namespace.
            let functions = provider::responses_functions(&b["tools"]);
            assert!(functions
                .iter()
                .any(|(ns, f)| ns.is_some() && f["defer_loading"] == json!(true)));
            assert!(tools
                .iter()
                .all(|t| t["type"] != "namespace" || t.get("defer_loading").is_none()));
            let search = tools.iter().find(|t| t["type"] == "tool_search").unwrap();
            if server {
                assert!(search.get("execution").is_none());
            } else {
                assert_eq!(search["execution"], json!("client"));
                assert!(search["parameters"].is_object());
            }
        }
        let (searches, r) = if server {
            world.answer_native(&cx, purpose)
        } else {
            (Vec::new(), world.answer(&cx, purpose))
        };
        let (input, out) = plain_usage(&world, &cx, &r);
        let usage = json!({"input_tokens": input, "output_tokens": out,
                           "input_tokens_details": {"cached_tokens": 0}});
        let mut answer = provider::responses_answer_native(&searches, b, &r, usage);
        // A client search goes out as the API's own call item.
        if !server {
            for item in answer["output"].as_array_mut().unwrap() {
                if item["type"] == "function_call" && item["name"] == "tool_search" {
                    let arguments: Value =
                        serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
                    *item = json!({"type": "tool_search_call", "id": "tsc", "call_id": item["call_id"],
                                   "execution": "client", "arguments": arguments, "status": "completed"});
                }
            }
        }
        Reply::Json(200, vec![], answer)
    })
}

/// Each native tool-search variant runs the built-in suite end to end against a local
/// provider that plays its side as documented — the search, the expansion — and
/// answers as the oracle would: every query exact, the searches counted and ranked.
/// The four variants run side by side, each against its own server (one alone keeps
/// the two cores about three quarters busy).
#[test]
fn native_tool_search_runs_the_built_in_suite_end_to_end() {
    std::thread::scope(|s| {
        let runs: Vec<_> = [
            ("anthropic", "server"),
            ("anthropic", "client"),
            ("openai-responses", "server"),
            ("openai-responses", "client"),
        ]
        .into_iter()
        .map(|(provider_name, execution)| s.spawn(move || native_variant(provider_name, execution)))
        .collect();
        for r in runs {
            r.join().expect("a variant's run passed its checks");
        }
    });
}

/// One native tool-search variant over the single-query suite, checked.
fn native_variant(provider_name: &str, execution: &str) {
    let mode = format!("tool-search,native={execution}");
    let world = Arc::new(World::new(
        &[
            "scenarios/enterprise-hub.yaml",
            "scenarios/mcp-reference.yaml",
            "scenarios/large-catalog.yaml",
            "scenarios/scale-hub.yaml",
        ],
        &mode,
    ));
    let server_side = execution == "server";
    let server = if provider_name == "anthropic" {
        anthropic_search(world, server_side)
    } else {
        responses_search(world, server_side)
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    // The single-query scenarios of the suite (the conversations have tests of
    // their own against these servers).
    cmd.args([
        "run",
        "scenarios/enterprise-hub.yaml",
        "scenarios/mcp-reference.yaml",
    ])
    .args(["scenarios/large-catalog.yaml", "scenarios/scale-hub.yaml"])
    .args(["--mode", &mode])
    .args(["--model", &format!("{provider_name}:test")])
    .args(["--run-id", "x", "--no-progress", "--out"])
    .arg(tmp.path())
    .env_remove("ANTHROPIC_API_KEY")
    .env_remove("OPENAI_API_KEY");
    if provider_name == "anthropic" {
        cmd.args(["--anthropic-base-url", &server.url]);
    } else {
        cmd.args(["--openai-base-url", &format!("{}/v1", server.url)]);
    }
    let o = cmd.output().unwrap();
    ok(&o);
    let api = if provider_name == "anthropic" {
        "anthropic"
    } else {
        "responses"
    };
    support::sdk::check(
        &server.seen.lock().unwrap(),
        api,
        &format!("{provider_name}, {mode}"),
    );
    let os = outcomes(&tmp.path().join("x"));
    assert_eq!(os.len(), 205, "{mode} {provider_name}");
    let mut searched = 0;
    for o in &os {
        assert_eq!(
            o["score"]["exact"],
            json!(true),
            "{provider_name} {mode}: {} {}",
            o["query_id"],
            o["protocol"]
        );
        searched += o["protocol"]["searches"].as_u64().unwrap_or(0);
        assert!(o["protocol"].get("native_malformed").is_none());
        if server_side {
            // The provider searched: the search is recorded as the provider's.
            for c in o["calls"].as_array().unwrap() {
                assert_ne!(c["tool"], json!("tool_search"), "discbench never searched");
            }
        }
    }
    assert!(
        searched > 100,
        "{provider_name} {mode}: {searched} searches"
    );
    let summary: Value = serde_json::from_str(&read(&tmp.path().join("x/summary.json"))).unwrap();
    for g in summary["groups"].as_array().unwrap() {
        assert!(g["surfacing"]["recall_at_k"].as_f64().is_some(), "{g}");
    }
}

/// Native blocks discbench cannot read are protocol errors, never a crash: a block of
/// an unknown type, a `tool_reference` to a tool the request never deferred, a search
/// result that holds no tool references.
#[test]
fn malformed_native_blocks_are_protocol_errors() {
    let server = serve(|s: &Seen, _| {
        let answered = s.body["messages"].as_array().unwrap().len() > 1;
        let body = if answered {
            json!({"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
                   "usage": {"input_tokens": 10, "output_tokens": 2}})
        } else {
            json!({"content": [
                {"type": "mystery_block", "data": 1},
                {"type": "server_tool_use", "id": "srv_1", "name": "tool_search_tool_bm25",
                 "input": {"query": "order"}},
                {"type": "tool_search_tool_result", "tool_use_id": "srv_1",
                 "content": {"type": "tool_search_tool_search_result",
                             "tool_references": [{"type": "tool_reference", "tool_name": "never_deferred"}]}},
                {"type": "server_tool_use", "id": "srv_2", "name": "tool_search_tool_bm25",
                 "input": {"query": "issue"}},
                {"type": "tool_search_tool_result", "tool_use_id": "srv_2",
                 "content": {"type": "tool_search_tool_search_result"}},
                {"type": "text", "text": "Nothing to do."}
            ], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 2}})
        };
        Reply::Json(200, vec![], body)
    });
    let tmp = tempfile::tempdir().unwrap();
    ok(&bin()
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "tool-search,native=server",
        ])
        .args([
            "--model",
            "anthropic:test",
            "--anthropic-base-url",
            &server.url,
        ])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(tmp.path())
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap());
    let os = outcomes(&tmp.path().join("x"));
    assert_eq!(os.len(), 4);
    for o in &os {
        assert_eq!(
            o["protocol"]["native_malformed"],
            json!(3),
            "{}",
            o["protocol"]
        );
        assert!(o["infra_error"].is_null());
        let errors: Vec<&Value> = o["calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["error"] == "native_malformed")
            .collect();
        assert_eq!(errors.len(), 3);
    }
}

/// A run against the Responses API and one with the Messages API's own searches,
/// recorded, replay with no provider at all to the same summary.
#[test]
fn record_and_replay_cover_the_new_backend_and_native_blocks() {
    let scenario = "scenarios/mcp-reference.yaml";
    for (provider_name, mode) in [
        ("anthropic", "tool-search,native=server"),
        ("openai-responses", "tool-search,native=client"),
    ] {
        let world = Arc::new(World::new(&[scenario], mode));
        let server = if provider_name == "anthropic" {
            anthropic_search(world, true)
        } else {
            responses_search(world, false)
        };
        let tmp = tempfile::tempdir().unwrap();
        let url = if provider_name == "anthropic" {
            vec!["--anthropic-base-url".to_string(), server.url.clone()]
        } else {
            vec![
                "--openai-base-url".to_string(),
                format!("{}/v1", server.url),
            ]
        };
        ok(&bin()
            .args(["run", scenario, "--mode", mode, "--record"])
            .args(["--model", &format!("{provider_name}:test")])
            .args(&url)
            .args(["--run-id", "rec", "--no-progress", "--out"])
            .arg(tmp.path())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap());
        let rec = tmp.path().join("rec");
        ok(&bin()
            .args(["run", scenario, "--mode", mode])
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
        assert_eq!(summary("rec"), summary("rep"), "{provider_name} {mode}");
    }
}

/// The names a provider accepts (`^[a-zA-Z0-9_-]{1,64}$`, OpenAI's and Anthropic's).
fn accepted(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A Chat Completions API that answers as the oracle would. It takes only the names
/// OpenAI accepts (any other is refused with a 400, as the API refuses it) and reads
/// the names it is sent back into the names discbench renders, by the rule written in
/// the docs (OpenAI's: a refused name is cut and suffixed with a hash of the whole
/// name), applied to every name the scenarios' catalogs render.
fn chat(world: Arc<World>, scenarios: &[&str]) -> support::server::Server {
    let map = provider::rendered_names(scenarios, &discbench::names::OPENAI);
    serve(move |s: &Seen, _| {
        assert_eq!(s.path, "/v1/chat/completions");
        let b = &s.body;
        for (i, t) in b["tools"].as_array().into_iter().flatten().enumerate() {
            let name = t["function"]["name"].as_str().unwrap_or("");
            if !accepted(name) {
                return Reply::Json(
                    400,
                    vec![],
                    json!({"error": {"message": format!("Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{{1,64}}$'."), "type": "invalid_request_error", "code": "invalid_value"}}),
                );
            }
            assert_eq!(t["function"]["strict"], json!(false), "strict is explicit");
        }
        let (mut cx, purpose) = provider::chat_context(b);
        let back = |n: &str| map.canonical(n).to_string();
        cx.tools = cx
            .tools
            .iter()
            .map(|t| discbench::wire::ToolDef {
                name: back(&t.name),
                ..t.clone()
            })
            .collect();
        cx.tool_choice = cx.tool_choice.as_deref().map(back);
        for m in &mut cx.messages {
            if let discbench::wire::Message::Assistant { tool_calls, .. } = m {
                for c in tool_calls {
                    c.name = back(&c.name);
                }
            }
        }
        let r = world.answer(&cx, purpose);
        let calls: Vec<Value> = r
            .calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                       "function": {"name": map.wire(&c.name), "arguments": c.arguments}})
            })
            .collect();
        let mut message = json!({"role": "assistant", "content": r.text});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        Reply::Json(
            200,
            vec![],
            json!({"id": "chatcmpl-local", "object": "chat.completion", "choices": [
                {"index": 0, "message": message,
                 "finish_reason": if r.calls.is_empty() { "stop" } else { "tool_calls" }}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2}}),
        )
    })
}

/// Runs `scenario` under `mode` with `openai:gpt-test` against `url`.
fn run_chat(dir: &Path, scenario: &str, mode: &str, url: &str) -> std::process::Output {
    bin()
        .args(["run", scenario, "--mode", mode])
        .args(["--model", "openai:gpt-test"])
        .args(["--openai-base-url", &format!("{url}/v1")])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(dir)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

/// Chat Completions bodies (the selection step's forced call and JSON mode included)
/// validate against the SDK's request type, and every query is exact.
#[test]
fn chat_completions_bodies_validate_and_answer_exact() {
    let scenario = "scenarios/mcp-reference.yaml";
    for mode in ["legacy", "progressive"] {
        let world = Arc::new(World::new(&[scenario], mode));
        let server = chat(world, &[scenario]);
        let tmp = tempfile::tempdir().unwrap();
        ok(&run_chat(tmp.path(), scenario, mode, &server.url));
        support::sdk::check(
            &server.seen.lock().unwrap(),
            "chat",
            &format!("chat, {mode}"),
        );
        for o in outcomes(&tmp.path().join("x")) {
            assert_eq!(
                o["score"]["exact"],
                json!(true),
                "{mode}: {}",
                o["query_id"]
            );
        }
    }
}

/// Names past a provider's limit or outside its characters are sent as names it
/// accepts, read back as the catalog's, and counted as sent: the run is exact, and
/// its first-request tokens are those of the wire names (mock models, which see FIM
/// One's names, count those instead).
#[test]
fn names_a_provider_refuses_are_mapped_both_ways_and_counted_as_sent() {
    let scenario = "fixtures/names/long-names.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    let server = chat(world, &[scenario]);
    let tmp = tempfile::tempdir().unwrap();
    ok(&run_chat(tmp.path(), scenario, "legacy", &server.url));
    let seen = server.seen.lock().unwrap().clone();
    let sent: std::collections::BTreeSet<String> = seen
        .iter()
        .flat_map(|s| s.body["tools"].as_array().cloned().unwrap_or_default())
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(sent.iter().all(|n| accepted(n)), "{sent:?}");
    assert!(sent.contains("math_factorial_09f528f2"), "{sent:?}");
    let os = outcomes(&tmp.path().join("x"));
    assert_eq!(os.len(), 3);
    for o in &os {
        assert!(o["infra_error"].is_null(), "{}", o["infra_error"]);
        assert_eq!(o["score"]["exact"], json!(true), "{}", o["query_id"]);
        // Scored on the catalog's addresses, whatever the wire said.
        assert!(o["calls"][0]["address"].as_str().unwrap().starts_with(
            if o["query_id"] == "factorial" {
                "builtin:math.factorial"
            } else {
                "mcp:modelcontextprotocol"
            }
        ));
    }
    // The first request's tools, recounted from what the server received.
    let counter = discbench::tokens::Counter::new(discbench::tokens::Encoding::O200kBase);
    let first = &seen[0].body;
    let defs: usize = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            counter.tool(&discbench::wire::ToolDef {
                name: f["name"].as_str().unwrap().to_string(),
                description: f["description"].as_str().unwrap().to_string(),
                parameters: f["parameters"].clone(),
            })
        })
        .sum();
    let o = &os[0];
    assert_eq!(o["tokens"]["tool_defs"].as_u64().unwrap() as usize, defs);
    // The oracle, which sees FIM One's names, counts those: another figure.
    let mock = tempfile::tempdir().unwrap();
    ok(&bin()
        .args(["run", scenario, "--mode", "legacy", "--model", "oracle"])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(mock.path())
        .output()
        .unwrap());
    let m = &outcomes(&mock.path().join("x"))[0];
    assert_ne!(m["tokens"]["tool_defs"], o["tokens"]["tool_defs"]);
}

/// A conversation on a live server, judged by state (`fixtures/live/counter.yaml`),
/// run with `openai:` against the local Chat Completions server answering as the
/// oracle: its calls reach the live server through discbench, the reference runs on a
/// second instance, and every turn is exact on the state.
#[test]
fn a_live_conversation_judged_by_state_runs_against_the_chat_completions_server() {
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !python {
        assert!(std::env::var_os("CI").is_none(), "python3 is needed in CI");
        eprintln!("SKIPPED: python3 is needed for tests/mcp/counter.py");
        return;
    }
    let scenario = "fixtures/live/counter.yaml";
    let world = Arc::new(World::new(&[scenario], "legacy"));
    let server = chat(world, &[scenario]);
    let tmp = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["run", scenario, "--mode", "legacy", "--allow-live"])
        .args(["--model", "openai:gpt-test"])
        .args(["--openai-base-url", &format!("{}/v1", server.url)])
        .args(["--run-id", "x", "--no-progress", "--out"])
        .arg(tmp.path())
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    ok(&o);
    let o = &outcomes(&tmp.path().join("x"))[0];
    assert_eq!(o["score"]["exact"], json!(true), "{o}");
    let turns = o["conversation"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    for t in turns {
        assert_eq!(t["score"]["state_ok"], json!(true), "{t}");
    }
    // The live answers went back to the model: the total, 7, in the second turn.
    assert!(o.to_string().contains(r#""text":"7""#), "{o}");
}
