//! Reports and the regression gate: every text export is snapshot-tested, the
//! aggregates agree with a count made here from the raw outcome lines, `compare`
//! exits 1 on a regression and names the metric and the queries, and the HTML report
//! renders in headless Chromium with working sort and no console error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_discbench"));
    c.env("CI", "true");
    c
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs the tiny scenario into a fresh directory with a fixed run id.
fn tiny_run(run_id: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let run = tiny_run_in(dir.path(), run_id);
    (dir, run)
}

/// Runs the tiny scenario into `out/<run_id>` and returns that run directory.
fn tiny_run_in(out: &Path, run_id: &str) -> PathBuf {
    let o = bin()
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--run-id",
            run_id,
            "--out",
        ])
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out.join(run_id)
}

/// Up to `before` bytes before and `after` bytes after byte `i`, widened to the
/// nearest character boundaries so that no UTF-8 character is split.
fn around(s: &str, i: usize, before: usize, after: usize) -> &str {
    let mut a = i.saturating_sub(before).min(s.len());
    while !s.is_char_boundary(a) {
        a -= 1;
    }
    let mut b = i.saturating_add(after).min(s.len());
    while !s.is_char_boundary(b) {
        b += 1;
    }
    &s[a..b]
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn text_exports_match_their_snapshots() {
    let (_d, run) = tiny_run("snap");
    for f in ["summary.md", "summary.csv", "summary.json", "junit.xml"] {
        insta::assert_snapshot!(f, read(&run.join(f)));
    }
    for f in ["outcomes.parquet", "index.html"] {
        assert!(std::fs::metadata(run.join(f)).unwrap().len() > 0, "{f}");
    }
    // Nothing half-written is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty());
    // Every protocol rate comes with its Wilson interval.
    let csv = read(&run.join("summary.csv"));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for c in discbench::analysis::summary::protocol_rates() {
        for col in [
            format!("{c}_rate"),
            format!("{c}_rate_lo"),
            format!("{c}_rate_hi"),
        ] {
            assert!(header.contains(&col.as_str()), "summary.csv lacks {col}");
        }
    }
}

#[test]
fn aggregates_agree_with_a_direct_count() {
    let (_d, run) = tiny_run("count");
    let lines: Vec<Value> = read(&run.join("outcomes.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Value = serde_json::from_str(&read(&run.join("summary.json"))).unwrap();
    let groups = summary["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 12);
    for g in groups {
        let mine: Vec<&Value> = lines
            .iter()
            .filter(|o| {
                o["scenario"] == g["scenario"] && o["mode"] == g["mode"] && o["model"] == g["model"]
            })
            .collect();
        let exact = mine.iter().filter(|o| o["score"]["exact"] == true).count() as u64;
        assert_eq!(g["n"].as_u64().unwrap(), mine.len() as u64);
        assert_eq!(g["exact"]["k"].as_u64().unwrap(), exact, "{g}");
        let mut ft: Vec<f64> = mine
            .iter()
            .map(|o| o["tokens"]["first_request"].as_f64().unwrap())
            .collect();
        ft.sort_by(f64::total_cmp);
        let median = if ft.len() % 2 == 1 {
            ft[ft.len() / 2]
        } else {
            (ft[ft.len() / 2 - 1] + ft[ft.len() / 2]) / 2.0
        };
        assert_eq!(
            g["tokens"]["first_request"]["median"].as_f64().unwrap(),
            median,
            "{g}"
        );
        let f1: f64 = mine
            .iter()
            .map(|o| o["score"]["f1"].as_f64().unwrap())
            .sum::<f64>()
            / mine.len() as f64;
        assert!((g["f1"].as_f64().unwrap() - f1).abs() < 1e-12);
        // Surfacing: recall is the mean over the outcomes that expect a call; MRR the
        // mean over those whose mode ranks what it shows, absent where none does.
        let recall: Vec<f64> = mine
            .iter()
            .filter_map(|o| o["surfacing"]["recall"].as_f64())
            .collect();
        assert_eq!(
            g["surfacing"]["n"].as_u64().unwrap_or(0),
            recall.len() as u64
        );
        if !recall.is_empty() {
            let mean = recall.iter().sum::<f64>() / recall.len() as f64;
            assert!(
                (g["surfacing"]["recall"].as_f64().unwrap() - mean).abs() < 1e-9,
                "{g}"
            );
        }
        let ranked: Vec<f64> = mine
            .iter()
            .filter_map(|o| o["surfacing"]["mrr"].as_f64())
            .collect();
        if ranked.is_empty() {
            assert!(g["surfacing"].get("mrr").is_none(), "{g}");
        } else {
            let mrr = ranked.iter().sum::<f64>() / ranked.len() as f64;
            assert!(
                (g["surfacing"]["mrr"].as_f64().unwrap() - mrr).abs() < 1e-9,
                "{g}"
            );
        }
        // The cached bill never exceeds the bill.
        assert!(
            g["tokens"]["billed_cached"]["median"].as_f64().unwrap()
                <= g["tokens"]["billed_input"]["median"].as_f64().unwrap()
        );
    }
    // Savings against legacy: legacy itself saves nothing.
    let legacy = groups.iter().find(|g| g["mode"] == "legacy").unwrap();
    assert_eq!(legacy["savings_first_request"].as_f64(), Some(0.0));
    // One McNemar pair per model and pair of modes (6 presets: 15 pairs).
    assert_eq!(summary["pairs"].as_array().unwrap().len(), 2 * 15);
}

#[test]
fn plots_are_written_as_svg_and_png_with_text() {
    let (_d, run) = tiny_run("plots");
    for stem in ["tokens-tiny", "accuracy-tiny", "pareto-tiny"] {
        let svg = read(&run.join(format!("plots/{stem}.svg")));
        assert!(svg.contains("<text"), "{stem}.svg has no text");
        let png = std::fs::read(run.join(format!("plots/{stem}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png");
    }
    assert!(read(&run.join("plots/accuracy-tiny.svg")).contains("exact match (%)"));
    assert!(read(&run.join("plots/pareto-tiny.svg")).contains("Pareto front"));
    // One scenario, one catalog size: no catalog-size charts.
    assert!(!run.join("plots/catalog-size-accuracy.svg").exists());
    // No chart text under 12 px: the plots as written (the page shows them at their
    // natural size, which the browser test measures) and the page's own chart.
    for stem in ["tokens-tiny", "accuracy-tiny", "pareto-tiny"] {
        let sizes = font_sizes(&read(&run.join(format!("plots/{stem}.svg"))));
        assert!(sizes.len() >= 10, "{stem}.svg: {} texts", sizes.len());
        let min = sizes.iter().cloned().fold(f64::INFINITY, f64::min);
        assert!(min >= 12.0, "{stem}.svg has text at {min} px");
    }
    let html = read(&run.join("index.html"));
    let chart = &html[html
        .find("<svg class=answer-chart")
        .expect("the answer chart")..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    let sizes = font_sizes(chart);
    assert!(
        sizes.len() >= 10 && sizes.iter().all(|s| *s >= 12.0),
        "{sizes:?}"
    );
}

/// Every `font-size` attribute of an SVG, in pixels.
fn font_sizes(svg: &str) -> Vec<f64> {
    let re = regex::Regex::new(r#"font-size=["']?([0-9.]+)"#).unwrap();
    re.captures_iter(svg)
        .map(|c| c[1].parse::<f64>().unwrap())
        .collect()
}

#[test]
fn compare_fails_on_the_regressed_fixture_and_names_metric_and_query() {
    let out_md = tempfile::NamedTempFile::new().unwrap();
    let o = bin()
        .args([
            "compare",
            "fixtures/compare/baseline",
            "fixtures/compare/regressed",
            "--out",
        ])
        .arg(out_md.path())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = stdout(&o);
    assert!(text.contains("| regressed | tiny | progressive | oracle | exact | 100.0% | 75.0% | -25.0 pp | 1.0 pp |"), "{text}");
    assert!(
        text.contains("| regressed | tiny | progressive | oracle | first_request |"),
        "{text}"
    );
    assert!(
        text.contains("| tiny | progressive | oracle | issue | 100% | 0% |"),
        "{text}"
    );
    assert_eq!(read(out_md.path()), text);
    // Fixture directories are read, never written.
    assert!(!Path::new("fixtures/compare/regressed/outcomes.parquet").exists());
}

/// Dropping a query (here the one `lexical` fails under `progressive`) must not pass
/// the gate, even though exact match goes up.
#[test]
fn compare_fails_when_a_baseline_query_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let kept: Vec<String> = read(Path::new("fixtures/compare/baseline/outcomes.jsonl"))
        .lines()
        .filter(|l| {
            let o: Value = serde_json::from_str(l).unwrap();
            !(o["mode"] == "progressive" && o["model"] == "lexical" && o["query_id"] == "people")
        })
        .map(str::to_string)
        .collect();
    assert_eq!(kept.len(), 23);
    std::fs::write(dir.path().join("outcomes.jsonl"), kept.join("\n") + "\n").unwrap();
    let o = bin()
        .args(["compare", "fixtures/compare/baseline"])
        .arg(dir.path())
        .args(["--out", "/dev/null"])
        .output()
        .unwrap();
    let text = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains("query missing from the current run (regression): tiny / progressive / lexical / people"),
        "{text}"
    );
    // The other way round the query is new: listed, not a regression.
    let o = bin()
        .arg("compare")
        .arg(dir.path())
        .args(["fixtures/compare/baseline", "--out", "/dev/null"])
        .output()
        .unwrap();
    let text = stdout(&o);
    assert!(
        text.contains("new query, not in the baseline: tiny / progressive / lexical / people"),
        "{text}"
    );
    assert!(!text.contains("query missing"), "{text}");
}

#[test]
fn compare_passes_within_noise_and_on_improvement() {
    let same = bin()
        .args([
            "compare",
            "fixtures/compare/baseline",
            "fixtures/compare/baseline",
            "--out",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(same.status.code(), Some(0));
    assert!(stdout(&same).contains("no regression"));
    let better = bin()
        .args([
            "compare",
            "fixtures/compare/regressed",
            "fixtures/compare/baseline",
            "--out",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(better.status.code(), Some(0));
    assert!(stdout(&better).contains("| improved | tiny | progressive | oracle | exact |"));
    // A generous threshold turns the regression into noise.
    let loose = bin()
        .args([
            "compare",
            "fixtures/compare/baseline",
            "fixtures/compare/regressed",
            "--out",
            "/dev/null",
        ])
        .args([
            "--threshold",
            "exact=30,f1=30,first_call_correct=30,first_request=60,billed_input=60",
        ])
        .output()
        .unwrap();
    assert_eq!(loose.status.code(), Some(0), "{}", stdout(&loose));
}

#[test]
fn compare_and_report_reject_bad_input_with_2() {
    for args in [
        vec!["compare", "fixtures/compare/baseline", "no/such/run"],
        vec![
            "compare",
            "fixtures/compare/baseline",
            "fixtures/snapshot/tiny.yaml",
        ],
        vec![
            "compare",
            "fixtures/compare/baseline",
            "fixtures/compare/regressed",
            "--threshold",
            "speed=1",
        ],
        vec!["report", "fixtures/snapshot"],
    ] {
        let o = bin().args(&args).output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A line that is not an outcome is bad input (exit 2) named by file and line, and
/// leaves nothing half-written behind.
#[test]
fn report_rejects_a_malformed_outcome_line_with_2_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = read(Path::new("fixtures/compare/baseline/outcomes.jsonl"));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let line = text.lines().count() + 1;
    text.push_str("{\"run_id\": \"broken\"}\n");
    std::fs::write(dir.path().join("outcomes.jsonl"), text).unwrap();
    let o = bin().arg("report").arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("outcomes.jsonl:{line}:")), "{err}");
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial") || n == "outcomes.parquet")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn report_rerenders_a_run_and_gates_on_its_baseline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        "fixtures/compare/regressed/outcomes.jsonl",
        dir.path().join("outcomes.jsonl"),
    )
    .unwrap();
    let o = bin()
        .arg("report")
        .arg(dir.path())
        .args(["--baseline", "fixtures/compare/baseline"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for f in [
        "summary.json",
        "summary.csv",
        "summary.md",
        "junit.xml",
        "outcomes.parquet",
        "index.html",
        "compare.md",
    ] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    assert!(read(&dir.path().join("summary.md")).contains("REGRESSED"));
    assert!(read(&dir.path().join("index.html")).contains("Comparison with baseline"));
}

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DISCBENCH_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
}

fn chrome(exe: &Path, extra: &[&str], url: &str) -> Output {
    let profile = tempfile::tempdir().unwrap();
    Command::new(exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .output()
        .unwrap()
}

/// The explorer's data blocks of a page: id → base64 text.
fn data_blocks(html: &str) -> std::collections::BTreeMap<String, String> {
    let re =
        regex::Regex::new(r"<script type=application/gzip id=([^>]+)>([^<]*)</script>").unwrap();
    re.captures_iter(html)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect()
}

/// Every outcome of the run is in the page's explorer, and its drill-down holds what
/// the record holds: each turn's entries (layer, what, tokens, text as cut for the
/// page), the calls, the tokens; rows come in plan order.
#[test]
fn the_explorer_holds_every_outcome_and_its_drill_down() {
    use discbench::record::manifest::Manifest;
    use discbench::record::texts::TextStore;
    use discbench::record::{Outcome, OutcomeKey};
    use discbench::report::explorer::{clip, expand, CHUNK};

    let (_d, run) = tiny_run("explorer");
    let blocks = data_blocks(&read(&run.join("index.html")));
    let rows = expand(&blocks["d-rows"]).unwrap();
    let strings = expand(&blocks["d-strings"]).unwrap();
    let strings: Vec<&str> = strings
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let s =
        |v: &Value| -> Option<&str> { v.as_i64().filter(|i| *i >= 0).map(|i| strings[i as usize]) };
    let col = |name: &str| -> Vec<u64> {
        rows["cols"][name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let dict = |name: &str| -> Vec<String> {
        rows[name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let (scenarios, modes, models) = (dict("scenarios"), dict("modes"), dict("models"));
    let queries = rows["queries"].as_array().unwrap();
    let (q, m, md, r, d, bi, x) = (
        col("q"),
        col("m"),
        col("md"),
        col("r"),
        col("d"),
        col("bi"),
        col("x"),
    );
    let key = |i: usize| OutcomeKey {
        scenario: scenarios[queries[q[i] as usize][0].as_u64().unwrap() as usize].clone(),
        query_id: queries[q[i] as usize][1].as_str().unwrap().to_string(),
        mode: modes[m[i] as usize].clone(),
        model: models[md[i] as usize].clone(),
        repeat: r[i] as usize,
    };
    let index: std::collections::HashMap<OutcomeKey, usize> =
        (0..q.len()).map(|i| (key(i), i)).collect();
    // Rows in plan order.
    let positions = Manifest::load(&run).unwrap().positions();
    let ranks: Vec<_> = (0..q.len())
        .map(|i| {
            (
                positions.get(&key(i)).copied().unwrap_or(usize::MAX),
                key(i),
            )
        })
        .collect();
    assert!(
        ranks.windows(2).all(|w| w[0] <= w[1]),
        "rows are not in plan order"
    );

    let texts = TextStore::load(&run).unwrap();
    let lines = read(&run.join("outcomes.jsonl"));
    let mut seen = 0;
    for line in lines.lines() {
        let mut o: Outcome = serde_json::from_str(line).unwrap();
        texts.resolve(&mut o);
        let i = *index
            .get(&o.key())
            .unwrap_or_else(|| panic!("{} has no row", o.key()));
        seen += 1;
        assert_eq!(bi[i] as usize, o.tokens.billed_input, "{}", o.key());
        assert_eq!(x[i], u64::from(o.score.exact), "{}", o.key());
        let chunk = expand(&blocks[&format!("d-det-{}", d[i] as usize / CHUNK)]).unwrap();
        let det = &chunk[d[i] as usize % CHUNK];
        assert_eq!(
            det["l"][7].as_u64().unwrap() as usize,
            o.tokens.billed_input
        );
        let turns = det["t"].as_array().unwrap();
        assert_eq!(turns.len(), o.requests.len(), "{}", o.key());
        for (t, want) in turns.iter().zip(&o.requests) {
            assert_eq!(t[0].as_u64().unwrap() as usize, want.request);
            assert_eq!(t[1].as_u64().unwrap() as usize, want.request_tokens);
            let entered = t[4].as_array().unwrap();
            assert_eq!(
                entered.len(),
                want.entered.len(),
                "{} turn {}",
                o.key(),
                want.request
            );
            for (e, w) in entered.iter().zip(&want.entered) {
                assert_eq!(s(&e[1]), Some(w.what.as_str()));
                assert_eq!(e[2].as_u64().unwrap() as usize, w.tokens);
                assert_eq!(
                    s(&e[3]).map(str::to_string),
                    w.text.as_deref().map(clip),
                    "{} {}",
                    o.key(),
                    w.what
                );
            }
        }
        let calls = det["c"].as_array().unwrap();
        assert_eq!(calls.len(), o.calls.len());
        for (c, w) in calls.iter().zip(&o.calls) {
            assert_eq!(s(&c[1]), Some(w.tool.as_str()));
            assert_eq!(s(&c[2]).map(str::to_string), Some(clip(&w.arguments)));
        }
        assert_eq!(
            s(&det["ft"]).map(str::to_string),
            o.final_text.as_deref().map(clip)
        );
    }
    assert_eq!(seen, q.len(), "a row without an outcome");
    assert!(seen > 10, "the tiny run has {seen} outcomes");
}

/// Opens the report of three of the built-in scenarios run five times over (8,100
/// outcomes, the size the page was made light for) in headless Chromium at 1,400 × 900:
/// the page weighs at most 5 MB. Its `#selftest` hook checks, and this test reads back:
/// the body never scrolls sideways (with the folded columns shown too); the first
/// chart lies inside the first viewport; no chart text is drawn under 12 px (each
/// scenario's chart shown in turn, the plots at their scale on the page); hovering
/// the first point shows its mode, model, exact match with its interval and billed
/// input — which must be the group's numbers in `summary.json` — and picking another
/// metric redraws the matrix; filtering the groups table by mode, scenario and model
/// shows exactly the rows named, and sorting the filtered rows by billed input orders
/// them both ways. As before, it sorts a summary table both ways (the column with the
/// most distinct values), filters the outcome table to the last repeat, sorts it by
/// billed input both ways, and opens the first outcome's drill-down, which must show
/// that outcome (its key, its billed input and each of its calls); the page logs no
/// console error and leaves a 1,400 × 900 screenshot in the run directory, which stays
/// under `CARGO_TARGET_TMPDIR/browser-report/` for a look after the test. Chromium is
/// installed by `.ci/run`; where it is missing outside CI, the test says so and does
/// nothing.
#[test]
fn html_report_of_8100_outcomes_is_light_and_drills_down_in_headless_chromium() {
    use discbench::record::texts::TextStore;
    use discbench::record::Outcome;

    let Some(exe) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "Chromium is required in CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED: no chromium on PATH; install Debian's `chromium` to run this test");
        return;
    };
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-report");
    if out.exists() {
        std::fs::remove_dir_all(&out).unwrap();
    }
    std::fs::create_dir_all(&out).unwrap();
    let o = bin()
        .args([
            "run",
            "scenarios/enterprise-hub.yaml",
            "scenarios/mcp-reference.yaml",
            "scenarios/large-catalog.yaml",
            "--repeat",
            "5",
            "--run-id",
            "browser",
            "--no-progress",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = out.join("browser");
    let lines = read(&run.join("outcomes.jsonl"));
    assert_eq!(lines.lines().count(), 8100);
    let size = std::fs::metadata(run.join("index.html")).unwrap().len();
    assert!(size <= 5_000_000, "index.html weighs {size} bytes");

    let page = std::fs::canonicalize(run.join("index.html")).unwrap();
    let url = format!("file://{}#selftest", page.display());
    let o = chrome(
        &exe,
        &[
            "--window-size=1400,900",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=20000",
            "--dump-dom",
        ],
        &url,
    );
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dom = stdout(&o);
    let selftest = dom
        .lines()
        .find(|l| l.contains("id=\"selftest\""))
        .unwrap_or("no selftest element");
    assert!(
        dom.contains("data-result=\"pass\""),
        "self-test did not pass: {selftest}"
    );
    assert!(selftest.contains("data-rows=\"8100\""), "{selftest}");
    let attr = |name: &str| -> String {
        regex::Regex::new(&format!(r#"data-{name}="([^"]*)""#))
            .unwrap()
            .captures(selftest)
            .unwrap_or_else(|| panic!("no data-{name}: {selftest}"))[1]
            .to_string()
    };
    // Laid out at 1,400 pixels: nothing wider, the first chart in the first screen.
    let (w, h) = attr("viewport")
        .split_once('x')
        .map(|(w, h)| (w.parse::<f64>().unwrap(), h.parse::<f64>().unwrap()))
        .unwrap();
    assert_eq!(w, 1400.0, "{selftest}");
    assert_eq!(attr("overflow"), "0");
    assert_eq!(attr("overflow-more"), "0");
    let chart: Vec<f64> = attr("chart")
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        chart[2] > 300.0 && chart[0] + chart[2] <= w && chart[1] + chart[3] <= h,
        "the first chart {chart:?} is not within {w} x {h}"
    );
    // The groups table's header stays at the top of the window while its rows scroll.
    let sticky: f64 = attr("sticky").split(' ').next().unwrap().parse().unwrap();
    assert!(sticky.abs() <= 1.0, "{selftest}");
    let min_font: f64 = attr("font-min").parse().unwrap();
    assert!(min_font >= 12.0, "chart text at {min_font} px");
    assert!(attr("texts").parse::<usize>().unwrap() > 100, "{selftest}");
    // The hovered point shows its group's numbers, as summary.json has them.
    let hover = attr("hover");
    let summary: Value = serde_json::from_str(&read(&run.join("summary.json"))).unwrap();
    let g = summary["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            hover.starts_with(&format!(
                "{} · {}",
                g["mode"].as_str().unwrap(),
                g["model"].as_str().unwrap()
            )) && g["scenario"] == summary["groups"][0]["scenario"]
        })
        .unwrap_or_else(|| panic!("the tooltip names no group: {hover}"));
    let pct = |v: &Value| format!("{:.1}%", v.as_f64().unwrap() * 100.0);
    let e = &g["exact"];
    let want = format!(
        "exact match {} [{}, {}]",
        pct(&e["rate"]),
        pct(&e["lo"]),
        pct(&e["hi"])
    );
    assert!(hover.contains(&want), "'{hover}' lacks '{want}'");
    let billed = g["tokens"]["billed_input"]["median"].as_f64().unwrap();
    // Whole tokens as every report prints them (`{:.0}`).
    let whole = |x: f64| thousands(format!("{x:.0}").parse().unwrap());
    let want = format!("billed input {} tokens", whole(billed));
    assert!(hover.contains(&want), "'{hover}' lacks '{want}'");
    // The matrix redrawn with billed input: one cell per group of the first scenario.
    let cells = attr("matrix");
    let first: Vec<&Value> = summary["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["scenario"] == summary["groups"][0]["scenario"])
        .collect();
    assert_eq!(cells.split('|').count(), first.len(), "{cells}");
    assert!(
        cells.contains(&thousands(billed.round() as usize)),
        "{cells}"
    );
    // Filters and sorting ran on the groups table (the page checked the rows).
    assert!(attr("filtered").contains("mode="), "{selftest}");
    assert!(attr("sorted").contains(" first of "), "{selftest}");
    // The drilled outcome is one of the last repeat's, and the drill-down shows it.
    let drilled = regex::Regex::new(r#"data-drilled="([^"]+)""#)
        .unwrap()
        .captures(selftest)
        .unwrap()[1]
        .to_string();
    assert!(
        drilled.ends_with("#4"),
        "drilled into {drilled}, not the last repeat"
    );
    let texts = TextStore::load(&run).unwrap();
    let want = lines
        .lines()
        .map(|l| serde_json::from_str::<Outcome>(l).unwrap())
        .find(|o| {
            format!(
                "{}/{}/{}/{}#{}",
                o.scenario, o.query_id, o.mode, o.model, o.repeat
            ) == drilled
        })
        .map(|mut o| {
            texts.resolve(&mut o);
            o
        })
        .unwrap_or_else(|| panic!("no outcome {drilled}"));
    let start = dom
        .find(&format!("data-key=\"{drilled}\""))
        .expect("the drill-down is in the page");
    let detail = &dom[start..];
    let detail = &detail[..detail.find("</div>").unwrap_or(detail.len())];
    let billed = format!("billed input {}", thousands(want.tokens.billed_input));
    assert!(detail.contains(&billed), "the drill-down lacks '{billed}'");
    for c in &want.calls {
        assert!(
            detail.contains(&format!("<code>{}(", c.tool)),
            "the drill-down lacks the call to {}",
            c.tool
        );
    }
    assert_eq!(
        detail.matches("class=\"request\"").count(),
        want.requests.len()
    );
    let log = String::from_utf8_lossy(&o.stderr);
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(
        console_errors.is_empty(),
        "console messages: {console_errors:?}"
    );
    assert!(
        !log.contains("net::ERR"),
        "the page made a network request: {log}"
    );

    let shot = run.join("screenshot.png");
    let o = chrome(
        &exe,
        &[
            "--window-size=1400,900",
            &format!("--screenshot={}", shot.display()),
        ],
        &format!("file://{}", page.display()),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 10_000,
        "a blank screenshot is small: {} bytes",
        png.len()
    );
    println!("screenshot: {}", shot.display());
}

/// `1,234,567`, as the page prints counts.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn html_is_self_contained() {
    let (_d, run) = tiny_run("offline");
    let html = read(&run.join("index.html"));
    for needle in ["http://", "https://", "<link", "src=\"", "@import", "url("] {
        let hits: Vec<&str> = html
            .match_indices(needle)
            .map(|(i, _)| around(&html, i, 40, 60))
            .collect();
        // The SVG namespace is an identifier, not a request.
        let real: Vec<&&str> = hits
            .iter()
            .filter(|h| !h.contains("www.w3.org/2000/svg"))
            .collect();
        assert!(real.is_empty(), "{needle}: {real:?}");
    }
}

#[test]
fn a_closed_stdout_is_not_an_error_and_the_report_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--run-id",
            "pipe",
            "--out",
        ])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(dir.path().join("pipe/index.html").is_file());
}

/// Code mode: the drill-down shows each program and points each call a program made
/// back to that program's row.
#[test]
fn a_programs_calls_point_to_it_in_the_drill_down() {
    use discbench::record::Outcome;
    use discbench::report::explorer::{expand, CHUNK};
    let dir = tempfile::tempdir().unwrap();
    let o = bin()
        .args([
            "run",
            "fixtures/snapshot/tiny.yaml",
            "--mode",
            "code-mode",
            "--model",
            "oracle",
            "--run-id",
            "code",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let run = dir.path().join("code");
    let blocks = data_blocks(&read(&run.join("index.html")));
    let rows = expand(&blocks["d-rows"]).unwrap();
    let d: Vec<usize> = rows["cols"]["d"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let outcomes: Vec<Outcome> = read(&run.join("outcomes.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = rows["cols"]["q"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            rows["queries"][q.as_u64().unwrap() as usize][1]
                .as_str()
                .unwrap()
        })
        .collect();
    let mut inner = 0;
    for o in &outcomes {
        let i = ids.iter().position(|id| *id == o.query_id).unwrap();
        let chunk = expand(&blocks[&format!("d-det-{}", d[i] / CHUNK)]).unwrap();
        let calls = chunk[d[i] % CHUNK]["c"].as_array().unwrap().clone();
        assert_eq!(calls.len(), o.calls.len());
        for (c, w) in calls.iter().zip(&o.calls) {
            assert_eq!(c[7].as_i64(), Some(w.program.map_or(-1, |p| p as i64)));
            if let Some(p) = w.program {
                inner += 1;
                assert_eq!(o.calls[p].tool, "run_code");
            }
        }
    }
    assert!(inner >= 3, "the oracle's programs made {inner} calls");
}

/// A baseline written before format 4 (its layer `first_turn`, rate `hit_max_turns`,
/// `savings_first_turn`) compares against today's run as it was meant, metric for
/// metric, and a threshold under the old name `first_turn` is the one of
/// `first_request`: the summary.json other repositories committed keeps gating.
#[test]
fn a_baseline_in_the_old_words_still_gates() {
    let old = read(Path::new("fixtures/compare/format3/summary.json"));
    assert!(old.contains("\"first_turn\"") && old.contains("\"hit_max_turns\""));
    let o = bin()
        .args(["compare", "fixtures/compare/format3/summary.json"])
        .args(["fixtures/compare/baseline", "--out", "/dev/null"])
        .args(["--threshold", "first_turn=0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let text = stdout(&o);
    assert!(
        text.contains("0 regressed, 0 improved, 72 within noise"),
        "{text}"
    );
    // Against the regressed run, the old baseline names the regression in new words.
    let o = bin()
        .args(["compare", "fixtures/compare/format3/summary.json"])
        .args(["fixtures/compare/regressed", "--out", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("| regressed | tiny | progressive | oracle | first_request |"));
}

/// Past `DISCBENCH_SPILL_LIMIT` entries, the JUnit cases and the explorer's rows are
/// sorted in runs on disk and merged: the files come out byte for byte as the sort in
/// memory writes them, on lines out of plan order with repeats outside the plan. A
/// limit that is not a positive number is refused, naming the variable.
#[test]
fn reports_sorted_on_disk_match_those_sorted_in_memory() {
    let (_keep, run) = tiny_run("spill");
    let outcomes = run.join("outcomes.jsonl");
    let lines: Vec<String> = read(&outcomes).lines().map(str::to_string).collect();
    assert!(lines.len() >= 4, "{} lines", lines.len());
    // Each pass backwards, the repeats out of order.
    let mut scrambled = String::new();
    for r in [2, 0, 1] {
        for l in lines.iter().rev() {
            assert!(l.contains("\"repeat\":0,"), "{l}");
            scrambled += &l.replacen("\"repeat\":0,", &format!("\"repeat\":{r},"), 1);
            scrambled.push('\n');
        }
    }
    std::fs::write(&outcomes, scrambled).unwrap();
    let report = |limit: Option<&str>| {
        let mut c = bin();
        c.arg("report").arg(&run);
        if let Some(l) = limit {
            c.env("DISCBENCH_SPILL_LIMIT", l);
        }
        let o = c.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    assert_eq!(report(None).0, Some(0));
    let junit = read(&run.join("junit.xml"));
    let html = read(&run.join("index.html"));
    assert_eq!(junit.matches("<testcase ").count(), 3 * lines.len());
    for limit in ["1", "2", "5"] {
        let (code, err) = report(Some(limit));
        assert_eq!(code, Some(0), "limit {limit}: {err}");
        assert!(
            read(&run.join("junit.xml")) == junit,
            "junit.xml, limit {limit}"
        );
        assert!(
            read(&run.join("index.html")) == html,
            "index.html, limit {limit}"
        );
    }
    let (code, err) = report(Some("0"));
    assert_ne!(code, Some(0));
    assert!(err.contains("DISCBENCH_SPILL_LIMIT"), "{err}");
}
