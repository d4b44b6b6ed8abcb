//! What went wrong in a command, by exit code ([`crate::exit`]).

use crate::error::InputErrors;
use crate::exit;
use crate::record::reader;

/// What went wrong, by exit code.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("{0}")]
    Input(#[from] InputErrors),
    #[error("{0}")]
    Usage(String),
    #[error("{0:#}")]
    Infra(anyhow::Error),
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Input(_) | Failure::Usage(_) => exit::BAD_INPUT,
            // A record file that is not one (a garbled line, a run.json that is not
            // one), wherever it was read: the file's fault, not the machine's.
            Failure::Infra(e) if crate::record::reader::is_bad_input(e) => exit::BAD_INPUT,
            Failure::Infra(_) => exit::INFRA,
        }
    }
}

/// Output that failed to be written (stdout): the machine's failure.
pub(crate) fn io(e: std::io::Error) -> Failure {
    Failure::Infra(e.into())
}

/// A broken outcome file is bad input (exit 2); any other failure while reporting is
/// the machine's (exit 3).
pub fn report_failure(e: anyhow::Error) -> Failure {
    if reader::is_bad_input(&e) {
        Failure::Usage(format!("{e:#}"))
    } else {
        Failure::Infra(e)
    }
}
