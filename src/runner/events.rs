//! Run events and their listeners. The executor only emits; the outcome writer, the
//! progress display and anything else only listen, on one thread of their own, in
//! the order events were sent.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::record::writer::OutcomeWriter;
use crate::record::{Outcome, OutcomeKey};

/// What the runner reports.
#[derive(Debug, Clone)]
pub enum Event {
    /// `total` work items belong to this run; `already_done` of them had outcomes
    /// before it started (a resume).
    RunStarted {
        total: usize,
        already_done: usize,
    },
    EpisodeStarted {
        key: OutcomeKey,
    },
    /// A model request failed in a way that may pass; it is tried again after `delay`.
    RetryScheduled {
        key: OutcomeKey,
        attempt: u32,
        delay: Duration,
        reason: String,
    },
    EpisodeFinished {
        outcome: Box<Outcome>,
    },
    RunFinished {
        stats: RunStats,
    },
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunStats {
    /// Episodes finished by this invocation.
    pub finished: usize,
    /// Of those, outcomes that carry an infra error.
    pub infra_errors: usize,
    pub retries: usize,
    /// Work items not started because the run stopped early (a listener failed).
    pub not_started: usize,
    /// Outcomes whose request had no recorded answer (`replay:`).
    pub replay_misses: usize,
    /// What the finished episodes cost (models with prices only).
    pub spent_usd: f64,
    /// Whether `--max-cost-usd` stopped new episodes.
    pub over_budget: bool,
    pub elapsed: Duration,
}

/// Something that listens to a run.
pub trait Listener: Send {
    fn event(&mut self, e: &Event) -> anyhow::Result<()>;

    /// The event, owned: the last listener of a run is given each event this way
    /// (one that keeps or changes what it is given need not copy it).
    fn event_owned(&mut self, e: Event) -> anyhow::Result<()> {
        self.event(&e)
    }
}

/// Appends each finished outcome to the run directory and flushes it.
pub struct WriterListener(pub OutcomeWriter);

impl Listener for WriterListener {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        if let Event::EpisodeFinished { outcome } = e {
            self.0.append(outcome.as_ref().clone())?;
        }
        Ok(())
    }

    /// The outcome appended as it is, not copied (its texts move to `texts.jsonl`).
    fn event_owned(&mut self, e: Event) -> anyhow::Result<()> {
        if let Event::EpisodeFinished { outcome } = e {
            self.0.append(*outcome)?;
        }
        Ok(())
    }
}

/// A progress bar on a terminal, or a plain line now and then when the caller says
/// the output is not one (or it is CI); nothing when disabled.
pub struct Progress {
    style: ProgressKind,
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    in_flight: usize,
    retries: usize,
    exact: usize,
    spent: Option<f64>,
    last_line: Option<std::time::Instant>,
}

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressKind {
    Off,
    Bar,
    /// A line on stderr at most every `every`.
    Lines {
        every: Duration,
    },
}

impl Progress {
    pub fn new(style: ProgressKind) -> Progress {
        Progress {
            style,
            bar: None,
            total: 0,
            done: 0,
            in_flight: 0,
            retries: 0,
            exact: 0,
            spent: None,
            last_line: None,
        }
    }

    fn message(&self) -> String {
        let scored = self.done.max(1);
        let spend = self
            .spent
            .map(|s| format!(" · ${s:.4} spent"))
            .unwrap_or_default();
        format!(
            "{} in flight · {} retries · exact {:.1}%{spend}",
            self.in_flight,
            self.retries,
            100.0 * self.exact as f64 / scored as f64
        )
    }
}

impl Listener for Progress {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        match e {
            Event::RunStarted {
                total,
                already_done,
            } => {
                self.total = *total;
                self.done = *already_done;
                if self.style == ProgressKind::Bar {
                    let bar = ProgressBar::new(*total as u64);
                    bar.set_style(
                        ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} · ETA {eta}")
                            .expect("valid template"),
                    );
                    bar.set_position(*already_done as u64);
                    self.bar = Some(bar);
                }
            }
            Event::EpisodeStarted { .. } => self.in_flight += 1,
            Event::RetryScheduled { .. } => self.retries += 1,
            Event::EpisodeFinished { outcome } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.done += 1;
                if outcome.infra_error.is_none() && outcome.score.exact {
                    self.exact += 1;
                }
                if let Some(c) = outcome.cost_usd {
                    *self.spent.get_or_insert(0.0) += c;
                }
                if let Some(b) = &self.bar {
                    b.set_message(self.message());
                    b.set_position(self.done as u64);
                }
                if let ProgressKind::Lines { every } = self.style {
                    let now = std::time::Instant::now();
                    if self
                        .last_line
                        .is_none_or(|t| now.duration_since(t) >= every)
                    {
                        self.last_line = Some(now);
                        eprintln!(
                            "progress: {}/{} · {}",
                            self.done,
                            self.total,
                            self.message()
                        );
                    }
                }
            }
            Event::RunFinished { .. } => {
                if let Some(b) = self.bar.take() {
                    b.finish_and_clear();
                }
            }
        }
        Ok(())
    }
}

/// Keeps every event (for tests).
#[derive(Default)]
pub struct Recorder {
    pub events: std::sync::Arc<std::sync::Mutex<Vec<Event>>>,
}

impl Listener for Recorder {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        self.events.lock().expect("recorder").push(e.clone());
        Ok(())
    }
}
