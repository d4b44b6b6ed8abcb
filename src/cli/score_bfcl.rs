//! `discbench score-bfcl`: model outputs in BFCL's result format judged by discbench's
//! scoring on the scenarios `import bfcl` made; accuracy per category, and each
//! verdict on request.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::args::ScoreBfclArgs;
use super::failure::{io, Failure};
use crate::bfcl::judge::judge_all;
use crate::bfcl::multi_judge::JudgeError;
use crate::bfcl::results::{read_results, ResultLine};
use crate::environment::live::{CheckError, Live};
use crate::error::InputErrors;
use crate::exit;
use crate::scenario::{self, Scenario};
use std::sync::Arc;

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

/// The live servers of the scenarios that have any (multi-turn imports), allowed and
/// checked, with the bridge's Python replaced by `--python` when given.
fn live_servers(
    scenarios: &[Scenario],
    a: &ScoreBfclArgs,
    named: &std::collections::HashSet<&str>,
) -> Result<Vec<Option<Arc<Live>>>, Failure> {
    let mut out = Vec::new();
    for sc in scenarios {
        if sc.live.is_empty() || !sc.queries.iter().any(|q| named.contains(q.id.as_str())) {
            out.push(None);
            continue;
        }
        if !a.allow_live {
            let commands: Vec<String> = sc
                .live
                .iter()
                .map(|s| s.shown())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            return Err(Failure::Usage(format!(
                "{} is judged by running its outputs on live servers, and starts none unless allowed: {}; run again with --allow-live",
                sc.name,
                commands.join("; ")
            )));
        }
        let specs = sc
            .live
            .iter()
            .cloned()
            .map(|mut s| {
                if let (Some(py), false) = (&a.python, s.command.is_empty()) {
                    // The bridge runs in a directory of its own: a path is made absolute.
                    s.command[0] = if py.contains('/') {
                        std::path::absolute(py)
                            .map(|p| p.display().to_string())
                            .unwrap_or_else(|_| py.clone())
                    } else {
                        py.clone()
                    };
                }
                s
            })
            .collect();
        let live = Arc::new(Live::new(specs));
        live.check(&sc.catalog).map_err(|e| match e {
            CheckError::Differs(m) => Failure::Usage(m),
            CheckError::Failed(m) => Failure::Infra(anyhow::anyhow!(m)),
        })?;
        out.push(Some(live));
    }
    Ok(out)
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
    // Only the scenarios a result line names start their live servers.
    let named: std::collections::HashSet<&str> = files
        .iter()
        .flat_map(|(_, lines)| lines.iter().map(|l| l.id.as_str()))
        .collect();
    let live = live_servers(&scenarios, &a, &named)?;
    let mut verdicts = Vec::new();
    let mut unknown = Vec::new();
    let mut text = String::new();
    for (f, lines) in &files {
        let judged = judge_all(&scenarios, lines, a.underscore_to_dot, &live);
        if judged.is_err() {
            for l in live.iter().flatten() {
                l.finish();
            }
        }
        let (v, mut u) = judged.map_err(|e| match e {
            JudgeError::Usage(m) => Failure::Usage(m),
            JudgeError::Infra(m) => Failure::Infra(anyhow::anyhow!(m)),
        })?;
        for x in &v {
            let mut j = serde_json::to_value(x).expect("verdicts serialize");
            j["file"] = serde_json::json!(f.display().to_string());
            text.push_str(&j.to_string());
            text.push('\n');
        }
        verdicts.extend(v);
        unknown.append(&mut u);
    }
    for l in live.iter().flatten() {
        l.finish();
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
