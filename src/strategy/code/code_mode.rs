//! Code mode (`code-mode`): the catalog as a typed API the model searches and programs
//! against, after Cloudflare's Code Mode. Two tools: `search_api` returns the
//! TypeScript declarations of the functions that best match a query (BM25 over each
//! function's group, name, description and parameter names; a full name such as
//! `erp.get_order` finds that function), and `run_code` runs a JavaScript program in
//! which each function is `api.<group>.<function>(args)` ([`super::code_api`]). Skills
//! stay with their own strategy (`read_skill`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::code_api::{CodeApi, CODE_ERRORS, PROGRAMS, RUN_CODE};
use crate::bm25;
use crate::catalog::Address;
use crate::scenario::ExpectedCall;
use crate::strategy::pool::MAX_QUERY;
use crate::strategy::protocol::{
    arg_str, Effect, Env, EventKind, ProtocolError, Rendered, Resolution, State, Strategy,
};
use crate::strategy::templates::{TemplateError, Templates};
use crate::wire::ToolDef;

/// The tool that searches the API.
pub const SEARCH_API: &str = "search_api";

/// A search of the API answered: an event.
pub const API_SEARCHES: EventKind = EventKind {
    name: "api_searches",
    error: false,
    doc: "searches of the API's declarations (code mode)",
};

pub struct CodeMode {
    api: Arc<CodeApi>,
    rendered: Rendered,
    /// Per function: the text BM25 ranks.
    docs: Vec<String>,
    index: bm25::Index,
    /// Declarations one search returns.
    results: usize,
    templates: Arc<Templates>,
}

/// The tool that runs programs, described with the sandbox's limits.
pub fn run_code_tool(api: &CodeApi, t: &Templates) -> Result<ToolDef, TemplateError> {
    let l = api.limits;
    Ok(ToolDef {
        name: RUN_CODE.into(),
        description: t.render(
            "run_code.j2",
            json!({
                "seconds": format!("{}", l.time.as_secs_f64()),
                "megabytes": l.memory >> 20,
                "calls": l.calls,
                "output": l.output,
            }),
        )?,
        parameters: json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The JavaScript program."}
            },
            "required": ["code"]
        }),
    })
}

/// The groups as the system prompt lists them.
pub fn group_stubs(api: &CodeApi) -> Vec<Value> {
    api.groups
        .iter()
        .map(|(name, description)| {
            json!({
                "name": name,
                "description": crate::strategy::pool::first_sentence(description),
                "functions": api.in_group(name).count(),
            })
        })
        .collect()
}

impl CodeMode {
    pub fn new(
        api: Arc<CodeApi>,
        results: usize,
        templates: &Arc<Templates>,
    ) -> Result<CodeMode, TemplateError> {
        let t: &Templates = templates;
        let section = t.render(
            "code_mode.j2",
            json!({"groups": group_stubs(&api), "search": SEARCH_API, "run": RUN_CODE}),
        )?;
        let search = ToolDef {
            name: SEARCH_API.into(),
            description: t.render("search_api.j2", json!({"results": results}))?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What the function you need does, in a few words, or its full name (group.function).",
                        "maxLength": MAX_QUERY
                    }
                },
                "required": ["query"]
            }),
        };
        t.render(
            "search_api_result.j2",
            json!({"functions": ["a"], "query": "q", "declarations": "d"}),
        )?;
        let docs: Vec<String> = api
            .functions
            .iter()
            .map(|f| {
                let mut s = format!(
                    "{} {} {}\n{}",
                    f.group.replace('_', " "),
                    f.name,
                    f.name.replace('_', " "),
                    f.description
                );
                if let Some(props) = f.schema.get("properties").and_then(Value::as_object) {
                    for k in props.keys() {
                        s.push(' ');
                        s.push_str(&k.replace(['_', '-'], " "));
                    }
                }
                s
            })
            .collect();
        let index = bm25::Index::new(&docs);
        Ok(CodeMode {
            rendered: Rendered {
                section,
                tools: vec![search, run_code_tool(&api, t)?],
            },
            api,
            docs,
            index,
            results,
            templates: templates.clone(),
        })
    }

    /// The functions one search finds (indices), best first.
    fn find(&self, query: &str) -> Vec<usize> {
        let exact = query.trim().trim_start_matches("api.");
        if let Some(i) = self
            .api
            .functions
            .iter()
            .position(|f| format!("{}.{}", f.group, f.name) == exact)
        {
            return vec![i];
        }
        let scores = self.index.scores(query);
        let mut idx: Vec<(usize, f64)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .collect();
        idx.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        idx.into_iter().take(self.results).map(|(i, _)| i).collect()
    }

    fn search(&self, args: &Value) -> Resolution {
        let query = match arg_str(args, "query", SEARCH_API) {
            Ok(q) => q,
            Err(r) => return r,
        };
        if query.chars().count() > MAX_QUERY {
            return Resolution::error(
                ProtocolError::SchemaViolation,
                format!("the query is longer than {MAX_QUERY} characters"),
            );
        }
        let found = self.find(query);
        let (declarations, ends) = self.api.declarations(&found);
        let names: Vec<String> = found
            .iter()
            .map(|&i| {
                let f = &self.api.functions[i];
                format!("{}.{}", f.group, f.name)
            })
            .collect();
        let content = match self.templates.render(
            "search_api_result.j2",
            json!({"functions": names, "query": query, "declarations": declarations}),
        ) {
            Ok(c) => c,
            Err(e) => return Resolution::error(ProtocolError::SchemaViolation, e.to_string()),
        };
        // Where each declaration ends in the answer: the declarations follow the
        // template's heading.
        let offset = content.find(declarations.as_str()).unwrap_or(0);
        let ends = if declarations.is_empty() {
            Vec::new()
        } else {
            ends.iter().map(|e| e + offset).collect()
        };
        let addresses = found
            .iter()
            .map(|&i| self.api.functions[i].address.clone())
            .collect();
        let mut r = Resolution::fetched_at(content, addresses, ends).counted(API_SEARCHES);
        if let Effect::Fetched { ranked, .. } = &mut r.effect {
            *ranked = true;
        }
        r
    }

    /// A query whose search returns function `i`: its name's words, with its group's,
    /// with its description; else its full name (always found).
    fn query_for(&self, i: usize) -> String {
        let f = &self.api.functions[i];
        let words = f.name.replace(['_', '-'], " ");
        let candidates = [
            words.clone(),
            format!("{} {words}", f.group.replace('_', " ")),
            self.docs[i].chars().take(MAX_QUERY).collect(),
        ];
        candidates
            .into_iter()
            .find(|q| self.find(q).contains(&i))
            .unwrap_or_else(|| format!("{}.{}", f.group, f.name))
    }
}

impl Strategy for CodeMode {
    fn owns(&self, address: &Address) -> bool {
        self.api.owns(address)
    }

    fn order(&self) -> u8 {
        5
    }

    fn render(&self) -> &Rendered {
        &self.rendered
    }

    fn ranks(&self) -> bool {
        true
    }

    fn events(&self) -> &'static [EventKind] {
        &[API_SEARCHES, PROGRAMS, CODE_ERRORS]
    }

    fn shown_up_front(&self) -> Vec<Address> {
        Vec::new()
    }

    fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        match tool {
            SEARCH_API => self.search(args),
            _ => match arg_str(args, "code", RUN_CODE) {
                Ok(code) => self.api.run(code, state, env),
                Err(r) => r.malformed_if(true),
            },
        }
    }

    fn route(&self, target: &ExpectedCall, args: &Value, state: &State) -> Option<(String, Value)> {
        let i = self.api.index_of(&target.address)?;
        if !state.shown.contains(&target.address) {
            return Some((SEARCH_API.into(), json!({"query": self.query_for(i)})));
        }
        Some(self.api.run_call(&target.address, args))
    }

    fn program(
        &self,
        calls: &[(Address, Value)],
        results: &[Value],
        query: &str,
    ) -> Option<String> {
        Some(self.api.program(calls, results, query))
    }
}
