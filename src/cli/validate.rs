//! `discbench validate`: checks scenario, catalog-fragment and MCP-dump files without
//! running anything; every problem of every file is reported.

use super::args::ValidateArgs;
use super::config;
use super::failure::{io, Failure};
use crate::catalog::Address;
use crate::environment::has_fixture;
use crate::error::InputErrors;
use crate::exit;
use crate::scenario::{self, FileKind, Scenario};

/// Per query, each expected or allowed tool (not skills, not database queries) that
/// has no fixture response.
pub fn without_fixture(sc: &Scenario) -> Vec<(String, Address)> {
    let mut out = Vec::new();
    for q in &sc.queries {
        let mut seen = Vec::new();
        let addresses = q
            .expect
            .all_alternatives()
            .map(|c| &c.address)
            .chain(q.expect.allow.iter().map(|a| &a.address));
        for a in addresses {
            if matches!(a, Address::Skill(_) | Address::Database(_)) || seen.contains(&a) {
                continue;
            }
            seen.push(a);
            if !has_fixture(&sc.catalog, a) {
                out.push((q.id.clone(), a.clone()));
            }
        }
    }
    out
}

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
                writeln!(out, "ok   {} ({what})", f.display()).map_err(io)?;
                if a.fixtures && kind == FileKind::Scenario {
                    if let Ok(sc) = scenario::load(f) {
                        for (q, address) in without_fixture(&sc) {
                            writeln!(out, "     no fixture: {q}: {address}").map_err(io)?;
                        }
                    }
                }
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
