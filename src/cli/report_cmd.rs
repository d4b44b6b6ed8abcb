//! `discbench report`: re-renders every report of a run from its outcomes (no model
//! is called), and the shared end of `run`, `merge` and `report`: aggregate, write
//! every report file, print the table, judge against a baseline; and `report --open`,
//! which hands the page to a browser.

use std::collections::BTreeMap;
use std::path::Path;

use super::args::ReportArgs;
use super::config::{load_baseline, max_infra};
use super::failure::{io, report_failure, Failure};
use crate::analysis::infra::{self, InfraVerdict, Tolerance};
use crate::analysis::{self, compare, Summary};
use crate::exit;
use crate::report::{self, table};

pub fn report(a: ReportArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let thresholds = compare::thresholds(&a.thresholds)
        .map_err(|e| Failure::Usage(format!("--threshold: {e}")))?;
    if !a.run_dir.join("outcomes.jsonl").is_file() {
        return Err(Failure::Usage(format!(
            "{} holds no outcomes.jsonl",
            a.run_dir.display()
        )));
    }
    let baseline = load_baseline(a.baseline.as_deref())?;
    let tolerance = max_infra(a.max_infra.as_deref())?;
    // A re-render judges infra errors only as a gate, against a baseline.
    let finish = Finish {
        savings_against: a.savings_against.as_deref(),
        baseline: baseline.as_ref(),
        thresholds: &thresholds,
        infra: baseline.is_some().then_some(tolerance),
    };
    let code = finish_report(&a.run_dir, &finish, false, out)?;
    if a.open {
        open_page(&a.run_dir.join("index.html"), &Openers::from_env());
    }
    Ok(code)
}

/// How a run's reports are finished: the mode savings are measured against (`None`:
/// what its run.json names, else `legacy`), and what it is judged by — the baseline
/// and its thresholds, and how many infra errors it may hold (`None`: not judged).
pub struct Finish<'a> {
    pub savings_against: Option<&'a str>,
    pub baseline: Option<&'a Summary>,
    pub thresholds: &'a BTreeMap<String, f64>,
    pub infra: Option<Tolerance>,
}

/// Aggregates a run directory, writes every report file, prints the summary table
/// when asked, says when the run is incomplete, and judges it against the baseline
/// when there is one and by its infra errors when asked. Returns the exit code: 3
/// when the run holds more infra errors than tolerated (whatever the baseline says),
/// else 1 on a regression, else 0.
pub fn finish_report(
    dir: &Path,
    finish: &Finish<'_>,
    print_table: bool,
    out: &mut dyn std::io::Write,
) -> Result<i32, Failure> {
    // The page's explorer and the JUnit cases read the outcomes on threads of their
    // own meanwhile.
    let started = report::exporter::Started::start(&dir.join("outcomes.jsonl"));
    let summary = analysis::run_dir::summarize_run_against(dir, finish.savings_against)
        .map_err(report_failure)?;
    if let Some(r) = finish.savings_against {
        if !summary.groups.iter().any(|g| g.mode == r) {
            eprintln!(
                "discbench: --savings-against {r}: no group of this run ran under it, so no savings are shown"
            );
        }
    }
    let infra = match finish.infra {
        Some(t) => infra::judge(&summary, Some(dir), t).map_err(report_failure)?,
        None => None,
    };
    let comparison = finish.baseline.map(|b| {
        let mut c = compare::compare(b, &summary, finish.thresholds);
        c.infra = infra.clone();
        c
    });
    report::write_all_with(dir, &summary, comparison.as_ref(), &started).map_err(report_failure)?;
    if print_table {
        writeln!(out, "{}", table::render(&table::rows(&summary))).map_err(io)?;
        writeln!(
            out,
            "{} outcomes in {}",
            summary.outcomes,
            dir.join("outcomes.jsonl").display()
        )
        .map_err(io)?;
    }
    if let Some((done, planned)) = summary.incomplete() {
        writeln!(
            out,
            "incomplete run: {done} of {planned} work items have an outcome; finish it with `discbench run --resume {}`",
            dir.display()
        )
        .map_err(io)?;
    }
    writeln!(out, "report: {}", dir.join("index.html").display()).map_err(io)?;
    let mut code = exit::OK;
    if let Some(c) = &comparison {
        let md = compare::markdown(c);
        report::write_atomic(&dir.join("compare.md"), md.as_bytes()).map_err(Failure::Infra)?;
        writeln!(out, "\n{md}").map_err(io)?;
        if c.regressed() {
            code = exit::REGRESSION;
        }
    }
    if let Some(i) = &infra {
        say_infra(i, dir);
        if i.failed() {
            code = exit::INFRA;
        }
    }
    Ok(code)
}

/// Says on stderr what the infra errors were and what to do about them.
pub fn say_infra(i: &InfraVerdict, dir: &Path) {
    if i.failed() {
        eprintln!(
            "discbench: the run failed: {}\nIts numbers do not measure the model (exit 3). Fix the cause, then run those items again with `discbench run --resume {} --rerun-infra`; to tolerate some on purpose, give --max-infra N or --max-infra P%.",
            i.message(),
            dir.display()
        );
    } else {
        eprintln!("discbench: tolerated: {}", i.message());
    }
}

/// Where the commands that may open a page come from: `$DISCBENCH_OPENER` (one
/// program, given the page; alone when set), `$BROWSER` (`:`-separated commands, each
/// split on white space, the page replacing `%s` or appended), then the platform's
/// opener.
#[derive(Debug, Clone, Default)]
pub struct Openers {
    pub discbench_opener: Option<String>,
    pub browser: Option<String>,
}

impl Openers {
    pub fn from_env() -> Openers {
        let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Openers {
            discbench_opener: var("DISCBENCH_OPENER"),
            browser: var("BROWSER"),
        }
    }

    /// Each command to try, in order: the program and its arguments, the page included.
    pub fn commands(&self, page: &str) -> Vec<Vec<String>> {
        if let Some(program) = &self.discbench_opener {
            return vec![vec![program.clone(), page.to_string()]];
        }
        let mut out = Vec::new();
        for entry in self.browser.iter().flat_map(|b| b.split(':')) {
            let mut words: Vec<String> = entry.split_whitespace().map(str::to_string).collect();
            if words.is_empty() {
                continue;
            }
            if words.iter().any(|w| w.contains("%s")) {
                for w in &mut words {
                    *w = w.replace("%s", page);
                }
            } else {
                words.push(page.to_string());
            }
            out.push(words);
        }
        let platform: &[&str] = if cfg!(target_os = "macos") {
            &["open"]
        } else if cfg!(windows) {
            &["cmd", "/C", "start", ""]
        } else {
            &["xdg-open"]
        };
        let mut words: Vec<String> = platform.iter().map(|w| w.to_string()).collect();
        words.push(page.to_string());
        out.push(words);
        out
    }
}

/// How long the platform's opener may take to say it failed; one still running then
/// is taken to be showing the page, and left to run (as a browser it started would).
const OPENER_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Opens a written page with the first opener that works. Never fails the command:
/// where no opener works it says so on stderr, naming the page.
pub fn open_page(page: &Path, openers: &Openers) {
    let page = std::path::absolute(page).unwrap_or_else(|_| page.to_path_buf());
    let shown = page.display().to_string();
    let commands = openers.commands(&shown);
    let last = commands.len() - 1;
    let mut tried = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let (program, args) = command.split_first().expect("a command has a program");
        // A command the user named runs to its end, as a terminal browser must; the
        // platform's opener (the last, unless DISCBENCH_OPENER is set) is given a grace.
        let platform = i == last && openers.discbench_opener.is_none();
        match run_opener(program, args, platform) {
            Ok(()) => return,
            Err(why) => tried.push(format!("{program}: {why}")),
        }
    }
    eprintln!(
        "discbench report: no browser opened the page ({}); open {shown} yourself",
        tried.join("; ")
    );
}

/// Runs one opener; Ok when it exited 0 (or, with a grace, still runs after it).
fn run_opener(program: &str, args: &[String], grace: bool) -> Result<(), String> {
    let mut command = std::process::Command::new(program);
    command.args(args);
    if grace {
        command.stdin(std::process::Stdio::null());
    }
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "not found".to_string(),
        _ => e.to_string(),
    })?;
    let start = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("exited with {status}")),
            Ok(None) if grace && start.elapsed() >= OPENER_GRACE => return Ok(()),
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platform() -> Vec<String> {
        let words: &[&str] = if cfg!(target_os = "macos") {
            &["open", "/r/index.html"]
        } else if cfg!(windows) {
            &["cmd", "/C", "start", "", "/r/index.html"]
        } else {
            &["xdg-open", "/r/index.html"]
        };
        words.iter().map(|w| w.to_string()).collect()
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn discbench_opener_alone_then_browser_then_the_platform() {
        let page = "/r/index.html";
        let only = Openers {
            discbench_opener: Some("/bin/my opener".into()),
            browser: Some("firefox".into()),
        };
        assert_eq!(only.commands(page), [words(&["/bin/my opener", page])]);

        let browser = Openers {
            discbench_opener: None,
            browser: Some("w3m:firefox --new-tab %s: :chromium --app=%s --x".into()),
        };
        assert_eq!(
            browser.commands(page),
            [
                words(&["w3m", page]),
                words(&["firefox", "--new-tab", page]),
                words(&["chromium", "--app=/r/index.html", "--x"]),
                platform(),
            ]
        );
        assert_eq!(Openers::default().commands(page), [platform()]);
    }
}
