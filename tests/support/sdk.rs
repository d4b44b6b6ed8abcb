//! Request bodies checked against the official provider SDKs' own request types
//! (openai, anthropic, google-genai; pinned in `scripts/sdk/requirements.txt`), strictly:
//! `scripts/sdk/validate.py` refuses an unknown key at any depth, a missing required
//! key and a wrong type. The Python is `DISCBENCH_SDK_PYTHON`, else the virtualenv
//! `.ci/run` makes (`target/sdk-venv`); in CI it must be there, elsewhere a test
//! without it says so and checks nothing more.

// Each test file uses part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use super::server::Seen;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python that has the pinned SDKs, if any: looked for once per test binary (each
/// look imports the three SDKs, seconds of a core).
pub fn python() -> Option<String> {
    static FOUND: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    FOUND.get_or_init(find_python).clone()
}

fn find_python() -> Option<String> {
    let candidates = [
        std::env::var("DISCBENCH_SDK_PYTHON").ok(),
        Some(
            root()
                .join("target/sdk-venv/bin/python")
                .display()
                .to_string(),
        ),
    ];
    let found = candidates.into_iter().flatten().find(|py| {
        Command::new(py)
            .args(["-c", "import openai, anthropic, google.genai"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the provider SDKs are required in CI (.ci/run installs them into target/sdk-venv)"
        );
        eprintln!(
            "NOT CHECKED against the SDK types: no Python with the pinned SDKs; \
             python3 -m venv target/sdk-venv && target/sdk-venv/bin/pip install --no-deps -r scripts/sdk/requirements.txt"
        );
    }
    found
}

/// Validates, as requests of `api` (`chat`, `responses`, `anthropic`, `gemini`), every
/// body in `seen` that shows something no earlier one showed: a key at a path, or a
/// `type` value at a path (a block, an item, a tool of a kind not seen before). So every
/// shape the server received is checked once, and a run of hundreds of requests costs
/// a few dozen validations. Panics with the validator's report when one is refused;
/// returns how many bodies were checked (0 when no Python has the SDKs).
pub fn check(seen: &[Seen], api: &str, label: &str) -> usize {
    let Some(py) = python() else {
        return 0;
    };
    let mut shown = std::collections::BTreeSet::new();
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    let mut checked = 0;
    for (i, s) in seen.iter().enumerate() {
        let mut shape = std::collections::BTreeSet::new();
        paths(&s.body, "", &mut shape);
        if shape.is_subset(&shown) {
            continue;
        }
        shown.extend(shape);
        checked += 1;
        let line =
            serde_json::json!({"api": api, "where": format!("{label} #{i}"), "body": s.body});
        writeln!(file, "{line}").expect("written");
    }
    file.flush().expect("flushed");
    let out = Command::new(&py)
        .arg(root().join("scripts/sdk/validate.py"))
        .arg(file.path())
        .output()
        .expect("the validator runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{label}: request bodies the {api} SDK's types refuse:\n{text}"
    );
    assert!(
        text.contains(&format!("{checked} bodies, 0 refused")),
        "{text}"
    );
    checked
}

/// The shape of a JSON value: each key by its path, and each `type` value by its path.
fn paths(v: &serde_json::Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                let here = format!("{at}.{k}");
                if k == "type" {
                    if let Some(t) = x.as_str() {
                        out.insert(format!("{here}={t}"));
                    }
                }
                // A schema's or a call's inside is the catalog's, not the wire's.
                let free = matches!(
                    k.as_str(),
                    "parameters" | "input_schema" | "arguments" | "parametersJsonSchema" | "args"
                ) || (k == "input" && at.ends_with("content[]"));
                if free {
                    out.insert(here);
                    continue;
                }
                paths(x, &here, out);
                out.insert(here);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                paths(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}
