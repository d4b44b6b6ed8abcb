//! `discbench import bfcl`: BFCL's data, from an installed `bfcl-eval` or a given
//! directory (nothing is downloaded), converted into one scenario file per category,
//! with the entries left out and why.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use serde_json::Value;

use super::failure::{io, Failure};
use crate::bfcl::convert::{convert_category, Converted, CATEGORIES, PINNED_VERSION};
use crate::bfcl::multi_turn::{
    convert_multi_turn, MultiConverted, BRIDGE, BRIDGE_FILE, MULTI_TURN,
};
use crate::exit;

#[derive(Args, Debug)]
pub struct BfclImportArgs {
    /// BFCL's data directory (`BFCL_v*_<category>.json`, answers in `possible_answer/`)
    /// [default: the `data` folder of the bfcl-eval package that --python has installed]
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// The Python whose installed bfcl-eval is read when --data is not given.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Accept an installed bfcl-eval other than the pinned release (2026.3.23).
    #[arg(long)]
    pub any_version: bool,
    /// Categories to convert, comma-separated [default: simple_python, multiple,
    /// parallel, parallel_multiple, live_simple, live_multiple, live_parallel,
    /// live_parallel_multiple, irrelevance, live_irrelevance]
    #[arg(long, value_delimiter = ',')]
    pub categories: Vec<String>,
    /// Where to write `bfcl-<category>.json` and `IMPORT.md` (the source and licence,
    /// what was converted, and every entry left out with the reason).
    #[arg(long, default_value = "scenarios/bfcl")]
    pub out: PathBuf,
}

/// The data directory and version of the bfcl-eval package `python` has installed;
/// the package is found, not imported (importing it loads every provider SDK).
fn installed(python: &str) -> Result<(PathBuf, String), Failure> {
    let script = "import importlib.util as u, importlib.metadata as m\n\
                  s = u.find_spec('bfcl_eval')\n\
                  print(m.version('bfcl-eval'))\n\
                  print(list(s.submodule_search_locations)[0])";
    let output = Command::new(python)
        .args(["-c", script])
        .output()
        .map_err(|e| {
            Failure::Usage(format!(
                "cannot run `{python}` to find bfcl-eval: {e}; give --data DIR"
            ))
        })?;
    if !output.status.success() {
        return Err(Failure::Usage(format!(
            "`{python}` has no bfcl-eval installed (pip install bfcl-eval=={PINNED_VERSION}, or give --data DIR): {}",
            String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or("")
        )));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    let version = lines.next().unwrap_or("").trim().to_string();
    let dir = PathBuf::from(lines.next().unwrap_or("").trim()).join("data");
    Ok((dir, version))
}

pub fn import_bfcl(a: BfclImportArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let (dir, source) = match &a.data {
        Some(d) => (d.clone(), format!("read from {}", d.display())),
        None => {
            let (dir, version) = installed(&a.python)?;
            if version != PINNED_VERSION && !a.any_version {
                return Err(Failure::Usage(format!(
                    "the installed bfcl-eval is {version}; discbench is pinned to {PINNED_VERSION} \
                     (pip install bfcl-eval=={PINNED_VERSION}, or --any-version)"
                )));
            }
            (dir, format!("bfcl-eval {version}"))
        }
    };
    let categories: Vec<String> = if a.categories.is_empty() {
        CATEGORIES.iter().map(|c| c.to_string()).collect()
    } else {
        a.categories.clone()
    };
    // The bridge runs with the Python given (found on PATH when it names no path; a
    // path is made absolute, as the bridge runs in a directory of its own).
    let python = if a.python.contains('/') {
        std::path::absolute(&a.python)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| a.python.clone())
    } else {
        a.python.clone()
    };
    let mut done: Vec<Converted> = Vec::new();
    let mut multi: Vec<MultiConverted> = Vec::new();
    for c in &categories {
        if MULTI_TURN.contains(&c.as_str()) {
            multi.push(
                convert_multi_turn(&dir, c, &source, &python)
                    .map_err(|e| Failure::Usage(e.to_string()))?,
            );
        } else {
            done.push(
                convert_category(&dir, c, &source).map_err(|e| Failure::Usage(e.to_string()))?,
            );
        }
    }
    std::fs::create_dir_all(&a.out)
        .map_err(|e| Failure::Usage(format!("{}: cannot create: {e}", a.out.display())))?;
    for c in &done {
        let path = a.out.join(format!("bfcl-{}.json", c.category));
        write(&path, &c.scenario)?;
    }
    for c in &multi {
        write(
            &a.out.join(format!("bfcl-{}.json", c.category)),
            &c.scenario,
        )?;
        // One line: the catalog of 200 servers is large, and the bridge reads it at
        // start.
        let mut text = serde_json::to_string(&c.catalog).expect("JSON values serialize");
        text.push('\n');
        write_text(&a.out.join(&c.catalog_file), &text)?;
    }
    if !multi.is_empty() {
        write_text(&a.out.join(BRIDGE_FILE), BRIDGE)?;
    }
    write_text(&a.out.join("IMPORT.md"), &import_md(&source, &done, &multi))?;
    writeln!(out, "BFCL data: {source}").map_err(io)?;
    writeln!(
        out,
        "{:<24} {:>8} {:>10} {:>9} {:>15}",
        "category", "entries", "converted", "excluded", "expected calls"
    )
    .map_err(io)?;
    for c in &done {
        writeln!(
            out,
            "{:<24} {:>8} {:>10} {:>9} {:>15}",
            c.category,
            c.entries,
            c.kept,
            c.excluded.len(),
            c.calls
        )
        .map_err(io)?;
        for e in &c.excluded {
            writeln!(out, "  excluded {}: {}", e.id, e.reason).map_err(io)?;
        }
    }
    for c in &multi {
        writeln!(
            out,
            "{:<24} {:>8} {:>10} {:>9} {:>15}   {} turns, judged by state",
            c.category,
            c.entries,
            c.kept,
            c.excluded.len(),
            c.calls,
            c.turns
        )
        .map_err(io)?;
        for e in &c.excluded {
            writeln!(out, "  excluded {}: {}", e.id, e.reason).map_err(io)?;
        }
    }
    writeln!(
        out,
        "wrote {} scenario(s) to {}",
        done.len() + multi.len(),
        a.out.display()
    )
    .map_err(io)?;
    Ok(exit::OK)
}

fn write(path: &Path, v: &Value) -> Result<(), Failure> {
    let mut text = serde_json::to_string_pretty(v).expect("JSON values serialize");
    text.push('\n');
    write_text(path, &text)
}

fn write_text(path: &Path, text: &str) -> Result<(), Failure> {
    std::fs::write(path, text)
        .map_err(|e| Failure::Usage(format!("{}: cannot write: {e}", path.display())))
}

/// What was converted, from where, under which licence, and what was left out.
fn import_md(source: &str, done: &[Converted], multi: &[MultiConverted]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "# BFCL scenarios\n");
    let _ = writeln!(
        s,
        "Made by `discbench import bfcl` from {source} (discbench is pinned to bfcl-eval \
         {PINNED_VERSION}). The data is the Berkeley Function Calling Leaderboard's \
         (Gorilla project, UC Berkeley), licensed Apache-2.0.\n"
    );
    let _ = writeln!(
        s,
        "| category | BFCL file | entries | converted | excluded | expected calls |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for c in done {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            c.category,
            c.file,
            c.entries,
            c.kept,
            c.excluded.len(),
            c.calls
        );
    }
    for c in multi {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} reference calls in {} turns (judged by state) |",
            c.category,
            c.file,
            c.entries,
            c.kept,
            c.excluded.len(),
            c.calls,
            c.turns
        );
    }
    if !multi.is_empty() {
        let _ = writeln!(
            s,
            "\nThe multi-turn scenarios run their calls on BFCL's own classes through              `{BRIDGE_FILE}` (written here; it needs the Python given with --python, with              bfcl-eval and mpmath installed) and need `discbench run --allow-live`."
        );
    }
    let _ = writeln!(s, "\n## Excluded entries\n");
    for c in done {
        for e in &c.excluded {
            let _ = writeln!(s, "- `{}`: {}", e.id, e.reason);
        }
    }
    for c in multi {
        for e in &c.excluded {
            let _ = writeln!(s, "- `{}`: {}", e.id, e.reason);
        }
    }
    let _ = writeln!(s, "\n## Answer parameters left out\n");
    for c in done {
        for (id, n) in &c.notes {
            let _ = writeln!(s, "- `{id}`: {n}");
        }
    }
    s
}
