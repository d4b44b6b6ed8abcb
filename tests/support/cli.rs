//! The discbench binary as the integration tests run it, and the check that a run of
//! it succeeded.

// Each user needs only part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// The binary, in CI mode, with none of the variables that change modes or protocol
/// settings inherited from the environment.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_discbench"));
    c.env("CI", "true");
    for v in [
        "SKILL_TOOL_MODE",
        "CONNECTOR_TOOL_MODE",
        "DATABASE_TOOL_MODE",
        "MCP_TOOL_MODE",
    ]
    .into_iter()
    .chain(discbench::strategy::config::ENV_VARS)
    {
        c.env_remove(v);
    }
    c
}

/// Fails with the command's stdout and stderr unless it exited 0.
pub fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Every file a run wrote under `dir` (more than five of them), and what it printed,
/// is free of `key`.
pub fn assert_no_secret(dir: &Path, o: &Output, key: &str) {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files += 1;
                let bytes = std::fs::read(&p).unwrap();
                assert!(
                    !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                    "{} holds the key",
                    p.display()
                );
            }
        }
    }
    assert!(files > 5, "the run wrote its files");
    for stream in [&o.stdout, &o.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(key));
    }
}

/// A file's text, or a failure naming the file.
pub fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The outcome lines of the run in `dir`, parsed, in the order written (with `Value`'s
/// own `FromStr`: serde_json's optimised parser, not a copy built in the test binary).
pub fn outcomes(dir: &Path) -> Vec<serde_json::Value> {
    read(&dir.join("outcomes.jsonl"))
        .lines()
        .map(|l| l.parse().unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}
