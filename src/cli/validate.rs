//! `discbench validate`: checks scenario, catalog-fragment and MCP-dump files without
//! running anything; every problem of every file is reported.

use super::{config, Failure, ValidateArgs};
use crate::error::InputErrors;
use crate::exit;
use crate::scenario::{self, FileKind};

pub fn validate(a: ValidateArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in config::default_paths(&a.paths) {
        match scenario::expand(&p) {
            Ok(mut f) => files.append(&mut f),
            Err(e) => errors.push(e),
        }
    }
    for f in &files {
        match scenario::validate_file(f) {
            Ok(kind) => {
                let what = match kind {
                    FileKind::Scenario => "scenario",
                    FileKind::CatalogFragment => "catalog fragment",
                    FileKind::McpDump => "MCP tools/list dump",
                };
                writeln!(out, "ok   {} ({what})", f.display())
                    .map_err(|e| Failure::Infra(e.into()))?;
            }
            Err(mut e) => errors.append(&mut e.0),
        }
    }
    if errors.is_empty() {
        Ok(exit::OK)
    } else {
        Err(Failure::Input(InputErrors(errors)))
    }
}
