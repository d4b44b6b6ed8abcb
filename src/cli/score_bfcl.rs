//! `discbench score-bfcl`: model outputs in BFCL's result format judged by discbench's
//! scoring on the scenarios `import bfcl` made; accuracy per category, and each
//! verdict on request.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::args::ScoreBfclArgs;
use super::failure::{io, Failure};
use crate::bfcl::results::{judge_all, read_results, ResultLine};
use crate::error::InputErrors;
use crate::exit;
use crate::scenario;

/// Result files under a path: the file, or every `*.json` below a directory.
fn result_files(p: &Path) -> Vec<PathBuf> {
    if !p.is_dir() {
        return vec![p.to_path_buf()];
    }
    let mut out = Vec::new();
    let mut stack = vec![p.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let f = e.path();
            if f.is_dir() {
                stack.push(f);
            } else if f.extension().is_some_and(|x| x == "json") {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

pub fn score_bfcl(a: ScoreBfclArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let scenarios = scenario::load_all(std::slice::from_ref(&a.scenarios))?;
    let mut files: Vec<(PathBuf, Vec<ResultLine>)> = Vec::new();
    let mut errors = Vec::new();
    for p in &a.results {
        for f in result_files(p) {
            match read_results(&f) {
                Ok(l) => files.push((f, l)),
                Err(e) => errors.push(e),
            }
        }
    }
    if !errors.is_empty() {
        return Err(InputErrors(errors).into());
    }
    let mut verdicts = Vec::new();
    let mut unknown = Vec::new();
    let mut text = String::new();
    for (f, lines) in &files {
        let (v, mut u) = judge_all(&scenarios, lines, a.underscore_to_dot)
            .map_err(|e| Failure::Usage(e.to_string()))?;
        for x in &v {
            let mut j = serde_json::to_value(x).expect("verdicts serialize");
            j["file"] = serde_json::json!(f.display().to_string());
            text.push_str(&j.to_string());
            text.push('\n');
        }
        verdicts.extend(v);
        unknown.append(&mut u);
    }
    if let Some(path) = &a.verdicts {
        std::fs::write(path, text)
            .map_err(|e| Failure::Usage(format!("{}: cannot write: {e}", path.display())))?;
    }
    writeln!(
        out,
        "{:<28} {:>8} {:>8} {:>9}",
        "scenario", "scored", "correct", "accuracy"
    )
    .map_err(io)?;
    for sc in &scenarios {
        let mine: Vec<_> = verdicts.iter().filter(|v| v.scenario == sc.name).collect();
        if mine.is_empty() {
            continue;
        }
        let ok = mine.iter().filter(|v| v.valid).count();
        writeln!(
            out,
            "{:<28} {:>8} {:>8} {:>8.2}%  ({} of {} queries have no result)",
            sc.name,
            mine.len(),
            ok,
            100.0 * ok as f64 / mine.len() as f64,
            sc.queries.len().saturating_sub(mine.len()),
            sc.queries.len()
        )
        .map_err(io)?;
    }
    if !unknown.is_empty() {
        writeln!(
            out,
            "{} result(s) whose id no scenario holds (excluded at import, or another category): {}",
            unknown.len(),
            unknown
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )
        .map_err(io)?;
    }
    Ok(exit::OK)
}
