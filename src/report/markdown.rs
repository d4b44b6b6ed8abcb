//! `summary.md`: a compact Markdown summary, fit for `$GITHUB_STEP_SUMMARY` — one
//! table per scenario, the paired tests, and the verdict against a baseline.

use std::fmt::Write;
use std::path::Path;

use super::exporter::{write_atomic, Exporter, ReportCx};
use super::text::pct;
use crate::analysis::compare::Comparison;
use crate::analysis::summary::Summary;

pub struct SummaryMd;

impl Exporter for SummaryMd {
    fn name(&self) -> &'static str {
        "summary.md"
    }

    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        write_atomic(
            &dir.join("summary.md"),
            render(cx.summary, cx.comparison).as_bytes(),
        )
    }
}

/// The Markdown text.
pub fn render(s: &Summary, comparison: Option<&Comparison>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# discbench run `{}`\n", s.run_id);
    let _ = writeln!(out, "{} outcomes, tokenizer `{}`. Rates with Wilson 95% intervals; tokens are medians per outcome.\n", s.outcomes, s.tokenizer);
    if let Some((done, planned)) = s.incomplete() {
        let _ = writeln!(out, "**Incomplete run: {done} of {planned} work items have an outcome**; the numbers below cover those alone (`discbench run --resume RUN_DIR` finishes it).\n");
    }
    if let Some(c) = comparison {
        out.push_str(&crate::analysis::compare::markdown(c));
        out.push('\n');
    }
    out.push_str(&spend_md(s));
    // Sorted before dedup: one section per scenario even if the groups are not in
    // scenario order (e.g. a summary.json written by an older version).
    let mut scenarios: Vec<&str> = s.groups.iter().map(|g| g.scenario.as_str()).collect();
    scenarios.sort_unstable();
    scenarios.dedup();
    for sc in scenarios {
        let _ = writeln!(out, "## {sc}\n");
        let all_tools = s
            .groups
            .iter()
            .any(|g| g.scenario == sc && g.savings_all_tools.is_some());
        let _ = writeln!(
            out,
            "| mode | model | n | exact [95% CI] | F1 | first-request tok | billed in | billed, prefix cached | surfaced / recall@5 / MRR | vs {} (first request) |{} protocol errors | pass@k / pass^k |",
            s.savings_reference(),
            if all_tools { " vs all-tools (first request) |" } else { "" }
        );
        let _ = writeln!(
            out,
            "|---|---|---:|---|---:|---:|---:|---:|---:|---:|{}---:|---|",
            if all_tools { "---:|" } else { "" }
        );
        for g in s.groups.iter().filter(|g| g.scenario == sc) {
            let infra = if g.infra_errors > 0 {
                format!(" (+{} infra)", g.infra_errors)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {} | {} | {}{} | {} [{}, {}] | {:.3} | {:.0} | {:.0} | {:.0} | {} | {} |{} {} | k={}: {} / {} |",
                g.mode,
                g.model,
                g.n,
                infra,
                pct(g.exact.rate),
                pct(g.exact.lo),
                pct(g.exact.hi),
                g.f1,
                g.tokens["first_request"].median,
                g.tokens["billed_input"].median,
                g.tokens.get("billed_cached").map_or(0.0, |t| t.median),
                g.surfacing
                    .map(|x| format!(
                        "{} / {} / {}",
                        pct(x.recall),
                        x.recall_at_k
                            .map(|r| match x.ranked_n {
                                Some(k) if k < x.n => format!("{} ({k} of {})", pct(r), x.n),
                                _ => pct(r),
                            })
                            .unwrap_or_else(|| "-".into()),
                        x.mrr
                            .map(|m| format!("{m:.3}"))
                            .unwrap_or_else(|| "-".into())
                    ))
                    .unwrap_or_else(|| "-".into()),
                g.savings_first_request
                    .map(|x| format!("{:+.1}%", -x * 100.0 + 0.0))
                    .unwrap_or_else(|| "-".into()),
                if all_tools {
                    format!(
                        " {} |",
                        g.savings_all_tools
                            .and_then(|x| x.first_request)
                            .map(|x| format!("{:+.1}%", -x * 100.0 + 0.0))
                            .unwrap_or_else(|| "-".into())
                    )
                } else {
                    String::new()
                },
                pct(g.protocol_error.rate),
                g.pass.k,
                pct(g.pass.pass_at_k),
                pct(g.pass.pass_hat_k),
            );
        }
        if s.groups
            .iter()
            .filter(|g| g.scenario == sc)
            .any(|g| g.surfacing.is_some())
        {
            let _ = writeln!(out, "\n{}", super::table::UNRANKED_NOTE);
        }
        out.push('\n');
        out.push_str(&conversations_md(s, sc));
        let pairs: Vec<_> = s.pairs.iter().filter(|p| p.scenario == sc).collect();
        if !pairs.is_empty() {
            let _ = writeln!(out, "Paired McNemar tests of exact match:\n");
            let _ = writeln!(
                out,
                "| model | mode A | mode B | pairs | A only | B only | p |"
            );
            let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|");
            for p in pairs {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {:.4} |",
                    p.model, p.mode_a, p.mode_b, p.n, p.a_only, p.b_only, p.p_value
                );
            }
            out.push('\n');
        }
    }
    out
}

/// A scenario's conversations: the table above counts turns; this one counts
/// conversations (exact when every turn is), their billed input, and where the
/// failing ones first failed. Empty when the scenario holds none.
fn conversations_md(s: &Summary, sc: &str) -> String {
    let rows: Vec<_> = s
        .groups
        .iter()
        .filter(|g| g.scenario == sc)
        .filter_map(|g| g.conversations.as_ref().map(|c| (g, c)))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("Conversations (the table above counts turns):\n\n| mode | model | conversations | exact [95% CI] | billed in per conversation | billed, prefix cached | first failing turn |\n|---|---|---:|---|---:|---:|---|\n");
    for (g, c) in rows {
        let failing = if c.first_failing.is_empty() {
            "-".to_string()
        } else {
            c.first_failing
                .iter()
                .map(|(t, n)| format!("{t}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} [{}, {}] | {:.0} | {:.0} | {failing} |",
            g.mode,
            g.model,
            c.n,
            pct(c.exact.rate),
            pct(c.exact.lo),
            pct(c.exact.hi),
            c.billed_input.median,
            c.billed_cached.median
        );
    }
    out.push('\n');
    out
}

/// Provider usage beside discbench's count, and cost, for groups that have them
/// (real models); empty for mock runs.
pub fn spend_md(s: &Summary) -> String {
    let rows: Vec<&crate::analysis::summary::Group> = s
        .groups
        .iter()
        .filter(|g| g.provider_usage.is_some() || g.cost_usd.is_some())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Provider usage and cost\n\nInput tokens as the provider billed them beside discbench's tiktoken count of the same requests (the ratio is the gap between the two), and cost in US dollars where the model has prices.\n\n| scenario | mode | model | outcomes | provider input | counted input | ratio | output | cached input | cost (total) | cost per outcome |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for g in rows {
        let u = g.provider_usage;
        let c = g.cost_usd;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            g.scenario,
            g.mode,
            g.model,
            u.map(|u| u.outcomes).or(c.map(|c| c.outcomes)).unwrap_or(0),
            u.map(|u| u.input.to_string()).unwrap_or_else(|| "-".into()),
            u.map(|u| u.counted_input.to_string())
                .unwrap_or_else(|| "-".into()),
            u.map(|u| format!("{:.3}", u.ratio))
                .unwrap_or_else(|| "-".into()),
            u.map(|u| u.output.to_string())
                .unwrap_or_else(|| "-".into()),
            u.map(|u| u.cached_input.to_string())
                .unwrap_or_else(|| "-".into()),
            c.map(|c| format!("${:.4}", c.total))
                .unwrap_or_else(|| "-".into()),
            c.map(|c| format!("${:.5}", c.mean))
                .unwrap_or_else(|| "-".into()),
        );
    }
    out.push('\n');
    out.push_str(&cache_md(s));
    out
}

/// The provider's prompt cache beside discbench's prediction, for groups whose
/// provider reported cache figures; empty otherwise.
pub fn cache_md(s: &Summary) -> String {
    let rows: Vec<_> = s.groups.iter().filter(|g| g.cache.is_some()).collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::from("## Prompt cache: the provider's figures beside discbench's prediction\n\nOver the agent-loop requests whose usage reported cache figures: what the provider read from its cache and wrote to it (its tokenizer), beside the cacheable prefix discbench predicts (tiktoken), and those requests priced both ways (US dollars).\n\n| scenario | mode | model | requests | cache read | predicted cached | read / predicted | cache written | cost (provider's cache) | cost (predicted cache) |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for g in rows {
        let k = g.cache.expect("filtered");
        let money = |v: Option<f64>| v.map(|v| format!("${v:.4}")).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.3} | {} | {} | {} |",
            g.scenario,
            g.mode,
            g.model,
            k.requests,
            k.read,
            k.predicted,
            k.ratio,
            k.written,
            money(k.cost_reported),
            money(k.cost_predicted),
        );
    }
    out.push('\n');
    out
}
