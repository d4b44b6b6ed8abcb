//! `discbench completions SHELL` and `discbench man`: the shell completion scripts
//! (clap_complete) and the roff manual pages (clap_mangen), both generated from the
//! clap definitions that parse the command line (the caller hands them in:
//! `Cli::command()`), so neither can fall behind a flag. `tests/action.rs` checks
//! both against those definitions.

use std::path::{Path, PathBuf};

use clap::Args;
use clap_complete::Shell;

use super::failure::{io, Failure};
use crate::exit;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete in: bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The command whose page to print, e.g. `run` or `import mcp` [default: the
    /// page of discbench itself, which lists every command]
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Write the page and the pages of every command under it (discbench.1,
    /// discbench-run.1, …) into this directory instead of printing one.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Prints the completion script of one shell for the command line `cmd`.
pub fn completions(
    a: CompletionsArgs,
    mut cmd: clap::Command,
    out: &mut dyn std::io::Write,
) -> Result<i32, Failure> {
    let name = cmd.get_name().to_string();
    // Generated in memory: the generators panic on a failed write.
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, name, &mut script);
    out.write_all(&script).map_err(io)?;
    Ok(exit::OK)
}

/// Prints one manual page of the command line `cmd`, or writes a command's page and
/// those under it into a directory.
pub fn man(a: ManArgs, cmd: clap::Command, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    // clap's `help` command has no page of its own.
    let mut root = cmd.disable_help_subcommand(true);
    root.build();
    let mut cmd = &root;
    for (depth, name) in a.command.iter().enumerate() {
        cmd = cmd.find_subcommand(name).ok_or_else(|| {
            let known: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
            let path = a.command[..depth].join(" ");
            let parent = if path.is_empty() {
                "discbench".to_string()
            } else {
                format!("discbench {path}")
            };
            Failure::Usage(format!(
                "`{parent}` has no command `{name}`; it has: {}",
                known.join(", ")
            ))
        })?;
    }
    match &a.out {
        None => {
            let mut page = Vec::new();
            page_of(cmd).render(&mut page).map_err(io)?;
            out.write_all(&page).map_err(io)?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                Failure::Usage(format!("--out {}: cannot make it: {e}", dir.display()))
            })?;
            for path in write_pages(cmd, dir)? {
                writeln!(out, "{}", path.display()).map_err(io)?;
            }
        }
    }
    Ok(exit::OK)
}

/// The page of one command, whose source names discbench and its version.
fn page_of(cmd: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd.clone())
        .source(format!("discbench {}", env!("CARGO_PKG_VERSION")))
        .manual("discbench manual")
}

/// Writes the page of `cmd` and of every command under it; returns the paths written.
fn write_pages(cmd: &clap::Command, dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut written = Vec::new();
    let page = page_of(cmd);
    let path = page
        .generate_to(dir)
        .map_err(|e| Failure::Infra(anyhow::anyhow!("writing {}: {e}", dir.display())))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        written.extend(write_pages(sub, dir)?);
    }
    Ok(written)
}
