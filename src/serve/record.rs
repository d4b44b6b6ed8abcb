//! [`Recorder`]: appends the outcomes of served sessions to a run directory in the
//! usual format (`outcomes.jsonl`, `texts.jsonl`), so that `report`, `compare` and the
//! gate read them like a run's. Several `serve` processes may record into one
//! directory at once (a desktop client starts one server per conversation): each
//! append holds an exclusive lock on the directory's `outcomes.lock`, and a session's
//! `repeat` is the number of outcomes the directory already holds for its scenario,
//! query, mode and model, so that no two outcomes share a key.
//!
//! A session tied to no query has no expectation to be scored against: it is
//! appended to `sessions.jsonl` instead, as an [`UnscoredSession`] — its ledger,
//! calls, protocol counters and turns, no score — so that what a client's use of a
//! disclosure costs is measured before anyone writes an expectation for it.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::record::writer::{OutcomeWriter, OUTCOMES};
use crate::record::{reader, KeyView, Outcome, RequestRecord};
use crate::score::{CallRecord, Protocol};
use crate::tokens::Ledger;

/// The lock file inside a run directory that `serve --record` appends to.
pub const LOCK: &str = "outcomes.lock";
/// Where sessions tied to no query are appended, one line each.
pub const SESSIONS: &str = "sessions.jsonl";

/// A served session tied to no query: what it disclosed and what it called, with the
/// same ledger an outcome has, and no score.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnscoredSession {
    /// The outcome format its parts follow.
    pub format: u32,
    pub run_id: String,
    pub scenario: String,
    pub mode: String,
    pub mode_spec: String,
    /// `--model`, else `client:<clientInfo.name>`.
    pub model: String,
    /// The client's name and version, as it gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// This session's index among the directory's unscored sessions of the same
    /// scenario, mode and model (0, 1, …).
    pub session: usize,
    pub tokenizer: String,
    pub catalog_size: usize,
    pub calls: Vec<CallRecord>,
    pub protocol: Protocol,
    pub tokens: Ledger,
    /// Each request: what entered the context (tokens per entry; the texts are not
    /// kept).
    #[serde(alias = "turns")]
    pub requests: Vec<RequestRecord>,
}

/// Appends served sessions' outcomes to one run directory.
#[derive(Debug)]
pub struct Recorder {
    dir: PathBuf,
    /// The run id outcomes carry: the directory's name.
    pub run_id: String,
}

impl Recorder {
    /// Makes (or reuses) the run directory.
    pub fn open(dir: &Path) -> anyhow::Result<Recorder> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let run_id = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "served".to_string());
        Ok(Recorder {
            dir: dir.to_path_buf(),
            run_id,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory's lock, held (every process appending to it takes it first);
    /// released when the file is closed.
    fn lock(&self) -> anyhow::Result<std::fs::File> {
        let path = self.dir.join(LOCK);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        lock.lock().context("cannot lock outcomes.lock")?;
        Ok(lock)
    }

    /// Appends one outcome, its `repeat` set to the next free index for its key.
    /// Returns the key it was written under.
    pub fn append(&self, mut o: Outcome) -> anyhow::Result<crate::record::OutcomeKey> {
        // Released when `_lock` is closed, at the end of this function.
        let _lock = self.lock()?;
        let path = self.dir.join(OUTCOMES);
        let mut repeat = 0;
        if path.is_file() {
            reader::read::<KeyView>(&path, |_, k| {
                if k.scenario == o.scenario
                    && k.query_id == o.query_id
                    && k.mode == o.mode
                    && k.model == o.model
                {
                    repeat = repeat.max(k.repeat + 1);
                }
                Ok(())
            })?;
        }
        o.repeat = repeat;
        let key = o.key();
        let mut w = OutcomeWriter::open(&self.dir)?;
        w.append(o)?;
        Ok(key)
    }

    /// Appends a session tied to no query to `sessions.jsonl`, its `session` index set
    /// to the next free one for its scenario, mode and model. Returns that index.
    pub fn append_unscored(&self, mut s: UnscoredSession) -> anyhow::Result<usize> {
        let _lock = self.lock()?;
        let path = self.dir.join(SESSIONS);
        #[derive(Deserialize)]
        struct Key {
            scenario: String,
            mode: String,
            model: String,
            session: usize,
        }
        let mut next = 0;
        if path.is_file() {
            // A damaged byte in one line must not stop every later session's record.
            let bytes =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            for line in String::from_utf8_lossy(&bytes).lines() {
                // A line cut by a crash is skipped; the next append starts a new one.
                if let Ok(k) = serde_json::from_str::<Key>(line) {
                    if k.scenario == s.scenario && k.mode == s.mode && k.model == s.model {
                        next = next.max(k.session + 1);
                    }
                }
            }
        }
        s.session = next;
        let mut line = serde_json::to_vec(&s).context("the session serializes")?;
        line.push(b'\n');
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        // A file that ends mid-line (a crash) gets the line on a line of its own.
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len > 0 {
            let text = std::fs::read(&path).unwrap_or_default();
            if text.last() != Some(&b'\n') {
                f.write_all(b"\n")?;
            }
        }
        f.write_all(&line)
            .and_then(|_| f.flush())
            .with_context(|| format!("cannot append to {}", path.display()))?;
        Ok(next)
    }
}
