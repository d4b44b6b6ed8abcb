//! The chart `index.html` leads with: per scenario, exact match against billed input
//! tokens, one point per mode × model with its Wilson 95% interval as an error bar,
//! the x axis logarithmic (the modes of one scenario differ by factors, not by
//! amounts). Colour is the mode and shape the model, as in the plotters charts; each
//! point is labelled with its mode where the label finds room, and a dashed line joins,
//! per model, the modes no other mode beats on both accuracy and tokens.
//!
//! Written as SVG text by hand rather than with plotters, for two reasons: the page's
//! script needs each point as an element carrying its numbers (`data-*`) to show them on
//! hover or focus, and the chart is drawn in CSS pixels (one SVG unit is one pixel at
//! 100% zoom) so that its text sizes are what they say — none under [`TEXT`] pixels.
//! It is part of the page only; the files for papers are the plotters charts.

use std::fmt::Write as _;

use super::chart::{color, index_of};
use super::pareto::front;
use crate::analysis::summary::Group;
use crate::report::text::{esc, esc_attr, pct};

pub const WIDTH: f64 = 760.0;
pub const HEIGHT: f64 = 430.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 22.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 58.0;
/// The top of the y axis: a little above 100% so points there are not on the frame.
const YMAX: f64 = 1.05;
/// Tick labels and point labels, in pixels: the smallest text of the chart.
pub const TEXT: u32 = 13;
/// Axis titles, in pixels.
pub const TITLE: u32 = 14;

/// A colour as CSS writes it.
pub fn hex(c: plotters::style::RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// A mode's colour, the same in every chart of the run.
pub fn mode_color(modes: &[String], mode: &str) -> String {
    hex(color(index_of(modes, mode)))
}

/// A marker of one of four shapes (circle, square, triangle, diamond), centred on
/// (`x`, `y`), `r` pixels from centre to edge, with extra attributes.
pub fn marker(shape: usize, x: f64, y: f64, r: f64, attrs: &str) -> String {
    match shape % 4 {
        0 => format!("<circle cx='{x:.1}' cy='{y:.1}' r='{r}' {attrs} />"),
        1 => {
            let s = r - 0.5;
            format!(
                "<rect x='{:.1}' y='{:.1}' width='{:.1}' height='{:.1}' {attrs} />",
                x - s,
                y - s,
                2.0 * s,
                2.0 * s
            )
        }
        2 => {
            let s = r + 1.0;
            format!(
                "<path d='M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z' {attrs} />",
                y - s,
                x + s,
                y + s * 0.75,
                x - s,
                y + s * 0.75
            )
        }
        _ => {
            let s = r + 1.5;
            format!(
                "<path d='M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z' {attrs} />",
                y - s,
                x + s,
                y + s,
                x - s
            )
        }
    }
}

/// A model's marker alone, as a small inline SVG (legends).
pub fn marker_icon(shape: usize, fill: &str) -> String {
    format!(
        "<svg class=icon width=16 height=16 viewBox='0 0 16 16' aria-hidden=true>{}</svg>",
        marker(shape, 8.0, 8.0, 5.0, &format!("fill='{fill}'"))
    )
}

/// The x domain (log scale): the values with room on both sides, at least a factor 6
/// wide so that it holds two ticks (two steps of 1, 2, 5 span at most a factor 5).
fn x_domain(values: &[f64]) -> (f64, f64) {
    let lo = values
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min)
        .max(1.0);
    let hi = values.iter().cloned().fold(1.0, f64::max).max(lo);
    let (mut lo, mut hi) = (lo / 1.35, hi * 1.35);
    if hi / lo < 6.0 {
        let mid = (lo * hi).sqrt();
        let half = 6f64.sqrt();
        (lo, hi) = (mid / half, mid * half);
    }
    (lo, hi)
}

/// Ticks at 1, 2 and 5 times a power of ten inside the domain; only the powers of ten
/// when that gives more than ten.
fn x_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let all: Vec<(f64, bool)> = (a..=b)
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| (m * 10f64.powi(e), m == 1.0)))
        .filter(|(v, _)| *v >= lo && *v <= hi)
        .collect();
    if all.len() > 10 {
        all.into_iter().filter(|t| t.1).map(|t| t.0).collect()
    } else {
        all.into_iter().map(|t| t.0).collect()
    }
}

/// `500`, `2k`, `50k`, `1M`.
fn tick_label(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{}k", v / 1e3)
    } else {
        format!("{v}")
    }
}

/// `18,678`.
fn thousands(v: f64) -> String {
    let s = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The width a label takes at [`TEXT`] pixels (system sans-serif fonts average under
/// 0.6 em a character; a margin is kept).
fn label_width(text: &str) -> f64 {
    text.chars().count() as f64 * TEXT as f64 * 0.6 + 2.0
}

type Box2 = (f64, f64, f64, f64);

fn overlaps(a: &Box2, b: &Box2) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// One point of the chart.
struct Pt<'a> {
    g: &'a Group,
    x: f64,
    y: f64,
    lo: f64,
    hi: f64,
    mode: usize,
    model: usize,
    front: bool,
}

/// The chart of one scenario's groups (those with scored outcomes), as an `<svg>`
/// element. `modes` and `models` are the run's, in order: a mode's colour and a model's
/// marker.
pub fn svg(scenario: &str, groups: &[&Group], modes: &[String], models: &[String]) -> String {
    let groups: Vec<&Group> = groups.iter().copied().filter(|g| g.n > 0).collect();
    let billed = |g: &Group| g.tokens.get("billed_input").map_or(0.0, |t| t.median);
    let (lo, hi) = x_domain(&groups.iter().map(|g| billed(g)).collect::<Vec<_>>());
    let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |v: f64| LEFT + (v.max(1.0).log10() - lo.log10()) / (hi.log10() - lo.log10()) * pw;
    let py = |r: f64| TOP + (1.0 - r / YMAX) * ph;
    // The front per model: no other mode of that model is both cheaper and at least as
    // accurate.
    let mut on_front = vec![false; groups.len()];
    let mut fronts: Vec<Vec<usize>> = Vec::new();
    for m in models {
        let idx: Vec<usize> = (0..groups.len())
            .filter(|&i| &groups[i].model == m)
            .collect();
        let pts: Vec<(f64, f64)> = idx
            .iter()
            .map(|&i| (billed(groups[i]), groups[i].exact.rate))
            .collect();
        let f: Vec<usize> = front(&pts).into_iter().map(|k| idx[k]).collect();
        for &i in &f {
            on_front[i] = true;
        }
        if f.len() > 1 {
            fronts.push(f);
        }
    }
    let pts: Vec<Pt> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| Pt {
            g,
            x: px(billed(g)),
            y: py(g.exact.rate),
            lo: py(g.exact.lo),
            hi: py(g.exact.hi),
            mode: index_of(modes, &g.mode),
            model: index_of(models, &g.model),
            front: on_front[i],
        })
        .collect();

    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=answer-chart viewBox='0 0 {WIDTH} {HEIGHT}' width={WIDTH} height={HEIGHT} role=img aria-label='{}'>",
        esc_attr(&format!("{scenario}: exact match against billed input tokens, one point per mode and model"))
    );
    // Grid, ticks and axes.
    s += "<g class=axes>";
    for k in 0..=5 {
        let r = k as f64 * 0.2;
        let y = py(r);
        let _ = write!(
            s,
            "<line x1='{LEFT}' x2='{:.1}' y1='{y:.1}' y2='{y:.1}' stroke='#e3e7ee' /><text x='{:.1}' y='{:.1}' text-anchor=end font-size={TEXT}>{}%</text>",
            LEFT + pw,
            LEFT - 8.0,
            y + 4.5,
            k * 20
        );
    }
    for t in x_ticks(lo, hi) {
        let x = px(t);
        let _ = write!(
            s,
            "<line x1='{x:.1}' x2='{x:.1}' y1='{TOP}' y2='{:.1}' stroke='#e3e7ee' /><line x1='{x:.1}' x2='{x:.1}' y1='{:.1}' y2='{:.1}' stroke='#555' /><text x='{x:.1}' y='{:.1}' text-anchor=middle font-size={TEXT}>{}</text>",
            TOP + ph,
            TOP + ph,
            TOP + ph + 5.0,
            TOP + ph + 20.0,
            tick_label(t)
        );
    }
    let _ = write!(
        s,
        "<path d='M{LEFT} {TOP}V{:.1}H{:.1}' fill=none stroke='#555' />",
        TOP + ph,
        LEFT + pw
    );
    let _ = write!(
        s,
        "<text x='{:.1}' y='{:.1}' text-anchor=middle font-size={TITLE}>billed input tokens per outcome (median, log scale)</text>",
        LEFT + pw / 2.0,
        HEIGHT - 12.0
    );
    let _ = write!(
        s,
        "<text transform='translate(18 {:.1}) rotate(-90)' text-anchor=middle font-size={TITLE}>exact match (95% Wilson interval)</text>",
        TOP + ph / 2.0
    );
    s += "</g>";
    // The fronts.
    for f in &fronts {
        let mut sorted = f.clone();
        sorted.sort_by(|a, b| pts[*a].x.total_cmp(&pts[*b].x));
        let d: Vec<String> = sorted
            .iter()
            .map(|&i| format!("{:.1} {:.1}", pts[i].x, pts[i].y))
            .collect();
        let _ = write!(
            s,
            "<path class=front d='M{}' fill=none stroke='#8a93a3' stroke-width=1.5 stroke-dasharray='5 4' />",
            d.join("L")
        );
    }
    // The points: each a group with its numbers, its error bar, its marker and a wider
    // transparent disc that takes the pointer.
    for p in &pts {
        let g = p.g;
        let c = hex(color(p.mode));
        let t = |layer: &str| g.tokens.get(layer).map_or(0.0, |t| t.median);
        let p95 = g.tokens.get("billed_input").map_or(0.0, |t| t.p95);
        let summary = format!(
            "{} · {}: exact match {} [{}, {}], billed input {} tokens (median)",
            g.mode,
            g.model,
            pct(g.exact.rate),
            pct(g.exact.lo),
            pct(g.exact.hi),
            thousands(t("billed_input"))
        );
        let _ = write!(
            s,
            "<g class=pt tabindex=0 aria-label='{}' data-mode='{}' data-model='{}' data-n={} data-infra={} data-exact={} data-lo={} data-hi={} data-billed={} data-p95={} data-first={} data-front={}>",
            esc_attr(&summary),
            esc_attr(&g.mode),
            esc_attr(&g.model),
            g.n,
            g.infra_errors,
            g.exact.rate,
            g.exact.lo,
            g.exact.hi,
            t("billed_input"),
            p95,
            t("first_request"),
            u8::from(p.front)
        );
        let _ = write!(
            s,
            "<path d='M{0:.1} {1:.1}V{2:.1}M{3:.1} {1:.1}H{4:.1}M{3:.1} {2:.1}H{4:.1}' stroke='{c}' stroke-width=2 fill=none />",
            p.x,
            p.hi,
            p.lo,
            p.x - 5.0,
            p.x + 5.0
        );
        s += &marker(
            p.model,
            p.x,
            p.y,
            6.0,
            &format!("fill='{c}' stroke='#fff' stroke-width=1.5"),
        );
        let _ = write!(
            s,
            "<circle class=hit cx='{:.1}' cy='{:.1}' r=13 fill=transparent /></g>",
            p.x, p.y
        );
    }
    s += &labels(&pts, (LEFT, TOP, LEFT + pw, TOP + ph));
    s += "</svg>";
    s
}

/// Each point's mode written beside it where the label overlaps no marker, error bar
/// or other label and stays inside the plot; a point whose label finds no room is
/// named by the legend and its hover.
fn labels(pts: &[Pt], plot: Box2) -> String {
    let mut taken: Vec<Box2> = Vec::new();
    for p in pts {
        taken.push((p.x - 8.0, p.y - 8.0, p.x + 8.0, p.y + 8.0));
        taken.push((p.x - 5.0, p.hi.min(p.lo), p.x + 5.0, p.hi.max(p.lo)));
    }
    let h = TEXT as f64;
    let mut s = String::from("<g class=labels>");
    for p in pts {
        let text = &p.g.mode;
        let w = label_width(text);
        // (left edge, baseline) of each candidate, in order of preference.
        let candidates = [
            (p.x + 10.0, p.y + 4.5),
            (p.x - 10.0 - w, p.y + 4.5),
            (p.x + 7.0, p.y - 11.0),
            (p.x + 7.0, p.y + 21.0),
            (p.x - 7.0 - w, p.y - 11.0),
            (p.x - 7.0 - w, p.y + 21.0),
            (p.x - w / 2.0, p.y - 14.0),
            (p.x - w / 2.0, p.y + 24.0),
        ];
        let fit = candidates.iter().find_map(|&(x, base)| {
            let b = (x, base - h + 1.0, x + w, base + 3.0);
            let inside = b.0 >= plot.0 + 2.0 && b.2 <= plot.2 && b.1 >= plot.1 && b.3 <= plot.3;
            (inside && !taken.iter().any(|t| overlaps(t, &b))).then_some((x, base, b))
        });
        if let Some((x, base, b)) = fit {
            taken.push(b);
            let _ = write!(
                s,
                "<text x='{x:.1}' y='{base:.1}' font-size={TEXT} fill='#2b3240'>{}</text>",
                esc(text)
            );
        }
    }
    s += "</g>";
    s
}

/// The chart's legend, as HTML: the scenario's modes by colour and, with more than one
/// model, its models by marker.
pub fn legend(groups: &[&Group], modes: &[String], models: &[String]) -> String {
    let mut s = String::from("<div class=legend><div><span class=muted>mode</span>");
    for m in modes
        .iter()
        .filter(|m| groups.iter().any(|g| &g.mode == *m))
    {
        let _ = write!(
            s,
            "<span><i class=sw style='background:{}'></i>{}</span>",
            mode_color(modes, m),
            esc(m)
        );
    }
    let shown: Vec<&String> = models
        .iter()
        .filter(|m| groups.iter().any(|g| &g.model == *m))
        .collect();
    s += "</div><div><span class=muted>model</span>";
    for m in shown {
        let _ = write!(
            s,
            "<span>{}{}</span>",
            marker_icon(index_of(models, m), "#5b6475"),
            esc(m)
        );
    }
    s += "<span><svg class=icon width=22 height=16 aria-hidden=true><path d='M1 8H21' stroke='#8a93a3' stroke-width=1.5 stroke-dasharray='5 4' /></svg>best trade-off per model</span></div></div>";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_one_two_five_inside_the_domain() {
        assert_eq!(x_ticks(700.0, 30_000.0), vec![1e3, 2e3, 5e3, 1e4, 2e4]);
        assert_eq!(x_ticks(10.0, 1e7), vec![1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7]);
        assert_eq!(tick_label(2000.0), "2k");
        assert_eq!(tick_label(500.0), "500");
        assert_eq!(tick_label(1e6), "1M");
    }

    #[test]
    fn a_narrow_domain_is_widened_to_hold_two_ticks() {
        for v in [4149.0, 2100.0, 1.0, 777.0, 123_456.0] {
            let (lo, hi) = x_domain(&[v, v * 1.1]);
            assert!(hi / lo >= 6.0 - 1e-9);
            assert!(lo <= v && hi >= v * 1.1);
            assert!(x_ticks(lo, hi).len() >= 2, "{v}: {:?}", x_ticks(lo, hi));
        }
        assert_eq!(thousands(18678.0), "18,678");
        assert_eq!(thousands(12.4), "12");
    }

    #[test]
    fn every_empty_element_is_closed_in_html() {
        // In HTML an unquoted attribute value takes a following `/` as its own, and the
        // element stays open: `fill=none/>` nests the next marker inside a path.
        let g = |mode: &str, model: &str, rate: f64, billed: f64| {
            let mut g: Group = serde_json::from_value(serde_json::json!({
                "scenario": "s", "mode": mode, "model": model, "n": 10, "infra_errors": 0,
                "catalog_size": 5,
                "exact": {"k": 5, "n": 10, "rate": rate, "lo": 0.2, "hi": 0.8},
                "first_call_correct": {"k": 5, "n": 10, "rate": 0.5, "lo": 0.2, "hi": 0.8},
                "forbidden_hit": {"k": 0, "n": 10, "rate": 0.0, "lo": 0.0, "hi": 0.3},
                "protocol_error": {"k": 0, "n": 10, "rate": 0.0, "lo": 0.0, "hi": 0.3},
                "abstain": null, "args_ok": null, "schema_valid": null,
                "precision": 0.5, "recall": 0.5, "f1": 0.5, "tokens": {},
                "savings_first_request": null, "savings_billed": null,
                "pass": {"k": 1, "pass_at_k": 0.5, "pass_hat_k": 0.5}
            }))
            .unwrap();
            g.tokens.insert(
                "billed_input".into(),
                crate::analysis::summary::Stat {
                    median: billed,
                    p95: billed * 2.0,
                },
            );
            g
        };
        let groups = [
            g("a", "m1", 0.5, 1000.0),
            g("b", "m1", 0.9, 5000.0),
            g("a", "m2", 0.4, 1200.0),
            g("b", "m2", 0.4, 1200.0),
        ];
        let refs: Vec<&Group> = groups.iter().collect();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (modes, models) = (names(&["a", "b"]), names(&["m1", "m2"]));
        for html in [
            svg("s", &refs, &modes, &models),
            legend(&refs, &modes, &models),
        ] {
            for (i, _) in html.match_indices("/>") {
                assert_eq!(
                    &html[i - 1..i],
                    " ",
                    "{}",
                    &html[i.saturating_sub(60)..i + 2]
                );
            }
        }
        let chart = svg("s", &refs, &modes, &models);
        assert_eq!(chart.matches("<g class=pt ").count(), 4);
        // One front per model with two points on it: m1 (a cheaper, b more accurate).
        assert_eq!(chart.matches("class=front").count(), 1);
        assert!(chart.contains("data-mode='b' data-model='m1'"));
    }

    #[test]
    fn labels_never_overlap() {
        let a = (0.0, 0.0, 10.0, 10.0);
        assert!(overlaps(&a, &(5.0, 5.0, 15.0, 15.0)));
        assert!(!overlaps(&a, &(10.0, 0.0, 20.0, 10.0)));
    }
}
