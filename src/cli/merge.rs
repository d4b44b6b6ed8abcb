//! `discbench merge DIR… --out DIR`: joins the run directories of shards into one
//! run. The shards must come from one plan (same run id, configuration, input hashes
//! and plan hash); an outcome found in two shards is refused; outcomes the plan has
//! but no shard holds are reported (the merged run is then incomplete and `report`
//! says so). The merged directory reports exactly as one unsharded run would.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::args::MergeArgs;
use super::config::{load_baseline, max_infra};
use super::failure::{io, Failure};
use super::report_cmd::{finish_report, Finish};
use crate::analysis::compare;
use crate::record::manifest::Manifest;
use crate::record::texts::{self, TextLine};
use crate::record::writer::OUTCOMES;
use crate::record::{reader, KeyView, OutcomeKey};
use crate::report;

/// Missing work items named in the message at most.
const NAMED: usize = 10;

pub fn merge(a: MergeArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let thresholds = compare::thresholds(&a.thresholds)
        .map_err(|e| Failure::Usage(format!("--threshold: {e}")))?;
    let baseline = load_baseline(a.baseline.as_deref())?;
    let tolerance = max_infra(a.max_infra.as_deref())?;
    if a.out.join(OUTCOMES).exists() || a.out.join("run.json").exists() {
        return Err(Failure::Usage(format!(
            "--out {} already holds a run; merge into a new directory",
            a.out.display()
        )));
    }
    let mut manifests = Vec::new();
    for d in &a.dirs {
        let m = Manifest::load(d).map_err(|e| Failure::Usage(format!("{}: {e:#}", d.display())))?;
        manifests.push(m);
    }
    let first = &manifests[0];
    for (d, m) in a.dirs.iter().zip(&manifests).skip(1) {
        let mut differs = first.differences(m);
        if m.run_id != first.run_id {
            differs.push(format!("run id `{}`, not `{}`", m.run_id, first.run_id));
        }
        if m.plan.hash != first.plan.hash && differs.is_empty() {
            differs.push("another plan".into());
        }
        if !differs.is_empty() {
            return Err(Failure::Usage(format!(
                "{} is not a shard of the same plan as {}: {}",
                d.display(),
                a.dirs[0].display(),
                differs.join("; ")
            )));
        }
    }
    // Which directory holds each outcome; an outcome in two is refused.
    let planned: std::collections::HashSet<&OutcomeKey> = first.plan.items.iter().collect();
    let mut owner: HashMap<OutcomeKey, usize> = HashMap::new();
    for (i, d) in a.dirs.iter().enumerate() {
        let path = d.join(OUTCOMES);
        if !path.is_file() {
            continue;
        }
        let mut clash = None;
        reader::read::<KeyView>(&path, |line, k| {
            let key = k.key();
            if !planned.contains(&key) {
                anyhow::bail!(
                    "{}:{line}: an outcome that is not in the plan: {key}",
                    path.display()
                );
            }
            if let Some(&j) = owner.get(&key) {
                clash.get_or_insert((key.clone(), j, line));
            }
            owner.insert(key, i);
            Ok(())
        })
        .map_err(|e| {
            // A file that cannot be read is the machine's; anything else, the input's.
            if e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<reader::RecordError>(),
                    Some(reader::RecordError::Io { .. })
                )
            }) {
                Failure::Infra(e)
            } else {
                Failure::Usage(format!("{e:#}"))
            }
        })?;
        if let Some((key, j, line)) = clash {
            return Err(Failure::Usage(format!(
                "overlapping shards: {} and {}:{line} both hold {key}",
                a.dirs[j].display(),
                path.display()
            )));
        }
    }
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))
        .map_err(Failure::Infra)?;
    join_files(&a.dirs, &a.out).map_err(Failure::Infra)?;
    let mut merged = first.clone();
    merged.shard = None;
    merged.assigned = merged.plan.total;
    merged.merged_from = a.dirs.clone();
    report::write_atomic(&a.out.join("run.json"), merged.to_json().as_bytes())
        .map_err(Failure::Infra)?;
    let missing: Vec<&OutcomeKey> = first
        .plan
        .items
        .iter()
        .filter(|k| !owner.contains_key(*k))
        .collect();
    writeln!(
        out,
        "merged {} shards: {} of {} work items have an outcome",
        a.dirs.len(),
        owner.len(),
        first.plan.total
    )
    .map_err(io)?;
    if !missing.is_empty() {
        writeln!(out, "missing ({}):", missing.len()).map_err(io)?;
        for k in missing.iter().take(NAMED) {
            writeln!(out, "  {k}").map_err(io)?;
        }
        if missing.len() > NAMED {
            writeln!(out, "  … and {} more", missing.len() - NAMED).map_err(io)?;
        }
    }
    let finish = Finish {
        savings_against: None,
        baseline: baseline.as_ref(),
        thresholds: &thresholds,
        infra: Some(tolerance),
    };
    finish_report(&a.out, &finish, true, out)
}

/// Copies every whole outcome line of the shards, in order, and the union of their
/// shared texts into `out`.
fn join_files(dirs: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    let target = out.join(OUTCOMES);
    let mut w = BufWriter::new(
        File::create(&target).with_context(|| format!("cannot write {}", target.display()))?,
    );
    for d in dirs {
        let path = d.join(OUTCOMES);
        if !path.is_file() {
            continue;
        }
        reader::read::<serde_json::Value>(&path, |_, line| {
            // Re-serialized as read: key order is kept, numbers round-trip exactly.
            serde_json::to_writer(&mut w, &line)?;
            w.write_all(b"\n")?;
            Ok(())
        })?;
    }
    w.flush()?;
    let target = out.join(texts::FILE);
    let mut w = BufWriter::new(
        File::create(&target).with_context(|| format!("cannot write {}", target.display()))?,
    );
    let mut seen = std::collections::HashSet::new();
    for d in dirs {
        let path = d.join(texts::FILE);
        if !path.is_file() {
            continue;
        }
        reader::read::<TextLine>(&path, |_, l| {
            if seen.insert(l.hash.clone()) {
                serde_json::to_writer(&mut w, &l)?;
                w.write_all(b"\n")?;
            }
            Ok(())
        })?;
    }
    w.flush()?;
    Ok(())
}
