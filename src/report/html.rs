//! `index.html`: one self-contained page (inline CSS, SVG, script and data; no network
//! request of any kind) with an overview, a section per scenario with sortable tables,
//! the charts and each mode's contexts, and an outcome explorer: every outcome of the
//! run in one table that filters and sorts in the browser, each row opening its
//! drill-down — turn by turn what entered the context with its tokens, and the calls
//! scored against the expectation. The explorer's data is built by
//! [`super::explorer`] and embedded compressed, so the page stays light at any number
//! of outcomes. Opening it with `#selftest` makes the page exercise its tables and the
//! explorer and report the result in `#selftest` (used by the browser test).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::explorer::Explorer;
use super::exporter::{write_atomic, Exporter, ReportCx};
use super::plots::{chart_list, scenarios};
use super::text::esc;
use super::text::pct;
use crate::analysis::compare::{Comparison, Verdict};
use crate::analysis::summary::{Group, Summary};

pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "index.html"
    }

    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        let page = render(cx.summary, cx.outcomes, cx.comparison, &dir.join("plots"))?;
        write_atomic(&dir.join("index.html"), page.as_bytes())
    }
}

/// The page's style and script, kept as files beside the code that fills them.
const CSS: &str = include_str!("../../assets/report/page.css");
const JS: &str = include_str!("../../assets/report/page.js");

fn num_td(v: f64, text: String) -> String {
    format!("<td data-v=\"{v}\">{}</td>", esc(&text))
}

fn group_row(g: &Group, with_scenario: bool) -> String {
    let mut r = String::from("<tr>");
    if with_scenario {
        let _ = write!(r, "<td class=l>{}</td>", esc(&g.scenario));
    }
    let _ = write!(
        r,
        "<td class=l>{}</td><td class=l>{}</td>",
        esc(&g.mode),
        esc(&g.model)
    );
    r += &num_td(
        g.n as f64,
        if g.infra_errors > 0 {
            format!("{} (+{} infra)", g.n, g.infra_errors)
        } else {
            g.n.to_string()
        },
    );
    r += &num_td(
        g.exact.rate,
        format!(
            "{} [{}, {}]",
            pct(g.exact.rate),
            pct(g.exact.lo),
            pct(g.exact.hi)
        ),
    );
    r += &num_td(g.f1, format!("{:.3}", g.f1));
    r += &num_td(g.first_call_correct.rate, pct(g.first_call_correct.rate));
    let abstain = g.abstain.map(|a| a.rate).unwrap_or(-1.0);
    r += &num_td(
        abstain,
        g.abstain.map(|a| pct(a.rate)).unwrap_or_else(|| "-".into()),
    );
    r += &num_td(
        g.tokens["first_turn"].median,
        format!("{:.0}", g.tokens["first_turn"].median),
    );
    r += &num_td(
        g.tokens["billed_input"].median,
        format!("{:.0}", g.tokens["billed_input"].median),
    );
    r += &num_td(
        g.tokens["billed_input"].p95,
        format!("{:.0}", g.tokens["billed_input"].p95),
    );
    let cached = g.tokens.get("billed_cached").map_or(0.0, |t| t.median);
    r += &num_td(cached, format!("{cached:.0}"));
    let sf = g.surfacing;
    r += &num_td(
        sf.map_or(-1.0, |x| x.recall),
        sf.map(|x| pct(x.recall)).unwrap_or_else(|| "-".into()),
    );
    r += &num_td(
        sf.and_then(|x| x.recall_at_k).unwrap_or(-1.0),
        sf.and_then(|x| {
            x.recall_at_k.map(|r| match x.ranked_n {
                Some(k) if k < x.n => format!("{} ({k} of {})", pct(r), x.n),
                _ => pct(r),
            })
        })
        .unwrap_or_else(|| "-".into()),
    );
    r += &num_td(
        sf.and_then(|x| x.mrr).unwrap_or(-1.0),
        sf.and_then(|x| x.mrr)
            .map(|m| format!("{m:.3}"))
            .unwrap_or_else(|| "-".into()),
    );
    let s = g.savings_first_turn.unwrap_or(0.0);
    r += &num_td(
        -s,
        g.savings_first_turn
            .map(|x| format!("{:+.1}%", -x * 100.0 + 0.0))
            .unwrap_or_else(|| "-".into()),
    );
    r += &num_td(g.protocol_error.rate, pct(g.protocol_error.rate));
    r += "</tr>";
    r
}

fn group_table(groups: &[&Group], with_scenario: bool) -> String {
    let mut t = String::from("<table class=sortable><thead><tr>");
    if with_scenario {
        t += "<th class=l>scenario</th>";
    }
    t += "<th class=l>mode</th><th class=l>model</th>";
    for h in [
        "n",
        "exact [95% CI]",
        "F1",
        "first call",
        "abstain",
        "first-turn tok",
        "billed in (median)",
        "billed in (p95)",
        "billed, prefix cached",
        "surfaced",
        "recall@5 (ranked)",
        "MRR (ranked)",
        "first turn vs legacy",
        "protocol errors",
    ] {
        let _ = write!(t, "<th data-numeric=1>{h}</th>");
    }
    t += "</tr></thead><tbody>";
    for g in groups {
        t += &group_row(g, with_scenario);
    }
    t += "</tbody></table>";
    if groups.iter().any(|g| g.surfacing.is_some()) {
        let _ = write!(t, "<p class=note>{}</p>", esc(super::table::UNRANKED_NOTE));
    }
    t
}

fn comparison_html(c: &Comparison) -> String {
    let mut s = format!(
        "<section id=comparison><h2>Comparison with baseline <code>{}</code>: <span class={}>{}</span></h2>",
        esc(&c.baseline_run),
        if c.regressed() { "bad" } else { "good" },
        if c.regressed() { "regressed" } else { "no regression" }
    );
    s += "<table class=sortable><thead><tr><th class=l>verdict</th><th class=l>scenario</th><th class=l>mode</th><th class=l>model</th><th class=l>metric</th><th data-numeric=1>baseline</th><th data-numeric=1>current</th><th data-numeric=1>change</th><th data-numeric=1>threshold</th></tr></thead><tbody>";
    for m in c
        .metrics
        .iter()
        .filter(|m| m.verdict != Verdict::WithinNoise)
    {
        let (cls, v) = if m.verdict == Verdict::Regressed {
            ("bad", "regressed")
        } else {
            ("good", "improved")
        };
        let _ = write!(
            s,
            "<tr><td class='l {cls}'>{v}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td data-v={}>{:.3}</td><td data-v={}>{:.3}</td><td data-v={}>{:+.2}</td><td data-v={}>{:.2}</td></tr>",
            esc(&m.scenario), esc(&m.mode), esc(&m.model), esc(&m.metric), m.baseline, m.baseline, m.current, m.current, m.delta, m.delta, m.threshold, m.threshold
        );
    }
    s += "</tbody></table>";
    let lists: [(&str, Vec<String>); 4] = [
        (
            "Groups missing from the current run (regressions)",
            c.missing.clone(),
        ),
        (
            "Queries missing from the current run (regressions)",
            c.missing_queries.iter().map(|q| q.to_string()).collect(),
        ),
        (
            "New queries, not in the baseline",
            c.new_queries.iter().map(|q| q.to_string()).collect(),
        ),
        ("Not judged", c.notes.clone()),
    ];
    for (title, items) in lists {
        if items.is_empty() {
            continue;
        }
        let _ = write!(s, "<h3>{title}</h3><ul>");
        for i in items {
            let _ = write!(s, "<li>{}</li>", esc(&i));
        }
        s += "</ul>";
    }
    if !c.queries.is_empty() {
        s += "<h3>Queries whose result changed</h3><ul>";
        for q in &c.queries {
            let _ = write!(
                s,
                "<li>{} / {} / {} / <b>{}</b>: {:.0}% → {:.0}%</li>",
                esc(&q.scenario),
                esc(&q.mode),
                esc(&q.model),
                esc(&q.query_id),
                q.baseline_exact * 100.0,
                q.current_exact * 100.0
            );
        }
        s += "</ul>";
    }
    s += "</section>";
    s
}

/// The outcome explorer: its filters, an empty table the script fills, and a pager.
fn explorer_section(x: &Explorer) -> String {
    format!(
        "<section id=outcomes><h2>Outcomes</h2><p class=muted>{} outcomes ({} distinct drill-downs). Filter, click a header to sort, click a row for its drill-down: turn by turn what entered the context and its tokens, and the calls as scored.</p>\
<div class=controls><label>scenario <select name=sc><option value=''>all</option></select></label>\
<label>mode <select name=mode><option value=''>all</option></select></label>\
<label>model <select name=model><option value=''>all</option></select></label>\
<label>result <select name=result><option value=''>all</option><option value=1>exact</option><option value=0>not exact</option><option value=2>infra error</option></select></label>\
<label>repeat <select name=repeat><option value=''>all</option></select></label>\
<label>query <input type=search name=text placeholder='id, text or tag'></label>\
<label>rows per page <select name=size><option>50</option><option selected>100</option><option>500</option></select></label></div>\
<div class=pager><button type=button class=prev>‹ previous</button><button type=button class=next>next ›</button><span class=count></span><span class='status muted'>expanding the outcome table…</span></div>\
<table><thead></thead><tbody></tbody></table></section>",
        x.outcomes, x.details
    )
}

/// The whole page.
pub fn render(
    s: &Summary,
    outcomes: &Path,
    comparison: Option<&Comparison>,
    plots: &Path,
) -> anyhow::Result<String> {
    let explorer = Explorer::build(outcomes)?;
    let charts: BTreeMap<String, (String, String)> = chart_list(s)
        .into_iter()
        .filter_map(|(stem, title)| {
            let svg = std::fs::read_to_string(plots.join(format!("{stem}.svg"))).ok()?;
            Some((stem, (title, svg)))
        })
        .collect();
    let figure = |stem: &str| -> String {
        charts
            .get(stem)
            .map(|(title, svg)| {
                let svg = svg.trim_start_matches(|c| c != '<').to_string();
                let svg = match svg.find("<svg") {
                    Some(i) => svg[i..].to_string(),
                    None => svg,
                };
                format!(
                    "<figure>{svg}<figcaption>{}</figcaption></figure>",
                    esc(title)
                )
            })
            .unwrap_or_default()
    };
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width, initial-scale=1'><title>discbench {}</title><style>{CSS}</style><script>window.__errors=[];window.addEventListener('error',function(e){{window.__errors.push(String(e.message))}});</script></head><body>",
        esc(&s.run_id)
    );
    let _ = write!(
        page,
        "<header><h1>discbench run {}</h1><p>{} outcomes · tokenizer {} · rates with Wilson 95% intervals, tokens as medians per outcome</p></header><nav><a href='#overview'>overview</a>",
        esc(&s.run_id),
        s.outcomes,
        esc(&s.tokenizer)
    );
    let names = scenarios(s);
    for sc in &names {
        let _ = write!(
            page,
            "<a href='#s-{}'>{}</a>",
            super::plots::slug(sc),
            esc(sc)
        );
    }
    page += "<a href='#outcomes'>outcomes</a></nav><main><pre id=selftest data-result='not run' style='display:none'></pre>";
    if let Some((done, planned)) = s.incomplete() {
        let _ = write!(
            page,
            "<p class=bad id=incomplete><b>Incomplete run:</b> {done} of {planned} work items have an outcome; the numbers below cover those alone. <code>discbench run --resume RUN_DIR</code> finishes it.</p>"
        );
    }
    if let Some(c) = comparison {
        page += &comparison_html(c);
    }
    page += "<section id=overview><h2>Overview</h2>";
    let all: Vec<&Group> = s.groups.iter().collect();
    page += &group_table(&all, true);
    let spend = super::markdown::spend_md(s);
    if !spend.is_empty() {
        page += "<h3>Provider usage and cost</h3><pre>";
        page += &esc(&spend);
        page += "</pre>";
    }
    let sweeps = super::plots::sweep_charts(s);
    if !sweeps.is_empty() {
        page += "<h3>Catalog-size sweep: the same queries at every size</h3><div class=charts>";
        for (stem, ..) in &sweeps {
            page += &figure(stem);
        }
        page += "</div>";
    }
    page += "</section>";
    for sc in &names {
        let sl = super::plots::slug(sc);
        let _ = write!(page, "<section id='s-{sl}'><h2>{}</h2>", esc(sc));
        let groups: Vec<&Group> = s.groups.iter().filter(|g| &g.scenario == sc).collect();
        page += &group_table(&groups, false);
        page += "<div class=charts>";
        for kind in ["tokens", "accuracy", "pareto"] {
            page += &figure(&format!("{kind}-{sl}"));
        }
        page += "</div>";
        let pairs: Vec<_> = s.pairs.iter().filter(|p| &p.scenario == sc).collect();
        if !pairs.is_empty() {
            page += "<h3>Paired McNemar tests (exact match)</h3><table class=sortable><thead><tr><th class=l>model</th><th class=l>mode A</th><th class=l>mode B</th><th data-numeric=1>pairs</th><th data-numeric=1>A only</th><th data-numeric=1>B only</th><th data-numeric=1>p</th></tr></thead><tbody>";
            for p in pairs {
                let _ = write!(
                    page,
                    "<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{:.4}</td></tr>",
                    esc(&p.model), esc(&p.mode_a), esc(&p.mode_b), p.n, p.n, p.a_only, p.a_only, p.b_only, p.b_only, p.p_value, p.p_value
                );
            }
            page += "</tbody></table>";
        }
        let _ = write!(
            page,
            "<h3>Contexts and outcomes</h3><details class=contexts data-scenario='{0}'><summary>each mode's system prompt and first-turn tool definitions</summary><div></div></details><p><button type=button data-show-scenario='{0}'>show this scenario's outcomes</button></p></section>",
            esc(sc)
        );
    }
    page += &explorer_section(&explorer);
    page += &explorer.html();
    let _ = writeln!(page, "</main><script>{JS}</script></body></html>");
    Ok(page)
}
