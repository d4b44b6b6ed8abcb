//! The appending side of a run directory: each outcome is one line, its shared texts
//! go to `texts.jsonl` first, and both files are flushed after every outcome, so an
//! interrupted run loses nothing that had finished.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::texts::TextSink;
use super::{Outcome, FORMAT_VERSION};

/// The outcome file inside a run directory.
pub const OUTCOMES: &str = "outcomes.jsonl";
/// Where resume keeps the torn tails it set aside (appended, never deleted).
pub const TORN: &str = "outcomes.torn";
/// Where `--resume --rerun-infra` keeps the infra-error outcomes it runs again.
pub const INFRA: &str = "outcomes.infra";

/// Moves every outcome line with an infra error from `outcomes.jsonl` to the end of
/// `outcomes.infra`, keeping the others in order (the file is rewritten through a
/// temporary file and a rename). Returns the keys moved.
pub fn set_aside_infra_errors(dir: &Path) -> anyhow::Result<Vec<super::OutcomeKey>> {
    let path = dir.join(OUTCOMES);
    let mut keep = Vec::new();
    let mut moved = Vec::new();
    let mut aside = Vec::new();
    super::reader::read::<serde_json::Value>(&path, |_, v| {
        let text = serde_json::to_string(&v)?;
        if v.get("infra_error").is_some_and(|e| !e.is_null()) {
            let k: super::KeyView = serde_json::from_value(v)?;
            moved.push(k.key());
            aside.push(text);
        } else {
            keep.push(text);
        }
        Ok(())
    })?;
    if moved.is_empty() {
        return Ok(moved);
    }
    let mut side = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(INFRA))?;
    for l in &aside {
        side.write_all(l.as_bytes())?;
        side.write_all(b"\n")?;
    }
    side.sync_all()?;
    let tmp = dir.join("outcomes.jsonl.partial");
    {
        let mut w = BufWriter::new(File::create(&tmp)?);
        for l in &keep {
            w.write_all(l.as_bytes())?;
            w.write_all(b"\n")?;
        }
        w.flush()?;
    }
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(moved)
}

/// Appends outcomes (and their shared texts) to a run directory.
pub struct OutcomeWriter {
    path: PathBuf,
    out: BufWriter<File>,
    texts: TextSink,
    written: usize,
}

impl OutcomeWriter {
    /// Opens the run directory's files for appending. The caller has repaired the
    /// outcome file's tail ([`super::tail::repair_tail`]) when it resumes a run.
    pub fn open(dir: &Path) -> anyhow::Result<OutcomeWriter> {
        let path = dir.join(OUTCOMES);
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Ok(OutcomeWriter {
            texts: TextSink::open(dir)?,
            path,
            out: BufWriter::new(f),
            written: 0,
        })
    }

    /// Writes one outcome as one line and flushes it.
    pub fn append(&mut self, mut o: Outcome) -> anyhow::Result<()> {
        o.format = FORMAT_VERSION;
        self.texts.take_texts(&mut o)?;
        serde_json::to_writer(&mut self.out, &o)?;
        self.out.write_all(b"\n")?;
        self.out
            .flush()
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.written += 1;
        Ok(())
    }

    pub fn written(&self) -> usize {
        self.written
    }
}
