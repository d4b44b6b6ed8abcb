//! Run events and their listeners: the outcome writer (one JSON line per outcome,
//! flushed as it is made), the progress bar, and the summary collector.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};

use super::Outcome;

/// What the runner reports.
pub enum Event<'a> {
    Started { total: usize },
    Outcome(&'a Outcome),
    Finished,
}

/// Something that listens to a run.
pub trait Listener {
    fn event(&mut self, e: &Event) -> anyhow::Result<()>;
}

/// Appends each outcome to `outcomes.jsonl` and flushes it, so an interrupted run
/// loses nothing that was finished.
pub struct JsonlWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl JsonlWriter {
    pub fn open(path: &Path) -> anyhow::Result<JsonlWriter> {
        let f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        Ok(JsonlWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(f),
        })
    }
}

impl Listener for JsonlWriter {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        if let Event::Outcome(o) = e {
            serde_json::to_writer(&mut self.out, o)?;
            self.out.write_all(b"\n")?;
            self.out
                .flush()
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        }
        Ok(())
    }
}

/// A progress bar, drawn only when the caller says the output is a terminal and not CI.
pub struct Progress {
    bar: Option<ProgressBar>,
    enabled: bool,
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        Progress { bar: None, enabled }
    }
}

impl Listener for Progress {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        match e {
            Event::Started { total } if self.enabled => {
                let bar = ProgressBar::new(*total as u64);
                bar.set_style(
                    ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")
                        .expect("valid template"),
                );
                self.bar = Some(bar);
            }
            Event::Outcome(o) => {
                if let Some(b) = &self.bar {
                    b.set_message(format!("{} · {} · {}", o.scenario, o.mode, o.model));
                    b.inc(1);
                }
            }
            Event::Finished => {
                if let Some(b) = self.bar.take() {
                    b.finish_and_clear();
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Keeps the outcomes for the end-of-run table (small records only).
#[derive(Default)]
pub struct Collector {
    pub outcomes: Vec<Outcome>,
}

impl Listener for Collector {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        if let Event::Outcome(o) = e {
            let mut o = (*o).clone();
            // The table needs scores and tokens, not transcripts.
            o.turns.clear();
            o.calls.clear();
            self.outcomes.push(o);
        }
        Ok(())
    }
}
