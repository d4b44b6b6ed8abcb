//! The terminal summary: one row per scenario × mode × model, with exact-match rate,
//! mean F1, mean first-turn context tokens, mean billed input tokens, first-turn
//! savings against the `legacy` preset, and protocol errors.

use std::fmt::Write;

use crate::runner::Outcome;

/// One row of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub scenario: String,
    pub mode: String,
    pub model: String,
    pub n: usize,
    pub exact: f64,
    pub f1: f64,
    pub first_turn: f64,
    pub billed_input: f64,
    /// `1 - first_turn / first_turn(legacy)` for the same scenario and model.
    pub savings: Option<f64>,
    pub protocol_errors: usize,
    pub infra_errors: usize,
}

/// Rows in first-seen order. Outcomes with an infra error are counted apart and left
/// out of every mean.
pub fn rows(outcomes: &[Outcome]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for o in outcomes {
        let i = match rows
            .iter()
            .position(|r| r.scenario == o.scenario && r.mode == o.mode && r.model == o.model)
        {
            Some(i) => i,
            None => {
                rows.push(Row {
                    scenario: o.scenario.clone(),
                    mode: o.mode.clone(),
                    model: o.model.clone(),
                    n: 0,
                    exact: 0.0,
                    f1: 0.0,
                    first_turn: 0.0,
                    billed_input: 0.0,
                    savings: None,
                    protocol_errors: 0,
                    infra_errors: 0,
                });
                rows.len() - 1
            }
        };
        let r = &mut rows[i];
        if o.infra_error.is_some() {
            r.infra_errors += 1;
            continue;
        }
        r.n += 1;
        r.exact += o.score.exact as u8 as f64;
        r.f1 += o.score.f1;
        r.first_turn += o.tokens.first_turn as f64;
        r.billed_input += o.tokens.billed_input as f64;
        r.protocol_errors += o.protocol.errors();
    }
    for r in &mut rows {
        if r.n > 0 {
            let n = r.n as f64;
            r.exact /= n;
            r.f1 /= n;
            r.first_turn /= n;
            r.billed_input /= n;
        }
    }
    let snapshot = rows.clone();
    for r in &mut rows {
        r.savings = snapshot
            .iter()
            .find(|l| {
                l.scenario == r.scenario
                    && l.model == r.model
                    && l.mode == "legacy"
                    && l.first_turn > 0.0
            })
            .map(|l| 1.0 - r.first_turn / l.first_turn);
    }
    rows
}

/// The table as text.
pub fn render(rows: &[Row]) -> String {
    let headers = [
        "scenario",
        "mode",
        "model",
        "n",
        "exact",
        "F1",
        "first-turn tok",
        "billed in",
        "vs legacy",
        "proto err",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.scenario.clone(),
                r.mode.clone(),
                r.model.clone(),
                if r.infra_errors > 0 {
                    format!("{} (+{} infra)", r.n, r.infra_errors)
                } else {
                    r.n.to_string()
                },
                format!("{:.1}%", r.exact * 100.0),
                format!("{:.3}", r.f1),
                format!("{:.0}", r.first_turn),
                format!("{:.0}", r.billed_input),
                r.savings
                    .map(|s| format!("{:+.1}%", -s * 100.0 + 0.0))
                    .unwrap_or_else(|| "-".into()),
                r.protocol_errors.to_string(),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, row: &[String]| {
        let parts: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i < 3 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", parts.join("  ").trim_end());
    };
    line(
        &mut out,
        &headers.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    );
    line(
        &mut out,
        &widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>(),
    );
    for row in &cells {
        line(&mut out, row);
    }
    out
}
