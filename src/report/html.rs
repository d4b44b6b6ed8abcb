//! `index.html`: one self-contained page (inline CSS, SVG and a little JavaScript; no
//! network request of any kind) with an overview, a section per scenario with sortable
//! tables and the charts, and a drill-down per query that shows, turn by turn, what
//! entered the context with its token counts, and the calls scored against the
//! expectation. Opening it with `#selftest` makes the page sort a table itself and
//! report the result in `#selftest` (used by the browser test).
//!
//! Tool definitions: an outcome records each definition that entered the context
//! (name and tokens); the texts of system prompts and first-turn definitions are in
//! the run's `texts.jsonl`, which outcome entries refer to by hash. Each scenario's
//! "Contexts" shows each mode's system prompt and first-turn definitions once; a
//! query's drill-down shows, per turn, the definitions that entered then (its own
//! first-turn ones only when a selection step chose them). Runs written before
//! `texts.jsonl` existed kept those texts in their first outcome per scenario × mode,
//! and still render; when no text is recorded, the page names
//! `discbench tokens --show`, which re-renders them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::exporter::{write_atomic, Exporter, ReportCx};
use super::plots::{chart_list, scenarios};
use super::text::esc;
use super::text::pct;
use crate::analysis::compare::{Comparison, Verdict};
use crate::analysis::summary::{Group, Summary};
use crate::record::manifest::PlanOrder;
use crate::record::reader;
use crate::record::texts::TextStore;
use crate::record::{Entry, Layer, Outcome, OutcomeKey, TurnRecord};

/// Outcomes shown in the drill-down at most; the rest are counted in a note.
pub const DRILL_LIMIT: usize = 3000;
/// Characters of one result or fetched text shown in the drill-down.
const TEXT_LIMIT: usize = 2000;

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

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#c9d1e0;font-size:14px}
nav{padding:8px 28px;background:#e8ebf0;font-size:14px}nav a{margin-right:14px;color:#1d4f91}
main{padding:8px 28px 40px}section{background:#fff;border:1px solid #dde2ea;border-radius:6px;padding:12px 18px;margin:16px 0}
h2{font-size:19px;margin:6px 0 10px}h3{font-size:16px;margin:14px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:6px 0 10px}
th,td{border:1px solid #dde2ea;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#eef1f5;cursor:pointer;user-select:none;white-space:nowrap}th.asc::after{content:" \25B2"}th.desc::after{content:" \25BC"}
td.l,th.l{text-align:left}.bad{color:#b3261e;font-weight:600}.good{color:#1e7b34;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:12px}.charts figure{margin:0;border:1px solid #dde2ea;border-radius:4px;background:#fff}
.charts svg{width:640px;height:auto;display:block}figcaption{font-size:12px;padding:2px 8px;color:#555}
details{margin:4px 0}summary{cursor:pointer;font-size:13px}details details{margin-left:18px}
pre{background:#f3f4f7;padding:6px 8px;white-space:pre-wrap;word-break:break-word;font-size:12px;max-height:280px;overflow:auto;margin:2px 0}
.tag{display:inline-block;background:#e8ebf0;border-radius:3px;padding:0 5px;margin-right:4px;font-size:11px}
.ok{color:#1e7b34}.no{color:#b3261e}
"#;

const JS: &str = r#"
(function(){
  function cellValue(td){var v=td.getAttribute('data-v');if(v!==null&&v!==''&&!isNaN(+v))return +v;return td.textContent.trim().toLowerCase();}
  function sortTable(table,col,dir){
    var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
    rows.sort(function(a,b){var x=cellValue(a.cells[col]),y=cellValue(b.cells[col]);
      if(typeof x==='number'&&typeof y==='number')return dir*(x-y);return dir*String(x).localeCompare(String(y));});
    rows.forEach(function(r){body.appendChild(r);});
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,i){th.classList.remove('asc','desc');if(i===col)th.classList.add(dir>0?'asc':'desc');});
  }
  window.discbenchSort=sortTable;
  document.querySelectorAll('table.sortable').forEach(function(table){
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,i){
      th.addEventListener('click',function(){sortTable(table,i,th.classList.contains('asc')?-1:1);});});});
  // The self-test sorts a column whose values differ (a column of equal values, such
  // as n in a small run, would pass whatever the sort did): the sortable numeric
  // column with the most distinct values. One click must sort ascending, the next
  // descending, and the row order must differ between them.
  function values(table,col){return Array.prototype.map.call(table.tBodies[0].rows,function(r){
    var c=r.cells[col];var a=c?c.getAttribute('data-v'):null;return (a===null||a==='')?NaN:+a;});}
  function pickColumn(){
    var best=null;
    document.querySelectorAll('table.sortable').forEach(function(table){
      if(!table.tHead||!table.tBodies[0])return;
      Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,i){
        if(th.getAttribute('data-numeric')!=='1')return;
        var v=values(table,i);
        if(v.length<2||v.some(function(x){return !isFinite(x);}))return;
        var distinct=v.filter(function(x,k){return v.indexOf(x)===k;}).length;
        if(distinct>1&&(!best||distinct>best.distinct))best={table:table,col:i,distinct:distinct};
      });
    });
    return best;
  }
  if(location.hash==='#selftest'){
    var out=document.getElementById('selftest');var errs=[];var what='';
    try{
      var pick=pickColumn();
      if(!pick){errs.push('no column with distinct values');}
      else{
        var t=pick.table,col=pick.col,th=t.tHead.rows[0].cells[col];
        what=th.textContent.trim();
        th.dispatchEvent(new MouseEvent('click',{bubbles:true}));
        var asc=values(t,col),ascRows=Array.prototype.slice.call(t.tBodies[0].rows);
        th.dispatchEvent(new MouseEvent('click',{bubbles:true}));
        var desc=values(t,col),descRows=Array.prototype.slice.call(t.tBodies[0].rows);
        for(var i=1;i<asc.length;i++){if(!(asc[i-1]<=asc[i]))errs.push(what+': ascending order broken at row '+i);}
        for(var j=1;j<desc.length;j++){if(!(desc[j-1]>=desc[j]))errs.push(what+': descending order broken at row '+j);}
        if(!(asc[0]<asc[asc.length-1]))errs.push(what+': the first click did not sort ascending');
        if(!(desc[0]>desc[desc.length-1]))errs.push(what+': the second click did not sort descending');
        if(ascRows.every(function(r,k){return r===descRows[k];}))errs.push(what+': the row order did not change between the two clicks');
      }
      if(document.querySelectorAll('svg').length<1)errs.push('no chart');
    }catch(e){errs.push(String(e));}
    if(window.__errors&&window.__errors.length)errs=errs.concat(window.__errors);
    out.setAttribute('data-result',errs.length?'fail':'pass');
    out.setAttribute('data-column',what);
    out.textContent=errs.length?errs.join('; '):'sorted '+what+' ascending and descending';
  }
})();
"#;

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
    let (rk, mrr) = g.surfacing.map_or((-1.0, -1.0), |x| (x.recall_at_k, x.mrr));
    r += &num_td(
        rk,
        g.surfacing
            .map(|x| pct(x.recall_at_k))
            .unwrap_or_else(|| "-".into()),
    );
    r += &num_td(
        mrr,
        g.surfacing
            .map(|x| format!("{:.3}", x.mrr))
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
        "recall@5",
        "MRR",
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

fn clip(text: &str) -> String {
    let n = text.chars().count();
    if n <= TEXT_LIMIT {
        text.to_string()
    } else {
        let head: String = text.chars().take(TEXT_LIMIT).collect();
        format!("{head}\n… ({} more characters)", n - TEXT_LIMIT)
    }
}

fn outcome_html(o: &Outcome) -> String {
    let mark = |b: bool| {
        if b {
            "<span class=ok>✓</span>"
        } else {
            "<span class=no>✗</span>"
        }
    };
    let mut s = format!(
        "<details><summary>{} {} · {}{} — {} turns, {} billed input tokens</summary>",
        mark(o.score.exact),
        esc(&o.mode),
        esc(&o.model),
        if o.repeat > 0 {
            format!(" #{}", o.repeat)
        } else {
            String::new()
        },
        o.protocol.turns,
        o.tokens.billed_input
    );
    let expected: Vec<String> = o
        .expected
        .get("calls")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| {
                    c.get("address")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    let predicted: Vec<String> = o.score.predicted.iter().map(|a| a.to_string()).collect();
    let _ = write!(
        s,
        "<p style='font-size:13px'>expected: <code>{}</code><br>made: <code>{}</code><br>exact {} · F1 {:.2} · args {} · schema {} · forbidden hit {} · protocol errors {}</p>",
        esc(&if expected.is_empty() { "(no call)".to_string() } else { expected.join(", ") }),
        esc(&if predicted.is_empty() { "(no call)".to_string() } else { predicted.join(", ") }),
        mark(o.score.exact),
        o.score.f1,
        o.score.args_ok.map(mark).unwrap_or("-"),
        o.score.schema_valid.map(mark).unwrap_or("-"),
        if o.score.forbidden_hit { "<span class=no>yes</span>" } else { "no" },
        o.protocol.errors()
    );
    if let Some(sel) = &o.selection {
        let _ = write!(
            s,
            "<p style='font-size:13px'>selection step ({} tools, {} tokens, {}): {}</p>",
            sel.tools_before,
            o.tokens.selection,
            if sel.shortcut {
                "keyword shortcut, no model call".to_string()
            } else {
                format!("{} model request(s)", sel.requests)
            },
            esc(&match &sel.selected {
                Some(v) => format!("kept {}", v.join(", ")),
                None => "no usable or an empty answer, all tools kept".into(),
            })
        );
    }
    for t in &o.turns {
        let _ = write!(s, "<details><summary>turn {} — request {} tokens, {} tools visible</summary><table><thead><tr><th class=l>layer</th><th class=l>what</th><th>tokens</th></tr></thead><tbody>", t.turn, t.request_tokens, t.tools_visible);
        for e in &t.entered {
            let text = match (&e.text, e.layer.as_str()) {
                (_, "system") => {
                    "<br><i>system prompt: see this scenario's contexts above</i>".to_string()
                }
                // Definition texts are in the block below the table.
                (Some(_), _) if is_definition(e) => String::new(),
                (Some(x), _) => format!("<pre>{}</pre>", esc(&clip(x))),
                _ => String::new(),
            };
            let _ = write!(
                s,
                "<tr><td class=l>{}</td><td class=l><code>{}</code>{text}</td><td>{}</td></tr>",
                esc(e.layer.as_str()),
                esc(&clip(&e.what)),
                e.tokens
            );
        }
        s += "</tbody></table>";
        s += &definitions_html(t);
        s += "</details>";
    }
    if !o.calls.is_empty() {
        s += "<table><thead><tr><th>turn</th><th class=l>call</th><th class=l>effect</th><th class=l>address</th><th class=l>note</th></tr></thead><tbody>";
        for c in &o.calls {
            let note = c
                .error
                .map(|e| e.as_str().to_string())
                .unwrap_or_else(|| c.schema_errors.join("; "));
            let _ = write!(
                s,
                "<tr><td>{}</td><td class=l><code>{}({})</code></td><td class=l>{}</td><td class=l>{}</td><td class=l>{}{}</td></tr>",
                c.turn,
                esc(&c.tool),
                esc(&clip(&c.arguments)),
                esc(c.effect.as_str()),
                esc(&c.address.as_ref().map(|a| a.to_string()).unwrap_or_default()),
                esc(&note),
                if c.blind { " (blind)" } else { "" }
            );
        }
        s += "</tbody></table>";
    }
    if let Some(e) = &o.infra_error {
        let _ = write!(s, "<p class=bad>infra error: {}</p>", esc(e));
    }
    s += "</details>";
    s
}

/// Whether an entry is a tool definition entering the context: one shown from the
/// first turn, or one loaded later (`request_tools`, a tool search).
fn is_definition(e: &Entry) -> bool {
    e.layer == Layer::ToolDefs
        || (e.layer == Layer::Fetched && e.what.starts_with("tool definition "))
}

/// The name of the tool an entry defines.
fn definition_name(e: &Entry) -> &str {
    e.what
        .strip_prefix("tool definition ")
        .unwrap_or(e.what.as_str())
}

/// The tool definitions that entered in one turn, as a collapsed block holding each
/// definition's JSON (escaped, cut at 2,000 characters). Empty when the turn added no
/// definition or the outcome did not record their text (names and tokens are in the
/// turn's table either way).
fn definitions_html(t: &TurnRecord) -> String {
    let defs: Vec<&Entry> = t.entered.iter().filter(|e| is_definition(e)).collect();
    if !defs.iter().any(|e| e.text.is_some()) {
        return String::new();
    }
    let tokens: usize = defs.iter().map(|e| e.tokens).sum();
    let mut s = format!(
        "<details><summary>tool definitions that entered in turn {} ({} tools, {tokens} tokens)</summary>",
        t.turn,
        defs.len()
    );
    for e in defs {
        let body = match &e.text {
            Some(x) => esc(&clip(x)),
            None => "(definition text not recorded)".to_string(),
        };
        let _ = write!(
            s,
            "<details><summary><code>{}</code> ({} tokens)</summary><pre>{body}</pre></details>",
            esc(definition_name(e)),
            e.tokens
        );
    }
    s += "</details>";
    s
}

/// Per mode, its first-turn tool definitions: (name, tokens, JSON text).
type ModeDefs = BTreeMap<String, Vec<(String, usize, String)>>;

/// Per scenario, per query: its text, tags and each outcome's key and HTML.
type Queries = BTreeMap<String, BTreeMap<String, QueryEntry>>;

/// A query's text and tags, and each of its outcomes' place in the plan and HTML.
type QueryEntry = (String, Vec<String>, Vec<((usize, OutcomeKey), String)>);

/// The drill-down of every scenario: per query, its outcomes; plus each mode's system
/// prompt once. Streams the outcome file.
fn drill_down(outcomes: &Path) -> anyhow::Result<(BTreeMap<String, String>, usize)> {
    // scenario → query → (text, tags, outcome html); scenario → mode → system prompt.
    let mut per: Queries = BTreeMap::new();
    let mut prompts: BTreeMap<String, BTreeMap<String, (usize, String)>> = BTreeMap::new();
    // scenario → mode → the first-turn tool definitions (name, tokens, text), taken
    // from the first outcome that recorded their text.
    let mut defs: BTreeMap<String, ModeDefs> = BTreeMap::new();
    let mut shown = 0;
    let mut skipped = 0;
    let dir = outcomes.parent().unwrap_or(Path::new("."));
    let texts = TextStore::load(dir)?;
    let order = PlanOrder::for_dir(dir)?;
    reader::read::<Outcome>(outcomes, |_, mut o| {
        if shown >= DRILL_LIMIT {
            skipped += 1;
            return Ok(());
        }
        texts.resolve(&mut o);
        shown += 1;
        // A selection step picks the first turn's tools per query: those are shown in
        // the query's own drill-down, not as the mode's definitions.
        let selected = o.selection.as_ref().is_some_and(|s| s.selected.is_some());
        if let Some(first) = o.turns.first() {
            let recorded: Vec<(String, usize, String)> = first
                .entered
                .iter()
                .filter(|e| e.layer == Layer::ToolDefs && !selected)
                .filter_map(|e| Some((e.what.clone(), e.tokens, e.text.clone()?)))
                .collect();
            if !recorded.is_empty() {
                defs.entry(o.scenario.clone())
                    .or_default()
                    .entry(o.mode.clone())
                    .or_insert(recorded);
            }
            for e in &first.entered {
                if e.layer == Layer::System {
                    if let Some(t) = &e.text {
                        prompts
                            .entry(o.scenario.clone())
                            .or_default()
                            .entry(o.mode.clone())
                            .or_insert((e.tokens, t.clone()));
                    }
                }
            }
        }
        // The mode's first-turn texts are shown once per scenario (above); an outcome
        // shows its own only when a selection step chose them for its query.
        for t in o.turns.iter_mut().filter(|t| t.turn == 1) {
            for e in t.entered.iter_mut() {
                if e.layer == Layer::System || (e.layer == Layer::ToolDefs && !selected) {
                    e.text = None;
                }
            }
        }
        let text = first_user_text(&o);
        let entry = per
            .entry(o.scenario.clone())
            .or_default()
            .entry(o.query_id.clone())
            .or_insert_with(|| (text, o.tags.clone(), Vec::new()));
        entry.2.push((order.rank(&o.key()), outcome_html(&o)));
        Ok(())
    })?;
    let mut out = BTreeMap::new();
    for (sc, queries) in per {
        let mut s = String::from("<h3>Contexts</h3>");
        for (mode, (tokens, text)) in prompts.get(&sc).into_iter().flatten() {
            let _ = write!(s, "<details><summary>system prompt under {} ({tokens} tokens)</summary><pre>{}</pre></details>", esc(mode), esc(text));
        }
        s += &mode_definitions_html(defs.get(&sc));
        s += "<h3>Queries</h3>";
        for (qid, (text, tags, mut outcomes)) in queries {
            // Episodes finish in any order: the page shows them in plan order.
            outcomes.sort_by(|a, b| a.0.cmp(&b.0));
            let body: String = outcomes.into_iter().map(|(_, h)| h).collect();
            let tags: String = tags
                .iter()
                .map(|t| format!("<span class=tag>{}</span>", esc(t)))
                .collect();
            let _ = write!(
                s,
                "<details class=query><summary><b>{}</b> {tags} — {}</summary>{body}</details>",
                esc(&qid),
                esc(&text)
            );
        }
        out.insert(sc, s);
    }
    Ok((out, skipped))
}

/// Each mode's first-turn tool definitions, once per scenario, in a collapsed block;
/// a note naming `discbench tokens --show` when no outcome recorded their text.
fn mode_definitions_html(defs: Option<&ModeDefs>) -> String {
    let Some(defs) = defs.filter(|d| !d.is_empty()) else {
        return "<p style='font-size:13px'>Tool definition texts are not recorded in outcomes.jsonl; <code>discbench tokens SCENARIO --mode MODE --show</code> prints them (the drill-down lists them by name with their tokens).</p>".to_string();
    };
    let mut s = String::new();
    for (mode, tools) in defs {
        let tokens: usize = tools.iter().map(|t| t.1).sum();
        let _ = write!(
            s,
            "<details><summary>tool definitions under {} ({} tools, {tokens} tokens)</summary>",
            esc(mode),
            tools.len()
        );
        for (name, n, text) in tools {
            let _ = write!(
                s,
                "<details><summary><code>{}</code> ({n} tokens)</summary><pre>{}</pre></details>",
                esc(name),
                esc(&clip(text))
            );
        }
        s += "</details>";
    }
    s
}

fn first_user_text(o: &Outcome) -> String {
    o.turns
        .first()
        .and_then(|t| t.entered.iter().find(|e| e.layer == Layer::Query))
        .and_then(|e| e.text.clone())
        .unwrap_or_default()
}

/// The whole page.
pub fn render(
    s: &Summary,
    outcomes: &Path,
    comparison: Option<&Comparison>,
    plots: &Path,
) -> anyhow::Result<String> {
    let (drill, skipped) = drill_down(outcomes)?;
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
    page += "</nav><main><pre id=selftest data-result='not run' style='display:none'></pre>";
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
    page += "<div class=charts>";
    page += &figure("catalog-size-accuracy");
    page += &figure("catalog-size-tokens");
    page += "</div></section>";
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
        if let Some(d) = drill.get(sc) {
            page += d;
        }
        page += "</section>";
    }
    if skipped > 0 {
        let _ = write!(page, "<p>The drill-down shows the first {DRILL_LIMIT} outcomes; {skipped} more are in outcomes.jsonl.</p>");
    }
    let _ = writeln!(page, "</main><script>{JS}</script></body></html>");
    Ok(page)
}
