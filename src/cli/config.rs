//! Raw flags → one validated configuration, before any work starts: scenarios
//! loaded, modes resolved, templates compiled, the tokenizer chosen. Nothing
//! downstream sees a string that could still be invalid.

use std::path::PathBuf;
use std::sync::Arc;

use super::args::Common;
use super::failure::Failure;
use crate::analysis::infra::Tolerance;
use crate::analysis::{compare, Summary};
use crate::record::manifest::Settings;
use crate::runner::DEFAULT_MAX_REQUESTS;
use crate::scenario::sweep::{self, SweepSpec};
use crate::scenario::{self, Scenario};
use crate::strategy::mode::{Mode, PRESETS};
use crate::strategy::{Composite, ProtocolConfig, Templates};
use crate::tokens::{Counter, Encoding};
use std::path::Path;

/// The default tokenizer.
pub const DEFAULT_TOKENIZER: &str = "o200k_base";

/// The scenario paths to load: those given, else `scenarios/`.
pub fn default_paths(p: &[PathBuf]) -> Vec<PathBuf> {
    if p.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        p.to_vec()
    }
}

/// The modes to run: `--mode` values, else the environment's mode, else all presets.
pub fn resolve_modes(
    flags: &[String],
    get_env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<Mode>, Failure> {
    let specs: Vec<&str> = flags
        .iter()
        .flat_map(|f| f.split(';'))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mut modes = Vec::new();
    if specs.is_empty() {
        match Mode::from_env(get_env).map_err(|e| Failure::Usage(e.to_string()))? {
            Some(m) => modes.push(m),
            None => modes.extend(PRESETS.iter().map(|p| Mode::preset(p).expect("preset"))),
        }
    } else {
        for s in specs {
            let m = Mode::parse(s).map_err(|e| Failure::Usage(format!("--mode: {e}")))?;
            if !modes.iter().any(|x: &Mode| x.label == m.label) {
                modes.push(m);
            }
        }
    }
    Ok(modes)
}

/// What the commands that render scenarios share, validated.
pub struct Prepared {
    pub scenario_paths: Vec<PathBuf>,
    pub scenarios: Vec<Scenario>,
    /// The sweep the scenarios were made by, if any.
    pub sweep: Option<SweepSpec>,
    pub modes: Vec<Mode>,
    pub counter: Counter,
    pub templates: Arc<Templates>,
    pub templates_dir: Option<PathBuf>,
    pub protocol: ProtocolConfig,
}

/// Validates the shared flags and loads the scenarios. Every scenario is rendered
/// under every mode now: a template override that fails to render is bad input,
/// found before a run directory is made.
pub fn prepare(c: &Common) -> Result<Prepared, Failure> {
    let tokenizer = c.tokenizer.as_deref().unwrap_or(DEFAULT_TOKENIZER);
    let encoding: Encoding = tokenizer
        .parse()
        .map_err(|e| Failure::Usage(format!("--tokenizer: {e}")))?;
    let modes = resolve_modes(&c.modes, |v| std::env::var(v).ok())?;
    let templates = c
        .templates
        .as_deref()
        .map_or_else(|| Ok(Templates::builtin()), Templates::from_arg)
        .map_err(|e| Failure::Usage(format!("--templates: {e}")))?;
    let protocol = match &c.recorded_protocol {
        // A run.json is input like any file: its limits are checked as the flags are.
        Some(p) => {
            p.sql
                .check()
                .map_err(|e| Failure::Usage(format!("run.json: settings.protocol.sql: {e}")))?;
            **p
        }
        None => ProtocolConfig::resolve(&c.protocol_flags(), |v| std::env::var(v).ok())
            .map_err(Failure::Usage)?,
    };
    // The tokenizer's tables take a while to build: build them while the scenarios load
    // and the plan's first views render (a count before they are built waits for them).
    std::thread::spawn(move || Counter::warm(encoding));
    let scenario_paths = default_paths(&c.scenarios);
    let (mut scenarios, skipped) = scenario::load_all_noting(&scenario_paths)?;
    for (f, kind) in &skipped {
        eprintln!(
            "skipped {}: {}, not a scenario (a scenario includes it with catalog.include)",
            f.display(),
            scenario::kind_name(*kind)
        );
    }
    scenarios = c.filter().apply(scenarios).map_err(Failure::Usage)?;
    if let Some(spec) = &c.sweep {
        scenarios = swept(scenarios, spec)?;
    }
    let templates = Arc::new(templates);
    // With the user's templates, every scenario is rendered under every mode now, so
    // that a template that fails to render is bad input found before a run directory
    // is made. The built-in ones render every scenario of the suite under every preset
    // in the tests; a run renders each scenario × mode's first view while its plan is
    // built anyway, and reports the same error there.
    for sc in &scenarios {
        for m in &modes {
            let ran = m.with_overrides(&sc.agent.modes);
            let label = crate::record::mode_label(&m.label, &ran.canonical_spec());
            if label != m.label {
                eprintln!(
                    "scenario `{}`: its agent.modes runs mode `{}` as `{label}` (a scenario's settings win over --mode, as in FIM One); every report names it `{label}`",
                    sc.name, m.label
                );
            }
            if c.templates.is_none() {
                continue;
            }
            Composite::new(
                &sc.catalog,
                sc.agent.instructions.as_deref(),
                ran,
                &templates,
                protocol,
            )
            .and_then(|comp| comp.check_templates())
            .map_err(|e| {
                Failure::Usage(format!(
                    "scenario `{}` under mode `{}`: {e}",
                    sc.name, m.label
                ))
            })?;
        }
    }
    Ok(Prepared {
        sweep: c.sweep.clone(),
        scenario_paths,
        scenarios,
        modes,
        counter: Counter::new(encoding),
        templates,
        templates_dir: c.templates.clone(),
        protocol,
    })
}

/// The one scenario of a sweep, made once per size; what the sweep decided is said
/// on stderr.
fn swept(scenarios: Vec<Scenario>, spec: &SweepSpec) -> Result<Vec<Scenario>, Failure> {
    let [base] = <[Scenario; 1]>::try_from(scenarios).map_err(|v| {
        Failure::Usage(format!(
            "a sweep takes one scenario; these paths hold {}",
            v.len()
        ))
    })?;
    let pool = sweep::load_pool(&spec.pool)?;
    let (out, notes) = sweep::sweep(&base, &pool, spec).map_err(Failure::Usage)?;
    eprintln!(
        "sweep of {}: sizes {:?}, seed {}, {} addresses to draw from ({} pool tools left out as copies of ones already there)",
        base.name,
        spec.sizes,
        spec.seed,
        notes.available,
        notes.duplicates
    );
    for (from, to) in &notes.renamed {
        eprintln!("  pool server `{from}` is named `{to}`: the scenario has a `{from}`");
    }
    if !notes.over.is_empty() {
        let mut by_size: std::collections::BTreeMap<usize, Vec<String>> = Default::default();
        for (n, q, need) in &notes.over {
            by_size.entry(*n).or_default().push(format!("{q} ({need})"));
        }
        for (n, qs) in by_size {
            eprintln!(
                "  size {n}: {} queries need more addresses than that and get just those: {}",
                qs.len(),
                qs.join(", ")
            );
        }
    }
    Ok(out)
}

/// For `run --resume`: the flags a run's configuration is made of, taken from its
/// `run.json`, except where the command line gives them — in which case they must
/// agree with what was recorded, or the resume is refused naming the flag.
pub fn resume_common(recorded: &Settings, given: &Common) -> Result<Common, Failure> {
    let mut differs = Vec::new();
    if !given.scenarios.is_empty() && given.scenarios != recorded.scenario_paths {
        differs.push(format!(
            "scenarios {:?} (the run used {:?})",
            given.scenarios, recorded.scenario_paths
        ));
    }
    let recorded_modes: Vec<String> = recorded.modes.iter().map(|m| m.label.clone()).collect();
    if !given.modes.is_empty() {
        let now = resolve_modes(&given.modes, |_| None)?;
        let labels: Vec<String> = now.iter().map(|m| m.label.clone()).collect();
        if labels != recorded_modes {
            differs.push(format!(
                "--mode {} (the run used {})",
                labels.join(";"),
                recorded_modes.join(";")
            ));
        }
    }
    if let Some(t) = &given.tokenizer {
        let enc: Encoding = t
            .parse()
            .map_err(|e| Failure::Usage(format!("--tokenizer: {e}")))?;
        if enc.as_str() != recorded.tokenizer {
            differs.push(format!(
                "--tokenizer {} (the run used {})",
                enc.as_str(),
                recorded.tokenizer
            ));
        }
    }
    if given.templates.is_some() && given.templates != recorded.templates_dir {
        differs.push(format!(
            "--templates {:?} (the run used {:?})",
            given.templates, recorded.templates_dir
        ));
    }
    let Some(protocol) = recorded.protocol else {
        return Err(Failure::Usage(
            "cannot resume: the run was made by an older discbench that did not record its protocol settings (start a new run)".into(),
        ));
    };
    differs.extend(protocol.disagreements(&given.protocol_flags()));
    let filter = recorded.filter.clone().unwrap_or_default();
    if !given.filter().is_empty() && given.filter() != filter {
        differs.push(format!(
            "{} (the run kept {})",
            given.filter().describe(),
            if filter.is_empty() {
                "every query".to_string()
            } else {
                filter.describe()
            }
        ));
    }
    if !differs.is_empty() {
        return Err(Failure::Usage(format!(
            "cannot resume: the command line differs from the run's run.json: {}",
            differs.join("; ")
        )));
    }
    Ok(Common {
        scenarios: recorded.scenario_paths.clone(),
        // Labels re-parse to the same modes; the specs are compared by the manifest.
        modes: if recorded_modes.is_empty() {
            Vec::new()
        } else {
            vec![recorded_modes.join(";")]
        },
        tokenizer: Some(recorded.tokenizer.clone()),
        templates: recorded.templates_dir.clone(),
        selection_threshold: None,
        selection_max: None,
        unloaded_calls: None,
        row_limit: None,
        result_max_chars: None,
        result_max_items: None,
        result_budget: None,
        skill_stub_chars: None,
        cache_discount: None,
        sql: Default::default(),
        queries: filter.queries,
        tags: filter.tags,
        recorded_protocol: Some(Box::new(protocol)),
        sweep: recorded.sweep.clone(),
    })
}

/// `--repeat` and `--max-requests` with their defaults, checked.
pub fn repeat_and_requests(
    repeat: Option<usize>,
    max_requests: Option<usize>,
) -> Result<(usize, usize), Failure> {
    let r = repeat.unwrap_or(1);
    let t = max_requests.unwrap_or(DEFAULT_MAX_REQUESTS);
    if r == 0 || t == 0 {
        return Err(Failure::Usage(
            "--repeat and --max-requests must be at least 1".into(),
        ));
    }
    Ok((r, t))
}

/// `--max-infra`, checked before any work starts (none tolerated without it).
pub fn max_infra(flag: Option<&str>) -> Result<Tolerance, Failure> {
    flag.map_or(Ok(Tolerance::default()), |f| {
        Tolerance::parse(f).map_err(|e| Failure::Usage(format!("--max-infra {e}")))
    })
}

/// `--baseline`, read before any work starts.
pub fn load_baseline(path: Option<&Path>) -> Result<Option<Summary>, Failure> {
    path.map(|b| compare::load_side(b).map_err(|e| Failure::Usage(format!("--baseline: {e:#}"))))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_modes_beat_environment() {
        let env = |v: &str| (v == "MCP_TOOL_MODE").then(|| "legacy".to_string());
        let m = resolve_modes(&[], env).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].mcp, crate::strategy::Disclosure::Legacy);
        let m = resolve_modes(&["progressive;legacy".into()], env).unwrap();
        assert_eq!(
            m.iter().map(|m| m.label.as_str()).collect::<Vec<_>>(),
            ["progressive", "legacy"]
        );
        assert_eq!(resolve_modes(&[], |_| None).unwrap().len(), 6);
    }
}
