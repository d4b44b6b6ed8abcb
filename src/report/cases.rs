//! The JUnit cases of a run, read from `outcomes.jsonl` in plan order: a case per
//! query × mode × model (× repeat), each its opening and its body (its cost, and its
//! failure or error). [`Cases::read`] is what takes `junit.xml`'s time, and needs
//! nothing the summary computes, so a run starts it early ([`super::early`]).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::text::{esc, esc_attr, step_text};
use crate::record::manifest::{Interner, PlanOrder, Rank};
use crate::record::spill::{self, Spill};
use crate::record::{reader, OutcomeKey};
use crate::score::Score;

#[derive(Deserialize)]
struct Case {
    scenario: String,
    query_id: String,
    mode: String,
    #[serde(default)]
    mode_spec: String,
    model: String,
    repeat: usize,
    #[serde(default)]
    expected: Value,
    /// Format 3: a long expectation stored in `texts.jsonl`.
    #[serde(default)]
    expected_ref: Option<String>,
    score: Score,
    calls: Vec<Value>,
    infra_error: Option<String>,
    #[serde(default)]
    cost_usd: Option<f64>,
    /// A conversation's turns: its failure names the turns that failed, and why.
    #[serde(default)]
    conversation: Vec<CaseTurn>,
}

#[derive(Deserialize)]
struct CaseTurn {
    turn: usize,
    #[serde(default)]
    failed: Option<String>,
}

/// Every case of a run, each text held once and referred to by number.
pub struct Cases {
    order: PlanOrder,
    /// One entry per case, small whatever the case says: its rank, and its mode as it
    /// ran and its body. Past a million (`spill::limit`) they are sorted in runs on
    /// disk and merged.
    cases: Spill<(Rank, u32, u32)>,
    modes: Interner,
    bodies: Interner,
}

impl Cases {
    /// Reads the cases of `outcomes` (and the expectations `texts.jsonl` beside it
    /// holds).
    pub fn read(outcomes: &Path) -> anyhow::Result<Cases> {
        let dir = (outcomes.parent())
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut order = PlanOrder::for_dir(dir)?;
        let texts = crate::record::texts::TextStore::load(dir)?;
        let limit = spill::limit()?;
        let mut cases: Spill<(Rank, u32, u32)> = Spill::new(dir, limit);
        let (mut modes, mut bodies) = (Interner::default(), Interner::default());
        // Lines that differ from one read before in their repeat index alone share
        // its case: a deterministic model's repeats are parsed once.
        let mut seen: HashMap<[u8; 32], (Rank, u32, u32)> = HashMap::new();
        // Modes are named as they ran ([`crate::record::mode_label`]).
        let mut labels = crate::record::ModeLabels::default();
        reader::read_text(outcomes, |line_no, line| {
            let same = crate::record::repeat_free_hash(line);
            if let Some((h, repeat)) = same {
                if let Some(&(rank, mode, body)) = seen.get(&h) {
                    cases.push((order.with_repeat(&rank, repeat), mode, body));
                    return order.spill_if_full(&mut cases, |c| &c.0);
                }
            }
            let mut c: Case =
                serde_json::from_str(line).map_err(|e| reader::RecordError::Malformed {
                    path: outcomes.to_path_buf(),
                    line: line_no,
                    message: e.to_string(),
                })?;
            if let Some(v) = c
                .expected_ref
                .as_deref()
                .and_then(|h| texts.get(h))
                .and_then(|t| serde_json::from_str(t).ok())
            {
                c.expected = v;
            }
            let rank = order.rank(&OutcomeKey {
                scenario: c.scenario.clone(),
                query_id: c.query_id.clone(),
                mode: c.mode.clone(),
                model: c.model.clone(),
                repeat: c.repeat,
            });
            let case = (
                rank,
                modes.id(labels.label(&c.mode, &c.mode_spec)),
                bodies.id(&case_body(&c)),
            );
            cases.push(case);
            if let Some((h, _)) = same {
                // Bounded too: lines that all differ would otherwise fill it.
                if seen.len() >= limit {
                    seen.clear();
                }
                seen.insert(h, case);
            }
            order.spill_if_full(&mut cases, |c| &c.0)
        })?;
        Ok(Cases {
            order,
            cases,
            modes,
            bodies,
        })
    }

    /// Writes every case to `w`, in plan order (episodes finish in any order).
    pub fn write_to(self, w: &mut impl Write) -> anyhow::Result<()> {
        let Cases {
            order,
            cases,
            modes,
            bodies,
        } = self;
        let key = order.sort_key();
        for case in cases.sorted(|c| key(&c.0))? {
            let (rank, mode, body) = case?;
            w.write_all(head(&order.key(&rank), modes.get(mode)).as_bytes())?;
            w.write_all(bodies.get(body).as_bytes())?;
        }
        Ok(())
    }
}

/// A case's opening: its class name (scenario, mode as it ran, model) and its name
/// (the query, with the repeat after `#` from the second on).
fn head(k: &OutcomeKey, mode: &str) -> String {
    let name = if k.repeat > 0 {
        format!("{}#{}", k.query_id, k.repeat)
    } else {
        k.query_id.clone()
    };
    format!(
        r#"    <testcase classname="{}" name="{}""#,
        esc_attr(&format!("{}.{mode}.{}", k.scenario, k.model)),
        esc_attr(&name)
    )
}

/// The rest of a case after its name: its cost, and its failure or error.
fn case_body(c: &Case) -> String {
    let mut out = String::new();
    // What the case cost (real models with prices): a property, as JUnit readers
    // that show properties expect it.
    let props = c
        .cost_usd
        .map(|usd| {
            format!(
                "\n      <properties><property name=\"cost_usd\" value=\"{usd:.6}\"/></properties>"
            )
        })
        .unwrap_or_default();
    if let Some(e) = &c.infra_error {
        let _ = writeln!(
            out,
            ">{props}\n      <error message=\"{}\"/>\n    </testcase>",
            esc_attr(e)
        );
    } else if c.score.exact {
        if props.is_empty() {
            let _ = writeln!(out, "/>");
        } else {
            let _ = writeln!(out, ">{props}\n    </testcase>");
        }
    } else if !c.conversation.is_empty() {
        // One case per conversation: the turns that failed, each with why.
        let failed: Vec<String> = c
            .conversation
            .iter()
            .filter_map(|t| {
                t.failed
                    .as_ref()
                    .map(|why| format!("turn {}: {why}", t.turn))
            })
            .collect();
        let first = c.conversation.iter().find(|t| t.failed.is_some());
        let _ = writeln!(
            out,
            ">{props}\n      <failure message=\"turn {} of {} failed{}\">{}</failure>\n    </testcase>",
            first.map_or(0, |t| t.turn),
            c.conversation.len(),
            if failed.len() > 1 {
                format!(" (and {} more)", failed.len() - 1)
            } else {
                String::new()
            },
            esc(&failed.join("\n"))
        );
    } else {
        let expected = c.expected.get("calls").cloned().unwrap_or(Value::Null);
        let predicted: Vec<String> = c.score.predicted.iter().map(|a| a.to_string()).collect();
        let actual: Vec<String> = c
            .calls
            .iter()
            .map(|k| {
                format!(
                    "{} {}",
                    k.get("tool").and_then(Value::as_str).unwrap_or(""),
                    k.get("arguments").and_then(Value::as_str).unwrap_or("")
                )
            })
            .collect();
        let want: Vec<String> = expected
            .as_array()
            .map(|a| a.iter().map(step_text).collect())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            ">{props}\n      <failure message=\"expected [{}], got [{}]\">expected calls: {}\nactual calls:\n{}</failure>\n    </testcase>",
            esc_attr(&want.join(", ")),
            esc_attr(&predicted.join(", ")),
            esc(&expected.to_string()),
            esc(&actual.join("\n"))
        );
    }
    out
}
