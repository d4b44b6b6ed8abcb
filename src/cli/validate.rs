//! `discbench validate`: checks scenario, catalog-fragment and MCP-dump files without
//! running anything; every problem of every file is reported.

use super::args::ValidateArgs;
use super::config;
use super::failure::{io, Failure};
use crate::error::InputErrors;
use crate::exit;
use crate::scenario::{self, gaps, FileKind};

pub fn validate(a: ValidateArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let mut gaps_found = 0usize;
    for p in config::default_paths(&a.paths) {
        match scenario::expand(&p) {
            Ok(f) => files.extend(f.into_iter().map(|f| (f, p.is_dir()))),
            Err(e) => errors.push(e),
        }
    }
    for (f, in_dir) in &files {
        match scenario::validate_file(f) {
            Ok(kind) => {
                // What `run` does with it: a directory's catalog files are skipped, one
                // named on its own is refused.
                let noun = match kind {
                    FileKind::Scenario => "scenario",
                    FileKind::CatalogFragment => "catalog fragment",
                    FileKind::McpDump => "MCP tools/list dump",
                };
                let what = match (kind, in_dir) {
                    (FileKind::Scenario, _) => noun.to_string(),
                    (_, true) => {
                        format!("{noun}; `run` skips it: scenarios include it with catalog.include")
                    }
                    (_, false) => {
                        format!("{noun}; `run` takes scenarios only: include it from a scenario")
                    }
                };
                writeln!(out, "ok   {} ({what})", f.display()).map_err(io)?;
                if a.fixtures && kind == FileKind::Scenario {
                    if let Ok(sc) = scenario::load(f) {
                        for gap in gaps::fixture_gaps(&sc) {
                            gaps_found += 1;
                            writeln!(out, "     {}: {gap}", sc.name).map_err(io)?;
                        }
                    }
                }
            }
            Err(mut e) => errors.append(&mut e.0),
        }
    }
    if !errors.is_empty() {
        Err(Failure::Input(InputErrors(errors)))
    } else if gaps_found > 0 {
        writeln!(
            out,
            "{gaps_found} fixture gap(s): a call the expectations require or allow would be answered about another entity (see `validate --fixtures` in the docs)"
        )
        .map_err(io)?;
        Ok(exit::REGRESSION)
    } else {
        Ok(exit::OK)
    }
}
