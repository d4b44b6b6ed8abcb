//! `run` and `sweep` made ready: every flag turned into one checked configuration
//! ([`RunSetup`]) before any work starts, as ripgrep turns its raw arguments into a
//! configuration — thresholds, the baseline and the infra tolerance, jobs, spending
//! limit and shard, the scenarios, modes and protocol settings ([`super::config`]),
//! the backends and the prompt cache, the progress display, and, for `--resume`, what
//! the run directory already holds (checked against its `run.json`, nothing written).
//! The command ([`super::run`]) then does the work.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::args::{EndpointArgs, RunArgs, SweepArgs};
use super::config::{self, load_baseline, max_infra, Prepared};
use super::environment::Environment;
use super::failure::{report_failure, Failure};
use crate::analysis::compare;
use crate::analysis::infra::Tolerance;
use crate::analysis::Summary;
use crate::environment::live::CheckError;
use crate::model::http::Sampling;
use crate::model::limit::Limits;
use crate::model::models_file::{ModelsFile, MAX_TIMEOUT_SECS};
use crate::model::replay::{Replay, Tape};
use crate::model::{self, Backend, ModelOptions};
use crate::record::manifest::{Manifest, PromptCache, Shard, Ttl};
use crate::record::reader::ReadStats;
use crate::record::writer;
use crate::record::{reader, OutcomeKey, FORMAT_VERSION};
use crate::runner::events::ProgressKind;
use crate::runner::{plan, ExecOptions, Plan, RetryPolicy, RunConfig};
use crate::scenario::sweep::SweepSpec;

/// How often a plain progress line is printed when stderr is not a terminal.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Everything a run needs, checked.
pub struct RunSetup {
    /// The run directory.
    pub dir: PathBuf,
    /// A new run: its directory and `run.json` are to be made.
    pub fresh: bool,
    pub ready: Ready,
    /// For a resume: what to set right in the directory before running.
    pub repair: Option<Repair>,
    /// Keep every model answer (`--record`).
    pub record: bool,
    pub exec: ExecOptions,
    pub progress: ProgressKind,
    pub baseline: Option<Summary>,
    pub thresholds: BTreeMap<String, f64>,
    pub tolerance: Tolerance,
}

/// What a resume sets right before it runs: a torn last line set aside (never
/// deleted), and with `--rerun-infra` the outcomes that are infra errors moved to
/// `outcomes.infra`.
pub struct Repair {
    /// How the outcome file read (its torn last line, if any).
    pub torn: Option<ReadStats>,
    pub rerun_infra: bool,
}

/// `discbench sweep`'s flags as the run they make.
pub fn sweep_run(a: SweepArgs) -> Result<RunArgs, Failure> {
    let mut run_args = a.run;
    if run_args.resume.is_none() {
        if run_args.common.scenarios.len() != 1 {
            return Err(Failure::Usage(
                "sweep takes one scenario file: `discbench sweep SCENARIO --sizes 10,30,100`"
                    .into(),
            ));
        }
        let sizes = SweepSpec::parse_sizes(a.sizes.as_deref().unwrap_or_default())
            .map_err(|e| Failure::Usage(format!("--sizes: {e}")))?;
        run_args.common.sweep = Some(SweepSpec {
            sizes,
            seed: run_args.endpoints.seed.map_or(0, |s| s as u64),
            pool: if a.pool.is_empty() {
                crate::scenario::sweep::DEFAULT_POOL
                    .iter()
                    .map(std::path::PathBuf::from)
                    .collect()
            } else {
                a.pool
            },
            near_duplicates: a.near_duplicates,
        });
    } else if a.sizes.is_some() || !a.pool.is_empty() || a.near_duplicates {
        return Err(Failure::Usage(
            "--resume takes the sweep its run.json records: give no --sizes, --pool or --near-duplicates".into(),
        ));
    }
    Ok(run_args)
}

/// `run`'s flags, resolved and checked.
pub fn resolve(a: RunArgs, env: &Environment) -> Result<RunSetup, Failure> {
    let thresholds = compare::thresholds(&a.thresholds)
        .map_err(|e| Failure::Usage(format!("--threshold: {e}")))?;
    let baseline = load_baseline(a.baseline.as_deref())?;
    let tolerance = max_infra(a.max_infra.as_deref())?;
    if a.jobs == 0 {
        return Err(Failure::Usage("--jobs must be at least 1".into()));
    }
    if a.max_cost_usd.is_some_and(|c| !(c > 0.0 && c.is_finite())) {
        return Err(Failure::Usage(
            "--max-cost-usd must be a positive amount".into(),
        ));
    }
    let shard: Option<Shard> = a
        .shard
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| Failure::Usage(format!("--shard: {e}")))?;
    let (dir, mut ready, repair) = match &a.resume {
        Some(dir) => {
            let (ready, repair) = resume(&a, dir, shard)?;
            (dir.clone(), ready, Some(repair))
        }
        None => {
            let ready = fresh(&a, shard)?;
            (a.out.join(&ready.manifest.run_id), ready, None)
        }
    };
    live_gate(&mut ready, &a, &dir)?;
    let progress = if a.no_progress {
        ProgressKind::Off
    } else if env.stderr_is_terminal && !env.is_ci {
        ProgressKind::Bar
    } else {
        ProgressKind::Lines {
            every: PROGRESS_EVERY,
        }
    };
    Ok(RunSetup {
        dir,
        fresh: a.resume.is_none(),
        ready,
        repair,
        record: a.record,
        exec: ExecOptions {
            jobs: a.jobs,
            retry: RetryPolicy {
                max_retries: a.max_retries,
                ..RetryPolicy::default()
            },
            max_cost_usd: a.max_cost_usd,
        },
        progress,
        baseline,
        thresholds,
        tolerance,
    })
}

/// The scenarios' live MCP servers: refused unless the user allowed them (naming
/// every command the run would start), else each checked once against its committed
/// catalog and recorded in run.json (a resumed run's servers must list what they
/// listed when it began).
fn live_gate(ready: &mut Ready, a: &RunArgs, dir: &Path) -> Result<(), Failure> {
    use anyhow::Context as _;
    let (allow, resumed) = (a.allow_live, a.resume.is_some());
    let with_live: Vec<usize> = (0..ready.plan.scenarios.len())
        .filter(|&i| ready.plan.scenarios[i].live.is_some())
        .collect();
    if with_live.is_empty() {
        return Ok(());
    }
    // A replay of a recorded run (every model `replay:DIR`) serves the live answers
    // the recording kept: nothing starts, nothing needs allowing.
    let specs = if ready.manifest.settings.model_specs.is_empty() {
        &ready.manifest.settings.models
    } else {
        &ready.manifest.settings.model_specs
    };
    let replays: Vec<&str> = specs
        .iter()
        .filter_map(|m| m.strip_prefix("replay:"))
        .collect();
    if !replays.is_empty() && replays.len() == specs.len() {
        let dirs: Vec<&Path> = replays.iter().map(Path::new).collect();
        for &i in &with_live {
            let live = ready.plan.scenarios[i].live.as_ref().expect("live");
            match live.replay_from(&dirs) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(Failure::Usage(format!(
                        "{} kept no live answers ({}): record the run with --record to replay its live servers",
                        replays.join(", "),
                        crate::environment::live::TAPE_FILE
                    )))
                }
                Err(e) => return Err(Failure::Usage(e)),
            }
        }
        return Ok(());
    }
    if !allow {
        let mut lines = Vec::new();
        for &i in &with_live {
            let run = &ready.plan.scenarios[i];
            for spec in run.live.as_ref().expect("live").specs() {
                lines.push(format!(
                    "  {} (scenario {}): {}",
                    spec.server,
                    run.scenario.name,
                    spec.shown()
                ));
            }
        }
        return Err(Failure::Usage(format!(
            "this run would start the processes of live MCP servers, and starts none unless allowed:\n{}\nA scenario that starts processes is code: read it, then run again with --allow-live (each process gets only PATH, HOME, LANG, TMPDIR and the variables its scenario names)",
            lines.join("\n")
        )));
    }
    for &i in &with_live {
        let run = &ready.plan.scenarios[i];
        let live = run.live.as_ref().expect("live");
        let infos = live.check(&run.scenario.catalog).map_err(|e| match e {
            CheckError::Differs(m) => Failure::Usage(m),
            CheckError::Failed(m) => Failure::Infra(anyhow::anyhow!(m)),
        })?;
        let Some(inputs) = ready
            .manifest
            .scenarios
            .iter_mut()
            .find(|s| s.name == run.scenario.name)
        else {
            continue;
        };
        if resumed && !inputs.live.is_empty() {
            for now in &infos {
                let Some(was) = inputs.live.iter().find(|w| w.server == now.server) else {
                    continue;
                };
                if was.tools_hash != now.tools_hash {
                    return Err(Failure::Usage(format!(
                        "cannot resume: the live server `{}` lists other tools than when the run began ({} {} then, {} {} now)",
                        now.server,
                        was.name.as_deref().unwrap_or("?"),
                        was.version.as_deref().unwrap_or("?"),
                        now.name.as_deref().unwrap_or("?"),
                        now.version.as_deref().unwrap_or("?"),
                    )));
                }
            }
        } else {
            inputs.live = infos;
        }
    }
    if a.record {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create {}", dir.display()))
            .map_err(Failure::Infra)?;
        let tape = crate::environment::live::Live::tape_file(dir)
            .with_context(|| format!("cannot keep the live answers in {}", dir.display()))
            .map_err(Failure::Infra)?;
        for &i in &with_live {
            let live = ready.plan.scenarios[i].live.as_ref().expect("live");
            live.record_to(tape.clone());
        }
    }
    Ok(())
}

/// A validated run, ready to execute.
pub struct Ready {
    pub plan: Arc<Plan>,
    pub manifest: Manifest,
    pub backends: Vec<Arc<dyn Backend>>,
    pub counter: Arc<crate::tokens::Counter>,
    /// Indices into the plan's items, still to run.
    pub todo: Vec<usize>,
    pub already_done: usize,
}

/// The model names and backends of `--model` values: `replay:PATH` stands for every
/// model its recording holds.
type Models = (Vec<String>, Vec<Arc<dyn Backend>>);

fn backends(specs: &[String], e: &EndpointArgs) -> Result<Models, Failure> {
    let file = match &e.models_file {
        Some(p) => Some(ModelsFile::load(p).map_err(|m| Failure::Usage(format!("--models: {m}")))?),
        None => None,
    };
    if !(e.request_timeout > 0.0 && e.request_timeout <= MAX_TIMEOUT_SECS) {
        return Err(Failure::Usage(format!(
            "--request-timeout must be a positive number of seconds, at most {MAX_TIMEOUT_SECS}"
        )));
    }
    let env = |k: &str| std::env::var(k).ok();
    let o = ModelOptions {
        models_file: file.as_ref(),
        openai_base_url: e.openai_base_url.clone(),
        anthropic_base_url: e.anthropic_base_url.clone(),
        gemini_base_url: e.gemini_base_url.clone(),
        timeout: Duration::from_secs_f64(e.request_timeout),
        sampling: Sampling {
            temperature: e.temperature,
            max_tokens: e.max_tokens,
            seed: e.seed,
            strict_tools: e.strict_tools.then_some(true),
        },
        limits: Limits {
            requests_per_minute: e.requests_per_minute,
            tokens_per_minute: e.tokens_per_minute,
        },
        env: &env,
        prompt_cache: prompt_cache(e)?,
    };
    let mut names = Vec::new();
    let mut out: Vec<Arc<dyn Backend>> = Vec::new();
    for spec in specs {
        if let Some(path) = spec.strip_prefix("replay:") {
            let tape = Arc::new(
                Tape::load(Path::new(path))
                    .map_err(|e| Failure::Usage(format!("--model {spec}: {e:#}")))?,
            );
            for name in &tape.models {
                names.push(name.clone());
                out.push(Arc::new(Replay {
                    name: name.clone(),
                    tape: tape.clone(),
                    parameters: o.sampling.to_json(),
                }));
            }
            continue;
        }
        let b = model::build_with(spec, &o).map_err(|e| Failure::Usage(format!("--model: {e}")))?;
        names.push(b.name().to_string());
        out.push(b);
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = names.iter().find(|n| !seen.insert(*n)) {
        return Err(Failure::Usage(format!("--model: `{dup}` is given twice")));
    }
    Ok((names, out))
}

/// `--prompt-cache` and `--cache-ttl`.
fn prompt_cache(e: &EndpointArgs) -> Result<PromptCache, Failure> {
    let enabled = match e.prompt_cache.as_str() {
        "on" | "" => true,
        "off" => false,
        other => {
            return Err(Failure::Usage(format!(
                "--prompt-cache is on or off, not `{other}`"
            )))
        }
    };
    let ttl = match e.cache_ttl.as_str() {
        "" => Ttl::default(),
        t => Ttl::parse(t).map_err(|m| Failure::Usage(format!("--cache-ttl: {m}")))?,
    };
    Ok(PromptCache::new(enabled, ttl))
}

/// What `run.json` records of prompt caching: the setting, when a model of the run
/// talks to a provider (mock models and replays cache nothing).
fn recorded_cache(specs: &[String], e: &EndpointArgs) -> Result<Option<PromptCache>, Failure> {
    let mock = |s: &String| model::MODELS.contains(&s.as_str()) || s.starts_with("replay:");
    Ok(if specs.iter().all(mock) {
        None
    } else {
        Some(prompt_cache(e)?)
    })
}

/// Builds the plan and the manifest that records it.
fn build(
    p: Prepared,
    run_id: String,
    models: Vec<String>,
    repeat: usize,
    max_requests: usize,
    shard: Option<Shard>,
) -> Result<(Arc<Plan>, Manifest, Arc<crate::tokens::Counter>), Failure> {
    let cfg = RunConfig {
        run_id: run_id.clone(),
        scenario_paths: p.scenario_paths,
        modes: p.modes,
        models,
        repeat,
        max_requests,
        protocol: p.protocol,
        templates: p.templates.clone(),
        templates_dir: p.templates_dir,
    };
    let plan =
        Plan::build(&p.scenarios, &cfg, &p.counter).map_err(|e| Failure::Usage(e.to_string()))?;
    let mut settings = plan::settings(&cfg, p.counter.encoding().as_str());
    settings.sweep = p.sweep.clone();
    let record = plan.record();
    let assigned = match shard {
        Some(s) => s.select(&record.items).len(),
        None => record.total,
    };
    let manifest = Manifest {
        format: FORMAT_VERSION,
        discbench_version: env!("CARGO_PKG_VERSION").to_string(),
        run_id,
        settings,
        scenarios: plan::scenario_inputs(&p.scenarios),
        templates: p.templates.hashes().clone(),
        plan: record,
        shard,
        assigned,
        merged_from: Vec::new(),
    };
    Ok((Arc::new(plan), manifest, Arc::new(p.counter)))
}

/// The plan items of this shard (all without one), as indices, in the order they
/// start: a sweep's grouped by view ([`Plan::view_order`]).
fn shard_items(plan: &Plan, shard: Option<Shard>, sweep: bool) -> Vec<usize> {
    let mut todo = match shard {
        Some(s) => s.select(&plan.keys()),
        None => (0..plan.items.len()).collect(),
    };
    if sweep {
        plan.view_order(&mut todo);
    }
    todo
}

/// For a run with a Gemini model: per scenario, how many tool schemas that some mode
/// of the run declares use keywords outside the subset Gemini documents (they are sent
/// as written), on stderr, with the command that lists them tool by tool.
fn gemini_notes(p: &Prepared, backends: &[Arc<dyn Backend>]) {
    let gemini = crate::names::GEMINI.provider;
    if !backends
        .iter()
        .any(|b| b.names().is_some_and(|r| r.provider == gemini))
    {
        return;
    }
    for sc in &p.scenarios {
        let mut noted = HashSet::new();
        for mode in &p.modes {
            let Ok(comp) = crate::strategy::Composite::new(
                &sc.catalog,
                sc.agent.instructions.as_deref(),
                mode.with_overrides(&sc.agent.modes),
                &p.templates,
                p.protocol,
            ) else {
                continue;
            };
            for t in comp.all_tools().iter() {
                if !noted.contains(&t.name) && !crate::model::gemini::schema_notes(t).is_empty() {
                    noted.insert(t.name.clone());
                }
            }
        }
        if !noted.is_empty() {
            eprintln!(
                "note: {} of `{}` use JSON Schema keywords outside the subset Gemini \
                 documents; they are sent as written (`discbench tokens {} --names gemini` \
                 lists them)",
                match noted.len() {
                    1 => "1 tool schema".to_string(),
                    n => format!("{n} tool schemas"),
                },
                sc.name,
                sc.path.display()
            );
        }
    }
}

fn fresh(a: &RunArgs, shard: Option<Shard>) -> Result<Ready, Failure> {
    let p = config::prepare(&a.common)?;
    let specs = if a.models.is_empty() {
        vec!["oracle".to_string(), "lexical".to_string()]
    } else {
        a.models.clone()
    };
    let (models, backends) = backends(&specs, &a.endpoints)?;
    gemini_notes(&p, &backends);
    let (repeat, max_requests) = config::repeat_and_requests(a.repeat, a.max_requests)?;
    let run_id = a.run_id.clone().unwrap_or_else(timestamp_id);
    if run_id.is_empty() || run_id.contains(['/', '\\']) || run_id.starts_with('.') {
        return Err(Failure::Usage(format!(
            "--run-id `{run_id}` must be a plain directory name"
        )));
    }
    let dir = a.out.join(&run_id);
    if dir.join("outcomes.jsonl").exists() || dir.join("run.json").exists() {
        return Err(Failure::Usage(format!(
            "{} already holds a run; pick another --run-id, or finish it with --resume {}",
            dir.display(),
            dir.display()
        )));
    }
    if let Some(r) = &a.savings_against {
        if !p.modes.iter().any(|m| &m.label == r) {
            return Err(Failure::Usage(format!(
                "--savings-against {r}: not a mode of this run (its modes: {}); add it with --mode {r}",
                p.modes
                    .iter()
                    .map(|m| m.label.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let filter = a.common.filter();
    let (plan, mut manifest, counter) = build(p, run_id, models, repeat, max_requests, shard)?;
    manifest.settings.prompt_cache = recorded_cache(&specs, &a.endpoints)?;
    manifest.settings.filter = (!filter.is_empty()).then_some(filter);
    manifest.settings.savings_against = a
        .savings_against
        .clone()
        .filter(|r| r != crate::analysis::summary::DEFAULT_SAVINGS_REFERENCE);
    if specs != manifest.settings.models {
        manifest.settings.model_specs = specs;
    }
    let todo = shard_items(&plan, shard, manifest.settings.sweep.is_some());
    Ok(Ready {
        plan,
        manifest,
        backends,
        counter,
        todo,
        already_done: 0,
    })
}

fn resume(a: &RunArgs, dir: &Path, shard: Option<Shard>) -> Result<(Ready, Repair), Failure> {
    let recorded = Manifest::load(dir).map_err(|e| {
        Failure::Usage(format!(
            "--resume {}: {e:#} (only a run directory made by `discbench run` can be resumed)",
            dir.display()
        ))
    })?;
    let s = &recorded.settings;
    let mut differs = Vec::new();
    if shard.is_some() && shard != recorded.shard {
        differs.push(format!(
            "--shard {} (the run is {})",
            shard.map(|s| s.to_string()).unwrap_or_default(),
            recorded
                .shard
                .map(|s| s.to_string())
                .unwrap_or_else(|| "unsharded".into())
        ));
    }
    let specs = if s.model_specs.is_empty() {
        &s.models
    } else {
        &s.model_specs
    };
    if !a.models.is_empty() && &a.models != specs {
        differs.push(format!(
            "--model {} (the run used {})",
            a.models.join(", "),
            specs.join(", ")
        ));
    }
    if a.repeat.is_some_and(|r| r != s.repeat) {
        differs.push(format!("--repeat (the run used {})", s.repeat));
    }
    if a.max_requests.is_some_and(|t| t != s.max_requests) {
        differs.push(format!("--max-requests (the run used {})", s.max_requests));
    }
    if a.savings_against.is_some()
        && a.savings_against.as_deref()
            != Some(
                s.savings_against
                    .as_deref()
                    .unwrap_or(crate::analysis::summary::DEFAULT_SAVINGS_REFERENCE),
            )
    {
        differs.push(format!(
            "--savings-against (the run used {})",
            s.savings_against.as_deref().unwrap_or("legacy")
        ));
    }
    if !differs.is_empty() {
        return Err(Failure::Usage(format!(
            "cannot resume {}: the command line differs from its run.json: {}",
            dir.display(),
            differs.join("; ")
        )));
    }
    let common = config::resume_common(s, &a.common)?;
    let p = config::prepare(&common)?;
    let (_, backends) = backends(specs, &a.endpoints)?;
    let (plan, mut now, counter) = build(
        p,
        recorded.run_id.clone(),
        s.models.clone(),
        s.repeat,
        s.max_requests,
        recorded.shard,
    )?;
    now.settings.prompt_cache = recorded_cache(specs, &a.endpoints)?;
    // Taken from the record (the flags may only agree with it: checked above).
    now.settings.filter = s.filter.clone();
    now.settings.savings_against = s.savings_against.clone();
    let differences = recorded.differences(&now);
    if !differences.is_empty() {
        return Err(Failure::Usage(format!(
            "cannot resume {}: what the run was made from has changed, so its outcomes would not be comparable; start a new run instead.\n  {}",
            dir.display(),
            differences.join("\n  ")
        )));
    }
    // What is done: every whole outcome line (with `--rerun-infra`, but those that
    // are infra errors). Each line is read whole, not just its key: a line that is not
    // an outcome refuses the resume before anything is written (the reports at its end
    // would fail on it). The texts are read whole too. Nothing is repaired or moved
    // here: a resume that is refused leaves the run as it was ([`Repair`] is done by
    // the command once the configuration stands).
    let path = dir.join(writer::OUTCOMES);
    let mut done: HashSet<OutcomeKey> = HashSet::new();
    let texts = dir.join(crate::record::texts::FILE);
    if texts.is_file() {
        reader::read::<crate::record::texts::TextLine>(&texts, |_, _| Ok(()))
            .map_err(report_failure)?;
    }
    let mut repair = Repair {
        torn: None,
        rerun_infra: a.rerun_infra,
    };
    if path.is_file() {
        let stats = reader::read::<crate::record::Outcome>(&path, |_, o| {
            if !(a.rerun_infra && o.infra_error.is_some()) {
                done.insert(o.key());
            }
            Ok(())
        })
        .map_err(report_failure)?;
        repair.torn = Some(stats);
    }
    let mine = shard_items(&plan, recorded.shard, recorded.settings.sweep.is_some());
    let planned: HashSet<&OutcomeKey> = mine.iter().map(|&i| &plan.items[i].key).collect();
    if let Some(stray) = done.iter().find(|k| !planned.contains(k)) {
        return Err(Failure::Usage(format!(
            "cannot resume {}: it holds an outcome that is not in its plan: {stray}",
            dir.display()
        )));
    }
    let todo: Vec<usize> = mine
        .into_iter()
        .filter(|&i| !done.contains(&plan.items[i].key))
        .collect();
    Ok((
        Ready {
            plan,
            manifest: recorded,
            backends,
            counter,
            already_done: done.len(),
            todo,
        },
        repair,
    ))
}
/// `YYYYMMDD-HHMMSS` in UTC.
fn timestamp_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_414), (2025, 11, 22));
    }
}
