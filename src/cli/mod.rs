//! The command line: clap parses the arguments ([`Cli`]), [`config`] validates them
//! into a configuration, and each command is one file that does the work and
//! returns an exit code ([`crate::exit`]). Only this layer turns errors into text.

pub mod args;
mod compare_cmd;
pub mod completions;
pub mod config;
pub mod environment;
pub mod failure;
pub mod import;
mod import_bfcl;
mod import_mcp;
mod merge;
mod report_cmd;
mod run;
mod run_setup;
mod score_bfcl;
mod serve;
mod tokens;
mod validate;

pub use args::{
    Cli, Command, Common, CompareArgs, EndpointArgs, MergeArgs, ReportArgs, RunArgs, TokensArgs,
    ValidateArgs,
};
pub use config::resolve_modes;
pub use environment::Environment;
pub use failure::Failure;
pub use tokens::tokens_report;

use clap::CommandFactory;

/// Runs a parsed command; returns the exit code.
pub fn dispatch(cli: Cli, env: Environment, out: &mut dyn std::io::Write) -> Result<i32, Failure> {
    match cli.command {
        Command::Run(a) => run::run(*a, env, out),
        Command::Tokens(a) => tokens::tokens(a, out),
        Command::Validate(a) => validate::validate(a, out),
        Command::Report(a) => report_cmd::report(a, out),
        Command::Compare(a) => compare_cmd::compare(a, out),
        Command::Merge(a) => merge::merge(a, out),
        Command::Import(a) => import::import(a, out),
        Command::ScoreBfcl(a) => score_bfcl::score_bfcl(a, out),
        Command::Serve(a) => serve::serve(a, env),
        Command::Sweep(a) => run::sweep(*a, env, out),
        Command::Completions(a) => completions::completions(a, Cli::command(), out),
        Command::Man(a) => completions::man(a, Cli::command(), out),
    }
}
