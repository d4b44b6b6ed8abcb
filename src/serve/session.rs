//! [`Session`]: one MCP session against a served scenario — what it was listed, the
//! calls and resource reads it made, answered through the composite with an episode
//! state of its own (its authorizations under `mcp-resource` are never shared) — and,
//! when it is tied to a query, its [`Outcome`].
//!
//! What the server sees is not what the client's model was sent: the client's own
//! prompt and the conversation stay with the client. So a session's ledger counts
//! what the server disclosed — `system` (the instructions), `tool_defs` (the tool
//! list, and the `tool_descriptions` resource's description under `mcp-resource`),
//! `fetched` and `results` as in a run — and its requests are its calls, each
//! counted as everything disclosed before it: the smallest context a client could
//! have held when it made the call (`first_request` is the listing; `billed_input` and
//! `peak_context` follow from those requests). `output` stays 0.

use std::sync::Arc;

use serde_json::{json, Value};

use super::record::UnscoredSession;
use super::Served;
use crate::record::{Entry, Layer, Outcome, RequestRecord, FORMAT_VERSION};
use crate::runner::tally::{Scored, Tally};
use crate::strategy::mcp_pd::mcp_resource::{READ_RESOURCE, URI};
use crate::strategy::{Effect, ProtocolError, State};
use crate::tokens::Ledger;
use crate::wire::{ToolCall, ToolDef};

/// The `tool_descriptions` resource as `resources/list` gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceListing {
    pub uri: String,
    pub name: String,
    pub description: String,
    pub mime_type: String,
}

/// The answer to a `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallAnswer {
    pub content: String,
    /// The call failed as the protocol judges it (MCP's `isError`).
    pub is_error: bool,
}

/// Why a request is refused as a JSON-RPC error rather than answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// `tools/call` of a tool that was not listed (MCP: invalid params).
    UnknownTool(String),
    /// `resources/read` of a resource this server does not have.
    UnknownResource(String),
}

/// One session's state.
pub struct Session {
    served: Arc<Served>,
    state: State,
    tally: Tally,
    ledger: Ledger,
    turns: Vec<RequestRecord>,
    /// Listing entries not yet attached to a turn.
    pending: Vec<Entry>,
    tools_listed: bool,
    resources_listed: bool,
    /// Tokens disclosed so far.
    disclosed: usize,
    client: Option<String>,
    /// The query this session is tied to: `--query`, or one the session named.
    query: Option<usize>,
    /// The outcome was taken (a session ends once).
    ended: bool,
}

impl Session {
    pub fn new(served: Arc<Served>) -> Session {
        let comp = served.composite.clone();
        let state = comp.new_state();
        let mut tally = Tally::new(&comp);
        tally.shown_up_front(&state);
        let system = comp.system().to_string();
        let n = served.counter.count(&system);
        let ledger = Ledger {
            system: n,
            ..Ledger::default()
        };
        let query = served.query;
        Session {
            query,
            pending: vec![Entry::new(Layer::System, "instructions", n, Some(system))],
            disclosed: n,
            served,
            state,
            tally,
            ledger,
            turns: Vec::new(),
            tools_listed: false,
            resources_listed: false,
            client: None,
            ended: false,
        }
    }

    /// Ties the session to the scenario's query `id` (a Streamable HTTP client names it
    /// in the endpoint's `?query=`); `--query` gives way to it.
    pub fn tie(&mut self, id: &str) -> Result<(), String> {
        let sc = &self.served.scenario;
        match sc.queries.iter().position(|q| q.id == id) {
            Some(i) => {
                self.query = Some(i);
                Ok(())
            }
            None => Err(format!("scenario `{}` has no query `{id}`", sc.name)),
        }
    }

    /// The client's name and version, from its `initialize`.
    pub fn set_client(&mut self, name: &str, version: &str) {
        self.client = Some(if version.is_empty() {
            name.to_string()
        } else {
            format!("{name} {version}")
        });
    }

    /// The client as outcomes name it: `--model`, else `client:<name>`.
    pub fn model(&self) -> String {
        match (&self.served.model, &self.client) {
            (Some(m), _) => m.clone(),
            (None, Some(c)) => format!("client:{}", c.split(' ').next().unwrap_or(c)),
            (None, None) => "client:unknown".to_string(),
        }
    }

    /// The tools `tools/list` gives: the composite's, but under `mcp-resource` not
    /// `read_resource` (a client reads the resource with `resources/read`).
    pub fn tools(&self) -> Vec<ToolDef> {
        let resource = self.served.resource_mode();
        self.served
            .composite
            .visible_tools(&self.state)
            .iter()
            .filter(|t| !(resource && t.name == READ_RESOURCE))
            .cloned()
            .collect()
    }

    /// `tools/list`: the tools, counted into the ledger the first time.
    pub fn list_tools(&mut self) -> Vec<ToolDef> {
        let tools = self.tools();
        if !self.tools_listed {
            self.tools_listed = true;
            for t in &tools {
                let text = t.wire_json();
                let n = self.served.counter.count(&text);
                self.ledger.tool_defs += n;
                self.disclosed += n;
                self.pending
                    .push(Entry::new(Layer::ToolDefs, t.name.clone(), n, Some(text)));
            }
        }
        tools
    }

    /// `resources/list`: under `mcp-resource`, the `tool_descriptions` resource whose
    /// description is the workflow (the guide's server side); else nothing.
    pub fn list_resources(&mut self) -> Vec<ResourceListing> {
        let Some(description) = self.workflow() else {
            return Vec::new();
        };
        if !self.resources_listed {
            self.resources_listed = true;
            let n = self.served.counter.count(&description);
            self.ledger.tool_defs += n;
            self.disclosed += n;
            self.pending.push(Entry::new(
                Layer::ToolDefs,
                format!("resource {URI}"),
                n,
                Some(description.clone()),
            ));
        }
        vec![ResourceListing {
            uri: URI.to_string(),
            name: "tool_descriptions".to_string(),
            description,
            mime_type: "application/json".to_string(),
        }]
    }

    /// The workflow text of the `tool_descriptions` resource: the description the
    /// `mcp-resource` strategy gives its `read_resource` tool (served wording), less
    /// an opening sentence that describes the tool ("Reads a resource…", kept by
    /// template sets): the client reads the resource, there is no such tool.
    fn workflow(&self) -> Option<String> {
        if !self.served.resource_mode() {
            return None;
        }
        self.served
            .composite
            .all_tools()
            .iter()
            .find(|t| t.name == READ_RESOURCE)
            .map(|t| without_tool_sentence(&t.description))
    }

    /// `tools/call`. A call that fails — refused by the protocol, arguments the
    /// schema rejects, SQL that fails or hits a limit — is answered with MCP's
    /// `isError`.
    pub fn call(&mut self, name: &str, arguments: &Value) -> Result<CallAnswer, Refusal> {
        let call = ToolCall {
            id: format!("call-{}", self.tally.calls.len() + 1),
            name: name.to_string(),
            arguments: arguments.to_string(),
        };
        let turn = self.turns.len() + 1;
        if !self.tools().iter().any(|t| t.name == name) {
            let message = format!("unknown tool `{name}`");
            let request = self.disclosed;
            let entry = self.tally.refused(
                &self.served.counter,
                &mut self.ledger,
                &call,
                turn,
                ProtocolError::UnknownTarget,
                &message,
            );
            self.push_turn(request, entry);
            return Err(Refusal::UnknownTool(message));
        }
        let (content, effect) = self.resolve(&call, turn);
        let is_error = match &effect {
            Effect::Error { .. } => true,
            Effect::Executed {
                sql_result: Some(r),
                ..
            } => r.is_err(),
            // Answered with the schema violations instead of the fixture response.
            Effect::Executed { schema_errors, .. } => !schema_errors.is_empty(),
            // A program (code mode) that ended with an error.
            Effect::Program { error, .. } => error.is_some(),
            Effect::Fetched { .. } => false,
        };
        Ok(CallAnswer { content, is_error })
    }

    /// `resources/read`: under `mcp-resource`, a read of the `tool_descriptions`
    /// resource, answered (and authorizing) as the strategy answers `read_resource`;
    /// its refusals (`MISSING_TOOL_SELECTION`, unknown tool names) are the resource's
    /// contents, as the guide's server returns them.
    pub fn read(&mut self, uri: &str) -> Result<String, Refusal> {
        let base = uri.split_once('?').map_or(uri, |(b, _)| b);
        if !self.served.resource_mode() || base.trim_end_matches('/') != URI {
            return Err(Refusal::UnknownResource(format!(
                "no resource `{uri}`{}",
                if self.served.resource_mode() {
                    format!("; the resource is {URI}?tools=NAME")
                } else {
                    String::new()
                }
            )));
        }
        let call = ToolCall {
            id: format!("read-{}", self.tally.calls.len() + 1),
            name: READ_RESOURCE.to_string(),
            arguments: json!({ "resource_uri": uri }).to_string(),
        };
        let turn = self.turns.len() + 1;
        Ok(self.resolve(&call, turn).0)
    }

    fn resolve(&mut self, call: &ToolCall, turn: usize) -> (String, Effect) {
        let request = self.disclosed;
        let skills: Vec<String> = self.state.loaded_skills.iter().cloned().collect();
        let a = self.tally.call(
            &self.served.composite,
            &mut self.state,
            &self.served.databases,
            None,
            &self.served.counter,
            &mut self.ledger,
            call,
            turn,
            skills,
        );
        self.push_turn(request, a.entry);
        (a.content, a.effect)
    }

    /// One request: the listing entries not yet attached, then the call's answer.
    fn push_turn(&mut self, request: usize, entry: Entry) {
        self.disclosed += entry.tokens;
        let mut entered = std::mem::take(&mut self.pending);
        entered.push(entry);
        let tools = self.tools().len();
        self.turns.push(RequestRecord::new(
            self.turns.len() + 1,
            request,
            tools,
            entered,
        ));
    }

    /// The outcome of the session, once, when it is tied to a query: scored like an
    /// episode of a run (`repeat` is set by the recorder).
    pub fn outcome(&mut self, run_id: &str) -> Option<Outcome> {
        match self.end(run_id)? {
            Ended::Scored(o) => Some(*o),
            Ended::Unscored(_) => None,
        }
    }

    /// The session's record, once: an outcome scored like an episode of a run when it
    /// is tied to a query (`repeat` is set by the recorder), else an unscored session
    /// with the same ledger, calls and turns.
    /// Ends the session with nothing to record (it was refused at its start).
    pub fn discard(&mut self) {
        self.ended = true;
    }

    pub fn end(&mut self, run_id: &str) -> Option<Ended> {
        if self.ended {
            return None;
        }
        self.ended = true;
        if !self.pending.is_empty() || self.turns.is_empty() {
            let request = self.disclosed;
            let entered = std::mem::take(&mut self.pending);
            let tools = self.tools().len();
            self.turns.push(RequestRecord::new(
                self.turns.len() + 1,
                request,
                tools,
                entered,
            ));
        }
        let first_listing: usize = self.ledger.system + self.ledger.tool_defs;
        let mut ledger = self.ledger.clone();
        ledger.first_request = first_listing;
        // Without calls the one request is the listing itself.
        let requests: Vec<usize> = if self.tally.calls.is_empty() {
            vec![first_listing]
        } else {
            self.turns
                .iter()
                .filter(|t| {
                    t.entered
                        .iter()
                        .any(|e| e.layer != Layer::System && e.layer != Layer::ToolDefs)
                })
                .map(|t| t.request_tokens)
                .collect()
        };
        ledger.billed_input = requests.iter().sum();
        ledger.peak_context = requests.iter().copied().max().unwrap_or(0);
        ledger.billed_cached = ledger.billed_input;
        let served = self.served.clone();
        let sc = &served.scenario;
        let comp = &served.composite;
        let Some(q) = self.query else {
            let calls = std::mem::take(&mut self.tally.calls);
            let mut turns = std::mem::take(&mut self.turns);
            for t in &mut turns {
                for e in &mut t.entered {
                    e.text = None;
                }
            }
            return Some(Ended::Unscored(Box::new(UnscoredSession {
                format: FORMAT_VERSION,
                run_id: run_id.to_string(),
                scenario: sc.name.clone(),
                mode: served.mode_label.clone(),
                mode_spec: comp.mode.canonical_spec(),
                model: self.model(),
                client: self.client.clone(),
                session: 0,
                tokenizer: served.counter.encoding().as_str().to_string(),
                catalog_size: sc.catalog.addresses().len(),
                protocol: crate::score::Protocol {
                    text_calls: self.tally.text_calls,
                    ..crate::score::protocol(&calls, calls.len(), false)
                },
                calls,
                tokens: ledger,
                requests: turns,
            })));
        };
        let query = &sc.queries[q];
        let final_skills: Vec<String> = self.state.loaded_skills.iter().cloned().collect();
        let Scored {
            score,
            protocol,
            surfacing,
        } = self.tally.score(
            sc,
            &query.expect,
            &final_skills,
            &served.databases,
            self.tally.calls.len(),
            false,
        );
        Some(Ended::Scored(Box::new(Outcome {
            format: FORMAT_VERSION,
            run_id: run_id.to_string(),
            scenario: sc.name.clone(),
            query_id: query.id.clone(),
            tags: query.tags.clone(),
            mode: served.mode_label.clone(),
            mode_spec: comp.mode.canonical_spec(),
            model: self.model(),
            repeat: 0,
            tokenizer: served.counter.encoding().as_str().to_string(),
            catalog_size: sc.catalog.addresses().len(),
            expected: serde_json::to_value(&query.expect).expect("expectations serialize"),
            expected_ref: None,
            calls: std::mem::take(&mut self.tally.calls),
            final_text: None,
            selection: None,
            score,
            protocol,
            tokens: ledger,
            requests: std::mem::take(&mut self.turns),
            infra_error: None,
            usage: None,
            cost_usd: None,
            cache: None,
            retrieved: Vec::new(),
            surfacing,
            conversation: Vec::new(),
        })))
    }
}

/// How a session ended: scored against its query, or unscored.
pub enum Ended {
    Scored(Box<Outcome>),
    Unscored(Box<UnscoredSession>),
}

/// `text` without an opening sentence that describes a tool reading resources
/// ("Reads a resource." in the in-run wording and the template sets).
fn without_tool_sentence(text: &str) -> String {
    let t = text.trim_start();
    if !t.starts_with("Reads a resource") {
        return text.to_string();
    }
    match t.find(". ") {
        Some(i) => t[i + 2..].trim_start().to_string(),
        None => match t.find(".\n") {
            Some(i) => t[i + 2..].trim_start().to_string(),
            None => text.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::serve::ServeOptions;
    use crate::strategy::{Mode, ProtocolConfig, Templates};
    use crate::tokens::{Counter, Encoding};

    fn tiny(mode: &str, query: Option<&str>) -> Arc<Served> {
        let sc = crate::scenario::load(Path::new("fixtures/snapshot/tiny.yaml")).unwrap();
        Arc::new(
            Served::new(
                sc,
                ServeOptions {
                    mode: Mode::parse(mode).unwrap(),
                    templates: Arc::new(Templates::builtin()),
                    protocol: ProtocolConfig::default(),
                    counter: Arc::new(Counter::new(Encoding::O200kBase)),
                    query: query.map(str::to_string),
                    model: None,
                    recorder: None,
                },
            )
            .unwrap(),
        )
    }

    #[test]
    fn the_ledger_counts_what_was_disclosed_before_each_call() {
        let mut s = Session::new(tiny("legacy", Some("issue")));
        let first = s.list_tools();
        assert_eq!(s.list_tools(), first, "the list does not change");
        let listing = s.ledger.system + s.ledger.tool_defs;
        let defs: usize = first
            .iter()
            .map(|t| s.served.counter.count(&t.wire_json()))
            .sum();
        assert_eq!(s.ledger.tool_defs, defs, "listed twice, counted once");
        let a = s
            .call("erp__get_order", &json!({"order_id": "9921"}))
            .unwrap();
        let answer = s.served.counter.count(&a.content);
        s.call(
            "github__create_issue",
            &json!({"repo": "acme/app", "title": "Crash on start"}),
        )
        .unwrap();
        let o = s.outcome("r").unwrap();
        let requests: Vec<usize> = o.requests.iter().map(|t| t.request_tokens).collect();
        assert_eq!(requests, [listing, listing + answer]);
        assert_eq!(o.tokens.first_request, listing);
        assert_eq!(o.tokens.billed_input, 2 * listing + answer);
        assert_eq!(o.tokens.peak_context, listing + answer);
        assert_eq!(o.tokens.output, 0);
        // The call the query expects, and one more: not exact.
        assert!(!o.score.exact && o.score.recall == 1.0);
        assert!(s.outcome("r").is_none(), "a session ends once");
    }

    #[test]
    fn failed_calls_are_tool_errors() {
        let mut s = Session::new(tiny("legacy", Some("people")));
        let ok = |s: &mut Session, tool: &str, args: Value| s.call(tool, &args).unwrap().is_error;
        assert!(!ok(
            &mut s,
            "hr__query",
            json!({"sql": "SELECT name FROM people"})
        ));
        assert!(ok(
            &mut s,
            "hr__query",
            json!({"sql": "SELECT * FROM nowhere"})
        ));
        assert!(ok(
            &mut s,
            "hr__query",
            json!({"sql": "SELECT randomblob(900000000)"})
        ));
        assert!(ok(&mut s, "hr__query", json!({})), "no SQL");
        assert!(
            ok(&mut s, "erp__get_order", json!({"order_id": 5})),
            "schema violation"
        );
        assert!(!ok(&mut s, "erp__get_order", json!({"order_id": "9921"})));
        let mut s = Session::new(tiny("progressive", None));
        assert!(ok(&mut s, "connector", json!({"subcommand": "nope"})));
        assert!(!ok(
            &mut s,
            "connector",
            json!({"subcommand": "discover", "connector": "erp"})
        ));
    }

    #[test]
    fn the_tool_sentence_is_dropped_from_a_set_s_resource_description() {
        assert_eq!(
            without_tool_sentence("Reads a resource. Read tool descriptions from X first."),
            "Read tool descriptions from X first."
        );
        assert_eq!(without_tool_sentence("Read X first."), "Read X first.");
    }

    #[test]
    fn untied_sessions_have_no_outcome_and_unlisted_tools_are_refused() {
        let mut s = Session::new(tiny("mcp-resource", None));
        assert!(!s.tools().iter().any(|t| t.name == READ_RESOURCE));
        assert_eq!(
            s.call(READ_RESOURCE, &json!({"resource_uri": URI})),
            Err(Refusal::UnknownTool(format!(
                "unknown tool `{READ_RESOURCE}`"
            )))
        );
        assert!(matches!(
            s.read("file:///etc/passwd"),
            Err(Refusal::UnknownResource(_))
        ));
        assert!(s.tie("nope").is_err());
        assert!(s.outcome("r").is_none());
        let mut s = Session::new(tiny("progressive", None));
        assert!(
            s.list_resources().is_empty(),
            "no resources outside mcp-resource"
        );
        s.tie("issue").unwrap();
        assert_eq!(s.outcome("r").unwrap().query_id, "issue");
    }
}
