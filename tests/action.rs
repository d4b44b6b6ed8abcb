//! The CI gate as a step in someone else's pipeline: the composite action
//! (`action.yml`) and the scripts its steps run (`scripts/action/`), run here as a job
//! would run them, on a scratch repository that is not discbench — a first run that
//! records the baseline, then an unchanged repository, a change that costs tokens and
//! one that saves them — checking exit codes, `$GITHUB_STEP_SUMMARY` and
//! `$GITHUB_OUTPUT`; the install script's paths (cached from this very source, built,
//! no toolchain) with a stand-in `cargo`; the cache key; that `action.yml` hands every
//! input to the scripts and takes every output from them. And the shell habits, from
//! the binary: `completions` for every shell and `man` name every command and every
//! flag of `run` as the clap definitions hold them, and `report --open` hands the page
//! to a stand-in browser, or says there is none. Only the binary cargo built and the
//! mock models run: no network, no build.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const BIN: &str = env!("CARGO_BIN_EXE_discbench");

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn script(name: &str) -> PathBuf {
    crate_root().join("scripts/action").join(name)
}

/// A fresh directory of this test binary's own, under cargo's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("action")
        .join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A program on the test's PATH.
fn which(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH");
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is not on PATH"))
}

/// PATH with the built binary's directory first, so that `discbench` is this build.
fn path_with_discbench() -> String {
    let bin_dir = Path::new(BIN).parent().expect("a directory");
    let rest = std::env::var("PATH").unwrap_or_default();
    format!("{}:{rest}", bin_dir.display())
}

/// `key=value` lines, as `$GITHUB_OUTPUT` holds them.
fn outputs(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The scratch repository's scenario: one MCP server, two queries that need a tool
/// and one that needs none. The ledger tool is a distractor whose description shares
/// no word with any query, so lengthening or shortening it moves tokens, never which
/// tool the lexical model picks.
fn shop(ledger: &str) -> String {
    format!(
        r#"name: shop
description: A shop's order desk.
catalog:
  mcp_servers:
    - name: shop
      description: The shop's back office.
      tools:
        - name: get_order
          description: Fetch one order by its id, with its lines and total.
          inputSchema: {{type: object, properties: {{order_id: {{type: string, description: The order id.}}}}, required: [order_id]}}
          response: {{order_id: "9921", total: 84.5}}
        - name: cancel_order
          description: Cancel an order that has not shipped yet.
          inputSchema: {{type: object, properties: {{order_id: {{type: string, description: The order id.}}}}, required: [order_id]}}
          response: {{order_id: "4411", status: cancelled}}
        - name: export_ledger
          description: {ledger}
          inputSchema: {{type: object, properties: {{year: {{type: integer}}}}, required: [year]}}
queries:
  - id: order
    text: What is in order 9921?
    expect:
      calls:
        - address: mcp:shop/get_order
          args: {{order_id: ["9921"]}}
  - id: cancel
    text: Cancel order 4411.
    expect:
      calls:
        - address: mcp:shop/cancel_order
          args: {{order_id: ["4411"]}}
  - id: thanks
    text: Thanks, that is all.
    expect: {{calls: []}}
"#
    )
}

const LEDGER: &str = "Export the accounting ledger as a spreadsheet for the finance team, one sheet per quarter, with every journal entry and its approval trail.";
const LEDGER_WORDIER: &str = "Export the accounting ledger as a spreadsheet for the finance team, one sheet per quarter, with every journal entry and its approval trail. It writes each account, counterpart, currency and amount, keeps the formatting the auditors asked for at the last review, and names the file after the year.";
const LEDGER_SHORTER: &str = "Export the ledger as a spreadsheet.";

/// A scratch repository holding the scenario, and the committed baseline when given.
fn repository(name: &str, ledger: &str, baseline: Option<&Path>) -> PathBuf {
    let repo = scratch(name);
    fs::create_dir_all(repo.join("scenarios")).expect("scenarios/");
    fs::write(repo.join("scenarios/shop.yaml"), shop(ledger)).expect("the scenario");
    if let Some(b) = baseline {
        fs::create_dir_all(repo.join("baselines")).expect("baselines/");
        fs::copy(b, repo.join("baselines/summary.json")).expect("the baseline");
    }
    repo
}

/// One run of the gate script as the action's step runs it.
struct GateRun {
    code: i32,
    stdout: String,
    stderr: String,
    /// What the step appended to `$GITHUB_STEP_SUMMARY`.
    summary: String,
    /// What it wrote to `$GITHUB_OUTPUT`.
    outputs: BTreeMap<String, String>,
}

impl GateRun {
    fn output(&self, key: &str) -> &str {
        self.outputs
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no output `{key}` in {:?}", self.outputs))
    }

    fn context(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}\n--- stderr\n{}\n--- summary\n{}",
            self.code, self.stdout, self.stderr, self.summary
        )
    }
}

/// Runs `scripts/action/run.sh` in `repo` with the action's inputs as the action
/// passes them (two modes and two models, one a line, blank lines and spaces
/// around), plus `extra`; a fresh job summary and output file each time.
fn gate(repo: &Path, extra: &[(&str, &str)]) -> GateRun {
    let step = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock")
        .as_nanos();
    let summary_file = repo.join(format!("step-summary-{step}.md"));
    let output_file = repo.join(format!("step-output-{step}.txt"));
    fs::write(&summary_file, "").expect("the summary file");
    fs::write(&output_file, "").expect("the output file");
    let mut cmd = Command::new(which("bash"));
    cmd.arg(script("run.sh"))
        .current_dir(repo)
        .env_clear()
        .env("PATH", path_with_discbench())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &summary_file)
        .env("GITHUB_OUTPUT", &output_file)
        .env("DISCBENCH_SCENARIOS", "scenarios\n")
        .env("DISCBENCH_MODES", "legacy\n\n  progressive  \n")
        .env("DISCBENCH_MODELS", " oracle\nlexical");
    if let Some(home) = std::env::var_os("HOME") {
        cmd.env("HOME", home);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("bash runs");
    GateRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        summary: fs::read_to_string(&summary_file).expect("the summary file"),
        outputs: outputs(&fs::read_to_string(&output_file).expect("the output file")),
    }
}

/// The first run of the scratch repository, with no baseline: what the other tests
/// commit as their baseline (`summary.json`), and the run directory `--open` shows.
struct Recorded {
    run: GateRun,
    baseline: PathBuf,
    run_dir: PathBuf,
}

fn recorded() -> &'static Recorded {
    static RECORDED: OnceLock<Recorded> = OnceLock::new();
    RECORDED.get_or_init(|| {
        let repo = repository("record", LEDGER, None);
        let run = gate(&repo, &[]);
        assert_eq!(run.code, 0, "{}", run.context());
        let run_dir = PathBuf::from(run.output("run-dir"));
        let baseline = PathBuf::from(run.output("summary"));
        Recorded {
            run,
            baseline,
            run_dir,
        }
    })
}

#[test]
fn a_first_run_without_a_baseline_records_one() {
    let r = recorded();
    let run = &r.run;
    assert_eq!(run.output("verdict"), "no-baseline", "{}", run.context());
    assert_eq!(run.output("exit-code"), "0");
    assert!(
        r.run_dir.ends_with("discbench-reports/gate"),
        "{}",
        r.run_dir.display()
    );
    assert!(r.run_dir.is_absolute(), "{}", r.run_dir.display());
    assert_eq!(r.baseline, r.run_dir.join("summary.json"));
    assert!(r.baseline.is_file());
    // Both modes and both models ran: the lists were split one item a line.
    for row in [
        "| legacy | lexical | 3 |",
        "| legacy | oracle | 3 |",
        "| progressive | lexical | 3 |",
        "| progressive | oracle | 3 |",
    ] {
        assert!(
            run.summary.contains(row),
            "no row `{row}`:\n{}",
            run.context()
        );
    }
    assert!(
        run.summary.contains("# discbench run `gate`"),
        "{}",
        run.context()
    );
    assert!(
        !run.summary.contains("Comparison with baseline"),
        "{}",
        run.context()
    );
    let markdown = fs::read_to_string(run.output("markdown")).expect("gate.md");
    assert_eq!(markdown, run.summary);
    assert!(!run.stdout.contains("::error"), "{}", run.context());
}

#[test]
fn an_unchanged_repository_passes() {
    let repo = repository("unchanged", LEDGER, Some(&recorded().baseline));
    let run = gate(&repo, &[("DISCBENCH_BASELINE", "baselines/summary.json")]);
    assert_eq!(run.code, 0, "{}", run.context());
    assert_eq!(run.output("verdict"), "ok");
    assert_eq!(run.output("exit-code"), "0");
    let head = "## Comparison with baseline `gate`: no regression";
    assert!(run.summary.starts_with(head), "{}", run.context());
    assert!(
        run.summary.contains("0 regressed, 0 improved"),
        "{}",
        run.context()
    );
    assert!(
        run.summary.contains("No query changed its result."),
        "{}",
        run.context()
    );
    // The comparison first, then the run's own summary.
    let at = run
        .summary
        .find("# discbench run `gate`")
        .expect("the run's summary");
    assert!(at > head.len(), "{}", run.context());
    let markdown = fs::read_to_string(run.output("markdown")).expect("gate.md");
    assert_eq!(markdown, run.summary);
    assert!(!run.stdout.contains("::error"), "{}", run.context());
}

/// The rows of the comparison's table with the given verdict: (mode, model, metric).
fn rows(summary: &str, verdict: &str) -> Vec<(String, String, String)> {
    summary
        .lines()
        .filter(|l| l.starts_with(&format!("| {verdict} | shop |")))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[3].into(), cells[4].into(), cells[5].into())
        })
        .collect()
}

#[test]
fn a_change_that_costs_tokens_fails_the_step() {
    let repo = repository("regressed", LEDGER_WORDIER, Some(&recorded().baseline));
    let baseline = ("DISCBENCH_BASELINE", "baselines/summary.json");
    let run = gate(&repo, &[baseline]);
    assert_eq!(run.code, 1, "{}", run.context());
    assert_eq!(run.output("verdict"), "regressed");
    assert_eq!(run.output("exit-code"), "1");
    assert!(run.output("run-dir").ends_with("discbench-reports/gate"));
    assert!(
        run.summary
            .starts_with("## Comparison with baseline `gate`: REGRESSED"),
        "{}",
        run.context()
    );
    let regressed = rows(&run.summary, "regressed");
    for mode_model in [("legacy", "oracle"), ("legacy", "lexical")] {
        let first_request = (
            mode_model.0.into(),
            mode_model.1.into(),
            "first_request".into(),
        );
        assert!(regressed.contains(&first_request), "{}", run.context());
    }
    // The wordier description costs tokens and no answer.
    assert!(
        run.summary.contains("No query changed its result."),
        "{}",
        run.context()
    );
    assert!(
        run.stdout
            .contains("::error title=discbench::a regression against baselines/summary.json"),
        "{}",
        run.context()
    );

    // Told not to fail on a regression, the step passes and still says so.
    let run = gate(
        &repo,
        &[baseline, ("DISCBENCH_FAIL_ON_REGRESSION", "false")],
    );
    assert_eq!(run.code, 0, "{}", run.context());
    assert_eq!(run.output("verdict"), "regressed");
    assert_eq!(run.output("exit-code"), "1");
    assert!(run.output("run-dir").ends_with("discbench-reports/gate-2"));
    assert!(
        run.stdout.contains("::warning title=discbench::"),
        "{}",
        run.context()
    );
    assert!(run.summary.contains(": REGRESSED"), "{}", run.context());

    // Thresholds wide enough for every metric that moved pass the same change.
    let wide: Vec<String> = regressed
        .iter()
        .map(|(_, _, m)| format!("{m}=1000"))
        .collect();
    let wide = wide.join("\n");
    let run = gate(&repo, &[baseline, ("DISCBENCH_THRESHOLDS", &wide)]);
    assert_eq!(run.code, 0, "{}", run.context());
    assert_eq!(run.output("verdict"), "ok");
    assert!(run.output("run-dir").ends_with("discbench-reports/gate-3"));
    assert!(run.summary.contains(": no regression"), "{}", run.context());
    assert!(run.summary.contains("0 regressed"), "{}", run.context());
}

#[test]
fn a_change_that_saves_tokens_passes() {
    let repo = repository("improved", LEDGER_SHORTER, Some(&recorded().baseline));
    // More arguments, split on white space, go before the scenarios.
    let extra = ("DISCBENCH_ARGS", " --jobs 1\n--max-requests   8 ");
    let run = gate(
        &repo,
        &[("DISCBENCH_BASELINE", "baselines/summary.json"), extra],
    );
    assert_eq!(run.code, 0, "{}", run.context());
    let line = "--baseline baselines/summary.json --jobs 1 --max-requests 8 -- scenarios\n";
    assert!(run.stdout.contains(line), "{}", run.context());
    assert_eq!(run.output("verdict"), "ok");
    assert!(run.summary.contains(": no regression"), "{}", run.context());
    assert!(
        rows(&run.summary, "regressed").is_empty(),
        "{}",
        run.context()
    );
    let improved = rows(&run.summary, "improved");
    let first_request = ("legacy".into(), "oracle".into(), "first_request".into());
    assert!(improved.contains(&first_request), "{}", run.context());
    assert!(!run.stdout.contains("::error"), "{}", run.context());
}

/// Requests that all fail (a model whose server refuses connections) fail the step:
/// exit 3, verdict `failed`, and the job summary's comparison says FAILED, although
/// no metric could regress.
#[test]
fn failed_requests_fail_the_step_with_exit_3() {
    let repo = repository("infra", LEDGER, Some(&recorded().baseline));
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let url = format!("http://{}", l.local_addr().expect("an address"));
        drop(l);
        url
    };
    let args = format!("--openai-base-url {closed} --max-retries 0");
    let run = gate(
        &repo,
        &[
            ("DISCBENCH_BASELINE", "baselines/summary.json"),
            ("DISCBENCH_MODELS", "openai:m"),
            ("DISCBENCH_ARGS", &args),
        ],
    );
    assert_eq!(run.code, 3, "{}", run.context());
    assert_eq!(run.output("verdict"), "failed");
    assert_eq!(run.output("exit-code"), "3");
    assert!(run.output("run-dir").starts_with('/'), "{}", run.context());
    assert!(run.summary.contains("FAILED"), "{}", run.context());
    assert!(
        run.stderr.contains("connection failed ×"),
        "{}",
        run.context()
    );
}

#[test]
fn bad_input_fails_the_step_with_exit_2() {
    let repo = repository("bad-input", LEDGER, None);
    let run = gate(&repo, &[("DISCBENCH_BASELINE", "baselines/missing.json")]);
    assert_eq!(run.code, 2, "{}", run.context());
    assert_eq!(run.output("verdict"), "failed");
    assert_eq!(run.output("exit-code"), "2");
    assert_eq!(run.output("summary"), "");
    assert_eq!(run.output("run-dir"), "", "no run directory was made");
    assert!(run.stderr.contains("--baseline"), "{}", run.context());
    assert!(
        run.summary.starts_with("## discbench: failed (exit 2)"),
        "{}",
        run.context()
    );

    let run = gate(&repo, &[("DISCBENCH_FAIL_ON_REGRESSION", "maybe")]);
    assert_eq!(run.code, 2, "{}", run.context());
    assert!(run.stderr.contains("true or false"), "{}", run.context());
    assert!(
        !repo.join("discbench-reports").exists(),
        "nothing should have run"
    );
}

/// A directory of links to the few programs the install script needs, and nothing
/// else: no cargo, no discbench.
fn tools(dir: &Path) -> PathBuf {
    let tools = dir.join("tools");
    fs::create_dir_all(&tools).expect("tools/");
    for name in [
        "sed",
        "head",
        "dirname",
        "mkdir",
        "chmod",
        "find",
        "sort",
        "xargs",
        "sha256sum",
        "cut",
        "cat",
        "rm",
        "uname",
    ] {
        std::os::unix::fs::symlink(which(name), tools.join(name)).expect("a link");
    }
    tools
}

/// An executable shell script.
fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(path.parent().expect("a directory")).expect("its directory");
    fs::write(path, text).expect("the script");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A stand-in `cargo` in `dir/fake`: it logs its arguments and "installs" a
/// discbench that runs the built one into `--root`.
fn fake_cargo(dir: &Path) -> PathBuf {
    let fake = dir.join("fake");
    let log = dir.join("cargo.log");
    let text = format!(
        r#"#!/bin/sh
echo "$@" > '{log}'
root=""
prev=""
for a in "$@"; do
  if [ "$prev" = --root ]; then root=$a; fi
  prev=$a
done
mkdir -p "$root/bin"
printf '#!/bin/sh\nexec "%s" "$@"\n' '{bin}' > "$root/bin/discbench"
chmod +x "$root/bin/discbench"
"#,
        log = log.display(),
        bin = BIN
    );
    write_script(&fake.join("cargo"), &text);
    fake
}

struct Install {
    code: i32,
    stdout: String,
    stderr: String,
    outputs: BTreeMap<String, String>,
    github_path: String,
    cargo_log: Option<String>,
}

fn install(dir: &Path, path: &[&Path], root: &Path) -> Install {
    let output_file = dir.join("output.txt");
    let path_file = dir.join("path.txt");
    fs::write(&output_file, "").expect("the output file");
    fs::write(&path_file, "").expect("the path file");
    let _ = fs::remove_file(dir.join("cargo.log"));
    let joined: Vec<String> = path.iter().map(|p| p.display().to_string()).collect();
    let out = Command::new(which("bash"))
        .arg(script("install.sh"))
        .current_dir(dir)
        .env_clear()
        .env("PATH", joined.join(":"))
        .env("DISCBENCH_SOURCE", crate_root())
        .env("DISCBENCH_ROOT", root)
        .env("GITHUB_OUTPUT", &output_file)
        .env("GITHUB_PATH", &path_file)
        .output()
        .expect("bash runs");
    Install {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        outputs: outputs(&fs::read_to_string(&output_file).expect("outputs")),
        github_path: fs::read_to_string(&path_file).expect("the path file"),
        cargo_log: fs::read_to_string(dir.join("cargo.log")).ok(),
    }
}

#[test]
fn install_builds_the_source_once_and_never_takes_a_binary_from_path() {
    let dir = scratch("install");
    let tools = tools(&dir);
    let fake = fake_cargo(&dir);
    let bin_dir = Path::new(BIN).parent().expect("a directory");
    let root = dir.join("root");
    let cached = root.join("bin/discbench");

    // A discbench of the source's own version on PATH (this build) is not taken: the
    // version number says nothing of the commit. cargo installs the source, --locked,
    // into the root.
    let i = install(&dir, &[bin_dir, &fake, &tools], &root);
    let why = format!("{}\n{}", i.stdout, i.stderr);
    assert_eq!(i.code, 0, "{why}");
    let log = i.cargo_log.expect("cargo ran");
    let expected = format!(
        "install --locked --force --path {} --root {}",
        crate_root().display(),
        root.display()
    );
    assert_eq!(log.trim(), expected);
    assert_eq!(
        i.outputs.get("bin"),
        Some(&cached.display().to_string()),
        "{why}"
    );
    assert_eq!(i.github_path.trim(), root.join("bin").display().to_string());
    let digest = fs::read_to_string(root.join("source-digest")).expect("the digest is kept");
    assert_eq!(digest.trim().len(), 20, "{digest}");

    // What that left in the root (what the action caches) is used the next time.
    let i = install(&dir, &[&fake, &tools], &root);
    let why = format!("{}\n{}", i.stdout, i.stderr);
    assert_eq!(i.code, 0, "{why}");
    assert!(i.stdout.contains("restored from the cache"), "{why}");
    assert_eq!(i.cargo_log, None, "cargo ran: {why}");
    assert_eq!(
        i.outputs.get("bin"),
        Some(&cached.display().to_string()),
        "{why}"
    );

    // A binary in the root built from another source (a root reused by hand on a
    // self-hosted runner) is built again.
    fs::write(root.join("source-digest"), "00000000000000000000\n").expect("a stale digest");
    let i = install(&dir, &[&fake, &tools], &root);
    let why = format!("{}\n{}", i.stdout, i.stderr);
    assert_eq!(i.code, 0, "{why}");
    assert!(i.cargo_log.is_some(), "cargo did not run: {why}");
    assert_eq!(
        fs::read_to_string(root.join("source-digest")).expect("the digest"),
        digest
    );

    // No toolchain and nothing installed: an infrastructure failure that says why.
    let i = install(&dir, &[bin_dir, &tools], &dir.join("empty-root"));
    assert_eq!(i.code, 3, "{}\n{}", i.stdout, i.stderr);
    assert!(i.stderr.contains("no cargo on PATH"), "{}", i.stderr);
    assert!(i.outputs.is_empty(), "{:?}", i.outputs);
}

#[test]
fn the_cache_key_follows_the_source_and_the_runner() {
    let dir = scratch("cache-key");
    let source = dir.join("source");
    fs::create_dir_all(source.join("src")).expect("src/");
    fs::write(source.join("Cargo.toml"), "[package]\nname = \"x\"\n").expect("Cargo.toml");
    fs::write(source.join("src/main.rs"), "fn main() {}\n").expect("main.rs");
    let key = |os: &str| {
        let output_file = dir.join("output.txt");
        fs::write(&output_file, "").expect("the output file");
        let out = Command::new(which("bash"))
            .arg(script("cache-key.sh"))
            .env("DISCBENCH_SOURCE", &source)
            .env("RUNNER_OS", os)
            .env("RUNNER_ARCH", "X64")
            .env("RUNNER_TOOL_CACHE", dir.join("tool-cache"))
            .env("GITHUB_OUTPUT", &output_file)
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed = outputs(&String::from_utf8_lossy(&out.stdout));
        let written = outputs(&fs::read_to_string(&output_file).expect("outputs"));
        assert_eq!(printed, written);
        (written["key"].clone(), written["root"].clone())
    };
    let (first, root) = key("Linux");
    let digest = first
        .strip_prefix("discbench-Linux-X64-")
        .expect("the key's form");
    assert_eq!(digest.len(), 20, "{first}");
    assert!(digest.chars().all(|c| c.is_ascii_hexdigit()), "{first}");
    let expected_root = dir.join("tool-cache/discbench").join(digest);
    assert_eq!(root, expected_root.display().to_string());
    assert_eq!(key("Linux").0, first, "the same source, another key");

    // Build output and version control are not the source.
    fs::create_dir_all(source.join("target/debug")).expect("target/");
    fs::write(source.join("target/debug/x"), "binary").expect("a build product");
    fs::create_dir_all(source.join(".git")).expect(".git/");
    fs::write(source.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    assert_eq!(key("Linux").0, first);

    // Another runner OS, another key for the same source.
    let mac = key("macOS").0;
    assert_eq!(mac, format!("discbench-macOS-X64-{digest}"));

    // A changed source file, another digest.
    fs::write(source.join("src/main.rs"), "fn main() { }\n").expect("main.rs");
    let changed = key("Linux").0;
    assert_ne!(changed, first);
    assert!(changed.starts_with("discbench-Linux-X64-"));
}

/// `action.yml` as YAML.
fn action() -> serde_yaml_ng::Value {
    let text = fs::read_to_string(crate_root().join("action.yml")).expect("action.yml");
    serde_yaml_ng::from_str(&text).expect("action.yml is YAML")
}

fn str_of<'a>(v: &'a serde_yaml_ng::Value, key: &str) -> &'a str {
    v.get(key)
        .and_then(|x| x.as_str())
        .unwrap_or_else(|| panic!("no string `{key}` in {v:?}"))
}

#[test]
fn the_action_hands_every_input_to_its_scripts_and_takes_every_output_from_them() {
    let action = action();
    let runs = action.get("runs").expect("runs");
    assert_eq!(str_of(runs, "using"), "composite");
    let steps = runs
        .get("steps")
        .and_then(|s| s.as_sequence())
        .expect("steps");
    let step = |id: &str| {
        steps
            .iter()
            .find(|s| s.get("id").and_then(|i| i.as_str()) == Some(id))
            .unwrap_or_else(|| panic!("no step `{id}`"))
    };

    // Every shell step runs a script of scripts/action/ that exists, and says so.
    let mut scripts = 0;
    for s in steps {
        if let Some(run) = s.get("run").and_then(|r| r.as_str()) {
            assert_eq!(str_of(s, "shell"), "bash");
            let name = run
                .strip_prefix("bash \"$GITHUB_ACTION_PATH/scripts/action/")
                .and_then(|r| r.strip_suffix('"'))
                .unwrap_or_else(|| panic!("`{run}` is not a script of scripts/action/"));
            assert!(
                script(name).is_file(),
                "scripts/action/{name} does not exist"
            );
            scripts += 1;
        }
    }
    assert_eq!(scripts, 3);

    // The cache holds the install root under the key the key step computes, and the
    // install step installs into that root.
    let cache = step("cache");
    assert!(str_of(cache, "uses").starts_with("actions/cache@"));
    let with = cache.get("with").expect("with");
    assert_eq!(str_of(with, "path"), "${{ steps.key.outputs.root }}");
    assert_eq!(str_of(with, "key"), "${{ steps.key.outputs.key }}");
    let install_env = step("install").get("env").expect("env");
    assert_eq!(
        str_of(install_env, "DISCBENCH_ROOT"),
        "${{ steps.key.outputs.root }}"
    );
    assert_eq!(
        str_of(install_env, "DISCBENCH_SOURCE"),
        "${{ github.action_path }}"
    );

    // Every input reaches the gate step, in a variable run.sh reads.
    let run_sh = fs::read_to_string(script("run.sh")).expect("run.sh");
    let gate = step("gate");
    let env = gate.get("env").and_then(|e| e.as_mapping()).expect("env");
    let passed: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| {
            let k = k.as_str().expect("a name").to_string();
            (k, v.as_str().expect("a value").to_string())
        })
        .collect();
    for name in passed.keys() {
        assert!(run_sh.contains(name.as_str()), "run.sh never reads {name}");
    }
    let inputs = action
        .get("inputs")
        .and_then(|i| i.as_mapping())
        .expect("inputs");
    assert!(inputs.len() >= 10, "{inputs:?}");
    for (name, spec) in inputs {
        let name = name.as_str().expect("a name");
        assert!(
            !str_of(spec, "description").is_empty(),
            "{name} has no description"
        );
        let expr = format!("${{{{ inputs.{name} }}}}");
        let used = passed.values().any(|v| *v == expr)
            || gate.get("working-directory").and_then(|w| w.as_str()) == Some(&expr);
        assert!(used, "input `{name}` never reaches the gate step");
    }
    assert_eq!(
        passed.get("DISCBENCH_BIN").map(String::as_str),
        Some("${{ steps.install.outputs.bin }}")
    );

    // Every output is one run.sh writes.
    let outputs = action
        .get("outputs")
        .and_then(|o| o.as_mapping())
        .expect("outputs");
    for name in ["verdict", "exit-code", "run-dir", "summary", "markdown"] {
        let spec = outputs
            .get(name)
            .unwrap_or_else(|| panic!("no output {name}"));
        let value = str_of(spec, "value");
        assert_eq!(value, format!("${{{{ steps.gate.outputs.{name} }}}}"));
        assert!(
            run_sh.contains(&format!("echo \"{name}=")),
            "run.sh never writes {name}"
        );
    }
    assert_eq!(outputs.len(), 5);
}

/// A copy of the recorded run directory, to re-render.
fn run_copy(name: &str) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        fs::create_dir_all(to).expect("a directory");
        for entry in fs::read_dir(from).expect("a directory") {
            let entry = entry.expect("an entry");
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                fs::copy(entry.path(), &target).expect("a copy");
            }
        }
    }
    let dir = scratch(name);
    let run = dir.join("run");
    copy(&recorded().run_dir, &run);
    run
}

/// `discbench report RUN --open` with the given environment (and nothing else but
/// PATH, set or not).
fn report_open(run: &Path, path: Option<&Path>, env: &[(&str, &Path)]) -> (i32, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("report").arg(run).arg("--open").env_clear();
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("discbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn report_open_hands_the_page_to_the_opener() {
    let run = run_copy("open");
    let dir = run.parent().expect("a directory").to_path_buf();
    let opened = dir.join("opened.txt");
    let opener = dir.join("opener");
    write_script(
        &opener,
        &format!("#!/bin/sh\necho \"$@\" > '{}'\n", opened.display()),
    );
    let (code, stderr) = report_open(&run, None, &[("DISCBENCH_OPENER", &opener)]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::path::absolute(run.join("index.html")).expect("a path");
    assert!(page.is_file());
    let got = fs::read_to_string(&opened).expect("the opener ran");
    assert_eq!(got.trim(), page.display().to_string());
    assert!(!stderr.contains("no browser"), "{stderr}");
}

#[test]
fn report_open_without_a_browser_says_so_and_succeeds() {
    let run = run_copy("open-none");
    let dir = run.parent().expect("a directory").to_path_buf();
    let page = std::path::absolute(run.join("index.html")).expect("a path");

    // No DISCBENCH_OPENER, no BROWSER, and a PATH where no platform opener lives.
    let empty = dir.join("empty-path");
    fs::create_dir_all(&empty).expect("a directory");
    let (code, stderr) = report_open(&run, Some(&empty), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("no browser opened the page"), "{stderr}");
    assert!(stderr.contains("not found"), "{stderr}");
    assert!(
        stderr.contains(&format!("open {} yourself", page.display())),
        "{stderr}"
    );
    assert!(page.is_file(), "the report was not written");

    // An opener that fails: said, and still exit 0.
    let failing = dir.join("failing-opener");
    write_script(&failing, "#!/bin/sh\nexit 4\n");
    let (code, stderr) = report_open(&run, Some(&empty), &[("DISCBENCH_OPENER", &failing)]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("exited with"), "{stderr}");
    assert!(stderr.contains("no browser opened the page"), "{stderr}");
}

/// The command line as the binary parses it.
fn definitions() -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = discbench::cli::Cli::command();
    cmd.build();
    cmd
}

/// The names of the commands directly under `cmd` (clap's own `help` aside).
fn command_names(cmd: &clap::Command) -> Vec<String> {
    cmd.get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "help")
        .collect()
}

/// Runs the binary; its exit code, stdout and stderr.
fn discbench(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .output()
        .expect("discbench runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Where the shell is installed, it reads the script without a syntax error (`-n`:
/// parse, run nothing); bash is, zsh and fish may be.
fn parses(shell: &str, file: &Path) {
    match Command::new(shell).arg("-n").arg(file).output() {
        Ok(out) => assert!(
            out.status.success(),
            "{shell} -n: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && shell != "bash" => {
            eprintln!("{shell} is not installed: its script's syntax is not checked");
        }
        Err(e) => panic!("{shell}: {e}"),
    }
}

#[test]
fn every_completion_script_names_every_command() {
    let dir = scratch("completions");
    let names = command_names(&definitions());
    assert!(names.len() >= 12, "too few commands: {names:?}");
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, script, stderr) = discbench(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {stderr}");
        assert!(script.len() > 1000, "{shell}: {} bytes", script.len());
        for name in &names {
            assert!(
                script.contains(name.as_str()),
                "{shell} does not name `{name}`"
            );
        }
        // A flag only one command has, and one of a nested command.
        for flag in [
            "max-requests",
            "open",
            "near-duplicates",
            "protocol-version",
        ] {
            assert!(script.contains(flag), "{shell} does not complete --{flag}");
        }
        if ["bash", "zsh", "fish"].contains(&shell) {
            let file = dir.join(format!("discbench.{shell}"));
            fs::write(&file, &script).expect("the script");
            parses(shell, &file);
        }
    }
    let (code, _, stderr) = discbench(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{stderr}");
}

/// Roff with its escapes for `-` and `'` undone, so flags read as typed.
fn plain(roff: &str) -> String {
    roff.replace("\\-", "-").replace("\\*(Aq", "'")
}

#[test]
fn the_man_page_names_every_command_and_every_flag_of_run() {
    let root = definitions();
    let (code, page, stderr) = discbench(&["man"]);
    assert_eq!(code, 0, "{stderr}");
    let page = plain(&page);
    assert!(page.contains(".TH discbench 1"), "{page}");
    for name in command_names(&root) {
        let listed = format!("discbench-{name}(1)");
        assert!(
            page.contains(&listed),
            "discbench(1) does not list `{name}`"
        );
    }

    let (code, page, stderr) = discbench(&["man", "run"]);
    assert_eq!(code, 0, "{stderr}");
    let page = plain(&page);
    assert!(page.contains(".TH discbench-run 1"), "{page}");
    let run = root.find_subcommand("run").expect("run");
    let flags: Vec<&str> = run.get_arguments().filter_map(|a| a.get_long()).collect();
    assert!(flags.len() > 30, "too few flags: {flags:?}");
    for flag in flags {
        let shown = format!("--{flag}");
        assert!(page.contains(&shown), "discbench-run(1) lacks {shown}");
    }

    let (code, _, stderr) = discbench(&["man", "import", "nope"]);
    assert_eq!(code, 2, "{stderr}");
    let why = "`discbench import` has no command `nope`; it has: bfcl, mcp";
    assert!(stderr.contains(why), "{stderr}");
}

#[test]
fn man_out_writes_a_page_per_command() {
    let dir = scratch("man").join("man1");
    let shown = dir.display().to_string();
    let (code, listed, stderr) = discbench(&["man", "--out", &shown]);
    assert_eq!(code, 0, "{stderr}");
    let mut expected = vec!["discbench.1".to_string()];
    for name in command_names(&definitions()) {
        expected.push(format!("discbench-{name}.1"));
    }
    expected.extend([
        "discbench-import-bfcl.1".into(),
        "discbench-import-mcp.1".into(),
    ]);
    for file in &expected {
        let path = dir.join(file);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let title = file.trim_end_matches(".1");
        assert!(text.contains(&format!(".TH {title} 1")), "{file}: {text}");
        assert!(
            listed.contains(&path.display().to_string()),
            "{file} not listed"
        );
    }
    assert_eq!(listed.lines().count(), expected.len(), "{listed}");
    let mut files: Vec<String> = fs::read_dir(&dir)
        .expect("man1/")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    expected.sort();
    assert_eq!(files, expected);
}
