//! `discbench report`: re-renders every report of a run from its outcomes (no model
//! is called), and the shared end of `run`, `merge` and `report`: aggregate, write
//! every report file, print the table, judge against a baseline.

use std::collections::BTreeMap;
use std::path::Path;

use super::args::ReportArgs;
use super::failure::{io, Failure};
use crate::analysis::{self, compare, Summary};
use crate::exit;
use crate::record::reader;
use crate::report::{self, table};

pub fn report(a: ReportArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let thresholds = compare::thresholds(&a.thresholds)
        .map_err(|e| Failure::Usage(format!("--threshold: {e}")))?;
    if !a.run_dir.join("outcomes.jsonl").is_file() {
        return Err(Failure::Usage(format!(
            "{} holds no outcomes.jsonl",
            a.run_dir.display()
        )));
    }
    let baseline = load_baseline(a.baseline.as_deref())?;
    finish_report(&a.run_dir, baseline.as_ref(), &thresholds, false, out)
}

/// `--baseline`, read before any work starts.
pub fn load_baseline(path: Option<&Path>) -> Result<Option<Summary>, Failure> {
    path.map(|b| compare::load_side(b).map_err(|e| Failure::Usage(format!("--baseline: {e:#}"))))
        .transpose()
}

/// Aggregates a run directory, writes every report file, prints the summary table
/// when asked, says when the run is incomplete, and judges it against the baseline
/// when there is one. Returns the exit code.
pub fn finish_report(
    dir: &Path,
    baseline: Option<&Summary>,
    thresholds: &BTreeMap<String, f64>,
    print_table: bool,
    out: &mut dyn std::io::Write,
) -> Result<i32, Failure> {
    let summary = analysis::summarize_run(dir).map_err(report_failure)?;
    let comparison = baseline.map(|b| compare::compare(b, &summary, thresholds));
    report::write_all(dir, &summary, comparison.as_ref()).map_err(report_failure)?;
    if print_table {
        writeln!(out, "{}", table::render(&table::rows(&summary))).map_err(io)?;
        writeln!(
            out,
            "{} outcomes in {}",
            summary.outcomes,
            dir.join("outcomes.jsonl").display()
        )
        .map_err(io)?;
    }
    if let Some((done, planned)) = summary.incomplete() {
        writeln!(
            out,
            "incomplete run: {done} of {planned} work items have an outcome; finish it with `discbench run --resume {}`",
            dir.display()
        )
        .map_err(io)?;
    }
    writeln!(out, "report: {}", dir.join("index.html").display()).map_err(io)?;
    if let Some(c) = &comparison {
        let md = compare::markdown(c);
        report::write_atomic(&dir.join("compare.md"), md.as_bytes()).map_err(Failure::Infra)?;
        writeln!(out, "\n{md}").map_err(io)?;
        if c.regressed() {
            return Ok(exit::REGRESSION);
        }
    }
    Ok(exit::OK)
}

/// A broken outcome file is bad input (exit 2); any other failure while reporting is
/// the machine's (exit 3).
pub fn report_failure(e: anyhow::Error) -> Failure {
    if reader::is_bad_input(&e) {
        Failure::Usage(format!("{e:#}"))
    } else {
        Failure::Infra(e)
    }
}
