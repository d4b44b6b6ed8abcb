//! Tool names: the one way a name that is taken or too long is made unique (`_` and 8
//! hex digits of a hash, as FIM One suffixes a clashing connector), and the names each
//! provider accepts ([`NameRule`]).
//!
//! discbench renders tools under FIM One's names (up to 128 characters for MCP tools,
//! FIM-ONE-NOTES #20): that is what the mock models see and what every token count of
//! the suite is made of. Providers accept less — OpenAI and Anthropic
//! `^[a-zA-Z0-9_-]{1,64}$` — so an HTTP backend sends each request through a
//! [`NameMap`]: a name its provider refuses becomes a name it accepts, deterministically
//! (the same name always maps to the same wire name) and unambiguously (the hash of
//! the whole original name), and the calls that come back are mapped to the names the
//! strategy knows before anything is scored. Names the provider accepts are sent as
//! they are, so a catalog whose names all fit is sent byte for byte as counted.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::wire::{Context, Message, NativeTools, Response, ToolDef, ToolGroup};

/// `name`, or `name_` and 8 hex digits of `id`'s hash when `name` is taken (the name
/// shortened first if the result must fit in `cap` characters); the result is taken
/// from then on.
pub fn unique(name: String, id: &str, cap: Option<usize>, taken: &mut HashSet<String>) -> String {
    let name = if taken.contains(&name) {
        let suffix = format!("_{}", &crate::hash::content_hash(id.as_bytes())[..8]);
        let keep = cap.map_or(usize::MAX, |c| c.saturating_sub(suffix.len()));
        format!("{}{suffix}", name.chars().take(keep).collect::<String>())
    } else {
        name
    };
    taken.insert(name.clone());
    name
}

/// `s` with every character outside ASCII letters, digits, `_` and `-` replaced by
/// `_` (case kept), cut to `cap` characters.
pub fn tool_safe(s: &str, cap: usize) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(cap)
        .collect()
}

/// The tool names a provider accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameRule {
    /// Who states the rule (docs and messages say whose names are sent).
    pub provider: &'static str,
    /// Characters at most.
    pub max: usize,
    /// Characters allowed besides ASCII letters and digits.
    pub extra: &'static str,
    /// Whether the first character must be a letter or `_`.
    pub letter_first: bool,
}

/// OpenAI, Chat Completions and Responses: `a-z`, `A-Z`, `0-9`, `_` and `-`, at most 64
/// (openai-python `shared_params/function_definition.py`; the Responses API refuses
/// other names with the pattern `^[a-zA-Z0-9_-]+$`).
pub const OPENAI: NameRule = NameRule {
    provider: "openai",
    max: 64,
    extra: "_-",
    letter_first: false,
};

/// Anthropic Messages, custom tools: `^[a-zA-Z0-9_-]{1,64}$` (the tool-use docs).
pub const ANTHROPIC: NameRule = NameRule {
    provider: "anthropic",
    max: 64,
    extra: "_-",
    letter_first: false,
};

/// Gemini, function declarations: a letter or `_` first, then letters, digits, `_`,
/// `.`, `:` and `-` (google-genai 3.6.1's `FunctionDeclaration.name`), at most 64 (the
/// v1beta API description; the SDK's docstring says 128, and 64 is the safe side).
pub const GEMINI: NameRule = NameRule {
    provider: "gemini",
    max: 64,
    extra: "_.:-",
    letter_first: true,
};

/// The rule a provider's name stands for (as recordings store it).
pub fn rule_of(provider: &str) -> Option<NameRule> {
    [OPENAI, ANTHROPIC, GEMINI]
        .into_iter()
        .find(|r| r.provider == provider)
}

impl NameRule {
    /// Whether the provider takes `name` as it is.
    pub fn accepts(&self, name: &str) -> bool {
        let ok = |c: char| c.is_ascii_alphanumeric() || self.extra.contains(c);
        !name.is_empty()
            && name.chars().count() <= self.max
            && name.chars().all(ok)
            && (!self.letter_first
                || name
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_'))
    }

    /// The name sent for `name`: itself when accepted; else every character the rule
    /// refuses replaced by `_` (a leading `_` added where a letter must come first),
    /// cut to leave room for `_` and 8 hex digits of the hash of the whole original
    /// name, which are appended. Two names that differ only past the cut, or only in
    /// characters replaced, get different wire names.
    pub fn wire_name<'a>(&self, name: &'a str) -> Cow<'a, str> {
        if self.accepts(name) {
            return Cow::Borrowed(name);
        }
        let mut safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || self.extra.contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if self.letter_first
            && !safe
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        {
            safe.insert(0, '_');
        }
        let suffix = format!("_{}", &crate::hash::content_hash(name.as_bytes())[..8]);
        let keep = self.max - suffix.len();
        Cow::Owned(format!(
            "{}{suffix}",
            safe.chars().take(keep).collect::<String>()
        ))
    }
}

/// The names of one request, as discbench knows them and as they are sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameMap {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
}

impl NameMap {
    /// The map of every tool name `cx` carries under `rule`; `None` when the provider
    /// accepts every one (the request is sent as it is).
    pub fn of(cx: &Context, rule: &NameRule) -> Option<NameMap> {
        let mut names: Vec<&str> = Vec::new();
        visit(cx, &mut |n| names.push(n));
        let mut map = NameMap::default();
        for n in names {
            if let Cow::Owned(w) = rule.wire_name(n) {
                map.from_wire.insert(w.clone(), n.to_string());
                map.to_wire.insert(n.to_string(), w);
            }
        }
        (!map.to_wire.is_empty()).then_some(map)
    }

    /// The name sent for `name`.
    pub fn wire<'a>(&'a self, name: &'a str) -> &'a str {
        self.to_wire.get(name).map_or(name, String::as_str)
    }

    /// The name discbench knows for a name the provider used.
    pub fn canonical<'a>(&'a self, wire: &'a str) -> &'a str {
        self.from_wire.get(wire).map_or(wire, String::as_str)
    }

    /// `cx` with every tool name as sent.
    pub fn apply(&self, cx: &Context) -> Context {
        let w = |n: &str| self.wire(n).to_string();
        let def = |t: &ToolDef| ToolDef {
            name: w(&t.name),
            ..t.clone()
        };
        Context {
            system: cx.system.clone(),
            tools: cx.tools.iter().map(def).collect(),
            tool_choice: cx.tool_choice.as_deref().map(w),
            json_mode: cx.json_mode,
            messages: cx.messages.iter().map(|m| self.message(m)).collect(),
            allowed: cx
                .allowed
                .as_ref()
                .map(|a| a.iter().map(|n| w(n)).collect()),
            native: cx.native.as_ref().map(|n| {
                Arc::new(NativeTools {
                    search_tool: w(&n.search_tool),
                    deferred: n.deferred.iter().map(def).collect(),
                    ..(**n).clone()
                })
            }),
            groups: cx.groups.as_ref().map(|g| {
                g.iter()
                    .map(|g| ToolGroup {
                        name: g.name.clone(),
                        description: g.description.clone(),
                        tools: g.tools.iter().map(|n| w(n)).collect(),
                    })
                    .collect()
            }),
        }
    }

    /// A message with every tool name as sent.
    pub fn message(&self, m: &Message) -> Message {
        let w = |n: &str| self.wire(n).to_string();
        match m {
            Message::User { content } => Message::User {
                content: content.clone(),
            },
            Message::Assistant {
                content,
                tool_calls,
                searches,
                echo,
            } => Message::Assistant {
                // The provider's own parts carry the names it was sent.
                echo: echo.clone(),
                content: content.clone(),
                tool_calls: tool_calls
                    .iter()
                    .map(|c| crate::wire::ToolCall {
                        name: w(&c.name),
                        ..c.clone()
                    })
                    .collect(),
                searches: searches
                    .iter()
                    .map(|s| crate::wire::NativeSearch {
                        found: s.found.iter().map(|n| w(n)).collect(),
                        ..s.clone()
                    })
                    .collect(),
            },
            Message::Tool {
                tool_call_id,
                name,
                content,
                references,
            } => Message::Tool {
                tool_call_id: tool_call_id.clone(),
                name: w(name),
                content: content.clone(),
                references: references.iter().map(|n| w(n)).collect(),
            },
        }
    }

    /// An answer to a request sent under this map, with the names discbench knows.
    pub fn restore(&self, r: &mut Response) {
        for c in &mut r.calls {
            if let Some(n) = self.from_wire.get(&c.name) {
                c.name = n.clone();
            }
        }
        for s in &mut r.searches {
            for n in &mut s.found {
                if let Some(c) = self.from_wire.get(n.as_str()) {
                    *n = c.clone();
                }
            }
        }
    }
}

/// Every tool name a context carries, once or more.
fn visit<'a>(cx: &'a Context, f: &mut dyn FnMut(&'a str)) {
    for t in cx.tools.iter() {
        f(&t.name);
    }
    if let Some(c) = &cx.tool_choice {
        f(c);
    }
    for m in &cx.messages {
        match m {
            Message::User { .. } => {}
            Message::Assistant {
                tool_calls,
                searches,
                ..
            } => {
                for c in tool_calls {
                    f(&c.name);
                }
                for s in searches {
                    for n in &s.found {
                        f(n);
                    }
                }
            }
            Message::Tool {
                name, references, ..
            } => {
                f(name);
                for n in references {
                    f(n);
                }
            }
        }
    }
    for n in cx.allowed.iter().flatten() {
        f(n);
    }
    if let Some(n) = &cx.native {
        f(&n.search_tool);
        for t in n.deferred.iter() {
            f(&t.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_names_are_sent_as_they_are() {
        assert!(OPENAI.accepts("git__git_log"));
        assert_eq!(OPENAI.wire_name("git__git_log"), "git__git_log");
        assert!(!OPENAI.accepts(&"a".repeat(65)));
        assert!(!OPENAI.accepts("math.factorial"));
        assert!(!OPENAI.accepts(""));
    }

    #[test]
    fn gemini_takes_dots_and_colons_but_wants_a_letter_first() {
        assert!(GEMINI.accepts("math.factorial"));
        assert!(GEMINI.accepts("git:log-all"));
        assert!(GEMINI.accepts("_private"));
        assert!(!GEMINI.accepts("1password__get"));
        assert!(!GEMINI.accepts("a b"));
        assert!(!GEMINI.accepts(&"x".repeat(65)));
        assert!(!OPENAI.accepts("math.factorial"));
        let w = GEMINI.wire_name("1password__get");
        assert!(GEMINI.accepts(&w), "{w}");
        assert!(w.starts_with("_1password__get_"), "{w}");
        assert_eq!(rule_of("gemini"), Some(GEMINI));
    }

    #[test]
    fn refused_names_are_shortened_deterministically_and_unambiguously() {
        let long = format!("{}__{}", "server".repeat(10), "tool".repeat(10));
        let a = OPENAI.wire_name(&long).into_owned();
        assert_eq!(a.chars().count(), 64);
        assert!(OPENAI.accepts(&a), "{a}");
        assert_eq!(
            OPENAI.wire_name(&long),
            a,
            "the same name, the same wire name"
        );
        // Two names equal up to the cut differ on the wire.
        let other = format!("{long}_x");
        assert_ne!(OPENAI.wire_name(&other), a);
        // Characters refused are replaced, and the hash keeps `a.b` apart from `a_b`.
        let dotted = OPENAI.wire_name("math.factorial").into_owned();
        assert!(dotted.starts_with("math_factorial_") && OPENAI.accepts(&dotted));
        assert_ne!(dotted, OPENAI.wire_name("math_factorial"));
        let gemini_like = NameRule {
            provider: "test",
            max: 64,
            extra: "_-.:",
            letter_first: true,
        };
        let w = gemini_like.wire_name("1st-tool");
        assert!(
            w.starts_with("_1st-tool_") && gemini_like.accepts(&w),
            "{w}"
        );
    }

    #[test]
    fn a_context_is_mapped_both_ways() {
        let long = "m".repeat(100);
        let cx = Context {
            system: "s".into(),
            tools: vec![
                ToolDef {
                    name: long.clone(),
                    description: "d".into(),
                    parameters: serde_json::json!({"type": "object"}),
                },
                ToolDef {
                    name: "short".into(),
                    description: "d".into(),
                    parameters: serde_json::json!({"type": "object"}),
                },
            ]
            .into(),
            messages: vec![
                Message::User {
                    content: "q".into(),
                },
                Message::assistant(
                    None,
                    vec![crate::wire::ToolCall::new(
                        "c1",
                        long.clone(),
                        &serde_json::json!({}),
                    )],
                ),
                Message::Tool {
                    tool_call_id: "c1".into(),
                    name: long.clone(),
                    content: "ok".into(),
                    references: Vec::new(),
                },
            ],
            allowed: Some(vec![long.clone(), "short".into()]),
            ..Context::default()
        };
        assert!(NameMap::of(
            &Context {
                tools: cx.tools[1..].to_vec().into(),
                messages: Vec::new(),
                allowed: None,
                ..cx.clone()
            },
            &OPENAI
        )
        .is_none());
        let map = NameMap::of(&cx, &OPENAI).expect("one name is refused");
        let sent = map.apply(&cx);
        let wire = OPENAI.wire_name(&long).into_owned();
        assert_eq!(sent.tools[0].name, wire);
        assert_eq!(sent.tools[1].name, "short");
        let Message::Assistant { tool_calls, .. } = &sent.messages[1] else {
            panic!()
        };
        assert_eq!(tool_calls[0].name, wire);
        let Message::Tool { name, .. } = &sent.messages[2] else {
            panic!()
        };
        assert_eq!(name, &wire);
        assert_eq!(
            sent.allowed.as_deref(),
            Some(&[wire.clone(), "short".into()][..])
        );
        let mut answer = Response {
            text: None,
            calls: vec![crate::wire::ToolCall::new(
                "c2",
                wire.clone(),
                &serde_json::json!({}),
            )],
            searches: Vec::new(),
            echo: None,
        };
        map.restore(&mut answer);
        assert_eq!(answer.calls[0].name, long);
    }
}
