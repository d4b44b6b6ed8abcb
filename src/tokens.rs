//! Token counting with tiktoken (DESIGN §7) and the per-outcome [`Ledger`].
//!
//! What is counted is exactly the text discbench would send: the system prompt, each
//! tool definition as its compact OpenAI function JSON ([`crate::wire::ToolDef::wire_json`]),
//! message contents, and tool-call names and argument texts. Providers add a few
//! framing tokens per message and render function definitions their own way; those
//! are not modelled, so counts are exact for the shown text and an approximation of a
//! provider's bill (see the README). Each distinct string is encoded once per counter.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

use crate::wire::{Context, Message, ToolDef};

/// The encodings discbench can count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    O200kBase,
    Cl100kBase,
}

impl Encoding {
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

/// A tokenizer name discbench does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tokenizer `{0}`: use o200k_base or cl100k_base")]
pub struct UnknownTokenizer(pub String);

impl FromStr for Encoding {
    type Err = UnknownTokenizer;
    fn from_str(s: &str) -> Result<Self, UnknownTokenizer> {
        match s {
            "o200k_base" | "o200k" => Ok(Encoding::O200kBase),
            "cl100k_base" | "cl100k" => Ok(Encoding::Cl100kBase),
            other => Err(UnknownTokenizer(other.to_string())),
        }
    }
}

/// Strings one memo generation holds before it becomes the old one: memory stays
/// bounded however many outcomes a run makes (DESIGN §12), while the strings every
/// request repeats (system prompts, tool definitions) stay in the young generation.
const MEMO_GENERATION: usize = 50_000;

/// A tokenizer with a bounded memo of the strings it has counted.
pub struct Counter {
    encoding: Encoding,
    /// The encoding's tables, built once per process (they take a good part of a
    /// mock run to build, and are the same for every counter).
    bpe: &'static CoreBPE,
    memo: Mutex<Memo>,
}

/// Two generations of counted strings: a hit in the old one is moved to the young
/// one; when the young one is full, it becomes the old one and the old one is dropped.
#[derive(Default)]
struct Memo {
    young: HashMap<String, usize>,
    old: HashMap<String, usize>,
}

impl Memo {
    fn get(&mut self, text: &str) -> Option<usize> {
        if let Some(n) = self.young.get(text) {
            return Some(*n);
        }
        let n = self.old.remove(text)?;
        self.insert(text, n);
        Some(n)
    }

    fn insert(&mut self, text: &str, n: usize) {
        if self.young.len() >= MEMO_GENERATION {
            self.old = std::mem::take(&mut self.young);
        }
        self.young.insert(text.to_string(), n);
    }

    fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

impl Counter {
    pub fn new(encoding: Encoding) -> Counter {
        let bpe = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        };
        Counter {
            encoding,
            bpe,
            memo: Mutex::new(Memo::default()),
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens in `text`, encoded as ordinary text (special-token strings count as text).
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        if let Some(n) = self.memo.lock().expect("memo lock").get(text) {
            return n;
        }
        let n = self.bpe.encode_ordinary(text).len();
        self.memo.lock().expect("memo lock").insert(text, n);
        n
    }

    /// How many strings the memo holds now (at most two generations).
    pub fn memo_len(&self) -> usize {
        self.memo.lock().expect("memo lock").len()
    }

    /// Tokens of the same text without the memo (for benches and cross-checks).
    pub fn count_uncached(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }

    pub fn tool(&self, t: &ToolDef) -> usize {
        self.count(&t.wire_json())
    }

    pub fn tools(&self, tools: &[ToolDef]) -> usize {
        tools.iter().map(|t| self.tool(t)).sum()
    }

    pub fn message(&self, m: &Message) -> usize {
        match m {
            Message::User { content } => self.count(content),
            Message::Assistant {
                content,
                tool_calls,
                searches,
            } => {
                content.as_deref().map_or(0, |c| self.count(c))
                    + tool_calls
                        .iter()
                        .map(|c| self.count(&c.name) + self.count(&c.arguments))
                        .sum::<usize>()
                    // A provider's own search, as it is sent back (its query and the
                    // names it found).
                    + searches.iter().map(|s| self.count(&s.raw)).sum::<usize>()
            }
            Message::Tool { content, .. } => self.count(content),
        }
    }

    /// Tokens of one whole request.
    pub fn context(&self, cx: &Context) -> usize {
        self.count(&cx.system)
            + self.tools(&cx.tools)
            + cx.messages.iter().map(|m| self.message(m)).sum::<usize>()
    }
}

/// Token counts of one outcome, split by layer (DESIGN §7).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// System prompt text, stubs included.
    pub system: usize,
    /// Tool definitions present from the first request.
    pub tool_defs: usize,
    /// Schemas and skill texts that entered later through meta-tools (and tool
    /// definitions loaded by `request_tools`).
    pub fetched: usize,
    /// Tool results other than fetched definitions.
    pub results: usize,
    /// Model output: text, tool names and argument texts.
    pub output: usize,
    /// The selection step's request and answer (zero when it did not run).
    pub selection: usize,
    /// The whole first request: system + tool_defs + the query.
    #[serde(alias = "first_turn")]
    pub first_request: usize,
    /// Sum over requests of everything sent (the selection request included).
    pub billed_input: usize,
    /// The largest single request.
    pub peak_context: usize,
    /// Sum over the requests of one conversation of the tokens each shares, as a
    /// prefix, with the one before it, in the order a provider caches (tools, system,
    /// messages): what a prompt cache could serve.
    #[serde(default)]
    pub cached_prefix: usize,
    /// `billed_input` with every cacheable prefix priced as a cache hit (at the
    /// model's cached-input price, else at the configured discount), in input tokens.
    #[serde(default)]
    pub billed_cached: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_is_bounded_and_counts_stay_exact() {
        let c = Counter::new(Encoding::O200kBase);
        let keep = "a system prompt every request repeats";
        let want = c.count_uncached(keep);
        for i in 0..(MEMO_GENERATION * 3) {
            c.count(&format!("result {i}"));
            if i % 1000 == 0 {
                assert_eq!(c.count(keep), want);
            }
        }
        assert!(c.memo_len() <= 2 * MEMO_GENERATION, "{}", c.memo_len());
        assert_eq!(c.count(keep), want);
        assert_eq!(c.count("result 7"), c.count_uncached("result 7"));
    }
}
