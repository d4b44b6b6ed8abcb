//! The runner: plans work items (scenario × mode × model × repeat × query), drives the
//! agent loop of each, and emits events; the outcome writer, the progress bar and the
//! summary table only listen (DESIGN §2).

pub mod events;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::environment::Databases;
use crate::model::{Guide, Model, Purpose, Turn};
use crate::scenario::{Expect, Query, Scenario};
use crate::score::{self, CallRecord, Protocol, Score};
use crate::strategy::{Composite, Effect, Mode, SelectionConfig, Templates};
use crate::tokens::{Counter, Ledger};
use crate::wire::{Message, Response};
pub use events::{Event, Listener};

/// The default limit of agent-loop rounds.
pub const DEFAULT_MAX_TURNS: usize = 10;

/// Everything a run needs besides the scenarios.
pub struct RunConfig {
    pub run_id: String,
    pub modes: Vec<Mode>,
    pub models: Vec<String>,
    pub repeat: usize,
    pub max_turns: usize,
    pub selection: SelectionConfig,
    pub templates: Templates,
}

/// One thing that entered the context in a turn, with its token count.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// The ledger layer: system, tool_defs, query, fetched, results, output.
    pub layer: String,
    /// What it was: a tool name, `system prompt`, `read_skill(...)` …
    pub what: String,
    pub tokens: usize,
    /// The text as it was sent. A run keeps the first turn's system prompt and tool
    /// definitions (unless a selection step picked them per query) only in the first
    /// outcome of each scenario × mode (they
    /// are the same in every other one, and would make each line as large as the
    /// catalog); `discbench tokens --show` re-renders them at any time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// One round of the agent loop.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnRecord {
    pub turn: usize,
    /// Tokens of the whole request of this turn.
    pub request_tokens: usize,
    pub tools_visible: usize,
    pub entered: Vec<Entry>,
}

/// The selection step of one episode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SelectionRecord {
    pub tools_before: usize,
    /// The tools selected, or `None` when the answer was unusable (all stayed loaded).
    pub selected: Option<Vec<String>>,
    pub answer: String,
}

/// The scored result of one (scenario, query, mode, model, repeat): one JSON line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub run_id: String,
    pub scenario: String,
    pub query_id: String,
    pub tags: Vec<String>,
    /// The mode as asked for (preset name or spec).
    pub mode: String,
    /// The mode actually used, after the scenario's `agent.modes`.
    pub mode_spec: String,
    pub model: String,
    pub repeat: usize,
    pub tokenizer: String,
    /// Callable addresses in the scenario's catalog (for catalog-size curves).
    #[serde(default)]
    pub catalog_size: usize,
    pub expected: Value,
    pub calls: Vec<CallRecord>,
    pub final_text: Option<String>,
    pub selection: Option<SelectionRecord>,
    pub score: Score,
    pub protocol: Protocol,
    pub tokens: Ledger,
    pub turns: Vec<TurnRecord>,
    /// An API or environment failure; such outcomes are not counted as wrong answers.
    pub infra_error: Option<String>,
}

impl Outcome {
    /// Forgets the text of what every outcome of a scenario × mode sends alike in its
    /// first turn (token counts stay): the system prompt always, and the tool
    /// definitions unless a selection step chose them for this query. The text is
    /// kept in the first outcome of each scenario × mode.
    pub fn drop_static_context_text(&mut self) {
        let selected = self
            .selection
            .as_ref()
            .is_some_and(|s| s.selected.is_some());
        for t in self.turns.iter_mut().filter(|t| t.turn == 1) {
            for e in t
                .entered
                .iter_mut()
                .filter(|e| e.layer == "system" || (e.layer == "tool_defs" && !selected))
            {
                e.text = None;
            }
        }
    }
}

use serde_json::Value;

/// One unit of work.
#[derive(Debug, Clone)]
pub struct WorkItem {
    pub scenario: usize,
    pub mode: usize,
    pub model: usize,
    pub repeat: usize,
    pub query: usize,
}

/// The deterministic order of work: scenario, mode, model, repeat, query.
pub fn plan(scenarios: &[Scenario], cfg: &RunConfig) -> Vec<WorkItem> {
    let mut v = Vec::new();
    for (s, sc) in scenarios.iter().enumerate() {
        for m in 0..cfg.modes.len() {
            for model in 0..cfg.models.len() {
                for r in 0..cfg.repeat {
                    for q in 0..sc.queries.len() {
                        v.push(WorkItem {
                            scenario: s,
                            mode: m,
                            model,
                            repeat: r,
                            query: q,
                        });
                    }
                }
            }
        }
    }
    v
}

/// Runs every work item, sending each outcome to the listeners as it is made.
pub fn run(
    scenarios: &[Scenario],
    cfg: &RunConfig,
    counter: &Counter,
    listeners: &mut [&mut dyn Listener],
) -> anyhow::Result<()> {
    let items = plan(scenarios, cfg);
    for l in listeners.iter_mut() {
        l.event(&Event::Started { total: items.len() })?;
    }
    let mut models: Vec<Box<dyn Model>> = cfg
        .models
        .iter()
        .map(|m| crate::model::build(m).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()?;
    let mut current: Option<(usize, Databases)> = None;
    let mut context_kept: BTreeSet<(usize, String)> = BTreeSet::new();
    for item in &items {
        let sc = &scenarios[item.scenario];
        if current.as_ref().is_none_or(|(i, _)| *i != item.scenario) {
            let dbs = Databases::build(&sc.catalog).map_err(anyhow::Error::msg)?;
            current = Some((item.scenario, dbs));
        }
        let dbs = &current.as_ref().expect("built above").1;
        let requested = &cfg.modes[item.mode];
        let mode = requested.with_overrides(&sc.agent.modes);
        let composite = Composite::new(
            &sc.catalog,
            sc.agent.instructions.as_deref(),
            mode,
            &cfg.templates,
            cfg.selection,
        )
        .map_err(anyhow::Error::msg)?;
        let model = models[item.model].as_mut();
        let max_turns = sc
            .agent
            .max_turns
            .map(|t| t as usize)
            .unwrap_or(cfg.max_turns);
        let ep = Episode {
            scenario: sc,
            query: &sc.queries[item.query],
            composite: &composite,
            counter,
            dbs,
            max_turns,
        };
        let mut outcome = ep.run(model);
        let has_first_turn = outcome.turns.first().is_some_and(|t| t.turn == 1);
        if has_first_turn && !context_kept.insert((item.scenario, requested.label.clone())) {
            outcome.drop_static_context_text();
        }
        outcome.run_id = cfg.run_id.clone();
        outcome.mode = requested.label.clone();
        outcome.repeat = item.repeat;
        for l in listeners.iter_mut() {
            l.event(&Event::Outcome(&outcome))?;
        }
    }
    for l in listeners.iter_mut() {
        l.event(&Event::Finished)?;
    }
    Ok(())
}

/// One query under one mode with one model.
pub struct Episode<'a> {
    pub scenario: &'a Scenario,
    pub query: &'a Query,
    pub composite: &'a Composite<'a>,
    pub counter: &'a Counter,
    pub dbs: &'a Databases,
    pub max_turns: usize,
}

impl Episode<'_> {
    pub fn run(&self, model: &mut dyn Model) -> Outcome {
        let c = self.counter;
        let comp = self.composite;
        let mut state = comp.new_state();
        let mut ledger = Ledger {
            system: c.count(comp.system()),
            ..Ledger::default()
        };
        let mut infra_error = None;
        model.begin();

        let mut selection = None;
        if comp.selection_applies() {
            match comp.selection_context(&self.query.text) {
                Ok(cx) => {
                    let req = c.context(&cx);
                    let turn = Turn {
                        purpose: Purpose::Select,
                        context: &cx,
                        query: self.query,
                        guide: Guide {
                            composite: comp,
                            state: &state,
                        },
                    };
                    let answer = match model.respond(&turn) {
                        Ok(r) => r.text.unwrap_or_default(),
                        Err(e) => {
                            infra_error = Some(e.0);
                            String::new()
                        }
                    };
                    ledger.selection = req + c.count(&answer);
                    ledger.billed_input += req;
                    ledger.peak_context = req;
                    let selected = comp.apply_selection(&mut state, &answer);
                    selection = Some(SelectionRecord {
                        tools_before: comp.all_tools().len(),
                        selected,
                        answer,
                    });
                }
                Err(e) => infra_error = Some(e),
            }
        }

        let mut messages = vec![Message::User {
            content: self.query.text.clone(),
        }];
        let mut calls: Vec<CallRecord> = Vec::new();
        let mut turns = Vec::new();
        let mut final_text = None;
        let mut hit_max_turns = false;
        let mut seen_tools: BTreeSet<String> = BTreeSet::new();
        let mut n_turns = 0;
        for turn in 1..=self.max_turns {
            if infra_error.is_some() {
                break;
            }
            n_turns = turn;
            let cx = comp.context(&state, &messages);
            let mut entered = Vec::new();
            if turn == 1 {
                ledger.tool_defs = c.tools(&cx.tools);
                entered.push(Entry {
                    layer: "system".into(),
                    what: "system prompt".into(),
                    tokens: ledger.system,
                    text: Some(cx.system.clone()),
                });
                for t in &cx.tools {
                    entered.push(Entry {
                        layer: "tool_defs".into(),
                        what: t.name.clone(),
                        tokens: c.tool(t),
                        text: Some(t.wire_json()),
                    });
                }
                entered.push(Entry {
                    layer: "query".into(),
                    what: "user".into(),
                    tokens: c.count(&self.query.text),
                    text: Some(self.query.text.clone()),
                });
            } else {
                for t in cx.tools.iter().filter(|t| !seen_tools.contains(&t.name)) {
                    let n = c.tool(t);
                    ledger.fetched += n;
                    entered.push(Entry {
                        layer: "fetched".into(),
                        what: format!("tool definition {}", t.name),
                        tokens: n,
                        text: Some(t.wire_json()),
                    });
                }
            }
            seen_tools.extend(cx.tools.iter().map(|t| t.name.clone()));
            let req = c.context(&cx);
            if turn == 1 {
                ledger.first_turn = req;
            }
            ledger.billed_input += req;
            ledger.peak_context = ledger.peak_context.max(req);
            let t = Turn {
                purpose: Purpose::Act,
                context: &cx,
                query: self.query,
                guide: Guide {
                    composite: comp,
                    state: &state,
                },
            };
            let resp = match model.respond(&t) {
                Ok(r) => r,
                Err(e) => {
                    infra_error = Some(e.0);
                    turns.push(TurnRecord {
                        turn,
                        request_tokens: req,
                        tools_visible: cx.tools.len(),
                        entered,
                    });
                    break;
                }
            };
            let Response {
                text,
                calls: tool_calls,
            } = resp;
            let msg = Message::Assistant {
                content: text.clone(),
                tool_calls: tool_calls.clone(),
            };
            let out = c.message(&msg);
            ledger.output += out;
            entered.push(Entry {
                layer: "output".into(),
                what: "assistant".into(),
                tokens: out,
                text: text.clone(),
            });
            messages.push(msg);
            if tool_calls.is_empty() {
                final_text = text;
                turns.push(TurnRecord {
                    turn,
                    request_tokens: req,
                    tools_visible: cx.tools.len(),
                    entered,
                });
                break;
            }
            // What the model saw when it wrote this turn's calls: a skill read by one
            // call of a parallel batch was not in context for the others.
            let seen_skills: Vec<String> = state.loaded_skills.iter().cloned().collect();
            for call in tool_calls {
                let skills_in_context = seen_skills.clone();
                let r = comp.resolve(&call, &mut state, self.dbs);
                let n = c.count(&r.content);
                let (layer, record) = match &r.effect {
                    Effect::Fetched { addresses } => {
                        ledger.fetched += n;
                        (
                            "fetched",
                            CallRecord {
                                turn,
                                tool: call.name.clone(),
                                arguments: call.arguments.clone(),
                                effect: "fetched".into(),
                                address: None,
                                fetched: addresses.clone(),
                                error: None,
                                schema_errors: Vec::new(),
                                blind: false,
                                args: None,
                                skills_in_context,
                            },
                        )
                    }
                    Effect::Executed {
                        address,
                        args,
                        schema_errors,
                        blind,
                        ..
                    } => {
                        ledger.results += n;
                        (
                            "results",
                            CallRecord {
                                turn,
                                tool: call.name.clone(),
                                arguments: call.arguments.clone(),
                                effect: "executed".into(),
                                address: Some(address.clone()),
                                fetched: Vec::new(),
                                error: None,
                                schema_errors: schema_errors.clone(),
                                blind: *blind,
                                args: Some(args.clone()),
                                skills_in_context,
                            },
                        )
                    }
                    Effect::Error { error } => {
                        ledger.results += n;
                        let e = serde_json::to_value(error)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string));
                        (
                            "results",
                            CallRecord {
                                turn,
                                tool: call.name.clone(),
                                arguments: call.arguments.clone(),
                                effect: "error".into(),
                                address: None,
                                fetched: Vec::new(),
                                error: e,
                                schema_errors: Vec::new(),
                                blind: false,
                                args: None,
                                skills_in_context,
                            },
                        )
                    }
                };
                entered.push(Entry {
                    layer: layer.into(),
                    what: format!("{}({})", call.name, call.arguments),
                    tokens: n,
                    text: Some(r.content.clone()),
                });
                calls.push(record);
                messages.push(Message::Tool {
                    tool_call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: r.content,
                });
            }
            turns.push(TurnRecord {
                turn,
                request_tokens: req,
                tools_visible: cx.tools.len(),
                entered,
            });
            if turn == self.max_turns {
                hit_max_turns = true;
            }
        }
        let final_skills: Vec<String> = state.loaded_skills.iter().cloned().collect();
        let score = score::score(
            self.query,
            &calls,
            &final_skills,
            &self.scenario.catalog,
            self.dbs,
        );
        let protocol = score::protocol(&calls, n_turns, hit_max_turns);
        Outcome {
            run_id: String::new(),
            scenario: self.scenario.name.clone(),
            query_id: self.query.id.clone(),
            tags: self.query.tags.clone(),
            mode: comp.mode.label.clone(),
            mode_spec: comp.mode.canonical_spec(),
            model: model.name().to_string(),
            repeat: 0,
            tokenizer: c.encoding().as_str().to_string(),
            catalog_size: self.scenario.catalog.addresses().len(),
            expected: expect_json(&self.query.expect),
            calls,
            final_text,
            selection,
            score,
            protocol,
            tokens: ledger,
            turns,
            infra_error,
        }
    }
}

fn expect_json(e: &Expect) -> Value {
    serde_json::to_value(e).expect("expectations serialize")
}
