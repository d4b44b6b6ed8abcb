//! `discbench run`: a new run (or one shard of it), or `--resume` of an interrupted
//! one. Its flags are made ready first ([`super::run_setup`]); then the work: record
//! `run.json`, set right what a resume found, execute the work items that have no
//! outcome yet, and write every report.

use std::sync::Arc;

use anyhow::Context as _;

use super::args::{RunArgs, SweepArgs};
use super::environment::Environment;
use super::failure::Failure;
use super::report_cmd::{finish_report, Finish};
use super::run_setup::{self, Repair, RunSetup};
use crate::model::replay::{Recorder, Recording};
use crate::model::Backend;
use crate::record::writer::{self, OutcomeWriter};
use crate::report;
use crate::runner::events::{Progress, WriterListener};
use crate::runner::{Listener, Work};

/// `discbench sweep`: a run of one scenario at several catalog sizes.
pub fn sweep(a: SweepArgs, env: Environment, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    run(run_setup::sweep_run(a)?, env, out)
}

pub fn run(a: RunArgs, env: Environment, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let setup = run_setup::resolve(a, &env)?;
    work(setup, out)
}

/// The work of a run made ready.
fn work(s: RunSetup, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let RunSetup {
        dir,
        fresh,
        ready,
        repair,
        record,
        exec,
        progress,
        baseline,
        thresholds,
        tolerance,
    } = s;
    if fresh {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))
            .map_err(Failure::Infra)?;
        report::write_atomic(&dir.join("run.json"), ready.manifest.to_json().as_bytes())
            .map_err(Failure::Infra)?;
    }
    if let Some(r) = &repair {
        set_right(&dir, r)?;
    }
    let writer = OutcomeWriter::open(&dir).map_err(Failure::Infra)?;
    let backends = if record {
        let recorder = Recorder::open(&dir).map_err(Failure::Infra)?;
        ready
            .backends
            .into_iter()
            .map(|inner| {
                Arc::new(Recording {
                    inner,
                    recorder: recorder.clone(),
                }) as Arc<dyn Backend>
            })
            .collect()
    } else {
        ready.backends
    };
    // The writer last: it is given each outcome and stores it without a copy.
    let listeners: Vec<Box<dyn Listener>> = vec![
        Box::new(Progress::new(progress)),
        Box::new(WriterListener(writer)),
    ];
    let max_cost = exec.max_cost_usd;
    let plan = ready.plan.clone();
    let work = Work {
        plan: ready.plan,
        todo: ready.todo,
        backends,
        counter: ready.counter,
        run_id: ready.manifest.run_id.clone(),
        total: ready.manifest.assigned,
        already_done: ready.already_done,
    };
    let stats = crate::runner::execute(work, exec, listeners);
    // Every live server the run started is stopped before the report is written.
    for sc in &plan.scenarios {
        if let Some(live) = &sc.live {
            live.finish();
        }
    }
    let stats = stats.map_err(Failure::Infra)?;
    if stats.over_budget {
        eprintln!(
            "spending limit reached: ${:.4} spent of ${:.4}; {} work items were not started; `discbench run --resume {}` continues",
            stats.spent_usd,
            max_cost.unwrap_or(0.0),
            stats.not_started,
            dir.display()
        );
    }
    let finish = Finish {
        savings_against: None,
        baseline: baseline.as_ref(),
        thresholds: &thresholds,
        infra: Some(tolerance),
    };
    let code = finish_report(&dir, &finish, true, out)?;
    if stats.replay_misses > 0 {
        eprintln!(
            "{} outcomes had no recorded answer to replay (their infra_error says where the request differs); the replay is not the recorded run",
            stats.replay_misses
        );
        return Ok(crate::exit::INFRA);
    }
    Ok(code)
}

/// What a resume sets right before it runs: a torn last line set aside in
/// `outcomes.torn` (its work item runs again), and with `--rerun-infra` the outcomes
/// that are infra errors moved to `outcomes.infra` (never deleted).
fn set_right(dir: &std::path::Path, r: &Repair) -> Result<(), Failure> {
    let path = dir.join(writer::OUTCOMES);
    let Some(stats) = &r.torn else {
        return Ok(());
    };
    if let Some(t) = &stats.torn {
        eprintln!(
            "{}:{}: a torn last line (the run was interrupted mid-write) is set aside in {}; its work item runs again",
            path.display(),
            t.line,
            dir.join(writer::TORN).display()
        );
    }
    crate::record::tail::repair_tail(&path, stats, Some(&dir.join(writer::TORN)))
        .map_err(Failure::Infra)?;
    if r.rerun_infra {
        let moved = writer::set_aside_infra_errors(dir).map_err(Failure::Infra)?;
        if !moved.is_empty() {
            eprintln!(
                "{} outcomes with an infra error are set aside in {} and run again",
                moved.len(),
                dir.join(writer::INFRA).display()
            );
        }
    }
    Ok(())
}
