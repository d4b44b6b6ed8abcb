//! [`Tally`]: what the calls of one episode add up to, shared by the agent loop
//! ([`super::episode`]) and by a session an external client holds with `serve` —
//! each call answered through the mode's composite, its answer held to the result
//! budget and counted into the ledger, its record kept for scoring, what it
//! surfaced kept for recall@k — and, at the end, the score, the protocol counters
//! and the surfacing measures of the whole.

use crate::catalog::Address;
use crate::environment::Databases;
use crate::record::{Entry, Layer};
use crate::scenario::{Expect, Scenario};
use crate::score::surfacing::{self, Event, Surfacing};
use crate::score::{self, CallEffect, CallRecord, Protocol, Score};
use crate::strategy::code::code_api;
use crate::strategy::results::Budget;
use crate::strategy::{Composite, Effect, ProtocolError, State};
use crate::tokens::{Counter, Ledger};
use crate::wire::{NativeSearch, ToolCall};

/// The tool name a provider's own search is recorded under.
pub const PROVIDER_SEARCH: &str = "provider_tool_search";

/// The calls of one episode so far.
pub struct Tally {
    pub calls: Vec<CallRecord>,
    /// What was surfaced to the model, in order (see [`surfacing`]).
    pub surfaced: Vec<Event>,
    /// Answers that wrote a call as text instead of making it.
    pub text_calls: usize,
    /// The addresses the mode ranks when it shows them (recall@k and MRR are measured
    /// on these alone).
    ranked: std::sync::Arc<crate::hash::FastSet<Address>>,
    /// FIM One's budget on all tool results of one query.
    budget: Budget,
}

/// One call answered: the text for the model and the context entry it made.
pub struct Answered {
    pub content: String,
    pub entry: Entry,
    /// What the call meant, as the strategy judged it.
    pub effect: Effect,
}

/// What an episode's calls score.
pub struct Scored {
    pub score: Score,
    pub protocol: Protocol,
    pub surfacing: Option<Surfacing>,
}

impl Tally {
    pub fn new(comp: &Composite) -> Tally {
        Tally {
            calls: Vec::new(),
            surfaced: Vec::new(),
            text_calls: 0,
            ranked: comp.ranked_addresses(),
            budget: Budget::new(comp.config().results.budget_tokens),
        }
    }

    /// Records what is shown before the first call: every definition in `state`.
    pub fn shown_up_front(&mut self, state: &State) {
        let mut up_front: Vec<Address> = state.shown.iter().cloned().collect();
        up_front.sort();
        self.surfaced.push(Event {
            addresses: up_front,
            ranked: false,
        });
    }

    /// Answers one call in `turn`: resolved by the composite, held to the result
    /// budget, counted into `ledger` (fetched definitions or results), recorded.
    /// `skills_in_context` are the skills whose text the model had when it made it.
    #[allow(clippy::too_many_arguments)]
    pub fn call(
        &mut self,
        comp: &Composite,
        state: &mut State,
        databases: &Databases,
        live: Option<&dyn crate::environment::live::LiveCalls>,
        counter: &Counter,
        ledger: &mut Ledger,
        call: &ToolCall,
        turn: usize,
        skills_in_context: Vec<String>,
    ) -> Answered {
        let unloaded = !comp.is_loaded(state, &call.name)
            && comp.all_tools().iter().any(|t| t.name == call.name);
        let r = comp.resolve_live(call, state, databases, live);
        self.record(
            state,
            counter,
            ledger,
            call,
            r,
            turn,
            skills_in_context,
            unloaded,
        )
    }

    /// Records a search the provider ran itself (`native=server`) in `turn`: the tools
    /// it found join the list, as a search's do, and it counts as a search.
    pub fn native_search(
        &mut self,
        comp: &Composite,
        state: &mut State,
        counter: &Counter,
        ledger: &mut Ledger,
        search: &NativeSearch,
        turn: usize,
    ) -> Answered {
        let call = ToolCall {
            id: format!("provider_search_{}", self.calls.len()),
            name: PROVIDER_SEARCH.to_string(),
            arguments: search.query.clone(),
        };
        let r = comp.native_search(state, search);
        self.record(state, counter, ledger, &call, r, turn, Vec::new(), false)
    }

    /// Holds an answer to the result budget, counts it into `ledger` and records the
    /// call.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        state: &mut State,
        counter: &Counter,
        ledger: &mut Ledger,
        call: &ToolCall,
        mut r: crate::strategy::Resolution,
        turn: usize,
        skills_in_context: Vec<String>,
        unloaded: bool,
    ) -> Answered {
        let whole = r.content.len();
        let (content, kept) = self.budget.apply_kept(std::mem::take(&mut r.content));
        r.content = content;
        // Definitions the budget cut out of the answer were never shown whole: the
        // model that calls them calls blind.
        let mut cut = Vec::new();
        if let (
            Some(kept),
            Effect::Fetched {
                addresses,
                join,
                ends,
                ..
            },
        ) = (kept, &mut r.effect)
        {
            if join.is_empty() {
                cut = cut_definitions(addresses, ends, kept, whole);
                addresses.retain(|a| !cut.contains(a));
                for a in &cut {
                    if state.newly_shown.contains(a) {
                        state.shown.remove(a);
                        if let Address::Skill(n) = a {
                            state.loaded_skills.remove(n);
                        }
                    }
                    if let Some(i) = state.fetched.iter().rposition(|x| x == a) {
                        state.fetched.remove(i);
                    }
                    state.cut.insert(a.clone());
                }
            }
        }
        let n = counter.count(&r.content);
        let mut program_calls: Vec<CallRecord> = Vec::new();
        let mut record = CallRecord {
            request: turn,
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            effect: CallEffect::Error,
            address: None,
            fetched: Vec::new(),
            error: None,
            schema_errors: Vec::new(),
            blind: false,
            args: None,
            skills_in_context,
            unloaded,
            cut,
            malformed: false,
            event: None,
            program: None,
        };
        let layer = match &r.effect {
            Effect::Fetched {
                addresses,
                ranked,
                event,
                ..
            } => {
                self.surfaced.push(Event {
                    addresses: addresses.clone(),
                    ranked: *ranked,
                });
                ledger.fetched += n;
                record.effect = CallEffect::Fetched;
                record.fetched = addresses.clone();
                record.event = *event;
                Layer::Fetched
            }
            Effect::Executed {
                address,
                args,
                schema_errors,
                blind,
                ..
            } => {
                ledger.results += n;
                record.effect = CallEffect::Executed;
                record.address = Some(address.clone());
                record.schema_errors = schema_errors.clone();
                record.blind = *blind;
                record.args = Some(args.clone());
                Layer::Results
            }
            Effect::Error { error, malformed } => {
                ledger.results += n;
                record.error = Some(*error);
                record.malformed = *malformed;
                Layer::Results
            }
            // What the program printed is the result; each call it made is a record
            // of its own, carrying the program's index.
            Effect::Program { calls, error } => {
                ledger.results += n;
                record.effect = CallEffect::Program;
                record.event = Some(code_api::PROGRAMS.event());
                if error.is_some() {
                    record.error = Some(code_api::CODE_ERRORS.into());
                }
                program_calls = calls
                    .iter()
                    .filter_map(|c| match &c.effect {
                        Effect::Executed {
                            address,
                            args,
                            schema_errors,
                            blind,
                            ..
                        } => Some(CallRecord {
                            tool: c.function.clone(),
                            arguments: args.to_string(),
                            effect: CallEffect::Executed,
                            address: Some(address.clone()),
                            schema_errors: schema_errors.clone(),
                            blind: *blind,
                            args: Some(args.clone()),
                            cut: Vec::new(),
                            program: Some(self.calls.len()),
                            error: None,
                            event: None,
                            malformed: false,
                            unloaded: false,
                            ..record.clone()
                        }),
                        _ => None,
                    })
                    .collect();
                Layer::Results
            }
        };
        let entry = Entry::new(
            layer,
            format!("{}({})", call.name, call.arguments),
            n,
            Some(r.content.clone()),
        );
        self.calls.push(record);
        self.calls.extend(program_calls);
        Answered {
            content: r.content,
            entry,
            effect: r.effect,
        }
    }

    /// Records a call refused before any strategy saw it (a tool that is not in the
    /// list the model was given), with `message` as its answer.
    pub fn refused(
        &mut self,
        counter: &Counter,
        ledger: &mut Ledger,
        call: &ToolCall,
        turn: usize,
        error: ProtocolError,
        message: &str,
    ) -> Entry {
        let n = counter.count(message);
        ledger.results += n;
        self.calls.push(CallRecord {
            request: turn,
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            effect: CallEffect::Error,
            address: None,
            fetched: Vec::new(),
            error: Some(error),
            schema_errors: Vec::new(),
            blind: false,
            args: None,
            skills_in_context: Vec::new(),
            unloaded: false,
            cut: Vec::new(),
            // A tool that is not in the list is a call made to nothing.
            malformed: error == ProtocolError::UnknownTarget,
            event: None,
            program: None,
        });
        Entry::new(
            Layer::Results,
            format!("{}({})", call.name, call.arguments),
            n,
            Some(message.to_string()),
        )
    }

    /// Scores the calls against `expect`: `final_skills` are the skills in context at
    /// the end; `turns` and `hit_max_requests` feed the protocol counters.
    pub fn score(
        &self,
        scenario: &Scenario,
        expect: &Expect,
        final_skills: &[String],
        databases: &Databases,
        turns: usize,
        hit_max_requests: bool,
    ) -> Scored {
        let expected: Vec<Address> = expect
            .canonical_calls()
            .iter()
            .map(|c| c.address.clone())
            .collect();
        Scored {
            score: score::score(
                expect,
                &self.calls,
                self.text_calls,
                final_skills,
                &scenario.catalog,
                databases,
            ),
            protocol: Protocol {
                text_calls: self.text_calls,
                ..score::protocol(&self.calls, turns, hit_max_requests)
            },
            surfacing: surfacing::surfacing(&expected, &self.surfaced, &|a| {
                self.ranked.contains(a)
            }),
        }
    }
}

/// Which of the `addresses` an answer of `whole` bytes, cut by the result budget to
/// its first `kept` bytes, no longer holds whole: those whose definition ends past the
/// cut (`ends`, when the strategy gave where each ends); without `ends`, every one
/// but a database's (its query tool is known from the listing's first line on).
pub fn cut_definitions(
    addresses: &[Address],
    ends: &[usize],
    kept: usize,
    whole: usize,
) -> Vec<Address> {
    if kept >= whole {
        return Vec::new();
    }
    addresses
        .iter()
        .enumerate()
        .filter(|(i, a)| match ends.get(*i) {
            Some(&end) if ends.len() == addresses.len() => end > kept,
            _ => !(matches!(a, Address::Database(_)) && kept > 0),
        })
        .map(|(_, a)| a.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_answer_keeps_the_definitions_that_end_before_the_cut() {
        let a = |t: &str| Address::Mcp("s".into(), t.into());
        let addrs = [a("x"), a("y"), a("z")];
        assert_eq!(cut_definitions(&addrs, &[10, 20, 30], 20, 30), [a("z")]);
        assert_eq!(cut_definitions(&addrs, &[10, 20, 30], 9, 30), addrs);
        assert!(cut_definitions(&addrs, &[10, 20, 30], 30, 30).is_empty());
        // Without per-definition offsets: all of them, but a database's listing.
        let db = Address::Database("hr".into());
        let skill = Address::Skill("SOP".into());
        assert_eq!(
            cut_definitions(&[db.clone(), skill.clone()], &[], 5, 30),
            [skill]
        );
        assert_eq!(cut_definitions(std::slice::from_ref(&db), &[], 0, 30), [db]);
    }
}
