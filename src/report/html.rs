//! `index.html`: one self-contained page (inline CSS, SVG, script and data; no network
//! request of any kind) that leads with the answer and keeps the detail below it:
//!
//! 1. per scenario (a switch when there are several), accuracy against billed input
//!    tokens — one point per mode × model with its Wilson interval, drawn as SVG here
//!    ([`super::plots::answer`]), hover or focus a point for its numbers — beside a
//!    compact modes × models matrix of one metric the reader picks;
//! 2. the groups table (every scenario × mode × model), sortable by any column,
//!    filterable by scenario, mode and model, with a sticky header; the columns a
//!    reader rarely needs are folded behind a "more columns" toggle so that the table
//!    fits a 1,400-pixel window;
//! 3. the comparison with a baseline, when there is one (its verdict is also a line at
//!    the top);
//! 4. a section per scenario with the plotters charts (the same SVG as `plots/`, shown
//!    at their natural size so that no chart text is under 12 px), the McNemar tests
//!    and each mode's contexts;
//! 5. the outcome explorer: every outcome of the run in one table that filters and
//!    sorts in the browser, each row opening its drill-down — turn by turn what entered
//!    the context with its tokens, and the calls scored against the expectation.
//!
//! The explorer's data is built by [`super::explorer`] and embedded compressed, so the
//! page stays light at any number of outcomes; the groups' numbers the matrix shows are
//! embedded as JSON (`#d-groups`, a few kilobytes). Opening the page with `#selftest`
//! makes it exercise its layout, chart, tables and explorer and report the result in
//! `#selftest` (used by the browser test).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::explorer::Explorer;
use super::exporter::{write_atomic, Exporter, ReportCx};
use super::plots::{answer, chart_list, scenarios};
use super::text::{esc, esc_attr, pct};
use crate::analysis::compare::{Comparison, Verdict};
use crate::analysis::summary::{Group, Stat, Summary};

pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "index.html"
    }

    fn write(&self, cx: &ReportCx, dir: &Path) -> anyhow::Result<()> {
        let explorer = cx.started.explorer.take(cx.outcomes)?;
        let page = render(cx.summary, explorer, cx.comparison, &dir.join("plots"))?;
        write_atomic(&dir.join("index.html"), page.as_bytes())
    }
}

/// The page's style and script, kept as files beside the code that fills them.
const CSS: &str = include_str!("../../assets/report/page.css");
const JS: &str = include_str!("../../assets/report/page.js");

fn num_td(v: f64, text: String) -> String {
    format!("<td data-v=\"{v}\">{}</td>", esc(&text))
}

/// A column folded behind the "more columns" toggle.
fn more_td(v: f64, text: String) -> String {
    format!("<td class=x data-v=\"{v}\">{}</td>", esc(&text))
}

/// The groups table's numeric columns after scenario, mode and model: header, whether
/// it is folded behind "more columns", and what it holds (the header's tooltip). What a
/// reader compares modes by stays in view; spreads, the cached bill, ranked surfacing,
/// the change against legacy and protocol errors are one click away.
const GROUP_COLUMNS: [(&str, bool, &str); 17] = [
    ("n", false, "outcomes scored (infra errors apart)"),
    (
        "exact [95% CI]",
        false,
        "exact match with its Wilson 95% interval",
    ),
    (
        "F1",
        false,
        "mean F1 of the calls made against the calls expected",
    ),
    ("first call", false, "share whose first call was right"),
    (
        "abstain",
        false,
        "share of no-call queries answered with no call",
    ),
    (
        "first-request tok",
        false,
        "median tokens of the first request",
    ),
    (
        "first request vs legacy",
        true,
        "median first-request tokens against the legacy preset",
    ),
    (
        "billed in",
        false,
        "median billed input tokens per outcome (all requests)",
    ),
    (
        "billed in p95",
        true,
        "95th percentile of billed input tokens",
    ),
    (
        "billed, prefix cached",
        true,
        "median billed input with every cacheable prefix a cache hit",
    ),
    (
        "billed vs legacy",
        true,
        "median billed input against the legacy preset",
    ),
    (
        "surfaced",
        false,
        "share of the expected tools shown to the model at all",
    ),
    (
        "recall@5 (ranked)",
        true,
        "recall@5 over the expected tools the mode ranks",
    ),
    (
        "MRR (ranked)",
        true,
        "mean reciprocal rank over the expected tools the mode ranks",
    ),
    (
        "first request vs all-tools",
        true,
        "median first-request tokens against all-tools (every definition, no selection step), when the run holds it",
    ),
    (
        "billed vs all-tools",
        true,
        "median billed input against all-tools, when the run holds it",
    ),
    (
        "protocol errors",
        true,
        "share of outcomes with a protocol error",
    ),
];

fn change(s: Option<f64>) -> (f64, String) {
    (
        s.map_or(0.0, |x| -x),
        s.map(|x| format!("{:+.1}%", -x * 100.0 + 0.0))
            .unwrap_or_else(|| "-".into()),
    )
}

fn group_row(g: &Group) -> String {
    let mut r = format!(
        "<tr data-sc='{}' data-mode='{}' data-model='{}'><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td>",
        esc_attr(&g.scenario),
        esc_attr(&g.mode),
        esc_attr(&g.model),
        esc(&g.scenario),
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
    let tok = |layer: &str| {
        g.tokens.get(layer).copied().unwrap_or(Stat {
            median: 0.0,
            p95: 0.0,
        })
    };
    r += &num_td(
        tok("first_request").median,
        format!("{:.0}", tok("first_request").median),
    );
    let (v, t) = change(g.savings_first_request);
    r += &more_td(v, t);
    r += &num_td(
        tok("billed_input").median,
        format!("{:.0}", tok("billed_input").median),
    );
    r += &more_td(
        tok("billed_input").p95,
        format!("{:.0}", tok("billed_input").p95),
    );
    let cached = tok("billed_cached").median;
    r += &more_td(cached, format!("{cached:.0}"));
    let (v, t) = change(g.savings_billed);
    r += &more_td(v, t);
    let sf = g.surfacing;
    r += &num_td(
        sf.map_or(-1.0, |x| x.recall),
        sf.map(|x| pct(x.recall)).unwrap_or_else(|| "-".into()),
    );
    r += &more_td(
        sf.and_then(|x| x.recall_at_k).unwrap_or(-1.0),
        sf.and_then(|x| {
            x.recall_at_k.map(|r| match x.ranked_n {
                Some(k) if k < x.n => format!("{} ({k} of {})", pct(r), x.n),
                _ => pct(r),
            })
        })
        .unwrap_or_else(|| "-".into()),
    );
    r += &more_td(
        sf.and_then(|x| x.mrr).unwrap_or(-1.0),
        sf.and_then(|x| x.mrr)
            .map(|m| format!("{m:.3}"))
            .unwrap_or_else(|| "-".into()),
    );
    let (v, t) = change(g.savings_all_tools.and_then(|s| s.first_request));
    r += &more_td(v, t);
    let (v, t) = change(g.savings_all_tools.and_then(|s| s.billed));
    r += &more_td(v, t);
    r += &more_td(g.protocol_error.rate, pct(g.protocol_error.rate));
    r += "</tr>";
    r
}

/// The groups table with its filters (filled by the page's script from the rows'
/// `data-*`), the "more columns" toggle and a count of the rows shown.
fn group_table(groups: &[&Group], reference: &str) -> String {
    let folded: Vec<&str> = GROUP_COLUMNS.iter().filter(|c| c.1).map(|c| c.0).collect();
    let mut t = format!(
        "<div class=controls id=group-filters><label>scenario <select name=g-sc><option value=''>all</option></select></label>\
<label>mode <select name=g-mode><option value=''>all</option></select></label>\
<label>model <select name=g-model><option value=''>all</option></select></label>\
<label title='{}'><input type=checkbox name=g-more> more columns</label><span class='count muted'>{} groups</span></div>",
        esc_attr(&folded.join(", ")),
        groups.len()
    );
    t += "<table class='sortable groups'><thead><tr><th class=l>scenario</th><th class=l>mode</th><th class=l>model</th>";
    for (h, more, title) in GROUP_COLUMNS {
        // Savings are against the run's reference mode (legacy unless it names another).
        let (h, title) = if h.ends_with("vs legacy") {
            (
                h.replace("legacy", reference),
                title.replace("the legacy preset", reference),
            )
        } else {
            (h.to_string(), title.to_string())
        };
        let _ = write!(
            t,
            "<th data-numeric=1{} title='{}'>{}</th>",
            if more { " class=x" } else { "" },
            esc_attr(&title),
            esc(&h)
        );
    }
    t += "</tr></thead><tbody>";
    for g in groups {
        t += &group_row(g);
    }
    t += "</tbody></table>";
    if groups.iter().any(|g| g.surfacing.is_some()) {
        let _ = write!(t, "<p class=note>{}</p>", esc(super::table::UNRANKED_NOTE));
    }
    t
}

/// A metric the matrix can show: key, label, how it reads (`rate` a share with its
/// interval, `pct` a share, `f3` three decimals, `tok` tokens, `delta` a signed change,
/// `usd` dollars), whether higher is better, and its value(s) for a group.
type MetricDef = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    fn(&Group) -> Option<Vec<f64>>,
);

fn rate(r: &crate::analysis::stats::Rate) -> Option<Vec<f64>> {
    (r.n > 0).then(|| vec![r.rate, r.lo, r.hi])
}

fn median(g: &Group, layer: &str) -> Option<Vec<f64>> {
    (g.n > 0)
        .then(|| g.tokens.get(layer).map(|t| vec![t.median]))
        .flatten()
}

const METRICS: [MetricDef; 21] = [
    ("exact", "exact match [95% CI]", "rate", true, |g| {
        rate(&g.exact)
    }),
    ("f1", "F1 (mean)", "f3", true, |g| {
        (g.n > 0).then(|| vec![g.f1])
    }),
    ("first_call", "first call correct", "rate", true, |g| {
        rate(&g.first_call_correct)
    }),
    (
        "billed",
        "billed input tokens (median)",
        "tok",
        false,
        |g| median(g, "billed_input"),
    ),
    (
        "billed_p95",
        "billed input tokens (p95)",
        "tok",
        false,
        |g| {
            (g.n > 0)
                .then(|| g.tokens.get("billed_input").map(|t| vec![t.p95]))
                .flatten()
        },
    ),
    (
        "first_request",
        "first-request tokens (median)",
        "tok",
        false,
        |g| median(g, "first_request"),
    ),
    (
        "cached",
        "billed input, prefix cached (median)",
        "tok",
        false,
        |g| median(g, "billed_cached"),
    ),
    ("peak", "peak context (median)", "tok", false, |g| {
        median(g, "peak_context")
    }),
    (
        "first_vs_legacy",
        "first request vs legacy",
        "delta",
        false,
        |g| g.savings_first_request.map(|s| vec![-s]),
    ),
    (
        "billed_vs_legacy",
        "billed input vs legacy",
        "delta",
        false,
        |g| g.savings_billed.map(|s| vec![-s]),
    ),
    (
        "first_vs_all_tools",
        "first request vs all-tools",
        "delta",
        false,
        |g| {
            g.savings_all_tools
                .and_then(|s| s.first_request)
                .map(|s| vec![-s])
        },
    ),
    (
        "billed_vs_all_tools",
        "billed input vs all-tools",
        "delta",
        false,
        |g| g.savings_all_tools.and_then(|s| s.billed).map(|s| vec![-s]),
    ),
    (
        "surfaced",
        "surfaced (expected tools shown)",
        "pct",
        true,
        |g| g.surfacing.map(|x| vec![x.recall]),
    ),
    ("recall5", "recall@5 (ranked)", "pct", true, |g| {
        g.surfacing.and_then(|x| x.recall_at_k).map(|r| vec![r])
    }),
    ("mrr", "MRR (ranked)", "f3", true, |g| {
        g.surfacing.and_then(|x| x.mrr).map(|r| vec![r])
    }),
    ("protocol", "protocol errors", "rate", false, |g| {
        rate(&g.protocol_error)
    }),
    ("forbidden", "forbidden hits", "rate", false, |g| {
        rate(&g.forbidden_hit)
    }),
    ("abstain", "abstention right", "rate", true, |g| {
        g.abstain.as_ref().and_then(rate)
    }),
    ("args", "arguments valid", "rate", true, |g| {
        g.args_ok.as_ref().and_then(rate)
    }),
    ("pass_k", "pass@k over repeats", "pct", true, |g| {
        (g.pass.k > 1).then(|| vec![g.pass.pass_at_k])
    }),
    ("cost", "cost per outcome (USD)", "usd", false, |g| {
        g.cost_usd.map(|c| vec![c.mean])
    }),
];

/// The groups' numbers for the matrix, as JSON the page's script reads: the metrics
/// some group has a value for, each mode's colour, and per group its values.
fn groups_json(s: &Summary, modes: &[String]) -> String {
    let metrics: Vec<&MetricDef> = METRICS
        .iter()
        .filter(|m| s.groups.iter().any(|g| (m.4)(g).is_some()))
        .collect();
    let groups: Vec<serde_json::Value> = s
        .groups
        .iter()
        .map(|g| {
            let v: serde_json::Map<String, serde_json::Value> = metrics
                .iter()
                .filter_map(|m| Some((m.0.to_string(), serde_json::json!((m.4)(g)?))))
                .collect();
            serde_json::json!({"s": g.scenario, "m": g.mode, "md": g.model, "n": g.n, "ie": g.infra_errors, "v": v})
        })
        .collect();
    let colors: serde_json::Map<String, serde_json::Value> = modes
        .iter()
        .map(|m| (m.clone(), answer::mode_color(modes, m).into()))
        .collect();
    let k = s.groups.iter().map(|g| g.pass.k).max().unwrap_or(0);
    serde_json::json!({
        "metrics": metrics.iter().map(|m| serde_json::json!([m.0, m.1.replace("pass@k", &format!("pass@{k}")).replace("vs legacy", &format!("vs {}", s.savings_reference())), m.2, m.3])).collect::<Vec<_>>(),
        "colors": colors,
        "groups": groups,
    })
    .to_string()
    // Inside <script>, "</" would end the element.
    .replace("</", "<\\/")
}

/// The answer: per scenario, the chart of accuracy against billed input beside the
/// metric matrix; a switch between scenarios when there are several (the first shown).
fn answer_section(s: &Summary, names: &[String], modes: &[String], models: &[String]) -> String {
    let shown: Vec<&String> = names
        .iter()
        .filter(|sc| s.groups.iter().any(|g| &g.scenario == *sc && g.n > 0))
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    let mut h = String::from("<section id=answer><div class=answer-head><h2>Accuracy against cost");
    if let [only] = shown[..] {
        let _ = write!(h, ": {}", esc(only));
    }
    h += "</h2>";
    if shown.len() > 1 {
        h += "<div class=tabs role=tablist aria-label=scenario>";
        for (i, sc) in shown.iter().enumerate() {
            let _ = write!(
                h,
                "<button type=button role=tab data-scenario='{}' aria-selected={}>{}</button>",
                esc_attr(sc),
                i == 0,
                esc(sc)
            );
        }
        h += "</div>";
    }
    h += "</div>";
    for (i, sc) in shown.iter().enumerate() {
        let groups: Vec<&Group> = s.groups.iter().filter(|g| &g.scenario == *sc).collect();
        let _ = write!(
            h,
            "<div class=panel role=tabpanel data-scenario='{}'{}><div class=answer-grid><figure class=answer-fig>{}{}<figcaption>{}: one point per mode × model — exact match with its Wilson 95% interval against the median billed input tokens per outcome (all turns). Hover or focus a point for its numbers.</figcaption></figure>\
<div class=matrix-box><div class=controls><label>matrix of <select name=metric></select></label></div><table class=matrix data-scenario='{}'></table><p class=muted>Modes down, models across; shading from worst (white) to best (green) in this scenario, the best mode per model in bold.</p></div></div></div>",
            esc_attr(sc),
            if i == 0 { "" } else { " hidden" },
            answer::svg(sc, &groups, modes, models),
            answer::legend(&groups, modes, models),
            esc(sc),
            esc_attr(sc)
        );
    }
    h += "<div class=tip id=tip role=tooltip hidden></div></section>";
    h
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
                "<li>{} / {} / {} / <b>{}</b>{}: {:.0}% → {:.0}%</li>",
                esc(&q.scenario),
                esc(&q.mode),
                esc(&q.model),
                esc(&q.query_id),
                match q.turns.as_slice() {
                    [] => String::new(),
                    ts => format!(
                        " (turn {})",
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
        s += "</ul>";
    }
    s += "</section>";
    s
}

/// The outcome explorer: its filters, an empty table the script fills, and a pager.
/// A scenario's conversations: for each group, conversations exact with their
/// interval, turns exact at each turn index (with the conversations that reached it),
/// and the turn each failing conversation first failed at.
fn conversations_html(groups: &[&Group]) -> String {
    let last = (groups.iter())
        .filter_map(|g| g.conversations.as_ref())
        .flat_map(|c| c.by_turn.iter().map(|p| p.turn))
        .max()
        .unwrap_or(1);
    let mut h = String::from(
        "<h3>Conversations: exact by turn, and where they first fail</h3><p class=muted>A conversation is exact when every turn is. Each turn column: turns exact at that turn, of the conversations that reached it. First failing: how many conversations first failed at each turn.</p><table class=sortable><thead><tr><th class=l>mode · model</th><th data-numeric=1>conversations</th><th data-numeric=1>exact</th>",
    );
    for t in 1..=last {
        let _ = write!(h, "<th data-numeric=1>turn {t}</th>");
    }
    h += "<th class=l>first failing (turn: conversations)</th></tr></thead><tbody>";
    for g in groups {
        let Some(c) = &g.conversations else { continue };
        let _ = write!(
            h,
            "<tr><td class=l>{} · {}</td><td data-v={}>{}</td><td data-v={}>{:.1}% [{:.1}, {:.1}]</td>",
            esc(&g.mode),
            esc(&g.model),
            c.n,
            c.n,
            c.exact.rate,
            c.exact.rate * 100.0,
            c.exact.lo * 100.0,
            c.exact.hi * 100.0
        );
        for t in 1..=last {
            match c.by_turn.iter().find(|p| p.turn == t) {
                Some(p) => {
                    let _ = write!(
                        h,
                        "<td data-v={}>{:.1}% (n={})</td>",
                        p.exact.rate,
                        p.exact.rate * 100.0,
                        p.n
                    );
                }
                None => h += "<td data-v=-1>—</td>",
            }
        }
        let failing: Vec<String> = (c.first_failing.iter())
            .map(|(t, k)| format!("{t}: {k}"))
            .collect();
        let _ = write!(
            h,
            "<td class=l>{}</td></tr>",
            if failing.is_empty() {
                "none".to_string()
            } else {
                failing.join(", ")
            }
        );
    }
    h += "</tbody></table>";
    h
}

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
    explorer: Explorer,
    comparison: Option<&Comparison>,
    plots: &Path,
) -> anyhow::Result<String> {
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
    let names = scenarios(s);
    let (modes, models) = (super::plots::modes(s), super::plots::models(s));
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width, initial-scale=1'><title>discbench {}</title><style>{CSS}</style><script>window.__errors=[];window.addEventListener('error',function(e){{window.__errors.push(String(e.message))}});</script></head><body>",
        esc(&s.run_id)
    );
    let _ = write!(
        page,
        "<header><h1>discbench run {}</h1><p>{} outcomes · tokenizer {} · rates with Wilson 95% intervals, tokens as medians per outcome</p></header><nav><a href='#answer'>answer</a><a href='#overview'>groups</a>",
        esc(&s.run_id),
        s.outcomes,
        esc(&s.tokenizer)
    );
    if comparison.is_some() {
        page += "<a href='#comparison'>comparison</a>";
    }
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
    // A comparison's verdict is one line at the top; its table comes after the groups.
    if let Some(c) = comparison {
        let _ = write!(
            page,
            "<p class=verdict>Against baseline <code>{}</code>: <a href='#comparison' class={}>{}</a></p>",
            esc(&c.baseline_run),
            if c.regressed() { "bad" } else { "good" },
            if c.regressed() {
                format!("regressed ({} regression(s))", c.regressions)
            } else {
                "no regression".to_string()
            }
        );
    }
    page += &answer_section(s, &names, &modes, &models);
    let _ = write!(
        page,
        "<script type=application/json id=d-groups>{}</script>",
        groups_json(s, &modes)
    );
    page += "<section id=overview><h2>Groups: every scenario × mode × model</h2>";
    let all: Vec<&Group> = s.groups.iter().collect();
    page += &group_table(&all, s.savings_reference());
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
    if let Some(c) = comparison {
        page += &comparison_html(c);
    }
    for sc in &names {
        let sl = super::plots::slug(sc);
        let _ = write!(
            page,
            "<section id='s-{sl}'><h2>{}</h2><p><button type=button data-filter-scenario='{}'>show this scenario's groups</button> <button type=button data-show-scenario='{}'>show this scenario's outcomes</button></p><div class=charts>",
            esc(sc),
            esc_attr(sc),
            esc_attr(sc)
        );
        for kind in ["tokens", "accuracy", "pareto"] {
            page += &figure(&format!("{kind}-{sl}"));
        }
        let convs: Vec<&Group> = (s.groups.iter())
            .filter(|g| &g.scenario == sc && g.conversations.is_some())
            .collect();
        if !convs.is_empty() {
            page += &figure(&format!("turns-{sl}"));
        }
        page += "</div>";
        if !convs.is_empty() {
            page += &conversations_html(&convs);
        }
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
            "<h3>Contexts</h3><details class=contexts data-scenario='{0}'><summary>each mode's system prompt and first-request tool definitions</summary><div></div></details></section>",
            esc_attr(sc)
        );
    }
    page += &explorer_section(&explorer);
    page += &explorer.html();
    let _ = writeln!(page, "</main><script>{JS}</script></body></html>");
    Ok(page)
}
