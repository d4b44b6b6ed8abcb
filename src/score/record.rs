//! What scoring reads and writes: each call as the runner recorded it
//! ([`CallRecord`]), the selection metrics of an outcome ([`Score`]), and its protocol
//! counters ([`Protocol`], counted by [`protocol`]).
//!
//! The counters a strategy defines (a search, a resource read, the MCP Progressive
//! Disclosure refusals) are counted by the name the call's record carries — the
//! `event` of a fetch, the [`ProtocolError::Defined`] of a refusal — and stored under
//! that name beside the common counters, so scoring knows no strategy's tools.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::catalog::Address;
use crate::events::{Event, ProtocolError};

/// What a call was: a real call, a discovery (protocol), or a refused one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallEffect {
    Executed,
    Fetched,
    Error,
    /// A program ran (code mode); the calls it made are records of their own.
    Program,
}

impl CallEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            CallEffect::Executed => "executed",
            CallEffect::Fetched => "fetched",
            CallEffect::Error => "error",
            CallEffect::Program => "program",
        }
    }
}

/// One call as the runner recorded it, with what it meant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    /// The request it was made in, from 1 (`turn` in lines before format 4).
    #[serde(alias = "turn")]
    pub request: usize,
    pub tool: String,
    pub arguments: String,
    pub effect: CallEffect,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
    /// Addresses whose definitions this call brought into the context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fetched: Vec<Address>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ProtocolError>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schema_errors: Vec<String>,
    #[serde(default)]
    pub blind: bool,
    /// For executed calls, the parsed arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Skills whose full text was in the context when this call was made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills_in_context: Vec<String>,
    /// The tool called exists but was not loaded by the selection step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unloaded: bool,
    /// Fetches: definitions the answer would have held but the result budget cut
    /// (never shown whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut: Vec<Address>,
    /// A refused call the model tried to make: an unknown tool or target of an
    /// execution, or arguments that do not parse. On a query that expects no call it
    /// is an attempt, not an abstention.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub malformed: bool,
    /// The event the strategy counted for this call (a search, a resource read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    /// A call a program made (code mode): the index of that program's record among the
    /// episode's calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<usize>,
}

/// The selection metrics of one outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub exact: bool,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub first_call_correct: bool,
    /// `Some` only when no call was expected: whether none was made.
    pub abstain_ok: Option<bool>,
    pub forbidden_hit: bool,
    /// `Some` when a non-skill call was expected: every one was executed with
    /// arguments that pass the BFCL checks (or, for SQL, return the reference rows).
    pub args_ok: Option<bool>,
    /// `Some` when something was executed: every executed call's arguments validate.
    pub schema_valid: Option<bool>,
    pub predicted: Vec<Address>,
    /// `Some` for a turn judged by state: whether the live servers' states equal the
    /// reference instances' after the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_ok: Option<bool>,
    /// `Some` for a turn judged by state: whether every result of the turn's reference
    /// calls is among the agent's results so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results_ok: Option<bool>,
}

/// Protocol counters of one outcome. Counters at zero are left out of the line
/// (outcome format 3) and read as zero.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Protocol {
    #[serde(default, skip_serializing_if = "is_zero")]
    pub discovery_calls: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blind_calls: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unknown_target: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bad_subcommand: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub schema_violation: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_loaded: usize,
    /// Calls of tools held back that no search surfaced (tool search, retrieval).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_surfaced: usize,
    /// `allowed=on`: calls of tools whose definition was sent but that may not be
    /// called yet (the selection step did not load them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_allowed: usize,
    /// The counters strategies define (searches, resource reads, the MCP Progressive
    /// Disclosure refusals…), by name; none at zero. Earlier lines wrote the same
    /// names as fields, so they read back here unchanged.
    #[serde(flatten, deserialize_with = "counts")]
    pub defined: BTreeMap<String, usize>,
    /// Calls of tools not loaded that ran anyway (the default, as in FIM One): a
    /// protocol event, not an error.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unloaded_calls: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat_call: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overfetch: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    /// Model requests made (`turns` in lines before format 4).
    #[serde(alias = "turns")]
    pub requests: usize,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[serde(alias = "hit_max_turns")]
    pub hit_max_requests: bool,
    /// Answers with neither text nor a call.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub empty_answers: usize,
    /// Answers that wrote a tool call as text instead of making it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub text_calls: usize,
    /// Answers the provider marked as a refusal.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refusals: usize,
    /// Answers cut by the output token limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated: usize,
    /// Requests the provider refused for their size (the context window was
    /// exceeded): the episode ended there, as a failed outcome — the strategy's
    /// failure, not the infrastructure's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context_overflow: usize,
}

impl Protocol {
    /// Protocol errors: unknown targets, bad subcommands, schema violations, calls to
    /// tools not loaded or not surfaced, the refusals strategies define (`defined_error`
    /// says which counters are refusals), and the model's own misbehaviour (empty
    /// answers, calls written as text, refusals, answers cut by the token limit,
    /// requests past the context window).
    pub fn errors_with(&self, defined_error: &dyn Fn(&str) -> bool) -> usize {
        self.unknown_target
            + self.bad_subcommand
            + self.schema_violation
            + self.not_loaded
            + self.not_surfaced
            + self.not_allowed
            + self
                .defined
                .iter()
                .filter(|(k, _)| defined_error(k))
                .map(|(_, n)| n)
                .sum::<usize>()
            + self.empty_answers
            + self.text_calls
            + self.refusals
            + self.truncated
            + self.context_overflow
    }

    /// The counters of two parts of one outcome (turns of a conversation), summed;
    /// `hit_max_requests` when either hit it.
    pub fn plus(&self, o: &Protocol) -> Protocol {
        let mut defined = self.defined.clone();
        for (k, n) in &o.defined {
            *defined.entry(k.clone()).or_default() += n;
        }
        Protocol {
            discovery_calls: self.discovery_calls + o.discovery_calls,
            blind_calls: self.blind_calls + o.blind_calls,
            unknown_target: self.unknown_target + o.unknown_target,
            bad_subcommand: self.bad_subcommand + o.bad_subcommand,
            schema_violation: self.schema_violation + o.schema_violation,
            not_loaded: self.not_loaded + o.not_loaded,
            not_surfaced: self.not_surfaced + o.not_surfaced,
            not_allowed: self.not_allowed + o.not_allowed,
            defined,
            unloaded_calls: self.unloaded_calls + o.unloaded_calls,
            repeat_call: self.repeat_call + o.repeat_call,
            overfetch: self.overfetch + o.overfetch,
            requests: self.requests + o.requests,
            hit_max_requests: self.hit_max_requests || o.hit_max_requests,
            empty_answers: self.empty_answers + o.empty_answers,
            text_calls: self.text_calls + o.text_calls,
            refusals: self.refusals + o.refusals,
            truncated: self.truncated + o.truncated,
            context_overflow: self.context_overflow + o.context_overflow,
        }
    }

    /// The counter a strategy defined of this name (0 when it never fired).
    pub fn count(&self, name: &str) -> usize {
        self.defined.get(name).copied().unwrap_or(0)
    }

    fn add(&mut self, name: &str) {
        *self.defined.entry(name.to_string()).or_default() += 1;
    }
}

/// The defined counters of a line: every key the common counters do not name whose
/// value is a count.
fn counts<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, usize>, D::Error> {
    let all = BTreeMap::<String, Value>::deserialize(d)?;
    Ok(all
        .into_iter()
        .filter_map(|(k, v)| v.as_u64().map(|n| (k, n as usize)))
        .filter(|(_, n)| *n > 0)
        .collect())
}

/// Counts the protocol events of an episode.
pub fn protocol(calls: &[CallRecord], turns: usize, hit_max_requests: bool) -> Protocol {
    let mut p = Protocol {
        requests: turns,
        hit_max_requests,
        ..Protocol::default()
    };
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for c in calls {
        if seen.contains(&(c.tool.as_str(), c.arguments.as_str())) {
            p.repeat_call += 1;
        } else {
            seen.push((&c.tool, &c.arguments));
        }
        if c.unloaded
            && !matches!(
                c.error,
                Some(
                    ProtocolError::NotLoaded
                        | ProtocolError::NotSurfaced
                        | ProtocolError::NotAllowed
                )
            )
        {
            p.unloaded_calls += 1;
        }
        match c.effect {
            CallEffect::Fetched => {
                p.discovery_calls += 1;
                if let Some(e) = c.event {
                    p.add(e.name());
                }
            }
            CallEffect::Executed => {
                if c.blind {
                    p.blind_calls += 1;
                }
                if !c.schema_errors.is_empty() {
                    p.schema_violation += 1;
                }
            }
            CallEffect::Program => {
                if let Some(e) = c.event {
                    p.add(e.name());
                }
                if let Some(ProtocolError::Defined(e)) = c.error {
                    p.add(e.name());
                }
            }
            CallEffect::Error => match c.error {
                Some(ProtocolError::UnknownTarget) => p.unknown_target += 1,
                Some(ProtocolError::BadSubcommand) => p.bad_subcommand += 1,
                Some(ProtocolError::SchemaViolation) => p.schema_violation += 1,
                // Refused, not executed: a protocol error, not a blind call.
                Some(ProtocolError::NotLoaded) => p.not_loaded += 1,
                Some(ProtocolError::NotSurfaced) => p.not_surfaced += 1,
                Some(ProtocolError::NotAllowed) => p.not_allowed += 1,
                Some(ProtocolError::Defined(e)) => p.add(e.name()),
                None => {}
            },
        }
    }
    // Definitions fetched but never used by an executed call (skills are used by
    // being read).
    let used: BTreeSet<&Address> = calls.iter().filter_map(|c| c.address.as_ref()).collect();
    let fetched: BTreeSet<&Address> = calls
        .iter()
        .filter(|c| c.effect == CallEffect::Fetched)
        .flat_map(|c| c.fetched.iter())
        .filter(|a| !matches!(a, Address::Skill(_)))
        .collect();
    p.overfetch = fetched.difference(&used).count();
    p
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
