//! `discbench import`: a group of commands that turn another benchmark's data or a
//! real server into discbench files, one subcommand (and one file) each.

use clap::{Args, Subcommand};

use super::failure::Failure;

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub what: ImportCommand,
}

#[derive(Subcommand, Debug)]
pub enum ImportCommand {
    /// Convert the Berkeley Function Calling Leaderboard's data (PyPI `bfcl-eval`)
    /// into scenarios: one per category, one MCP server and one scoped query per entry.
    Bfcl(super::import_bfcl::BfclImportArgs),
}

/// Runs an `import` subcommand.
pub fn import(a: ImportArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    match a.what {
        ImportCommand::Bfcl(b) => super::import_bfcl::import_bfcl(b, out),
    }
}
