//! Reports read from a run's outcomes on threads of their own, started before the
//! summary is computed: the outcome explorer and the JUnit cases read the run apart
//! from it and are needed only once it is done. Built after the summary, each was the
//! last report to finish, alone on one core, for about a tenth of a suite run's wall
//! clock.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// An outcomes file larger than this has nothing started early (as [`Early::none`]):
/// its readers run after the summary, so that they never hold their memory at the
/// same time as it.
const EARLY_LIMIT: u64 = 256 << 20;

/// What a reader of `outcomes.jsonl` makes, maybe started on a thread of its own.
pub struct Early<T> {
    started: Mutex<Option<JoinHandle<anyhow::Result<T>>>>,
    build: fn(&Path) -> anyhow::Result<T>,
    what: &'static str,
}

impl<T: Send + 'static> Early<T> {
    /// Nothing started: [`Early::take`] runs `build` when it is asked for.
    pub fn none(what: &'static str, build: fn(&Path) -> anyhow::Result<T>) -> Early<T> {
        Early {
            started: Mutex::new(None),
            build,
            what,
        }
    }

    /// `build` of `outcomes`, started now on a thread named after `what`, unless the
    /// file is large (or missing: the build then reports it when it is asked for).
    pub fn start(
        what: &'static str,
        build: fn(&Path) -> anyhow::Result<T>,
        outcomes: &Path,
    ) -> Early<T> {
        let early = Early::none(what, build);
        let small = std::fs::metadata(outcomes).is_ok_and(|m| m.len() <= EARLY_LIMIT);
        if small {
            let path: PathBuf = outcomes.to_path_buf();
            let handle = std::thread::Builder::new()
                .name(format!("discbench-{what}"))
                .spawn(move || build(&path))
                .ok();
            *early.started.lock().expect("early report lock") = handle;
        }
        early
    }

    /// Whether a build is under way (or done and not yet taken).
    pub fn is_started(&self) -> bool {
        self.started.lock().expect("early report lock").is_some()
    }

    /// What was started early, or built now from `outcomes`.
    pub fn take(&self, outcomes: &Path) -> anyhow::Result<T> {
        let started = self.started.lock().expect("early report lock").take();
        match started {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("building the {} panicked", self.what))?,
            None => (self.build)(outcomes),
        }
    }
}
