//! [`Recorder`]: appends the outcomes of served sessions to a run directory in the
//! usual format (`outcomes.jsonl`, `texts.jsonl`), so that `report`, `compare` and the
//! gate read them like a run's. Several `serve` processes may record into one
//! directory at once (a desktop client starts one server per conversation): each
//! append holds an exclusive lock on the directory's `outcomes.lock`, and a session's
//! `repeat` is the number of outcomes the directory already holds for its scenario,
//! query, mode and model, so that no two outcomes share a key.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::record::writer::{OutcomeWriter, OUTCOMES};
use crate::record::{reader, KeyView, Outcome};

/// The lock file inside a run directory that `serve --record` appends to.
pub const LOCK: &str = "outcomes.lock";

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

    /// Appends one outcome, its `repeat` set to the next free index for its key.
    /// Returns the key it was written under.
    pub fn append(&self, mut o: Outcome) -> anyhow::Result<crate::record::OutcomeKey> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK))
            .with_context(|| format!("cannot open {}", self.dir.join(LOCK).display()))?;
        // Released when `lock` is closed, at the end of this function.
        lock.lock().context("cannot lock outcomes.lock")?;
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
}
