//! Comparing a run with a baseline (DESIGN §9): each metric of each scenario × mode ×
//! model gets a verdict — improved, regressed, or within noise — against a per-metric
//! threshold (rates in percentage points, tokens in percent), the queries whose result
//! changed are listed, and any regression makes the exit code 1. A group or a query of
//! the baseline that the current run lacks is a regression (dropping a failing query
//! cannot pass the gate); new queries are listed. Groups whose outcomes were all infra
//! errors are not judged (an infra error is never a wrong answer): they get a note.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};

use super::run_dir::summarize_read_only;
use super::summary::{Group, QueryRow, Summary};

/// How a metric is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// A rate; the delta is in percentage points.
    Pp,
    /// A token count; the delta is in percent of the baseline.
    Pct,
}

/// One metric that `compare` judges.
pub struct Metric {
    pub name: &'static str,
    pub unit: Unit,
    pub higher_is_better: bool,
    pub default_threshold: f64,
    get: fn(&Group) -> Option<f64>,
}

/// The judged metrics with their default thresholds (also in the README).
pub const METRICS: [Metric; 14] = [
    Metric {
        name: "exact",
        unit: Unit::Pp,
        higher_is_better: true,
        default_threshold: 1.0,
        get: |g| Some(g.exact.rate),
    },
    Metric {
        name: "f1",
        unit: Unit::Pp,
        higher_is_better: true,
        default_threshold: 1.0,
        get: |g| Some(g.f1),
    },
    Metric {
        name: "first_call_correct",
        unit: Unit::Pp,
        higher_is_better: true,
        default_threshold: 1.0,
        get: |g| Some(g.first_call_correct.rate),
    },
    Metric {
        name: "abstain",
        unit: Unit::Pp,
        higher_is_better: true,
        default_threshold: 1.0,
        get: |g| g.abstain.map(|r| r.rate),
    },
    Metric {
        name: "args_ok",
        unit: Unit::Pp,
        higher_is_better: true,
        default_threshold: 1.0,
        get: |g| g.args_ok.map(|r| r.rate),
    },
    Metric {
        name: "schema_valid",
        unit: Unit::Pp,
        higher_is_better: true,
        default_threshold: 1.0,
        get: |g| g.schema_valid.map(|r| r.rate),
    },
    Metric {
        name: "forbidden_hit",
        unit: Unit::Pp,
        higher_is_better: false,
        default_threshold: 1.0,
        get: |g| Some(g.forbidden_hit.rate),
    },
    Metric {
        name: "protocol_error",
        unit: Unit::Pp,
        higher_is_better: false,
        default_threshold: 1.0,
        get: |g| Some(g.protocol_error.rate),
    },
    Metric {
        name: "first_request",
        unit: Unit::Pct,
        higher_is_better: false,
        default_threshold: 2.0,
        get: |g| Some(g.tokens["first_request"].median),
    },
    Metric {
        name: "billed_input",
        unit: Unit::Pct,
        higher_is_better: false,
        default_threshold: 2.0,
        get: |g| Some(g.tokens["billed_input"].median),
    },
    Metric {
        name: "peak_context",
        unit: Unit::Pct,
        higher_is_better: false,
        default_threshold: 2.0,
        get: |g| Some(g.tokens["peak_context"].median),
    },
    Metric {
        name: "billed_cached",
        unit: Unit::Pct,
        higher_is_better: false,
        default_threshold: 2.0,
        get: |g| g.tokens.get("billed_cached").map(|s| s.median),
    },
    Metric {
        name: "recall_at_k",
        unit: Unit::Pp,
        higher_is_better: true,
        default_threshold: 1.0,
        get: |g| g.surfacing.and_then(|s| s.recall_at_k),
    },
    Metric {
        name: "mrr",
        unit: Unit::Pp,
        higher_is_better: true,
        default_threshold: 1.0,
        get: |g| g.surfacing.and_then(|s| s.mrr),
    },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Improved,
    Regressed,
    WithinNoise,
}

/// One metric of one group, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDelta {
    pub scenario: String,
    pub mode: String,
    pub model: String,
    pub metric: String,
    pub unit: Unit,
    pub baseline: f64,
    pub current: f64,
    /// Points (rates) or percent of the baseline (tokens); positive = went up.
    pub delta: f64,
    pub threshold: f64,
    pub verdict: Verdict,
}

/// A query whose exact-match result differs between the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryChange {
    pub scenario: String,
    pub mode: String,
    pub model: String,
    pub query_id: String,
    pub baseline_exact: f64,
    pub current_exact: f64,
    /// A conversation's turns (from 1) whose exact rate changed, when both sides
    /// have the same turns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<usize>,
}

/// One query of one group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct QueryRef {
    pub scenario: String,
    pub mode: String,
    pub model: String,
    pub query_id: String,
}

impl QueryRef {
    fn of(q: &QueryRow) -> QueryRef {
        QueryRef {
            scenario: q.scenario.clone(),
            mode: q.mode.clone(),
            model: q.model.clone(),
            query_id: q.query_id.clone(),
        }
    }
}

impl std::fmt::Display for QueryRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} / {} / {} / {}",
            self.scenario, self.mode, self.model, self.query_id
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline_run: String,
    pub current_run: String,
    pub metrics: Vec<MetricDelta>,
    pub queries: Vec<QueryChange>,
    /// Groups of the baseline that the current run lacks (counted as regressions).
    pub missing: Vec<String>,
    /// Queries of the baseline that a group of the current run lacks (each counted as
    /// a regression).
    #[serde(default)]
    pub missing_queries: Vec<QueryRef>,
    /// Queries of the current run that the baseline's group lacks (listed, not judged).
    #[serde(default)]
    pub new_queries: Vec<QueryRef>,
    /// What was not judged and why (groups or queries with only infra errors).
    #[serde(default)]
    pub notes: Vec<String>,
    pub regressions: usize,
    /// The current run's infra errors, when it has any: past the tolerance, the
    /// verdict is `failed` whatever the metrics say (see [`super::infra`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra: Option<super::infra::InfraVerdict>,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        self.regressions > 0
    }

    /// Whether the current run holds more infra errors than tolerated: it is not a
    /// measurement, so nothing it says passes the gate.
    pub fn failed(&self) -> bool {
        self.infra.as_ref().is_some_and(|i| i.failed())
    }
}

/// Per-metric thresholds: defaults, changed by `name=value` overrides.
pub fn thresholds(overrides: &[String]) -> Result<BTreeMap<String, f64>, String> {
    let mut t: BTreeMap<String, f64> = METRICS
        .iter()
        .map(|m| (m.name.to_string(), m.default_threshold))
        .collect();
    for o in overrides
        .iter()
        .flat_map(|o| o.split(','))
        .map(str::trim)
        .filter(|o| !o.is_empty())
    {
        let (k, v) = o
            .split_once('=')
            .ok_or_else(|| format!("`{o}`: use metric=value, e.g. exact=2"))?;
        // `first_turn` is the old name of `first_request` (workflows still write it).
        let k = match k.trim() {
            "first_turn" => "first_request",
            k => k,
        };
        if !t.contains_key(k) {
            return Err(format!(
                "unknown metric `{k}`; metrics: {}",
                METRICS
                    .iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let v: f64 = v
            .trim()
            .trim_end_matches(['%'])
            .trim_end_matches("pp")
            .parse()
            .map_err(|_| format!("`{o}`: the threshold must be a number"))?;
        if !(v >= 0.0 && v.is_finite()) {
            return Err(format!(
                "`{o}`: the threshold must be a non-negative number"
            ));
        }
        t.insert(k.to_string(), v);
    }
    Ok(t)
}

/// Reads a baseline or current side: a `summary.json`, or a run directory (its
/// `summary.json`, else its `outcomes.jsonl`, aggregated afresh).
pub fn load_side(path: &Path) -> anyhow::Result<Summary> {
    let file = if path.is_dir() {
        let s = path.join("summary.json");
        if s.is_file() {
            s
        } else if path.join("outcomes.jsonl").is_file() {
            return summarize_read_only(path);
        } else {
            bail!(
                "{} has neither summary.json nor outcomes.jsonl",
                path.display()
            );
        }
    } else if path.is_file() {
        path.to_path_buf()
    } else {
        bail!("{}: no such file or directory", path.display());
    };
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let mut summary: Summary = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a discbench summary.json", file.display()))?;
    summary.upgrade();
    Ok(summary)
}

/// Judges `current` against `baseline`.
pub fn compare(
    baseline: &Summary,
    current: &Summary,
    thresholds: &BTreeMap<String, f64>,
) -> Comparison {
    let mut metrics = Vec::new();
    let mut missing = Vec::new();
    let mut notes = Vec::new();
    // A run that kept some queries (`--query`, `--tag`) is judged on those alone, query
    // by query: its groups' rates and medians are over other queries than the
    // baseline's, and what it left out is not missing.
    let filtered = current.filter.as_deref();
    if let Some(f) = filtered {
        notes.push(format!(
            "the current run kept only some queries ({f}): only those are judged, each by exact match (a query that got worse is a regression); group metrics are not judged"
        ));
    }
    for b in &baseline.groups {
        let Some(c) = find_group(current, b) else {
            if filtered.is_none() {
                missing.push(format!("{} / {} / {}", b.scenario, b.mode, b.model));
            }
            continue;
        };
        if let Some(note) = infra_note(b, c) {
            notes.push(note);
            continue;
        }
        if filtered.is_none() {
            metrics.extend(METRICS.iter().filter_map(|m| judge(m, b, c, thresholds)));
        }
    }
    let (queries, missing_queries, new_queries) =
        compare_queries(baseline, current, filtered.is_some(), &mut notes);
    let worse_queries = if filtered.is_some() {
        queries
            .iter()
            .filter(|q| q.current_exact < q.baseline_exact)
            .count()
    } else {
        0
    };
    let regressions = metrics
        .iter()
        .filter(|m| m.verdict == Verdict::Regressed)
        .count()
        + missing.len()
        + missing_queries.len()
        + worse_queries;
    Comparison {
        baseline_run: baseline.run_id.clone(),
        current_run: current.run_id.clone(),
        metrics,
        queries,
        missing,
        missing_queries,
        new_queries,
        notes,
        regressions,
        infra: None,
    }
}

fn find_group<'a>(s: &'a Summary, g: &Group) -> Option<&'a Group> {
    s.groups
        .iter()
        .find(|c| c.scenario == g.scenario && c.mode == g.mode && c.model == g.model)
}

/// Why a group present on both sides is not judged: no scored outcome on one side
/// (every outcome an infra error), so its rates and token medians mean nothing.
fn infra_note(b: &Group, c: &Group) -> Option<String> {
    let side = match (b.n == 0, c.n == 0) {
        (false, false) => return None,
        (true, true) => "both runs",
        (true, false) => "the baseline",
        (false, true) => "the current run",
    };
    Some(format!(
        "{} / {} / {}: not judged, every outcome in {side} was an infra error (baseline {} infra, current {} infra)",
        b.scenario, b.mode, b.model, b.infra_errors, c.infra_errors
    ))
}

/// One metric of one group; `None` when either side lacks it (e.g. no outcome with
/// a schema to check).
fn judge(
    m: &Metric,
    b: &Group,
    c: &Group,
    thresholds: &BTreeMap<String, f64>,
) -> Option<MetricDelta> {
    let (bv, cv) = ((m.get)(b)?, (m.get)(c)?);
    if !(bv.is_finite() && cv.is_finite()) {
        return None;
    }
    let delta = match m.unit {
        Unit::Pp => (cv - bv) * 100.0,
        Unit::Pct if bv == 0.0 => {
            if cv == 0.0 {
                0.0
            } else {
                100.0
            }
        }
        Unit::Pct => (cv - bv) / bv * 100.0,
    };
    let threshold = thresholds
        .get(m.name)
        .copied()
        .unwrap_or(m.default_threshold);
    let better = if m.higher_is_better { delta } else { -delta };
    let verdict = if better < -threshold - 1e-9 {
        Verdict::Regressed
    } else if better > threshold + 1e-9 {
        Verdict::Improved
    } else {
        Verdict::WithinNoise
    };
    Some(MetricDelta {
        scenario: b.scenario.clone(),
        mode: b.mode.clone(),
        model: b.model.clone(),
        metric: m.name.to_string(),
        unit: m.unit,
        baseline: bv,
        current: cv,
        delta,
        threshold,
        verdict,
    })
}

/// Per query of the groups both runs hold: the exact-match changes, the baseline's
/// queries the current run lacks, and the current run's queries the baseline lacks.
/// A query whose outcomes were all infra errors (on either side) is noted, not judged.
fn compare_queries(
    baseline: &Summary,
    current: &Summary,
    filtered: bool,
    notes: &mut Vec<String>,
) -> (Vec<QueryChange>, Vec<QueryRef>, Vec<QueryRef>) {
    let key = |q: &QueryRow| {
        (
            q.scenario.clone(),
            q.mode.clone(),
            q.model.clone(),
            q.query_id.clone(),
        )
    };
    let cur: BTreeMap<_, &QueryRow> = current.queries.iter().map(|q| (key(q), q)).collect();
    let base: BTreeMap<_, &QueryRow> = baseline.queries.iter().map(|q| (key(q), q)).collect();
    // Only groups judged above: present on both sides, each with scored outcomes.
    let judged = |q: &QueryRow| {
        let b = baseline
            .groups
            .iter()
            .find(|g| g.scenario == q.scenario && g.mode == q.mode && g.model == q.model);
        match b.and_then(|b| find_group(current, b).map(|c| (b, c))) {
            Some((b, c)) => b.n > 0 && c.n > 0,
            None => false,
        }
    };
    let mut changes = Vec::new();
    let mut missing = Vec::new();
    let mut added = Vec::new();
    for (k, b) in &base {
        if !judged(b) {
            continue;
        }
        let Some(c) = cur.get(k) else {
            if b.n > 0 && !filtered {
                missing.push(QueryRef::of(b));
            }
            continue;
        };
        if b.n == 0 || c.n == 0 {
            let side = if c.n == 0 {
                "the current run"
            } else {
                "the baseline"
            };
            notes.push(format!(
                "{}: not judged, every outcome in {side} was an infra error",
                QueryRef::of(b)
            ));
            continue;
        }
        let (be, ce) = (b.exact as f64 / b.n as f64, c.exact as f64 / c.n as f64);
        if (be - ce).abs() > 1e-12 {
            changes.push(QueryChange {
                scenario: b.scenario.clone(),
                mode: b.mode.clone(),
                model: b.model.clone(),
                query_id: b.query_id.clone(),
                baseline_exact: be,
                current_exact: ce,
                turns: changed_turns(b, c),
            });
        }
    }
    for (k, c) in &cur {
        if c.n > 0 && !base.contains_key(k) && judged(c) {
            added.push(QueryRef::of(c));
        }
    }
    (changes, missing, added)
}

/// The turns of a conversation whose exact rate differs between two runs (none when
/// either is a single query or their turns differ in number).
fn changed_turns(b: &QueryRow, c: &QueryRow) -> Vec<usize> {
    if b.turns.is_empty() || b.turns.len() != c.turns.len() {
        return Vec::new();
    }
    let rate = |q: &QueryRow, t: usize| q.turns[t] as f64 / q.n as f64;
    (0..b.turns.len())
        .filter(|&t| (rate(b, t) - rate(c, t)).abs() > 1e-12)
        .map(|t| t + 1)
        .collect()
}

fn fmt_value(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Pp => format!("{:.1}%", v * 100.0),
        Unit::Pct => format!("{v:.0}"),
    }
}

fn fmt_delta(unit: Unit, d: f64) -> String {
    match unit {
        Unit::Pp => format!("{:+.1} pp", d + 0.0),
        Unit::Pct => format!("{:+.1}%", d + 0.0),
    }
}

/// The verdict as Markdown: regressions and improvements first, then changed queries.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let head = if c.failed() {
        "FAILED"
    } else if c.regressed() {
        "REGRESSED"
    } else {
        "no regression"
    };
    let _ = writeln!(
        out,
        "## Comparison with baseline `{}`: {head}\n",
        c.baseline_run
    );
    if let Some(i) = &c.infra {
        let lead = if i.failed() {
            "The current run is not a measurement (exit 3):"
        } else {
            "Tolerated:"
        };
        let _ = writeln!(out, "{lead} {}\n", i.message().replace("\n  ", "\n- "));
    }
    let within = c
        .metrics
        .iter()
        .filter(|m| m.verdict == Verdict::WithinNoise)
        .count();
    let _ = writeln!(
        out,
        "{} regressed, {} improved, {within} within noise (thresholds: rates in percentage points, tokens in percent of the baseline).\n",
        c.regressions,
        c.metrics.iter().filter(|m| m.verdict == Verdict::Improved).count()
    );
    for m in &c.missing {
        let _ = writeln!(out, "- missing from the current run: {m}");
    }
    for q in &c.missing_queries {
        let _ = writeln!(
            out,
            "- query missing from the current run (regression): {q}"
        );
    }
    for q in &c.new_queries {
        let _ = writeln!(out, "- new query, not in the baseline: {q}");
    }
    for n in &c.notes {
        let _ = writeln!(out, "- note: {n}");
    }
    if !(c.missing.is_empty()
        && c.missing_queries.is_empty()
        && c.new_queries.is_empty()
        && c.notes.is_empty())
    {
        out.push('\n');
    }
    let notable: Vec<&MetricDelta> = c
        .metrics
        .iter()
        .filter(|m| m.verdict != Verdict::WithinNoise)
        .collect();
    if !notable.is_empty() {
        let _ = writeln!(out, "| verdict | scenario | mode | model | metric | baseline | current | change | threshold |");
        let _ = writeln!(out, "|---|---|---|---|---|---:|---:|---:|---:|");
        let mut sorted = notable;
        sorted.sort_by_key(|m| m.verdict != Verdict::Regressed);
        for m in sorted {
            let v = match m.verdict {
                Verdict::Regressed => "regressed",
                Verdict::Improved => "improved",
                Verdict::WithinNoise => "within noise",
            };
            let _ = writeln!(
                out,
                "| {v} | {} | {} | {} | {} | {} | {} | {} | {} |",
                m.scenario,
                m.mode,
                m.model,
                m.metric,
                fmt_value(m.unit, m.baseline),
                fmt_value(m.unit, m.current),
                fmt_delta(m.unit, m.delta),
                fmt_delta(m.unit, m.threshold).trim_start_matches('+')
            );
        }
        out.push('\n');
    }
    if c.queries.is_empty() {
        let _ = writeln!(out, "No query changed its result.");
    } else {
        let _ = writeln!(out, "Queries whose result changed:\n");
        let _ = writeln!(
            out,
            "| scenario | mode | model | query | baseline exact | current exact |"
        );
        let _ = writeln!(out, "|---|---|---|---|---:|---:|");
        for q in &c.queries {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:.0}% | {:.0}% |",
                q.scenario,
                q.mode,
                q.model,
                match q.turns.as_slice() {
                    [] => q.query_id.clone(),
                    ts => format!(
                        "{} (turn {})",
                        q.query_id,
                        ts.iter()
                            .map(|t| t.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
                q.baseline_exact * 100.0,
                q.current_exact * 100.0
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_conversation_names_the_turns_that_changed() {
        let row = |exact: u64, turns: Vec<u64>| QueryRow {
            scenario: "s".into(),
            mode: "m".into(),
            model: "o".into(),
            query_id: "c".into(),
            n: 4,
            exact,
            first_request: 100.0,
            infra: 0,
            turns,
        };
        assert_eq!(
            changed_turns(&row(4, vec![4, 4, 4]), &row(2, vec![4, 3, 2])),
            vec![2, 3]
        );
        // A single query names no turn; turns that differ in number are not compared.
        assert!(changed_turns(&row(4, vec![]), &row(2, vec![])).is_empty());
        assert!(changed_turns(&row(4, vec![4, 4]), &row(2, vec![4, 4, 2])).is_empty());
    }

    #[test]
    fn thresholds_parse_and_reject_unknown_metrics() {
        let t = thresholds(&["exact=2.5,first_request=5%".into()]).unwrap();
        assert_eq!(t["exact"], 2.5);
        assert_eq!(t["first_request"], 5.0);
        assert_eq!(t["billed_input"], 2.0);
        assert!(thresholds(&["speed=1".into()])
            .unwrap_err()
            .contains("unknown metric"));
        assert!(thresholds(&["exact=-1".into()]).is_err());
    }
}
