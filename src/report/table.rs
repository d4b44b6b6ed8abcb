//! The terminal summary: one row per scenario × mode × model, rendered from the same
//! [`Summary`] as every report (one aggregation, one code path): exact-match rate,
//! mean F1, median first-request and billed input tokens, first-request savings against the
//! `legacy` preset (of medians), and the share of outcomes with a protocol error.

use std::fmt::Write;

use crate::analysis::summary::Summary;

/// One row of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub scenario: String,
    pub mode: String,
    pub model: String,
    /// Outcomes scored (infra errors apart).
    pub n: u64,
    pub exact: f64,
    pub f1: f64,
    /// Median first-request request tokens.
    pub first_request: f64,
    /// Median billed input tokens.
    pub billed_input: f64,
    /// Median billed input with every cacheable prefix priced as a cache hit.
    pub billed_cached: f64,
    /// Share of the expected addresses surfaced at all.
    pub recall: Option<f64>,
    /// Mean recall@k of the expected addresses among what was surfaced, where the
    /// mode ranks what it shows.
    pub recall_at_k: Option<f64>,
    /// `1 - median first_request / median first_request(reference)`, same scenario and model.
    pub savings: Option<f64>,
    /// The mode `savings` is against (`legacy` unless the run names another).
    pub reference: String,
    /// The same against `all-tools`, when the run holds it.
    pub savings_all_tools: Option<f64>,
    /// Share of outcomes with at least one protocol error.
    pub protocol_error: f64,
    pub infra_errors: u64,
    /// The provider's prompt cache: (read, predicted, written), when it reported it.
    pub cache: Option<(u64, u64, u64)>,
    /// Conversations: (exact, conversations, the Wilson interval, median billed input
    /// per conversation), when the group holds any.
    pub conversations: Option<(u64, u64, (f64, f64), f64)>,
}

/// One row per group of the summary, in its order.
pub fn rows(s: &Summary) -> Vec<Row> {
    s.groups
        .iter()
        .map(|g| {
            let median = |layer: &str| g.tokens.get(layer).map_or(0.0, |t| t.median);
            Row {
                scenario: g.scenario.clone(),
                mode: g.mode.clone(),
                model: g.model.clone(),
                n: g.n,
                exact: g.exact.rate,
                f1: g.f1,
                first_request: median("first_request"),
                billed_input: median("billed_input"),
                billed_cached: median("billed_cached"),
                recall: g.surfacing.map(|x| x.recall),
                recall_at_k: g.surfacing.and_then(|x| x.recall_at_k),
                savings: g.savings_first_request,
                reference: s.savings_reference().to_string(),
                savings_all_tools: g.savings_all_tools.and_then(|x| x.first_request),
                protocol_error: g.protocol_error.rate,
                infra_errors: g.infra_errors,
                cache: g.cache.map(|c| (c.read, c.predicted, c.written)),
                conversations: g.conversations.as_ref().map(|c| {
                    (
                        c.exact.k,
                        c.n,
                        (c.exact.lo, c.exact.hi),
                        c.billed_input.median,
                    )
                }),
            }
        })
        .collect()
}

/// The table as text.
pub fn render(rows: &[Row]) -> String {
    let vs = format!(
        "vs {}",
        rows.first().map_or("legacy", |r| r.reference.as_str())
    );
    // Against every tool too, when the run measured that.
    let all_tools = rows.iter().any(|r| r.savings_all_tools.is_some());
    let mut headers = vec![
        "scenario",
        "mode",
        "model",
        "n",
        "exact",
        "F1",
        "first-request tok",
        "billed in",
        "cached bill",
        "surfaced",
        "recall@5",
        vs.as_str(),
    ];
    if all_tools {
        headers.push("vs all-tools");
    }
    headers.push("proto err");
    let pct = |s: Option<f64>| {
        s.map(|s| format!("{:+.1}%", -s * 100.0 + 0.0))
            .unwrap_or_else(|| "-".into())
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![
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
                format!("{:.0}", r.first_request),
                format!("{:.0}", r.billed_input),
                format!("{:.0}", r.billed_cached),
                r.recall
                    .map(|x| format!("{:.1}%", x * 100.0))
                    .unwrap_or_else(|| "-".into()),
                r.recall_at_k
                    .map(|x| format!("{:.1}%", x * 100.0))
                    .unwrap_or_else(|| "-".into()),
                pct(r.savings),
            ];
            if all_tools {
                cells.push(pct(r.savings_all_tools));
            }
            cells.push(format!("{:.1}%", r.protocol_error * 100.0));
            cells
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
    for r in rows {
        if let Some((read, predicted, written)) = r.cache {
            let _ = writeln!(
                out,
                "prompt cache, {} {} {}: read {read} tokens where discbench predicts {predicted}, wrote {written}",
                r.scenario, r.mode, r.model
            );
        }
    }
    for r in rows {
        if let Some((k, n, (lo, hi), billed)) = r.conversations {
            let _ = writeln!(
                out,
                "{} · {} · {}: {k} of {n} conversations exact ({:.1}% [{:.1}%, {:.1}%]), billed input {billed:.0} per conversation (the rows above are per turn)",
                r.scenario,
                r.mode,
                r.model,
                if n > 0 { k as f64 / n as f64 * 100.0 } else { 0.0 },
                lo * 100.0,
                hi * 100.0
            );
        }
    }
    if rows.iter().any(|r| r.recall.is_some()) {
        out.push_str(UNRANKED_NOTE);
        out.push('\n');
    }
    out
}

/// What the surfacing columns mean, and a `-` under recall@5.
pub const UNRANKED_NOTE: &str = "surfaced: share of the expected tools shown to the model at all. recall@5 and MRR: over the expected tools the mode ranks (held back by tool search or retrieval, or loaded directly by the selection step), `-` where it ranks none; a tool a meta-tool discloses (discover, a resource read) is shown among all of its server's at once, ranked by nothing";
