//! The command line: parses arguments, validates them into a configuration, and
//! dispatches. Exit codes are in [`crate::exit`].

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::compare;
use crate::error::InputErrors;
use crate::exit;
use crate::report::{self, table};
use crate::runner::events::{Collector, JsonlWriter, Progress};
use crate::runner::{self, Listener, RunConfig, DEFAULT_MAX_TURNS};
use crate::scenario::{self, FileKind, Scenario};
use crate::strategy::mode::{Mode, PRESETS};
use crate::strategy::{Composite, SelectionConfig, Templates};
use crate::tokens::{Counter, Encoding};

#[derive(Parser, Debug)]
#[command(
    name = "discbench",
    version,
    about = "Measure how LLM agents should be shown large tool catalogs"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run scenarios under modes and models; write outcomes and print a summary.
    Run(RunArgs),
    /// Print the static token ledger of each scenario under each mode (no model).
    Tokens(TokensArgs),
    /// Check scenario, catalog-fragment and MCP-dump files without running anything.
    Validate(ValidateArgs),
    /// Re-render every report of a run from its outcomes.jsonl (no model is called).
    Report(ReportArgs),
    /// Judge a run against a baseline; exit 1 on any regression.
    Compare(CompareArgs),
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The run directory (holding outcomes.jsonl).
    pub run_dir: PathBuf,
    /// A baseline run directory or summary.json to compare with.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Per-metric thresholds, e.g. `exact=2,first_turn=5` (points for rates, percent for tokens).
    #[arg(long = "threshold", value_name = "METRIC=VALUE")]
    pub thresholds: Vec<String>,
}

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Baseline: a run directory or a summary.json.
    pub baseline: PathBuf,
    /// Current: a run directory or a summary.json.
    pub current: PathBuf,
    /// Per-metric thresholds, e.g. `exact=2,first_turn=5` (points for rates, percent for tokens).
    #[arg(long = "threshold", value_name = "METRIC=VALUE")]
    pub thresholds: Vec<String>,
    /// Where to write the verdict as Markdown [default: CURRENT/compare.md when CURRENT is a directory]
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct Common {
    /// Scenario files or directories [default: scenarios]
    pub scenarios: Vec<PathBuf>,
    /// Modes: presets (progressive, legacy, inline) or specs like
    /// `skills=inline,mcp=legacy,selection=off`; repeat or separate with `;`.
    /// Default: all presets, or the mode set by *_TOOL_MODE variables.
    #[arg(long = "mode", value_name = "MODE")]
    pub modes: Vec<String>,
    /// Tokenizer: o200k_base or cl100k_base.
    #[arg(long, default_value = "o200k_base")]
    pub tokenizer: String,
    /// A directory of prompt templates overriding the built-in ones, file by file.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// The selection step runs when a mode offers more tools than this.
    #[arg(long, default_value_t = 12)]
    pub selection_threshold: usize,
    /// The selection step keeps at most this many tools.
    #[arg(long, default_value_t = 6)]
    pub selection_max: usize,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: Common,
    /// Models: oracle, lexical (repeatable) [default: oracle and lexical]
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// Times each query is run per mode and model.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Agent-loop rounds per query (a scenario's agent.max_turns wins).
    #[arg(long, default_value_t = DEFAULT_MAX_TURNS)]
    pub max_turns: usize,
    /// Where run directories are made.
    #[arg(long, default_value = "reports")]
    pub out: PathBuf,
    /// The run's id (its directory name) [default: a UTC timestamp]
    #[arg(long)]
    pub run_id: Option<String>,
    /// Never draw a progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Compare the run with this baseline (run directory or summary.json); exit 1 on regression.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Per-metric thresholds for --baseline, e.g. `exact=2,first_turn=5`.
    #[arg(long = "threshold", value_name = "METRIC=VALUE")]
    pub thresholds: Vec<String>,
}

#[derive(Args, Debug)]
pub struct TokensArgs {
    #[command(flatten)]
    pub common: Common,
    /// Print the exact context each mode renders: system prompt and tool definitions.
    #[arg(long)]
    pub show: bool,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Files or directories [default: scenarios]
    pub paths: Vec<PathBuf>,
}

/// What went wrong, by exit code.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{0}")]
    Input(#[from] InputErrors),
    #[error("{0}")]
    Usage(String),
    #[error("{0:#}")]
    Infra(anyhow::Error),
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Input(_) | Failure::Usage(_) => exit::BAD_INPUT,
            Failure::Infra(_) => exit::INFRA,
        }
    }
}

/// Facts about where we run, passed in rather than looked up deep inside.
#[derive(Debug, Clone, Copy)]
pub struct Environment {
    pub stderr_is_terminal: bool,
    pub is_ci: bool,
}

impl Environment {
    pub fn detect() -> Environment {
        Environment {
            stderr_is_terminal: std::io::stderr().is_terminal(),
            is_ci: std::env::var_os("CI")
                .is_some_and(|v| !v.is_empty() && v != "false" && v != "0"),
        }
    }
}

/// Runs a parsed command; returns the exit code.
pub fn dispatch(cli: Cli, env: Environment, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    match cli.command {
        Command::Run(a) => run(a, env, out),
        Command::Tokens(a) => tokens(a, out),
        Command::Validate(a) => validate(a, out),
        Command::Report(a) => report_cmd(a, out),
        Command::Compare(a) => compare_cmd(a, out),
    }
}

fn default_paths(p: &[PathBuf]) -> Vec<PathBuf> {
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
        match Mode::from_env(get_env).map_err(Failure::Usage)? {
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

struct Prepared {
    scenarios: Vec<Scenario>,
    modes: Vec<Mode>,
    counter: Counter,
    templates: Templates,
    selection: SelectionConfig,
}

fn prepare(c: &Common) -> Result<Prepared, Failure> {
    let encoding: Encoding = c
        .tokenizer
        .parse()
        .map_err(|e| Failure::Usage(format!("--tokenizer: {e}")))?;
    let modes = resolve_modes(&c.modes, |v| std::env::var(v).ok())?;
    let templates = Templates::with_overrides(c.templates.as_deref())
        .map_err(|e| Failure::Usage(format!("--templates: {e}")))?;
    if c.selection_max == 0 {
        return Err(Failure::Usage("--selection-max must be at least 1".into()));
    }
    let scenarios = scenario::load_all(&default_paths(&c.scenarios))?;
    let selection = SelectionConfig {
        threshold: c.selection_threshold,
        max: c.selection_max,
    };
    // Render every scenario under every mode now: a template override that fails to
    // render is bad input, found before a run directory is made.
    for sc in &scenarios {
        for m in &modes {
            Composite::new(
                &sc.catalog,
                sc.agent.instructions.as_deref(),
                m.with_overrides(&sc.agent.modes),
                &templates,
                selection,
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
        scenarios,
        modes,
        counter: Counter::new(encoding),
        templates,
        selection,
    })
}

fn run(a: RunArgs, env: Environment, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let p = prepare(&a.common)?;
    let thresholds = compare::thresholds(&a.thresholds)
        .map_err(|e| Failure::Usage(format!("--threshold: {e}")))?;
    let baseline = match &a.baseline {
        Some(b) => {
            Some(compare::load_side(b).map_err(|e| Failure::Usage(format!("--baseline: {e:#}")))?)
        }
        None => None,
    };
    let models = if a.models.is_empty() {
        vec!["oracle".to_string(), "lexical".to_string()]
    } else {
        a.models.clone()
    };
    for m in &models {
        crate::model::build(m).map_err(|e| Failure::Usage(format!("--model: {e}")))?;
    }
    if a.repeat == 0 || a.max_turns == 0 {
        return Err(Failure::Usage(
            "--repeat and --max-turns must be at least 1".into(),
        ));
    }
    let run_id = a.run_id.clone().unwrap_or_else(timestamp_id);
    if run_id.is_empty() || run_id.contains(['/', '\\']) || run_id.starts_with('.') {
        return Err(Failure::Usage(format!(
            "--run-id `{run_id}` must be a plain directory name"
        )));
    }
    let dir = a.out.join(&run_id);
    if dir.join("outcomes.jsonl").exists() {
        return Err(Failure::Usage(format!(
            "{} already holds outcomes; pick another --run-id",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create {}", dir.display()))
        .map_err(Failure::Infra)?;
    let cfg = RunConfig {
        run_id: run_id.clone(),
        modes: p.modes,
        models,
        repeat: a.repeat,
        max_turns: a.max_turns,
        selection: p.selection,
        templates: p.templates,
    };
    let mut writer = JsonlWriter::open(&dir.join("outcomes.jsonl")).map_err(Failure::Infra)?;
    let mut progress = Progress::new(!a.no_progress && env.stderr_is_terminal && !env.is_ci);
    let mut collector = Collector::default();
    {
        let mut listeners: [&mut dyn Listener; 3] = [&mut writer, &mut progress, &mut collector];
        runner::run(&p.scenarios, &cfg, &p.counter, &mut listeners).map_err(Failure::Infra)?;
    }
    let rows = table::rows(&collector.outcomes);
    let text = table::render(&rows);
    writeln!(out, "{text}").map_err(|e| Failure::Infra(e.into()))?;
    writeln!(
        out,
        "{} outcomes written to {}",
        collector.outcomes.len(),
        dir.join("outcomes.jsonl").display()
    )
    .map_err(|e| Failure::Infra(e.into()))?;
    finish_report(&dir, baseline.as_ref(), &thresholds, out)
}

/// Aggregates a run directory, writes every report file, and judges it against the
/// baseline when there is one. Returns the exit code.
fn finish_report(
    dir: &std::path::Path,
    baseline: Option<&crate::aggregate::Summary>,
    thresholds: &std::collections::BTreeMap<String, f64>,
    out: &mut dyn std::io::Write,
) -> Result<i32, Failure> {
    let summary = report::summarize_run(dir).map_err(report_failure)?;
    let comparison = baseline.map(|b| compare::compare(b, &summary, thresholds));
    report::write_all(dir, &summary, comparison.as_ref()).map_err(report_failure)?;
    let io = |e: std::io::Error| Failure::Infra(e.into());
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
fn report_failure(e: anyhow::Error) -> Failure {
    if e.downcast_ref::<crate::aggregate::MalformedOutcomes>()
        .is_some()
    {
        Failure::Usage(format!("{e:#}"))
    } else {
        Failure::Infra(e)
    }
}

fn report_cmd(a: ReportArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let thresholds = compare::thresholds(&a.thresholds)
        .map_err(|e| Failure::Usage(format!("--threshold: {e}")))?;
    if !a.run_dir.join("outcomes.jsonl").is_file() {
        return Err(Failure::Usage(format!(
            "{} holds no outcomes.jsonl",
            a.run_dir.display()
        )));
    }
    let baseline = match &a.baseline {
        Some(b) => {
            Some(compare::load_side(b).map_err(|e| Failure::Usage(format!("--baseline: {e:#}")))?)
        }
        None => None,
    };
    finish_report(&a.run_dir, baseline.as_ref(), &thresholds, out)
}

fn compare_cmd(a: CompareArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let thresholds = compare::thresholds(&a.thresholds)
        .map_err(|e| Failure::Usage(format!("--threshold: {e}")))?;
    let base =
        compare::load_side(&a.baseline).map_err(|e| Failure::Usage(format!("baseline: {e:#}")))?;
    let cur =
        compare::load_side(&a.current).map_err(|e| Failure::Usage(format!("current: {e:#}")))?;
    let c = compare::compare(&base, &cur, &thresholds);
    let md = compare::markdown(&c);
    let target = a
        .out
        .clone()
        .or_else(|| a.current.is_dir().then(|| a.current.join("compare.md")));
    if let Some(t) = target {
        report::write_atomic(&t, md.as_bytes()).map_err(Failure::Infra)?;
    }
    out.write_all(md.as_bytes())
        .map_err(|e| Failure::Infra(e.into()))?;
    Ok(if c.regressed() {
        exit::REGRESSION
    } else {
        exit::OK
    })
}

fn tokens(a: TokensArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let p = prepare(&a.common)?;
    let text = tokens_report(
        &p.scenarios,
        &p.modes,
        &p.counter,
        &p.templates,
        p.selection,
        a.show,
    )
    .map_err(Failure::Usage)?;
    out.write_all(text.as_bytes())
        .map_err(|e| Failure::Infra(e.into()))?;
    Ok(exit::OK)
}

/// The static ledger: per scenario and mode, the system prompt and the tool
/// definitions as rendered, before any model acts (and before any selection step).
pub fn tokens_report(
    scenarios: &[Scenario],
    modes: &[Mode],
    counter: &Counter,
    templates: &Templates,
    selection: SelectionConfig,
    show: bool,
) -> Result<String, String> {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "tokenizer: {}", counter.encoding().as_str());
    let _ = writeln!(
        s,
        "{:<24} {:<16} {:>6} {:>8} {:>10} {:>8}  selection",
        "scenario", "mode", "tools", "system", "tool_defs", "total"
    );
    for sc in scenarios {
        for m in modes {
            let mode = m.with_overrides(&sc.agent.modes);
            let comp = Composite::new(
                &sc.catalog,
                sc.agent.instructions.as_deref(),
                mode,
                templates,
                selection,
            )?;
            let sys = counter.count(comp.system());
            let defs = counter.tools(comp.all_tools());
            let _ = writeln!(
                s,
                "{:<24} {:<16} {:>6} {:>8} {:>10} {:>8}  {}",
                sc.name,
                m.label,
                comp.all_tools().len(),
                sys,
                defs,
                sys + defs,
                if comp.selection_applies() {
                    "runs"
                } else {
                    "-"
                }
            );
            if show {
                let _ = writeln!(s, "--- system prompt ({sys} tokens) ---\n{}", comp.system());
                for t in comp.all_tools() {
                    let _ = writeln!(
                        s,
                        "--- tool {} ({} tokens) ---\n{}",
                        t.name,
                        counter.tool(t),
                        t.wire_json()
                    );
                }
                let _ = writeln!(s, "--- end of {} / {} ---", sc.name, m.label);
            }
        }
    }
    Ok(s)
}

fn validate(a: ValidateArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in default_paths(&a.paths) {
        match scenario::expand(&p) {
            Ok(mut f) => files.append(&mut f),
            Err(e) => errors.push(e),
        }
    }
    for f in &files {
        match scenario::validate_file(f) {
            Ok(kind) => {
                let what = match kind {
                    FileKind::Scenario => "scenario",
                    FileKind::CatalogFragment => "catalog fragment",
                    FileKind::McpDump => "MCP tools/list dump",
                };
                writeln!(out, "ok   {} ({what})", f.display())
                    .map_err(|e| Failure::Infra(e.into()))?;
            }
            Err(mut e) => errors.append(&mut e.0),
        }
    }
    if errors.is_empty() {
        Ok(exit::OK)
    } else {
        Err(Failure::Input(InputErrors(errors)))
    }
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
        assert_eq!(resolve_modes(&[], |_| None).unwrap().len(), 3);
    }
}
