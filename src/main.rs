//! The `discbench` binary: parse, dispatch, print errors, exit with a documented code.

use std::io::Write;

use clap::Parser;
use discbench::cli::{dispatch, Cli, Environment};
use discbench::exit;

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::BAD_INPUT
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let code = match dispatch(cli, Environment::detect(), &mut out) {
        Ok(code) => code,
        Err(f) => {
            let _ = out.flush();
            eprintln!("{f}");
            f.exit_code()
        }
    };
    let _ = out.flush();
    std::process::exit(code);
}
