//! Shared texts: `texts.jsonl` holds each distinct system prompt and tool definition
//! of a run once, keyed by its content hash; outcome entries refer to them by
//! `text_ref`. Content addressing makes the store correct whatever order episodes
//! finish in, and lets resume and merge join stores by plain union.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use super::reader;
use super::Outcome;

/// The file name inside a run directory.
pub const FILE: &str = "texts.jsonl";

/// One line of `texts.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TextLine {
    pub hash: String,
    pub text: String,
}

/// The texts of a run, loaded for readers that show them (the HTML drill-down).
#[derive(Debug, Default)]
pub struct TextStore {
    texts: HashMap<String, String>,
}

impl TextStore {
    /// Loads `texts.jsonl` from a run directory; an absent file is an empty store
    /// (runs written before it existed keep their texts inline).
    pub fn load(dir: &Path) -> anyhow::Result<TextStore> {
        let path = dir.join(FILE);
        let mut texts = HashMap::new();
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

    /// Puts the texts back into an outcome's entries (for readers that want them inline).
    pub fn resolve(&self, o: &mut Outcome) {
        for t in &mut o.turns {
            for e in &mut t.entered {
                if e.text.is_none() {
                    if let Some(h) = &e.text_ref {
                        e.text = self.get(h).map(str::to_string);
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
    written: HashSet<String>,
}

impl TextSink {
    /// Opens (or creates) `texts.jsonl` in `dir` for appending, remembering the hashes
    /// already there. A torn last line is dropped (its text is written again when an
    /// outcome needs it).
    pub fn open(dir: &Path) -> anyhow::Result<TextSink> {
        let path = dir.join(FILE);
        let mut written = HashSet::new();
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
        })
    }

    /// Moves every shared text of `o` into the store and leaves a `text_ref` in its
    /// place. Flushes when something new was written.
    pub fn take_shared(&mut self, o: &mut Outcome) -> anyhow::Result<()> {
        let mut wrote = false;
        for t in &mut o.turns {
            for e in &mut t.entered {
                if !e.layer.is_shared() {
                    continue;
                }
                let Some(text) = e.text.take() else { continue };
                let hash = crate::hash::content_hash(text.as_bytes());
                if !self.written.contains(&hash) {
                    serde_json::to_writer(
                        &mut self.out,
                        &TextLine {
                            hash: hash.clone(),
                            text,
                        },
                    )?;
                    self.out.write_all(b"\n")?;
                    self.written.insert(hash.clone());
                    wrote = true;
                }
                e.text_ref = Some(hash);
            }
        }
        if wrote {
            self.out
                .flush()
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        }
        Ok(())
    }
}
