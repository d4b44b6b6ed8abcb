//! The `discbench` binary: parse, dispatch, print errors, exit with a documented code.

use std::io::Write;

use clap::Parser;
use discbench::cli::{dispatch, Cli, Environment};
use discbench::exit;

fn main() {
    // Before any thread starts: it sets environment variables polars reads.
    discbench::analysis::aggregate::bound_streaming_memory();
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
    // Not locked for the whole run: `serve` hands stdout to its MCP transport, which
    // writes from another thread.
    let mut out = IgnoreBrokenPipe(std::io::stdout());
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

/// Standard output where a closed pipe (`discbench run | head`) is not an error: the
/// rest is dropped and the work — outcomes, reports — goes on.
struct IgnoreBrokenPipe<W: Write>(W);

impl<W: Write> Write for IgnoreBrokenPipe<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(buf.len()),
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }
}
