//! Stored texts: `texts.jsonl` holds each distinct long text of a run once, keyed by
//! its content hash — system prompts, tool definitions, fetched content, tool
//! results, selection requests, expectations — and outcome lines refer to them by
//! hash. The same discover answer recurs across modes, models and repeats, so a line
//! keeps only what is its own. Content addressing makes the store correct whatever
//! order episodes finish in, and lets resume and merge join stores by plain union.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::reader;
use super::Outcome;
use crate::hash::{FastMap, FastSet};
use crate::memo::Generations;

/// The file name inside a run directory.
pub const FILE: &str = "texts.jsonl";

/// Texts longer than this (in bytes) are stored by hash (format 3).
pub const SHORT: usize = 128;

/// One line of `texts.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TextLine {
    pub hash: String,
    pub text: String,
}

/// The texts of a run, loaded for readers that show them (the HTML drill-down).
#[derive(Debug, Default)]
pub struct TextStore {
    texts: FastMap<String, String>,
}

impl TextStore {
    /// Loads `texts.jsonl` from a run directory; an absent file is an empty store
    /// (runs written before it existed keep their texts inline).
    pub fn load(dir: &Path) -> anyhow::Result<TextStore> {
        let path = dir.join(FILE);
        let mut texts = FastMap::default();
        if path.is_file() {
            reader::read::<TextLine>(&path, |_, l| {
                texts.insert(l.hash, l.text);
                Ok(())
            })?;
        }
        Ok(TextStore { texts })
    }

    pub fn get(&self, hash: &str) -> Option<&str> {
        self.texts.get(hash).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Puts the texts back into an outcome (for readers that want them inline): the
    /// expectation, each turn's tool-definition list, every entry's text. What the
    /// store lacks (a file cut short) stays a reference.
    pub fn resolve(&self, o: &mut Outcome) {
        if let Some(text) = o.expected_ref.as_ref().and_then(|h| self.get(h)) {
            if let Ok(v) = serde_json::from_str(text) {
                o.expected = v;
                o.expected_ref = None;
            }
        }
        for t in &mut o.requests {
            if let Some(list) = t.tool_defs_ref.as_ref().and_then(|h| self.get(h)) {
                if let Ok(entries) = serde_json::from_str::<Vec<super::Entry>>(list) {
                    let at = t.tool_defs_at.min(t.entered.len());
                    t.entered.splice(at..at, entries);
                    t.tool_defs_ref = None;
                    t.tool_defs_at = 0;
                }
            }
            for e in &mut t.entered {
                if e.text.is_none() {
                    if let Some(text) = e.text_ref.as_ref().and_then(|h| self.get(h)) {
                        e.text = Some(text.to_string());
                        e.text_ref = None;
                    }
                }
            }
        }
    }
}

/// The appending side: writes each new text once and flushes it before the outcome
/// that refers to it is written.
pub struct TextSink {
    path: PathBuf,
    out: BufWriter<File>,
    written: FastSet<String>,
    /// The hashes of the texts put lately, by their text (each one written already):
    /// most outcomes bring the same tool lists and prompts again, and hashing each
    /// one again took a third of the writer's time.
    recent: Generations<String>,
}

/// Bytes of text one generation of [`TextSink`]'s recent texts holds.
const RECENT_BYTES: usize = 8 << 20;

/// A line of `texts.jsonl` as written, its fields borrowed.
#[derive(Serialize)]
struct TextLineRef<'a> {
    hash: &'a str,
    text: &'a str,
}

impl TextSink {
    /// Opens (or creates) `texts.jsonl` in `dir` for appending, remembering the hashes
    /// already there. A torn last line is dropped (its text is written again when an
    /// outcome needs it).
    pub fn open(dir: &Path) -> anyhow::Result<TextSink> {
        let path = dir.join(FILE);
        let mut written = FastSet::default();
        if path.is_file() {
            let stats = reader::read::<TextLine>(&path, |_, l| {
                written.insert(l.hash);
                Ok(())
            })?;
            super::tail::repair_tail(&path, &stats, None)?;
        }
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Ok(TextSink {
            path,
            out: BufWriter::new(f),
            written,
            recent: Generations::new(usize::MAX, RECENT_BYTES),
        })
    }

    /// Stores one text (once) and returns its hash.
    fn put(&mut self, text: String, wrote: &mut bool) -> anyhow::Result<String> {
        if let Some(hash) = self.recent.get(&text) {
            return Ok(hash);
        }
        let hash = crate::hash::content_hash(text.as_bytes());
        if !self.written.contains(&hash) {
            serde_json::to_writer(
                &mut self.out,
                &TextLineRef {
                    hash: &hash,
                    text: &text,
                },
            )?;
            self.out.write_all(b"\n")?;
            self.written.insert(hash.clone());
            *wrote = true;
        }
        self.recent.insert(text, hash.clone());
        Ok(hash)
    }

    /// Moves the long texts of `o` into the store and leaves references in their
    /// place (format 3): each turn's tool definitions as one list, every other entry
    /// text longer than [`SHORT`] bytes, and a long expectation. Flushes when something
    /// new was written, before the line that refers to it.
    pub fn take_texts(&mut self, o: &mut Outcome) -> anyhow::Result<()> {
        let mut wrote = false;
        if !o.expected.is_null() {
            let text = serde_json::to_string(&o.expected)?;
            if text.len() > SHORT {
                o.expected_ref = Some(self.put(text, &mut wrote)?);
                o.expected = serde_json::Value::Null;
            }
        }
        for t in &mut o.requests {
            for e in &mut t.entered {
                if e.text.as_ref().is_some_and(|x| x.len() > SHORT) {
                    let text = e.text.take().expect("checked");
                    e.text_ref = Some(self.put(text, &mut wrote)?);
                }
            }
            // The tool definitions of a turn, already by reference, as one list: the
            // lists recur across queries, models and repeats.
            let Some(at) = t
                .entered
                .iter()
                .position(|e| e.layer == super::Layer::ToolDefs)
            else {
                continue;
            };
            let end = t.entered[at..]
                .iter()
                .position(|e| e.layer != super::Layer::ToolDefs)
                .map_or(t.entered.len(), |n| at + n);
            let defs: Vec<super::Entry> = t.entered.drain(at..end).collect();
            t.tool_defs_ref = Some(self.put(serde_json::to_string(&defs)?, &mut wrote)?);
            t.tool_defs_at = at;
        }
        if wrote {
            self.out
                .flush()
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        }
        Ok(())
    }
}
