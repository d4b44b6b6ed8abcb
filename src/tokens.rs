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

use crate::memo::Generations;
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
///
/// The encoding's tables are built once per process, at the first count of any
/// counter (they take a good part of a mock run to build, and are the same for every
/// counter); [`Counter::warm`] builds them ahead, on a thread of the caller's.
pub struct Counter {
    encoding: Encoding,
    memo: Mutex<Generations<usize>>,
}

/// o200k_base's pre-tokenizer without its look-ahead, and its token table.
///
/// tiktoken splits a text with a regular expression whose one look-ahead,
/// `\s+(?!\S)`, forces tiktoken-rs onto a backtracking engine that took two thirds of
/// the counting time (8% of the suite's). The same split is found without it: the
/// expression ends `\s*[\r\n]+|\s+(?!\S)|\s+`, so a match made of whitespace alone
/// that holds no line break comes from the last two alternatives, and `\s+(?!\S)`
/// takes the whole run at the end of the text, else all of it but its last character
/// when that leaves one, else the run is one character and `\s+` takes it. The
/// expression without the look-ahead is searched by a finite automaton
/// (leftmost-first, as a backtracking engine prefers its alternatives), and the match
/// cut back by those rules; each piece is then one token when the table has it, else
/// split by tiktoken-rs's own byte-pair merge. `the_split_is_tiktokens` checks the
/// counts against tiktoken-rs's on generated texts and on every built-in scenario,
/// catalog, template and page of the docs.
pub struct Split {
    re: regex_automata::meta::Regex,
    ranks: rustc_hash::FxHashMap<Vec<u8>, tiktoken_rs::Rank>,
}

/// o200k_base's expression with `\s+(?!\S)|\s+` as `\s+` (see [`Split`]).
const O200K_SPLIT: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+",
);

thread_local! {
    /// The automaton's scratch space, one per thread (a shared pool made the second
    /// thread wait on a lock at every search).
    static SPLIT_CACHE: std::cell::RefCell<Option<regex_automata::meta::Cache>> =
        const { std::cell::RefCell::new(None) };
}

/// o200k_base's ordinary tokens, ranks 0 to 199,997 in order, each as its length in
/// one byte and then its bytes: tiktoken's own table (`o200k_base.tiktoken`, MIT, as
/// tiktoken-rs bundles it) without the base64 and the rank written out. tiktoken-rs
/// builds its table by decoding that text and then a second table for decoding;
/// reading the tokens back from it took about a tenth of a suite run's CPU time. Read
/// from these bytes, the table is built in a few milliseconds.
/// `the_bundled_table_is_tiktokens` holds it equal to tiktoken-rs's at every rank.
static O200K_RANKS: &[u8] = include_bytes!("../assets/tokenizer/o200k_base.ranks");

/// The token table of [`O200K_RANKS`], in the map type tiktoken-rs's byte-pair split
/// takes.
fn o200k_ranks() -> rustc_hash::FxHashMap<Vec<u8>, tiktoken_rs::Rank> {
    let mut ranks = rustc_hash::FxHashMap::with_capacity_and_hasher(200_000, Default::default());
    let mut at = 0;
    let mut rank: tiktoken_rs::Rank = 0;
    while let Some(&len) = O200K_RANKS.get(at) {
        let token = &O200K_RANKS[at + 1..at + 1 + usize::from(len)];
        ranks.insert(token.to_vec(), rank);
        at += 1 + usize::from(len);
        rank += 1;
    }
    ranks
}

impl Split {
    fn o200k() -> Split {
        Split {
            re: regex_automata::meta::Regex::new(O200K_SPLIT).expect("o200k_base's split"),
            ranks: o200k_ranks(),
        }
    }

    /// The pieces of `text` as tiktoken splits it.
    fn pieces<'t>(&self, text: &'t str, mut each: impl FnMut(&'t str)) {
        SPLIT_CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let cache = c.get_or_insert_with(|| self.re.create_cache());
            let mut at = 0;
            while at < text.len() {
                // Every character starts a match of the expression, so each search
                // is anchored where the last match ended (one forward scan, no
                // reverse one to find the start); tiktoken would skip a character
                // that started none, and so would the unanchored search after.
                let input = regex_automata::Input::new(text).span(at..text.len());
                let anchored = input.clone().anchored(regex_automata::Anchored::Yes);
                let Some(m) = self
                    .re
                    .search_with(cache, &anchored)
                    .or_else(|| self.re.search_with(cache, &input))
                else {
                    break;
                };
                let mut end = m.end();
                let piece = &text[m.start()..end];
                if end < text.len()
                    && !piece.contains(['\r', '\n'])
                    && piece.chars().all(char::is_whitespace)
                {
                    if let Some((last, _)) = piece.char_indices().last().filter(|(i, _)| *i > 0) {
                        end = m.start() + last;
                    }
                }
                each(&text[m.start()..end]);
                at = end;
            }
        });
    }

    /// Tokens of `text`, as tiktoken-rs's `encode_ordinary` would give them.
    fn count(&self, text: &str) -> usize {
        let mut n = 0;
        self.pieces(text, |p| {
            let b = p.as_bytes();
            n += if b.len() == 1 || self.ranks.contains_key(b) {
                1
            } else {
                tiktoken_rs::byte_pair_split(b, &self.ranks).len()
            };
        });
        n
    }
}

static O200K_SPLIT_TABLE: std::sync::OnceLock<Split> = std::sync::OnceLock::new();

/// The hasher of a text's pieces: a fast one (our own texts, not an adversary's).
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

impl Counter {
    pub fn new(encoding: Encoding) -> Counter {
        Counter {
            encoding,
            memo: Mutex::new(Generations::new(MEMO_GENERATION, usize::MAX)),
        }
    }

    /// Builds the tables of `encoding` now, so that a counter's first count does not
    /// wait for them (run on a thread of its own while other set-up goes on; a count
    /// meanwhile waits for this build, it does not start another).
    pub fn warm(encoding: Encoding) {
        let c = Counter::new(encoding);
        if c.split().is_none() {
            c.bpe();
        }
    }

    /// The encoding's tables.
    fn bpe(&self) -> &'static CoreBPE {
        match self.encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }

    /// o200k_base's own split (see [`Split`]); cl100k_base is counted by tiktoken-rs.
    fn split(&self) -> Option<&'static Split> {
        (self.encoding == Encoding::O200kBase).then(|| O200K_SPLIT_TABLE.get_or_init(Split::o200k))
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
            let n = self.encode_len(text);
            self.memo
                .lock()
                .expect("memo lock")
                .insert(text.to_string(), n);
            return n;
        }
        // Each piece from the memo, or encoded (outside the lock) and remembered.
        // A piece may come back within one text (a boilerplate line that ends many
        // tool descriptions of one server): it is encoded once.
        let mut total = 0;
        let mut missing: Vec<(&str, usize)> = Vec::new();
        let mut at: HashMap<&str, usize, Hasher> = HashMap::default();
        {
            let mut memo = self.memo.lock().expect("memo lock");
            for piece in segments(text) {
                if let Some(n) = memo.get(piece) {
                    total += n;
                } else if let Some(&i) = at.get(piece) {
                    missing[i].1 += 1;
                } else {
                    at.insert(piece, missing.len());
                    missing.push((piece, 1));
                }
            }
        }
        if missing.is_empty() {
            return total;
        }
        let counted: Vec<usize> = missing.iter().map(|(p, _)| self.encode_len(p)).collect();
        let mut memo = self.memo.lock().expect("memo lock");
        for ((p, times), n) in missing.iter().zip(&counted) {
            memo.insert(p.to_string(), *n);
            total += n * times;
        }
        total
    }

    /// Tokens of `text`, encoded now.
    fn encode_len(&self, text: &str) -> usize {
        match self.split() {
            Some(s) => s.count(text),
            None => self.bpe().encode_ordinary(text).len(),
        }
    }

    /// How many strings the memo holds now (at most two generations).
    pub fn memo_len(&self) -> usize {
        self.memo.lock().expect("memo lock").len()
    }

    /// Tokens of the same text without the memo (for benches and cross-checks).
    pub fn count_uncached(&self, text: &str) -> usize {
        self.bpe().encode_ordinary(text).len()
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

    /// Every text file under `dir` (scenarios, catalogs, templates, docs).
    fn text_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                text_files(&p, out);
            } else if p
                .extension()
                .is_some_and(|x| ["yaml", "json", "md", "j2", "txt"].contains(&x.to_str().unwrap()))
            {
                out.push(p);
            }
        }
    }

    #[test]
    fn the_split_is_tiktokens() {
        let c = Counter::new(Encoding::O200kBase);
        let split = c.split().expect("o200k_base counts with its own split");
        // Whitespace of every kind before, between and after words, at the end of
        // the text or not; upper-case runs, title case, contractions in both cases,
        // marks, digits, CJK and emoji, unpaired punctuation.
        const MORE: &[&str] = &[
            " ", "  ", "   ", "\t", "\u{a0}", "\u{2028}", "\u{3000}", "\r\n", " \n ", "ABC", "Abc",
            "aBC", "'S", "'LL", "'re", "'Ve", "don't", "\u{1c5}", "\u{2b0}", "\u{301}", "\u{903}",
            "9", "12345", "½", "٣", "漢字", "🙂", "👍🏽", "!", "...", "--", "//", "\\", "\u{200b}",
            "é", "Ω", "ß", "ﬁ", "\u{feff}", "\u{0}",
        ];
        let mut x: u64 = 7;
        for len in [1usize, 2, 3, 5, 8, 40, 200] {
            for _ in 0..400 {
                let mut t = String::new();
                for _ in 0..len {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    t.push_str(MORE[(x >> 33) as usize % MORE.len()]);
                }
                assert_eq!(split.count(&t), c.count_uncached(&t), "{t:?}");
            }
        }
        for seed in 0..400 {
            let t = delicate_text(seed, 40 + (seed as usize % 7) * 60);
            assert_eq!(split.count(&t), c.count_uncached(&t), "{t:?}");
        }
        // Every built-in scenario, catalog, template and page of the docs, whole.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        for d in ["scenarios", "fixtures/catalogs", "templates", "docs/src"] {
            text_files(&root.join(d), &mut files);
        }
        assert!(files.len() > 50, "{}", files.len());
        for f in files {
            let t = std::fs::read_to_string(&f).unwrap();
            assert_eq!(split.count(&t), c.count_uncached(&t), "{}", f.display());
        }
    }

    /// The bundled table as tiktoken-rs's own table gives it: every ordinary rank's
    /// bytes, in rank order (the special tokens skipped).
    fn o200k_table_from_tiktoken() -> Vec<u8> {
        let bpe = tiktoken_rs::o200k_base_singleton();
        let specials = bpe.special_tokens();
        let mut table = Vec::new();
        let mut ordinary = 0;
        for r in 0..200_100 {
            let Ok(bytes) = bpe.decode_bytes(&[r]) else {
                continue;
            };
            if std::str::from_utf8(&bytes).is_ok_and(|s| specials.contains(s)) {
                continue;
            }
            // Ranks run on without a gap, so a token's place is its rank.
            assert_eq!(r, ordinary, "a gap among the ordinary ranks");
            ordinary += 1;
            table.push(u8::try_from(bytes.len()).expect("a token of at most 255 bytes"));
            table.extend_from_slice(&bytes);
        }
        table
    }

    /// `assets/tokenizer/o200k_base.ranks` is tiktoken-rs's table, byte for byte.
    /// With `DISCBENCH_WRITE_TABLES=1` the test writes it afresh (after a tiktoken-rs
    /// upgrade that changes it) and then fails, so that the change is looked at.
    #[test]
    fn the_bundled_table_is_tiktokens() {
        let expected = o200k_table_from_tiktoken();
        if std::env::var_os("DISCBENCH_WRITE_TABLES").is_some() {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/assets/tokenizer/o200k_base.ranks"
            );
            std::fs::write(path, &expected).unwrap();
            panic!("wrote {path}: run again without DISCBENCH_WRITE_TABLES");
        }
        assert!(
            O200K_RANKS == expected.as_slice(),
            "the bundled o200k_base table differs from tiktoken-rs's: \
             run this test with DISCBENCH_WRITE_TABLES=1"
        );
        let ranks = o200k_ranks();
        assert_eq!(ranks.len(), 199_998);
        assert_eq!(ranks.get(b"!".as_slice()), Some(&0));
        // The same bytes map to the same ranks as in tiktoken-rs's encoder.
        let bpe = tiktoken_rs::o200k_base_singleton();
        for word in ["hello", " world", "\n\n", "漢字", " discbench"] {
            for t in bpe.encode_ordinary(word) {
                let bytes = bpe.decode_bytes(&[t]).unwrap();
                assert_eq!(ranks.get(&bytes), Some(&t), "{word:?}");
            }
        }
    }

    #[test]
    fn a_piece_repeated_within_a_text_is_counted_each_time() {
        let c = Counter::new(Encoding::O200kBase);
        // Every description ends with the same line, a piece of its own each time.
        let text: String = (0..30)
            .map(|i| format!("tool_{i}: does thing {i}.\nWhen in doubt, ask the user first.\n"))
            .collect();
        assert!(segments(&text).filter(|p| p.starts_with("When")).count() == 30);
        assert_eq!(c.count(&text), c.count_uncached(&text));
        // 30 distinct first lines and the repeated one: the memo holds each once.
        assert_eq!(c.memo_len(), 31);
        assert_eq!(c.count(&text), c.count_uncached(&text));
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
