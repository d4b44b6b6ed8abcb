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
    /// Start a real MCP server (or reach one with --url), list what it offers (tools,
    /// and resources, resource templates and prompts where offered, every page), and
    /// write a catalog file that scenarios include like the committed `*.tools.json`.
    /// Exit 2 when the command cannot be started (or the URL is not one), 3 when the
    /// server fails, hangs or answers what is not MCP (with the end of its stderr).
    Mcp(super::import_mcp::ImportMcpArgs),
}

/// Runs an `import` subcommand.
pub fn import(a: ImportArgs, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    match a.what {
        ImportCommand::Bfcl(b) => super::import_bfcl::import_bfcl(b, out),
        ImportCommand::Mcp(m) => super::import_mcp::import_mcp(m, out),
    }
}
