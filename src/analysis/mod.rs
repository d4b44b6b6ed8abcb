//! Analysis (DESIGN §8, §9): everything computed from a run's outcomes — the
//! aggregation into a [`Summary`] and the comparison of two summaries. Reports and
//! the CI gate both read this module; it reads neither.

pub mod aggregate;
pub mod compare;
pub mod infra;
pub mod run_dir;
pub mod stats;
pub mod summary;

pub use compare::Comparison;
pub use run_dir::{summarize_read_only, summarize_run};
pub use summary::{Group, Summary};
