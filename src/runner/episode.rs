//! One episode: a query under one rendered scenario × mode with one model session —
//! the selection step when it applies, then up to `max_requests` rounds of context →
//! model → calls → results — scored into an [`Outcome`].
//!
//! Model errors that may pass (rate limits, timeouts, server errors) are retried as
//! the [`RetryPolicy`] says, each retry announced as an event; what still fails is
//! recorded as the outcome's infra error, apart from the model's own mistakes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::events::Event;
use super::plan::{hash_value, ToolText, Unit};
use super::retry::RetryPolicy;
use super::tally::{Scored, Tally};
use crate::environment::live::{Instances, Live, Side};
use crate::environment::Databases;
use crate::model::{Answer, Backend, GroundTruth, ModelError, Purpose, Request, Session};
use crate::record::{
    CacheMeasure, Entry, Layer, Outcome, OutcomeKey, RequestRecord, SelectionRecord, TurnOutcome,
    Usage, FORMAT_VERSION,
};
use crate::scenario::expect::Judge;
use crate::scenario::{Expect, Scenario};
use crate::score::surfacing::Event as Event_;
use crate::score::{self, Protocol, Score};
use crate::strategy::{selection, Level, State};
use crate::tokens::{Counter, Ledger};
use crate::wire::{Message, Response, ToolDef};

/// Everything one episode reads; all of it shared, nothing owned.
pub struct Episode<'a> {
    pub key: &'a OutcomeKey,
    pub run_id: &'a str,
    pub scenario: &'a Scenario,
    pub query: usize,
    pub unit: &'a Unit,
    /// A conversation whose turns add to the catalog: the unit from each such turn on.
    pub stages: &'a [(usize, Arc<Unit>)],
    pub counter: &'a Counter,
    pub databases: &'a Databases,
    /// The scenario's live MCP servers, when it has any (and the run may start them).
    pub live: Option<&'a Arc<Live>>,
    pub retry: &'a RetryPolicy,
    /// Where retries are announced.
    pub events: &'a (dyn Fn(Event) + Send + Sync),
}

/// A model session and the retries it took.
struct Asker<'a> {
    session: Box<dyn Session>,
    key: &'a OutcomeKey,
    retry: &'a RetryPolicy,
    events: &'a (dyn Fn(Event) + Send + Sync),
}

impl Asker<'_> {
    async fn ask(
        &mut self,
        purpose: Purpose,
        context: &crate::wire::Context,
    ) -> Result<Answer, ModelError> {
        let request = Request { purpose, context };
        let mut attempt = 0u32;
        loop {
            match self.session.respond(&request).await {
                Ok(a) => return Ok(a),
                Err(e) if e.is_retryable() && attempt < self.retry.max_retries => {
                    attempt += 1;
                    let delay = self.retry.delay(self.key, attempt, &e);
                    (self.events)(Event::RetryScheduled {
                        key: self.key.clone(),
                        attempt,
                        delay,
                        reason: e.to_string(),
                    });
                    if delay > Duration::ZERO {
                        tokio::time::sleep(delay).await;
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Episode<'_> {
    pub async fn run(&self, backend: &dyn Backend) -> Outcome {
        let c = self.counter;
        let query = &self.scenario.queries[self.query];
        let first = self.unit;
        // The unit of each turn: a conversation whose turns add to the catalog moves
        // to a larger view at each such turn; the state carries over.
        let unit_of = |t: usize| -> &Unit {
            self.stages
                .iter()
                .rev()
                .find(|(at, _)| *at <= t)
                .map_or(first, |(_, u)| u.as_ref())
        };
        let state: Arc<Mutex<State>> = Arc::new(Mutex::new(first.composite.new_state()));
        let truth = backend.wants_ground_truth().then(|| GroundTruth {
            expect: query.expect.oracle_view(),
            protocol: first.composite.clone(),
            state: state.clone(),
            later: (1..query.n_turns())
                .map(|t| {
                    (
                        query.turn_expect(t).oracle_view(),
                        unit_of(t).composite.clone(),
                    )
                })
                .collect(),
        });
        let mut asker = Asker {
            session: backend.open(self.key, truth),
            key: self.key,
            retry: self.retry,
            events: self.events,
        };
        let mut conv = Conversation {
            ledger: Ledger {
                system: first.system_tokens,
                ..Ledger::default()
            },
            live: self
                .live
                .map(|l| l.instances_for(&self.live_key(), Side::Agent)),
            ..Conversation::default()
        };
        let mut turns: Vec<Turned> = Vec::new();
        for t in 0..query.n_turns() {
            let unit = unit_of(t);
            {
                let mut st = lock(&state);
                if t > 0 && !std::ptr::eq(unit, unit_of(t - 1)) {
                    unit.composite.grow(&mut st);
                }
                st.turn = t;
                st.turn_start = st.executed.len();
            }
            let turned = self
                .turn(t, unit, backend, &mut asker, &mut conv, &state)
                .await;
            // BFCL's rules: judging stops at the first failing turn, and a turn that
            // reached the request limit still calling ends the conversation
            // (`force_terminated`); the turns not run leave it inexact.
            let stop = query.judge == Judge::Bfcl
                && (!turned.score.exact || turned.protocol.hit_max_requests);
            turns.push(turned);
            if conv.infra_error.is_some() || stop {
                break;
            }
        }
        let comp = unit_of(turns.len() - 1).composite.as_ref();
        // Billed with every cached prefix at the cache price: the model's cached-input
        // price where its prices give one, else the configured discount.
        let discount = backend
            .prices()
            .and_then(|p| {
                p.cached_input
                    .filter(|_| p.input > 0.0)
                    .map(|c| 1.0 - c / p.input)
            })
            .unwrap_or(comp.config().cache_discount_pct as f64 / 100.0);
        let cached = |n: usize| (n as f64 * discount).round() as usize;
        for (r, cached) in conv.requests.iter_mut().zip(&conv.cached_per_request) {
            r.cached_prefix = *cached;
        }
        let mut ledger = conv.ledger;
        ledger.cached_prefix = conv.cached_total;
        ledger.billed_cached = ledger.billed_input - cached(conv.cached_total);
        let usages = || {
            turns
                .iter()
                .filter_map(|t| t.selection.as_ref().and_then(|s| s.usage))
                .chain(conv.requests.iter().filter_map(|t| t.usage))
        };
        let usage = usages().reduce(Usage::plus);
        // Each request at its prompt length's tier, where the prices have tiers.
        let cost_usd = backend.prices().and_then(|p| p.cost_all(usages()));
        let cache = cache_measure(&conv.requests, backend);
        let base = Outcome {
            format: FORMAT_VERSION,
            run_id: self.run_id.to_string(),
            scenario: self.scenario.name.clone(),
            query_id: query.id.clone(),
            tags: query.tags.clone(),
            mode: self.key.mode.clone(),
            mode_spec: comp.mode.canonical_spec(),
            model: self.key.model.clone(),
            repeat: self.key.repeat,
            tokenizer: c.encoding().as_str().to_string(),
            catalog_size: unit_of(0).catalog_size,
            expected: expect_json(&query.expect),
            expected_ref: None,
            calls: Vec::new(),
            final_text: None,
            selection: None,
            score: Score::default(),
            protocol: Protocol::default(),
            tokens: ledger,
            requests: conv.requests,
            infra_error: conv.infra_error,
            usage,
            cost_usd,
            cache,
            retrieved: Vec::new(),
            surfacing: None,
            conversation: Vec::new(),
        };
        if !query.is_conversation() {
            // A single query: its one turn is the outcome.
            let t = turns.pop().expect("one turn");
            return Outcome {
                calls: t.calls,
                final_text: t.final_text,
                selection: t.selection,
                score: t.score,
                protocol: t.protocol,
                retrieved: t.retrieved,
                surfacing: t.surfacing,
                ..base
            };
        }
        // A conversation: each turn on its own, and the whole.
        let mut calls = Vec::new();
        let mut protocol = Protocol::default();
        let mut scores = Vec::new();
        let mut record = Vec::new();
        for (i, t) in turns.into_iter().enumerate() {
            let mut tokens = t.tokens;
            tokens.billed_cached = tokens.billed_input - cached(tokens.cached_prefix);
            protocol = protocol.plus(&t.protocol);
            record.push(TurnOutcome {
                turn: i + 1,
                first_request_index: t.first_request_index,
                requests: t.n_requests,
                first_call: calls.len(),
                calls: t.calls.len(),
                failed: (!t.score.exact).then(|| t.why.clone()),
                score: t.score.clone(),
                protocol: t.protocol,
                tokens,
                expected: expect_json(query.turn_expect(i)),
                expected_ref: None,
                selection: t.selection,
                surfacing: t.surfacing,
                retrieved: t.retrieved,
                final_text: t.final_text.clone(),
            });
            calls.extend(t.calls);
            scores.push(t.score);
        }
        let retrieved = Vec::new();
        Outcome {
            final_text: record.last().and_then(|t| t.final_text.clone()),
            score: score::conversation(&scores, query.n_turns()),
            calls,
            protocol,
            retrieved,
            conversation: record,
            ..base
        }
    }

    /// One user turn of the episode: the selection step when it applies (FIM One runs
    /// it for every message, on that message), retrieval on the turn's text, then up
    /// to `max_requests` rounds of context → model → calls → results, with the whole
    /// conversation so far in every request; scored on its own calls.
    async fn turn(
        &self,
        t: usize,
        unit: &Unit,
        backend: &dyn Backend,
        asker: &mut Asker<'_>,
        conv: &mut Conversation,
        state: &Mutex<State>,
    ) -> Turned {
        let c = self.counter;
        let comp = unit.composite.as_ref();
        let query = &self.scenario.queries[self.query];
        let text = query.turn_text(t);
        let before = conv.ledger.clone();
        let cached_before = conv.cached_total;
        let first_request_index = conv.requests.len();
        let mut selection = None;
        // The turn's peak counts its selection request too, as a single query's does.
        let mut selection_peak = 0;
        if comp.selection_applies() {
            if t > 0 {
                comp.new_turn(&mut lock(state));
            }
            let peak = std::mem::take(&mut conv.ledger.peak_context);
            match self
                .select(
                    comp,
                    text,
                    backend.json_mode(),
                    asker,
                    &mut conv.ledger,
                    state,
                )
                .await
            {
                Ok(record) => selection = Some(record),
                Err(e) => conv.infra_error = Some(e),
            }
            selection_peak = conv.ledger.peak_context;
            conv.ledger.peak_context = selection_peak.max(peak);
        }
        // Retrieval acts on the turn's text before the model is asked (what earlier
        // turns retrieved stays: it is in the conversation).
        let visible = |st: &State| -> Vec<String> {
            comp.visible_tools(st)
                .iter()
                .map(|t| t.name.clone())
                .collect()
        };
        let visible_before = if t > 0 {
            visible(&lock(state))
        } else {
            Vec::new()
        };
        let retrieved = comp.at_query(text, &mut lock(state));
        // What was surfaced to the model, in order: the selection step's list, what
        // retrieval ranked, what is shown up front; then what calls fetch or find.
        let mut tally = Tally::new(comp);
        if let Some(names) = selection.as_ref().and_then(|s| s.selected.as_ref()) {
            tally.surfaced.push(Event_ {
                addresses: names.iter().filter_map(|n| comp.address_of(n)).collect(),
                ranked: true,
            });
        }
        tally.surfaced.push(Event_ {
            addresses: retrieved.iter().map(|r| r.address.clone()).collect(),
            ranked: true,
        });
        tally.shown_up_front(&lock(state));
        // The cacheable prefix: each request's pieces in a provider's cache order, and
        // the pieces of the request before it (across turns: one conversation). With
        // tool search appending what it finds, the found definitions count where they
        // entered the conversation (after the results that surfaced them), as a
        // provider expanding tool references in place sends them; anywhere else a
        // tool-list change breaks the prefix there.
        let in_place = comp.mode.search.placement == crate::strategy::mode::Placement::Append
            && comp.holds_back();
        if t > 0 && !retrieved.is_empty() {
            // What retrieval found for this turn was sorted into the tool list: when
            // that added a tool, the list sent from now on is a new one, cached from
            // its first change on; when it found only what was there, nothing moves.
            let now = visible(&lock(state));
            if now != visible_before {
                conv.first_tools = now;
                conv.joined_at.clear();
                conv.joined_epoch += 1;
            }
        }
        conv.messages.push(Message::User {
            content: text.to_string(),
        });
        let mut final_text = None;
        let mut hit_max_requests = false;
        let mut n_requests = 0;
        let mut turn_first = 0;
        let mut turn_peak = selection_peak;
        // The model's own misbehaviour, counted per answer.
        let (mut empty, mut refusals, mut truncs) = (0, 0, 0);
        let mut overflowed = false;
        let names = backend.names();
        for k in 1..=unit.max_requests {
            if conv.infra_error.is_some() {
                break;
            }
            n_requests = k;
            let request = conv.requests.len() + 1;
            // The history goes into the request and comes back after the answer: it is
            // lent, never copied, so a request costs no more for a longer conversation.
            let mut cx = comp.context(&lock(state), std::mem::take(&mut conv.messages));
            // What is counted is what is sent: a provider that refuses some of FIM
            // One's names gets others ([`crate::names`]), and those are counted.
            let map = names.and_then(|r| crate::names::NameMap::of(&cx, &r));
            let sent = map.as_ref().map(|m| m.apply(&cx));
            let counted = sent.as_ref().unwrap_or(&cx);
            let mut entered = Vec::new();
            // Each tool's text, tokens and hash, once per request: from the unit when
            // it is one of the mode's fixed tools (rendered and counted once per unit;
            // `request_tools`, the one tool whose text changes, is a reserved name),
            // else counted now.
            // The list the request before sent, when it is the same one (the composite
            // shares one list while nothing loads), takes that request's texts.
            let texts: Arc<[ToolText]> = match &conv.tool_texts {
                Some((tools, texts)) if Arc::ptr_eq(tools, &counted.tools) => texts.clone(),
                _ => {
                    let texts: Arc<[ToolText]> =
                        counted.tools.iter().map(|t| unit.tool_text(t, c)).collect();
                    conv.tool_texts = Some((counted.tools.clone(), texts.clone()));
                    texts
                }
            };
            if request == 1 {
                conv.system_sent = unit.system_tokens;
                entered.push(Entry::new(
                    Layer::System,
                    "system prompt",
                    conv.ledger.system,
                    Some(counted.system.clone()),
                ));
            } else if k == 1 && unit.system_tokens > conv.system_sent {
                // A turn whose `adds` grew the catalog lists the new stubs: what the
                // system prompt gained is system-prompt tokens, from this turn on.
                let grown = unit.system_tokens - conv.system_sent;
                conv.system_sent = unit.system_tokens;
                conv.ledger.system += grown;
                entered.push(Entry::new(
                    Layer::System,
                    format!("system prompt, grown at turn {}", t + 1),
                    grown,
                    Some(counted.system.clone()),
                ));
            }
            // Definitions present from a turn's first request — the conversation's,
            // or a later turn's that its `adds`, the selection step's new pick or
            // retrieval put in the list — are tool definitions of that turn; any other
            // that joins later was fetched.
            let up_front = k == 1;
            let adds = request > 1 && k == 1 && !query.turn_adds(t).is_empty();
            let grown_at = adds.then_some(t + 1);
            for (t, tt) in counted.tools.iter().zip(texts.iter()) {
                if let Some(&was) = conv.seen_tools.get(&t.name) {
                    // A turn that adds to the catalog may lengthen a definition sent
                    // before (a meta-tool whose description lists the servers): what
                    // it gained is tool definitions of that turn.
                    if let Some(turn) = grown_at {
                        let n = tt.tokens;
                        if n > was {
                            conv.ledger.tool_defs += n - was;
                            conv.seen_tools.insert(t.name.clone(), n);
                            entered.push(Entry::new(
                                Layer::ToolDefs,
                                format!("{}, grown at turn {turn}", t.name),
                                n - was,
                                Some(tt.text.to_string()),
                            ));
                        }
                    }
                    continue;
                }
                let (n, text) = (tt.tokens, tt.text.to_string());
                conv.seen_tools.insert(t.name.clone(), n);
                if up_front {
                    conv.ledger.tool_defs += n;
                    entered.push(Entry::new(Layer::ToolDefs, t.name.clone(), n, Some(text)));
                } else {
                    conv.ledger.fetched += n;
                    entered.push(Entry::new(
                        Layer::Fetched,
                        format!("tool definition {}", t.name),
                        n,
                        Some(text),
                    ));
                }
            }
            if k == 1 {
                entered.push(Entry::new(
                    Layer::Query,
                    "user",
                    c.count(text),
                    Some(text.to_string()),
                ));
            }
            // Each message as sent, hashed and counted once: the history only grows
            // (and a name map renames each message alike whenever it is sent), so a
            // request costs the counting of what joined it, not of the whole history.
            for m in &counted.messages[conv.sent.len()..] {
                let n = c.message(m);
                conv.sent.push((hash_value(m), n));
                conv.sent_tokens += n;
            }
            // The whole request, as `Counter::context` counts it, with the mode's
            // fixed texts taken from the unit.
            let req = unit.system_tokens
                + texts.iter().map(|t| t.tokens).sum::<usize>()
                + conv.sent_tokens;
            if request == 1 {
                conv.ledger.first_request = req;
                conv.first_tools = counted.tools.iter().map(|t| t.name.clone()).collect();
            }
            if k == 1 {
                turn_first = req;
            }
            turn_peak = turn_peak.max(req);
            // The head of the request (the tool list before the history, the system
            // prompt), piece by piece.
            let head = {
                let mut p: Vec<(u64, usize)> = Vec::new();
                let mut later: Vec<(u64, usize)> = Vec::new();
                for (t, tt) in counted.tools.iter().zip(texts.iter()) {
                    if in_place && !conv.first_tools.contains(&t.name) {
                        later.push((tt.hash, tt.tokens));
                    } else {
                        p.push((tt.hash, tt.tokens));
                    }
                }
                if in_place && !later.is_empty() {
                    let known: usize = conv.joined_at.iter().map(|(_, v)| v.len()).sum();
                    if later.len() > known {
                        conv.joined_at
                            .push((counted.messages.len(), later[known..].to_vec()));
                    }
                }
                p.push((hash_value(counted.system.as_str()), unit.system_tokens));
                p
            };
            // The longest prefix an earlier request of the conversation sent too: the
            // previous one's, unless the tool list or system prompt went back to what
            // an earlier request sent (a selection step's pick at a later turn), whose
            // prefix a provider's cache still holds. Pieces are chained hashes, so a
            // chain an earlier request sent means every piece before it was sent too.
            let mut cached = 0;
            let (mut chain, mut tokens) = (0u64, 0usize);
            let mut chains = Vec::new();
            for (h, n) in &head {
                chain = hash_value(&(chain, *h));
                tokens += n;
                if conv.prefixes.contains(&chain) {
                    cached = tokens;
                }
                chains.push(chain);
            }
            // The history after the same head as the walk of the request before: the
            // messages (and definitions joined in place) that request walked are sent
            // again as they were, so the walk goes on from where it stopped, and all of
            // it is a prefix sent before. The history only grows, and definitions join
            // after its last message, so nothing it walked can have changed.
            let head_chain = (chain, conv.joined_epoch);
            let mut from = 0;
            if conv.walk.head == Some(head_chain) {
                from = conv.walk.messages;
                chain = conv.walk.chain;
                tokens = conv.walk.tokens;
                cached = tokens;
            }
            let mut rest: Vec<(u64, usize)> = Vec::new();
            for i in from..counted.messages.len() {
                rest.push(conv.sent[i]);
                for (_, defs) in conv.joined_at.iter().filter(|(at, _)| *at == i + 1) {
                    rest.extend(defs.iter().copied());
                }
            }
            for (h, n) in rest {
                chain = hash_value(&(chain, h));
                tokens += n;
                if conv.prefixes.contains(&chain) {
                    cached = tokens;
                }
                chains.push(chain);
            }
            conv.walk = Walk {
                head: Some(head_chain),
                messages: counted.messages.len(),
                chain,
                tokens,
            };
            conv.prefixes.extend(chains);
            conv.cached_total += cached;
            conv.ledger.billed_input += req;
            conv.cached_per_request.push(cached);
            conv.ledger.peak_context = conv.ledger.peak_context.max(req);
            let offered_tools = counted.tools.clone();
            let n_tools = cx.tools.len();
            let asked = asker.ask(Purpose::Act, &cx).await;
            drop(sent);
            conv.messages = std::mem::take(&mut cx.messages);
            drop(cx);
            let answer = match asked {
                Ok(a) => a,
                // The request was too large for the model: the strategy failed here.
                Err(ModelError::ContextOverflow { .. }) => {
                    overflowed = true;
                    conv.requests
                        .push(RequestRecord::new(request, req, n_tools, entered));
                    break;
                }
                Err(e) => {
                    conv.infra_error = Some(e.to_string());
                    conv.requests
                        .push(RequestRecord::new(request, req, n_tools, entered));
                    break;
                }
            };
            let usage = answer.usage;
            let latency_ms = answer.latency.map(|d| d.as_millis() as u64);
            let truncated = answer.truncated;
            truncs += usize::from(truncated);
            refusals += usize::from(answer.refusal.is_some());
            let said = answer.response.text.as_deref().unwrap_or("");
            if answer.response.calls.is_empty() {
                if said.trim().is_empty() && answer.refusal.is_none() {
                    empty += 1;
                }
                let offered: Vec<&str> = offered_tools.iter().map(|t| t.name.as_str()).collect();
                if score::is_text_call(said, &offered) {
                    tally.text_calls += 1;
                }
            }
            let Response {
                text: answered,
                calls: tool_calls,
                searches,
                echo,
            } = answer.response;
            let msg = Message::Assistant {
                content: answered.clone(),
                tool_calls: tool_calls.clone(),
                searches: searches.clone(),
                echo,
            };
            let out = match &map {
                Some(m) => c.message(&m.message(&msg)),
                None => c.message(&msg),
            };
            conv.ledger.output += out;
            entered.push(Entry::new(
                Layer::Output,
                "assistant",
                out,
                answered.clone(),
            ));
            conv.messages.push(msg);
            // Searches the provider ran itself (`native=server`): what they found joins
            // the list before the calls that use it are answered.
            for s in &searches {
                let a =
                    tally.native_search(comp, &mut lock(state), c, &mut conv.ledger, s, request);
                entered.push(a.entry);
            }
            if tool_calls.is_empty() {
                final_text = answered;
                conv.requests.push(RequestRecord {
                    usage,
                    latency_ms,
                    truncated,
                    ..RequestRecord::new(request, req, n_tools, entered)
                });
                break;
            }
            // What the model saw when it wrote this request's calls: a skill read by
            // one call of a parallel batch was not in context for the others.
            let seen_skills: Vec<String> = lock(state).loaded_skills.iter().cloned().collect();
            for call in tool_calls {
                let a = tally.call(
                    comp,
                    &mut lock(state),
                    self.databases,
                    conv.live
                        .as_ref()
                        .map(|l| l as &dyn crate::environment::live::LiveCalls),
                    c,
                    &mut conv.ledger,
                    &call,
                    request,
                    seen_skills.clone(),
                );
                entered.push(a.entry);
                // `native=client`: what discbench's search found goes back as the
                // provider's own references, so that the provider expands them.
                let references = match (&a.effect, comp.native()) {
                    (crate::strategy::Effect::Fetched { join, .. }, Some(n))
                        if n.execution == crate::wire::Execution::Client =>
                    {
                        join.clone()
                    }
                    _ => Vec::new(),
                };
                conv.messages.push(Message::Tool {
                    tool_call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: a.content,
                    references,
                });
            }
            // A live server that failed (did not start, crashed, hung): the
            // conversation ends with an infra error, as a failed model request does.
            if let Some(e) = conv.live.as_ref().and_then(Instances::failure) {
                conv.infra_error.get_or_insert(e);
            }
            conv.requests.push(RequestRecord {
                usage,
                latency_ms,
                truncated,
                ..RequestRecord::new(request, req, n_tools, entered)
            });
            if k == unit.max_requests {
                hit_max_requests = true;
            }
        }
        let final_skills: Vec<String> = lock(state).loaded_skills.iter().cloned().collect();
        let expect = query.turn_expect(t);
        // A turn judged by state: its reference runs on the second instances, then the
        // states are compared (before scoring, which may read them).
        let judged = match &expect.reference {
            Some(reference) if conv.infra_error.is_none() => {
                self.judge_by_state(reference, query, conv)
            }
            _ => None,
        };
        // Its call metrics are measured on the reference's tools when it lists no calls.
        let by_reference = expect.reference_steps();
        let Scored {
            mut score,
            mut protocol,
            surfacing,
        } = tally.score(
            self.scenario,
            by_reference.as_ref().unwrap_or(expect),
            &final_skills,
            self.databases,
            n_requests,
            hit_max_requests,
        );
        protocol.empty_answers = empty;
        protocol.refusals = refusals;
        protocol.truncated = truncs;
        if overflowed {
            // The agent never finished: whatever it called before, the turn failed.
            protocol.context_overflow = 1;
            score.exact = false;
            score.abstain_ok = score.abstain_ok.map(|_| false);
        }
        let mut why = score::why(expect, &score, overflowed);
        if let (Some(reference), Some(j)) = (&expect.reference, judged) {
            let made_call = !tally.calls.is_empty();
            let bfcl = query.judge == Judge::Bfcl;
            if bfcl && reference.is_empty() {
                // BFCL does not judge a turn whose ground truth is empty.
                score.exact = !overflowed;
            } else {
                score.state_ok = Some(j.state_ok);
                score.results_ok = Some(j.results_ok);
                let calls_ok = if expect.calls.is_empty() {
                    true
                } else {
                    score.exact
                };
                let called = reference.is_empty() || made_call;
                score.exact = !overflowed && calls_ok && j.state_ok && j.results_ok && called;
                let mut parts = Vec::new();
                if !called {
                    parts.push("no call was made".to_string());
                }
                if !j.state_ok {
                    parts.push(format!(
                        "the state differs from the reference's ({})",
                        j.differing.join(", ")
                    ));
                }
                if !j.results_ok {
                    parts.push("a reference result is not among the agent's results".to_string());
                }
                if !calls_ok {
                    parts.push(why.clone());
                }
                why = parts.join("; ");
            }
            if expect.calls.is_empty() {
                // No calls were listed: arguments and abstention are not judged.
                score.args_ok = None;
                score.abstain_ok = None;
            }
        }
        let l = &conv.ledger;
        let tokens = Ledger {
            system: if t == 0 {
                l.system
            } else {
                l.system - before.system
            },
            tool_defs: l.tool_defs - before.tool_defs,
            fetched: l.fetched - before.fetched,
            results: l.results - before.results,
            output: l.output - before.output,
            selection: l.selection - before.selection,
            first_request: turn_first,
            billed_input: l.billed_input - before.billed_input,
            peak_context: turn_peak,
            cached_prefix: conv.cached_total - cached_before,
            billed_cached: 0,
        };
        Turned {
            calls: tally.calls,
            score,
            protocol,
            surfacing,
            selection,
            retrieved,
            final_text,
            tokens,
            first_request_index,
            n_requests: conv.requests.len() - first_request_index,
            why,
        }
    }
}

/// A turn judged by state: whether the states were equal, whether the reference's
/// results were among the agent's, and the servers whose states differed.
#[derive(Debug, Clone)]
struct StateJudgement {
    state_ok: bool,
    results_ok: bool,
    differing: Vec<String>,
}

impl Episode<'_> {
    /// The key live answers are kept under (`--record`) and found by (a replay).
    fn live_key(&self) -> String {
        serde_json::to_string(self.key).expect("keys serialize")
    }

    /// Runs the turn's reference calls on the conversation's second instances, then
    /// compares the states of the live servers that expose one (in the query's view)
    /// and looks for each reference result among the agent's results so far. `None`
    /// when a live exchange failed: the conversation's infra error is set.
    fn judge_by_state(
        &self,
        reference: &[crate::scenario::ReferenceCall],
        query: &crate::scenario::Query,
        conv: &mut Conversation,
    ) -> Option<StateJudgement> {
        let live = self.live?;
        let agent = conv.live.as_ref()?;
        let key = self.live_key();
        let refs = conv
            .reference
            .get_or_insert_with(|| live.instances_for(&key, Side::Reference));
        let mut results = Vec::new();
        for r in reference {
            let crate::catalog::Address::Mcp(server, tool) = &r.address else {
                continue;
            };
            use crate::environment::live::LiveCalls;
            match refs.call(
                server.as_str(),
                tool.as_str(),
                &serde_json::Value::Object(r.args.clone()),
            ) {
                Some(text) => results.push(text),
                None => break,
            }
        }
        let servers: Vec<String> = agent
            .stateful_servers()
            .into_iter()
            .filter(|s| {
                query.scope.is_empty()
                    || query
                        .scope
                        .contains(&crate::catalog::Resource::Mcp(s.clone()))
            })
            .collect();
        let mut differing = Vec::new();
        for s in &servers {
            let (a, b) = (agent.state(s), refs.state(s));
            if a.is_some() && b.is_some() && a != b {
                differing.push(format!("mcp:{s}"));
            }
        }
        if let Some(e) = refs.failure().or_else(|| agent.failure()) {
            conv.infra_error.get_or_insert(format!("reference: {e}"));
            return None;
        }
        // Each reference result among the agent's results so far, as a multiset (a
        // result the reference gave twice must be among the agent's twice), as BFCL's
        // checker counts them.
        let mut made: std::collections::HashMap<String, usize> = Default::default();
        for r in agent.results() {
            *made.entry(r).or_default() += 1;
        }
        let mut results_ok = true;
        for r in &results {
            match made.get_mut(r) {
                Some(n) if *n > 0 => *n -= 1,
                _ => results_ok = false,
            }
        }
        Some(StateJudgement {
            state_ok: differing.is_empty(),
            results_ok,
            differing,
        })
    }
}

/// What one episode carries from turn to turn: the conversation sent, the ledger, the
/// requests made and the cache prediction's pieces.
#[derive(Default)]
struct Conversation {
    ledger: Ledger,
    messages: Vec<Message>,
    requests: Vec<RequestRecord>,
    infra_error: Option<String>,
    /// This conversation's live MCP instances (started at their first call).
    live: Option<Instances>,
    /// The second instances its turns' reference calls run on (judging by state).
    reference: Option<Instances>,
    /// Each tool definition sent so far, by name, with its tokens when first sent
    /// (or when a turn's `adds` lengthened it).
    seen_tools: crate::hash::FastMap<String, usize>,
    first_tools: Vec<String>,
    /// Every prefix an earlier request sent, as a chain of piece hashes.
    prefixes: std::collections::HashSet<u64>,
    joined_at: Vec<(usize, Vec<(u64, usize)>)>,
    /// How many times `joined_at` was emptied (a walk is continued only in the same).
    joined_epoch: usize,
    /// Each message of `messages` as last sent: its piece hash and its tokens.
    sent: Vec<(u64, usize)>,
    /// The tokens of `sent`, summed.
    sent_tokens: usize,
    /// Where the cache prediction's walk of the previous request stopped.
    walk: Walk,
    cached_total: usize,
    cached_per_request: Vec<usize>,
    /// The system prompt's tokens as last sent (it grows at a turn whose `adds` add
    /// stubs).
    system_sent: usize,
    /// The tool list last sent, and each of its definitions as sent. Holding the list
    /// keeps its address from being reused, so an equal pointer is the same list.
    tool_texts: Option<SentTools>,
}

/// A tool list as sent, and each of its definitions' texts.
type SentTools = (Arc<[ToolDef]>, Arc<[ToolText]>);

/// The end of a request's walk over its pieces: the head it started from (its chain
/// and the `joined_at` epoch), how many messages it walked, and the chain and tokens
/// at its end.
#[derive(Default)]
struct Walk {
    head: Option<(u64, usize)>,
    messages: usize,
    chain: u64,
    tokens: usize,
}

/// One turn answered.
struct Turned {
    calls: Vec<crate::score::CallRecord>,
    score: Score,
    protocol: Protocol,
    surfacing: Option<crate::score::surfacing::Surfacing>,
    selection: Option<SelectionRecord>,
    retrieved: Vec<crate::strategy::Retrieved>,
    final_text: Option<String>,
    tokens: Ledger,
    first_request_index: usize,
    n_requests: usize,
    why: String,
}

impl Episode<'_> {
    /// The selection step as the seed system runs it: the keyword shortcut, else a
    /// forced `select_tools` call, else JSON mode (when the model has it), else plain
    /// text (each text level asked once more when its answer held no JSON object).
    /// Every request made is counted in `selection`.
    async fn select(
        &self,
        comp: &crate::strategy::Composite,
        query: &str,
        json_mode: bool,
        asker: &mut Asker<'_>,
        ledger: &mut Ledger,
        state: &Mutex<State>,
    ) -> Result<SelectionRecord, String> {
        let tools_before = comp.all_tools().len();
        if let Some(picked) = comp.selection_shortcut(query) {
            let selected = comp.apply_selection(&mut lock(state), Some(&picked));
            return Ok(SelectionRecord {
                tools_before,
                selected,
                answer: String::new(),
                usage: None,
                shortcut: true,
                requests: 0,
            });
        }
        let max = comp.selection_config().max;
        let mut acc = SelectAcc::default();
        let mut levels = vec![Level::Forced];
        if json_mode {
            levels.push(Level::Json);
        }
        levels.push(Level::Text);
        let mut answer = Response::default();
        let mut object = None;
        for level in levels {
            let cx = comp
                .selection_context(query, level)
                .map_err(|e| e.to_string())?;
            answer = match self.ask_select(asker, ledger, &mut acc, &cx, max).await {
                Ok(a) => a,
                // A request this model cannot take (FIM One moves on to the next level);
                // what retrying could not fix is an infra error, as anywhere.
                Err(e) if gives_way(&e) => continue,
                Err(e) => return Err(e.to_string()),
            };
            object = selection::answer_object(&answer);
            let said = answer.text.clone().unwrap_or_default();
            if object.is_none() && level != Level::Forced && !said.is_empty() {
                let again = comp
                    .selection_retry(&cx, &said)
                    .map_err(|e| e.to_string())?;
                answer = match self.ask_select(asker, ledger, &mut acc, &again, max).await {
                    Ok(a) => a,
                    Err(e) if gives_way(&e) => continue,
                    Err(e) => return Err(e.to_string()),
                };
                object = selection::answer_object(&answer);
            }
            if object.is_some() {
                break;
            }
        }
        let picked = object.as_ref().map(selection::names_in);
        let selected = comp.apply_selection(&mut lock(state), picked.as_deref());
        Ok(SelectionRecord {
            tools_before,
            selected,
            answer: match answer.calls.first() {
                Some(call) => call.arguments.clone(),
                None => answer.text.unwrap_or_default(),
            },
            usage: acc.usage,
            shortcut: false,
            requests: acc.requests,
        })
    }

    /// One selection request, counted.
    async fn ask_select(
        &self,
        asker: &mut Asker<'_>,
        ledger: &mut Ledger,
        acc: &mut SelectAcc,
        cx: &crate::wire::Context,
        max: usize,
    ) -> Result<Response, ModelError> {
        let c = self.counter;
        let req = c.context(cx);
        ledger.billed_input += req;
        ledger.peak_context = ledger.peak_context.max(req);
        acc.requests += 1;
        let a = asker.ask(Purpose::Select { max }, cx).await?;
        let said = c.message(&Message::assistant(
            a.response.text.clone(),
            a.response.calls.clone(),
        ));
        ledger.selection += req + said;
        acc.usage = match (acc.usage, a.usage) {
            (Some(u), Some(v)) => Some(u.plus(v)),
            (u, v) => u.or(v),
        };
        Ok(a.response)
    }
}

/// Whether a failed selection request gives way to the next level: the request was
/// refused as it was made (a 4xx other than authentication, or an answer that cannot
/// be decoded), which another level may avoid.
fn gives_way(e: &ModelError) -> bool {
    matches!(
        e,
        ModelError::Rejected { .. }
            | ModelError::Undecodable(_)
            | ModelError::ContextOverflow { .. }
    )
}

/// What the selection requests of one episode add up to.
#[derive(Default)]
struct SelectAcc {
    usage: Option<Usage>,
    requests: usize,
}

/// The provider's prompt cache beside discbench's prediction, over the agent-loop requests
/// whose usage reported cache figures (`None` when none did). The selection step's
/// requests are left out: their cacheable prefix is not predicted.
fn cache_measure(requests: &[RequestRecord], backend: &dyn Backend) -> Option<CacheMeasure> {
    let prices = backend.prices();
    let writes = backend.writes_cache();
    let mut m = CacheMeasure {
        requests: 0,
        predicted: 0,
        read: 0,
        written: 0,
        cost_predicted_usd: prices.map(|_| 0.0),
        cost_reported_usd: prices.map(|_| 0.0),
    };
    for t in requests {
        let Some(u) = t
            .usage
            .filter(|u| u.cached_input.is_some() || u.cache_write.is_some())
        else {
            continue;
        };
        m.requests += 1;
        let predicted = t.cached_prefix as u64;
        m.predicted += predicted;
        m.read += u.cached_input.unwrap_or(0);
        m.written += u.cache_write.unwrap_or(0);
        if let Some(p) = prices {
            let rest = (t.request_tokens as u64).saturating_sub(predicted);
            let (fresh, written) = if writes { (0, rest) } else { (rest, 0) };
            *m.cost_predicted_usd.as_mut().expect("priced") +=
                p.at(u.input).cost_of(fresh, predicted, written, u.output);
            *m.cost_reported_usd.as_mut().expect("priced") += p.cost(&u);
        }
    }
    (m.requests > 0).then_some(m)
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().expect("episode state")
}

fn expect_json(e: &Expect) -> serde_json::Value {
    serde_json::to_value(e).expect("expectations serialize")
}
