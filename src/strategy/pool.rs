//! The pool of tools that tool search and retrieval hold back: the legacy tools of
//! every kind a mode marks `deferred` or `retrieved` (one tool per connector action,
//! per database operation, per MCP tool) and the built-in tools, in FIM One's registry
//! order, with what searching them needs — a BM25 index and regular-expression
//! matching over each tool's name, description and parameter names — and the
//! `tool_search` tool that searches them.

use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};

use super::mode::{matches_pattern, SearchSettings, SearchVariant};
use super::protocol::{Env, EventKind, ProtocolError, Resolution, Retrieved, State, Strategy};
use super::templates::{TemplateError, Templates};
use crate::bm25;
use crate::catalog::Address;
use crate::hash::FastMap;
use crate::scenario::ExpectedCall;
use crate::wire::ToolDef;

/// The search tool's name.
pub const TOOL_SEARCH: &str = "tool_search";
/// A search made (`tool_search` answered with what it found, or the provider's own
/// search under `native=server`): an event, not an error.
pub const SEARCHES: EventKind = EventKind {
    name: "searches",
    error: false,
    doc: "searches made (tool_search answered, or the provider's own)",
};
/// A provider-side search that cannot be read (an unknown block type, a result
/// without tool references) or that names a tool never deferred: a protocol error.
pub const NATIVE_MALFORMED: EventKind = EventKind {
    name: "native_malformed",
    error: true,
    doc: "provider-side searches that could not be read or named a tool never deferred",
};
/// The longest pattern or query a search takes (Anthropic's regex tool search takes
/// up to 200 characters).
pub const MAX_QUERY: usize = 200;
/// The compiled size a regular expression may reach (a pattern that would need more
/// is refused like one that does not compile).
const REGEX_SIZE: usize = 1 << 20;

/// The held-back tools and how to search them.
pub struct Pool {
    parts: Vec<Box<dyn Strategy>>,
    /// Every pool tool, in registry order.
    tools: Vec<ToolDef>,
    owner: FastMap<String, usize>,
    /// The address each tool executes.
    address: FastMap<String, Address>,
    /// Per tool: the text BM25 searches rank (name words, description, parameter names).
    docs: Vec<String>,
    index: bm25::Index,
    /// Per tool: the fields a regular expression is matched against, each on its own
    /// (name, description, each parameter name), so `^name$` finds one tool by name.
    fields: Vec<Vec<String>>,
    /// The tools shown from the first request, never held back.
    always_on: Vec<String>,
    settings: SearchSettings,
    search: ToolDef,
    templates: Arc<Templates>,
    /// Per tool: its words, rarest in the pool first (made at the first use).
    rare: OnceLock<Vec<Vec<String>>>,
    /// Per tool routed to by a search: the query [`Pool::query_for`] found for it
    /// (the same on every episode that routes to it; found once).
    queries: Mutex<FastMap<String, Option<String>>>,
}

impl Pool {
    /// `parts`: the legacy strategies of the held-back kinds and the built-ins.
    pub fn new(
        mut parts: Vec<Box<dyn Strategy>>,
        settings: &SearchSettings,
        templates: &Arc<Templates>,
    ) -> Result<Pool, TemplateError> {
        let t: &Templates = templates;
        parts.sort_by_key(|p| p.order());
        let mut tools = Vec::new();
        let mut owner = FastMap::default();
        let mut address = FastMap::default();
        for (i, p) in parts.iter().enumerate() {
            for tool in &p.render().tools {
                owner.insert(tool.name.clone(), i);
                if let Some(a) = p.address_of(&tool.name) {
                    address.insert(tool.name.clone(), a);
                }
                tools.push(tool.clone());
            }
        }
        let docs: Vec<String> = tools.iter().map(search_text).collect();
        let fields = tools.iter().map(search_fields).collect();
        let index = bm25::Index::new(&docs);
        let always_on: Vec<String> = tools
            .iter()
            .filter(|tool| {
                address.get(&tool.name).is_some_and(|a| {
                    let a = a.to_string();
                    settings.always_on.iter().any(|p| matches_pattern(p, &a))
                })
            })
            .map(|tool| tool.name.clone())
            .collect();
        let regex = settings.variant == SearchVariant::Regex;
        let search = ToolDef {
            name: TOOL_SEARCH.into(),
            description: t.render(
                "tool_search.j2",
                json!({
                    "variant": if regex { "regex" } else { "bm25" },
                    "deferred": tools.len() - always_on.len(),
                    "results": settings.results,
                }),
            )?,
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": if regex {
                            "A regular expression matched against tool names, descriptions and parameter names."
                        } else {
                            "What the tool you need does, in a few words."
                        },
                        "maxLength": MAX_QUERY
                    }
                },
                "required": ["query"]
            }),
        };
        t.render(
            "tool_search_result.j2",
            json!({"tools": [{"name": "a", "short": "b"}], "query": "q", "variant": "bm25"}),
        )?;
        Ok(Pool {
            parts,
            tools,
            owner,
            address,
            docs,
            index,
            fields,
            always_on,
            settings: settings.clone(),
            search,
            templates: templates.clone(),
            rare: OnceLock::new(),
            queries: Mutex::default(),
        })
    }

    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    pub fn search_tool(&self) -> &ToolDef {
        &self.search
    }

    pub fn always_on(&self) -> &[String] {
        &self.always_on
    }

    pub fn owns(&self, address: &Address) -> bool {
        self.parts.iter().any(|p| p.owns(address))
    }

    pub fn address_of(&self, tool: &str) -> Option<Address> {
        self.address.get(tool).cloned()
    }

    pub fn shown_up_front(&self) -> Vec<Address> {
        self.parts.iter().flat_map(|p| p.shown_up_front()).collect()
    }

    /// Answers a call to one of the pool's tools.
    pub fn resolve(&self, tool: &str, args: &Value, state: &mut State, env: &Env) -> Resolution {
        let i = self.owner[tool];
        self.parts[i].resolve(tool, args, state, env)
    }

    /// The held-back tools in ranked order for `query`: BM25 scores above zero, best
    /// first, ties in registry order.
    pub fn ranked(&self, query: &str) -> Vec<(usize, f64)> {
        let scores = self.index.scores(query);
        let mut idx: Vec<(usize, f64)> = scores
            .into_iter()
            .enumerate()
            .filter(|(i, s)| *s > 0.0 && !self.always_on.contains(&self.tools[*i].name))
            .collect();
        idx.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        idx
    }

    /// Retrieval: the top `k` held-back tools for the query.
    pub fn retrieve(&self, query: &str, k: usize) -> Vec<Retrieved> {
        self.ranked(query)
            .into_iter()
            .take(k)
            .enumerate()
            .filter_map(|(r, (i, score))| {
                let tool = &self.tools[i].name;
                Some(Retrieved {
                    tool: tool.clone(),
                    address: self.address.get(tool)?.clone(),
                    score: (score * 1e4).round() / 1e4,
                    rank: r + 1,
                })
            })
            .collect()
    }

    /// The tools one search finds (indices), or the reason the query is refused.
    fn find(&self, query: &str) -> Result<Vec<usize>, String> {
        if query.chars().count() > MAX_QUERY {
            return Err(format!("the query is longer than {MAX_QUERY} characters"));
        }
        match self.settings.variant {
            SearchVariant::Bm25 => Ok(self
                .ranked(query)
                .into_iter()
                .take(self.settings.results)
                .map(|(i, _)| i)
                .collect()),
            SearchVariant::Regex => {
                let re = regex::RegexBuilder::new(query)
                    .size_limit(REGEX_SIZE)
                    .build()
                    .map_err(|e| format!("the pattern does not compile: {e}"))?;
                Ok((0..self.tools.len())
                    .filter(|i| !self.always_on.contains(&self.tools[*i].name))
                    .filter(|i| self.fields[*i].iter().any(|f| re.is_match(f)))
                    .take(self.settings.results)
                    .collect())
            }
        }
    }

    /// Answers a `tool_search` call: the tools found join the visible ones.
    pub fn search(&self, args: &Value) -> Resolution {
        let Some(query) = args.get("query").and_then(Value::as_str) else {
            return Resolution::error(
                ProtocolError::SchemaViolation,
                format!("`{TOOL_SEARCH}` needs a string `query`"),
            );
        };
        let found = match self.find(query) {
            Ok(f) => f,
            Err(e) => return Resolution::error(ProtocolError::SchemaViolation, e),
        };
        let listed: Vec<Value> = found
            .iter()
            .map(|&i| json!({"name": self.tools[i].name, "short": first_sentence(&self.tools[i].description)}))
            .collect();
        // Rendered once with these values when the pool was built: it cannot fail now.
        let content = self
            .render_result(&listed, query)
            .unwrap_or_else(|e| json!({"error": e.to_string()}).to_string());
        let join: Vec<String> = found.iter().map(|&i| self.tools[i].name.clone()).collect();
        let addresses = join
            .iter()
            .filter_map(|n| self.address.get(n).cloned())
            .collect();
        Resolution {
            content,
            effect: super::protocol::Effect::Fetched {
                addresses,
                ranked: true,
                event: Some(SEARCHES.event()),
                join,
                ends: Vec::new(),
            },
        }
    }

    fn render_result(&self, tools: &[Value], query: &str) -> Result<String, TemplateError> {
        self.templates.render(
            "tool_search_result.j2",
            json!({"tools": tools, "query": query, "variant": self.variant_name()}),
        )
    }

    fn variant_name(&self) -> &'static str {
        match self.settings.variant {
            SearchVariant::Bm25 => "bm25",
            SearchVariant::Regex => "regex",
        }
    }

    /// The next call toward `target`: the tool itself once visible, else a search
    /// that surfaces it (when `searchable`).
    pub fn route(
        &self,
        target: &ExpectedCall,
        args: &Value,
        state: &State,
        searchable: bool,
    ) -> Option<(String, Value)> {
        let part = self.parts.iter().find(|p| p.owns(&target.address))?;
        let (tool, a) = part.route(target, args, state)?;
        let visible = state.active.as_ref().is_none_or(|v| v.contains(&tool));
        if visible {
            return Some((tool, a));
        }
        if !searchable {
            return None;
        }
        Some((
            TOOL_SEARCH.to_string(),
            json!({"query": self.query_for(&tool)?}),
        ))
    }

    /// Per tool, its distinct words ordered by how many pool tools hold them, then
    /// alphabetically: made once per pool, not per search.
    fn rare_words(&self) -> &Vec<Vec<String>> {
        self.rare.get_or_init(|| {
            (0..self.docs.len())
                .map(|i| {
                    let mut own: Vec<&str> = self.index.terms(i).collect();
                    own.sort_by_cached_key(|w| (self.index.df(w), *w));
                    own.into_iter().map(str::to_string).collect()
                })
                .collect()
        })
    }

    /// A query whose search returns `tool`: for regex its exact name; for BM25 the
    /// first that works of its name's words, its name and first sentence, its name
    /// with its 3, 6 or 12 rarest words in the pool, and its whole text.
    pub fn query_for(&self, tool: &str) -> Option<String> {
        if let Some(q) = self.queries.lock().expect("queries").get(tool) {
            return q.clone();
        }
        let q = self.find_query_for(tool);
        self.queries
            .lock()
            .expect("queries")
            .insert(tool.to_string(), q.clone());
        q
    }

    fn find_query_for(&self, tool: &str) -> Option<String> {
        let i = self.tools.iter().position(|t| t.name == tool)?;
        if self.settings.variant == SearchVariant::Regex {
            return Some(format!("^{}$", regex::escape(tool)));
        }
        let words = tool.replace(['_', '-', '.'], " ");
        let mut candidates = vec![
            words.clone(),
            format!("{words} {}", first_sentence(&self.tools[i].description)),
        ];
        let own = &self.rare_words()[i];
        for n in [3, 6, 12] {
            let rare: Vec<&str> = own.iter().take(n).map(|w| w.as_str()).collect();
            candidates.push(format!("{words} {}", rare.join(" ")));
        }
        candidates.push(self.docs[i].clone());
        candidates
            .into_iter()
            .find(|q| self.find(q).is_ok_and(|f| f.contains(&i)))
    }
}

/// A tool's search text: its name as words, its description, its parameter names.
fn search_text(t: &ToolDef) -> String {
    let mut s = format!(
        "{} {}\n{}",
        t.name,
        t.name.replace(['_', '-', '.'], " "),
        t.description
    );
    if let Some(props) = t.parameters.get("properties").and_then(Value::as_object) {
        for k in props.keys() {
            s.push(' ');
            s.push_str(k);
            s.push(' ');
            s.push_str(&k.replace(['_', '-'], " "));
        }
    }
    s
}

/// A tool's fields for regular expressions: name, description, parameter names.
fn search_fields(t: &ToolDef) -> Vec<String> {
    let mut v = vec![t.name.clone(), t.description.clone()];
    if let Some(props) = t.parameters.get("properties").and_then(Value::as_object) {
        v.extend(props.keys().cloned());
    }
    v
}

/// The first sentence of a description (up to the first `. `, `.\n` or line break),
/// at most 160 characters.
pub fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if c == '\n' {
            end = i;
            break;
        }
        if c == '.' {
            let next = text[i + 1..].chars().next();
            if next.is_none_or(char::is_whitespace) {
                end = i + 1;
                break;
            }
        }
    }
    let s = text[..end].trim();
    if s.chars().count() > 160 {
        let cut: String = s.chars().take(157).collect();
        format!("{}...", cut.trim_end())
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_stops_at_the_first_full_stop_or_line() {
        assert_eq!(first_sentence("Reads a file. Then more."), "Reads a file.");
        assert_eq!(
            first_sentence("Version 1.2 of it\nmore"),
            "Version 1.2 of it"
        );
        assert_eq!(first_sentence("no stop"), "no stop");
        assert!(first_sentence(&"x".repeat(300)).ends_with("..."));
    }
}
