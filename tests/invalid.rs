//! Data-driven: every file in `fixtures/invalid/` must fail validation with the message
//! that `fixtures/invalid-expected.tsv` gives for it, and `discbench validate` must
//! exit 2 on it. Every file needs a line in the manifest and every line a file.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn manifest() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string("fixtures/invalid-expected.tsv").unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (f, m) = l.split_once('\t').expect("file<TAB>message");
            (f.to_string(), m.to_string())
        })
        .collect()
}

#[test]
fn every_invalid_fixture_fails_with_its_message() {
    let expected = manifest();
    let mut files: Vec<String> = std::fs::read_dir("fixtures/invalid")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(
        files.len() >= 12,
        "at least 12 broken files, found {}",
        files.len()
    );
    assert_eq!(
        files,
        expected.keys().cloned().collect::<Vec<_>>(),
        "manifest and directory must list the same files"
    );
    for f in &files {
        let path = Path::new("fixtures/invalid").join(f);
        let err = discbench::scenario::load(&path).expect_err(&format!("{f} must not load"));
        let text = err.to_string();
        assert!(
            text.contains(&expected[f]),
            "{f}:\n  expected: {}\n  got:      {text}",
            expected[f]
        );
    }
}

#[test]
fn validate_exits_2_and_names_every_broken_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args(["validate", "fixtures/invalid"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for (f, msg) in manifest() {
        assert!(
            stderr.contains(&msg),
            "validate output lacks {f}: {msg}\n{stderr}"
        );
    }
    assert!(!stderr.contains("panicked"));
}

#[test]
fn validate_accepts_the_builtin_suite_and_fixture_catalogs() {
    let out = Command::new(env!("CARGO_BIN_EXE_discbench"))
        .args([
            "validate",
            "scenarios",
            "fixtures/catalogs",
            "fixtures/catalogs/enterprise",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("MCP tools/list dump"));
    assert!(stdout.contains("catalog fragment"));
}
