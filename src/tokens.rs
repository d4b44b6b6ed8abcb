//! Token counting with tiktoken (DESIGN §7) and the per-outcome [`Ledger`].
//!
//! What is counted is exactly the text discbench would send: the system prompt, each
//! tool definition as its compact OpenAI function JSON ([`crate::wire::ToolDef::wire_json`]),
//! message contents, and tool-call names and argument texts. Providers add a few
//! framing tokens per message and render function definitions their own way; those
//! are not modelled, so counts are exact for the shown text and an approximation of a
//! provider's bill (see the README). Each distinct string is encoded once per counter,
//! and a long text line by line where that is exact ([`segments`]): a request that
//! differs from another in one line (a selection request's query inside the whole
//! catalog, a grown history) costs the encoding of that line alone.

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
    young: HashMap<String, usize, Hasher>,
    old: HashMap<String, usize, Hasher>,
}

/// The memo's hasher: a fast one (its keys are our own texts, not an adversary's).
type Hasher = foldhash::fast::FixedState;

/// Texts shorter than this are counted whole; longer ones piece by piece.
const SEGMENTED_FROM: usize = 256;

/// Whether a text can be cut before byte `i` (see [`segments`]).
///
/// - `\n` then an ASCII letter or digit: the alternatives that take a line feed
///   (`\s*[\r\n]+`, punctuation followed by `[\r\n/]*`, whitespace) take no letter
///   or digit after it, and those that start with an optional non-letter before
///   letters exclude line feeds from it.
/// - a letter (the `n` of an escaped `\n`) then ASCII punctuation other than `'`:
///   letters continue only with letters, marks or a contraction (`'s`, `'t`, ...),
///   and punctuation never joins a run of letters but as the first character of a
///   match.
fn cuts(b: &[u8], i: usize) -> bool {
    (b[i - 1] == b'\n' && b[i].is_ascii_alphanumeric())
        || (i >= 2
            && b[i - 2] == b'\\'
            && b[i - 1] == b'n'
            && b[i].is_ascii_punctuation()
            && b[i] != b'\'')
}

/// The pieces of `text` whose token counts add up to the count of the whole, for
/// both encodings discbench counts with. tiktoken splits a text with a regular
/// expression and encodes each match on its own; the expressions (o200k_base,
/// cl100k_base) look ahead but never behind, so where no match can span a cut, the
/// text after it is split as it would be on its own, and so is the text before it.
/// Two kinds of cut, each where no alternative of either expression can match across
/// (see [`cuts`]): after a line feed followed by an ASCII letter or digit (a line
/// of a prompt), and after the escaped line feed `\n` of a JSON string followed by
/// ASCII punctuation (a line of a list inside a tool definition's description).
/// `segments_add_up_to_the_whole` checks both on generated texts.
pub fn segments(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    // Cuts follow a line feed or an `n` after a backslash: only those two bytes are
    // looked at, found with memchr.
    let mut at = memchr::memchr2_iter(b'\n', b'\\', b);
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= b.len() {
            return None;
        }
        for p in at.by_ref() {
            // The byte after a line feed, or the byte after the `n` of `\n`.
            let i = if b[p] == b'\n' { p + 1 } else { p + 2 };
            if i > start && i < b.len() && cuts(b, i) {
                let piece = &text[start..i];
                start = i;
                return Some(piece);
            }
        }
        let piece = &text[start..];
        start = b.len();
        Some(piece)
    })
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
        if text.len() < SEGMENTED_FROM {
            if let Some(n) = self.memo.lock().expect("memo lock").get(text) {
                return n;
            }
            let n = self.bpe.encode_ordinary(text).len();
            self.memo.lock().expect("memo lock").insert(text, n);
            return n;
        }
        // Each piece from the memo, or encoded (outside the lock) and remembered.
        let mut total = 0;
        let mut missing = Vec::new();
        {
            let mut memo = self.memo.lock().expect("memo lock");
            for piece in segments(text) {
                match memo.get(piece) {
                    Some(n) => total += n,
                    None => missing.push(piece),
                }
            }
        }
        if missing.is_empty() {
            return total;
        }
        let counted: Vec<usize> = missing
            .iter()
            .map(|p| self.bpe.encode_ordinary(p).len())
            .collect();
        let mut memo = self.memo.lock().expect("memo lock");
        for (p, n) in missing.iter().zip(&counted) {
            memo.insert(p, *n);
            total += n;
        }
        total
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
                ..
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

    /// Texts made of the characters where tiktoken's splitting is delicate: line
    /// feeds and carriage returns, spaces and tabs, letters of both cases, digits,
    /// punctuation, apostrophes (contractions), `/` (taken after punctuation), a
    /// non-ASCII letter and a combining mark.
    fn delicate_text(seed: u64, len: usize) -> String {
        const ALPHABET: &[&str] = &[
            "\n", "\n", "\n", "\r", " ", " ", "\t", "a", "Z", "q", "7", "42", "1234", ":", "-",
            "{", "\"", "'s", "'", "/", ".", "é", "\u{301}", "漢", "Ab", "the", "\n\n", "\\n",
            "\\n- ", "\\", "n", "\\n'", "\\n\\n",
        ];
        let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let mut s = String::new();
        for _ in 0..len {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s.push_str(ALPHABET[(x >> 33) as usize % ALPHABET.len()]);
        }
        s
    }

    #[test]
    fn segments_add_up_to_the_whole() {
        for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let c = Counter::new(enc);
            for seed in 0..400 {
                let text = delicate_text(seed, 40 + (seed as usize % 7) * 60);
                let pieces: Vec<&str> = segments(&text).collect();
                assert_eq!(pieces.concat(), text);
                let sum: usize = pieces.iter().map(|p| c.count_uncached(p)).sum();
                assert_eq!(sum, c.count_uncached(&text), "{enc:?} {text:?}");
                assert_eq!(c.count(&text), c.count_uncached(&text));
            }
        }
        // A cut is made only before an ASCII letter or digit after a line feed.
        let cut: Vec<&str> = segments("a:\nb\n c\n\nd\n-e\n9").collect();
        assert_eq!(cut, ["a:\n", "b\n c\n\n", "d\n-e\n", "9"]);
        // ... and after an escaped line feed before punctuation other than `'`.
        let cut: Vec<&str> = segments(r"x:\n- a\nb\n'c\n\n- d").collect();
        assert_eq!(cut, [r"x:\n", r"- a\nb\n'c\n", r"\n", r"- d"]);
    }

    #[test]
    fn a_text_that_differs_in_one_line_is_counted_exactly() {
        let c = Counter::new(Encoding::O200kBase);
        let lines: String = (0..200)
            .map(|i| format!("tool_{i}: does thing number {i} for you.\n"))
            .collect();
        for q in ["find the weather", "book a flight tomorrow", "x"] {
            let text = format!("Request: {q}\n\nTools:\n{lines}Reply with JSON.");
            assert_eq!(c.count(&text), c.count_uncached(&text));
        }
    }
}
